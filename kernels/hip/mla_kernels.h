/*
 * mla_kernels.h -- multi-head latent attention (layers/common/mla.h):
 * the query absorbed through W_UK, the latent rows stored, attention over
 * them, the values up through W_UV.
 *
 * Attention is attention_kernels.h's walk with one KV "head" every query
 * head shares: a cache block's latent rows [c_kv | k_pe] go into LDS once
 * for the workgroup, each wavefront (a query row and head) scores them
 * over rank + rope and sums their c_kv (FlashMLA's split: a key of 576, a
 * value of its first 512). The per-head products with kv_b_proj read its
 * rows in place: a workgroup per (token, head).
 */
#ifndef HIPATH_MLA_KERNELS_H
#define HIPATH_MLA_KERNELS_H
#include "kernels/hip/paged.h"

enum { MLA_PER_LANE = 16, MLA_ROPE_PER_LANE = 4 };   /* rank 512 / 32 lanes; rope 64 / 32 (x2 spare) */

/* q_lat[t,h,e] = sum_i q[t,h,i] W[h (nope + v) + i, e]: threads over e,
 * so a row of W is read by consecutive lanes; q's rope part copied out. */
template <int DT>
__global__ void mla_absorb_kernel(float *q_lat, float *q_pe, const float *q, const void *W, int n_heads, int nope, int rope,
                                  int v_dim, int rank, size_t row_bytes) {
    int h = blockIdx.x % n_heads;   /* the workgroup: token blockIdx.x / n_heads, head h */
    const float *qh = q + (size_t)blockIdx.x * (nope + rope);
    for (int e = threadIdx.x; e < rank; e += blockDim.x) {
        float s = 0;
        for (int i = 0; i < nope; i++) s += qh[i] * wload<DT>((const char *)W + (size_t)(h * (nope + v_dim) + i) * row_bytes, e);
        q_lat[(size_t)blockIdx.x * rank + e] = s;
    }
    for (int e = threadIdx.x; e < rope; e += blockDim.x) q_pe[(size_t)blockIdx.x * rope + e] = qh[nope + e];
}

/* out[t,h,i] = W[h (nope + v) + nope + i, :] . o_lat[t,h]: a wavefront a
 * row, its lanes along it, summed by a butterfly. */
template <int DT>
__global__ void mla_up_v_kernel(float *out, const float *o_lat, const void *W, int n_heads, int nope, int v_dim, int rank,
                                size_t row_bytes) {
    int h = blockIdx.x % n_heads, lane = threadIdx.x % warpSize, w = threadIdx.x / warpSize, nw = blockDim.x / warpSize;
    const float *o = o_lat + (size_t)blockIdx.x * rank;
    for (int i = w; i < v_dim; i += nw) {
        const char *row = (const char *)W + (size_t)(h * (nope + v_dim) + nope + i) * row_bytes;
        float s = 0;
        for (int e = lane; e < rank; e += warpSize) s += wload<DT>(row, e) * o[e];
        s = wave_sum(s);
        if (lane == 0) out[(size_t)blockIdx.x * v_dim + i] = s;
    }
}

/* Row i's [c_kv | k_pe] into its slot: the cache's one plane. */
__global__ void mla_kv_append_kernel(float *K, const int *tables, const int *table_off, const int *row_seq, const int *pos, int l,
                                     const float *c_kv, const float *k_pe, int n_blocks_pool, int BS, int rank, int rope) {
    int i = blockIdx.x, kv_dim = rank + rope;
    size_t o = slot(tables + table_off[row_seq[i]], l, pos[i], n_blocks_pool, BS, kv_dim);
    for (int e = threadIdx.x; e < kv_dim; e += blockDim.x)
        K[o + e] = e < rank ? c_kv[(size_t)i * rank + e] : k_pe[(size_t)i * rope + e - rank];
}

/* The work as attention_kernel's (WORK_*); o_lat, q_lat [T, H, rank],
 * q_pe [T, H, rope]. */
