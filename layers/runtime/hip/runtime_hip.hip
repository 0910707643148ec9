/*
 * runtime_hip.hip -- layer 2 on the HIP runtime (the rt_hip driver):
 * device N, its properties as a profile, hipMalloc/hipFree, copies on one
 * stream, GPU events around each launch, code-object load (the built-in
 * one, or with --jit the module jit.hip compiled). Events are read when
 * the host next waits on the stream (wait_stream): each kernel becomes a
 * measured layer-1 slice placed back from the moment the wait ended.
 * Built only with HIP=amd|nvidia|cpu (kernels/hip/hip.mk; cpu: hip_cpu_api.h).
 */
#include "layers/runtime/hip/hip_api.h"
#include "layers/runtime/hip/jit.h"
extern "C" {
#include "trace/trace.h"
}
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_PENDING = 4096 };

static hipStream_t S;
/* Launches whose events are not read yet. */
static struct {
    struct { hipEvent_t start, stop; const char *kernel, *op; int64_t step; double flops, bytes; } p[MAX_PENDING];
    int n, made;
} E;
/* --jit: the kernel lists layer 3 handed down, the compiled image, its functions. */
static struct {
    jit_image im;
    const rt_kernel_list *const *k;
    int nk, n;
    const char *name[JIT_MAX_KERNELS];
    hipFunction_t f[JIT_MAX_KERNELS];
    int on;
} J;

void rt_hip_fail(int layer, const char *call, const char *why, const char *file, int line) {
    fprintf(stderr, "hipath: layer %d %s: %s failed: %s (%s:%d)\n", layer, trace_layer_name(layer), call, why, file, line);
    exit(1);
}

hipStream_t rt_hip_stream(void) { return S; }

/* The host waits for the stream to finish. An event recorded last, after
 * whatever followed the kernels (the logits' copy), is the stream's end:
 * the moment the wait returns. Every pending kernel is placed back from it
 * by the GPU's own elapsed times, so a copy after the kernels does not
 * shift them late by its duration. */
static void wait_stream(void) {
    static hipEvent_t last;
    if (!last) HIP_CHECK(2, hipEventCreate(&last));
    HIP_CHECK(2, hipEventRecord(last, S));
    HIP_CHECK(2, hipStreamSynchronize(S));
    uint64_t now = trace_now_ns();
    for (int i = 0; i < E.n; i++) {
        float dur_ms, after_ms;   /* kernel i's duration; from its end to the stream's end */
        HIP_CHECK(2, hipEventElapsedTime(&dur_ms, E.p[i].start, E.p[i].stop));
        HIP_CHECK(2, hipEventElapsedTime(&after_ms, E.p[i].stop, last));
        uint64_t end = now - (uint64_t)(after_ms * 1e6), dur = (uint64_t)(dur_ms * 1e6);
        rt_kernel_measured(E.p[i].kernel, E.p[i].op, E.p[i].step, E.p[i].flops, E.p[i].bytes, end - dur, dur);
    }
    E.n = 0;
}

void rt_hip_event_begin(void) {
    if (E.n == MAX_PENDING) wait_stream();
    if (E.n == E.made) {
        HIP_CHECK(2, hipEventCreate(&E.p[E.n].start));
        HIP_CHECK(2, hipEventCreate(&E.p[E.n].stop));
        E.made++;
    }
    HIP_CHECK(2, hipEventRecord(E.p[E.n].start, S));
}

void rt_hip_event_end(const char *kernel, const char *op, int64_t step, double flops, double bytes) {
    HIP_CHECK(2, hipEventRecord(E.p[E.n].stop, S));
    E.p[E.n].kernel = kernel; E.p[E.n].op = op; E.p[E.n].step = step;
    E.p[E.n].flops = flops; E.p[E.n].bytes = bytes;
    E.n++;
}

static void *dev_alloc(size_t n) {
    void *p = NULL;
    return hipMalloc(&p, n ? n : 1) == hipSuccess ? p : NULL;   /* out of memory is the caller's to report */
}
static void dev_free(void *p) { HIP_CHECK(2, hipFree(p)); }

static void dev_copy(void *dst, const void *src, size_t n, enum copy_dir dir, int async, int64_t step) {
    (void)step;
    static const hipMemcpyKind kind[] = { hipMemcpyHostToDevice, hipMemcpyDeviceToHost, hipMemcpyDeviceToDevice };
    HIP_CHECK(2, hipMemcpyAsync(dst, src, n, kind[dir], S));
    if (!async) wait_stream();
}

/* --jit: every kernel file's kernels as one program, for the device's arch. */
static int dev_jit(const rt_kernel_list *const *k, int nk, rt_jit_info *j, char *err, int errlen) {
    const char *header[8];
    int n = 0;
    if (nk > 8) { snprintf(err, errlen, "more than 8 kernel files"); return -1; }
    for (int i = 0; i < nk; i++) {
        header[i] = k[i]->header;
        for (int e = 0; e < k[i]->n; e++) {
            if (n == JIT_MAX_KERNELS) { snprintf(err, errlen, "more than %d kernels (JIT_MAX_KERNELS)", JIT_MAX_KERNELS); return -1; }
            J.name[n++] = k[i]->name[e];
        }
    }
    jit_program p = { rt_device_now()->prof.arch, header, nk, J.name, n };
    if (jit_build(&p, &J.im, err, errlen)) return -1;
    J.k = k; J.nk = nk; J.n = n;
    *j = (rt_jit_info){ J.im.hit, J.im.seconds, J.im.source_bytes, J.im.code_bytes, n, J.im.compiler, J.im.path };
    return 0;
}

