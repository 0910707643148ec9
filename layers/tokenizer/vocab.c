/*
 * vocab.c -- the token table and its two hash maps (open addressing, linear
 * probing, tables at most half full): token bytes -> id, and
 * (left id, right id) -> merge rule; and freeing the tokenizer they make up.
 */
#include "layers/tokenizer/tok_internal.h"
#include <stdlib.h>
#include <string.h>

/* FNV-1a */
static uint64_t hash_bytes(const char *b, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)b[i]) * 1099511628211ull;
    return h;
}

/* splitmix64's finalizer: every key bit moves every hash bit */
static uint64_t hash_pair(uint64_t x) {
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static uint64_t pair_key(int left, int right) { return (uint64_t)left << 32 | (uint32_t)right; }

/* Slot i holds id, or -1; the hash's high half is kept beside it so most
 * misses are settled without touching the token's bytes. */
static int same(const tokenizer *t, const tok_slot *s, uint32_t h, const char *b, size_t n) {
    return s->h == h && t->tok[s->id].len == (int)n && memcmp(t->bytes + t->tok[s->id].off, b, n) == 0;
}

/* Store token `id` = bytes b[0..n) and map its bytes to it (a later id with
 * the same bytes takes the map slot: added tokens override the vocab). */
int tok_vocab_add(tokenizer *t, int id, const char *b, size_t n) {
    if (!t->bytes || t->nbytes + n > t->capbytes) {   /* bytes even for an empty first token ("" may be in a vocab) */
        size_t cap = 2 * (t->nbytes + n) + 4096;
        char *p = realloc(t->bytes, cap);
        if (!p) return -1;
        t->bytes = p, t->capbytes = cap;
    }
    memcpy(t->bytes + t->nbytes, b, n);
    t->tok[id] = (tok_entry){ t->nbytes, (int)n };
    t->nbytes += n;
    uint64_t h = hash_bytes(b, n);
    int mask = t->vocab_cap - 1;
    for (int i = h & mask;; i = (i + 1) & mask) {
        tok_slot *s = &t->vocab[i];
        if (s->id < 0 || same(t, s, h >> 32, b, n)) { *s = (tok_slot){ h >> 32, id }; return 0; }
    }
}

int tok_vocab_find(const tokenizer *t, const char *b, size_t n) {
    uint64_t h = hash_bytes(b, n);
    int mask = t->vocab_cap - 1;
    for (int i = h & mask;; i = (i + 1) & mask) {
        const tok_slot *s = &t->vocab[i];
        if (s->id < 0 || same(t, s, h >> 32, b, n)) return s->id;
    }
}

/* A repeated merge keeps its last rank, as HF's map does. */
void tok_merge_add(tokenizer *t, int left, int right, int rank, int merged) {
    uint64_t key = pair_key(left, right);
    int mask = t->merges_cap - 1;
    for (int i = hash_pair(key) & mask;; i = (i + 1) & mask) {
        tok_merge *m = &t->merges[i];
        if (m->rank < 0 || m->pair == key) { *m = (tok_merge){ key, rank, merged }; return; }
    }
}

const tok_merge *tok_merge_find(const tokenizer *t, int left, int right) {
    uint64_t key = pair_key(left, right);
    int mask = t->merges_cap - 1;
    for (int i = hash_pair(key) & mask;; i = (i + 1) & mask) {
        const tok_merge *m = &t->merges[i];
        if (m->rank < 0) return NULL;
        if (m->pair == key) return m;
    }
}

int tokenizer_vocab_size(const tokenizer *t) { return t->n_vocab; }

int tokenizer_token_id(const tokenizer *t, const char *token) {
    return tok_vocab_find(t, token, strlen(token));
}

const char *tokenizer_token_bytes(const tokenizer *t, int id, size_t *len) {
    if (id < 0 || id >= t->n_vocab || t->tok[id].len < 0) return NULL;
    *len = t->tok[id].len;
    return t->bytes + t->tok[id].off;
}

int tok_pow2_above(int n) {
    int c = 16;
    while (c < 2 * n) c *= 2;
    return c;
}

int tok_tables(tokenizer *t, int n_vocab, int n_strings, int n_merges, int n_added) {
    t->n_vocab = n_vocab;
    t->vocab_cap = tok_pow2_above(n_strings);
    t->merges_cap = tok_pow2_above(n_merges);
    t->tok = malloc(sizeof *t->tok * ((size_t)n_vocab + 1));
    t->vocab = malloc(sizeof *t->vocab * t->vocab_cap);
    t->merges = malloc(sizeof *t->merges * t->merges_cap);
    t->added = malloc(sizeof *t->added * ((size_t)n_added + 1));
    if (!t->tok || !t->vocab || !t->merges || !t->added) return -1;
    for (int i = 0; i < n_vocab; i++) t->tok[i].len = -1;
    for (int i = 0; i < t->vocab_cap; i++) t->vocab[i].id = -1;
    for (int i = 0; i < t->merges_cap; i++) t->merges[i].rank = -1;
    return 0;
}

void tokenizer_free(tokenizer *t) {
    if (!t) return;
    for (int i = 0; i < t->nsplit; i++) pcre2_code_free(t->split[i]);
    free(t->tok), free(t->bytes), free(t->vocab), free(t->merges), free(t->added);
    free(t->default_system);
    free(t->bos);
    free(t);
}
