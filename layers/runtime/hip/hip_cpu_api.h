/*
 * hip_cpu_api.h -- the HIP calls hipath's host side makes, on the CPU
 * (make HIP=cpu, docs/hip-cpu.md): the launchers, uploads and the rt_hip
 * driver run as written, the kernels through hip_cpu.h.
 *
 * Device memory is malloc'd, 256-byte aligned, exactly its size (so
 * AddressSanitizer sees a kernel read past it), filled with NaN (a GPU
 * gives no zeros), and tracked: a copy whose device side is not inside one
 * allocation, or whose host side is, fails, and so does a launch that
 * passes a pointer that is not device memory. Everything on a stream
 * runs at once, so an event is the host's monotonic clock when recorded:
 * the emulation's time, not a GPU's. Code objects do not exist here: the
 * kernels are linked in, and --jit has no compiler (jit_cpu.cpp).
 */
#ifndef HIPATH_HIP_CPU_API_H
#define HIPATH_HIP_CPU_API_H

#include "layers/runtime/hip/hip_cpu.h"
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <map>
#include <mutex>
#include <type_traits>
#include <utility>

enum hipError_t { hipSuccess, hipErrorInvalidValue, hipErrorOutOfMemory, hipErrorInvalidDevice,
                  hipErrorNotSupported, hipErrorLaunchFailure };
enum hipMemcpyKind { hipMemcpyHostToHost, hipMemcpyHostToDevice, hipMemcpyDeviceToHost, hipMemcpyDeviceToDevice };
enum hipDeviceAttribute_t { hipDeviceAttributeMemoryClockRate, hipDeviceAttributeMemoryBusWidth };
typedef struct hip_cpu_stream { int unused; } *hipStream_t;
typedef struct hip_cpu_event { uint64_t ns; bool recorded; } *hipEvent_t;
typedef struct hip_cpu_module *hipModule_t;
typedef struct hip_cpu_function *hipFunction_t;
struct hipFuncAttributes { int maxThreadsPerBlock; size_t maxDynamicSharedSizeBytes; };
struct hipDeviceProp_t {
    char name[256], gcnArchName[256];
    size_t totalGlobalMem, maxSharedMemoryPerMultiProcessor;
    int multiProcessorCount, warpSize;
};

namespace hip_cpu_api {

/* The device's memory (host memory, enforced): room for hipath device's 2 x 256 MiB probe. */
const size_t MEMORY = (size_t)1 << 30;
inline std::mutex mu, stream;                 /* the allocations; one launch at a time */
inline std::map<uintptr_t, size_t> allocs;    /* start -> bytes */
inline size_t used;
inline thread_local hipError_t last, said;    /* hipGetLastError's; the code why says */
inline thread_local std::string why;          /* the last failure, in full */

inline hipError_t fail(hipError_t e, const std::string &m) { last = said = e, why = m; return e; }
inline std::string hex(const void *p) { char b[32]; snprintf(b, sizeof b, "%p", p); return b; }

/* The allocation [p, p + n) lies in; n = 0: p may be its end. */
inline bool on_device(const void *p, size_t n) {
    std::lock_guard<std::mutex> g(mu);
    uintptr_t a = (uintptr_t)p;
    auto i = allocs.upper_bound(a);
    return i != allocs.begin() && (--i, a - i->first + n <= i->second);
}

/* A kernel's pointer argument must be device memory, as on a GPU (a host
 * address there is a fault). "" or why not. */
template <typename T> std::string device_arg(int i, T v) {
    if constexpr (std::is_pointer_v<T>)
        if (v && !on_device((const void *)v, 0)) return "argument " + std::to_string(i) + " (" + hex((const void *)v) + ") is not device memory";
    return "";
}
template <typename... P, size_t... I>
hipError_t launch(void (*fn)(P...), dim3 grid, dim3 block, void **args, size_t lds, std::index_sequence<I...>) {
    std::string e;
    ((e += e.empty() ? device_arg((int)I, *(P *)args[I]) : ""), ...);
    if (e.empty()) {
        std::lock_guard<std::mutex> g(stream);
        e = hip_cpu::launch(fn, grid, block, lds, *(P *)args[I]...);
    }
    return e.empty() ? hipSuccess : fail(hipErrorLaunchFailure, e);
}

inline uint64_t now_ns() {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + t.tv_nsec;
}

}   // namespace hip_cpu_api

