/* sim.c -- layer 1, simulated: the wave model and the modeled timeline. */
#include "layers/gpu/sim.h"
#include "layers/gpu/link.h"
#include "trace/trace.h"
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

int sim_model(const gpu_profile *p, int workgroups, int block, double flops, double bytes, double peak,
              sim_kernel *k, char *err, int errlen) {
    if (!(p->peak.fp32 > 0) || !(p->bandwidth > 0) || p->compute_units <= 0 || p->wavefront_size <= 0) {
        snprintf(err, errlen, "profile %s: needs positive peak_flops.fp32, memory bandwidth, compute_units and wavefront_size", p->name);
        return -1;
    }
    if (workgroups <= 0 || block <= 0) { snprintf(err, errlen, "empty grid (%d workgroups of %d threads)", workgroups, block); return -1; }
    int cus = p->compute_units;
    double G = workgroups;
    k->workgroups = workgroups;
    k->wavefronts = workgroups * ((block + p->wavefront_size - 1) / p->wavefront_size);
    k->waves = (workgroups + cus - 1) / cus;
    k->cus_last = workgroups - (k->waves - 1) * cus;
    if (!(peak > 0)) peak = p->peak.fp32;
    double t_compute = k->waves * (flops / G) / (peak / cus);
    double t_memory = bytes / (p->bandwidth * (G < cus ? G / cus : 1));
    k->compute_bound = t_compute > t_memory;
    k->busy_s = k->compute_bound ? t_compute : t_memory;
    k->wave_s = k->busy_s / k->waves;
    k->total_s = k->busy_s + p->launch_latency_s;
    return 0;
}

const char *const SIM_CLASS_NAME[SIM_CLASSES] = { "gemm_compute", "gemm_memory", "attention_prefill", "attention_decode",
                                                  "elementwise" };

enum sim_class sim_class_of(const char *kernel, const sim_kernel *k) {
    /* MLA's: its per-head products with kv_b_proj are batched GEMMs, its attention attention */
    if (!strcmp(kernel, "gemm") || !strcmp(kernel, "gemv") || !strcmp(kernel, "moe_gemm") || !strcmp(kernel, "mla_absorb") ||
        !strcmp(kernel, "mla_up_v"))
        return k->compute_bound ? SIM_GEMM_COMPUTE : SIM_GEMM_MEMORY;
    if (!strcmp(kernel, "attention_prefill") || !strcmp(kernel, "mla_prefill")) return SIM_ATTENTION_PREFILL;
    if (!strcmp(kernel, "attention_decode") || !strcmp(kernel, "mla_decode")) return SIM_ATTENTION_DECODE;
    return SIM_ELEMENTWISE;
}

/* A summarized step's kernels, per class (sim_summarize). */
typedef struct { int64_t launches; uint64_t dur_ns; double flops, bytes; } sim_bin;

#define MAX_LANES 64      /* GPUs on the timeline: tp x pp x dp */
#define MAX_GROUPS 64     /* their groups: a stage of a replica (tp GPUs in lockstep) */

static struct {
    gpu_profile p;
    int on, gpus, stages, replicas, lanes, summarize;
    _Atomic int named;
    uint64_t free_ns[MAX_GROUPS]; /* when each group's streams are free */
    _Atomic uint64_t busy_ns;     /* the sum of every kernel and copy's time, over the groups */
    int binned;                   /* the bins hold kernels */
    int64_t bin_step;             /* of this step */
    uint64_t bin_t0;              /* its first kernel's start */
    sim_bin bin[SIM_CLASSES];
} D;
/* Where this thread's work goes: its replica (an engine's thread, --dp)
 * and the stage its forward is in (--pp). */
static _Thread_local int replica, stage;
static int group(void) { return replica * D.stages + stage; }
static int lane0(void) { return group() * D.gpus; }

void sim_open(const gpu_profile *p, int gpus, int stages, int replicas) {
    D.p = *p; D.on = 1; D.gpus = gpus > 1 ? gpus : 1; D.stages = stages > 1 ? stages : 1; D.replicas = replicas > 1 ? replicas : 1;
    D.lanes = D.gpus * D.stages * D.replicas;
    D.named = 0; D.busy_ns = 0; D.binned = 0;
    memset(D.free_ns, 0, sizeof D.free_ns);
}
const gpu_profile *sim_profile(void) { return D.on ? &D.p : NULL; }
uint64_t sim_busy_ns(void) { return D.busy_ns; }
void sim_replica(int r) { replica = r; }
void sim_stage(int s) { stage = s; }
int sim_track(int g) { return SIM_STREAM_TRACK(lane0() + g); }

