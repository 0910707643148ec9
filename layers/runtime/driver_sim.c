/*
 * driver_sim.c -- layer 2 for a simulated device (sim:PROFILE) and its
 * shapes-only twin (analytic:PROFILE). Memory is the host's (analytic: an
 * address nothing reads); layer 1 (layers/gpu/sim.h) models how long each
 * copy takes on the device's one stream. The host's own memcpy is not the
 * device's time: the clock is set back by it (docs/timing.md, rule 2), and
 * a synchronous copy waits for the stream (rule 4).
 */
#include "layers/runtime/runtime.h"
#include "layers/gpu/link.h"
#include "layers/gpu/sim.h"
#include "trace/trace.h"
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* The simulated device times hipath's own f32 kernels: its profile must
 * give peak_flops.fp32, whatever else it leaves out. */
static int sim_open_profile(const char *profile, rt_device *d, char *err, int errlen) {
    double fp32;
    if (gpu_profile_load(&d->prof, profile, err, errlen) || gpu_profile_peak(&d->prof, "fp32", &fp32, err, errlen) ||
        gpu_link_check(&d->prof, d->gpus * d->stages, err, errlen))
        return -1;
    sim_open(&d->prof, d->gpus, d->stages, d->replicas);
    return 0;
}

/* Analytic memory holds nothing: a copy to the host delivers zeros (the
 * placeholder logits), other copies move nothing. */
static void copy_modeled(void *dst, const void *src, size_t n, enum copy_dir dir, int async, int64_t step) {
    if (!async) sim_wait();                                   /* a sync copy waits for the stream */
    uint64_t t0 = trace_now_ns();
    if (rt_device_now()->driver->has_data) { if (dst != src) memcpy(dst, src, n); }
    else if (dir == COPY_D2H) memset(dst, 0, n);
    trace_clock_rewind(t0);                                   /* modeled time replaces the memcpy's */
    uint64_t end = sim_copy(dir, (double)n, step);
    /* The host is blocked from the copy's start to its end: recording its
     * slice is not host time, nor is a deschedule between here and a clock
     * read (a busy machine's left sync copies with no modeled wait twice). */
    if (!async) trace_clock_blocked(t0, end);
}
static void sim_load_code(const void *k) { (void)k; }
static void all_reduce(double bytes, int64_t step) { sim_ring("allReduce", bytes, 2, step); }
static void reduce_scatter(double bytes, int64_t step) { sim_ring("reduceScatter", bytes, 1, step); }
static void all_gather(double bytes, int64_t step) { sim_ring("allGather", bytes, 1, step); }
static void all_to_all(const double *sent, const double *received, int64_t step) { sim_all_to_all("allToAll", sent, received, step); }
static void gather(double bytes, int64_t step) { sim_gather("gather", bytes, step); }
static void send(double bytes, int from, int to, int64_t step) { sim_send(bytes, from, to, step); }

const rt_driver rt_sim = {
    .name = "sim", .clock_domain = "virtual", .modeled = 1, .has_data = 1,
    .call = { .alloc = "alloc", .free = "free", .copy = "memcpy", .copy_async = "memcpy", .sync = "sync" },
    .open = sim_open_profile, .alloc = rt_host_alloc, .free = free, .copy = copy_modeled, .sync = sim_wait,
    .load_code = sim_load_code, .all_reduce = all_reduce, .gather = gather,
    .reduce_scatter = reduce_scatter, .all_gather = all_gather, .all_to_all = all_to_all,
    .replica = sim_replica, .stage = sim_stage, .send = send, .event_record = sim_event_record, .event_synchronize = sim_event_wait,
};

/* Analytic: an allocation is an address of its own that nothing reads (a
 * 28 GB model must not take 28 GB). */
static void *none_alloc(size_t n) {
    static _Atomic uintptr_t next = (uintptr_t)1 << 40;
    return (void *)atomic_fetch_add(&next, (n + 4095) & ~(size_t)4095);
}
static void none_free(void *p) { (void)p; }

const rt_driver rt_analytic = {
    .name = "analytic", .clock_domain = "analytic", .modeled = 1, .has_data = 0,
    .call = { .alloc = "alloc", .free = "free", .copy = "memcpy", .copy_async = "memcpy", .sync = "sync" },
    .open = sim_open_profile, .alloc = none_alloc, .free = none_free, .copy = copy_modeled, .sync = sim_wait,
    .load_code = sim_load_code, .all_reduce = all_reduce, .gather = gather,
    .reduce_scatter = reduce_scatter, .all_gather = all_gather, .all_to_all = all_to_all,
    .replica = sim_replica, .stage = sim_stage, .send = send, .event_record = sim_event_record, .event_synchronize = sim_event_wait,
};

uint64_t rt_modeled_ns(void) {
    const rt_driver *d = rt_device_now()->driver;
    return d && d->modeled ? sim_busy_ns() : 0;
}
