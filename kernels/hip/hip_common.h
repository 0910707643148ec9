/*
 * hip_common.h -- what every HIP host file includes: the HIP runtime (or
 * its CUDA mapping), hipath's C headers, the device basics (device.h),
 * error checks, the launch, and the backend's functions. The kernels
 * themselves are in the *_kernels.h device headers.
 */
#ifndef HIPATH_HIP_COMMON_H
#define HIPATH_HIP_COMMON_H

#ifdef HIPATH_CUDA
#include "kernels/hip/hip_compat_cuda.h"
#else
#include <hip/hip_runtime.h>
#endif
#include "kernels/hip/device.h"
#include "layers/runtime/hip/jit.h"

extern "C" {
#include "kernels/backend.h"
#include "layers/runtime/runtime.h"
}

/* Every HIP call and every launch is checked, and a failure names its layer. */
#define HIP_CHECK(layer, call) do { hipError_t e_ = (call); \
    if (e_ != hipSuccess) rt_hip_fail((layer), #call, hipGetErrorString(e_), __FILE__, __LINE__); } while (0)

/* backend_hip.hip: timing events around each launch, and the wave size. */
void hip_launch_begin(const void *fn, kdims d);
uint64_t hip_launch_end(const kcost *c, const char *kernel);
int  hip_wave(void);
hipStream_t hip_stream(void);
void hip_backend_open(hipStream_t s, int wave);
void hip_drain(void);   /* read the pending kernels' events (the host has waited) */

/* --jit: each kernel file's kernels, by host stub and by name expression
 * (JIT_SOURCE, from the X-macro list in its device header). backend_hip.hip
 * lists the program (hip_jit_program) and, once runtime_hip.hip loaded the
 * module, maps each stub to its function there (hip_jit_use). */
typedef struct { const char *header; const void *const *fn; const char *const *name; int n; } jit_source;
#define JIT_FN(...) (const void *)__VA_ARGS__,
#define JIT_NAME(...) #__VA_ARGS__,
#define JIT_SOURCE(var, header, LIST) \
    static const void *const var##_fn[] = { LIST(JIT_FN) }; \
    static const char *const var##_name[] = { LIST(JIT_NAME) }; \
    extern const jit_source var = { header, var##_fn, var##_name, (int)(sizeof var##_fn / sizeof *var##_fn) };
int  hip_jit_program(const char **header, int *n_header, const char **name);   /* the number of names */
void hip_jit_use(const hipFunction_t *f);                                      /* in hip_jit_program's order */
hipFunction_t hip_jit_function(const void *fn);                                /* NULL: no module, use fn */

/* Launch fn on the stream: through the module --jit loaded when there is
 * one, else fn's built-in code object (what <<<>>> does). The arguments
 * become the kernel's parameter types P first: both take them by address. */
template <typename... P> static void launch_args(const void *fn, kdims d, size_t lds, P... p) {
    void *args[] = { (void *)&p... };
    if (hipFunction_t f = hip_jit_function(fn))
        HIP_CHECK(3, hipModuleLaunchKernel(f, d.grid, 1, 1, d.block, 1, 1, (unsigned)lds, hip_stream(), args, NULL));
    else
        HIP_CHECK(3, hipLaunchKernel(fn, dim3(d.grid), dim3(d.block), args, lds, hip_stream()));
}
template <typename... P, typename... A>
static uint64_t launch(const kcost *c, const char *name, void (*fn)(P...), kdims d, size_t lds, A... a) {
    hip_launch_begin((const void *)fn, d);
    launch_args<P...>((const void *)fn, d, lds, a...);
    return hip_launch_end(c, name);
}

/* The launchers, one per kernel file; backend_hip.hip puts them in the table. */
uint64_t hip_embedding(const kcost *c, float *x, const tensor *E, const int *ids, int T);
uint64_t hip_rmsnorm(const kcost *c, float *o, const float *x, const float *w, int T, int n, float eps);
uint64_t hip_matmul(const kcost *c, float *y, const float *x, const tensor *W, const float *b, int T, int N, int K);
uint64_t hip_rope(const kcost *c, float *x, int T, int n_heads, int head_dim, const int *pos, float theta, int adjacent);
uint64_t hip_kv_append(const kcost *c, kv_cache *kv, const kv_seq *s, int l, int pos0, const float *k, const float *v, int n);
uint64_t hip_attention(const kcost *c, float *out, const float *q, const kv_cache *kv, const kv_seq *s, int l,
                       int pos0, int n, int n_heads, int n_kv_heads, int head_dim);
uint64_t hip_silu_mul(const kcost *c, float *g, const float *u, int n);
uint64_t hip_add(const kcost *c, float *x, const float *y, int n);
#endif
