/*
 * trace_ring.h -- the layout of a thread's ring: its records, as the
 * inlined recording calls (trace_fast.h) write them and the drainer
 * (drain.c) reads them. Each thread owns one ring of TRACE_RING_BYTES;
 * trace_internal.h says who writes what.
 */
#ifndef HIPATH_TRACE_RING_H
#define HIPATH_TRACE_RING_H

#include <stdatomic.h>
#include <stdint.h>

#define TRACE_RING_BYTES (64u << 20)  /* per thread: the backlog of a busy stretch */

/* EV_TRACK names the child track (w.layer, w.track) `name`; EV_THREAD names
 * the recording thread (its own tracks, trace_thread_name). EV_SERIES,
 * EV_FLOW and EV_PAD stay in the rings: the sinks get a series as
 * EV_COUNTER events, and a flow on the slice that takes it. */
enum trace_kind { EV_BEGIN, EV_END, EV_SLICE, EV_INSTANT, EV_COUNTER, EV_TRACK, EV_THREAD, EV_SERIES, EV_FLOW, EV_PAD };

/* One record in a ring; after it: the args (as trace_ring_arg), then the
 * copied string args (ARG_STR), each NUL-terminated. The name and ARG_LIT
 * strings are kept by pointer: they outlive the trace. */
typedef struct {
    uint32_t size;         /* bytes, this header included, multiple of 8 */
    uint8_t kind, nargs;
    uint8_t merged;        /* EV_END: the drainer stored its slice whole at the begin */
    int8_t layer, dir, clock;
    int32_t track;
    uint32_t types;        /* arg i's type in bits 2i, 2i+1 */
    int64_t req, step;
    uint64_t ts;
    union { uint64_t dur; double value; };  /* EV_SLICE; EV_COUNTER; EV_BEGIN and EV_END:
                                               the thread's modeled history (a mixed slice) */
    const char *name;
} trace_record;
typedef struct { uint64_t ts; double value; } trace_sample;   /* after an EV_SERIES record */
/* A flow waiting for the next slice its thread records (on `layer`, or on
 * any when 0): the drainer hands it to that slice, so a record never waits
 * for flows, nor carries them. */
enum { FLOW_OUT, FLOW_IN, FLOW_FORGET };   /* forget: the ring has a new thread; drop those waiting */
typedef struct { uint32_t size; uint8_t kind, what; int8_t layer; uint8_t track; uint64_t id; } trace_flow_record;   /* track: k+1 for child track k, 0 any */
/* An arg in the ring: its type is in the record's types, so that an arg is
 * two stores, not three. */
typedef struct { const char *key; union { int64_t i; double d; const char *s; }; } trace_ring_arg;

/* What recording an event touches, in one cache line: between two ops of a
 * small model the compute has pushed it out of L1. Only the thread that
 * owns the ring writes it. */
typedef struct {
    _Alignas(64) _Atomic uint64_t head;
    _Atomic uint64_t events;
    uint8_t *ring;
    uint64_t limit;        /* the head may reach this without a look at the
                            * tail, the ring's pages or its end */
} trace_writer;

/* Internal to trace/, here for the inlined path. gen changes at every open
 * and close, so a thread's writer from an earlier run is never used. */
extern struct trace_live { _Atomic int on, gen; _Atomic unsigned muted; } trace_live;   /* muted: bit L, layer L (trace_mute) */
extern _Thread_local struct trace_mine { trace_writer *w; int gen; } trace_mine;

#endif
