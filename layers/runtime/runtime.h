/*
 * runtime.h -- layer 2: the device's memory, copies, streams and code.
 *
 * One interface over four drivers, each an rt_driver table:
 *   host      the CPU's own memory: --device cpu (runtime.c)
 *   sim       host memory, with layer 1 modeling each copy's time on the
 *             simulated device's timeline: --device sim:PROFILE (driver_sim.c)
 *   analytic  sim without data: allocations are accounted, not made; a copy
 *             to the host delivers zeros (driver_sim.c; docs/timing.md)
 *   hip       the HIP runtime on device N (hip/runtime_hip.hip, HIP builds)
 * Layer 3's registry (kernels/backend.h) pairs a driver with its kernels
 * and opens it here. Every allocation is accounted by purpose and every
 * copy traced with its bytes and direction. Weights stay where the loader
 * mapped them; rt_map() makes them resident on the device and rt_dev()
 * translates a host address inside a mapped range into its device address.
 *
 * --jit (rt_jit before opening): on hip, the kernels are compiled at run
 * time for the device (hiprtc/nvrtc, cached on disk: layers/runtime/hip/jit.h)
 * instead of loaded from the code objects built into the binary.
 */
#ifndef HIPATH_RUNTIME_H
#define HIPATH_RUNTIME_H

#include "layers/common/copy.h"
#include "layers/gpu/profile.h"
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum rt_purpose { RT_WEIGHTS, RT_KV, RT_ACTIVATIONS, RT_WORKSPACE, RT_NPURPOSE };

typedef struct rt_driver rt_driver;
typedef struct {
    char name[160];            /* "cpu", "sim:w7900", "hip:0" */
    gpu_profile prof;          /* sim: the profile; hip: from the device's properties */
    const rt_driver *driver;
    int gpus;                  /* --tp: GPUs joined by the profile's interconnect (1: one device) */
    int stages;                /* --pp: pipeline stages, each its own `gpus` GPUs (1: none) */
    int replicas;              /* --dp: engine replicas, each its own gpus x stages GPUs (1: one) */
    int ep;                    /* --ep: a MoE layer's experts spread over the `gpus` (1: split as every matrix is) */
} rt_device;

/* What the JIT did, for the trace: compiled, or found in the cache. */
typedef struct {
    int hit;
    double seconds;                    /* the compiler's time (a miss) */
    size_t source_bytes, code_bytes;
    int kernels;
    const char *compiler, *path;       /* path: the cache file, "" if not written */
} rt_jit_info;

/* A kernel file's kernels for --jit: the device header that defines them,
 * their host stubs and their name expressions (layer 3 hands these down). */
typedef struct { const char *header; const void *const *fn; const char *const *name; int n; } rt_kernel_list;

/* A driver: how one kind of device does memory, copies, streams and code. */
struct rt_driver {
    const char *name;            /* "host", "sim", "analytic", "hip" */
    const char *clock_domain;    /* the trace's runs.clock_domain: "host-monotonic", "virtual", "analytic" */
    int modeled;                 /* device time is modeled by layer 1, not measured */
    int has_data;                /* 0: nothing is computed (analytic) */
    int separate;                /* device memory is not the host's: weights are copied to it */
    struct { const char *alloc, *free, *copy, *copy_async, *sync; } call;   /* names in the trace */
    /* Open the device that arg names (a profile, a device number); fill d's
     * profile. 0, or -1 with a one-line reason. */
    int   (*open)(const char *arg, rt_device *d, char *err, int errlen);
    void  (*close)(void);                                  /* NULL: nothing to do */
    void *(*alloc)(size_t bytes);                          /* NULL when out of memory */
    void  (*free)(void *p);
    /* Copy and, unless async, wait for it (and everything queued before). */
    void  (*copy)(void *dst, const void *src, size_t bytes, enum copy_dir dir, int async, int64_t step);
    void  (*sync)(void);                                   /* the host waits for the stream */
    void  (*load_code)(const void *kernel);                /* the kernels' code object, before the first launch */
    /* Collectives over the GPUs (gpus > 1; NULL where a driver has one GPU):
     * the all-reduce of `bytes` (a sum, in place) and the gather of every
     * GPU's `bytes` to GPU 0, queued on the streams. */
    void  (*all_reduce)(double bytes, int64_t step);
    void  (*gather)(double bytes, int64_t step);
    /* ... the all-reduce's halves (expert parallelism's layers), and the
     * all-to-all in which GPU g sends sent[g] bytes and receives received[g] */
    void  (*reduce_scatter)(double bytes, int64_t step);
    void  (*all_gather)(double bytes, int64_t step);
    void  (*all_to_all)(const double *sent, const double *received, int64_t step);
    /* Pipeline and data parallelism (NULL where a driver has one GPU): the
     * calling thread's work goes to replica r, to stage s, from now; the send
     * of `bytes` from stage `from` to stage `to`; an event recorded on the
     * current stage's streams (its modeled end), and the host waiting for one. */
    void  (*replica)(int r);
    void  (*stage)(int s);
    void  (*send)(double bytes, int from, int to, int64_t step);
    uint64_t (*event_record)(void);
    void  (*event_synchronize)(uint64_t event);
    /* --jit: compile (or find cached) the kernels layer 3 listed; NULL: none to compile. */
    int   (*jit)(const rt_kernel_list *const *k, int n, rt_jit_info *j, char *err, int errlen);
};

/* Open the device: driver drv with arg, named name ("sim:w7900"); k, n:
 * its kernels for --jit. Layer 3's backend_open() calls it. 0, or -1 with
 * a one-line reason. */
