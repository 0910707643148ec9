/*
 * detok.c -- incremental, UTF-8 safe decoding. A BPE token is a run of
 * bytes, not of characters: "你" (E4 BD A0) may arrive as two tokens. Bytes
 * pass through a pending buffer of at most 4 and leave only as whole
 * characters; invalid bytes leave as U+FFFD, one per maximal invalid run,
 * as HF's errors="replace" decoding does. Special tokens decode to their
 * text like any other token.
 */
#include "layers/tokenizer/tok_internal.h"
#include <string.h>

static const char REPLACEMENT[] = "\xEF\xBF\xBD";   /* U+FFFD */

typedef struct { char *p; int cap, len, written; } outbuf;

/* Append whole characters only: once one does not fit, nothing more is
 * written, but len keeps counting (like snprintf). */
static void put(outbuf *o, const char *b, int n) {
    if (o->written == o->len && o->len + n < o->cap) memcpy(o->p + o->len, b, n), o->written += n;
    o->len += n;
}

static int finish(outbuf *o) {
    if (o->cap > 0) o->p[o->written] = 0;
    return o->len;
}

static void feed(detok_stream *s, unsigned char c, outbuf *o) {
    s->pending[s->npending++] = (char)c;
    while (s->npending > 0) {
        int k = tok_utf8_char((const unsigned char *)s->pending, s->npending);
        if (k == 0) return;   /* unfinished character: wait for the next token */
        if (k > 0) put(o, s->pending, k);
        else put(o, REPLACEMENT, 3), k = -k;
        s->npending -= k;
        memmove(s->pending, s->pending + k, s->npending);
    }
}

void detok_init(detok_stream *s, const tokenizer *t) {
    s->t = t;
    s->npending = 0;
}

int detok_step(detok_stream *s, int id, char *out, int cap) {
    size_t n;
    const char *b = tokenizer_token_bytes(s->t, id, &n);
    if (!b) return -1;
    outbuf o = { out, cap, 0, 0 };
    for (size_t i = 0; i < n; i++) feed(s, (unsigned char)b[i], &o);
    return finish(&o);
}

int detok_flush(detok_stream *s, char *out, int cap) {
    outbuf o = { out, cap, 0, 0 };
    if (s->npending > 0) put(&o, REPLACEMENT, 3);   /* a valid but unfinished prefix */
    s->npending = 0;
    return finish(&o);
}
