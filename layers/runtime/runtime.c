/*
 * runtime.c -- layer 2: the open device, accounted allocations, traced
 * copies and syncs, the code object's load, kernel statistics; and the
 * host driver (--device cpu). What memory and copies are is the driver's
 * business (runtime.h); what they cost is accounted and traced here.
 */
#include "layers/runtime/runtime.h"
#include "trace/trace.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---- the host driver: the CPU's own memory ------------------------- */

/* Cache-line aligned, as device memory is (hipMalloc's is 256-byte): with
 * malloc's 16 bytes, where activations fell relative to cache lines changed
 * a tiny model's decode by 1-2% from one heap layout to the next (opening a
 * trace first was enough to move them). */
void *rt_host_alloc(size_t n) { return aligned_alloc(64, n ? (n + 63) & ~(size_t)63 : 64); }
static void host_copy(void *dst, const void *src, size_t n, enum copy_dir dir, int async, int64_t step) {
    (void)dir; (void)async; (void)step;
    if (dst != src) memcpy(dst, src, n);   /* weights "uploaded" to where they already are: nothing moves */
}
static void host_sync(void) {}
static void host_load_code(const void *k) { (void)k; }
static int host_open(const char *arg, rt_device *d, char *err, int errlen) {
    (void)arg; (void)err; (void)errlen;
    snprintf(d->prof.name, sizeof d->prof.name, "host CPU");
    return 0;
}

const rt_driver rt_host = {
    .name = "host", .clock_domain = "host-monotonic",
    .call = { .alloc = "alloc", .free = "free", .copy = "memcpy", .copy_async = "memcpy", .sync = "sync" },
    .open = host_open, .alloc = rt_host_alloc, .free = free, .copy = host_copy, .sync = host_sync,
    .load_code = host_load_code,
};

/* ---- the open device ------------------------------------------------ */

typedef struct { void *p; size_t bytes; int purpose; } alloc_rec;
typedef struct { const char *host; size_t bytes; char *dev; int purpose; } map_rec;
typedef struct { const char *op; int64_t calls; double s, flops, bytes; } kstat;

static struct {
    rt_device dev;
    const rt_driver *drv;
    const rt_kernel_list *const *kernels;   /* for --jit */
    int n_kernels;
    double bytes[RT_NPURPOSE];
    alloc_rec *a; int na, capa;
    map_rec *m; int nm, capm;
    kstat *k; int nk, capk;
    _Atomic int loaded;
    int jit, gpus;
    int stages, replicas, ep;
    pthread_mutex_t mu;   /* the first launch and the kernel stats: --dp's engines launch at once */
} R = { .mu = PTHREAD_MUTEX_INITIALIZER, .dev = { .name = "cpu", .prof = { .name = "host CPU" }, .driver = &rt_host, .gpus = 1, .stages = 1, .replicas = 1, .ep = 1 },
        .drv = &rt_host };

static const char *PURPOSE[] = { "weights", "kv", "activations", "workspace" };
static const char *COUNTER[] = { "mem_weights_bytes", "mem_kv_bytes", "mem_activations_bytes", "mem_workspace_bytes" };

void rt_jit(int on) { R.jit = on; }
void rt_gpus(int n) { R.gpus = n; }
void rt_stages(int m) { R.stages = m; }
void rt_replicas(int n) { R.replicas = n; }
void rt_expert_parallel(int n) { R.ep = n; }

int rt_open(const rt_driver *drv, const char *name, const char *arg, const rt_kernel_list *const *k, int n,
            char *err, int errlen) {
    rt_device d = { .driver = drv, .gpus = R.gpus > 1 ? R.gpus : 1, .stages = R.stages > 1 ? R.stages : 1,
                    .replicas = R.replicas > 1 ? R.replicas : 1, .ep = R.ep > 1 ? R.ep : 1 };
    const char *flag = d.gpus > 1 ? "--tp" : d.stages > 1 ? "--pp" : "--dp";
    int many = d.gpus > 1 ? d.gpus : d.stages > 1 ? d.stages : d.replicas;
    if (many > 1 && !drv->all_reduce)
        return snprintf(err, errlen, "%s %d: device %s is not a modeled GPU; parallelism is modeled on sim:PROFILE and "
                        "analytic:PROFILE", flag, many, name), -1;
    if (d.ep > 1 && d.ep != d.gpus)
        return snprintf(err, errlen, "--ep %d: the experts are spread over the GPUs that split attention (attention TP, experts EP, "
                        "as SGLang's --tp N --ep-size N): give --tp %d too", d.ep, d.ep), -1;
    if (d.replicas > 1 && drv->has_data)
        return snprintf(err, errlen, "--dp %d: data parallelism is modeled on analytic:PROFILE only (on %s every replica's "
                        "data would be computed on this host by one kernel pool)", d.replicas, name), -1;
    if (d.gpus * d.stages * d.replicas > 64)
        return snprintf(err, errlen, "tp %d x pp %d x dp %d: %d GPUs; hipath models at most 64", d.gpus, d.stages, d.replicas,
                        d.gpus * d.stages * d.replicas), -1;
    if (drv->open(arg, &d, err, errlen)) return -1;
    snprintf(d.name, sizeof d.name, "%s", name);
    R.dev = d;
    R.drv = drv;
    trace_clock_virtual(drv->modeled);   /* sim, analytic: each thread on the virtual timeline */
    R.kernels = k;
    R.n_kernels = n;
    R.loaded = 0;
    if (R.jit && !drv->jit) fprintf(stderr, "hipath: --jit: device %s compiles no kernels; ignored\n", name);
    return 0;
}

