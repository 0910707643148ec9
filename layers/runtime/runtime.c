/*
 * runtime.c -- layer 2: device selection, accounted allocations, traced
 * copies. The memory itself comes from the driver (host or HIP); on sim,
 * layer 1 models how long each copy takes and the host waits for it.
 */
#include "layers/runtime/runtime.h"
#include "layers/gpu/sim.h"
#include "trace/trace.h"
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Cache-line aligned, as device memory is (hipMalloc's is 256-byte): with
 * malloc's 16 bytes, where activations fell relative to cache lines changed
 * a tiny model's decode by 1-2% from one heap layout to the next (opening a
 * trace first was enough to move them). */
static void *host_alloc(size_t n) { return aligned_alloc(64, n ? (n + 63) & ~(size_t)63 : 64); }
static void host_copy(void *dst, const void *src, size_t n, int dir, int async) { (void)dir; (void)async; memcpy(dst, src, n); }
static void host_sync(void) {}
static void host_code_object(const void *k) { (void)k; }
static const rt_driver HOST = { host_alloc, free, host_copy, host_sync, host_code_object, NULL };

/* Analytic: an allocation is an address of its own that nothing reads (a
 * 28 GB model must not take 28 GB); a copy to the host delivers zeros,
 * the placeholder logits. */
static void *none_alloc(size_t n) {
    static _Atomic uintptr_t next = (uintptr_t)1 << 40;
    return (void *)atomic_fetch_add(&next, (n + 4095) & ~(size_t)4095);
}
static void none_free(void *p) { (void)p; }
static void none_copy(void *dst, const void *src, size_t n, int dir, int async) {
    (void)src; (void)async;
    if (dir == RT_D2H) memset(dst, 0, n);
}
static const rt_driver NONE = { none_alloc, none_free, none_copy, host_sync, host_code_object, NULL };

typedef struct { void *p; size_t bytes; int purpose; } alloc_rec;
typedef struct { const char *host; size_t bytes; char *dev; } map_rec;
typedef struct { const char *op; int64_t calls; double s, flops, bytes; } kstat;

static struct {
    rt_device dev;
    const rt_driver *drv;
    const backend *be;
    double bytes[RT_NPURPOSE];
    alloc_rec *a; int na, capa;
    map_rec *m; int nm, capm;
    kstat *k; int nk, capk;
    int loaded, jit;
} R = { .dev = { .kind = RT_CPU, .name = "cpu" }, .drv = &HOST, .be = &backend_cpu };

static const char *PURPOSE[] = { "weights", "kv", "activations", "workspace" };
static const char *COUNTER[] = { "mem_weights_bytes", "mem_kv_bytes", "mem_activations_bytes", "mem_workspace_bytes" };
static const char *DIR[] = { "H2D", "D2H", "D2D" };
const char *rt_purpose_name(int purpose) { return PURPOSE[purpose]; }

static trace_where W(int64_t step) {
    return (trace_where){ .layer = L_RUNTIME, .dir = DIR_DOWN, .req = -1, .step = step, .clock = CLOCK_MEASURED };
}

static int open_sim(const char *profile, int analytic, char *err, int errlen) {
    if (gpu_profile_load(&R.dev.prof, profile, err, errlen)) return -1;
    R.dev.kind = RT_SIM;
    R.dev.analytic = analytic;
    snprintf(R.dev.name, sizeof R.dev.name, "%s:%s", analytic ? "analytic" : "sim", profile);
    sim_open(&R.dev.prof);
    R.drv = analytic ? &NONE : &HOST; R.be = &backend_sim;
    return 0;
}

static int open_hip(int n, char *err, int errlen) {
#ifdef HIPATH_HIP
    if (!(R.drv = rt_hip_open(n, &R.dev, err, errlen))) { R.drv = &HOST; return -1; }
    R.dev.kind = RT_HIP;
    snprintf(R.dev.name, sizeof R.dev.name, "hip:%d", n);
    R.be = &backend_hip;
    return 0;
#else
    snprintf(err, errlen, "device hip:%d: this build has no HIP (build with make HIP=amd or HIP=nvidia)", n);
    return -1;
#endif
}

void rt_jit(int on) { R.jit = on; }

