/*
 * trace.h -- the one place that knows about time, event buffers and the
 * two trace formats (SQLite and Perfetto).
 *
 * Every layer records what it does through this API. Recording is cheap:
 * an event is copied into a per-thread buffer (no malloc, no lock) and a
 * background thread started by trace_open() writes the buffers out in
 * batches; trace_flush() / trace_close() write out everything at once.
 *
 * Every event says which layer it belongs to, which way the request is
 * travelling, which request and step it belongs to, and whether its time
 * was measured on this host (or by GPU events) or modeled from a device
 * profile. Times are nanoseconds on one timeline (trace_now_ns()).
 */
#ifndef HIPATH_TRACE_H
#define HIPATH_TRACE_H

#include <stdint.h>

/* The eight layers, numbered as in the course: 8 is the client, 1 the GPU. */
enum trace_layer {
    L_GPU = 1, L_RUNTIME = 2, L_KERNELS = 3, L_OPS = 4,
    L_TENSOR = 5, L_SCHEDULER = 6, L_TOKENIZER = 7, L_CLIENT = 8
};
const char *trace_layer_name(int layer); /* "gpu", "runtime", ... "client" */

enum trace_dir   { DIR_NONE = 0, DIR_DOWN = 1, DIR_UP = 2 };
/* measured: a host clock or GPU events; modeled: layer 1's model of a
 * device profile; mixed: a slice whose span contains a modeled wait (its
 * arg modeled_ns says how much). A caller records measured or modeled: the
 * recorder finds the mixed ones. */
enum trace_clock { TRACE_MEASURED = 0, TRACE_MODELED = 1, TRACE_MIXED = 2 };
const char *trace_dir_name(int dir);     /* "none", "down", "up" */
const char *trace_clock_name(int clock); /* "measured", "modeled", "mixed" */
int trace_dir_of(const char *name);      /* and back (DIR_NONE, TRACE_MEASURED for a name it has not) */
int trace_clock_of(const char *name);

/* Key/value argument attached to an event. ARG_STR strings are copied;
 * ARG_LIT strings are kept by pointer, so they must outlive the trace (a
 * literal, an entry of a static table): recording is cheaper without the
 * copy, which counts on the hot path (an op's dtype, a kernel's op). */
enum trace_arg_type { ARG_INT = 0, ARG_DOUBLE = 1, ARG_LIT = 2, ARG_STR = 3 };   /* 2 bits (trace_fast.h) */
typedef struct {
    const char *key;          /* must be a string literal (not copied) */
    int type;                 /* enum trace_arg_type */
    union { int64_t i; double d; const char *s; };
} trace_arg;
#define TA_INT(k, v)  ((trace_arg){ .key = (k), .type = ARG_INT, .i = (int64_t)(v) })
#define TA_DBL(k, v)  ((trace_arg){ .key = (k), .type = ARG_DOUBLE, .d = (double)(v) })
#define TA_STR(k, v)  ((trace_arg){ .key = (k), .type = ARG_STR, .s = (v) })
#define TA_LIT(k, v)  ((trace_arg){ .key = (k), .type = ARG_LIT, .s = (v) })
#define TRACE_MAX_ARGS 12
/* An event's args, counted: trace_instant(w, "admit", TRACE_ARGS(TA_INT("tokens", n), ...)).
 * NO_ARGS for none. */
#define TRACE_ARGS(...) (int)(sizeof((trace_arg[]){ __VA_ARGS__ }) / sizeof(trace_arg)), (trace_arg[]){ __VA_ARGS__ }
#define NO_ARGS 0, NULL

/* Where an event sits: layer, direction, request, step, clock. */
typedef struct {
    int layer;                /* enum trace_layer */
    int dir;                  /* enum trace_dir */
    int64_t req;              /* request id, -1 for none */
    int64_t step;             /* -1 none, 0 prefill, k>0 decode step k */
    int clock;                /* enum trace_clock */
    int track;                /* 0: the layer's own track; k>0: child track k
                                 of that layer (e.g. a GPU stream, a request) */
} trace_where;

enum { NO_REQ = -1, NO_STEP = -1 };
#ifndef __cplusplus
/* Where: layer, direction, request, step; measured, on the layer's own track.
 * E.g. trace_at(L_SCHEDULER, DIR_DOWN, r->id, NO_STEP). */
static inline trace_where trace_at(int layer, int dir, int64_t req, int64_t step) {
    return (trace_where){ .layer = layer, .dir = dir, .req = req, .step = step, .clock = TRACE_MEASURED };
}
#endif