inline const char *hipGetErrorString(hipError_t e) {
    static const char *const NAME[] = { "hipSuccess", "hipErrorInvalidValue", "hipErrorOutOfMemory",
                                        "hipErrorInvalidDevice", "hipErrorNotSupported", "hipErrorLaunchFailure" };
    return e == hip_cpu_api::said && e != hipSuccess ? hip_cpu_api::why.c_str() : NAME[e];
}
inline hipError_t hipGetLastError() { hipError_t e = hip_cpu_api::last; hip_cpu_api::last = hipSuccess; return e; }

/* One device; its wavefront is $HIPATH_CPU_WAVE (32 or 64, default 64), its
 * compute units $HIPATH_CPU_CUS (default a core each: a GPU's count makes
 * the launchers shape their grids as on that GPU, split-K included). */
inline hipError_t hipGetDeviceCount(int *n) { *n = 1; return hipSuccess; }
inline hipError_t hipSetDevice(int n) {
    const char *w = getenv("HIPATH_CPU_WAVE");
    if (n != 0) return hip_cpu_api::fail(hipErrorInvalidDevice, "HIP on the CPU has one device, 0");
    if (w && *w && strcmp(w, "32") && strcmp(w, "64"))
        return hip_cpu_api::fail(hipErrorInvalidValue, std::string("HIPATH_CPU_WAVE=") + w + ": expected 32 or 64");
    const char *c = getenv("HIPATH_CPU_CUS");
    if (c && *c && !(atoi(c) > 0 && atoi(c) <= 4096))
        return hip_cpu_api::fail(hipErrorInvalidValue, std::string("HIPATH_CPU_CUS=") + c + ": expected 1 to 4096");
    warpSize = w && !strcmp(w, "32") ? 32 : 64;
    return hipSuccess;
}
inline hipError_t hipGetDeviceProperties(hipDeviceProp_t *p, int n) {
    if (n != 0) return hip_cpu_api::fail(hipErrorInvalidDevice, "HIP on the CPU has one device, 0");
    *p = hipDeviceProp_t{};
    snprintf(p->name, sizeof p->name, "HIP emulated on the CPU by hip_cpu.h");
    snprintf(p->gcnArchName, sizeof p->gcnArchName, "cpu-wave%d", warpSize);
    p->totalGlobalMem = hip_cpu_api::MEMORY;
    p->maxSharedMemoryPerMultiProcessor = 48 * 1024;   /* the launch's cap on dynamic LDS */
    const char *c = getenv("HIPATH_CPU_CUS");
    p->multiProcessorCount = c && *c ? atoi(c) : (int)sysconf(_SC_NPROCESSORS_ONLN);
    p->warpSize = warpSize;
    return hipSuccess;
}
/* No memory clock or bus: 0, the bandwidth unknown. */
inline hipError_t hipDeviceGetAttribute(int *v, hipDeviceAttribute_t, int) { *v = 0; return hipSuccess; }

inline hipError_t hipMalloc(void **p, size_t n) {
    using namespace hip_cpu_api;
    std::lock_guard<std::mutex> g(mu);
    if (n > MEMORY - used || posix_memalign(p, 256, n))
        return fail(hipErrorOutOfMemory, "hipMalloc(" + std::to_string(n) + "): " + std::to_string(used) + " of " +
                                             std::to_string(MEMORY) + " bytes in use");
    memset(*p, 0xff, n);   /* NaN, -1: what was never written shows */
    allocs[(uintptr_t)*p] = n;
    used += n;
    return hipSuccess;
}
inline hipError_t hipFree(void *p) {
    using namespace hip_cpu_api;
    std::lock_guard<std::mutex> g(mu);
    auto i = allocs.find((uintptr_t)p);
    if (!p) return hipSuccess;   /* as free(NULL) */
    if (i == allocs.end()) return fail(hipErrorInvalidValue, "hipFree(" + hex(p) + "): not a hipMalloc allocation");
    used -= i->second;
    allocs.erase(i);
    free(p);
    return hipSuccess;
}

