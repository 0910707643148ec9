/*
 * codec.c -- the tokenizer behind layer 6's table (layers/scheduler/text.h).
 * The decoder owns a buffer that grows to the longest token it has seen,
 * so a token of any length comes out whole.
 */
#include "layers/tokenizer/tokenizer.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct text_decoder {
    detok_stream s;
    char *buf;
    size_t cap;
};

/* The template, then encode; with split_special each message's content is
 * a plain span. */
static int encode_chat(void *t, const chat_message *msgs, int n, int split_special, int *ids, int max_ids,
                       char *err, int errlen, int64_t req) {
    tok_span *content = split_special ? malloc(n * sizeof *content) : NULL;
    char *text = split_special && !content ? NULL : tokenizer_apply_chat_traced(t, msgs, n, content, req);
    int k = text ? tokenizer_encode_traced(t, text, content, content ? n : 0, ids, max_ids, err, errlen, req) : -1;
    if (!text) snprintf(err, errlen, "the chat template failed (out of memory)");
    free(text);
    free(content);
    return k;
}
static int encode(void *t, const char *text, int split_special, int *ids, int max_ids, char *err, int errlen, int64_t req) {
    tok_span all = { 0, strlen(text) };
    return tokenizer_encode_traced(t, text, &all, split_special != 0, ids, max_ids, err, errlen, req);
}

static text_decoder *decoder(void *t) {
    text_decoder *d = calloc(1, sizeof *d);
    if (d) detok_init(&d->s, t);
    return d;
}

/* Room for a token of n bytes through the decoder. */
static int room(text_decoder *d, size_t n) {
    size_t need = DETOK_ROOM(n);
    if (need <= d->cap) return 0;
    char *b = realloc(d->buf, need);
    if (!b) return -1;
    d->buf = b;
    d->cap = need;
    return 0;
}

static const char *decode(text_decoder *d, int id, size_t *len, int64_t req, int64_t step) {
    size_t n;
    if (!tokenizer_token_bytes(d->s.t, id, &n) || room(d, n)) return NULL;
    *len = (size_t)detok_step_traced(&d->s, id, d->buf, (int)d->cap, req, step);
    return d->buf;
}

static const char *flush(text_decoder *d, size_t *len) {
    if (room(d, 0)) return NULL;
    *len = (size_t)detok_flush(&d->s, d->buf, (int)d->cap);
    return d->buf;
}

static void decoder_free(text_decoder *d) {
    if (d) free(d->buf);
    free(d);
}

static const char *token_bytes(void *t, int id, size_t *len) { return tokenizer_token_bytes(t, id, len); }
static int stop_ids(void *t, int *ids, int cap) { return tokenizer_stop_ids(t, ids, cap); }
static void close_tokenizer(void *t) { tokenizer_free(t); }

int tokenizer_open_text(const char *path, int n_vocab, text_codec *out, char *err, int errlen) {
    tokenizer *t = path ? tokenizer_load(path, err, errlen) : tokenizer_placeholder(n_vocab, err, errlen);
    if (!t) return -1;
    *out = (text_codec){ .ctx = t, .encode_chat = encode_chat, .encode = encode, .decoder = decoder, .decode = decode, .flush = flush,
                         .decoder_free = decoder_free, .token_bytes = token_bytes, .stop_ids = stop_ids,
                         .close = close_tokenizer };
    return 0;
}
