/*
 * moe.hip -- the launchers of moe_kernels.h. The grouped matmul's tables
 * (each expert's weights' device address, the slots grouped by expert,
 * the tiles) are made on the host from layer 4's grouping and copied down
 * before the launch.
 */
#include "kernels/hip/hip_common.h"
#include "kernels/hip/moe_kernels.h"
#include <stdlib.h>
#include <string.h>

uint64_t hip_moe_route(const kcost *c, int *ids, float *w, const float *logits, int T, const moe_gate *g) {
    return launch(c, "moe_topk", moe_topk_kernel, geo_moe_topk(T), 0, ids, w, logits, (const float *)rt_dev(g->bias), T,
                  g->n_experts, g->k, g->sigmoid, g->norm_topk, g->scaling, g->n_group, g->topk_group);
}

/* The tables in one device buffer, grown as needed: W[E] addresses, then
 * start[E + 1], slot[T k], tile[2 tiles] as ints. */
static struct { void *dev; size_t bytes; char *host; } tables;

static char *tables_room(size_t bytes) {
    if (bytes <= tables.bytes) return tables.host;
    rt_free(tables.dev);
    free(tables.host);
    tables.dev = rt_alloc(bytes, RT_WORKSPACE, "moe tables");
    tables.host = (char *)malloc(bytes);
    tables.bytes = tables.dev && tables.host ? bytes : 0;
    if (!tables.bytes) rt_hip_fail(3, "moe_gemm", "out of memory for the experts' tables", __FILE__, __LINE__);
    return tables.host;
}

template <int DT>
static uint64_t moe_gemm_dt(const kcost *c, float *y, const float *x, const void *const *W, const int *tile, const int *start,
                            const int *slot, int tiles, const moe_groups *g, int per_token, int N, int K, size_t row) {
    return launch(c, "moe_gemm", moe_gemm_kernel<DT>, geo_moe_gemm(tiles, N), 0, y, x, W, tile, start, slot, g->k, per_token,
                  N, K, row);
}

uint64_t hip_moe_matmul(const kcost *c, float *y, const float *x, const tensor *const *W, const moe_groups *g, int per_token,
                        int N, int K) {
    int E = g->n_experts, n = g->T * g->k, tiles = 0;
    for (int e = 0; e < E; e++) tiles += cdiv(g->start[e + 1] - g->start[e], GEMM_TILE);
    size_t at_start = (size_t)E * sizeof(void *), at_slot = at_start + ((size_t)E + 1) * sizeof(int),
           at_tile = at_slot + (size_t)n * sizeof(int), bytes = at_tile + 2 * (size_t)tiles * sizeof(int);
    char *h = tables_room(bytes);
    const void **addr = (const void **)h;
    int *tile = (int *)(h + at_tile);
    for (int e = 0, b = 0; e < E; e++) {
        addr[e] = rt_dev(W[e]->data);
        for (int r0 = 0; r0 < g->start[e + 1] - g->start[e]; r0 += GEMM_TILE, b++) { tile[2 * b] = e; tile[2 * b + 1] = r0; }
    }
    memcpy(h + at_start, g->start, ((size_t)E + 1) * sizeof(int));
    memcpy(h + at_slot, g->slot, (size_t)n * sizeof(int));
    rt_copy(tables.dev, h, bytes, COPY_H2D, c->step);   /* waits: the host table is reused by the next call */
    char *d = (char *)tables.dev;
    const void *const *Wd = (const void *const *)d;
    const int *td = (const int *)(d + at_tile), *sd = (const int *)(d + at_start), *sl = (const int *)(d + at_slot);
    size_t row = dtype_row_bytes(W[0]->dt, K);
    switch (W[0]->dt) {
    case DT_F32:  return moe_gemm_dt<DT_F32>(c, y, x, Wd, td, sd, sl, tiles, g, per_token, N, K, row);
    case DT_F16:  return moe_gemm_dt<DT_F16>(c, y, x, Wd, td, sd, sl, tiles, g, per_token, N, K, row);
    case DT_BF16: return moe_gemm_dt<DT_BF16>(c, y, x, Wd, td, sd, sl, tiles, g, per_token, N, K, row);
    case DT_Q8_0: return moe_gemm_dt<DT_Q8_0>(c, y, x, Wd, td, sd, sl, tiles, g, per_token, N, K, row);
    case DT_Q4_0: return moe_gemm_dt<DT_Q4_0>(c, y, x, Wd, td, sd, sl, tiles, g, per_token, N, K, row);
    case DT_Q4_1: return moe_gemm_dt<DT_Q4_1>(c, y, x, Wd, td, sd, sl, tiles, g, per_token, N, K, row);
    default: rt_hip_fail(3, "moe_gemm", "no HIP kernel for this weight dtype", __FILE__, __LINE__);
    }
    return 0;
}

uint64_t hip_moe_combine(const kcost *c, float *out, const float *y, const float *w, int T, int k, int n) {
    return launch(c, "moe_combine", moe_combine_kernel, geo_elementwise(T * n), 0, out, y, w, T, k, n);
}

JIT_SOURCE(jit_moe, "kernels/hip/moe_kernels.h", MOE_KERNELS)
