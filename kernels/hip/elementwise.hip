/* elementwise.hip -- embedding gather, RMSNorm, RoPE, SwiGLU, residual add. */
#include "kernels/hip/hip_common.h"

template <int DT>
__global__ void embedding_kernel(float *x, const void *E, const int *ids, int dim) {
    int t = blockIdx.x;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) x[(int64_t)t * dim + i] = wload<DT>(E, (int64_t)ids[t] * dim + i);
}

template <int DT>
static void embedding_dt(const kcost *c, float *x, const void *E, const int *ids, int T, int dim) {
    kdims d = geo_embedding(T);
    hip_launch_begin(c, "embedding", (const void *)embedding_kernel<DT>, d);
    embedding_kernel<DT><<<d.grid, d.block, 0, hip_stream()>>>(x, E, ids, dim);
    hip_launch_end(c, "embedding");
}

/* Block formats too: a row is whole blocks, so element t*dim + i of the
 * table is weight i of row t. */
void hip_embedding(const kcost *c, float *x, const tensor *E, const int *ids, int T) {
    int dim = (int)E->shape[1];
    const void *e = rt_dev(E->data);
    switch (E->dt) {
    case DT_F32:  embedding_dt<DT_F32>(c, x, e, ids, T, dim); break;
    case DT_F16:  embedding_dt<DT_F16>(c, x, e, ids, T, dim); break;
    case DT_BF16: embedding_dt<DT_BF16>(c, x, e, ids, T, dim); break;
    case DT_Q8_0: embedding_dt<DT_Q8_0>(c, x, e, ids, T, dim); break;
    case DT_Q4_0: embedding_dt<DT_Q4_0>(c, x, e, ids, T, dim); break;
    case DT_Q4_1: embedding_dt<DT_Q4_1>(c, x, e, ids, T, dim); break;
    default: rt_hip_fail(3, "embedding", "no HIP kernel for this weight dtype", __FILE__, __LINE__);
    }
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

void hip_rmsnorm(const kcost *c, float *o, const float *x, const float *w, int T, int n, float eps) {
    kdims d = geo_rmsnorm(T);
    hip_launch_begin(c, "rmsnorm", (const void *)rmsnorm_kernel, d);
    rmsnorm_kernel<<<d.grid, d.block, 0, hip_stream()>>>(o, x, (const float *)rt_dev(w), n, eps);
    hip_launch_end(c, "rmsnorm");
}

/* One workgroup per (token, head), one thread per rotated pair: (i, i + d/2)
 * for HF's rotate_half, (2i, 2i + 1) for GGUF's adjacent pairs. */
__global__ void rope_kernel(float *x, int n_heads, int head_dim, const int *pos, float theta, int adjacent) {
    int t = blockIdx.x / n_heads, i = threadIdx.x, half = head_dim / 2;
    float *v = x + (int64_t)blockIdx.x * head_dim;
    double a = pos[t] * pow((double)theta, -2.0 * i / head_dim);
    float c = (float)cos(a), s = (float)sin(a);
    int i0 = adjacent ? 2 * i : i, i1 = adjacent ? 2 * i + 1 : i + half;
    float a0 = v[i0], a1 = v[i1];
    v[i0] = a0 * c - a1 * s;
    v[i1] = a1 * c + a0 * s;
}

void hip_rope(const kcost *c, float *x, int T, int n_heads, int head_dim, const int *pos, float theta, int adjacent) {
    kdims d = geo_rope(T, n_heads, head_dim);
    const char *name = adjacent ? "rope_adjacent" : "rope_half";
    hip_launch_begin(c, name, (const void *)rope_kernel, d);
    rope_kernel<<<d.grid, d.block, 0, hip_stream()>>>(x, n_heads, head_dim, pos, theta, adjacent);
    hip_launch_end(c, name);
}

__global__ void silu_mul_kernel(float *g, const float *u, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

void hip_silu_mul(const kcost *c, float *g, const float *u, int n) {
    kdims d = geo_elementwise(n);
    hip_launch_begin(c, "silu_mul", (const void *)silu_mul_kernel, d);
    silu_mul_kernel<<<d.grid, d.block, 0, hip_stream()>>>(g, u, n);
    hip_launch_end(c, "silu_mul");
}

__global__ void add_kernel(float *x, const float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += y[i];
}

void hip_add(const kcost *c, float *x, const float *y, int n) {
    kdims d = geo_elementwise(n);
    hip_launch_begin(c, "add", (const void *)add_kernel, d);
    add_kernel<<<d.grid, d.block, 0, hip_stream()>>>(x, y, n);
    hip_launch_end(c, "add");
}
