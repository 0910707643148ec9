/*
 * export.c -- a window of one run, read back from the SQLite trace and
 * written as a Perfetto trace by the same sink a live run uses
 * (trace_perfetto.c): the web front end's "download Perfetto trace".
 *
 * The sink interns names and arg keys by their address (they are string
 * literals in a live run), so every name and key read back here is kept
 * once, in a pool, and always handed over at the same address.
 */
#include "trace/export.h"
#include "trace/db_error.h"
#include "trace/sql.h"
#include "trace/trace_sink.h"
#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POOL 16384   /* slots for distinct names and keys (half of them used at most) */

typedef struct { char *s[POOL]; int n; } pool;

static const char *pooled(pool *p, const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *c = s; *c; c++) h = (h ^ (uint8_t)*c) * 0x100000001b3ull;
    for (int k = 0, i = (int)(h % POOL); k < POOL; k++, i = (i + 1) % POOL) {
        if (p->s[i] && !strcmp(p->s[i], s)) return p->s[i];
        if (!p->s[i] && p->n < POOL / 2 && (p->s[i] = strdup(s))) { p->n++; return p->s[i]; }
        if (!p->s[i]) break;
    }
    return "(too many names)";   /* never a buffer: the sink would take its address for one string */
}

/* The flows whose both ends are in the window: (slice, flow id, out?) sorted by slice. */
typedef struct { int64_t slice; uint64_t id; int out; } flow_end;
static int by_slice(const void *a, const void *b) {
    const flow_end *x = a, *y = b;
    return x->slice < y->slice ? -1 : x->slice > y->slice ? 1 : 0;
}

/* The args JSON into e's args (string values point into j, kept until the event is written). */
static void decode_args(pool *p, cJSON *j, trace_event *e) {
    cJSON *a;
    cJSON_ArrayForEach(a, j) {
        if (!strcmp(a->string, "modeled_ns") && e->w.clock == TRACE_MIXED) {   /* the sink says it itself */
            e->modeled_ns = (uint64_t)a->valuedouble;
            continue;
        }
        if (e->nargs == TRACE_MAX_ARGS) break;
        trace_arg *t = &e->args[e->nargs];
        t->key = pooled(p, a->string);
        if (cJSON_IsNumber(a) && a->valuedouble == (double)(int64_t)a->valuedouble) t->type = ARG_INT, t->i = (int64_t)a->valuedouble;
        else if (cJSON_IsNumber(a)) t->type = ARG_DOUBLE, t->d = a->valuedouble;
        else if (cJSON_IsString(a)) t->type = ARG_STR, t->s = a->valuestring;
        else continue;
        e->nargs++;
    }
    if (e->w.clock == TRACE_MIXED && !e->modeled_ns) e->w.clock = TRACE_MEASURED;
}