static int select_device(const char *spec, char *err, int errlen) {
    long n;
    char *end;
    R.dev.analytic = 0;
    if (!strcmp(spec, "cpu")) { R.dev.kind = RT_CPU; snprintf(R.dev.name, sizeof R.dev.name, "cpu"); R.drv = &HOST; R.be = &backend_cpu; return 0; }
    if (!strncmp(spec, "sim:", 4)) return open_sim(spec + 4, 0, err, errlen);
    if (!strncmp(spec, "analytic:", 9)) return open_sim(spec + 9, 1, err, errlen);
    if (!strncmp(spec, "hip:", 4) && (n = strtol(spec + 4, &end, 10)) >= 0 && n < 1024 && end > spec + 4 && !*end)
        return open_hip((int)n, err, errlen);
    if (!strcmp(spec, "auto")) {
        int found = 0;
#ifdef HIPATH_HIP
        found = rt_hip_count() > 0 && !open_hip(0, err, errlen);
#endif
        if (!found && open_sim("w7900", 0, err, errlen)) return -1;
        fprintf(stderr, "hipath: device auto -> %s (%s)%s\n", R.dev.name, R.dev.prof.name, found ? "" : ", no HIP device");
        return 0;
    }
    snprintf(err, errlen, "--device '%s': expected auto, cpu, hip:N, sim:PROFILE or analytic:PROFILE", spec);
    return -1;
}

int rt_select(const char *spec, char *err, int errlen) {
    if (select_device(spec, err, errlen)) return -1;
    if (R.jit && R.dev.kind != RT_HIP)
        fprintf(stderr, "hipath: --jit: device %s compiles no kernels; ignored\n", R.dev.name);
    return 0;
}

const rt_device *rt_device_now(void) { return &R.dev; }
const backend *rt_backend(void) { return R.be; }
double rt_allocated(int purpose) { return R.bytes[purpose]; }

static void *grow(void *a, int n, int *cap, size_t size) {
    if (n < *cap) return a;
    *cap = *cap ? 2 * *cap : 64;
    return realloc(a, (size_t)*cap * size);
}

static void account(int purpose, double delta, const char *what, const char *name) {
    R.bytes[purpose] += delta;
    trace_arg a[] = { TA_DBL("bytes", delta > 0 ? delta : -delta), TA_LIT("purpose", PURPOSE[purpose]), TA_STR("what", what) };
    trace_instant(W(-1), name, 3, a);
    trace_counter(W(-1), COUNTER[purpose], R.bytes[purpose], 0);
}

void *rt_alloc(size_t bytes, int purpose, const char *what) {
    alloc_rec *a = grow(R.a, R.na, &R.capa, sizeof *R.a);
    if (!a) return NULL;
    R.a = a;
    void *p = R.drv->alloc(bytes);
    if (!p) return NULL;
    R.a[R.na++] = (alloc_rec){ p, bytes, purpose };
    account(purpose, (double)bytes, what, R.dev.kind == RT_HIP ? "hipMalloc" : "alloc");
    return p;
}

void rt_free(void *p) {
    if (!p) return;
    for (int i = 0; i < R.na; i++)
        if (R.a[i].p == p) {
            account(R.a[i].purpose, -(double)R.a[i].bytes, "", R.dev.kind == RT_HIP ? "hipFree" : "free");
            R.a[i] = R.a[--R.na];
            break;
        }
    R.drv->free(p);
}

/* Weights: a device copy on hip; on cpu and sim the host bytes are the
 * device's, accounted, and (sim) their upload over the host link modeled. */
int rt_map(const void *host, size_t bytes, int purpose, const char *what) {
    map_rec *m = grow(R.m, R.nm, &R.capm, sizeof *R.m);
    if (!m) return -1;
    R.m = m;
    char *dev = (char *)host;
    if (R.dev.kind == RT_HIP) {
        if (!(dev = rt_alloc(bytes, purpose, what))) return -1;
        rt_copy(dev, host, bytes, RT_H2D, -1);
    } else {
        R.bytes[purpose] += (double)bytes;
        trace_arg a[] = { TA_DBL("bytes", (double)bytes), TA_LIT("purpose", PURPOSE[purpose]), TA_STR("what", what) };
        trace_instant(W(-1), "map", 3, a);
        trace_counter(W(-1), COUNTER[purpose], R.bytes[purpose], 0);
        if (R.dev.kind == RT_SIM) { sim_copy("H2D", (double)bytes, -1); sim_wait(); }
    }
    R.m[R.nm++] = (map_rec){ host, bytes, dev };
    return 0;
}

