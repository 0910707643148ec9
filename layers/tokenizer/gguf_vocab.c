/*
 * gguf_vocab.c -- the tokenizer from a GGUF file's metadata, for
 * tokenizer.ggml.model = "gpt2" (byte-level BPE):
 *   tokens      the vocabulary, id = index, ByteLevel-spelled
 *   token_type  1 normal, 3 control, 4 user-defined (both matched before
 *               BPE, spelled as plain text), 5 unused, 6 byte
 *   merges      "left right", ranked by position
 *   pre         names the pre-tokenizer regexes (llama-vocab.cpp's table)
 *   chat_template, eos_token_id
 * GGUF records no normalizer: the pre name implies it.
 */
#include "layers/tokenizer/tok_internal.h"
#include "layers/tensor/gguf.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TT_NORMAL = 1, TT_CONTROL = 3, TT_USER = 4, TT_UNUSED = 5 };

/* Qwen2's and Llama-3's splits, as in their tokenizer.json files. */
#define QWEN2_REGEX \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define LLAMA3_REGEX \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

/* tokenizer.ggml.pre -> pre-tokenizer. "smollm" is SmolLM's tokenizer.json:
 * Digits(individual_digits) then ByteLevel's GPT-2 regex; HF's Digits
 * splits off every Unicode number (\p{N}), as llama.cpp's table does. */
static const struct { const char *pre; int digits; const char *regex; int nfc, ignore_merges; } PRE[] = {
    { "default",   0, NULL, 0, 0 },          /* regex NULL: GPT-2's */
    { "gpt2",      0, NULL, 0, 0 },
    { "smollm",    1, NULL, 0, 0 },
    { "starcoder", 1, NULL, 0, 0 },
    { "qwen2",     0, QWEN2_REGEX, 1, 0 },   /* Qwen2's tokenizer.json also has an NFC normalizer */
    { "llama-bpe", 0, LLAMA3_REGEX, 0, 1 },
    { "llama3",    0, LLAMA3_REGEX, 0, 1 },
};

static tokenizer *fail(tokenizer *t, gguf *g, char *err, int errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    tokenizer_free(t);
    gguf_close(g);
    return NULL;
}

static int set_pretok(tokenizer *t, const gguf *g, char *err, int errlen) {
    size_t n = 7;
    const char *pre = gguf_meta_str(g, "tokenizer.ggml.pre", &n);
    if (!pre) pre = "default";
    for (size_t i = 0; i < sizeof PRE / sizeof PRE[0]; i++) {
        if (strlen(PRE[i].pre) != n || memcmp(PRE[i].pre, pre, n)) continue;
        t->nfc = PRE[i].nfc;
        t->ignore_merges = PRE[i].ignore_merges;
        return (PRE[i].digits && tok_add_split(t, "\\p{N}", 0, g->path, "tokenizer.ggml.pre", err, errlen))
               || tok_add_split(t, PRE[i].regex ? PRE[i].regex : TOK_GPT2_REGEX, 0, g->path, "tokenizer.ggml.pre", err, errlen);
    }
    snprintf(err, errlen, "%s: tokenizer.ggml.pre \"%.*s\" is not supported (gpt2, smollm, starcoder, qwen2, llama-bpe)",
             g->path, (int)(n < 40 ? n : 40), pre);
    return -1;
}

