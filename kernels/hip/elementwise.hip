/* elementwise.hip -- the launchers of elementwise_kernels.h. */
#include "kernels/hip/hip_common.h"
#include "kernels/hip/elementwise_kernels.h"

template <int DT>
static void embedding_dt(const kcost *c, float *x, const void *E, const int *ids, int T, int dim) {
    launch(c, "embedding", embedding_kernel<DT>, geo_embedding(T), 0, x, E, ids, dim);
}

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

void hip_rmsnorm(const kcost *c, float *o, const float *x, const float *w, int T, int n, float eps) {
    launch(c, "rmsnorm", rmsnorm_kernel, geo_rmsnorm(T), 0, o, x, (const float *)rt_dev(w), n, eps);
}

void hip_rope(const kcost *c, float *x, int T, int n_heads, int head_dim, const int *pos, float theta, int adjacent) {
    launch(c, adjacent ? "rope_adjacent" : "rope_half", rope_kernel, geo_rope(T, n_heads, head_dim), 0,
           x, n_heads, head_dim, pos, theta, adjacent);
}

void hip_silu_mul(const kcost *c, float *g, const float *u, int n) {
    launch(c, "silu_mul", silu_mul_kernel, geo_elementwise(n), 0, g, u, n);
}

void hip_add(const kcost *c, float *x, const float *y, int n) {
    launch(c, "add", add_kernel, geo_elementwise(n), 0, x, y, n);
}

JIT_SOURCE(jit_elementwise, "kernels/hip/elementwise_kernels.h", ELEMENTWISE_KERNELS)
