/*
 * geometry.h -- the launch shape of every HIP kernel: how many workgroups
 * (grid) of how many threads (block). One source for the HIP launchers and
 * for the simulator, so the simulated GPU runs the grids the real one
 * would. `wave` is the device's wavefront size (32 or 64), never assumed.
 * Plain C, included from C and from HIP C++; the kernels compiled at run
 * time (--jit) see only the constants: nvrtc takes no host functions.
 */
#ifndef HIPATH_GEOMETRY_H
#define HIPATH_GEOMETRY_H

typedef struct { int grid, block; } kdims;   /* workgroups, threads per workgroup */

enum {
    EW_BLOCK = 256,        /* elementwise and row kernels */
    GEMV_ROWS = 4,         /* decode GEMV: one wavefront per output row */
    GEMM_TILE = 32,        /* prefill GEMM: 32x32 outputs per workgroup */
    GEMM_THREADS = 256,    /* each thread 4 outputs of the tile */
    GEMM_SPLIT_MIN_K = 256, /* split-K: the least K a slice gets (below, its partial tile costs over
                               a quarter of the weight bytes it reads: 4 KB against 32 rows x 256 x 2) */
    ATT_ROWS = 4           /* prefill attention: query rows per workgroup */
};

#ifndef HIPATH_RTC
#include "layers/common/kv.h"
static inline int cdiv(int a, int b) { return (a + b - 1) / b; }
static inline kdims kd(int grid, int block) { kdims d; d.grid = grid; d.block = block; return d; }

static inline kdims geo_embedding(int T) { return kd(T, EW_BLOCK); }
static inline kdims geo_rmsnorm(int rows) { return kd(rows, EW_BLOCK); }
/* A MoE router's top-k: a thread per token. The grouped matmul: a 32x32
 * tile per workgroup over each expert's own rows (tiles: their count). */
static inline kdims geo_moe_topk(int T) { return kd(cdiv(T, EW_BLOCK), EW_BLOCK); }
static inline kdims geo_moe_gemm(int tiles, int N) { return kd(tiles * cdiv(N, GEMM_TILE), GEMM_THREADS); }
/* GEMM (T > 1): a workgroup a 32x32 tile of y. A skinny GEMM (few tokens,
 * N sharded) has fewer tiles than the device has CUs; split-K, as
 * hipBLASLt and cuBLAS do, splits the K loop into S slices so tiles x S
 * workgroups fill them: S = min(cus / tiles, K / GEMM_SPLIT_MIN_K), each
 * slice a multiple of GEMM_TILE deep; the slices' partial tiles are added
 * into y (gemm_kernel). gemm_slice_k is one slice's depth, K if unsplit. */
static inline int gemm_tiles(int T, int N) { return cdiv(N, GEMM_TILE) * cdiv(T, GEMM_TILE); }
static inline int gemm_slice_k(int T, int N, int K, int cus) {
    int S = cus / gemm_tiles(T, N), most = K / GEMM_SPLIT_MIN_K;
    if (S > most) S = most;
    return S > 1 ? cdiv(cdiv(K, GEMM_TILE), S) * GEMM_TILE : K;
}
/* Decode (T == 1): GEMV, a wavefront a row, enough rows to fill any GPU. */
static inline kdims geo_matmul(int T, int N, int K, int wave, int cus) {
    return T == 1 ? kd(cdiv(N, GEMV_ROWS), GEMV_ROWS * wave)
                  : kd(gemm_tiles(T, N) * cdiv(K, gemm_slice_k(T, N, K, cus)), GEMM_THREADS);
}
static inline kdims geo_rope(int T, int n_heads, int head_dim) { return kd(T * n_heads, head_dim / 2); }
static inline kdims geo_kv_append(int n) { return kd(n, EW_BLOCK); }
/* Attention: one wavefront per (query row, head); a workgroup holds `rows`
 * rows of one sequence and one head. A step of decodes only has one row a
 * sequence, so one wavefront; with a prefill in it, ATT_ROWS (a decode's
 * workgroup then has idle wavefronts). One launch serves every sequence. */
static inline int att_rows(const kv_batch *b) { return b->T == b->n_seqs ? 1 : ATT_ROWS; }
static inline int att_workgroups(const kv_batch *b, int rows) {
    int w = 0;
    for (int i = 0; i < b->n_seqs; i++) w += cdiv(b->row0[i + 1] - b->row0[i], rows);
    return w;
}
static inline kdims geo_attention(int workgroups, int rows, int n_heads, int wave) { return kd(workgroups * n_heads, rows * wave); }
/* MLA's per-head products with kv_b_proj (absorbing the query, bringing
 * the values up): a workgroup per (token, head), its threads over the outputs. */
static inline kdims geo_mla_heads(int T, int n_heads) { return kd(T * n_heads, EW_BLOCK); }
static inline kdims geo_elementwise(int n) { return kd(cdiv(n, EW_BLOCK), EW_BLOCK); }
#endif

#endif
