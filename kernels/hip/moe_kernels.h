/*
 * moe_kernels.h -- a mixture-of-experts layer on the GPU: the router's
 * top-k, the grouped expert matmul, the weighted combine (what
 * kernels/cpu/moe.c computes on the CPU).
 */
#ifndef HIPATH_MOE_KERNELS_H
#define HIPATH_MOE_KERNELS_H
#include "kernels/hip/device.h"

/* Expert e's score: sigmoid of its logit, or its softmax (max, sum given). */
__device__ inline float moe_score(const float *l, int e, int sigmoid, float max, float sum) {
    return sigmoid ? 1.0f / (1.0f + expf(-l[e])) : expf(l[e] - max) / sum;
}

/* Was expert e chosen among ids[0..n)? */
__device__ inline bool moe_taken(const int *ids, int n, int e) {
    for (int j = 0; j < n; j++)
        if (ids[j] == e) return true;
    return false;
}

/* One thread per token: scores, the best topk_group groups (a group scores
 * its two best choices; kept as bits, so at most 64 groups), top-k by
 * score + bias, the weights renormalized and scaled. Ties: the lower index. */
__global__ void moe_topk_kernel(int *ids, float *w, const float *logits, const float *bias, int T, int E, int k,
                                int sigmoid, int norm, float scaling, int n_group, int topk_group) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= T) return;
    const float *l = logits + (int64_t)t * E;
    int *id = ids + (int64_t)t * k, per = E / n_group;
    float *wt = w + (int64_t)t * k, max = l[0], sum = 0;
    for (int e = 1; e < E; e++) max = fmaxf(max, l[e]);
    for (int e = 0; e < E && !sigmoid; e++) sum += expf(l[e] - max);
    unsigned long long kept = ~0ull;
    if (topk_group < n_group) {
        kept = 0;
        for (int i = 0; i < topk_group; i++) {
            int best = -1;
            float best_s = 0;
            for (int q = 0; q < n_group; q++) {
                if (kept >> q & 1) continue;
                float a = -3.402823466e38f, b = a;   /* the lowest float: the JIT has no INFINITY */
                for (int e = q * per; e < (q + 1) * per; e++) {
                    float c = moe_score(l, e, sigmoid, max, sum) + (bias ? bias[e] : 0.0f);
                    if (c > a) { b = a; a = c; } else if (c > b) b = c;
                }
                float s = a + (per > 1 ? b : 0.0f);
                if (best < 0 || s > best_s) { best = q; best_s = s; }
            }
            kept |= 1ull << best;
        }
    }
    float wsum = 0;
    for (int j = 0; j < k; j++) {
        int best = -1;
        float best_c = 0;
        for (int e = 0; e < E; e++) {
            if (!(kept >> (e / per) & 1) || moe_taken(id, j, e)) continue;
            float c = moe_score(l, e, sigmoid, max, sum) + (bias ? bias[e] : 0.0f);
            if (best < 0 || c > best_c) { best = e; best_c = c; }
        }
        id[j] = best;
        wt[j] = moe_score(l, best, sigmoid, max, sum);   /* the bias only chooses */
        wsum += wt[j];
    }
    for (int j = 0; j < k; j++) wt[j] = (norm ? wt[j] / (wsum + 1e-20f) : wt[j]) * scaling;
}

/* The grouped matmul: workgroup b computes a 32x32 tile of one expert's
 * rows, tile[2 (b / tiles_n)] the expert e and tile[2 (b / tiles_n) + 1] its
 * first row r0 (of e's slots, slot[start[e] ..]); x's row is the slot's
 * token (s / k) or the slot itself; results go to y's slot rows. As
 * gemm_kernel, with the rows gathered and scattered. */
template <int DT>
__global__ void moe_gemm_kernel(float *y, const float *x, const void *const *W, const int *tile, const int *start,
                                const int *slot, int k, int per_token, int N, int K, size_t row_bytes) {
    __shared__ float xs[GEMM_TILE][GEMM_TILE + 1], ws[GEMM_TILE][GEMM_TILE + 1];
    __shared__ int rows[GEMM_TILE];
    int tiles_n = (N + GEMM_TILE - 1) / GEMM_TILE, b = blockIdx.x / tiles_n, n0 = (blockIdx.x % tiles_n) * GEMM_TILE;
    int e = tile[2 * b], r0 = tile[2 * b + 1], ne = start[e + 1] - start[e] - r0;
    int tn = threadIdx.x % GEMM_TILE, tt = threadIdx.x / GEMM_TILE, R = GEMM_THREADS / GEMM_TILE;
    const char *w = (const char *)W[e];
    if (threadIdx.x < GEMM_TILE) rows[threadIdx.x] = (int)threadIdx.x < ne ? slot[start[e] + r0 + threadIdx.x] : -1;
    __syncthreads();
    float acc[GEMM_TILE * GEMM_TILE / GEMM_THREADS] = { 0 };
    for (int k0 = 0; k0 < K; k0 += GEMM_TILE) {
        for (int i = threadIdx.x; i < GEMM_TILE * GEMM_TILE; i += blockDim.x) {
            int r = i / GEMM_TILE, kk = i % GEMM_TILE, s = rows[r];
            xs[r][kk] = s >= 0 && k0 + kk < K ? x[(int64_t)(per_token ? s / k : s) * K + k0 + kk] : 0.0f;
            ws[r][kk] = n0 + r < N && k0 + kk < K ? wload<DT>(w + (size_t)(n0 + r) * row_bytes, k0 + kk) : 0.0f;
        }
        __syncthreads();
        for (int kk = 0; kk < GEMM_TILE; kk++)
            for (int r = 0; r < GEMM_TILE / R; r++) acc[r] += xs[tt + R * r][kk] * ws[tn][kk];
        __syncthreads();
    }
    for (int r = 0; r < GEMM_TILE / R; r++) {
        int s = rows[tt + R * r], n = n0 + tn;
        if (s >= 0 && n < N) y[(int64_t)s * N + n] = acc[r];
    }
}

/* out[t][i] = sum_j w[t k + j] y[t k + j][i]: a thread per output. */
__global__ void moe_combine_kernel(float *out, const float *y, const float *w, int T, int k, int n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)T * n) return;
    int64_t t = i / n, c = i % n;
    float s = 0;
    for (int j = 0; j < k; j++) s += w[t * k + j] * y[(t * k + j) * n + c];
    out[i] = s;
}

/* Every instance the launchers (moe.hip) use, as name expressions. */
#define MOE_KERNELS(X) \
    X(moe_topk_kernel) X(moe_combine_kernel) \
    X(moe_gemm_kernel<DT_F32>) X(moe_gemm_kernel<DT_F16>) X(moe_gemm_kernel<DT_BF16>) \
    X(moe_gemm_kernel<DT_Q8_0>) X(moe_gemm_kernel<DT_Q4_0>) X(moe_gemm_kernel<DT_Q4_1>)

#endif
