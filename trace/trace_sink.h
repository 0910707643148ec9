/*
 * trace_sink.h -- what the drainer (drain.c) hands the two sinks (trace_sqlite.c
 * and trace_perfetto.c): one decoded event at a time, under the sink lock. An
 * event's strings live in a recording buffer that is reused once the sink
 * returns: a sink copies what it keeps.
 */
#ifndef HIPATH_TRACE_SINK_H
#define HIPATH_TRACE_SINK_H

#include "trace/trace.h"

#define TRACE_MAX_THREADS 256   /* recording threads at once (their indexes) */
#define TRACE_MAX_FLOWS 256  /* pending flow ids per direction per thread: a step can
                              * take the flows of this many newly admitted requests */

typedef struct trace_event {
    int kind;                 /* enum trace_kind (trace_ring.h) */
    trace_where w;
    int thread;               /* registration index of the recording thread */
    int depth;                /* open slices around it on (thread, layer, track) */
    uint64_t ts, dur;         /* dur: EV_SLICE only */
    double value;             /* EV_COUNTER only */
    const char *name;         /* "" for EV_END */
    int nargs;
    trace_arg args[TRACE_MAX_ARGS];
    int nout, nin;            /* flows leaving / ending at this slice */
    const uint64_t *out, *in; /* nout and nin flow ids */
    int64_t *row;             /* EV_BEGIN: sink stores its id; EV_END: reads it */
    const struct trace_event *end; /* EV_BEGIN: its end, when already recorded (else NULL) */
    int stored;               /* EV_END: the SQLite sink stored the slice whole at its begin */
    uint64_t modeled;         /* EV_BEGIN, EV_END: the thread's modeled history then (trace_clock_modeled) */
    uint64_t modeled_ns;      /* EV_BEGIN with its end, EV_END: modeled time inside the slice; > 0: mixed */
} trace_event;


/* SQLite sink: open refuses a database of another schema version. */
typedef struct tsql tsql;
/* max_bytes > 0: the database and its WAL kept under it (trace_keep_under) */
tsql   *tsql_open(const char *path, const trace_run_info *info, uint64_t t0_unix_ns, uint64_t max_bytes,
                  char *err, int errlen);
int64_t tsql_run_id(const tsql *db);
int     tsql_begin(tsql *db, char *err, int errlen);
void    tsql_event(tsql *db, const trace_event *e);
int     tsql_commit(tsql *db, char *err, int errlen);
int     tsql_close(tsql *db, char *err, int errlen);

/* Perfetto sink: packets are appended as they come, flushed at commit. */
typedef struct tpf tpf;
tpf *tpf_open(const char *path, char *err, int errlen);
void tpf_event(tpf *pf, const trace_event *e);
int  tpf_commit(tpf *pf, char *err, int errlen);
int  tpf_close(tpf *pf, char *err, int errlen);

extern const char trace_schema_sql[];
extern const char trace_index_sql[];   /* CREATE INDEX IF NOT EXISTS: at close, or open if not new */
extern const char trace_views_sql[];   /* CREATE VIEW IF NOT EXISTS, run on every open */
extern const char trace_migrate_v1_sql[];  /* version 1 -> this version, in the caller's transaction */
#define TRACE_SCHEMA_VERSION 2

#endif
