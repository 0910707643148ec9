/* backend_cpu.c -- --device cpu: the CPU twins on host memory; cost unused, clock unread. */
#include "kernels/backend.h"
#include "kernels/cpu/kernels.h"

static uint64_t embedding(const kcost *c, float *x, const tensor *E, const int *ids, int T) {
    (void)c; k_embedding(x, E, ids, T);
    return 0;
}
static uint64_t rmsnorm(const kcost *c, float *o, const float *x, const float *w, int T, int n, float eps) {
    (void)c; k_rmsnorm(o, x, w, T, n, eps);
    return 0;
}
static uint64_t matmul(const kcost *c, float *y, const float *x, const tensor *W, const float *b, int T, int N, int K) {
    (void)c; k_matmul(y, x, W, b, T, N, K);
    return 0;
}
static uint64_t rope(const kcost *c, float *x, int T, int n_heads, int head_dim, const int *pos, float theta, int adjacent) {
    (void)c; k_rope(x, T, n_heads, head_dim, pos, theta, adjacent);
    return 0;
}
static uint64_t kv_append(const kcost *c, kv_cache *kv, const kv_batch *b, int l, const float *k, const float *v) {
    (void)c; k_kv_append(kv, b, l, k, v);
    return 0;
}
static uint64_t attention(const kcost *c, float *out, const float *q, const kv_cache *kv, const kv_batch *b, int l,
                          int n_heads, int n_kv_heads, int head_dim) {
    (void)c; k_attention(out, q, kv, b, l, n_heads, n_kv_heads, head_dim);
    return 0;
}
static uint64_t silu_mul(const kcost *c, float *g, const float *u, int n) {
    (void)c; k_silu_mul(g, u, n);
    return 0;
}
static uint64_t add(const kcost *c, float *x, const float *y, int n) {
    (void)c; k_add(x, y, n);
    return 0;
}

static uint64_t moe_route(const kcost *c, int *ids, float *w, const float *logits, int T, const moe_gate *g) {
    (void)c; k_moe_route(ids, w, logits, T, g);
    return 0;
}
static uint64_t moe_matmul(const kcost *c, float *y, const float *x, const tensor *const *W, const moe_groups *g,
                           int per_token, int N, int K) {
    (void)c; k_moe_matmul(y, x, W, g, per_token, N, K);
    return 0;
}
static uint64_t moe_combine(const kcost *c, float *out, const float *y, const float *w, int T, int k, int n) {
    (void)c; k_moe_combine(out, y, w, T, k, n);
    return 0;
}

const backend backend_cpu = {
    .name = "cpu", .driver = &rt_host, .launches = 0,
    .embedding = embedding, .rmsnorm = rmsnorm, .matmul = matmul, .rope = rope, .kv_append = kv_append,
    .attention = attention, .silu_mul = silu_mul, .add = add,
    .moe_route = moe_route, .moe_matmul = moe_matmul, .moe_combine = moe_combine,
    .prepare_weight = k_pack, .release_weights = k_pack_reset,
};
