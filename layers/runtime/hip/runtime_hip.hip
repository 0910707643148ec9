/*
 * runtime_hip.hip -- layer 2 on the HIP runtime: device N, its properties
 * as a profile, hipMalloc/hipFree, copies on one stream, code-object load
 * (the built-in one, or with --jit the module jit.hip compiled).
 * Built only with HIP=amd|nvidia (kernels/hip/hip.mk).
 */
#include "kernels/hip/hip_common.h"
#include "layers/runtime/hip/jit.h"
#include <stdio.h>
#include <string.h>

static hipStream_t S;
static struct { jit_image im; const char *name[JIT_MAX_KERNELS]; int n; } J;   /* --jit */

static void *dev_alloc(size_t n) {
    void *p = NULL;
    return hipMalloc(&p, n ? n : 1) == hipSuccess ? p : NULL;   /* out of memory is the caller's to report */
}
static void dev_free(void *p) { HIP_CHECK(2, hipFree(p)); }

static void dev_copy(void *dst, const void *src, size_t n, int dir, int async) {
    static const hipMemcpyKind kind[] = { hipMemcpyHostToDevice, hipMemcpyDeviceToHost, hipMemcpyDeviceToDevice };
    HIP_CHECK(2, hipMemcpyAsync(dst, src, n, kind[dir], S));
    if (!async) { HIP_CHECK(2, hipStreamSynchronize(S)); hip_drain(); }
}
static void dev_sync(void) { HIP_CHECK(2, hipStreamSynchronize(S)); hip_drain(); }

/* --jit: every kernel file's kernels as one program, for the device's arch. */
static int dev_jit(rt_jit_info *j, char *err, int errlen) {
    const char *header[8];
    jit_program p = { rt_device_now()->prof.arch, header, 0, J.name, 0 };
    if ((p.n_name = J.n = hip_jit_program(header, &p.n_header, J.name)) < 0) {
        snprintf(err, errlen, "more than %d kernels (JIT_MAX_KERNELS)", JIT_MAX_KERNELS);
        return -1;
    }
    if (jit_build(&p, &J.im, err, errlen)) return -1;
    *j = (rt_jit_info){ J.im.hit, J.im.seconds, J.im.source_bytes, J.im.code_bytes, J.n, J.im.compiler, J.im.path };
    return 0;
}

/* The JIT's module and every kernel in it, by its symbol; a failure names
 * the kernel and leaves the launches on the built-in code objects. */
static void jit_load(void) {
    hipModule_t m;
    hipFunction_t f[JIT_MAX_KERNELS];
    hipError_t e = hipModuleLoadData(&m, J.im.code);
    if (e != hipSuccess)
        fprintf(stderr, "hipath: layer 2 runtime: --jit: loading the module (%s): %s; using the built-in code objects\n",
                J.im.path, hipGetErrorString(e));
    for (int i = 0; e == hipSuccess && i < J.n; i++)
        if ((e = hipModuleGetFunction(&f[i], m, J.im.symbol[i])) != hipSuccess) {
            fprintf(stderr, "hipath: layer 2 runtime: --jit: kernel %s (%s): %s; using the built-in code objects\n",
                    J.name[i], J.im.symbol[i], hipGetErrorString(e));
            (void)hipModuleUnload(m);
        }
    if (e == hipSuccess) hip_jit_use(f);
    else (void)hipGetLastError();   /* reported: the launches' checks must not see it again */
    jit_free(&J.im);
}

/* The module loads on first use; asking for a kernel's attributes forces it,
 * so the load shows as its own slice instead of hiding in the first launch. */
static void dev_code_object(const void *kernel) {
    if (J.im.code) { jit_load(); return; }
    hipFuncAttributes a;
    HIP_CHECK(2, hipFuncGetAttributes(&a, kernel));
}

static const rt_driver HIP = { dev_alloc, dev_free, dev_copy, dev_sync, dev_code_object, dev_jit };

int rt_hip_count(void) {
    int n = 0;
    return hipGetDeviceCount(&n) == hipSuccess ? n : 0;
}

const rt_driver *rt_hip_open(int n, rt_device *d, char *err, int errlen) {
    int count = rt_hip_count();
    if (n >= count) { snprintf(err, errlen, "device hip:%d: %d HIP device(s) present", n, count); return NULL; }
    HIP_CHECK(2, hipSetDevice(n));
    hipDeviceProp_t p;
    int mem_khz = 0, bus_bits = 0;
    HIP_CHECK(2, hipGetDeviceProperties(&p, n));
    HIP_CHECK(2, hipDeviceGetAttribute(&mem_khz, hipDeviceAttributeMemoryClockRate, n));
    HIP_CHECK(2, hipDeviceGetAttribute(&bus_bits, hipDeviceAttributeMemoryBusWidth, n));
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
    hip_backend_open(S, p.warpSize);
    return &HIP;
}