const rt_device *rt_device_now(void) { return &R.dev; }
double rt_allocated(int purpose) { return R.bytes[purpose]; }

static void *grow(void *a, int n, int *cap, size_t size) {
    if (n < *cap) return a;
    *cap = *cap ? 2 * *cap : 64;
    return realloc(a, (size_t)*cap * size);
}

static void account(int purpose, double delta, const char *what, const char *name) {
    trace_where w = trace_at(L_RUNTIME, DIR_DOWN, NO_REQ, NO_STEP);
    R.bytes[purpose] += delta;
    trace_instant(w, name, TRACE_ARGS(TA_DBL("bytes", delta > 0 ? delta : -delta), TA_LIT("purpose", PURPOSE[purpose]),
                                      TA_STR("what", what)));
    trace_counter(w, COUNTER[purpose], R.bytes[purpose], 0);
}

void *rt_alloc(size_t bytes, int purpose, const char *what) {
    alloc_rec *a = grow(R.a, R.na, &R.capa, sizeof *R.a);
    if (!a) return NULL;
    R.a = a;
    void *p = R.drv->alloc(bytes);
    if (!p) return NULL;
    /* The KV pool in host memory is given its pages now, as a GPU's memory
     * has them: else the first prefill into it took the page faults (1 of
     * SmolLM2's 50 ms for 42 tokens; llama.cpp clears its cache at load). */
#ifdef MADV_POPULATE_WRITE
    uintptr_t lo = ((uintptr_t)p + 4095) & ~(uintptr_t)4095, hi = ((uintptr_t)p + bytes) & ~(uintptr_t)4095;
    if (purpose == RT_KV && R.drv->alloc == rt_host_alloc && hi > lo) madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
#endif
    R.a[R.na++] = (alloc_rec){ p, bytes, purpose };
    account(purpose, (double)bytes, what, R.drv->call.alloc);
    return p;
}

void rt_free(void *p) {
    if (!p) return;
    for (int i = 0; i < R.na; i++)
        if (R.a[i].p == p) {
            account(R.a[i].purpose, -(double)R.a[i].bytes, "", R.drv->call.free);
            R.a[i] = R.a[--R.na];
            break;
        }
    R.drv->free(p);
}

/* Weights: where device memory is separate (hip) a device copy; otherwise
 * the host bytes are the device's, accounted. Either way the upload is a
 * copy: real on hip, modeled on sim, nothing on the host. */
int rt_map(const void *host, size_t bytes, int purpose, const char *what) {
    map_rec *m = grow(R.m, R.nm, &R.capm, sizeof *R.m);
    if (!m) return -1;
    R.m = m;
    char *dev = (char *)host;
    if (R.drv->separate && !(dev = rt_alloc(bytes, purpose, what))) return -1;
    if (!R.drv->separate) account(purpose, (double)bytes, what, "map");
    rt_copy(dev, host, bytes, COPY_H2D, NO_STEP);
    R.m[R.nm++] = (map_rec){ host, bytes, dev, purpose };
    return 0;
}

void rt_unmap_all(void) {
    for (int i = 0; i < R.nm; i++)
        if (R.drv->separate) rt_free(R.m[i].dev);
        else R.bytes[R.m[i].purpose] -= (double)R.m[i].bytes;
    R.nm = 0;
}

const void *rt_dev(const void *host) {
    if (!R.drv->separate || !host) return host;
    const char *h = host;
    for (int i = R.nm - 1; i >= 0; i--)
        if (h >= R.m[i].host && h < R.m[i].host + R.m[i].bytes) return R.m[i].dev + (h - R.m[i].host);
    fprintf(stderr, "hipath: layer 2 runtime: host address %p is not mapped to the device\n", host);
    abort();
}