int trace_export_perfetto(const char *db_path, int64_t run, int64_t t0, int64_t t1, const char *out_path,
                          int64_t *events, char *err, int errlen) {
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        char why[256];
        snprintf(err, errlen, "%s: %s", db_path, trace_db_why(db, why, sizeof why));
        sqlite3_close(db);
        return -1;
    }
    sqlite3_busy_timeout(db, 5000);
    pool *p = calloc(1, sizeof *p);
    tpf *pf = p ? tpf_open(out_path, err, errlen) : NULL;
    flow_end *fl = NULL;
    int nfl = 0, rc = -1;
    if (!pf) { if (!p) snprintf(err, errlen, "out of memory"); goto out; }
    *events = 0;

    sqlite3_stmt *st = TSQL_PREP(db, TSQL_EXPORT_TRACKS, run);
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        trace_event e = { .kind = EV_TRACK, .w = { .layer = sqlite3_column_int(st, 0), .track = sqlite3_column_int(st, 1) } };
        e.name = pooled(p, (const char *)sqlite3_column_text(st, 2));
        tpf_event(pf, &e);
    }
    sqlite3_finalize(st);

    /* A slice is in the window when it overlaps it. */
    st = TSQL_PREP(db, TSQL_EXPORT_FLOWS, run, t0, t1);
    int cap = 0;
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        if (nfl + 2 > cap) {
            flow_end *m = realloc(fl, (cap = 2 * cap + 64) * sizeof *fl);
            if (!m) { sqlite3_finalize(st); snprintf(err, errlen, "out of memory"); goto out; }
            fl = m;
        }
        uint64_t id = (uint64_t)sqlite3_column_int64(st, 0);
        fl[nfl++] = (flow_end){ sqlite3_column_int64(st, 1), id, 1 };
        fl[nfl++] = (flow_end){ sqlite3_column_int64(st, 2), id, 0 };
    }
    sqlite3_finalize(st);
    if (nfl) qsort(fl, nfl, sizeof *fl, by_slice);

    st = TSQL_PREP(db, TSQL_EXPORT_SLICES, run, t0, t1);
    int f = 0;
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        int instant = !strcmp((const char *)sqlite3_column_text(st, 11), "instant");
        trace_event e = {
            .kind = instant ? EV_INSTANT : EV_SLICE,
            .w = { .layer = sqlite3_column_int(st, 3), .dir = trace_dir_of((const char *)sqlite3_column_text(st, 4)),
                   .req = sqlite3_column_type(st, 6) == SQLITE_NULL ? NO_REQ : sqlite3_column_int64(st, 6),
                   .step = sqlite3_column_type(st, 7) == SQLITE_NULL ? NO_STEP : sqlite3_column_int64(st, 7),
                   .clock = trace_clock_of((const char *)sqlite3_column_text(st, 8)),
                   .track = sqlite3_column_int(st, 9) },
            .thread = sqlite3_column_int(st, 12) % TRACE_MAX_THREADS,
            .depth = sqlite3_column_int(st, 10),
            .ts = (uint64_t)sqlite3_column_int64(st, 1),
            .dur = (uint64_t)sqlite3_column_int64(st, 2),
        };
        if (e.w.layer < 1 || e.w.layer > 8) continue;
        e.name = pooled(p, (const char *)sqlite3_column_text(st, 5));
        cJSON *args = sqlite3_column_type(st, 13) == SQLITE_TEXT ? cJSON_Parse((const char *)sqlite3_column_text(st, 13)) : NULL;
        decode_args(p, args, &e);
        uint64_t outs[16], ins[16];
        while (f < nfl && fl[f].slice < id) f++;
        for (int g = f; g < nfl && fl[g].slice == id; g++) {
            if (fl[g].out && e.nout < 16) outs[e.nout++] = fl[g].id;
            if (!fl[g].out && e.nin < 16) ins[e.nin++] = fl[g].id;
        }
        e.out = outs;
        e.in = ins;
        tpf_event(pf, &e);
        cJSON_Delete(args);
        ++*events;
    }
    sqlite3_finalize(st);

    st = TSQL_PREP(db, TSQL_EXPORT_COUNTERS, run, t0, t1);
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        trace_event e = { .kind = EV_COUNTER, .ts = (uint64_t)sqlite3_column_int64(st, 0),
                          .w = { .layer = sqlite3_column_int(st, 1), .track = sqlite3_column_int(st, 2) },
                          .value = sqlite3_column_double(st, 4) };
        if (e.w.layer < 1 || e.w.layer > 8) continue;
        e.name = pooled(p, (const char *)sqlite3_column_text(st, 3));
        tpf_event(pf, &e);
        ++*events;
    }
    sqlite3_finalize(st);
    rc = 0;
out:
    if (pf && tpf_close(pf, rc ? NULL : err, errlen)) rc = -1;
    if (p) for (int i = 0; i < POOL; i++) free(p->s[i]);
    free(p);
    free(fl);
    sqlite3_close(db);
    return rc;
}
