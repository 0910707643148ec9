/* journey.c -- the journey table, read back from the SQLite trace. */
#include "trace/journey.h"
#include "trace/sql.h"
#include "trace/db_error.h"
#include "trace/trace.h"
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The journey table's rows, in the order of trace/sql/journey-what.sql's
 * statements: what each layer did, read from the args of its events. */
static const struct { int layer, dir; } WHAT[] = {
    { 8, DIR_DOWN }, { 7, DIR_DOWN }, { 6, DIR_DOWN }, { 5, DIR_DOWN }, { 4, DIR_DOWN }, { 3, DIR_DOWN }, { 2, DIR_DOWN },
    { 1, DIR_DOWN }, { 1, DIR_UP }, { 2, DIR_UP }, { 4, DIR_UP }, { 7, DIR_UP }, { 6, DIR_UP }, { 8, DIR_UP },
};
#define NWHAT ((int)(sizeof WHAT / sizeof WHAT[0]))

/* Each statement of journey-what.sql on temp.s (journey-scope.sql), its
 * first column into what[k]. */
static void what(sqlite3 *db, int64_t run, char what[][sizeof ((journey_row *)0)->what]) {
    const char *q = trace_sql(TSQL_JOURNEY_WHAT);
    for (int k = 0; k < NWHAT && *q; k++) {
        sqlite3_stmt *st = NULL;
        what[k][0] = 0;
        if (sqlite3_prepare_v2(db, q, -1, &st, &q) != SQLITE_OK || !st) { sqlite3_finalize(st); return; }
        sqlite3_bind_int64(st, 1, run);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
            snprintf(what[k], sizeof what[k], "%s", (const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
    }
}

typedef struct { int64_t t; int layer, dir, delta; } edge;
static int by_time(const void *a, const void *b) {
    const edge *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t ? 1 : x->delta - y->delta;   /* ends before starts */
}

int trace_journey(const char *path, int64_t run, journey_row rows[16], int *n, double *total_s,
                  char *err, int errlen) {
    return trace_journey_request(path, run, 0, rows, n, total_s, err, errlen);
}

int trace_journey_request(const char *path, int64_t run, int64_t req, journey_row rows[16], int *n, double *total_s,
                          char *err, int errlen) {
    sqlite3 *db;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        char why[256];
        snprintf(err, errlen, "%s: %s", path, trace_db_why(db, why, sizeof why)); sqlite3_close(db); return -1;
    }
    /* The request's window: the client's `request` slice. */
    int64_t t0 = 0, t1 = 0;
    sqlite3_stmt *st = TSQL_PREP(db, TSQL_JOURNEY_WINDOW, run, req);
    int found = st && sqlite3_step(st) == SQLITE_ROW;
    if (found) { t0 = sqlite3_column_int64(st, 0); t1 = sqlite3_column_int64(st, 1); }
    sqlite3_finalize(st);
    if (!found) {
        snprintf(err, errlen, req ? "%s: run %lld has no client request %lld" : "%s: run %lld has no client request",
                 path, (long long)run, (long long)req);
        sqlite3_close(db);
        return -1;
    }

    /* The client is on its way back up from the first byte of the reply on. */
    int64_t first_byte = trace_sql_scalar(db, TSQL_JOURNEY_FIRST_BYTE, 2, (int64_t[]){ run, req }, t1);

    int cap = 1024, ne = 0;
    edge *e = malloc(cap * sizeof *e);
    st = TSQL_PREP(db, TSQL_JOURNEY_EDGES, run, t0, t1, req);
    while (e && st && sqlite3_step(st) == SQLITE_ROW) {
        int64_t a = sqlite3_column_int64(st, 0), b = sqlite3_column_int64(st, 1);
        int layer = sqlite3_column_int(st, 2), dir = strcmp((const char *)sqlite3_column_text(st, 3), "up") ? DIR_DOWN : DIR_UP;
        if (layer < 1 || layer > 8) continue;
        if (ne + 2 > cap) { edge *m = realloc(e, (cap *= 2) * sizeof *e); if (!m) { free(e); e = NULL; break; } e = m; }
        e[ne++] = (edge){ a < t0 ? t0 : a, layer, dir, +1 };
        e[ne++] = (edge){ b > t1 ? t1 : b, layer, dir, -1 };
    }
    sqlite3_finalize(st);
    if (!e) { sqlite3_close(db); snprintf(err, errlen, "out of memory"); return -1; }
    qsort(e, ne, sizeof *e, by_time);

    /* Sweep: each interval belongs to the deepest layer with a slice open. */
    double self[9][3] = { { 0 } };
    int open[9][3] = { { 0 } };
    int64_t t = t0;
    for (int i = 0; i < ne; i++) {
        int l = 1;
        while (l <= 8 && !open[l][DIR_DOWN] && !open[l][DIR_UP]) l++;
        if (l <= 8) {
            int dir = open[l][DIR_DOWN] ? DIR_DOWN : DIR_UP;
            if (l == 8 && t >= first_byte) dir = DIR_UP;
            self[l][dir] += (e[i].t - t) * 1e-9;
        }
        t = e[i].t;
        open[e[i].layer][e[i].dir] += e[i].delta;
    }
    free(e);

    /* The device's time is modeled when layer 1's slices are. */
    int gpu_clock = trace_sql_scalar(db, TSQL_JOURNEY_DEVICE_CLOCK, 1, &run, 0) ? TRACE_MODELED : TRACE_MEASURED;

    char said[NWHAT][sizeof rows[0].what] = { { 0 } };
    st = TSQL_PREP(db, TSQL_JOURNEY_SCOPE, run, req, t0, t1);   /* temp.s: what the rows read */
    if (st && sqlite3_step(st) == SQLITE_DONE) what(db, run, said);
    sqlite3_finalize(st);
    *n = 0;
    for (int k = 0; k < NWHAT; k++) {
        journey_row *r = &rows[(*n)++];
        r->layer = WHAT[k].layer; r->dir = WHAT[k].dir;
        r->self_s = self[r->layer][r->dir];
        r->clock = r->layer == L_GPU ? gpu_clock : TRACE_MEASURED;
        memcpy(r->what, said[k], sizeof r->what);
    }
    *total_s = (t1 - t0) * 1e-9;
    sqlite3_close(db);
    return 0;
}
