/*
 * attention_kernels.h -- KV append and causal attention against the paged cache.
 *
 * One wavefront per (query row, head); a workgroup holds att_rows(n) query
 * rows of one head (geometry.h) and walks the sequence one cache block at
 * a time: the block's K and V rows go into LDS once for all its wavefronts,
 * each wavefront scores its query against them (a butterfly sum per key)
 * and folds them into its running max m, sum l and output (online
 * softmax, as FlashAttention). Scores live in registers: the score matrix
 * is never written to device memory. Decode is the one-row case.
 */
#ifndef HIPATH_ATTENTION_KERNELS_H
#define HIPATH_ATTENTION_KERNELS_H
#include "kernels/hip/device.h"

enum { MAX_PER_LANE = 8 };   /* head_dim / warpSize: 128 / 32 = 4, 256 / 32 = 8 */

__device__ inline size_t slot(const int *blocks, int l, int pos, int n_blocks_pool, int BS, int kv_dim) {
    return (((size_t)l * n_blocks_pool + blocks[pos / BS]) * BS + pos % BS) * kv_dim;
}

__global__ void kv_append_kernel(float *K, float *V, const int *blocks, int l, int pos0, const float *k, const float *v,
                                 int n_blocks_pool, int BS, int kv_dim) {
    int i = blockIdx.x;
    size_t o = slot(blocks, l, pos0 + i, n_blocks_pool, BS, kv_dim);
    for (int e = threadIdx.x; e < kv_dim; e += blockDim.x) {
        K[o + e] = k[(size_t)i * kv_dim + e];
        V[o + e] = v[(size_t)i * kv_dim + e];
    }
}

__global__ void attention_kernel(float *out, const float *q, const float *K, const float *V, const int *blocks, int l,
                                 int pos0, int n, int n_heads, int group, int head_dim, int n_blocks_pool, int BS,
                                 int kv_dim, int rows) {
    HIP_DYNAMIC_SHARED(float, tile)                 /* K then V: [BS][head_dim] each */
    float *Ks = tile, *Vs = tile + BS * head_dim;
    int h = blockIdx.x % n_heads, i0 = (blockIdx.x / n_heads) * rows;
    int w = threadIdx.x / warpSize, lane = threadIdx.x % warpSize, i = i0 + w;
    int kvh = h / group, per = (head_dim + warpSize - 1) / warpSize;
    int last = pos0 + min(i0 + rows, n) - 1;         /* the workgroup's furthest position */
    int len = i < n ? pos0 + i + 1 : 0;              /* causal: this row sees keys 0..pos */
    float scale = rsqrtf((float)head_dim), m = __int_as_float(0xff800000) /* -inf */, lsum = 0, qr[MAX_PER_LANE], acc[MAX_PER_LANE];
    for (int j = 0; j < per; j++) {
        int e = lane + j * warpSize;
        qr[j] = i < n && e < head_dim ? q[((size_t)i * n_heads + h) * head_dim + e] : 0.0f;
        acc[j] = 0;
    }
    for (int p0 = 0; p0 <= last; p0 += BS) {
        int nb = min(BS, last + 1 - p0);
        for (int e = threadIdx.x; e < nb * head_dim; e += blockDim.x) {
            size_t o = slot(blocks, l, p0 + e / head_dim, n_blocks_pool, BS, kv_dim) + kvh * head_dim + e % head_dim;
            Ks[e] = K[o];
            Vs[e] = V[o];
        }
        __syncthreads();
        for (int j = 0; j < nb && p0 + j < len; j++) {
            float d = 0;
            for (int r = 0; r < per; r++) {
                int e = lane + r * warpSize;
                if (e < head_dim) d += qr[r] * Ks[j * head_dim + e];
            }
            float s = wave_sum(d) * scale, mn = fmaxf(m, s), r = expf(m - mn), p = expf(s - mn);
            lsum = lsum * r + p;
            for (int t = 0; t < per; t++) {
                int e = lane + t * warpSize;
                if (e < head_dim) acc[t] = acc[t] * r + p * Vs[j * head_dim + e];
            }
            m = mn;
        }
        __syncthreads();
    }
    if (i >= n) return;
    for (int t = 0; t < per; t++) {
        int e = lane + t * warpSize;
        if (e < head_dim) out[((size_t)i * n_heads + h) * head_dim + e] = acc[t] / lsum;
    }
}

/* Every kernel the launchers (attention.hip) use, as name expressions. */
#define ATTENTION_KERNELS(X) X(kv_append_kernel) X(attention_kernel)

#endif
