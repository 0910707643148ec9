/*
 * hip_api.h -- layer 2 on the HIP runtime, as layer 3's HIP launchers see
 * it: the runtime's API (or its CUDA mapping, or the CPU's), error checks, the stream,
 * the GPU events around each launch, and --jit's module.
 */
#ifndef HIPATH_HIP_API_H
#define HIPATH_HIP_API_H

#if defined(HIPATH_CUDA)
#include "layers/runtime/hip/hip_compat_cuda.h"
#elif defined(HIPATH_HIP_CPU)
#include "layers/runtime/hip/hip_cpu_api.h"   /* make HIP=cpu: the host side over hip_cpu.h */
#else
#include <hip/hip_runtime.h>
/* A kernel by its type, as CUDA's C++ API and hip_cpu_api.h take one (HIP 5 takes only its address). */
template <typename... P>
static inline hipError_t hipLaunchKernel(void (*fn)(P...), dim3 grid, dim3 block, void **args, size_t lds, hipStream_t s) {
    return hipLaunchKernel((const void *)fn, grid, block, args, lds, s);
}
#endif
extern "C" {
#include "layers/runtime/runtime.h"
}

/* Every HIP call and every launch is checked, and a failure names its layer. */
#define HIP_CHECK(layer, call) do { hipError_t e_ = (call); \
    if (e_ != hipSuccess) rt_hip_fail((layer), #call, hipGetErrorString(e_), __FILE__, __LINE__); } while (0)
/* Report a failed HIP call with the layer it belongs to, and exit. */
[[noreturn]] void rt_hip_fail(int layer, const char *call, const char *why, const char *file, int line);

hipStream_t rt_hip_stream(void);
/* GPU events around one launch, recorded on the stream: begin before the
 * launch call, end after it. Their times are read when the host next waits
 * on the stream, and each kernel becomes a measured layer-1 slice. */
void rt_hip_event_begin(void);
void rt_hip_event_end(const char *kernel, const char *op, int64_t step, double flops, double bytes);
/* --jit: the loaded module's function for a kernel's host stub; NULL: no
 * module, launch the stub's built-in code object. */
hipFunction_t rt_hip_function(const void *stub);

#endif
