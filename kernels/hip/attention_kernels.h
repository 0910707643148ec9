/*
 * attention_kernels.h -- KV append and causal attention against the paged cache.
 *
 * One launch for every sequence of the step. One wavefront per (query row,
 * head); a workgroup holds att_rows query rows of one sequence and one head
 * (geometry.h) and walks the sequence one cache block at a time: the block's K and V rows go into LDS once for all its wavefronts,
 * each wavefront scores its query against them (a butterfly sum per key)
 * and folds them into its running max m, sum l and output (online
 * softmax, as FlashAttention). Scores live in registers: the score matrix
 * is never written to device memory. Decode is the one-row case.
 */
#ifndef HIPATH_ATTENTION_KERNELS_H
#define HIPATH_ATTENTION_KERNELS_H
#include "kernels/hip/paged.h"

enum { MAX_PER_LANE = 8 };   /* head_dim / warpSize: 128 / 32 = 4, 256 / 32 = 8 */

/* A step's sequences (kv.h's kv_batch, uploaded by attention.hip): their
 * block tables back to back, sequence s's from tables + table_off[s]. */
__global__ void kv_append_kernel(float *K, float *V, const int *tables, const int *table_off, const int *row_seq,
                                 const int *pos, int l, const float *k, const float *v, int n_blocks_pool, int BS, int kv_dim) {
    int i = blockIdx.x;   /* one workgroup a row: a new token */
    size_t o = slot(tables + table_off[row_seq[i]], l, pos[i], n_blocks_pool, BS, kv_dim);
    for (int e = threadIdx.x; e < kv_dim; e += blockDim.x) {
        K[o + e] = k[(size_t)i * kv_dim + e];
        V[o + e] = v[(size_t)i * kv_dim + e];
    }
}

__global__ void attention_kernel(float *out, const float *q, const float *K, const float *V, const int *tables,
                                 const int *work, int l, int n_heads, int group, int head_dim, int n_blocks_pool, int BS,
                                 int kv_dim, int rows) {
    HIP_DYNAMIC_SHARED(float, tile)                 /* K then V: [BS][head_dim] each */
    float *Ks = tile, *Vs = tile + BS * head_dim;
    const int *wk = work + (blockIdx.x / n_heads) * WORK_INTS;
    const int *blocks = tables + wk[WORK_TABLE];
    int row0 = wk[WORK_ROW0], pos0 = wk[WORK_POS0], n = wk[WORK_N], i0 = wk[WORK_I0];
    int h = blockIdx.x % n_heads;
    int w = threadIdx.x / warpSize, lane = threadIdx.x % warpSize, i = i0 + w;
    int kvh = h / group, per = (head_dim + warpSize - 1) / warpSize;
    int last = pos0 + min(i0 + rows, n) - 1;         /* the workgroup's furthest position */
    int len = i < n ? pos0 + i + 1 : 0;              /* causal: this row sees keys 0..pos */
    size_t at = ((size_t)(row0 + i) * n_heads + h) * head_dim;
    float scale = rsqrtf((float)head_dim), m = __int_as_float(0xff800000) /* -inf */, lsum = 0, qr[MAX_PER_LANE], acc[MAX_PER_LANE];
    for (int j = 0; j < per; j++) {
        int e = lane + j * warpSize;
        qr[j] = i < n && e < head_dim ? q[at + e] : 0.0f;
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
        if (e < head_dim) out[at + e] = acc[t] / lsum;
    }
}

/* Every kernel the launchers (attention.hip) use, as name expressions. */
#define ATTENTION_KERNELS(X) X(kv_append_kernel) X(attention_kernel)

#endif
