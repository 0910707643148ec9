/*
 * backend.h -- layer 3's seam: one table of kernels per backend (as
 * tinygrad has one per device). Layer 4 calls the current table; the CPU
 * twins, the simulated GPU and HIP each fill one in.
 *
 * Every kernel is told its cost (the FLOPs and bytes layer 4 counted), so
 * the simulator can model it and the HIP backend can report achieved
 * rates. Pointers are device addresses of the current runtime (host
 * addresses on cpu and sim); weights and their small vectors are host
 * addresses that the backend maps with rt_dev().
 */
#ifndef HIPATH_BACKEND_H
#define HIPATH_BACKEND_H

#include "layers/tensor/tensor.h"
#include "layers/tensor/kvcache.h"
#include <stdint.h>

typedef struct {
    const char *name;     /* the op's name in the trace ("q_proj") */
    double flops, bytes;
    int64_t step;         /* engine step, for the trace */
} kcost;

typedef struct {
    const char *name;     /* "cpu", "sim", "hip" */
    void (*embedding)(const kcost *c, float *x, const tensor *E, const int *ids, int T);
    void (*rmsnorm)(const kcost *c, float *o, const float *x, const float *w, int T, int n, float eps);
    void (*matmul)(const kcost *c, float *y, const float *x, const tensor *W, const float *b, int T, int N, int K);
    void (*rope)(const kcost *c, float *x, int T, int n_heads, int head_dim, const int *pos, float theta, int adjacent);
    void (*kv_append)(const kcost *c, kv_cache *kv, const kv_seq *s, int l, int pos0, const float *k, const float *v, int n);
    void (*attention)(const kcost *c, float *out, const float *q, const kv_cache *kv, const kv_seq *s, int l,
                      int pos0, int n, int n_heads, int n_kv_heads, int head_dim);
    void (*silu_mul)(const kcost *c, float *g, const float *u, int n);
    void (*add)(const kcost *c, float *x, const float *y, int n);
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