/* Names are kept by pointer (trace.h): a table made once. One GPU keeps
 * the plain names; more are each a lane group ("GPU 1/stream 0"). */
static char STREAM[MAX_LANES][24], CU_BUSY[MAX_LANES][24];
static const char *cu_busy(int g) { return D.lanes == 1 ? "cu_busy" : CU_BUSY[g]; }

/* GPU g's stream track (g on the whole timeline): modeled, layer 1's
 * child track, named on first use. */
static trace_where stream(int g, int64_t step) {
    if (!atomic_exchange(&D.named, 1))
        for (int i = 0; i < D.lanes && i < MAX_LANES; i++) {
            snprintf(STREAM[i], sizeof STREAM[i], D.lanes == 1 ? "stream 0" : "GPU %d/stream 0", i);
            snprintf(CU_BUSY[i], sizeof CU_BUSY[i], "GPU %d/cu_busy", i);
            trace_track_name(L_GPU, SIM_STREAM_TRACK(i), STREAM[i]);
        }
    trace_where w = trace_at(L_GPU, DIR_DOWN, NO_REQ, step);
    w.clock = TRACE_MODELED;
    w.track = SIM_STREAM_TRACK(g);
    return w;
}

static uint64_t ns(double s) { return (uint64_t)(s * 1e9 + 0.5); }
static uint64_t start(uint64_t now) { uint64_t f = D.free_ns[group()]; return now > f ? now : f; }
/* This thread's group is busy from t0 for dur: its new end. */
static uint64_t queue(uint64_t t0, uint64_t dur) { D.busy_ns += dur; return D.free_ns[group()] = t0 + dur; }

/* The bins as slices, one a class, back to back from the step's first
 * kernel: their sum is the kernels' (their order is not). */
static void summary_write(void) {
    uint64_t t = D.bin_t0;
    for (int c = 0; c < SIM_CLASSES && D.binned; c++) {
        const sim_bin *b = &D.bin[c];
        if (!b->launches) continue;
        for (int g = lane0(); g < lane0() + D.gpus; g++)
            trace_slice(stream(g, D.bin_step), SIM_CLASS_NAME[c], t, b->dur_ns,
                        TRACE_ARGS(TA_LIT("class", SIM_CLASS_NAME[c]), TA_INT("launches", b->launches),
                                   TA_DBL("flops", b->flops), TA_DBL("bytes", b->bytes)));
        t += b->dur_ns;
    }
    memset(D.bin, 0, sizeof D.bin);
    D.binned = 0;
}

void sim_summarize(int on) {
    summary_write();
    D.summarize = on;
}

static void summary_add(int64_t step, enum sim_class c, uint64_t t0, uint64_t dur, double flops, double bytes) {
    if (D.binned && step != D.bin_step) summary_write();
    if (!D.binned) { D.binned = 1; D.bin_step = step; D.bin_t0 = t0; }
    D.bin[c].launches++; D.bin[c].dur_ns += dur; D.bin[c].flops += flops; D.bin[c].bytes += bytes;
}

uint64_t sim_launch(const char *kernel, const char *op, int64_t step, const sim_kernel *k, double flops, double bytes,
                    uint64_t now) {
    uint64_t t0 = start(now), dur = ns(k->total_s);
    enum sim_class c = sim_class_of(kernel, k);
    if (D.summarize) { summary_add(step, c, t0, dur, flops, bytes); return D.free_ns[group()] = t0 + dur; }
    /* CU occupancy: every CU busy for all but the last wave */
    uint64_t wave = ns(k->wave_s), lat = ns(D.p.launch_latency_s);
    int full = k->waves > 1;
    uint64_t ts[3] = { t0 + lat, t0 + lat + (uint64_t)(k->waves - 1) * wave, t0 + dur };
    double cus[3] = { full ? D.p.compute_units : k->cus_last, k->cus_last, 0 };
    if (!full) { ts[1] = ts[2]; cus[1] = 0; }
    for (int g = lane0(); g < lane0() + D.gpus; g++) {
        trace_where w = stream(g, step);
        trace_slice(w, kernel, t0, dur,
                    TRACE_ARGS(TA_LIT("op", op), TA_INT("workgroups", k->workgroups), TA_INT("wavefronts", k->wavefronts),
                               TA_INT("waves", k->waves), TA_DBL("flops", flops), TA_DBL("bytes", bytes),
                               TA_DBL("wave_s", k->wave_s), TA_LIT("class", SIM_CLASS_NAME[c])));
        trace_counter_series(w, cu_busy(g), 2 + full, ts, cus);
    }
    return queue(t0, dur);
}

