/*
 * kvcache.h -- layer 5: the KV cache's block pool in device memory (its
 * layout: layers/common/kv.h). The scheduler (layer 6) decides who gets
 * blocks; these take and return them.
 */
#ifndef HIPATH_KVCACHE_H
#define HIPATH_KVCACHE_H

#include "layers/common/kv.h"

int  kv_init(kv_cache *c, int n_layers, int kv_dim, int block_size, int n_blocks, int elem_bytes);
void kv_free(kv_cache *c);
/* Give s enough blocks to hold len tokens. 0, or -1 if the pool is short
 * (s keeps what it had). */
int  kv_reserve(kv_cache *c, kv_seq *s, int len);
void kv_release(kv_cache *c, kv_seq *s);        /* blocks back to the pool */

#endif
