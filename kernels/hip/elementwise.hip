/* elementwise.hip -- the launchers of elementwise_kernels.h. */
#include "kernels/hip/hip_common.h"
#include "kernels/hip/elementwise_kernels.h"

template <int DT>
static uint64_t embedding_dt(const kcost *c, float *x, const void *E, const int *ids, int T, int dim) {
    return launch(c, "embedding", embedding_kernel<DT>, geo_embedding(T), 0, x, E, ids, dim);
}

uint64_t hip_embedding(const kcost *c, float *x, const tensor *E, const int *ids, int T) {
    int dim = (int)E->shape[1];
    const void *e = rt_dev(E->data);
    switch (E->dt) {
    case DT_F32:  return embedding_dt<DT_F32>(c, x, e, ids, T, dim);
    case DT_F16:  return embedding_dt<DT_F16>(c, x, e, ids, T, dim);
    case DT_BF16: return embedding_dt<DT_BF16>(c, x, e, ids, T, dim);
    case DT_Q8_0: return embedding_dt<DT_Q8_0>(c, x, e, ids, T, dim);
    case DT_Q4_0: return embedding_dt<DT_Q4_0>(c, x, e, ids, T, dim);
    case DT_Q4_1: return embedding_dt<DT_Q4_1>(c, x, e, ids, T, dim);
    default: rt_hip_fail(3, "embedding", "no HIP kernel for this weight dtype", __FILE__, __LINE__);
    }
    return 0;
}

uint64_t hip_rmsnorm(const kcost *c, float *o, const float *x, const float *w, int T, int n, float eps) {
    return launch(c, "rmsnorm", rmsnorm_kernel, geo_rmsnorm(T), 0, o, x, (const float *)rt_dev(w), n, eps);
}

uint64_t hip_rope(const kcost *c, float *x, int T, int n_heads, int head_dim, const int *pos, float theta, const float *inv_freq,
                  int adjacent) {
    return launch(c, adjacent ? "rope_adjacent" : "rope_half", rope_kernel, geo_rope(T, n_heads, head_dim), 0,
                  x, n_heads, head_dim, pos, theta, inv_freq, adjacent);
}

uint64_t hip_silu_mul(const kcost *c, float *g, const float *u, int n) {
    return launch(c, "silu_mul", silu_mul_kernel, geo_elementwise(n), 0, g, u, n);
}

uint64_t hip_add(const kcost *c, float *x, const float *y, int n) {
    return launch(c, "add", add_kernel, geo_elementwise(n), 0, x, y, n);
}

JIT_SOURCE(jit_elementwise, "kernels/hip/elementwise_kernels.h", ELEMENTWISE_KERNELS)
