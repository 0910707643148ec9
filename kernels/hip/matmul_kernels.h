/*
 * matmul_kernels.h -- y[T, N] = x[T, K] W[N, K]^T (+ b), weights f32/f16/bf16 or
 * GGUF blocks (Q8_0, Q4_0, Q4_1: quant.h), f32 accumulate.
 *
 * Decode (T == 1), GEMV: one wavefront per output row. Its lanes walk the
 * row together, each loading 16 bytes at a time (8 bf16/f16 or 4 f32; a
 * 32-bit word of quants, 4 or 8 weights, for a block format), so a
 * wavefront reads one contiguous stretch per step (coalesced) and every
 * weight byte is read once; a butterfly over the lanes sums the row.
 * Prefill (T > 1), GEMM: a workgroup computes a 32x32 tile of y, staging
 * 32-wide slices of x and W in LDS so each weight is read from device
 * memory once per 32 tokens instead of once per token. A 32-wide slice of
 * a quantized row is one block, dequantized as it is staged. A grid of
 * fewer tiles than CUs is split along K (geometry.h: split-K).
 */
#ifndef HIPATH_MATMUL_KERNELS_H
#define HIPATH_MATMUL_KERNELS_H
#include "kernels/hip/device.h"

/* Unpack 16 bytes of weights into f32. */
template <int DT> struct vec16;
template <> struct vec16<DT_F32> {
    enum { n = 4 };
    __device__ static void unpack(uint4 u, float *f) {
        f[0] = __uint_as_float(u.x); f[1] = __uint_as_float(u.y); f[2] = __uint_as_float(u.z); f[3] = __uint_as_float(u.w);
    }
};
template <int DT> struct vec16_16 {   /* two 16-bit weights per 32-bit word */
    enum { n = 8 };
    __device__ static void unpack(uint4 u, float *f) {
        uint32_t w[4] = { u.x, u.y, u.z, u.w };
        for (int j = 0; j < 4; j++) {
            uint16_t lo = (uint16_t)(w[j] & 0xffff), hi = (uint16_t)(w[j] >> 16);
            f[2 * j] = wload<DT>(&lo, 0);
            f[2 * j + 1] = wload<DT>(&hi, 0);
        }
    }
};
template <> struct vec16<DT_BF16> : vec16_16<DT_BF16> {};
template <> struct vec16<DT_F16> : vec16_16<DT_F16> {};

/* VEC: rows start 16-byte aligned and K is a multiple of the vector. */
template <int DT, bool VEC>
__global__ void gemv_kernel(float *y, const float *x, const void *W, const float *b, int N, int K, size_t row_bytes) {
    int lane = threadIdx.x % warpSize, n = blockIdx.x * (blockDim.x / warpSize) + threadIdx.x / warpSize;
    if (n >= N) return;   /* whole wavefronts leave together */
    const char *w = (const char *)W + (size_t)n * row_bytes;
    float s = 0;
    if (VEC) {
        const int V = vec16<DT>::n;
        for (int k = lane * V; k < K; k += warpSize * V) {
            float f[V];
            vec16<DT>::unpack(*(const uint4 *)(w + (size_t)k * (16 / V)), f);
            for (int j = 0; j < V; j++) s += f[j] * x[k + j];
        }
    } else {
        for (int k = lane; k < K; k += warpSize) s += wload<DT>(w, k) * x[k];
    }
    s = wave_sum(s);
    if (lane == 0) y[n] = s + (b ? b[n] : 0.0f);
}

/* The same for a block format: the lanes' words, summed (quant.h). */
template <int DT>
__global__ void qgemv_kernel(float *y, const float *x, const void *W, const float *b, int N, int nb, size_t row_bytes) {
    int lane = threadIdx.x % warpSize, n = blockIdx.x * (blockDim.x / warpSize) + threadIdx.x / warpSize;
    if (n >= N) return;
    float s = wave_sum(qrow_lane<DT>((const uint8_t *)W + (size_t)n * row_bytes, x, nb, lane, warpSize));
    if (lane == 0) y[n] = s + (b ? b[n] : 0.0f);
}

