/*
 * trace_bench.c -- what tracing costs: ns per recorded event on the hot path,
 * the longest a recording thread was held up, and events per second written
 * to SQLite, Perfetto and both.
 *
 *   make bench && build/bench/trace_bench [events]   (writes into /tmp, removes its files)
 *
 * Hot path: batches that fit a buffer, each flushed before the next, the
 * fastest kept (on a shared machine the minimum is the cost, the rest is
 * other processes), of begin/end pairs (each event reads the clock) and of
 * slices with known times (the op path, inlined). Then a flood: one thread records n events as fast as it
 * can, far faster than any sink writes, so it catches up with the flusher
 * and waits for it; events/s is what the flusher sustains until the files
 * are closed, and the slowest batch is the longest stall. Last, the page
 * faults a recording thread takes at a model's pace (one event a
 * microsecond; tiny-hi records one every 0.7 us): 0 when the idle-priority
 * writer maps its ring pages ahead, up to one per 4 kB when the machine is
 * busy and the recorder maps them itself (those count as faults too). Not a
 * test: it depends on the machine being idle.
 */
#include <math.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "trace/trace.h"

#define BATCH 2000  /* events per timed batch */

static const trace_where w = { .layer = L_KERNELS, .dir = DIR_DOWN, .req = 1, .step = 3,
                               .clock = TRACE_MEASURED, .track = 0 };

/* n events: begin + end pairs, the begin with two args (strings are
 * literals, kept by pointer: a copied string, TA_STR, takes a slower path).
 * Each reads the clock, ~30 ns on a VM. */
static void record(long n) {
    for (long i = 0; i < n / 2; i++) {
        trace_begin(w, "matmul", 2, (trace_arg[]){ TA_INT("flops", i), TA_LIT("shape", "896x4864") });
        trace_end(w, 0, NULL);
    }
}

/* n slices whose times are known, like a kernel launch's: the op path. */
static void record_slices(long n) {
    for (long i = 0; i < n; i++)
        trace_slice(w, "gemv", 1000 * i, 900, 4, (trace_arg[]){ TA_LIT("op", "q_proj"), TA_INT("grid", i),
                    TA_INT("block", 256), TA_INT("wavefronts", 4 * i) });
}

/* CPU time of this process: on a busy machine, less inflated than wall time. */
static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void check(int rc, const char *err) {
    if (rc) { fprintf(stderr, "trace_bench: %s\n", err); exit(1); }
}

static void run(const char *label, const char *db, const char *pf, long n) {
    char err[256] = "";
    if (db) unlink(db);
    trace_run_info info = { .db_path = db, .perfetto_path = pf, .command = "trace_bench" };
    check(trace_open(&info, err, sizeof err), err);
    double best = 1e30, best_slice = 1e30, worst = 0;
    for (int k = 0; k < 100; k++) {  /* more than a buffer: its pages are warm */
        uint64_t a = trace_now_ns();
        record(BATCH);
        uint64_t b = trace_now_ns();
        record_slices(BATCH);
        best = fmin(best, (double)(b - a) / BATCH);
        best_slice = fmin(best_slice, (double)(trace_now_ns() - b) / BATCH);
        check(trace_flush(err, sizeof err), err);
    }
    trace_stats st0 = trace_get_stats();
    uint64_t t0 = trace_now_ns();
    double c0 = cpu_s();
    for (long done = 0; done < n; done += BATCH) {
        uint64_t a = trace_now_ns();
        record(BATCH);
        worst = fmax(worst, (double)(trace_now_ns() - a));
    }
    check(trace_close(err, sizeof err), err);  /* with the indexes built at close */
    double s = (trace_now_ns() - t0) * 1e-9, cpu = cpu_s() - c0;
    trace_stats st = trace_get_stats();
    double events = st.events - st0.events;
    printf("%-9s hot path %5.1f ns/event (begin/end), %4.1f (slice) | flood of %.0f events: written %7.0f events/s wall,"
           " %7.0f events/s cpu (write %5.0f ns/event), slowest batch %6.2f ms,"
           " %llu waits (max %.2f ms), dropped %llu\n",
           label, best, best_slice, events, events / s, events / cpu, (st.flush_ns - st0.flush_ns) / events,
           worst * 1e-6, (unsigned long long)st.waits, st.max_wait_ns * 1e-6,
           (unsigned long long)st.dropped);
    if (db) unlink(db);
    if (pf) unlink(pf);
}

/* Page faults on this thread while it records 2.56 MB at a model's pace. */
static void pace(void) {
    char err[256] = "";
    trace_run_info info = { .db_path = "/tmp/trace_bench_pace.db", .command = "trace_bench" };
    unlink(info.db_path);
    check(trace_open(&info, err, sizeof err), err);
    struct rusage r0, r1;
    getrusage(RUSAGE_THREAD, &r0);
    for (int i = 0; i < 20000; i++) {   /* 20000 x 128 bytes */
        trace_slice(w, "op", i, 1, 4, (trace_arg[]){ TA_INT("a", i), TA_INT("b", i), TA_DBL("c", i), TA_LIT("d", "x") });
        uint64_t t = trace_now_ns();
        while (trace_now_ns() - t < 1000) {}
    }
    getrusage(RUSAGE_THREAD, &r1);
    check(trace_close(err, sizeof err), err);
    unlink(info.db_path);
    printf("%-9s %ld page faults on the recording thread while it recorded 2.56 MB, one event a microsecond\n",
           "pace", r1.ru_minflt - r0.ru_minflt);
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 200000;
    uint64_t t0 = trace_now_ns();
    record(n);  /* never opened: tracing off */
    printf("%-9s %8ld calls   %.2f ns/call\n", "off", n, (double)(trace_now_ns() - t0) / n);
    run("sqlite", "/tmp/trace_bench.db", NULL, n);
    run("perfetto", NULL, "/tmp/trace_bench.pftrace", n);
    run("both", "/tmp/trace_bench.db", "/tmp/trace_bench.pftrace", n);
    pace();
    return 0;
}
