/* blocks.c -- the KV block manager and its prefix cache (blocks.h). */
#include "layers/scheduler/blocks.h"
#include <stdlib.h>
#include <string.h>

/* tests/check_blocks_fuzz.sh builds it with 2-bit hashes too: hashes
 * collide all the time, and the confirmation alone keeps hits true. */
#ifndef BLOCK_HASH_BITS
#define BLOCK_HASH_BITS 64
#endif

/* A full block's hash: its parent's, then its token ids (FNV-1a over
 * 32-bit words, then a final mix). 0 is kept for "not cached". */
static uint64_t block_hash(uint64_t parent, const int *ids, int n) {
    uint64_t h = parent ^ 0xcbf29ce484222325ull;
    for (int i = 0; i < n; i++) h = (h ^ (uint32_t)ids[i]) * 0x100000001b3ull;
    h ^= h >> 33; h *= 0xff51afd7ed558ccdull; h ^= h >> 33;
    h >>= 64 - BLOCK_HASH_BITS;
    return h ? h : 1;
}

int blocks_init(block_manager *bm, int n_blocks, int block_size, int caching) {
    memset(bm, 0, sizeof *bm);
    int nb = 1;
    while (nb < n_blocks) nb <<= 1;
    bm->n_blocks = n_blocks; bm->block_size = block_size; bm->caching = caching; bm->mask = nb - 1;
    bm->b = calloc(n_blocks, sizeof *bm->b);
    bm->ids = malloc((size_t)n_blocks * block_size * sizeof *bm->ids);
    bm->bucket = malloc((size_t)nb * sizeof *bm->bucket);
    if (!bm->b || !bm->ids || !bm->bucket) { blocks_free(bm); return -1; }
    for (int i = 0; i < nb; i++) bm->bucket[i] = -1;
    for (int i = 0; i < n_blocks; i++)   /* taken in order: 0, 1, ... */
        bm->b[i] = (kv_block){ .parent = -1, .prev = i - 1, .next = i + 1 < n_blocks ? i + 1 : -1, .hnext = -1 };
    bm->head = n_blocks ? 0 : -1; bm->tail = n_blocks - 1; bm->n_free = n_blocks;
    return 0;
}

void blocks_free(block_manager *bm) {
    free(bm->b); free(bm->ids); free(bm->bucket);
    memset(bm, 0, sizeof *bm);
}

static void queue_remove(block_manager *bm, int i) {
    kv_block *k = &bm->b[i];
    if (k->prev >= 0) bm->b[k->prev].next = k->next; else bm->head = k->next;
    if (k->next >= 0) bm->b[k->next].prev = k->prev; else bm->tail = k->prev;
    k->prev = k->next = -1;
    bm->n_free--;
}

static void queue_append(block_manager *bm, int i) {
    kv_block *k = &bm->b[i];
    k->prev = bm->tail; k->next = -1;
    if (bm->tail >= 0) bm->b[bm->tail].next = i; else bm->head = i;
    bm->tail = i;
    bm->n_free++;
}

static void uncache(block_manager *bm, int i) {
    int *p = &bm->bucket[bm->b[i].hash & bm->mask];
    while (*p != i) p = &bm->b[*p].hnext;
    *p = bm->b[i].hnext;
    bm->b[i].hash = 0; bm->b[i].hnext = -1; bm->b[i].parent = -1;
    bm->evictions++;
}

static int same_ids(const block_manager *bm, int i, const int *ids) {
    return !memcmp(bm->ids + (size_t)i * bm->block_size, ids, bm->block_size * sizeof *ids);
}

/* Whether cached block k comes after the prefix that ends at block p (-1:
 * none): its parent is p as p was then, or a copy of p (two requests that
 * computed the same prefix at once each cached their own blocks for it):
 * the same ids, after the same prefix. */
static int follows(const block_manager *bm, const kv_block *k, int p) {
    for (int q = k->parent; q != p; q = k->parent, p = bm->b[p].parent) {
        if (q < 0 || p < 0 || k->parent_gen != bm->b[q].gen || bm->b[q].hash != bm->b[p].hash ||
            !same_ids(bm, q, bm->ids + (size_t)p * bm->block_size)) return 0;
        k = &bm->b[q];
    }
    return p < 0 || k->parent_gen == bm->b[p].gen;
}