uint64_t sim_copy(enum copy_dir dir, double bytes, int64_t step) {
    static const char *NAME[] = { [COPY_H2D] = "copy H2D", [COPY_D2H] = "copy D2H", [COPY_D2D] = "copy D2D" };
    double s = dir == COPY_D2D ? 2 * bytes / D.p.bandwidth : bytes / D.p.host_link;   /* D2D reads and writes */
    uint64_t t0 = start(trace_now_ns()), dur = ns(s + D.p.launch_latency_s);
    for (int g = lane0(); g < lane0() + (dir == COPY_D2H ? 1 : D.gpus); g++) {   /* each GPU its own host link */
        trace_where w = stream(g, step);
        if (dir == COPY_D2H) w.dir = DIR_UP;    /* the logits going back up */
        trace_slice(w, NAME[dir], t0, dur, TRACE_ARGS(TA_DBL("bytes", bytes), TA_LIT("direction", copy_dir_name(dir))));
    }
    return queue(t0, dur);
}

uint64_t sim_ring(const char *call, double bytes, int phases, int64_t step) {
    gpu_all_reduce a = gpu_ring_time(&D.p, D.gpus, bytes, phases);
    uint64_t t0 = start(trace_now_ns()), dur = ns(a.total_s);
    for (int g = lane0(); g < lane0() + D.gpus; g++)
        trace_slice(stream(g, step), call, t0, dur,
                    TRACE_ARGS(TA_DBL("bytes", bytes), TA_INT("gpus", D.gpus), TA_LIT("algorithm", "ring"),
                               TA_DBL("ring_bytes_per_s", gpu_ring_bandwidth(&D.p, D.gpus)),
                               TA_DBL("bandwidth_s", a.bandwidth_s), TA_DBL("latency_s", a.latency_s),
                               TA_STR("link", D.p.link.name)));
    return queue(t0, dur);
}

/* Each GPU's slice shows what it sent and received; the collective lasts
 * as long as the busiest GPU's traffic takes. */
uint64_t sim_all_to_all(const char *call, const double *sent, const double *received, int64_t step) {
    double most = 0;
    for (int g = 0; g < D.gpus; g++) {
        if (sent[g] > most) most = sent[g];
        if (received[g] > most) most = received[g];
    }
    gpu_all_reduce a = gpu_all_to_all_time(&D.p, D.gpus, most);
    uint64_t t0 = start(trace_now_ns()), dur = ns(a.total_s);
    for (int g = 0; g < D.gpus; g++)
        trace_slice(stream(lane0() + g, step), call, t0, dur,
                    TRACE_ARGS(TA_DBL("bytes", most), TA_DBL("sent_bytes", sent[g]), TA_DBL("received_bytes", received[g]),
                               TA_INT("gpus", D.gpus), TA_DBL("ring_bytes_per_s", gpu_ring_bandwidth(&D.p, D.gpus)),
                               TA_DBL("bandwidth_s", a.bandwidth_s), TA_DBL("latency_s", a.latency_s),
                               TA_STR("link", D.p.link.name)));
    return queue(t0, dur);
}

/* GPU g of the group runs k[g] (its experts' rows; none when its grid is
 * empty), all from the same start; the group is free when the slowest is
 * done: the rest wait for it at the next collective. */
