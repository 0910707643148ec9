/*
 * encode.c -- text -> ids, in HF's order:
 *   1. added/special tokens are cut out first (longest match wins);
 *   2. each stretch between them is NFC-normalized;
 *   3. the pre-tokenizer regexes split it into words ("Hello", " world", "!");
 *   4. each word's bytes start as one token per byte, and BPE repeatedly
 *      merges the adjacent pair with the lowest merge rank until none applies.
 * Step 4 keeps the candidate pairs in a min-heap keyed (rank, position), so a
 * word of n bytes costs O(n log n), not O(n^2).
 */
#include "layers/tokenizer/tok_internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

typedef struct { int id, prev, next; } symbol;   /* a word's tokens, as a linked list */
typedef struct { int rank, pos; } candidate;     /* merge symbol pos with its next */

typedef struct {            /* one encode call */
    const tokenizer *t;
    int *ids, max_ids, n;   /* n counts past max_ids: callers size by it */
    pcre2_match_data *md;
    symbol *sym;
    candidate *heap;
    int nheap, cap;
} encoder;

static void emit(encoder *e, int id) {
    if (e->n < e->max_ids) e->ids[e->n] = id;
    e->n++;
}

static int before(candidate a, candidate b) { return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos); }

static void heap_push(encoder *e, candidate c) {
    int i = e->nheap++;
    for (; i > 0 && before(c, e->heap[(i - 1) / 2]); i = (i - 1) / 2) e->heap[i] = e->heap[(i - 1) / 2];
    e->heap[i] = c;
}

static candidate heap_pop(encoder *e) {
    candidate top = e->heap[0], last = e->heap[--e->nheap];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= e->nheap) break;
        if (c + 1 < e->nheap && before(e->heap[c + 1], e->heap[c])) c++;
        if (!before(e->heap[c], last)) break;
        e->heap[i] = e->heap[c];
        i = c;
    }
    e->heap[i] = last;
    return top;
}

static void push_pair(encoder *e, int pos) {
    int next = e->sym[pos].next;
    if (next < 0) return;
    const tok_merge *m = tok_merge_find(e->t, e->sym[pos].id, e->sym[next].id);
    if (m) heap_push(e, (candidate){ m->rank, pos });
}

static int bpe(encoder *e, const char *w, int n) {
    const tokenizer *t = e->t;
    if (t->ignore_merges) {
        int id = tok_vocab_find(t, w, n);
        if (id >= 0) { emit(e, id); return 0; }
    }
    if (n > e->cap) {   /* n symbols; n-1 candidates at first, two more per merge */
        symbol *s = realloc(e->sym, sizeof *s * n);
        if (s) e->sym = s;
        candidate *h = realloc(e->heap, sizeof *h * 3 * n);
        if (h) e->heap = h;
        if (!s || !h) return -1;
        e->cap = n;
    }
    int m = 0;   /* a byte the vocabulary lacks is dropped, as HF's BPE does without an unk token */
    for (int i = 0; i < n; i++)
        if (t->byte_id[(unsigned char)w[i]] >= 0) e->sym[m] = (symbol){ t->byte_id[(unsigned char)w[i]], m - 1, m + 1 }, m++;
    if ((n = m) == 0) return 0;
    e->sym[n - 1].next = -1;
    e->nheap = 0;
    for (int i = 0; i + 1 < n; i++) push_pair(e, i);
    while (e->nheap > 0) {
        candidate c = heap_pop(e);
        symbol *a = &e->sym[c.pos];
        if (a->id < 0 || a->next < 0) continue;   /* stale: merged away */
        symbol *b = &e->sym[a->next];
        const tok_merge *m = tok_merge_find(t, a->id, b->id);
        if (!m || m->rank != c.rank) continue;    /* stale: a neighbour changed */
        a->id = m->merged;
        b->id = -1;
        a->next = b->next;
        if (b->next >= 0) e->sym[b->next].prev = c.pos;
        if (a->prev >= 0) push_pair(e, a->prev);
        push_pair(e, c.pos);
    }
    for (int i = 0; i >= 0; i = e->sym[i].next) emit(e, e->sym[i].id);
    return 0;
}

/* Pre-tokenizer stage k: regex matches and the gaps between them are the
 * pieces handed to stage k+1; after the last stage, pieces are words. */
