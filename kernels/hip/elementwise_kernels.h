/* elementwise_kernels.h -- embedding gather, RMSNorm, RoPE, SwiGLU, residual add. */
#ifndef HIPATH_ELEMENTWISE_KERNELS_H
#define HIPATH_ELEMENTWISE_KERNELS_H
#include "kernels/hip/device.h"

/* Block formats too: a row is whole blocks, so element t*dim + i of the
 * table is weight i of row t. */
template <int DT>
__global__ void embedding_kernel(float *x, const void *E, const int *ids, int dim) {
    int t = blockIdx.x;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) x[(int64_t)t * dim + i] = wload<DT>(E, (int64_t)ids[t] * dim + i);
}

/* One workgroup per row: o = x / sqrt(mean(x^2) + eps) * w. In place is fine:
 * every thread reads its elements before the sum is known, writes after. */
__global__ void rmsnorm_kernel(float *o, const float *x, const float *w, int n, float eps) {
    __shared__ float part[32];
    x += (int64_t)blockIdx.x * n; o += (int64_t)blockIdx.x * n;
    float ss = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) ss += x[i] * x[i];
    float r = rsqrtf(block_sum(ss, part) / n + eps);
    for (int i = threadIdx.x; i < n; i += blockDim.x) o[i] = x[i] * r * w[i];
}

/* One workgroup per (token, head), one thread per rotated pair: (i, i + d/2)
 * for HF's rotate_half, (2i, 2i + 1) for GGUF's adjacent pairs. */
__global__ void rope_kernel(float *x, int n_heads, int head_dim, const int *pos, float theta, const float *inv_freq, int adjacent) {
    int t = blockIdx.x / n_heads, i = threadIdx.x, half = head_dim / 2;
    float *v = x + (int64_t)blockIdx.x * head_dim;
    double a = pos[t] * (inv_freq ? (double)inv_freq[i] : pow((double)theta, -2.0 * i / head_dim));   /* inv_freq: yarn's */
    float c = (float)cos(a), s = (float)sin(a);
    int i0 = adjacent ? 2 * i : i, i1 = adjacent ? 2 * i + 1 : i + half;
    float a0 = v[i0], a1 = v[i1];
    v[i0] = a0 * c - a1 * s;
    v[i1] = a1 * c + a0 * s;
}

__global__ void silu_mul_kernel(float *g, const float *u, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

__global__ void add_kernel(float *x, const float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += y[i];
}

/* Every instance the launchers (elementwise.hip) use, as name expressions. */
#define ELEMENTWISE_KERNELS(X) \
    X(embedding_kernel<DT_F32>) X(embedding_kernel<DT_F16>) X(embedding_kernel<DT_BF16>) \
    X(embedding_kernel<DT_Q8_0>) X(embedding_kernel<DT_Q4_0>) X(embedding_kernel<DT_Q4_1>) \
    X(rmsnorm_kernel) X(rope_kernel) X(silu_mul_kernel) X(add_kernel)

#endif