/* The JIT's module and every kernel in it, by its symbol; a failure names
 * the kernel and leaves the launches on the built-in code objects. */
static void jit_load(void) {
    hipModule_t m;
    hipError_t e = hipModuleLoadData(&m, J.im.code);
    if (e != hipSuccess)
        fprintf(stderr, "hipath: layer 2 runtime: --jit: loading the module (%s): %s; using the built-in code objects\n",
                J.im.path, hipGetErrorString(e));
    for (int i = 0; e == hipSuccess && i < J.n; i++)
        if ((e = hipModuleGetFunction(&J.f[i], m, J.im.symbol[i])) != hipSuccess) {
            fprintf(stderr, "hipath: layer 2 runtime: --jit: kernel %s (%s): %s; using the built-in code objects\n",
                    J.name[i], J.im.symbol[i], hipGetErrorString(e));
            (void)hipModuleUnload(m);
        }
    if (e == hipSuccess) J.on = 1;
    else (void)hipGetLastError();   /* reported: the launches' checks must not see it again */
    jit_free(&J.im);
}

hipFunction_t rt_hip_function(const void *stub) {
    if (!J.on) return NULL;
    int at = 0;
    for (int i = 0; i < J.nk; i++)
        for (int e = 0; e < J.k[i]->n; e++, at++)
            if (J.k[i]->fn[e] == stub) return J.f[at];
    return NULL;
}

/* The module loads on first use; asking for a kernel's attributes forces it,
 * so the load shows as its own slice instead of hiding in the first launch. */
static void dev_load_code(const void *kernel) {
    if (J.im.code) { jit_load(); return; }
    hipFuncAttributes a;
    HIP_CHECK(2, hipFuncGetAttributes(&a, kernel));
}

static int dev_count(void) {
    int n = 0;
    return hipGetDeviceCount(&n) == hipSuccess ? n : 0;
}

static int dev_open(const char *arg, rt_device *d, char *err, int errlen) {
    char *end;
    long n = strtol(arg, &end, 10);
    int count = dev_count();
    if (end == arg || *end || n < 0 || n >= count) {
        snprintf(err, errlen, "device hip:%s: %d HIP device(s) present", arg, count);
        return -1;
    }
    HIP_CHECK(2, hipSetDevice((int)n));
    hipDeviceProp_t p;
    int mem_khz = 0, bus_bits = 0;
    HIP_CHECK(2, hipGetDeviceProperties(&p, (int)n));
    HIP_CHECK(2, hipDeviceGetAttribute(&mem_khz, hipDeviceAttributeMemoryClockRate, (int)n));
    HIP_CHECK(2, hipDeviceGetAttribute(&bus_bits, hipDeviceAttributeMemoryBusWidth, (int)n));
    gpu_profile *g = &d->prof;
    memset(g, 0, sizeof *g);
    snprintf(g->name, sizeof g->name, "%s", p.name);
#ifdef HIPATH_CUDA
    snprintf(g->arch, sizeof g->arch, "sm_%d%d", p.major, p.minor);
    g->lds_bytes_per_cu = (int)p.sharedMemPerMultiprocessor;
#else
    snprintf(g->arch, sizeof g->arch, "%s", p.gcnArchName);
    g->lds_bytes_per_cu = (int)p.maxSharedMemoryPerMultiProcessor;
#endif
    snprintf(g->source, sizeof g->source, "hipGetDeviceProperties (peak FLOP/s unknown: see layers/gpu/profiles)");
    g->memory_bytes = (double)p.totalGlobalMem;
    g->bandwidth = 2.0 * mem_khz * 1e3 * bus_bits / 8;   /* double data rate; HBM/GDDR report differently, a rough figure */
    g->compute_units = p.multiProcessorCount;
    g->wavefront_size = p.warpSize;
    HIP_CHECK(2, hipStreamCreate(&S));
    return 0;
}

/* The last kernels queued: their GPU-event times reach the trace and the
 * stats only once the host has waited for them. */
static void dev_close(void) { rt_sync(NO_STEP); }

#ifndef __HIP_DEVICE_COMPILE__   /* a host table: clang's device pass must not see host functions */
extern "C" const rt_driver rt_hip = {
    .name = "hip", .clock_domain = "host-monotonic", .modeled = 0, .has_data = 1, .separate = 1,
    .call = { .alloc = "hipMalloc", .free = "hipFree", .copy = "hipMemcpy", .copy_async = "hipMemcpyAsync",
              .sync = "hipStreamSynchronize" },
    .open = dev_open, .close = dev_close, .alloc = dev_alloc, .free = dev_free, .copy = dev_copy,
    .sync = wait_stream, .load_code = dev_load_code, .jit = dev_jit,
};
#endif
