/* kvcache.c -- the block pool's memory. */
#include "layers/tensor/kvcache.h"
#include "layers/runtime/runtime.h"
#include <stdlib.h>
#include <string.h>

int kv_init(kv_cache *c, int n_layers, int kv_dim, int planes, int block_size, int n_blocks, int elem_bytes) {
    memset(c, 0, sizeof *c);
    c->block_size = block_size; c->n_blocks = n_blocks; c->n_layers = n_layers; c->kv_dim = kv_dim;
    c->elem_bytes = elem_bytes > 0 ? elem_bytes : (int)sizeof(float);
    if (c->elem_bytes != sizeof(float) && rt_device_now()->driver->has_data) return -1;   /* the kernels store f32 */
    size_t n = (size_t)n_layers * n_blocks * block_size * kv_dim;
    c->k = rt_alloc(n * c->elem_bytes, RT_KV, "kv.k");   /* device memory: only kernels touch it */
    if (planes > 1) c->v = rt_alloc(n * c->elem_bytes, RT_KV, "kv.v");
    if (!c->k || (planes > 1 && !c->v)) { kv_free(c); return -1; }
    return 0;
}

void kv_free(kv_cache *c) {
    rt_free(c->k); rt_free(c->v);
    memset(c, 0, sizeof *c);
}

