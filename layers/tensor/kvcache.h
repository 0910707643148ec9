/*
 * kvcache.h -- the paged KV cache: fixed-size blocks of token slots, and a
 * block table per sequence (PagedAttention). The pool lives here with the
 * other tensors; the scheduler (layer 6) decides who gets blocks.
 */
#ifndef HIPATH_KVCACHE_H
#define HIPATH_KVCACHE_H

#include <stddef.h>

typedef struct {
    int block_size;          /* token slots per block */
    int n_blocks;
    int n_layers, kv_dim;    /* kv_dim = n_kv_heads * head_dim */
    float *k, *v;            /* [n_layers][n_blocks][block_size][kv_dim] */
    int *free_list, n_free;
} kv_cache;

/* One sequence's view: its blocks in order, and how many tokens it holds. */
typedef struct {
    int *blocks, n_blocks, cap;
    int len;                 /* tokens whose K and V are stored */
} kv_seq;

int  kv_init(kv_cache *c, int n_layers, int kv_dim, int block_size, int n_blocks);
void kv_free(kv_cache *c);
size_t kv_bytes_per_token(const kv_cache *c);   /* K and V, all layers */
/* Give s enough blocks to hold len tokens. 0, or -1 if the pool is short
 * (s keeps what it had). */
int  kv_reserve(kv_cache *c, kv_seq *s, int len);
void kv_release(kv_cache *c, kv_seq *s);        /* blocks back to the pool */
int  kv_blocks_for(const kv_cache *c, int len);

/* Address of layer l's K (or V) row for token position pos of sequence s. */
static inline float *kv_k(const kv_cache *c, const kv_seq *s, int l, int pos) {
    size_t b = (size_t)s->blocks[pos / c->block_size];
    return c->k + (((size_t)l * c->n_blocks + b) * c->block_size + pos % c->block_size) * c->kv_dim;
}
static inline float *kv_v(const kv_cache *c, const kv_seq *s, int l, int pos) {
    size_t b = (size_t)s->blocks[pos / c->block_size];
    return c->v + (((size_t)l * c->n_blocks + b) * c->block_size + pos % c->block_size) * c->kv_dim;
}

#endif
