/*
 * trace_bench.c -- what tracing costs: ns per recorded event on the hot path
 * and events per second recorded and flushed to SQLite, Perfetto and both.
 *
 *   cc -std=c11 -O2 -march=native -D_GNU_SOURCE -I. -Ibuild/gen bench/trace_bench.c \
 *      build/libhipath.a -lsqlite3 -lprotobuf-c -lpthread -lm -o build/trace_bench
 *   build/trace_bench [events]       (writes into /tmp, removes its files)
 *
 * The hot path is timed over batches small enough never to fill a ring, and
 * the fastest batch is kept: on a shared machine the minimum is the cost,
 * the rest is other processes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "trace/trace.h"

#define BATCH 2000  /* events per timed batch; fits a ring */

static const trace_where w = { .layer = L_KERNELS, .dir = DIR_DOWN, .req = 1, .step = 3,
                               .clock = CLOCK_MEASURED, .track = 0 };

/* n events: begin + end pairs, the begin with two args, like a kernel launch. */
static void record(long n)
{
    for (long i = 0; i < n / 2; i++) {
        trace_begin(w, "matmul", 2, (trace_arg[]){ TA_INT("flops", i), TA_STR("shape", "896x4864") });
        trace_end(w, 0, NULL);
    }
}

/* CPU time of this process: on a busy machine, less inflated than wall time. */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void check(int rc, const char *err)
{
    if (rc) { fprintf(stderr, "trace_bench: %s\n", err); exit(1); }
}

static void run(const char *label, const char *db, const char *pf, long n)
{
    char err[256] = "";
    if (db) unlink(db);
    trace_run_info info = { .db_path = db, .perfetto_path = pf, .command = "trace_bench" };
    check(trace_open(&info, err, sizeof err), err);
    double best = 1e30;
    uint64_t t0 = trace_now_ns();
    double c0 = cpu_s();
    for (long done = 0; done < n; done += BATCH) {
        uint64_t a = trace_now_ns();
        record(BATCH);
        uint64_t b = trace_now_ns();
        if ((double)(b - a) / BATCH < best) best = (double)(b - a) / BATCH;
        check(trace_flush(err, sizeof err), err);
    }
    double s = (trace_now_ns() - t0) * 1e-9, cpu = cpu_s() - c0;
    trace_stats st = trace_get_stats();
    printf("%-9s %7llu events  hot path %5.1f ns/event  recorded+flushed %7.0f events/s wall,"
           " %7.0f events/s cpu  (flush %5.0f ns/event wall)  dropped %llu\n", label,
           (unsigned long long)st.events, best, st.events / s, st.events / cpu,
           (double)st.flush_ns / st.events, (unsigned long long)st.dropped);
    check(trace_close(err, sizeof err), err);
    if (db) unlink(db);
    if (pf) unlink(pf);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 200000;
    uint64_t t0 = trace_now_ns();
    record(n);  /* never opened: tracing off */
    printf("%-9s %8ld calls   %.2f ns/call\n", "off", n, (double)(trace_now_ns() - t0) / n);
    run("sqlite", "/tmp/trace_bench.db", NULL, n);
    run("perfetto", NULL, "/tmp/trace_bench.pftrace", n);
    run("both", "/tmp/trace_bench.db", "/tmp/trace_bench.pftrace", n);
    return 0;
}