void rt_unmap_all(void) {
    for (int i = 0; i < R.nm; i++)
        if (R.dev.kind == RT_HIP) rt_free(R.m[i].dev);
        else R.bytes[RT_WEIGHTS] -= (double)R.m[i].bytes;
    R.nm = 0;
}

const void *rt_dev(const void *host) {
    if (R.dev.kind != RT_HIP || !host) return host;
    const char *h = host;
    for (int i = R.nm - 1; i >= 0; i--)
        if (h >= R.m[i].host && h < R.m[i].host + R.m[i].bytes) return R.m[i].dev + (h - R.m[i].host);
    fprintf(stderr, "hipath: layer 2 runtime: host address %p is not mapped to the device\n", host);
    abort();
}

static void copy(void *dst, const void *src, size_t bytes, int dir, int64_t step, int async) {
    trace_arg a[] = { TA_DBL("bytes", (double)bytes), TA_LIT("direction", DIR[dir]), TA_INT("async", async) };
    trace_where w = W(step);
    if (dir == 1) w.dir = DIR_UP;                                 /* D2H: the answer going back up */
    trace_begin(w, R.dev.kind == RT_HIP ? (async ? "hipMemcpyAsync" : "hipMemcpy") : "memcpy", 3, a);
    if (R.dev.kind == RT_SIM && !async) sim_wait();             /* a sync copy waits for the stream */
    uint64_t t0 = trace_now_ns();
    R.drv->copy(dst, src, bytes, dir, async);
    if (R.dev.kind == RT_SIM) {                                   /* modeled time replaces the memcpy's */
        trace_clock_shift(-(int64_t)(trace_now_ns() - t0));
        sim_copy(DIR[dir], (double)bytes, step);
        if (!async) sim_wait();
    }
    trace_end(w, 0, NULL);
}

void rt_copy(void *dst, const void *src, size_t bytes, int dir, int64_t step) { copy(dst, src, bytes, dir, step, 0); }
void rt_copy_async(void *dst, const void *src, size_t bytes, int dir, int64_t step) { copy(dst, src, bytes, dir, step, 1); }

void rt_sync(int64_t step) {
    trace_begin(W(step), R.dev.kind == RT_HIP ? "hipStreamSynchronize" : "sync", 0, NULL);
    R.drv->sync();
    if (R.dev.kind == RT_SIM) sim_wait();
    trace_end(W(step), 0, NULL);
}

/* --jit: the compile (or the cache hit) as a slice of its own, before the
 * module load; a failure says why and keeps the built-in code objects. */
static int jit(void) {
    rt_jit_info j = { 0 };
    char err[640];
    uint64_t t0 = trace_now_ns();
    if (R.drv->jit(&j, err, sizeof err)) {
        fprintf(stderr, "hipath: layer 2 runtime: --jit: %s; using the built-in code objects\n", err);
        return 0;
    }
    uint64_t dur = trace_now_ns() - t0;
    if (j.hit) {
        trace_arg a[] = { TA_STR("path", j.path), TA_STR("arch", R.dev.prof.arch), TA_STR("compiler", j.compiler),
                          TA_DBL("code_bytes", (double)j.code_bytes), TA_INT("kernels", j.kernels) };
        trace_slice(W(-1), "jit_cache_hit", t0, dur, 5, a);
    } else {
        trace_arg a[] = { TA_DBL("source_bytes", (double)j.source_bytes), TA_STR("arch", R.dev.prof.arch),
                          TA_DBL("seconds", j.seconds), TA_STR("compiler", j.compiler),
                          TA_DBL("code_bytes", (double)j.code_bytes), TA_INT("kernels", j.kernels), TA_STR("path", j.path) };
        trace_slice(W(-1), "jit_compile", t0, dur, 7, a);
    }
    return 1;
}