/* The cached block for this prefix: same hash, same token ids, after the
 * same prefix; the last cached of them. -1 if none. */
static int find(const block_manager *bm, uint64_t h, int parent, const int *ids) {
    for (int i = bm->bucket[h & bm->mask]; i >= 0; i = bm->b[i].hnext)
        if (bm->b[i].hash == h && same_ids(bm, i, ids) && follows(bm, &bm->b[i], parent)) return i;
    return -1;
}

int blocks_lookup(const block_manager *bm, uint64_t salt, const int *tokens, int max_tokens, int *hit, int cap) {
    if (!bm->caching) return 0;
    int n = 0, parent = -1;
    uint64_t h = salt;
    for (int at = 0; at + bm->block_size <= max_tokens && n < cap; at += bm->block_size) {
        h = block_hash(h, tokens + at, bm->block_size);
        if ((parent = find(bm, h, parent, tokens + at)) < 0) break;
        hit[n++] = parent;
    }
    return n;
}

int blocks_needed(const block_manager *bm, const kv_seq *s, const int *hit, int n_hit, int len) {
    int have = s->n_blocks + n_hit, idle = 0;
    for (int i = 0; i < n_hit; i++) idle += bm->b[hit[i]].ref == 0;
    int fresh = (len + bm->block_size - 1) / bm->block_size - have;
    return idle + (fresh > 0 ? fresh : 0);
}

static int grow_table(kv_seq *s, int n) {
    if (n <= s->cap) return 0;
    int cap = n + 8, *b = realloc(s->blocks, (size_t)cap * sizeof *b);
    if (!b) return -1;
    s->blocks = b; s->cap = cap;
    return 0;
}

int blocks_allocate(block_manager *bm, kv_seq *s, const int *hit, int n_hit, int len) {
    int total = (len + bm->block_size - 1) / bm->block_size;
    if (total < s->n_blocks + n_hit) total = s->n_blocks + n_hit;
    if (blocks_needed(bm, s, hit, n_hit, len) > bm->n_free || grow_table(s, total)) return -1;
    for (int i = 0; i < n_hit; i++) {
        kv_block *k = &bm->b[hit[i]];
        if (k->ref++ == 0) queue_remove(bm, hit[i]);
        s->blocks[s->n_blocks++] = hit[i];
    }
    if (n_hit) { s->n_hashed = n_hit; s->len = n_hit * bm->block_size; }   /* their K and V are there */
    while (s->n_blocks < total) {
        int i = bm->head;
        queue_remove(bm, i);
        if (bm->b[i].hash) uncache(bm, i);
        bm->b[i].gen++;
        bm->b[i].ref = 1;
        s->blocks[s->n_blocks++] = i;
    }
    return 0;
}

void blocks_commit(block_manager *bm, kv_seq *s, uint64_t salt, const int *tokens, int n) {
    if (!bm->caching) return;
    int bs = bm->block_size;
    for (int j = s->n_hashed; (j + 1) * bs <= n; j++) {
        int i = s->blocks[j], parent = j ? s->blocks[j - 1] : -1;
        kv_block *k = &bm->b[i];
        k->hash = block_hash(j ? bm->b[parent].hash : salt, tokens + j * bs, bs);
        k->parent = parent;
        k->parent_gen = parent >= 0 ? bm->b[parent].gen : 0;
        memcpy(bm->ids + (size_t)i * bs, tokens + j * bs, bs * sizeof *tokens);
        int *head = &bm->bucket[k->hash & bm->mask];
        k->hnext = *head;
        *head = i;
        s->n_hashed = j + 1;
    }
}

void blocks_release(block_manager *bm, kv_seq *s) {
    for (int j = s->n_blocks - 1; j >= 0; j--)
        if (--bm->b[s->blocks[j]].ref == 0) queue_append(bm, s->blocks[j]);
    free(s->blocks);
    memset(s, 0, sizeof *s);
}