/* Split-K's first pass: y = b (or 0), for the slices to add into. */
__global__ void gemm_init_kernel(float *y, const float *b, int T, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < T * N) y[i] = b ? b[i % N] : 0.0f;
}

/* 32x32 tile of y per workgroup of 256: thread (tn, tt) computes
 * y[tile_t + tt + 8r][tile_n + tn], r = 0..3, over k in one slice of
 * kslice (geometry.h's gemm_slice_k). Unsplit (kslice >= K) it stores
 * the tile with the bias; split, it adds its partial into y, which
 * gemm_init_kernel set to the bias: an f32 atomic add at L2 a partial,
 * no workspace and no third pass (the slices' order, and so y's last
 * bits, vary from run to run). */
template <int DT>
__global__ void gemm_kernel(float *y, const float *x, const void *W, const float *b, int T, int N, int K, size_t row_bytes,
                            int kslice) {
    __shared__ float xs[GEMM_TILE][GEMM_TILE + 1], ws[GEMM_TILE][GEMM_TILE + 1];   /* +1: no bank conflicts */
    int tiles_n = (N + GEMM_TILE - 1) / GEMM_TILE, tiles = tiles_n * ((T + GEMM_TILE - 1) / GEMM_TILE);
    int tile = blockIdx.x % tiles, kb = (blockIdx.x / tiles) * kslice, ke = min(K, kb + kslice);
    int n0 = (tile % tiles_n) * GEMM_TILE, t0 = (tile / tiles_n) * GEMM_TILE;
    int tn = threadIdx.x % GEMM_TILE, tt = threadIdx.x / GEMM_TILE, R = GEMM_THREADS / GEMM_TILE;
    float acc[GEMM_TILE * GEMM_TILE / GEMM_THREADS] = { 0 };
    for (int k0 = kb; k0 < ke; k0 += GEMM_TILE) {
        for (int e = threadIdx.x; e < GEMM_TILE * GEMM_TILE; e += blockDim.x) {
            int r = e / GEMM_TILE, k = e % GEMM_TILE;   /* consecutive threads, consecutive k: coalesced */
            xs[r][k] = t0 + r < T && k0 + k < ke ? x[(size_t)(t0 + r) * K + k0 + k] : 0.0f;
            ws[r][k] = n0 + r < N && k0 + k < ke ? wload<DT>((const char *)W + (size_t)(n0 + r) * row_bytes, k0 + k) : 0.0f;
        }
        __syncthreads();
        for (int k = 0; k < GEMM_TILE; k++)
            for (int r = 0; r < GEMM_TILE / R; r++) acc[r] += xs[tt + R * r][k] * ws[tn][k];
        __syncthreads();
    }
    for (int r = 0; r < GEMM_TILE / R; r++) {
        int t = t0 + tt + R * r, n = n0 + tn;
        if (t >= T || n >= N) continue;
        if (kslice < K) atomicAdd(&y[(size_t)t * N + n], acc[r]);
        else y[(size_t)t * N + n] = acc[r] + (b ? b[n] : 0.0f);
    }
}

/* Every instance the launcher (matmul.hip) uses, as name expressions. */
#define MATMUL_KERNELS(X) \
    X(gemm_init_kernel) X(gemm_kernel<DT_F32>) X(gemm_kernel<DT_F16>) X(gemm_kernel<DT_BF16>) \
    X(gemm_kernel<DT_Q8_0>) X(gemm_kernel<DT_Q4_0>) X(gemm_kernel<DT_Q4_1>) \
    X(gemv_kernel<DT_F32, true>) X(gemv_kernel<DT_F16, true>) X(gemv_kernel<DT_BF16, true>) \
    X(gemv_kernel<DT_F32, false>) X(gemv_kernel<DT_F16, false>) X(gemv_kernel<DT_BF16, false>) \
    X(qgemv_kernel<DT_Q8_0>) X(qgemv_kernel<DT_Q4_0>) X(qgemv_kernel<DT_Q4_1>)

#endif
