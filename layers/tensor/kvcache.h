/*
 * kvcache.h -- layer 5: the KV cache's block pool in device memory (its
 * layout: layers/common/kv.h). The scheduler (layer 6) decides who gets
 * which block (layers/scheduler/blocks.h).
 */
#ifndef HIPATH_KVCACHE_H
#define HIPATH_KVCACHE_H

#include "layers/common/kv.h"

/* planes: 2, K and V; 1, K alone (MLA's latent rows). */
int  kv_init(kv_cache *c, int n_layers, int kv_dim, int planes, int block_size, int n_blocks, int elem_bytes);
void kv_free(kv_cache *c);

#endif