/* A copy, at once; each side must be where kind says it is. */
inline hipError_t hipMemcpyAsync(void *dst, const void *src, size_t n, hipMemcpyKind kind, hipStream_t) {
    using namespace hip_cpu_api;
    static const char *const KIND[] = { "HostToHost", "HostToDevice", "DeviceToHost", "DeviceToDevice" };
    bool dev[2] = { kind == hipMemcpyHostToDevice || kind == hipMemcpyDeviceToDevice,
                    kind == hipMemcpyDeviceToHost || kind == hipMemcpyDeviceToDevice };
    const void *side[2] = { dst, src };
    for (int i = 0; i < 2; i++)
        if (dev[i] != on_device(side[i], n))
            return fail(hipErrorInvalidValue, std::string("hipMemcpy") + KIND[kind] + " of " + std::to_string(n) + " bytes: the " +
                                                  (i ? "source " : "destination ") + hex(side[i]) +
                                                  (dev[i] ? " is not inside one device allocation" : " is device memory"));
    memcpy(dst, src, n);
    return hipSuccess;
}

inline hipError_t hipStreamCreate(hipStream_t *s) { *s = new hip_cpu_stream(); return hipSuccess; }
inline hipError_t hipStreamSynchronize(hipStream_t) { return hipSuccess; }   /* all done already */
inline hipError_t hipEventCreate(hipEvent_t *e) { *e = new hip_cpu_event(); return hipSuccess; }
inline hipError_t hipEventRecord(hipEvent_t e, hipStream_t) { e->ns = hip_cpu_api::now_ns(), e->recorded = true; return hipSuccess; }
inline hipError_t hipEventSynchronize(hipEvent_t e) {
    return e->recorded ? hipSuccess : hip_cpu_api::fail(hipErrorInvalidValue, "hipEventSynchronize: event never recorded");
}
inline hipError_t hipEventElapsedTime(float *ms, hipEvent_t a, hipEvent_t b) {
    if (!a->recorded || !b->recorded) return hip_cpu_api::fail(hipErrorInvalidValue, "hipEventElapsedTime: event never recorded");
    *ms = (float)((double)(int64_t)(b->ns - a->ns) * 1e-6);
    return hipSuccess;
}

/* The kernels are linked in: nothing to load. */
inline hipError_t hipFuncGetAttributes(hipFuncAttributes *a, const void *) {
    *a = hipFuncAttributes{ 1024, 48 * 1024 };
    return hipSuccess;
}
/* A kernel by its type: its arguments are read back from args as the launchers laid them out. */
template <typename... P>
hipError_t hipLaunchKernel(void (*fn)(P...), dim3 grid, dim3 block, void **args, size_t lds, hipStream_t) {
    return hip_cpu_api::launch(fn, grid, block, args, lds, std::index_sequence_for<P...>{});
}

/* Modules (--jit's code) do not exist here; jit_cpu.cpp refuses first. */
inline hipError_t no_modules() { return hip_cpu_api::fail(hipErrorNotSupported, "HIP on the CPU loads no code objects"); }
inline hipError_t hipModuleLoadData(hipModule_t *, const void *) { return no_modules(); }
inline hipError_t hipModuleGetFunction(hipFunction_t *, hipModule_t, const char *) { return no_modules(); }
inline hipError_t hipModuleUnload(hipModule_t) { return no_modules(); }
inline hipError_t hipModuleLaunchKernel(hipFunction_t, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                        unsigned, hipStream_t, void **, void **) { return no_modules(); }

#endif