uint64_t sim_launch_each(const char *kernel, const char *op, int64_t step, const sim_kernel *k, const double *flops,
                         const double *bytes, uint64_t now) {
    uint64_t t0 = start(now), longest = 0;
    for (int g = 0; g < D.gpus; g++) {
        if (!k[g].workgroups) continue;
        uint64_t dur = ns(k[g].total_s);
        if (dur > longest) longest = dur;
        trace_slice(stream(lane0() + g, step), kernel, t0, dur,
                    TRACE_ARGS(TA_LIT("op", op), TA_INT("workgroups", k[g].workgroups), TA_INT("wavefronts", k[g].wavefronts),
                               TA_INT("waves", k[g].waves), TA_DBL("flops", flops[g]), TA_DBL("bytes", bytes[g]),
                               TA_DBL("wave_s", k[g].wave_s), TA_LIT("class", SIM_CLASS_NAME[sim_class_of(kernel, &k[g])])));
    }
    return queue(t0, longest);
}

/* GPU 0 receives (N-1) shares of `bytes` at the ring's rate (all its links
 * on a switch, one per peer on a mesh, its PCIe link through the host),
 * after one hop's latency. */
uint64_t sim_gather(const char *call, double bytes, int64_t step) {
    int n = D.gpus;
    double s = n > 1 ? (n - 1) * bytes / gpu_ring_bandwidth(&D.p, n) + D.p.link.latency_s : 0;
    uint64_t t0 = start(trace_now_ns()), dur = ns(s);
    for (int g = n - 1; g >= 0; g--) {   /* the group's first GPU's slice last: it takes every arrow */
        uint64_t f = g ? trace_flow_next() : 0;
        if (g) trace_flow_out(f);
        trace_slice(stream(lane0() + g, step), call, t0, dur,
                    TRACE_ARGS(TA_DBL("bytes", bytes), TA_INT("gpus", n), TA_INT("root", lane0()), TA_STR("link", D.p.link.name)));
        if (g) trace_flow_in_track(L_GPU, sim_track(0), f);
    }
    return queue(t0, dur);
}

/* The activations' hand-off from stage `from` to stage `to` of this
 * thread's replica, GPU k of one to GPU k of the other (link.h): it starts
 * when the sender has finished what it queued before and the receiver has
 * too (the receive is queued behind its earlier work, as NCCL's is), and
 * holds both. A send slice on the sender's GPUs, a recv on the receiver's,
 * an arrow between each pair. */
uint64_t sim_send(double bytes, int from, int to, int64_t step) {
    int base = replica * D.stages, gf = base + from, gt = base + to;
    double bw = bytes / gpu_pair_bandwidth(&D.p), alpha = D.p.link.latency_s;
    uint64_t t0 = D.free_ns[gf] > D.free_ns[gt] ? D.free_ns[gf] : D.free_ns[gt], dur = ns(gpu_send_time(&D.p, bytes));
    uint64_t now = trace_now_ns();
    if (now > t0) t0 = now;
    for (int g = 0; g < D.gpus; g++) {
        int lane[2] = { gf * D.gpus + g, gt * D.gpus + g };
        uint64_t f = trace_flow_next();
        trace_flow_out(f);   /* from the send ... */
        for (int k = 0; k < 2; k++) {
            if (k) trace_flow_in_track(L_GPU, SIM_STREAM_TRACK(lane[1]), f);   /* ... to its recv */
            trace_slice(stream(lane[k], step), k ? "recv" : "send", t0, dur,
                        TRACE_ARGS(TA_DBL("bytes", bytes), TA_INT("from_gpu", lane[0]), TA_INT("to_gpu", lane[1]),
                                   TA_INT("from_stage", from), TA_INT("to_stage", to),
                                   TA_DBL("pair_bytes_per_s", gpu_pair_bandwidth(&D.p)), TA_DBL("bandwidth_s", bw),
                                   TA_DBL("latency_s", alpha), TA_STR("link", D.p.link.name)));
        }
    }
    D.busy_ns += 2 * dur;
    D.free_ns[gf] = D.free_ns[gt] = t0 + dur;
    return t0 + dur;
}

uint64_t sim_event_record(void) { return D.free_ns[group()]; }

void sim_event_wait(uint64_t t) {
    summary_write();   /* the step's kernels so far: the host has seen them end */
    trace_clock_wait(t);
}

void sim_wait(void) {
    uint64_t end = 0;
    for (int s = 0; s < D.stages; s++) {
        uint64_t f = D.free_ns[replica * D.stages + s];
        if (f > end) end = f;
    }
    sim_event_wait(end);
}