tokenizer *tok_load_gguf(const char *path, char *err, int errlen) {
    gguf g;
    if (gguf_open(&g, path, err, errlen)) return NULL;
    tokenizer *t = calloc(1, sizeof *t);
    if (!t) return fail(t, &g, err, errlen, "%s: out of memory", path);
    size_t n;
    const char *model = gguf_meta_str(&g, "tokenizer.ggml.model", &n);
    if (!model) return fail(t, &g, err, errlen, "%s: tokenizer.ggml.model is missing", path);
    if (n != 4 || memcmp(model, "gpt2", 4))
        return fail(t, &g, err, errlen, "%s: tokenizer.ggml.model \"%.*s\" is not supported (gpt2 byte-level BPE)",
                    path, (int)(n < 40 ? n : 40), model);
    uint64_t n_tok, n_type = 0, n_merge = 0;
    const gguf_value *tokens = gguf_meta_array(&g, "tokenizer.ggml.tokens", GGUF_STRING, &n_tok);
    const gguf_value *types = gguf_meta_array(&g, "tokenizer.ggml.token_type", GGUF_I32, &n_type);
    const gguf_value *merges = gguf_meta_array(&g, "tokenizer.ggml.merges", GGUF_STRING, &n_merge);
    if (!tokens || n_tok < 256 || n_tok > 10000000)
        return fail(t, &g, err, errlen, "%s: tokenizer.ggml.tokens: missing, not strings, or not 256 to 1e7 of them", path);
    if (types && n_type != n_tok)
        return fail(t, &g, err, errlen, "%s: tokenizer.ggml.token_type has %llu entries for %llu tokens", path,
                    (unsigned long long)n_type, (unsigned long long)n_tok);
    if (!merges || n_merge > 10000000) return fail(t, &g, err, errlen, "%s: tokenizer.ggml.merges: missing or not strings", path);

    if (tok_tables(t, (int)n_tok, (int)n_tok, (int)n_merge, (int)n_tok)) return fail(t, &g, err, errlen, "%s: out of memory", path);

    /* Normal tokens first, then control/user ones, so those win the
     * bytes -> id map as added tokens do in tokenizer.json. */
    for (int pass = 0; pass < 2; pass++) {
        gguf_iter it, ti;
        gguf_value s, ty = { 0 };
        gguf_iter_init(&it, tokens);
        if (types) gguf_iter_init(&ti, types);
        for (int id = 0; gguf_iter_next(&it, &s); id++) {
            int64_t type = TT_NORMAL;
            if (types && gguf_iter_next(&ti, &ty)) gguf_value_int(&ty, &type);
            int added = type == TT_CONTROL || type == TT_USER;
            if (type == TT_UNUSED || added != pass) continue;
            if (s.n == 0 || s.n > 1024) return fail(t, &g, err, errlen, "%s: tokenizer.ggml.tokens[%d]: length %llu", path, id, (unsigned long long)s.n);
            char buf[1024];
            size_t len = added ? (memcpy(buf, s.p, s.n), s.n) : tok_bytelevel_decode((const char *)s.p, s.n, buf);
            if (tok_vocab_add(t, id, buf, len)) return fail(t, &g, err, errlen, "%s: out of memory", path);
            if (added) {
                t->added[t->nadded++] = id;
                t->added_first[(unsigned char)buf[0]] = 1;
            }
        }
    }
    for (int b = 0; b < 256; b++) {   /* SmolLM's vocabulary lacks 21 bytes (-1: dropped when encoding) */
        char c = (char)b;
        t->byte_id[b] = tok_vocab_find(t, &c, 1);
    }

    gguf_iter it;
    gguf_value s;
    gguf_iter_init(&it, merges);
    for (int rank = 0; gguf_iter_next(&it, &s); rank++) {
        const char *a = (const char *)s.p, *sp = memchr(a, ' ', s.n);
        char buf[2048];
        if (!sp || s.n > 1024 || memchr(sp + 1, ' ', s.n - (sp + 1 - a)))
            return fail(t, &g, err, errlen, "%s: tokenizer.ggml.merges[%d]: not \"left right\"", path, rank);
        size_t na = tok_bytelevel_decode(a, sp - a, buf), nb = tok_bytelevel_decode(sp + 1, s.n - (sp + 1 - a), buf + na);
        int left = tok_vocab_find(t, buf, na), right = tok_vocab_find(t, buf + na, nb), merged = tok_vocab_find(t, buf, na + nb);
        if (left < 0 || right < 0 || merged < 0)
            return fail(t, &g, err, errlen, "%s: tokenizer.ggml.merges[%d]: \"%.*s\" not in the vocabulary", path, rank, (int)s.n, a);
        tok_merge_add(t, left, right, rank, merged);
    }

    int64_t eos;
    t->eos_id = gguf_meta_int(&g, "tokenizer.ggml.eos_token_id", &eos) || eos < 0 || eos >= t->n_vocab ? -1 : (int)eos;
    const char *tmpl = gguf_meta_str(&g, "tokenizer.chat_template", &n);
    if (tmpl) {
        char *z = malloc(n + 1);
        if (!z) return fail(t, &g, err, errlen, "%s: out of memory", path);
        memcpy(z, tmpl, n);
        z[n] = 0;
        tok_set_template(t, z);
        free(z);
    }
    if (set_pretok(t, &g, err, errlen)) { tokenizer_free(t); t = NULL; }
    gguf_close(&g);
    return t;
}
