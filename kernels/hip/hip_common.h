/*
 * hip_common.h -- what every HIP launcher file includes: layer 2's HIP
 * runtime (hip_api.h), the device basics (device.h), the seam, the
 * launch, and the launchers. The kernels themselves are in the
 * *_kernels.h device headers.
 */
#ifndef HIPATH_HIP_COMMON_H
#define HIPATH_HIP_COMMON_H

#include "layers/runtime/hip/hip_api.h"
#include "kernels/hip/device.h"
extern "C" {
#include "kernels/backend.h"
}

static inline int hip_wave(void) { return rt_device_now()->prof.wavefront_size; }

/* --jit: each kernel file's kernels, by host stub and by name expression,
 * from the X-macro list in its device header; backend_hip.hip hands the
 * lists down to layer 2, which compiles and loads them. */
#define JIT_FN(...) (const void *)__VA_ARGS__,
#define JIT_NAME(...) #__VA_ARGS__,
#define JIT_SOURCE(var, header, LIST) \
    static const void *const var##_fn[] = { LIST(JIT_FN) }; \
    static const char *const var##_name[] = { LIST(JIT_NAME) }; \
    extern const rt_kernel_list var = { header, var##_fn, var##_name, (int)(sizeof var##_fn / sizeof *var##_fn) };

/* Launch fn on the stream: through the module --jit loaded when there is
 * one, else fn's built-in code object (what <<<>>> does). The arguments
 * become the kernel's parameter types P first: both take them by address. */
template <typename... P> static void launch_args(void (*fn)(P...), kdims d, size_t lds, P... p) {
    void *args[] = { (void *)&p... };
    if (hipFunction_t f = rt_hip_function((const void *)fn))
        HIP_CHECK(3, hipModuleLaunchKernel(f, d.grid, 1, 1, d.block, 1, 1, (unsigned)lds, rt_hip_stream(), args, NULL));
    else
        HIP_CHECK(3, hipLaunchKernel(fn, dim3(d.grid), dim3(d.block), args, lds, rt_hip_stream()));
}
/* One launch: layer 2 loads the code (first time) and puts GPU events
 * around it; the launch is recorded as layer 3's slice when it returns. */
template <typename... P, typename... A>
static uint64_t launch(const kcost *c, const char *name, void (*fn)(P...), kdims d, size_t lds, A... a) {
    uint64_t t0 = rt_launch_begin((const void *)fn, 0);   /* after any copy the op made first */
    rt_hip_event_begin();
    launch_args<P...>(fn, d, lds, a...);
    HIP_CHECK(3, hipGetLastError());   /* the launch itself: bad shape, no code for this arch */
    rt_hip_event_end(name, c->name, c->step, c->flops, c->bytes);
    return launch_record(c, name, d, d.grid * ((d.block + hip_wave() - 1) / hip_wave()), t0);
}

/* The launchers, one per kernel file; backend_hip.hip puts them in the table. */
uint64_t hip_embedding(const kcost *c, float *x, const tensor *E, const int *ids, int T);
uint64_t hip_rmsnorm(const kcost *c, float *o, const float *x, const float *w, int T, int n, float eps);
uint64_t hip_matmul(const kcost *c, float *y, const float *x, const tensor *W, const float *b, int T, int N, int K);
uint64_t hip_rope(const kcost *c, float *x, int T, int n_heads, int head_dim, const int *pos, float theta, const float *inv_freq,
                  int adjacent);
uint64_t hip_kv_append(const kcost *c, kv_cache *kv, const kv_batch *b, int l, const float *k, const float *v);
uint64_t hip_attention(const kcost *c, float *out, const float *q, const kv_cache *kv, const kv_batch *b, int l,
                       int n_heads, int n_kv_heads, int head_dim);
/* The step's sequences as attention_kernels.h indexes them, uploaded once
 * a step (attention.hip); MLA's launchers (mla.hip) use them too. */
struct hip_kv_step { int *table_off, *tables, *row_seq, *pos, *work; int rows, workgroups; };
const hip_kv_step *hip_kv_upload(const kv_batch *b, int64_t step);
uint64_t hip_mla_absorb(const kcost *c, float *q_lat, float *q_pe, const float *q, const tensor *W, int T, mla_dims d);
uint64_t hip_mla_kv_append(const kcost *c, kv_cache *kv, const kv_batch *b, int l, const float *c_kv, const float *k_pe,
                           mla_dims d);
uint64_t hip_mla_attention(const kcost *c, float *o_lat, const float *q_lat, const float *q_pe, const kv_cache *kv,
                           const kv_batch *b, int l, mla_dims d);
uint64_t hip_mla_up_v(const kcost *c, float *out, const float *o_lat, const tensor *W, int T, mla_dims d);
uint64_t hip_silu_mul(const kcost *c, float *g, const float *u, int n);
uint64_t hip_add(const kcost *c, float *x, const float *y, int n);
uint64_t hip_moe_route(const kcost *c, int *ids, float *w, const float *logits, int T, const moe_gate *g);
uint64_t hip_moe_matmul(const kcost *c, float *y, const float *x, const tensor *const *W, const moe_groups *g, int per_token,
                        int N, int K);
uint64_t hip_moe_combine(const kcost *c, float *out, const float *y, const float *w, int T, int k, int n);
#endif
