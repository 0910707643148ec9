/*
 * placeholder.c -- a tokenizer for analytic runs of a model whose folder has
 * no tokenizer.json: each byte of the text is one id (0..255), and every id
 * decodes to "[analytic: token N]", so a reply can never pass for a model's.
 */
#include "layers/tokenizer/tok_internal.h"
#include <stdio.h>
#include <stdlib.h>

tokenizer *tokenizer_placeholder(int n_vocab, char *err, int errlen)
{
    tokenizer *t = calloc(1, sizeof *t);
    if (!t || n_vocab < 256) { free(t); snprintf(err, errlen, "placeholder tokenizer: need a vocabulary of at least 256 ids"); return NULL; }
    t->n_vocab = n_vocab;
    t->eos_id = -1;
    t->vocab_cap = tok_pow2_above(n_vocab);
    t->merges_cap = 16;   /* empty: no merges, so BPE leaves one id per byte */
    t->tok = malloc(sizeof *t->tok * n_vocab);
    t->vocab = malloc(sizeof *t->vocab * t->vocab_cap);
    t->merges = malloc(sizeof *t->merges * t->merges_cap);
    int bad = !t->tok || !t->vocab || !t->merges;
    for (int i = 0; !bad && i < t->vocab_cap; i++) t->vocab[i].id = -1;
    for (int i = 0; !bad && i < t->merges_cap; i++) t->merges[i].rank = -1;
    for (int i = 0; !bad && i < n_vocab; i++) {
        char piece[48];
        int n = snprintf(piece, sizeof piece, "[analytic: token %d]", i);
        bad = tok_vocab_add(t, i, piece, (size_t)n);
    }
    for (int b = 0; b < 256; b++) t->byte_id[b] = b;
    if (bad) { tokenizer_free(t); snprintf(err, errlen, "placeholder tokenizer: out of memory"); return NULL; }
    return t;
}
