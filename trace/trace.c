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

static void seterr(char *err, int errlen, const char *fmt, ...)
{
    if (!err || errlen <= 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

int trace_flush(char *err, int errlen)
{
    if (!trace_enabled()) return 0;
    while (pthread_mutex_trylock(&T.sink_lock)) {   /* the flusher holds it, mid-write: hurry it */
        trace_urge_flusher();
        nanosleep(&(struct timespec){ .tv_nsec = 20000 }, NULL);
    }
    int rc = trace_flush_locked(err, errlen);
    pthread_mutex_unlock(&T.sink_lock);
    return rc;
}

int trace_open(const trace_run_info *info, char *err, int errlen)
{
    if (trace_enabled()) { seterr(err, errlen, "trace: already open"); return -1; }
    trace_clock_restart();
    if (!info || (!info->db_path && !info->perfetto_path)) return 0;

    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    uint64_t t0_unix = (uint64_t)wall.tv_sec * 1000000000u + (uint64_t)wall.tv_nsec;
    if (info->db_path && !(T.db = tsql_open(info->db_path, info, t0_unix, T.max_bytes, err, errlen)))
        return -1;
    if (info->perfetto_path && !(T.pf = tpf_open(info->perfetto_path, err, errlen))) {
        if (T.db) tsql_close(T.db, NULL, 0);
        T.db = NULL;
        return -1;
    }
    atomic_store(&T.next_flow, 1);
    atomic_store(&T.dropped, 0);
    atomic_store(&T.retired_events, 0);
    atomic_store(&T.flushes, 0);
    atomic_store(&T.flush_ns, 0);
    atomic_store(&T.waits, 0);
    atomic_store(&T.wait_ns, 0);
    atomic_store(&T.max_wait_ns, 0);
    T.warned = T.flush_failed = 0;
    T.lost_why[0] = 0;
    if (trace_start_flusher()) {
        seterr(err, errlen, "trace: cannot start the flusher thread");
        if (T.db) tsql_close(T.db, NULL, 0);
        if (T.pf) tpf_close(T.pf, NULL, 0);
        T.db = NULL;
        T.pf = NULL;
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

void trace_flush_every(double seconds, uint64_t backlog)
{
    atomic_store(&T.every_ns, seconds > 0 ? (uint64_t)(seconds * 1e9) : 0);
    atomic_store(&T.room, backlog > 0 && backlog < TRACE_RING_BYTES ? backlog : TRACE_RING_BYTES);
}

void trace_keep_under(uint64_t bytes)
{
    T.max_bytes = bytes;
}

int64_t trace_run_id(void)
{
    return trace_enabled() && T.db ? tsql_run_id(T.db) : -1;
}

/* Recording threads must have stopped before close. */
int trace_close(char *err, int errlen)
{
    if (!trace_enabled()) return 0;
    uint64_t start = clock_of(CLOCK_MONOTONIC), flushed_before = atomic_load(&T.flush_ns);
    trace_stop_flusher();
    pthread_mutex_lock(&T.sink_lock);
    int rc = trace_flush_locked(err, errlen);
    atomic_store(&trace_live.on, 0);
    if (T.db && tsql_close(T.db, rc ? NULL : err, errlen)) rc = -1;
    if (T.pf && tpf_close(T.pf, rc ? NULL : err, errlen)) rc = -1;
    T.db = NULL;
    T.pf = NULL;
    pthread_mutex_lock(&T.enroll_lock);
    int nthreads = atomic_load(&T.nthreads);
    for (int i = 0; i < nthreads; i++) {
        atomic_fetch_add(&T.retired_events, atomic_load(&T.threads[i]->w.events));
        munmap(T.threads[i]->w.ring, TRACE_RING_BYTES);
        free(T.threads[i]);
    }
    atomic_store(&T.nthreads, 0);
    atomic_fetch_add(&trace_live.gen, 1);
    pthread_mutex_unlock(&T.enroll_lock);
    pthread_mutex_unlock(&T.sink_lock);
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
               (unsigned long long)st.events, T.lost_why[0] ? ": " : "", T.lost_why);
        rc = -1;
    }
    return rc;
}

trace_stats trace_get_stats(void)
{
    pthread_mutex_lock(&T.enroll_lock);
    trace_stats s = { .events = atomic_load(&T.retired_events), .dropped = atomic_load(&T.dropped),
                      .flush_ns = atomic_load(&T.flush_ns), .flushes = atomic_load(&T.flushes),
                      .waits = atomic_load(&T.waits), .wait_ns = atomic_load(&T.wait_ns),
                      .max_wait_ns = atomic_load(&T.max_wait_ns) };
    int nthreads = atomic_load(&T.nthreads);
    for (int i = 0; i < nthreads; i++) s.events += atomic_load(&T.threads[i]->w.events);
    pthread_mutex_unlock(&T.enroll_lock);
    return s;
}