/* Description of one trace run, stored in the runs table. */
typedef struct {
    const char *db_path;       /* NULL: no SQLite output */
    const char *perfetto_path; /* NULL: no Perfetto output */
    const char *command;       /* the command line */
    const char *model;
    const char *device;        /* e.g. "cpu", "sim:w7900", "hip:0" */
    const char *clock_domain;  /* "host-monotonic", "virtual", "analytic" */
} trace_run_info;

/* Open the sinks and start a run. Returns 0, or -1 with a one-line reason in
 * err. With neither path set, tracing is off and every call is a no-op. */
int  trace_open(const trace_run_info *info, char *err, int errlen);
int64_t trace_run_id(void);   /* runs.id of this run in the database */
/* Write buffered events out (one transaction): everything recorded before
 * the call is in the files when it returns. Safe to call from any thread
 * while other threads keep recording. Returns 0 or -1 (reason in err). */
int  trace_flush(char *err, int errlen);
/* Flush and close both files. */
int  trace_close(char *err, int errlen);
/* Before trace_open: write at least every `seconds` (0, the default: when
 * the recorders are quiet, the cheapest for what they measure), and let no
 * thread hold more than `backlog` bytes of events unwritten (0: a whole
 * ring, 64 MiB): past it, it waits for the writer. A server, never quiet
 * for long, sets both, so that a kill loses about a second of events at
 * most even when they come faster than they can be written. */
void trace_flush_every(double seconds, uint64_t backlog);
/* Before trace_open: keep the database and its WAL together under `bytes`
 * on disk (0, the default: no cap). Past half of it, each write deletes the
 * oldest events (slices, their arrows, counters; older runs first) in its
 * own transaction, and a WAL past a quarter is checkpointed back to
 * nothing: a server can run for a day on a fixed disk. */
void trace_keep_under(uint64_t bytes);

/* A sweep's lighter trace: the layers in `layers` (bit L for layer L)
 * record nothing, slices, counters nor arrows, until trace_mute(0).
 * hipath validate mutes layers 2-4 while layer 1 writes its summaries
 * (sim_summarize): what it reads, at a tenth of the events. */
void trace_mute(unsigned layers);

/* The timeline (clock.c, docs/timing.md): nanoseconds since trace_open().
 * On cpu and hip, the host's monotonic clock. Under sim and analytic
 * (trace_clock_virtual(1), set when such a device opens) it is virtual and
 * each thread keeps its own: CPU time spent on the host (measured), plus
 * the device's modeled time the thread waited for, plus what it was handed.
 * The calls below do nothing on a wall clock. */
uint64_t trace_now_ns(void);
/* Seconds on this host's monotonic clock, whatever the timeline is: for
 * timeouts, keep-alives and stopwatches, never for events. */
double   trace_host_seconds(void);
void     trace_clock_virtual(int on);
int      trace_clock_is_virtual(void);
void     trace_clock_restart(void);           /* a new timeline from 0 (trace_open) */
/* A thread's time, with the modeled device time in its history: what one
 * thread hands another with a piece of work (a request, a token, bytes). */
typedef struct { uint64_t t, modeled; } trace_stamp;
trace_stamp trace_clock_stamp(void);
void     trace_clock_receive(trace_stamp s);  /* this thread learns of s: moves to it if behind */
void     trace_clock_rewind(uint64_t t);      /* back to t: the CPU's emulation of the device is not time */
void     trace_clock_wait(uint64_t t);        /* the host waited for the device until t (modeled) */
/* The host was blocked from t until the device's end: its clock goes to end,
 * end - t of it modeled, whatever the clock read in between (a thread
 * descheduled there is charged up to 20 us of wall time, clock.c). */
void     trace_clock_blocked(uint64_t t, uint64_t end);
uint64_t trace_clock_modeled(void);           /* modeled ns in this thread's history */
/* A stamp on the wire between a client and a server of one process (an
 * HTTP header, an SSE comment): write this thread's, "pid:t:modeled"; read
 * one, 0 only if it is this process's and the clock is virtual (bytes on a
 * socket carry no time: this is the time they left). -1 otherwise. */
int      trace_stamp_write(char *buf, int cap);
int      trace_stamp_read(const char *s, trace_stamp *out);

/* Name a child track of a layer (e.g. "stream 0"). In the Perfetto trace a
 * '/' puts it under a group track of the part before it: "GPU 1/stream 0"
 * and "GPU 1/cu_busy" (a counter's name) are GPU 1's lane group. */