__global__ void mla_attention_kernel(float *o_lat, const float *q_lat, const float *q_pe, const float *K, const int *tables,
                                     const int *work, int l, int n_heads, int rank, int rope, float scale, int n_blocks_pool,
                                     int BS, int rows) {
    HIP_DYNAMIC_SHARED(float, tile)                 /* a block's latent rows: [BS][rank + rope] */
    int kv_dim = rank + rope;
    const int *wk = work + (blockIdx.x / n_heads) * WORK_INTS;
    const int *blocks = tables + wk[WORK_TABLE];
    int row0 = wk[WORK_ROW0], pos0 = wk[WORK_POS0], n = wk[WORK_N], i0 = wk[WORK_I0];
    int h = blockIdx.x % n_heads;
    int w = threadIdx.x / warpSize, lane = threadIdx.x % warpSize, i = i0 + w;
    int per = (rank + warpSize - 1) / warpSize, per_r = (rope + warpSize - 1) / warpSize;
    int last = pos0 + min(i0 + rows, n) - 1;         /* the workgroup's furthest position */
    int len = i < n ? pos0 + i + 1 : 0;              /* causal: this row sees keys 0..pos */
    size_t at = (size_t)(row0 + i) * n_heads + h;
    float m = __int_as_float(0xff800000) /* -inf */, lsum = 0, ql[MLA_PER_LANE], qp[MLA_ROPE_PER_LANE], acc[MLA_PER_LANE];
    for (int j = 0; j < per; j++) {
        int e = lane + j * warpSize;
        ql[j] = i < n && e < rank ? q_lat[at * rank + e] : 0.0f;
        acc[j] = 0;
    }
    for (int j = 0; j < per_r; j++) {
        int e = lane + j * warpSize;
        qp[j] = i < n && e < rope ? q_pe[at * rope + e] : 0.0f;
    }
    for (int p0 = 0; p0 <= last; p0 += BS) {
        int nb = min(BS, last + 1 - p0);
        for (int e = threadIdx.x; e < nb * kv_dim; e += blockDim.x)
            tile[e] = K[slot(blocks, l, p0 + e / kv_dim, n_blocks_pool, BS, kv_dim) + e % kv_dim];
        __syncthreads();
        for (int j = 0; j < nb && p0 + j < len; j++) {
            const float *row = tile + j * kv_dim;
            float d = 0;
            for (int r = 0; r < per; r++) {
                int e = lane + r * warpSize;
                if (e < rank) d += ql[r] * row[e];
            }
            for (int r = 0; r < per_r; r++) {
                int e = lane + r * warpSize;
                if (e < rope) d += qp[r] * row[rank + e];
            }
            float s = wave_sum(d) * scale, mn = fmaxf(m, s), r = expf(m - mn), p = expf(s - mn);
            lsum = lsum * r + p;
            for (int t = 0; t < per; t++) {
                int e = lane + t * warpSize;
                if (e < rank) acc[t] = acc[t] * r + p * row[e];
            }
            m = mn;
        }
        __syncthreads();
    }
    if (i >= n) return;
    for (int t = 0; t < per; t++) {
        int e = lane + t * warpSize;
        if (e < rank) o_lat[at * rank + e] = acc[t] / lsum;
    }
}

/* Every kernel the launchers (mla.hip) use, as name expressions. */
#define MLA_KERNELS(X) \
    X(mla_absorb_kernel<DT_F32>) X(mla_absorb_kernel<DT_F16>) X(mla_absorb_kernel<DT_BF16>) \
    X(mla_absorb_kernel<DT_Q8_0>) X(mla_absorb_kernel<DT_Q4_0>) X(mla_absorb_kernel<DT_Q4_1>) \
    X(mla_up_v_kernel<DT_F32>) X(mla_up_v_kernel<DT_F16>) X(mla_up_v_kernel<DT_BF16>) \
    X(mla_up_v_kernel<DT_Q8_0>) X(mla_up_v_kernel<DT_Q4_0>) X(mla_up_v_kernel<DT_Q4_1>) \
    X(mla_kv_append_kernel) X(mla_attention_kernel)

#endif
