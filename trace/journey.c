/* journey.c -- the journey table, read back from the SQLite trace. */
#include "trace/journey.h"
#include "trace/db_error.h"
#include "trace/trace.h"
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What each layer did, as one SQL expression over the request's events: s
 * (SCOPE: the run ?1's, or with ?2 > 0 those of request ?2's window ?3..?4
 * that are its own or no request's). The args are the data. */
#define SCOPE "WITH s AS (SELECT * FROM slices WHERE run_id = ?1 AND (?2 = 0 OR (ts_ns BETWEEN ?3 AND ?4 " \
              "AND (request IS NULL OR request = ?2)))) "

/* Layer 2's names for tensor parallelism's collectives (layers/runtime/runtime.c). */
#define COLLECTIVES_2 "'ncclAllReduce', 'gather'"

static const struct { int layer, dir; const char *sql; } WHAT[] = {
    { 8, DIR_DOWN, "SELECT 'POST ' || a.value || ' B of JSON to /v1/chat/completions' FROM s JOIN args a ON a.slice_id = s.id "
                   "WHERE s.run_id = ?1 AND s.layer = 8 AND s.name = 'build' AND a.key = 'bytes'" },
    { 7, DIR_DOWN, "SELECT 'chat template + BPE -> ' || max(CASE a.key WHEN 'tokens' THEN a.value END) || ' ids ' || "
                   "coalesce(max(CASE a.key WHEN 'ids' THEN a.value END), '') FROM s JOIN args a ON a.slice_id = s.id "
                   "WHERE s.run_id = ?1 AND s.layer = 7 AND s.name = 'tokenize' AND s.request IS NOT NULL" },
    { 6, DIR_DOWN, "SELECT 'queued, admitted; ' || count(*) || ' engine steps (1 prefill + ' || (count(*) - 1) || ' decode), '"
                   " || (SELECT max(a.value) FROM s t JOIN args a ON a.slice_id = t.id WHERE t.run_id = ?1 AND t.name = 'kv_alloc' AND a.key = 'seq_blocks')"
                   " || ' KV block(s)' FROM s WHERE run_id = ?1 AND layer = 6 AND name = 'step'" },
    { 5, DIR_DOWN, "SELECT count(DISTINCT s.id) || ' forward passes; ids [' || max(CASE a.key WHEN 'tokens' THEN a.value END) || '] -> x [' || "
                   "max(CASE a.key WHEN 'tokens' THEN a.value END) || ', ' || max(CASE a.key WHEN 'dim' THEN a.value END) || '] f32, weights ' || "
                   "max(CASE a.key WHEN 'w_dtype' THEN a.value END) FROM s JOIN args a ON a.slice_id = s.id "
                   "WHERE s.run_id = ?1 AND s.layer = 5 AND s.name = 'forward'" },
    { 4, DIR_DOWN, "SELECT count(DISTINCT s.id) || ' ops: ' || printf('%.3g', sum(CASE a.key WHEN 'flops' THEN a.value END) / 1e9) || ' GFLOP, ' || "
                   "printf('%.3g', sum(CASE a.key WHEN 'bytes' THEN a.value END) / 1e6) || ' MB moved' FROM s JOIN args a ON a.slice_id = s.id "
                   "WHERE s.run_id = ?1 AND s.layer = 4 AND s.direction = 'down'" },
    { 3, DIR_DOWN, "SELECT count(DISTINCT s.id) || ' kernel launches, ' || sum(CASE a.key WHEN 'wavefronts' THEN a.value END) || ' wavefronts' "
                   "FROM s JOIN args a ON a.slice_id = s.id WHERE s.run_id = ?1 AND s.layer = 3" },
    /* --tp N: the collectives are layer 2's calls too, not copies */
    { 2, DIR_DOWN, "SELECT count(*) || ' copies H2D, ' || printf('%.3g', coalesce(sum(a.value), 0) / 1e6) || ' MB' || "
                   "coalesce((SELECT '; ' || count(*) FILTER (WHERE c.name = 'ncclAllReduce') || ' ncclAllReduce, ' || "
                   "count(*) FILTER (WHERE c.name = 'gather') || ' gather (' || max(json_extract(c.args, '$.library')) || ')' "
                   "FROM s c WHERE c.run_id = ?1 AND c.layer = 2 AND c.name IN (" COLLECTIVES_2 ") HAVING count(*)), '') "
                   "FROM s JOIN args a ON a.slice_id = s.id WHERE s.run_id = ?1 AND s.layer = 2 AND s.direction = 'down' "
                   "AND s.kind = 'slice' AND s.step IS NOT NULL AND a.key = 'bytes' AND s.name NOT IN (" COLLECTIVES_2 ")" },
    /* --tp N: the GPUs, their link and the all-reduces (c: NULLs with one GPU). Every GPU records each
     * collective, so its count, bytes and time are per GPU. */
    { 1, DIR_DOWN, "SELECT count(*) || ' kernels and copies on ' || coalesce(c.gpus || ' GPUs of ', '') || (SELECT device FROM runs WHERE id = ?1) || "
                   "coalesce(' (' || (SELECT json_extract(args, '$.name') FROM slices WHERE run_id = ?1 AND name = 'code_object_load') || ')', '') || "
                   "coalesce(', joined by ' || c.link, '') || ', ' || (CASE WHEN min(s.clock) = 'modeled' THEN 'modeled' ELSE 'measured' END) || "
                   "coalesce('; ' || (c.n / c.gpus) || ' allReduce (' || printf('%.3g', c.bytes / c.gpus / 1e6) || ' MB, ' || "
                   "printf('%.3g', c.ns / c.gpus / 1e6) || ' ms)', '') "
                   "FROM s, (SELECT max(json_extract(args, '$.gpus')) AS gpus, max(json_extract(args, '$.link')) AS link, "
                   "count(*) FILTER (WHERE name = 'allReduce') AS n, sum(json_extract(args, '$.bytes')) FILTER (WHERE name = 'allReduce') AS bytes, "
                   "sum(dur_ns) FILTER (WHERE name = 'allReduce') AS ns FROM s WHERE run_id = ?1 AND layer = 1 AND name IN ('allReduce', 'gather')) c "
                   "WHERE s.run_id = ?1 AND s.layer = 1" },
    { 1, DIR_UP,   "SELECT count(*) || ' copies D2H (logits), ' || printf('%.3g', coalesce(sum(a.value), 0) / 1e3) || ' kB' FROM s JOIN args a ON a.slice_id = s.id "
                   "WHERE s.run_id = ?1 AND s.layer = 1 AND s.direction = 'up' AND a.key = 'bytes'" },
    { 2, DIR_UP,   "SELECT count(*) || ' copies D2H, ' || printf('%.3g', coalesce(sum(a.value), 0) / 1e3) || ' kB' FROM s JOIN args a ON a.slice_id = s.id "
                   "WHERE s.run_id = ?1 AND s.layer = 2 AND s.direction = 'up' AND a.key = 'bytes'" },
    { 4, DIR_UP,   "SELECT count(*) || ' tokens sampled at temperature ' || printf('%g', max(CASE a.key WHEN 'temperature' THEN a.value END)) || "
                   "(SELECT CASE WHEN count(*) THEN ', each replaced by the forced reply''s id (--reply)' ELSE '' END FROM s "
                    " WHERE run_id = ?1 AND name = 'teacher_forced') FROM s "
                   "JOIN args a ON a.slice_id = s.id AND a.key = 'temperature' WHERE s.run_id = ?1 AND s.layer = 4 AND s.name = 'sample'" },
    { 7, DIR_UP,   "SELECT count(*) || ' ids -> ' || quote(group_concat(a.value, '')) FROM (SELECT * FROM s WHERE run_id = ?1 AND layer = 7 "
                   "AND direction = 'up' ORDER BY ts_ns) s JOIN args a ON a.slice_id = s.id AND a.key = 'text'" },
    { 6, DIR_UP,   "SELECT count(*) || ' SSE chunks, then data: [DONE]' FROM s WHERE run_id = ?1 AND layer = 6 AND name = 'sse_chunk'" },
    { 8, DIR_UP,   "SELECT 'first byte, ' || count(*) || ' deltas rendered: ' || quote(group_concat(a.value, '')) FROM (SELECT * FROM s "
                   "WHERE run_id = ?1 AND layer = 8 AND name = 'token' ORDER BY ts_ns) s JOIN args a ON a.slice_id = s.id AND a.key = 'text'" },
};

static void what(sqlite3 *db, const int64_t scope[4], const char *sql, char *out, int cap) {
    sqlite3_stmt *st;
    char q[2048];
    out[0] = 0;
    snprintf(q, sizeof q, SCOPE "%s", sql);
    if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK) return;
    for (int i = 0; i < 4; i++) sqlite3_bind_int64(st, i + 1, scope[i]);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(out, cap, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
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
    sqlite3_stmt *st;
    int64_t t0 = 0, t1 = 0;
    sqlite3_prepare_v2(db, "SELECT ts_ns, ts_ns + dur_ns FROM slices WHERE run_id = ?1 AND layer = 8 AND name = 'request' "
                           "AND dur_ns IS NOT NULL AND (?2 = 0 OR request = ?2) ORDER BY ts_ns LIMIT 1", -1, &st, NULL);
    sqlite3_bind_int64(st, 1, run);
    sqlite3_bind_int64(st, 2, req);
    int found = sqlite3_step(st) == SQLITE_ROW;
    if (found) { t0 = sqlite3_column_int64(st, 0); t1 = sqlite3_column_int64(st, 1); }
    sqlite3_finalize(st);
    if (!found) {
        snprintf(err, errlen, req ? "%s: run %lld has no client request %lld" : "%s: run %lld has no client request",
                 path, (long long)run, (long long)req);
        sqlite3_close(db);
        return -1;
    }

    /* The client is on its way back up from the first byte of the reply on. */
    int64_t first_byte = t1;
    sqlite3_prepare_v2(db, "SELECT min(ts_ns) FROM slices WHERE run_id = ?1 AND layer = 8 AND name = 'first_byte' "
                           "AND (?2 = 0 OR request = ?2)", -1, &st, NULL);
    sqlite3_bind_int64(st, 1, run);
    sqlite3_bind_int64(st, 2, req);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) first_byte = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);

    int cap = 1024, ne = 0;
    edge *e = malloc(cap * sizeof *e);
    sqlite3_prepare_v2(db, "SELECT ts_ns, ts_ns + dur_ns, layer, direction FROM slices WHERE run_id = ?1 AND kind = 'slice' "
                           "AND dur_ns > 0 AND ts_ns < ?3 AND ts_ns + dur_ns > ?2 AND (?4 = 0 OR request IS NULL OR request = ?4)", -1, &st, NULL);
    sqlite3_bind_int64(st, 1, run); sqlite3_bind_int64(st, 2, t0); sqlite3_bind_int64(st, 3, t1); sqlite3_bind_int64(st, 4, req);
    while (e && sqlite3_step(st) == SQLITE_ROW) {
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
    int gpu_clock = TRACE_MEASURED;
    sqlite3_prepare_v2(db, "SELECT 1 FROM slices WHERE run_id = ?1 AND layer = 1 AND clock = 'modeled' LIMIT 1", -1, &st, NULL);
    sqlite3_bind_int64(st, 1, run);
    if (sqlite3_step(st) == SQLITE_ROW) gpu_clock = TRACE_MODELED;
    sqlite3_finalize(st);

    *n = 0;
    const int64_t scope[4] = { run, req, t0, t1 };
    for (size_t k = 0; k < sizeof WHAT / sizeof WHAT[0]; k++) {
        journey_row *r = &rows[(*n)++];
        r->layer = WHAT[k].layer; r->dir = WHAT[k].dir;
        r->self_s = self[r->layer][r->dir];
        r->clock = r->layer == L_GPU ? gpu_clock : TRACE_MEASURED;
        what(db, scope, WHAT[k].sql, r->what, sizeof r->what);
    }
    *total_s = (t1 - t0) * 1e-9;
    sqlite3_close(db);
    return 0;
}