void trace_track_name(int layer, int track, const char *name);
/* Name this thread for what it is ("HTTP connection 3", "client 2"): in
 * the Perfetto trace its events go on a child track of that name under
 * each layer it records on. Unnamed threads (the engine, a CLI's main
 * thread) record on the layers' own tracks; a GPU stream's track holds
 * every thread's work on it. NULL: unnamed again. */
void trace_thread_name(const char *name);

/* Every event's name, like an arg's key, is kept by pointer: a string
 * literal (or a static table entry), never a buffer made up at run time. */

/* Recording. These calls are inlined (trace_fast.h, included at the end),
 * so they are C only: the HIP backend (C++) only reads the clock. */
#ifndef __cplusplus
static inline int trace_enabled(void);   /* a trace is open */
static inline int trace_muted(int layer);    /* its events dropped (trace_mute) */

/* Slices. begin/end nest per (thread, layer, track). */
static inline void trace_begin(trace_where w, const char *name, int nargs, const trace_arg *args);
/* trace_begin, with an arrow from this slice to the next slice begun on this
 * thread: the layer below at work inside it (flows: see below). */
static inline void trace_begin_flowing(trace_where w, const char *name, int nargs, const trace_arg *args);
static inline void trace_end(trace_where w, int nargs, const trace_arg *args);
/* A slice whose start and duration are already known (e.g. modeled). */
static inline void trace_slice(trace_where w, const char *name, uint64_t ts_ns, uint64_t dur_ns,
                               int nargs, const trace_arg *args);
static inline void trace_instant(trace_where w, const char *name, int nargs, const trace_arg *args);
/* An instant at a time already known (e.g. placed after the fact, web/server/report.c). */
static inline void trace_instant_at(trace_where w, const char *name, uint64_t ts_ns, int nargs, const trace_arg *args);
/* Counter sample: value of `name` at now (or at ts_ns when ts_ns != 0). */
static inline void trace_counter(trace_where w, const char *name, double value, uint64_t ts_ns);
/* n samples known ahead (e.g. a modeled kernel's occupancy), recorded as one
 * event: value[i] from ts_ns[i] on. At most TRACE_MAX_SAMPLES. */
#define TRACE_MAX_SAMPLES 16
static inline void trace_counter_series(trace_where w, const char *name, int n, const uint64_t *ts_ns,
                                        const double *values);
#endif

/* Flows link events across layers, so the request's path shows as arrows.
 * trace_flow_next() gives a fresh id; trace_flow_out() attaches it to the
 * next slice or instant this thread records, trace_flow_in() ends it on the
 * next one; the _at forms wait for the next one this thread records on
 * that layer (an op's launch and kernel are recorded before the op's own
 * slice). trace_begin_flowing() links a slice to the next one begun inside
 * it (a layer's slice to the next layer's). */
uint64_t trace_flow_next(void);
void     trace_flow_out(uint64_t flow_id);
void     trace_flow_in(uint64_t flow_id);
void     trace_flow_out_at(int layer, uint64_t flow_id);
void     trace_flow_in_at(int layer, uint64_t flow_id);
/* ... on the next one it records on that layer's child track (a GPU's stream). */
void     trace_flow_in_track(int layer, int track, uint64_t flow_id);
/* A request's path, hop by hop: the id of the arrow from one hop to the
 * next is derived from the request's id, so layers on different threads
 * agree on it without passing it along (trace_flow_next() never reaches
 * the top bit). Down: the client's request, tokenized, admitted, stepped;
 * up: its logits computed and copied back, sampled, detokenized, streamed;
 * and from its k-th preemption to its resumption, HOP_PREEMPTED + k (k < 200). */
enum trace_hop { HOP_SENT = 1, HOP_TOKENIZED, HOP_ADMITTED, HOP_COMPUTED, HOP_COPIED_BACK, HOP_SAMPLED,
                 HOP_DETOKENIZED, HOP_STREAMED, HOP_PREEMPTED = 16 };
static inline uint64_t trace_request_flow(int64_t req, int hop) {
    return 1ull << 63 | (uint64_t)req << 8 | (uint64_t)hop;
}

/* Statistics for the overhead report. flush_ns: CPU time spent writing
 * (mostly on the flusher thread, which runs at idle priority). waits: times a recording thread found its buffer
 * full and waited for the flusher; wait_ns their total, max_wait_ns the
 * longest. */
typedef struct {
    uint64_t events, dropped, flushes, flush_ns;
    uint64_t waits, wait_ns, max_wait_ns;
} trace_stats;
trace_stats trace_get_stats(void);

#ifndef __cplusplus
#include "trace/trace_fast.h"
#endif
#endif
