/*
 * trace_fast.h -- the recording calls of trace.h, inlined into each call
 * site (C only). trace_internal.h explains the rings, trace_ring.h lays
 * out their records; this is the part of them that a record touches.
 *
 * Why inline: an op of a small model takes a few microseconds and records
 * four events. As calls, each event cost ~35 ns, much of it moving args
 * whose keys and types the call site already knows, and checks whose
 * answer it knows too (no string to copy). Inlined, the compiler stores
 * the constants straight into the ring and drops those checks: what is
 * left is the room check and the stores. Everything else (a thread's first
 * record, strings to copy, no room below the limit) goes to
 * trace_emit_slow() in record.c, which handles every case.
 */
#ifndef HIPATH_TRACE_FAST_H
#define HIPATH_TRACE_FAST_H

#include "trace/trace_ring.h"
#include <stdatomic.h>
#include <stddef.h>

#define TRACE_INLINE static inline __attribute__((always_inline))

#define TRACE_PREFETCH 2048  /* ring bytes fetched for writing ahead of the head:
                              * nothing drains the ring during a run, so it is cold */

_Static_assert(2 * TRACE_MAX_ARGS <= 32, "trace_record.types holds 2 bits per arg");

/* The out-of-line paths: any event, any case. */
void trace_emit_slow(int kind, const trace_where *w, const char *name, uint64_t ts,
                     uint64_t dur, double value, int nargs, const trace_arg *args);
void trace_series_slow(const trace_where *w, const char *name, int n, const uint64_t *ts, const double *values);

TRACE_INLINE int trace_enabled(void) {
    return atomic_load_explicit(&trace_live.on, memory_order_relaxed);
}

TRACE_INLINE int trace_muted(int layer) {
    return (unsigned)layer < 32 && atomic_load_explicit(&trace_live.muted, memory_order_relaxed) >> layer & 1;
}

/* The header of an n-byte record at `at`; trace_publish() makes it visible
 * to the drainer once the rest is written. */
TRACE_INLINE trace_record *
trace_header(uint8_t *at, uint32_t n, int kind, const trace_where *w, const char *name, uint64_t ts) {
    trace_record *r = (trace_record *)at;
    r->size = n; r->kind = kind; r->nargs = 0; r->merged = 0;
    r->layer = w->layer; r->dir = w->dir; r->clock = w->clock; r->track = w->track;
    r->types = 0; r->req = w->req; r->step = w->step; r->ts = ts; r->dur = 0;
    r->name = name ? name : "";
    return r;
}

/* The lines TRACE_PREFETCH bytes past the head are fetched for writing, as
 * many as the largest common record spans: a few prefetches of lines
 * already fetched cost less than a loop that would skip them. */
TRACE_INLINE void
trace_publish(trace_writer *t, uint64_t head, uint32_t n, uint64_t events) {
    uint8_t *ahead = t->ring + ((head + TRACE_PREFETCH) & (TRACE_RING_BYTES - 1) & ~63ull);
    __builtin_prefetch(ahead, 1, 3);
    __builtin_prefetch(ahead + 64, 1, 3);
    __builtin_prefetch(ahead + 128, 1, 3);
    __builtin_prefetch(ahead + 192, 1, 3);
    atomic_store_explicit(&t->head, head + n, memory_order_release);
    atomic_store_explicit(&t->events, atomic_load_explicit(&t->events, memory_order_relaxed) + events,
                          memory_order_relaxed);
}

/* The writer of this thread when it can take an n-byte record with one
 * store of the head (*head); else NULL. */
TRACE_INLINE trace_writer *trace_fast_writer(const trace_where *w, uint32_t n, uint64_t *head) {
    trace_writer *t = trace_mine.w;
    if (!t || trace_mine.gen != atomic_load_explicit(&trace_live.gen, memory_order_relaxed) ||
        (unsigned)(w->layer - L_GPU) > L_CLIENT - L_GPU) return NULL;
    *head = atomic_load_explicit(&t->head, memory_order_relaxed);
    return *head + n <= t->limit ? t : NULL;
}

/* The args' types packed as in trace_record.types; *strs: some are ARG_STR. */
TRACE_INLINE uint32_t trace_arg_types(int nargs, const trace_arg *args, int *strs) {
    uint32_t types = 0;
    *strs = 0;
#pragma GCC unroll 12
    for (int i = 0; i < nargs && i < TRACE_MAX_ARGS; i++) {
        types |= (uint32_t)args[i].type << 2 * i;
        *strs |= args[i].type == ARG_STR;
    }
    return types;
}

/* The args as the ring holds them. */
TRACE_INLINE void trace_put_args(trace_ring_arg *a, int nargs, const trace_arg *args) {
#pragma GCC unroll 12
    for (int i = 0; i < nargs && i < TRACE_MAX_ARGS; i++) {
        a[i].key = args[i].key;
        a[i].i = args[i].i;   /* whichever member it is: the union's bits */
    }
}