/* Layer 2's part of the first launch: the code object is loaded. */
static void code_object(const void *kernel) {
    R.loaded = 1;
    int jitted = R.jit && R.drv->jit && jit();
    trace_arg a[] = { TA_STR("device", R.dev.name), TA_STR("arch", R.dev.prof.arch), TA_INT("jit", jitted) };
    trace_begin(W(-1), "code_object_load", 3, a);
    R.drv->code_object(kernel);
    trace_end(W(-1), 0, NULL);
}

static trace_where L3(const kcost *c) {
    return (trace_where){ .layer = L_KERNELS, .dir = DIR_DOWN, .req = -1, .step = c->step, .clock = CLOCK_MEASURED };
}

uint64_t rt_launch_begin(const void *code, uint64_t t0) {
    if (!R.loaded) {
        code_object(code);
        t0 = 0;   /* the load took time since then */
    }
    return t0 ? t0 : trace_now_ns();
}
uint64_t rt_launch_end(const kcost *c, const char *kernel, kdims d, int wavefronts, uint64_t t0) {
    uint64_t t = trace_now_ns();
    trace_arg a[] = { TA_LIT("op", c->name), TA_INT("grid", d.grid), TA_INT("block", d.block), TA_INT("wavefronts", wavefronts) };
    trace_slice(L3(c), kernel, t0, t - t0, 4, a);
    return t;
}

void rt_kernel_measured(const char *kernel, const kcost *c, uint64_t ts_ns, uint64_t dur_ns) {
    trace_where w = { .layer = L_GPU, .dir = DIR_DOWN, .req = -1, .step = c->step, .clock = CLOCK_MEASURED, .track = 1 };
    trace_arg a[] = { TA_LIT("op", c->name), TA_DBL("flops", c->flops), TA_DBL("bytes", c->bytes) };
    trace_slice(w, kernel, ts_ns, dur_ns, 3, a);
    rt_kernel_done(c->name, dur_ns * 1e-9, c->flops, c->bytes);
}

void rt_hip_fail(int layer, const char *call, const char *why, const char *file, int line) {
    fprintf(stderr, "hipath: layer %d %s: %s failed: %s (%s:%d)\n", layer, trace_layer_name(layer), call, why, file, line);
    exit(1);
}

void rt_kernel_done(const char *op, double seconds, double flops, double bytes) {
    int i = 0;
    while (i < R.nk && strcmp(R.k[i].op, op)) i++;
    if (i == R.nk) {
        kstat *k = grow(R.k, R.nk, &R.capk, sizeof *R.k);
        if (!k) return;
        R.k = k;
        R.k[R.nk++] = (kstat){ .op = op };
    }
    R.k[i].calls++; R.k[i].s += seconds; R.k[i].flops += flops; R.k[i].bytes += bytes;
}

void rt_kernel_stats(FILE *f) {
    fprintf(f, "op\tcalls\tseconds\tflops\tbytes\tGB_per_s\tGFLOP_per_s\n");
    for (int i = 0; i < R.nk; i++)
        fprintf(f, "%s\t%lld\t%.9f\t%.0f\t%.0f\t%.2f\t%.2f\n", R.k[i].op, (long long)R.k[i].calls, R.k[i].s,
                R.k[i].flops, R.k[i].bytes, R.k[i].bytes / R.k[i].s / 1e9, R.k[i].flops / R.k[i].s / 1e9);
}

void rt_close(void) {
    /* The host waits for the last kernels queued: on hip their GPU-event
     * times reach the trace and the stats only once it has. */
    if (R.dev.kind == RT_HIP) rt_sync(-1);
    const char *path = getenv("HIPATH_KERNEL_STATS");
    FILE *f = path && *path ? fopen(path, "w") : NULL;
    if (f) { rt_kernel_stats(f); fclose(f); }
    else if (path && *path) fprintf(stderr, "hipath: %s: cannot write the kernel stats\n", path);
    rt_unmap_all();
    free(R.a); free(R.m); free(R.k);
    R.a = NULL; R.m = NULL; R.k = NULL;
    R.na = R.capa = R.nm = R.capm = R.nk = R.capk = 0;
}
