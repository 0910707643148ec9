/*
 * trace_internal.h -- what the trace's own files share (only the .c files
 * of trace/ include it): a thread's ring, the state of the whole trace (tracer),
 * and who writes what.
 *
 * Each thread owns a ring of variable-length records (trace_ring.h). The
 * thread is the only writer of the ring's head (record.c); whoever drains
 * the rings (drain.c, holding the sink lock: the flusher thread, or a
 * caller of trace_flush) is the only writer of its tail. So recording takes
 * no lock and allocates nothing: the ring is allocated once, when the
 * thread first records. The flusher (flusher.c) writes every ring out in
 * one transaction, so the recording threads never write files, and it
 * writes when the recorders are quiet: writing while they work slows what
 * they measure (it takes cores, caches and memory bandwidth from a decode
 * that needs them all), so a busy stretch is buffered and written after
 * it. It writes early only when a ring is half full, and when asked
 * (trace_flush, trace_close: trace.c). A thread whose ring is full waits
 * for the flusher (counted in the stats), so no event is lost. A server is
 * never quiet for long and may be killed: there (trace_flush_every) it also
 * writes at least every so often, at the CPU share of any other thread,
 * and a ring counts as full at a smaller backlog, so that events come no
 * faster than they are written and a kill loses only the last of them.
 */
#ifndef HIPATH_TRACE_INTERNAL_H
#define HIPATH_TRACE_INTERNAL_H

#include "trace/trace_ring.h"
#include "trace/trace_sink.h"
#include <pthread.h>
#include <semaphore.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* A ring's pages, mapped ahead of its recorder (rings.c, trace_populate). */
#define POPULATE    (2u << 20)        /* ring bytes given pages ahead of a busy recorder */
#define HEADROOM    (512u << 10)      /* ... when it gets this close to their end */
#define FIRST_PAGES (1u << 20)        /* ... and of a new one (most threads record little) */
#define OPENER_PAGES (8u << 20)       /* ... but the thread that opens the trace records most */
#define RECORDER_PAGES (64u << 10)    /* mapped by a recorder that ran out of pages */
#define MAX_DEPTH   256   /* open slices per thread */

/* Flows waiting for a slice, each on its layer (0: any). */
typedef struct { uint64_t id[TRACE_MAX_FLOWS]; int8_t layer[TRACE_MAX_FLOWS]; uint8_t track[TRACE_MAX_FLOWS]; int n; } flow_queue;

typedef struct {
    trace_writer w;                      /* first: trace_mine.w points to it */
    uint64_t tail_seen;                  /* the owner's last look at tail */
    _Alignas(64) _Atomic uint64_t tail;  /* drainer writes */
    flow_queue waiting[2];               /* drainer's: flows out ([FLOW_OUT]) and in ([FLOW_IN]) */
    struct { int layer, track; int64_t row; uint64_t modeled; } open[MAX_DEPTH]; /* begun, not ended */
    int nopen, overflow;
    int index;
    _Atomic int idle;                    /* its thread exited: another may adopt it */
    _Atomic size_t populated;            /* ring bytes that have their pages */
    _Atomic size_t want;                 /* ... that should have them now (FIRST_PAGES at enroll) */
} trace_thread;

/* The trace: one per process (rings.c). */
extern struct trace_state {
    _Atomic int nthreads;
    _Atomic uint64_t next_flow, dropped, retired_events;
    _Atomic uint64_t flushes, flush_ns, waits, wait_ns, max_wait_ns;
    pthread_mutex_t enroll_lock, sink_lock;
    trace_thread *threads[TRACE_MAX_THREADS];
    tsql *db;
    tpf *pf;
    int warned, flush_failed;
    char lost_why[256];        /* the first failed flush's reason */
    pthread_t flusher;
    sem_t wake;                /* posted to start a flush now */
    _Atomic int kicked, stop;  /* kicked: wake is posted and not yet taken */
    _Atomic int flush_asked;   /* the post asks for a flush, not only for pages */
    _Atomic int urged;         /* a thread waits for the flusher: it runs at normal priority */
    _Atomic int running;       /* the flusher thread exists (urge may name it) */
    int idle_ok;               /* it may go idle: this process may lift it back (trace_urge_flusher) */
    _Atomic uint64_t every_ns; /* trace_flush_every: write at least this often (0: when quiet) */
    uint64_t max_bytes;        /* trace_keep_under: the database's cap (0: none) */
    _Atomic uint64_t room;     /* ... the backlog a ring may hold (TRACE_RING_BYTES, or less) */
} tracer;

/* Nanoseconds on a clock of clock_gettime (the timeline's, clock.c's, and
 * the writer's own stopwatches). */
static inline uint64_t clock_of(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void trace_populate(trace_thread *t, size_t upto);           /* rings.c */
int  trace_backlog(void);                                    /* drain.c: a ring holds records */
int  trace_flush_locked(char *err, int errlen);              /* ... all rings, one transaction */
void trace_wake_flusher(int flush);                          /* flusher.c */
void trace_urge_flusher(void);
int  trace_start_flusher(void);
void trace_stop_flusher(void);
trace_thread *trace_self(void);                              /* record.c: this thread's ring */

#endif