int  rt_open(const rt_driver *drv, const char *name, const char *arg, const rt_kernel_list *const *k, int n,
             char *err, int errlen);
void rt_close(void);                   /* free the device; write kernel stats */
void rt_jit(int on);                   /* --jit: compile the kernels at run time (hip only) */
/* --tp N, before opening: the device is N GPUs of its profile joined by its
 * interconnect (layers/gpu/link.h), each running 1/N of every split kernel.
 * Modeled devices only (sim, analytic): rt_open refuses it elsewhere. */
void rt_gpus(int n);
/* --pp M and --dp N, before opening: M pipeline stages of those GPUs each,
 * and N engine replicas of the whole (modeled devices only, as --tp). */
void rt_stages(int m);
void rt_replicas(int n);
/* --ep N, before opening: a MoE layer's experts spread over the N GPUs
 * that split attention (N = --tp: SGLang's --tp N --ep-size N). */
void rt_expert_parallel(int n);
const rt_device *rt_device_now(void);
/* On a modeled device (sim, analytic), the device time modeled so far: the
 * sum of every kernel's and copy's modeled time (layer 1's sim_busy_ns);
 * 0 on a measured one. */
uint64_t rt_modeled_ns(void);

void  *rt_alloc(size_t bytes, int purpose, const char *what);   /* NULL when out of memory */
void   rt_free(void *p);
double rt_allocated(int purpose);       /* bytes now allocated */

/* A resident device copy of host memory (weights): 0, or -1 when out of memory. */
int  rt_map(const void *host, size_t bytes, int purpose, const char *what);
void rt_unmap_all(void);
const void *rt_dev(const void *host);

/* Copies between host and device; sync waits for the stream first (the
 * host blocks), async queues behind it. rt_sync: the host waits for
 * everything queued. */
void rt_copy(void *dst, const void *src, size_t bytes, enum copy_dir dir, int64_t step);
void rt_copy_async(void *dst, const void *src, size_t bytes, enum copy_dir dir, int64_t step);
void rt_sync(int64_t step);

/* Tensor parallelism's collectives, as vLLM calls them through NCCL/RCCL
 * (RCCL keeps NCCL's API names): the sum of x's `bytes` over the GPUs, in
 * place (ncclAllReduce: every GPU then holds it), and the gather of each
 * GPU's `bytes` to GPU 0 (the vocab-split logits; torch.distributed.gather,
 * NCCL send/recv). Queued on the streams: the host does not wait. Nothing
 * with one GPU. The data is already whole: a modeled device computes every
 * kernel whole and models one GPU's shard. */
void rt_all_reduce(double bytes, int64_t step);
void rt_gather(double bytes, int64_t step);
/* Expert parallelism's: the all-reduce's two halves (ncclReduceScatter:
 * each GPU ends with 1/N of the sums; ncclAllGather: each GPU's 1/N to
 * all), and the all-to-all that sends each token to its experts' GPUs and
 * back (torch.distributed.all_to_all_single; DeepEP's dispatch and combine),
 * GPU g sending sent[g] bytes and receiving received[g]. */
void rt_reduce_scatter(double bytes, int64_t step);
void rt_all_gather(double bytes, int64_t step);
void rt_all_to_all(const double *sent, const double *received, int64_t step);
/* Pipeline parallelism (vLLM sends a stage's activations to the next with
 * torch.distributed's send/recv over NCCL): the calling thread's work goes
 * to replica r, stage s, from now (rt_replica: an engine's thread says its
 * replica once; rt_stage: its forward each stage as it reaches it), and stage
 * `from` sends `bytes` to stage `to`, queued on both. Nothing on a device
 * of one GPU. */
void rt_replica(int r);
void rt_stage(int s);
void rt_send(double bytes, int from, int to, int64_t step);
/* An event on the current stage's streams (hipEventRecord) and the host
 * waiting for it (hipEventSynchronize): what a batch in flight is waited
 * for by. On a device without events, recording gives 0 and waiting waits
 * for everything queued. */
typedef uint64_t rt_event;
rt_event rt_event_record(void);
void rt_event_synchronize(rt_event e, int64_t step);

/* Before a kernel launch (layer 3): loads the code object on the first one
 * (layer 2's part; code: what the driver loads it from) and returns the
 * launch's start on the trace timeline: t0 when the caller read the clock
 * just before (the simulated GPU launches as layer 4 begins the op), else now. */
uint64_t rt_launch_begin(const void *code, uint64_t t0);
/* A kernel's device time measured by GPU events: a layer-1 slice on the
 * stream's track (the GPU keeps no trace: the runtime reads its timestamps
 * and records them for it), and the kernel stats. */
void rt_kernel_measured(const char *kernel, const char *op, int64_t step, double flops, double bytes,
                        uint64_t ts_ns, uint64_t dur_ns);
/* Per-kernel totals (time measured on hip, modeled on sim), written as TSV
 * to $HIPATH_KERNEL_STATS by rt_close(). */
void rt_kernel_done(const char *op, double seconds, double flops, double bytes);
void rt_kernel_stats(FILE *f);

/* The drivers, and host memory as they allocate it (cache-line aligned). */
extern const rt_driver rt_host, rt_sim, rt_analytic;
void *rt_host_alloc(size_t bytes);
#ifdef HIPATH_HIP
extern const rt_driver rt_hip;        /* layers/runtime/hip/runtime_hip.hip */
#endif

#endif