/* Any event but a series. With args built at the call site, the unrolled
 * loops above let the compiler know each arg's key and type: an arg
 * becomes two stores and the checks on the types go away. */
TRACE_INLINE void
trace_emit(int kind, const trace_where *w, const char *name, uint64_t ts, uint64_t dur,
           double value, int nargs, const trace_arg *args) {
    int strs;
    uint32_t types = trace_arg_types(nargs, args, &strs);
    uint32_t n = sizeof(trace_record) + (uint32_t)nargs * sizeof(trace_ring_arg);
    uint64_t head;
    trace_writer *t;
    if (trace_muted(w->layer)) return;
    if (nargs < 0 || nargs > TRACE_MAX_ARGS || (nargs && !args) || strs ||
        !(t = trace_fast_writer(w, n, &head))) {
        /* copies, so that the caller's where and args never have their
         * address taken: then they need not be in memory at all */
        trace_where wc = *w;
        trace_arg ac[TRACE_MAX_ARGS];
        int m = nargs < 0 || !args ? 0 : nargs < TRACE_MAX_ARGS ? nargs : TRACE_MAX_ARGS;
#pragma GCC unroll 12
        for (int i = 0; i < m; i++) ac[i] = args[i];
        trace_emit_slow(kind, &wc, name, ts, dur, value, m, ac);
        return;
    }
    trace_record *r = trace_header(t->ring + head % TRACE_RING_BYTES, n, kind, w, name, ts);
    r->nargs = nargs;
    r->types = types;
    if (kind == EV_COUNTER) r->value = value; else r->dur = dur;
    trace_put_args((trace_ring_arg *)(r + 1), nargs, args);
    trace_publish(t, head, n, 1);
}

TRACE_INLINE void trace_begin(trace_where w, const char *name, int nargs, const trace_arg *args) {
    if (trace_enabled()) trace_emit(EV_BEGIN, &w, name, trace_now_ns(), trace_clock_modeled(), 0, nargs, args);
}

/* Begin a slice with an arrow from it to the next slice begun on this
 * thread: the layer below, at work inside it. */
TRACE_INLINE void trace_begin_flowing(trace_where w, const char *name, int nargs, const trace_arg *args) {
    uint64_t f = trace_flow_next();
    trace_flow_out(f);
    trace_begin(w, name, nargs, args);
    trace_flow_in(f);
}

TRACE_INLINE void trace_end(trace_where w, int nargs, const trace_arg *args) {
    if (trace_enabled()) trace_emit(EV_END, &w, "", trace_now_ns(), trace_clock_modeled(), 0, nargs, args);
}

TRACE_INLINE void trace_slice(trace_where w, const char *name, uint64_t ts_ns, uint64_t dur_ns,
                               int nargs, const trace_arg *args) {
    if (trace_enabled()) trace_emit(EV_SLICE, &w, name, ts_ns, dur_ns, 0, nargs, args);
}

TRACE_INLINE void trace_instant(trace_where w, const char *name, int nargs, const trace_arg *args) {
    if (trace_enabled()) trace_emit(EV_INSTANT, &w, name, trace_now_ns(), 0, 0, nargs, args);
}

TRACE_INLINE void trace_instant_at(trace_where w, const char *name, uint64_t ts_ns, int nargs, const trace_arg *args) {
    if (trace_enabled()) trace_emit(EV_INSTANT, &w, name, ts_ns, 0, 0, nargs, args);
}

TRACE_INLINE void trace_counter(trace_where w, const char *name, double value, uint64_t ts_ns) {
    if (trace_enabled()) trace_emit(EV_COUNTER, &w, name, ts_ns ? ts_ns : trace_now_ns(), 0, value, 0, NULL);
}

/* One record for n samples: the drainer hands them to the sinks one by one. */
TRACE_INLINE void trace_counter_series(trace_where w, const char *name, int n, const uint64_t *ts_ns,
                                       const double *values) {
    if (!trace_enabled() || n <= 0 || trace_muted(w.layer)) return;
    uint32_t size = sizeof(trace_record) + (uint32_t)n * sizeof(trace_sample);
    uint64_t head;
    trace_writer *t = n <= TRACE_MAX_SAMPLES ? trace_fast_writer(&w, size, &head) : NULL;
    if (!t) { trace_series_slow(&w, name, n, ts_ns, values); return; }
    trace_record *r = trace_header(t->ring + head % TRACE_RING_BYTES, size, EV_SERIES, &w, name, ts_ns[0]);
    r->nargs = n;
    trace_sample *s = (trace_sample *)(r + 1);
    for (int i = 0; i < n; i++) s[i] = (trace_sample){ ts_ns[i], values[i] };
    trace_publish(t, head, size, n);
}

#endif
