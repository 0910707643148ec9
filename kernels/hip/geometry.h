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
    ATT_ROWS = 4           /* prefill attention: query rows per workgroup */
};

#ifndef HIPATH_RTC
static inline int cdiv(int a, int b) { return (a + b - 1) / b; }
static inline kdims kd(int grid, int block) { kdims d; d.grid = grid; d.block = block; return d; }

static inline kdims geo_embedding(int T) { return kd(T, EW_BLOCK); }
static inline kdims geo_rmsnorm(int rows) { return kd(rows, EW_BLOCK); }
static inline kdims geo_matmul(int T, int N, int wave) {
    return T == 1 ? kd(cdiv(N, GEMV_ROWS), GEMV_ROWS * wave)
                  : kd(cdiv(N, GEMM_TILE) * cdiv(T, GEMM_TILE), GEMM_THREADS);
}
static inline kdims geo_rope(int T, int n_heads, int head_dim) { return kd(T * n_heads, head_dim / 2); }
static inline kdims geo_kv_append(int n) { return kd(n, EW_BLOCK); }
/* One wavefront per (query row, head); decode has one row, so one wavefront. */
static inline int att_rows(int n) { return n == 1 ? 1 : ATT_ROWS; }
static inline kdims geo_attention(int n, int n_heads, int wave) { return kd(cdiv(n, att_rows(n)) * n_heads, att_rows(n) * wave); }
static inline kdims geo_elementwise(int n) { return kd(cdiv(n, EW_BLOCK), EW_BLOCK); }
#endif

#endif
