/*
 * kv.h -- shared vocabulary: the paged KV cache's layout (PagedAttention).
 *
 * K and V live in fixed-size blocks of token slots; each sequence has a
 * block table saying which blocks hold its positions, in order; blocks
 * with the same prefix may be shared. Layer 6 decides who gets blocks
 * (layers/scheduler/blocks.h), layer 5 owns the pool (layers/tensor/kvcache.h),
 * layers 4 and 3 read and write the slots through kv_k() and kv_v().
 */
#ifndef HIPATH_KV_H
#define HIPATH_KV_H

#include <stddef.h>

#define KV_BLOCK_SIZE 16     /* token slots per block (vLLM's default) */

typedef struct {
    int block_size;          /* token slots per block */
    int n_blocks;
    int n_layers, kv_dim;    /* kv_dim = n_kv_heads * head_dim; MLA: kv_lora_rank + qk_rope_head_dim */
    float *k, *v;            /* [n_layers][n_blocks][block_size][kv_dim]; MLA: k holds each
                                token's latent row [c_kv | k_pe], and v is NULL (every head's
                                K and V are up-projections of it) */
    int elem_bytes;          /* what an element costs to move: 4 (the f32 slots), or an analytic
                                device's narrower cache (2 fp16, 1 fp8: nothing reads its slots) */
} kv_cache;

/* One sequence's view: its blocks in order, and how many tokens it holds. */
typedef struct {
    int *blocks, n_blocks, cap;
    int len;                 /* tokens whose K and V are stored */
    int n_hashed;            /* its first blocks that are in the prefix cache */
} kv_seq;

/* The sequences of one engine step as attention sees them: all their new
 * tokens' rows stacked, T of them; row t belongs to sequence row_seq[t] at
 * position pos[t]; sequence i's rows are row0[i] .. row0[i+1]-1 (its first
 * at row0[i], position pos[row0[i]]). One kernel serves them all. */
typedef struct {
    unsigned long long id;      /* a new one every step: what a device may key its copy by */
    int n_seqs, T;
    const kv_seq *const *seq;   /* [n_seqs] */
    const int *row0;            /* [n_seqs + 1] */
    const int *row_seq, *pos;   /* [T] */
} kv_batch;

/* Bytes one token's K and V take over all layers (f32 slots). */
static inline size_t kv_token_bytes(int n_layers, int kv_dim) { return 2 * sizeof(float) * (size_t)n_layers * kv_dim; }
/* Blocks that hold len tokens. */
static inline int kv_blocks_for(const kv_cache *c, int len) { return (len + c->block_size - 1) / c->block_size; }

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
