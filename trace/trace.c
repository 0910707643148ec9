/*
 * trace.c -- open, flush, close, stats: a run of the trace from start to
 * end. How the rest works: trace_internal.h.
 */
#include "trace/trace_internal.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static void seterr(char *err, int errlen, const char *fmt, ...) {
    if (!err || errlen <= 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

int trace_flush(char *err, int errlen) {
    if (!trace_enabled()) return 0;
    while (pthread_mutex_trylock(&tracer.sink_lock)) {   /* the flusher holds it, mid-write: hurry it */
        trace_urge_flusher();
        nanosleep(&(struct timespec){ .tv_nsec = 20000 }, NULL);
    }
    int rc = trace_flush_locked(err, errlen);
    pthread_mutex_unlock(&tracer.sink_lock);
    return rc;
}

int trace_open(const trace_run_info *info, char *err, int errlen) {
    if (trace_enabled()) { seterr(err, errlen, "trace: already open"); return -1; }
    trace_clock_restart();
    if (!info || (!info->db_path && !info->perfetto_path)) return 0;

    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    uint64_t t0_unix = (uint64_t)wall.tv_sec * 1000000000u + (uint64_t)wall.tv_nsec;
    if (info->db_path && !(tracer.db = tsql_open(info->db_path, info, t0_unix, tracer.max_bytes, err, errlen)))
        return -1;
    if (info->perfetto_path && !(tracer.pf = tpf_open(info->perfetto_path, err, errlen))) {
        if (tracer.db) tsql_close(tracer.db, NULL, 0);
        tracer.db = NULL;
        return -1;
    }
    atomic_store(&tracer.next_flow, 1);
    atomic_store(&tracer.dropped, 0);
    atomic_store(&tracer.retired_events, 0);
    atomic_store(&tracer.flushes, 0);
    atomic_store(&tracer.flush_ns, 0);
    atomic_store(&tracer.waits, 0);
    atomic_store(&tracer.wait_ns, 0);
    atomic_store(&tracer.max_wait_ns, 0);
    tracer.warned = tracer.flush_failed = 0;
    tracer.lost_why[0] = 0;
    if (trace_start_flusher()) {
        seterr(err, errlen, "trace: cannot start the flusher thread");
        if (tracer.db) tsql_close(tracer.db, NULL, 0);
        if (tracer.pf) tpf_close(tracer.pf, NULL, 0);
        tracer.db = NULL;
        tracer.pf = NULL;
        return -1;
    }
    atomic_fetch_add(&trace_live.gen, 1);
    atomic_store(&trace_live.on, 1);
    trace_thread *t = trace_self();
    if (t) {
        /* the opener records most (in a CLI run it runs the model): it maps
         * its pages now, rather than in the middle of what it records, and
         * itself (0.1-0.2 ms): waiting for the idle-priority flusher to be
         * scheduled took about 2 ms, and any wait before a run slows it
         * here (a 2 ms sleep cost tiny-hi's next generation 1%, a 3 ms busy
         * wait 2.3%; docs/trace-schema.md) */
        trace_populate(t, OPENER_PAGES);
    }
    return 0;
}

void trace_flush_every(double seconds, uint64_t backlog) {
    atomic_store(&tracer.every_ns, seconds > 0 ? (uint64_t)(seconds * 1e9) : 0);
    atomic_store(&tracer.room, backlog > 0 && backlog < TRACE_RING_BYTES ? backlog : TRACE_RING_BYTES);
}

void trace_keep_under(uint64_t bytes) {
    tracer.max_bytes = bytes;
}

int64_t trace_run_id(void) {
    return trace_enabled() && tracer.db ? tsql_run_id(tracer.db) : -1;
}

/* Recording threads must have stopped before close. */
int trace_close(char *err, int errlen) {
    if (!trace_enabled()) return 0;
    uint64_t start = clock_of(CLOCK_MONOTONIC), flushed_before = atomic_load(&tracer.flush_ns);
    trace_stop_flusher();
    pthread_mutex_lock(&tracer.sink_lock);
    int rc = trace_flush_locked(err, errlen);
    atomic_store(&trace_live.on, 0);
    if (tracer.db && tsql_close(tracer.db, rc ? NULL : err, errlen)) rc = -1;
    if (tracer.pf && tpf_close(tracer.pf, rc ? NULL : err, errlen)) rc = -1;
    tracer.db = NULL;
    tracer.pf = NULL;
    pthread_mutex_lock(&tracer.enroll_lock);
    int nthreads = atomic_load(&tracer.nthreads);
    for (int i = 0; i < nthreads; i++) {
        atomic_fetch_add(&tracer.retired_events, atomic_load(&tracer.threads[i]->w.events));
        munmap(tracer.threads[i]->w.ring, TRACE_RING_BYTES);
        free(tracer.threads[i]);
    }
    atomic_store(&tracer.nthreads, 0);
    atomic_fetch_add(&trace_live.gen, 1);
    pthread_mutex_unlock(&tracer.enroll_lock);
    pthread_mutex_unlock(&tracer.sink_lock);
    /* a thread held up by the writer distorts the trace, a lost event makes
     * it incomplete: say so, and fail if anything was lost */
    trace_stats st = trace_get_stats();
    /* for bench/trace_overhead.sh: what writing cost during the run and after it */
    if (getenv("HIPATH_TRACE_STATS"))
        fprintf(stderr, "trace stats: %llu events, %llu flushes, writing %.1f ms of CPU during the run,"
                " close %.1f ms\n", (unsigned long long)st.events, (unsigned long long)st.flushes,
                flushed_before * 1e-6, (clock_of(CLOCK_MONOTONIC) - start) * 1e-6);
    if (st.waits)
        fprintf(stderr, "trace: recording threads waited for the writer %llu times, %.1f ms in all,"
                " longest %.1f ms\n", (unsigned long long)st.waits, st.wait_ns * 1e-6, st.max_wait_ns * 1e-6);
    if (st.dropped) {
        seterr(err, errlen, "trace: %llu of %llu events were not written%s%s", (unsigned long long)st.dropped,
               (unsigned long long)st.events, tracer.lost_why[0] ? ": " : "", tracer.lost_why);
        rc = -1;
    }
    return rc;
}

trace_stats trace_get_stats(void) {
    pthread_mutex_lock(&tracer.enroll_lock);
    trace_stats s = { .events = atomic_load(&tracer.retired_events), .dropped = atomic_load(&tracer.dropped),
                      .flush_ns = atomic_load(&tracer.flush_ns), .flushes = atomic_load(&tracer.flushes),
                      .waits = atomic_load(&tracer.waits), .wait_ns = atomic_load(&tracer.wait_ns),
                      .max_wait_ns = atomic_load(&tracer.max_wait_ns) };
    int nthreads = atomic_load(&tracer.nthreads);
    for (int i = 0; i < nthreads; i++) s.events += atomic_load(&tracer.threads[i]->w.events);
    pthread_mutex_unlock(&tracer.enroll_lock);
    return s;
}