static int split(encoder *e, const char *s, size_t n, int k) {
    if (n == 0) return 0;
    if (k == e->t->nsplit) return bpe(e, s, (int)n);
    size_t at = 0, gap = 0;
    while (at < n && pcre2_match(e->t->split[k], (PCRE2_SPTR)s, n, at, PCRE2_NO_UTF_CHECK, e->md, NULL) >= 0) {
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(e->md);
        size_t m0 = ov[0], m1 = ov[1];
        if (m1 == m0) {   /* empty match: step over one character */
            for (at = m1 + 1; at < n && ((unsigned char)s[at] & 0xC0) == 0x80; at++) {}
            continue;
        }
        if (split(e, s + gap, m0 - gap, k + 1) || split(e, s + m0, m1 - m0, k + 1)) return -1;
        at = gap = m1;
    }
    return split(e, s + gap, n - gap, k + 1);
}

static int ascii(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) if ((unsigned char)s[i] >= 0x80) return 0;
    return 1;
}

/* A stretch of ordinary text: normalize, then pre-tokenize and BPE. */
static int segment(encoder *e, const char *s, size_t n) {
    if (!e->t->nfc || ascii(s, n)) return split(e, s, n, 0);   /* ASCII is already NFC */
    utf8proc_uint8_t *nfc;   /* utf8proc_map, not utf8proc_NFC: the text may hold NUL bytes */
    utf8proc_ssize_t m = utf8proc_map((const utf8proc_uint8_t *)s, n, &nfc, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    if (m < 0) return -1;
    int rc = split(e, (const char *)nfc, m, 0);
    free(nfc);
    return rc;
}

/* Longest added token that starts at s, or -1; *len gets its length. */
static int added_at(const tokenizer *t, const char *s, size_t n, size_t *len) {
    int best = -1;
    *len = 0;
    for (int i = 0; i < t->nadded; i++) {
        const tok_entry *a = &t->tok[t->added[i]];
        if ((size_t)a->len > *len && (size_t)a->len <= n && !memcmp(t->bytes + a->off, s, a->len))
            best = t->added[i], *len = a->len;
    }
    return best;
}

int tokenizer_encode(const tokenizer *t, const char *text, size_t len, int *ids, int max_ids,
                     char *err, int errlen) {
    return tokenizer_encode_plain(t, text, len, NULL, 0, ids, max_ids, err, errlen);
}

static int by_from(const void *a, const void *b) {
    const tok_span *x = a, *y = b;
    return (x->from > y->from) - (x->from < y->from);
}

int tokenizer_encode_plain(const tokenizer *t, const char *text, size_t len, const tok_span *spans, int n_plain,
                           int *ids, int max_ids, char *err, int errlen) {
    for (size_t i = 0; i < len;) {
        int k = tok_utf8_char((const unsigned char *)text + i, len - i);
        if (k <= 0) { snprintf(err, errlen, "invalid UTF-8 at byte %zu", i); return -1; }
        i += k;
    }
    /* in text order (a template may write the system message first, whatever its index) */
    tok_span *plain = NULL;
    if (n_plain > 0) {
        if (!(plain = malloc(n_plain * sizeof *plain))) { snprintf(err, errlen, "out of memory"); return -1; }
        memcpy(plain, spans, n_plain * sizeof *plain);
        qsort(plain, n_plain, sizeof *plain, by_from);
    }
    encoder e = { .t = t, .ids = ids, .max_ids = max_ids };
    e.md = pcre2_match_data_create(1, NULL);
    int rc = e.md ? 0 : -1;
    size_t start = 0;   /* start of the ordinary text not yet encoded */
    for (size_t i = 0, p = 0; i < len && rc == 0;) {
        while (p < (size_t)n_plain && plain[p].to <= i) p++;
        if (p < (size_t)n_plain && plain[p].from <= i) { i = plain[p].to; continue; }   /* plain: stays ordinary text */
        size_t n, room = p < (size_t)n_plain ? plain[p].from - i : len - i;   /* a token may not reach into one */
        int id = t->added_first[(unsigned char)text[i]] ? added_at(t, text + i, room, &n) : -1;
        if (id < 0) { i++; continue; }
        rc = segment(&e, text + start, i - start);
        emit(&e, id);
        start = i += n;
    }
    if (rc == 0) rc = segment(&e, text + start, len - start);
    pcre2_match_data_free(e.md);
    free(e.sym), free(e.heap);
    free(plain);
    if (rc) { snprintf(err, errlen, "out of memory"); return -1; }
    return e.n;
}
