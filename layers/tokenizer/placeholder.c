/*
 * placeholder.c -- a tokenizer for analytic runs of a model whose folder has
 * no tokenizer.json: each byte of the text is one id (0..255), and every id
 * decodes to "[analytic: token N]", so a reply can never pass for a model's.
 */
#include "layers/tokenizer/tok_internal.h"
#include <stdio.h>
#include <stdlib.h>

tokenizer *tokenizer_placeholder(int n_vocab, char *err, int errlen) {
    tokenizer *t = calloc(1, sizeof *t);
    if (!t || n_vocab < 256) { free(t); snprintf(err, errlen, "placeholder tokenizer: need a vocabulary of at least 256 ids"); return NULL; }
    t->eos_id = -1;
    int bad = tok_tables(t, n_vocab, n_vocab, 0, 0);   /* no merges: BPE leaves one id per byte */
    for (int i = 0; !bad && i < n_vocab; i++) {
        char piece[48];
        int n = snprintf(piece, sizeof piece, "[analytic: token %d]", i);
        bad = tok_vocab_add(t, i, piece, (size_t)n);
    }
    for (int b = 0; b < 256; b++) t->byte_id[b] = b;
    if (bad) { tokenizer_free(t); snprintf(err, errlen, "placeholder tokenizer: out of memory"); return NULL; }
    return t;
}
