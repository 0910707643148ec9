/*
 * runtime.h -- layer 2: the device, its memory, copies and streams.
 *
 * One interface, three devices:
 *   cpu        plain CPU, no GPU model (the default)
 *   sim:NAME   no device: memory is host memory, kernels run as their CPU
 *              twins, and layer 1 models their time from profile NAME
 *   hip:N      the HIP runtime on device N (a build with HIP=amd|nvidia)
 *   analytic:NAME  sim:NAME without data: allocations are accounted but
 *              not made, kernels compute nothing, copies to the host
 *              deliver zeros (docs/timing.md, "Analytic mode")
 * Every allocation is accounted by purpose and every copy traced with its
 * bytes and direction. Weights stay where the loader mapped them; rt_map()
 * gives them a device copy and rt_dev() translates a host address inside
 * a mapped range into its device address.
 *
 * --jit (rt_jit before rt_select): on hip, the kernels are compiled at run
 * time for the device (hiprtc/nvrtc, cached on disk: layers/runtime/hip/jit.h)
 * instead of loaded from the code objects built into the binary.
 */
#ifndef HIPATH_RUNTIME_H
#define HIPATH_RUNTIME_H

#include "kernels/backend.h"
#include "kernels/hip/geometry.h"
#include "layers/gpu/profile.h"
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum rt_kind { RT_CPU, RT_SIM, RT_HIP };
enum rt_purpose { RT_WEIGHTS, RT_KV, RT_ACTIVATIONS, RT_WORKSPACE, RT_NPURPOSE };
enum rt_dir { RT_H2D, RT_D2H, RT_D2D };

typedef struct {
    enum rt_kind kind;
    char name[160];        /* "cpu", "sim:w7900", "hip:0" */
    gpu_profile prof;      /* sim: the profile; hip: from the device's properties */
    int analytic;          /* kind RT_SIM, shapes only: no memory, no math */
} rt_device;

/* "auto" | "cpu" | "hip:N" | "sim:PROFILE" | "analytic:PROFILE"; PROFILE is a
 * name or a path to a profile JSON. auto takes hip:0 when this build
 * has HIP and a device is present, otherwise sim:w7900, and says so on
 * stderr. 0, or -1 with a one-line reason. */
int  rt_select(const char *spec, char *err, int errlen);
void rt_close(void);                   /* free the device; write kernel stats */
void rt_jit(int on);                   /* --jit: compile the kernels at run time (hip only) */
const rt_device *rt_device_now(void);
const backend   *rt_backend(void);

void  *rt_alloc(size_t bytes, int purpose, const char *what);   /* NULL when out of memory */
void   rt_free(void *p);
double rt_allocated(int purpose);       /* bytes now allocated */
const char *rt_purpose_name(int purpose);

/* A resident device copy of host memory (weights): 0, or -1 when out of memory. */
int  rt_map(const void *host, size_t bytes, int purpose, const char *what);
void rt_unmap_all(void);
const void *rt_dev(const void *host);

/* Copies between host and device; sync waits for the stream first (the
 * host blocks), async queues behind it. rt_sync: the host waits for
 * everything queued (rt_close does, for the last kernels' times). */
void rt_copy(void *dst, const void *src, size_t bytes, int dir, int64_t step);
void rt_copy_async(void *dst, const void *src, size_t bytes, int dir, int64_t step);
void rt_sync(int64_t step);

/* Layer 3's launch, measured on the host. rt_launch_begin, before the
 * launch call, loads the code object on the first launch (layer 2's part;
 * code: what the driver loads it from) and returns the launch's start on
 * the trace timeline: t0 when the caller read the clock just before (the
 * simulated GPU launches as layer 4 begins the op), else now.
 * rt_launch_end, after the call, records the launch (kernel, grid, block,
 * wavefronts) as one slice from t0 and returns its end. One event, not a
 * begin and an end: a launch is the commonest event there is. A flow
 * waiting for the next slice (trace_flow_in) ends on the launch. */
uint64_t rt_launch_begin(const void *code, uint64_t t0);
uint64_t rt_launch_end(const kcost *c, const char *kernel, kdims d, int wavefronts, uint64_t t0);
/* A kernel's device time measured by GPU events: a layer-1 slice on the
 * stream's track, and the kernel stats. */
void rt_kernel_measured(const char *kernel, const kcost *c, uint64_t ts_ns, uint64_t dur_ns);
/* Per-kernel totals (time measured on hip, modeled on sim), written as TSV
 * to $HIPATH_KERNEL_STATS by rt_close(). */
void rt_kernel_done(const char *op, double seconds, double flops, double bytes);
void rt_kernel_stats(FILE *f);

/* What the JIT did, for the trace: compiled, or found in the cache. */
typedef struct {
    int hit;
    double seconds;                    /* the compiler's time (a miss) */
    size_t source_bytes, code_bytes;
    int kernels;
    const char *compiler, *path;       /* path: the cache file, "" if not written */
} rt_jit_info;

/* The driver under a GPU device: host memory for cpu and sim, HIP for hip.
 * jit (hip only, else NULL) compiles or finds the kernels; code_object then
 * loads that module instead of the built-in one. */
typedef struct {
    void *(*alloc)(size_t bytes);
    void  (*free)(void *p);
    void  (*copy)(void *dst, const void *src, size_t bytes, int dir, int async);
    void  (*sync)(void);
    void  (*code_object)(const void *kernel);
    int   (*jit)(rt_jit_info *j, char *err, int errlen);
} rt_driver;
/* Report a failed HIP call with the layer it belongs to, and exit. */
void rt_hip_fail(int layer, const char *call, const char *why, const char *file, int line);

#ifdef HIPATH_HIP
/* layers/runtime/hip/runtime_hip.hip: open device N and describe it. */
const rt_driver *rt_hip_open(int n, rt_device *d, char *err, int errlen);
int rt_hip_count(void);
#endif

#endif
