/* kvcache.c -- the block pool and per-sequence block tables. */
#include "layers/tensor/kvcache.h"
#include "layers/runtime/runtime.h"
#include <stdlib.h>
#include <string.h>

int kv_init(kv_cache *c, int n_layers, int kv_dim, int block_size, int n_blocks, int elem_bytes) {
    memset(c, 0, sizeof *c);
    c->block_size = block_size; c->n_blocks = n_blocks; c->n_layers = n_layers; c->kv_dim = kv_dim;
    c->elem_bytes = elem_bytes > 0 ? elem_bytes : (int)sizeof(float);
    if (c->elem_bytes != sizeof(float) && rt_device_now()->driver->has_data) return -1;   /* the kernels store f32 */
    size_t n = (size_t)n_layers * n_blocks * block_size * kv_dim;
    c->k = rt_alloc(n * c->elem_bytes, RT_KV, "kv.k");   /* device memory: only kernels touch it */
    c->v = rt_alloc(n * c->elem_bytes, RT_KV, "kv.v");
    c->free_list = malloc((size_t)n_blocks * sizeof(int));
    if (!c->k || !c->v || !c->free_list) { kv_free(c); return -1; }
    for (int i = 0; i < n_blocks; i++) c->free_list[i] = n_blocks - 1 - i;   /* pop gives 0, 1, ... */
    c->n_free = n_blocks;
    return 0;
}

void kv_free(kv_cache *c) {
    rt_free(c->k); rt_free(c->v); free(c->free_list);
    memset(c, 0, sizeof *c);
}

int kv_reserve(kv_cache *c, kv_seq *s, int len) {
    int need = kv_blocks_for(c, len) - s->n_blocks;
    if (need <= 0) return 0;
    if (need > c->n_free) return -1;
    if (s->n_blocks + need > s->cap) {
        int cap = s->n_blocks + need + 8;
        int *b = realloc(s->blocks, (size_t)cap * sizeof *b);
        if (!b) return -1;
        s->blocks = b; s->cap = cap;
    }
    while (need--) s->blocks[s->n_blocks++] = c->free_list[--c->n_free];
    return 0;
}

void kv_release(kv_cache *c, kv_seq *s) {
    for (int i = s->n_blocks - 1; i >= 0; i--) c->free_list[c->n_free++] = s->blocks[i];
    free(s->blocks);
    memset(s, 0, sizeof *s);
}
