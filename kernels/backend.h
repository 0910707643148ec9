/*
 * backend.h -- layer 3's seam: one table of kernels per backend (as
 * tinygrad has one per device). Layer 4 calls the current table; the CPU
 * twins, the simulated GPU and HIP each fill one in.
 *
 * Every kernel is told its cost (the FLOPs and bytes layer 4 counted), so
 * the simulator can model it and the HIP backend can report achieved
 * rates, and when layer 4 began the op. It returns when it handed the work
 * off, on the trace's clock (a launch's end; on the simulated GPU the clock
 * is set back to it once the CPU twin has computed), or 0 when it did not
 * read the clock (the CPU computes in place): layer 4's slice of the op
 * ends there without reading the clock again. Pointers are device
 * addresses of the current runtime (host addresses on cpu and sim);
 * weights and their small vectors are host addresses that the backend maps
 * with rt_dev().
 */
#ifndef HIPATH_BACKEND_H
#define HIPATH_BACKEND_H

#include "layers/common/tensor.h"
#include "layers/common/kv.h"
#include <stdint.h>

typedef struct {
    const char *name;     /* the op's name in the trace ("q_proj") */
    double flops, bytes;
    int64_t step;         /* engine step, for the trace */
    uint64_t t0;          /* when layer 4 began the op (trace_now_ns()); 0: unread */
} kcost;

typedef struct {
    const char *name;     /* "cpu", "sim", "hip" */
    uint64_t (*embedding)(const kcost *c, float *x, const tensor *E, const int *ids, int T);
    uint64_t (*rmsnorm)(const kcost *c, float *o, const float *x, const float *w, int T, int n, float eps);
    uint64_t (*matmul)(const kcost *c, float *y, const float *x, const tensor *W, const float *b, int T, int N, int K);
    uint64_t (*rope)(const kcost *c, float *x, int T, int n_heads, int head_dim, const int *pos, float theta, int adjacent);
    uint64_t (*kv_append)(const kcost *c, kv_cache *kv, const kv_seq *s, int l, int pos0, const float *k, const float *v, int n);
    uint64_t (*attention)(const kcost *c, float *out, const float *q, const kv_cache *kv, const kv_seq *s, int l,
                          int pos0, int n, int n_heads, int n_kv_heads, int head_dim);
    uint64_t (*silu_mul)(const kcost *c, float *g, const float *u, int n);
    uint64_t (*add)(const kcost *c, float *x, const float *y, int n);
    /* The backend's own copy of a weight matrix, made once at load (the
     * CPU's is block-quantized rows interleaved for its vector units);
     * 0, or -1 when out of memory. NULL: the backend reads the weights as
     * stored. release_weights frees every copy. */
    int  (*prepare_weight)(const tensor *W);
    void (*release_weights)(void);
} backend;

extern const backend backend_cpu;   /* kernels/cpu/backend_cpu.c */
extern const backend backend_sim;   /* kernels/cpu/backend_sim.c: CPU twins + the GPU model */
extern const backend backend_hip;   /* kernels/hip/backend_hip.hip, with HIP=amd|nvidia */

#endif