static void copy(void *dst, const void *src, size_t bytes, enum copy_dir dir, int64_t step, int async) {
    trace_where w = trace_at(L_RUNTIME, dir == COPY_D2H ? DIR_UP : DIR_DOWN, NO_REQ, step);   /* D2H: the answer going back up */
    trace_begin(w, async ? R.drv->call.copy_async : R.drv->call.copy,
                TRACE_ARGS(TA_DBL("bytes", (double)bytes), TA_LIT("direction", copy_dir_name(dir)), TA_INT("async", async)));
    R.drv->copy(dst, src, bytes, dir, async, step);
    trace_end(w, NO_ARGS);
}

void rt_copy(void *dst, const void *src, size_t bytes, enum copy_dir dir, int64_t step) { copy(dst, src, bytes, dir, step, 0); }
void rt_copy_async(void *dst, const void *src, size_t bytes, enum copy_dir dir, int64_t step) { copy(dst, src, bytes, dir, step, 1); }

void rt_sync(int64_t step) {
    trace_where w = trace_at(L_RUNTIME, DIR_DOWN, NO_REQ, step);
    trace_begin(w, R.drv->call.sync, NO_ARGS);
    R.drv->sync();
    trace_end(w, NO_ARGS);
}

/* The collective as layer 2 calls it: one slice named for the library
 * call, around the driver's queueing of it on the streams. */
static void collective(const char *call, void (*run)(double, int64_t), double bytes, int64_t step) {
    if (R.dev.gpus < 2) return;
    trace_where w = trace_at(L_RUNTIME, DIR_DOWN, NO_REQ, step);
    int amd = !strncmp(R.dev.prof.arch, "CDNA", 4) || !strncmp(R.dev.prof.arch, "RDNA", 4);
    trace_begin(w, call, TRACE_ARGS(TA_DBL("bytes", bytes), TA_INT("gpus", R.dev.gpus), TA_LIT("library", amd ? "RCCL" : "NCCL")));
    run(bytes, step);
    trace_end(w, NO_ARGS);
}
void rt_all_reduce(double bytes, int64_t step) { collective("ncclAllReduce", R.drv->all_reduce, bytes, step); }
void rt_gather(double bytes, int64_t step) { collective("gather", R.drv->gather, bytes, step); }
void rt_reduce_scatter(double bytes, int64_t step) { collective("ncclReduceScatter", R.drv->reduce_scatter, bytes, step); }
void rt_all_gather(double bytes, int64_t step) { collective("ncclAllGather", R.drv->all_gather, bytes, step); }

void rt_all_to_all(const double *sent, const double *received, int64_t step) {
    if (R.dev.gpus < 2) return;
    double total = 0;
    for (int g = 0; g < R.dev.gpus; g++) total += sent[g];
    trace_where w = trace_at(L_RUNTIME, DIR_DOWN, NO_REQ, step);
    trace_begin(w, "all_to_all", TRACE_ARGS(TA_DBL("bytes", total), TA_INT("gpus", R.dev.gpus)));
    R.drv->all_to_all(sent, received, step);
    trace_end(w, NO_ARGS);
}

void rt_replica(int r) {
    if (R.drv->replica) R.drv->replica(r);
}

void rt_stage(int s) {
    if (R.drv->stage) R.drv->stage(s);
}

void rt_send(double bytes, int from, int to, int64_t step) {
    if (R.dev.stages < 2) return;
    trace_where w = trace_at(L_RUNTIME, DIR_DOWN, NO_REQ, step);
    trace_begin(w, "ncclSend", TRACE_ARGS(TA_DBL("bytes", bytes), TA_INT("from_stage", from), TA_INT("to_stage", to),
                                           TA_INT("gpus", R.dev.gpus)));
    R.drv->send(bytes, from, to, step);
    trace_end(w, NO_ARGS);
}

rt_event rt_event_record(void) { return R.drv->event_record ? R.drv->event_record() : 0; }

void rt_event_synchronize(rt_event e, int64_t step) {
    trace_where w = trace_at(L_RUNTIME, DIR_DOWN, NO_REQ, step);
    trace_begin(w, "event_synchronize", NO_ARGS);
    if (R.drv->event_synchronize) R.drv->event_synchronize(e);
    else R.drv->sync();
    trace_end(w, NO_ARGS);
}

/* --jit: the compile (or the cache hit) as a slice of its own, before the
 * module load; a failure says why and keeps the built-in code objects. */
