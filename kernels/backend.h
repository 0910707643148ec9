/*
 * backend.h -- THE device seam (as tinygrad has one file per device).
 *
 * A device is one backend: layer 2's driver (memory, copies, streams,
 * code: layers/runtime/runtime.h) and layer 3's kernels, one entry per
 * operator, in one table. cpu, sim, analytic and hip each fill one with
 * designated initializers; backend_open() picks it from the registry
 * (backend.c) by --device. Adding an operator touches this table, each
 * backend, and the op in layer 4: nothing else.
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

#include "kernels/hip/geometry.h"
#include "layers/common/kv.h"
#include "layers/common/moe.h"
#include "layers/common/mla.h"
#include "layers/common/tensor.h"
#include "layers/runtime/runtime.h"
#include <stdint.h>

typedef struct {
    const char *name;     /* the op's name in the trace ("q_proj") */
    double flops, bytes;
    dtype dt;             /* the weights' dtype of a matmul (a simulated device runs it at that
                             dtype's peak, as vendor GEMMs on matrix cores do); else DT_F32 */
    int64_t step;         /* engine step, for the trace */
    uint64_t t0;          /* when layer 4 began the op (trace_now_ns()); 0: unread */
    int split;            /* tensor parallelism: the work is split evenly over this many GPUs,
                             each running a shard; 1: every GPU runs it whole */
    int split_in;         /* ... along its input: each GPU launches the whole grid, each
                             workgroup 1/split of the reduction (a row-split matmul) */
    int split_experts;    /* ... by experts (expert parallelism): GPU g runs experts g E/split
                             to (g + 1) E/split - 1, whole, over the rows routed to them */
} kcost;

typedef struct {
    const char *name;                 /* --device's prefix: "cpu", "sim", "analytic", "hip" */
    const rt_driver *driver;          /* layer 2's half */
    int launches;                     /* its kernels are launches (layer-3 slices): all but cpu */
    const rt_kernel_list *const *jit; /* the kernel files --jit compiles (hip), and their count */
    int n_jit;
    /* layer 3's half: the operators */
    uint64_t (*embedding)(const kcost *c, float *x, const tensor *E, const int *ids, int T);
    uint64_t (*rmsnorm)(const kcost *c, float *o, const float *x, const float *w, int T, int n, float eps);
    uint64_t (*matmul)(const kcost *c, float *y, const float *x, const tensor *W, const float *b, int T, int N, int K);
    uint64_t (*rope)(const kcost *c, float *x, int T, int n_heads, int head_dim, const int *pos, float theta, const float *inv_freq,
                     int adjacent);
    /* one launch for every sequence of the step (PagedAttention's batching) */
    uint64_t (*kv_append)(const kcost *c, kv_cache *kv, const kv_batch *b, int l, const float *k, const float *v);
    uint64_t (*attention)(const kcost *c, float *out, const float *q, const kv_cache *kv, const kv_batch *b, int l,
                          int n_heads, int n_kv_heads, int head_dim);
    /* MLA, deepseek_v3's attention (layers/common/mla.h): the query into
     * the latent space, the latent rows stored, attention over them, and
     * the values up out of it; each one launch for the step */
    uint64_t (*mla_absorb)(const kcost *c, float *q_lat, float *q_pe, const float *q, const tensor *W_kv_b, int T, mla_dims d);
    uint64_t (*mla_kv_append)(const kcost *c, kv_cache *kv, const kv_batch *b, int l, const float *c_kv, const float *k_pe,
                              mla_dims d);
    uint64_t (*mla_attention)(const kcost *c, float *o_lat, const float *q_lat, const float *q_pe, const kv_cache *kv,
                              const kv_batch *b, int l, mla_dims d);
    uint64_t (*mla_up_v)(const kcost *c, float *out, const float *o_lat, const tensor *W_kv_b, int T, mla_dims d);
    uint64_t (*silu_mul)(const kcost *c, float *g, const float *u, int n);
    uint64_t (*add)(const kcost *c, float *x, const float *y, int n);
    /* a mixture of experts (kernels/cpu/kernels.h says what each computes);
     * NULL where the backend has none: it then runs no MoE model */
    uint64_t (*moe_route)(const kcost *c, int *ids, float *w, const float *logits, int T, const moe_gate *g);
    uint64_t (*moe_matmul)(const kcost *c, float *y, const float *x, const tensor *const *W, const moe_groups *g,
                           int per_token, int N, int K);
    uint64_t (*moe_combine)(const kcost *c, float *out, const float *y, const float *w, int T, int k, int n);
    /* The backend's own copy of a weight matrix, made once at load (the
     * CPU's is block-quantized rows interleaved for its vector units).
     * 1: copied, and the backend reads W's bytes no more (the loader may
     * drop the file's pages); 0: none made; -1: out of memory. NULL: the
     * backend reads the weights as stored. release_weights frees every copy. */
    int  (*prepare_weight)(const tensor *W);
    void (*release_weights)(void);
} backend;

/* The registry (backend.c): open --device spec, "auto" | "cpu" | "hip:N" |
 * "sim:PROFILE" | "analytic:PROFILE"; PROFILE is a name or a path to a
 * profile JSON. auto takes hip:0 when this build has HIP and a device is
 * present, otherwise sim:w7900, and says so on stderr. 0, or -1 with a
 * one-line reason. backend_close() frees the device (rt_close); the model
 * has released the backend's weight copies already (model_free). */
int  backend_open(const char *spec, char *err, int errlen);
void backend_close(void);
const backend *backend_now(void);

/* A launch as layer 3 records it: one slice from t0 (kernel, grid, block,
 * wavefronts) ending now, recorded when the launch returns. Returns its
 * end. A flow waiting for the next slice (trace_flow_in) ends on it. */
uint64_t launch_record(const kcost *c, const char *kernel, kdims d, int wavefronts, uint64_t t0);

/* Host kernels: sampling runs on the host whatever the device (layer 4's
 * sampler reads the logits after their D2H copy), with the CPU's loops.
 * log sum_i e^x_i over n values (the log-softmax's normaliser), as max +
 * log sum e^(x_i - max) so nothing overflows; *max gets the max. */
float  k_logsumexp(const float *x, int n, float *max);
/* p_i = e^((x_i - max) * inv_t), the sampler's unnormalised probabilities at
 * temperature 1/inv_t; returns their sum (p NULL: the sum alone). */
double k_exp_scaled(float *p, const float *x, int n, float max, float inv_t);

#endif