static int jit(void) {
    rt_jit_info j = { 0 };
    char err[640];
    uint64_t t0 = trace_now_ns();
    if (R.drv->jit(R.kernels, R.n_kernels, &j, err, sizeof err)) {
        fprintf(stderr, "hipath: layer 2 runtime: --jit: %s; using the built-in code objects\n", err);
        return 0;
    }
    uint64_t dur = trace_now_ns() - t0;
    trace_where w = trace_at(L_RUNTIME, DIR_DOWN, NO_REQ, NO_STEP);
    if (j.hit)
        trace_slice(w, "jit_cache_hit", t0, dur,
                    TRACE_ARGS(TA_STR("path", j.path), TA_STR("arch", R.dev.prof.arch), TA_STR("compiler", j.compiler),
                               TA_DBL("code_bytes", (double)j.code_bytes), TA_INT("kernels", j.kernels)));
    else
        trace_slice(w, "jit_compile", t0, dur,
                    TRACE_ARGS(TA_DBL("source_bytes", (double)j.source_bytes), TA_STR("arch", R.dev.prof.arch),
                               TA_DBL("seconds", j.seconds), TA_STR("compiler", j.compiler),
                               TA_DBL("code_bytes", (double)j.code_bytes), TA_INT("kernels", j.kernels),
                               TA_STR("path", j.path)));
    return 1;
}

/* Layer 2's part of the first launch: the code object is loaded, on the
 * device the trace names (its name: a GPU's, or what emulates one). */
static void code_object(const void *kernel) {
    trace_where w = trace_at(L_RUNTIME, DIR_DOWN, NO_REQ, NO_STEP);
    R.loaded = 1;
    int jitted = R.jit && R.drv->jit && jit();
    trace_begin(w, "code_object_load",
                TRACE_ARGS(TA_STR("device", R.dev.name), TA_STR("name", R.dev.prof.name), TA_STR("arch", R.dev.prof.arch),
                           TA_INT("jit", jitted)));
    R.drv->load_code(kernel);
    trace_end(w, NO_ARGS);
}

uint64_t rt_launch_begin(const void *code, uint64_t t0) {
    if (!R.loaded) {
        pthread_mutex_lock(&R.mu);
        if (!R.loaded) {
            code_object(code);
            t0 = 0;   /* the load took time since then */
        }
        pthread_mutex_unlock(&R.mu);
    }
    return t0 ? t0 : trace_now_ns();
}

void rt_kernel_measured(const char *kernel, const char *op, int64_t step, double flops, double bytes,
                        uint64_t ts_ns, uint64_t dur_ns) {
    trace_where w = trace_at(L_GPU, DIR_DOWN, NO_REQ, step);
    w.track = 1;   /* the stream */
    static int named;
    if (!named++) trace_track_name(L_GPU, 1, "stream 0");
    trace_slice(w, kernel, ts_ns, dur_ns, TRACE_ARGS(TA_LIT("op", op), TA_DBL("flops", flops), TA_DBL("bytes", bytes)));
    rt_kernel_done(op, dur_ns * 1e-9, flops, bytes);
}

void rt_kernel_done(const char *op, double seconds, double flops, double bytes) {
    pthread_mutex_lock(&R.mu);
    int i = 0;
    while (i < R.nk && strcmp(R.k[i].op, op)) i++;
    if (i == R.nk) {
        kstat *k = grow(R.k, R.nk, &R.capk, sizeof *R.k);
        if (k) {
            R.k = k;
            R.k[R.nk++] = (kstat){ .op = op };
        }
    }
    if (i < R.nk) { R.k[i].calls++; R.k[i].s += seconds; R.k[i].flops += flops; R.k[i].bytes += bytes; }
    pthread_mutex_unlock(&R.mu);
}

void rt_kernel_stats(FILE *f) {
    fprintf(f, "op\tcalls\tseconds\tflops\tbytes\tGB_per_s\tGFLOP_per_s\n");
    for (int i = 0; i < R.nk; i++)
        fprintf(f, "%s\t%lld\t%.9f\t%.0f\t%.0f\t%.2f\t%.2f\n", R.k[i].op, (long long)R.k[i].calls, R.k[i].s,
                R.k[i].flops, R.k[i].bytes, R.k[i].bytes / R.k[i].s / 1e9, R.k[i].flops / R.k[i].s / 1e9);
}

void rt_close(void) {
    if (R.drv->close) R.drv->close();   /* hip: waits for the last kernels, so their times reach the stats */
    const char *path = getenv("HIPATH_KERNEL_STATS");
    FILE *f = path && *path ? fopen(path, "w") : NULL;
    if (f) { rt_kernel_stats(f); fclose(f); }
    else if (path && *path) fprintf(stderr, "hipath: %s: cannot write the kernel stats\n", path);
    rt_unmap_all();
    free(R.a); free(R.m); free(R.k);
    R.a = NULL; R.m = NULL; R.k = NULL;
    R.na = R.capa = R.nm = R.capm = R.nk = R.capk = 0;
}
