/*
 * api.c -- the JSON endpoints under /api/ (docs/web.md): the runs and
 * requests of the trace, one request's summary and journey, its events in
 * a window of time at the detail a screen can show, one event's args.
 * Every query is a prepared statement whose numbers come from checked
 * parameters; every list has a limit.
 */
#include "web/server/web_int.h"
#include "layers/gpu/profile.h"
#include "trace/db_error.h"
#include "trace/journey.h"
#include "trace/sql.h"
#include "trace/trace.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROWS   20000   /* slices drawn one by one in a window */
#define MAX_FLOWS  5000
#define MAX_LIST   500

static const char *text(sqlite3_stmt *st, int col) {
    const char *s = (const char *)sqlite3_column_text(st, col);
    return s ? s : "";
}

/* The run a request names (?run=), else the server's own. */
static int64_t default_run(const web *w, sqlite3 *db) {
    return w->run > 0 ? w->run : trace_sql_scalar(db, TSQL_WEB_LAST_RUN, 0, NULL, 0);
}

static void add_run(cJSON *o, sqlite3 *db, int64_t run) {
    sqlite3_stmt *st = TSQL_PREP(db, TSQL_WEB_RUN, run);
    if (st && sqlite3_step(st) == SQLITE_ROW) {
        cJSON_AddNumberToObject(o, "run", (double)sqlite3_column_int64(st, 0));
        cJSON_AddStringToObject(o, "command", text(st, 1));
        cJSON_AddStringToObject(o, "model", text(st, 2));
        cJSON_AddStringToObject(o, "device", text(st, 3));
        cJSON_AddStringToObject(o, "clock_domain", text(st, 4));
        /* on a simulated device the timeline is virtual: host measured, device modeled (docs/timing.md) */
        cJSON_AddBoolToObject(o, "modeled", strcmp(text(st, 4), "host-monotonic") != 0);
        cJSON_AddStringToObject(o, "started_at", text(st, 5));
        cJSON_AddItemToObject(o, "ended_at", sqlite3_column_type(st, 6) == SQLITE_NULL ? cJSON_CreateNull()
                                                                                  : cJSON_CreateString(text(st, 6)));
    }
    sqlite3_finalize(st);
}

/* The trace's words for layers, clocks and directions (trace/names.c), by
 * their numbers: the page says what the trace says. */
static void add_names(cJSON *n) {
    cJSON *a = cJSON_AddArrayToObject(n, "layers");
    for (int l = 0; l <= L_CLIENT; l++) cJSON_AddItemToArray(a, cJSON_CreateString(l ? trace_layer_name(l) : ""));
    a = cJSON_AddArrayToObject(n, "clocks");
    for (int c = TRACE_MEASURED; c <= TRACE_MIXED; c++) cJSON_AddItemToArray(a, cJSON_CreateString(trace_clock_name(c)));
    a = cJSON_AddArrayToObject(n, "dirs");
    for (int d = DIR_NONE; d <= DIR_UP; d++) cJSON_AddItemToArray(a, cJSON_CreateString(trace_dir_name(d)));
}

/* GET /api/info: the run being served, the device, the profiles, the trace's words. */
static enum MHD_Result info(web *w, web_req *rq, sqlite3 *db) {
    cJSON *o = cJSON_CreateObject();
    add_run(o, db, default_run(w, db));
    cJSON_AddBoolToObject(o, "workshop", w->workshop != NULL);
    cJSON_AddNumberToObject(o, "student", rq->student);
    cJSON_AddNumberToObject(o, "workshop_max_tokens", web_workshop_max_tokens(w));
    cJSON_AddStringToObject(o, "db", w->db);
    add_names(cJSON_AddObjectToObject(o, "names"));
    cJSON_AddNumberToObject(o, "cap_mb", w->cap_mb);
    char list[1024], *save;
    gpu_profile_list(list, sizeof list);
    cJSON *p = cJSON_AddArrayToObject(o, "profiles");
    for (char *t = strtok_r(list, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) cJSON_AddItemToArray(p, cJSON_CreateString(t));
    return web_json(rq, 200, o);
}

/* GET /api/runs?limit= */
static enum MHD_Result runs(web *w, web_req *rq, sqlite3 *db) {
    int64_t limit = 50;
    web_param ps[] = { { "limit", 1, MAX_LIST, &limit } };
    enum MHD_Result r;
    if (web_params(rq, ps, 1, &r)) return r;
    sqlite3_stmt *st = TSQL_PREP(db, TSQL_WEB_RUNS, limit);
    cJSON *a = cJSON_CreateArray();
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        cJSON *o = cJSON_CreateObject();
        add_run(o, db, sqlite3_column_int64(st, 0));
        cJSON_AddItemToArray(a, o);
    }
    sqlite3_finalize(st);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "serving", (double)w->run);
    cJSON_AddItemToObject(o, "runs", a);
    (void)w;
    return web_json(rq, 200, o);
}

static cJSON *request_row(int64_t req, int64_t t0, int64_t t1, int64_t events, int client) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "request", (double)req);
    cJSON_AddNumberToObject(o, "start_ns", (double)t0);
    cJSON_AddNumberToObject(o, "end_ns", (double)t1);
    cJSON_AddNumberToObject(o, "events", (double)events);
    cJSON_AddBoolToObject(o, "client_events", client);
    return o;
}

/* A workshop's student's /api/requests: theirs alone, of the served run
 * (the workshop notes whose each is: workshop.c). */
static enum MHD_Result own_requests(web *w, web_req *rq, sqlite3 *db, int64_t before, int64_t limit) {
    int64_t *ids = malloc(limit * sizeof *ids);
    if (!ids) return web_fail(rq, 500, "server_error", NULL, "out of memory");
    int n = web_workshop_ids(w, rq->student, before, ids, (int)limit);
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) {
        sqlite3_stmt *st = TSQL_PREP(db, TSQL_WEB_REQUEST_ROW, w->run, ids[i]);
        if (st && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
            cJSON_AddItemToArray(a, request_row(ids[i], sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                                                sqlite3_column_int64(st, 2), sqlite3_column_int(st, 3)));
        sqlite3_finalize(st);
    }
    free(ids);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "run", (double)w->run);
    cJSON_AddItemToObject(o, "requests", a);
    return web_json(rq, 200, o);
}

/* GET /api/requests?run=&before=&limit=: newest first. */
static enum MHD_Result requests(web *w, web_req *rq, sqlite3 *db) {
    int64_t run = default_run(w, db), before = INT64_MAX, limit = 50;
    web_param ps[] = { { "run", 1, INT64_MAX, &run }, { "before", 1, INT64_MAX, &before }, { "limit", 1, MAX_LIST, &limit } };
    enum MHD_Result r;
    if (web_params(rq, ps, 3, &r)) return r;
    if (rq->student) return own_requests(w, rq, db, before, limit);
    sqlite3_stmt *st = TSQL_PREP(db, TSQL_WEB_REQUESTS, run, before, limit);
    if (!st) {
        char why[256];
        return web_fail(rq, 500, "server_error", NULL, "%s", trace_db_why(db, why, sizeof why));
    }
    cJSON *a = cJSON_CreateArray();
    while (sqlite3_step(st) == SQLITE_ROW)
        cJSON_AddItemToArray(a, request_row(sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2),
                                            sqlite3_column_int64(st, 3), sqlite3_column_int(st, 4)));
    sqlite3_finalize(st);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "run", (double)run);
    cJSON_AddItemToObject(o, "requests", a);
    return web_json(rq, 200, o);
}

/* The journey table, as `hipath run` prints it (trace/journey.c). */
static cJSON *journey(const web *w, int64_t run, int64_t req) {
    journey_row rows[16];
    int n;
    double total, by_clock[3] = { 0 };
    char err[256];
    cJSON *o = cJSON_CreateObject();
    if (trace_journey_request(w->db, run, req, rows, &n, &total, err, sizeof err)) {
        cJSON_AddStringToObject(o, "error", err);
        return o;
    }
    cJSON *a = cJSON_AddArrayToObject(o, "rows");
    for (int i = 0; i < n; i++) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddNumberToObject(r, "layer", rows[i].layer);
        cJSON_AddStringToObject(r, "name", trace_layer_name(rows[i].layer));
        cJSON_AddStringToObject(r, "dir", rows[i].dir == DIR_DOWN ? "down" : "up");
        cJSON_AddNumberToObject(r, "self_s", rows[i].self_s);
        cJSON_AddStringToObject(r, "clock", trace_clock_name(rows[i].clock));
        cJSON_AddNumberToObject(r, "share", total > 0 ? rows[i].self_s / total : 0);
        cJSON_AddStringToObject(r, "what", rows[i].what);
        cJSON_AddItemToArray(a, r);
        by_clock[rows[i].clock] += rows[i].self_s;
    }
    cJSON_AddNumberToObject(o, "total_s", total);
    cJSON_AddNumberToObject(o, "measured_s", by_clock[TRACE_MEASURED]);
    cJSON_AddNumberToObject(o, "modeled_s", by_clock[TRACE_MODELED]);
    return o;
}

/* GET /api/requests/N?run=: the window, latency, text and journey. */
static enum MHD_Result request(web *w, web_req *rq, sqlite3 *db, int64_t req) {
    int64_t run = default_run(w, db), t0, t1;
    web_param ps[] = { { "run", 1, INT64_MAX, &run } };
    enum MHD_Result r;
    if (web_params(rq, ps, 1, &r)) return r;
    if (web_request_window(db, run, req, &t0, &t1))
        return web_no_request(w, rq, db, run, req);
    cJSON *o = cJSON_CreateObject();
    add_run(o, db, run);
    cJSON_AddNumberToObject(o, "request", (double)req);
    cJSON_AddNumberToObject(o, "start_ns", (double)t0);
    cJSON_AddNumberToObject(o, "end_ns", (double)t1);
    cJSON_AddNumberToObject(o, "events", (double)trace_sql_scalar(db, TSQL_WEB_REQUEST_EVENTS, 2, (int64_t[]){ run, req }, 0));
    /* Latency at the client, when a client recorded its side (hipath run, the chat page); else at the server. */
    static const char *const lat_keys[] = { "at", "ttft_ns", "tpot_ns", "tokens", "e2e_ns" };
    sqlite3_stmt *st = TSQL_PREP(db, TSQL_WEB_REQUEST_LATENCY, run, req);
    int row = st && sqlite3_step(st) == SQLITE_ROW, client = row && !strcmp(text(st, 0), "client");
    cJSON_AddItemToObject(o, "latency", row ? web_row(st, lat_keys, 5) : cJSON_CreateObject());
    sqlite3_finalize(st);
    st = TSQL_PREP(db, TSQL_WEB_REQUEST_REPLY, run, req);
    if (st && sqlite3_step(st) == SQLITE_ROW) cJSON_AddStringToObject(o, "reply", text(st, 0));
    sqlite3_finalize(st);
    st = TSQL_PREP(db, TSQL_WEB_REQUEST_PROMPT, run, req);
    if (st && sqlite3_step(st) == SQLITE_ROW) {
        cJSON_AddStringToObject(o, "prompt", text(st, 0));
        cJSON_AddItemToObject(o, "prompt_tokens", web_column(st, 1));
    }
    sqlite3_finalize(st);
    cJSON_AddBoolToObject(o, "client_events", client);
    cJSON_AddItemToObject(o, "journey", client ? journey(w, run, req) : cJSON_CreateNull());
    return web_json(rq, 200, o);
}

/* A slice as a row: [id, start - t0, dur, layer, name, clock, dir, depth, instant, track]. */
typedef struct { cJSON *rows, *names; int nnames; const char *seen[512]; } slice_out;

static int name_index(slice_out *so, const char *name) {
    for (int i = 0; i < so->nnames; i++) if (!strcmp(so->seen[i], name)) return i;
    if (so->nnames == 512) return -1;
    cJSON *s = cJSON_CreateString(name);
    cJSON_AddItemToArray(so->names, s);
    so->seen[so->nnames] = s->valuestring;
    return so->nnames++;
}

/* A row's columns (trace/sql/web-events-drawn.sql's). */
#define NCOLS 10
static void add_slice(slice_out *so, sqlite3_stmt *st, int col, int64_t t0) {
    int nm = name_index(so, text(st, col + 4));
    double v[NCOLS] = { (double)sqlite3_column_int64(st, col), (double)(sqlite3_column_int64(st, col + 1) - t0),
                        (double)sqlite3_column_int64(st, col + 2), sqlite3_column_int(st, col + 3), nm,
                        trace_clock_of(text(st, col + 5)), trace_dir_of(text(st, col + 6)),
                        sqlite3_column_int(st, col + 7), sqlite3_column_int(st, col + 8), sqlite3_column_int(st, col + 9) };
    cJSON_AddItemToArray(so->rows, cJSON_CreateDoubleArray(v, NCOLS));
}

/* A small set of slice ids (open addressing). */
typedef struct { int64_t *k; size_t cap; } idset;
static int idset_add(idset *s, int64_t id) {   /* 1: new */
    for (size_t i = (size_t)id * 0x9E3779B97F4A7C15ull % s->cap;; i = (i + 1) % s->cap) {
        if (s->k[i] == id) return 0;
        if (!s->k[i]) { s->k[i] = id; return 1; }
    }
}

/* GET /api/requests/N/events?run=&from=&to=&px=: the request's slices in
 * [from, to] (trace ns; default its window). Those at least a pixel wide
 * at px pixels come one by one; the rest, per layer, clock and pixel
 * column, as counts ("bins"). The arrows of the request's window, with
 * their ends, always. Times are relative to t0, the window's start. */
static enum MHD_Result events(web *w, web_req *rq, sqlite3 *db, int64_t req) {
    int64_t run = default_run(w, db), t0, t1, from = -1, to = -1, px = 1600;
    web_param ps[] = { { "run", 1, INT64_MAX, &run }, { "from", 0, INT64_MAX, &from }, { "to", 0, INT64_MAX, &to },
                       { "px", 100, 8000, &px } };
    enum MHD_Result r;
    if (web_params(rq, ps, 4, &r)) return r;
    if (web_request_window(db, run, req, &t0, &t1))
        return web_no_request(w, rq, db, run, req);
    /* the request's own window at most: the work one query asks is bounded by it */
    from = from < t0 ? t0 : from;
    to = to < 0 || to > t1 ? t1 : to;
    if (to <= from) return web_fail(rq, 400, "invalid_parameter", "to", "to (%lld) must be after from (%lld)", (long long)to, (long long)from);
    int64_t min_dur = (to - from) / px;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "run", (double)run);
    cJSON_AddNumberToObject(o, "request", (double)req);
    cJSON_AddNumberToObject(o, "t0", (double)t0);
    cJSON_AddNumberToObject(o, "t1", (double)t1);
    cJSON_AddNumberToObject(o, "from", (double)from);
    cJSON_AddNumberToObject(o, "to", (double)to);
    cJSON_AddNumberToObject(o, "min_dur", (double)min_dur);
    cJSON *cols = cJSON_AddArrayToObject(o, "columns");
    const char *cn[NCOLS] = { "id", "start", "dur", "layer", "name", "clock", "dir", "depth", "instant", "track" };
    for (int i = 0; i < NCOLS; i++) cJSON_AddItemToArray(cols, cJSON_CreateString(cn[i]));
    add_names(o);
    slice_out so = { .rows = cJSON_AddArrayToObject(o, "slices"), .names = cJSON_AddArrayToObject(o, "names") };
    idset ids = { calloc(4 * (MAX_ROWS + 2 * MAX_FLOWS), sizeof(int64_t)), 4 * (MAX_ROWS + 2 * MAX_FLOWS) };
    if (!ids.k) { cJSON_Delete(o); return web_fail(rq, 500, "server_error", NULL, "out of memory"); }

    /* Drawn one by one: a pixel or wider, and the few instants of layers 8-6. */
    int64_t win[7] = { run, from, to, min_dur, t0, req, MAX_ROWS };
    sqlite3_stmt *st = trace_sql_prep(db, TSQL_WEB_EVENTS_DRAWN, 7, win);
    int n = 0;
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        add_slice(&so, st, 0, t0);
        idset_add(&ids, sqlite3_column_int64(st, 0));
        n++;
    }
    sqlite3_finalize(st);
    cJSON_AddBoolToObject(o, "truncated", n == MAX_ROWS);

    /* The rest, counted per layer, track (each GPU's stream), clock and pixel column. */
    win[6] = px;
    st = trace_sql_prep(db, TSQL_WEB_EVENTS_BINNED, 7, win);
    cJSON *bins = cJSON_AddArrayToObject(o, "bins");   /* [layer, clock, pixel, count, busy ns, track] */
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        double v[6] = { sqlite3_column_int(st, 0), trace_clock_of(text(st, 1)), sqlite3_column_int(st, 2),
                        sqlite3_column_int(st, 3), (double)sqlite3_column_int64(st, 4), sqlite3_column_int(st, 5) };
        cJSON_AddItemToArray(bins, cJSON_CreateDoubleArray(v, 6));
    }
    sqlite3_finalize(st);

    /* The arrows of the request's whole window: this request's hops and the steps' own. */
    st = TSQL_PREP(db, TSQL_WEB_EVENTS_FLOWS, run, t0, t1, req, MAX_FLOWS);
    cJSON *flows = cJSON_AddArrayToObject(o, "flows");   /* [from id, to id] */
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        double v[2] = { (double)sqlite3_column_int64(st, 0), (double)sqlite3_column_int64(st, 1) };
        cJSON_AddItemToArray(flows, cJSON_CreateDoubleArray(v, 2));
        if (idset_add(&ids, sqlite3_column_int64(st, 2))) add_slice(&so, st, 2, t0);
        if (idset_add(&ids, sqlite3_column_int64(st, 2 + NCOLS))) add_slice(&so, st, 2 + NCOLS, t0);
    }
    sqlite3_finalize(st);

    /* The run's named child tracks (a GPU's stream: "GPU 1/stream 0"), for the rows' track. */
    st = TSQL_PREP(db, TSQL_WEB_TRACKS, run, 256);
    cJSON *tracks = cJSON_AddArrayToObject(o, "tracks");   /* [layer, track, name] */
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        cJSON *t = cJSON_CreateArray();
        cJSON_AddItemToArray(t, cJSON_CreateNumber(sqlite3_column_int(st, 0)));
        cJSON_AddItemToArray(t, cJSON_CreateNumber(sqlite3_column_int(st, 1)));
        cJSON_AddItemToArray(t, cJSON_CreateString(text(st, 2)));
        cJSON_AddItemToArray(tracks, t);
    }
    sqlite3_finalize(st);
    free(ids.k);
    return web_json(rq, 200, o);
}

/* A student reads an event of their own request, or one of no request
 * (a step, a kernel) that lies in the window of one of theirs: what ran
 * while they waited. Never one of another's request, nor any of a window
 * they had no part in. 1 with the 403 made in *r. */
static int student_slice_refused(web *w, web_req *rq, sqlite3 *db, int64_t id, enum MHD_Result *r) {
    sqlite3_stmt *st = TSQL_PREP(db, TSQL_WEB_SLICE_OF, w->run, id);
    int found = st && sqlite3_step(st) == SQLITE_ROW;   /* none: the same 403, so ids say nothing of what exists */
    int none = !found || sqlite3_column_type(st, 0) == SQLITE_NULL;
    int64_t of = found ? sqlite3_column_int64(st, 0) : 0, ts = found ? sqlite3_column_int64(st, 1) : -1;
    sqlite3_finalize(st);
    int ok = !none && web_workshop_owner(w, of) == rq->student;
    if (none) {
        int64_t ids[MAX_LIST], t0, t1;
        int n = web_workshop_ids(w, rq->student, INT64_MAX, ids, MAX_LIST);
        for (int i = 0; found && i < n && !ok; i++) ok = !web_server_window(db, w->run, ids[i], &t0, &t1) && t0 <= ts && ts <= t1;
    }
    if (ok) return 0;
    *r = web_fail(rq, 403, "not_yours", NULL, none ? "event %lld lies outside your requests" : "event %lld belongs to another's request",
                  (long long)id);
    return 1;
}

/* A student's view of a batch's event (a step: its "requests", the ids in
 * it, and its "chunks", the prompts' pieces it computes, {"req", "from",
 * "to", "of"}; JSON arrays the trace keeps as text): their own ids and
 * chunks in it and the batch's size, nothing else of it (its tokens and the
 * others' chunks would say how long the others' prompts are). */
static cJSON *own_list(web *w, web_req *rq, const cJSON *args, const char *name) {
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(args, name), *e;
    cJSON *list = cJSON_IsString(in) ? cJSON_Parse(in->valuestring) : cJSON_IsArray(in) ? cJSON_Duplicate(in, 1) : NULL;
    cJSON *mine = cJSON_CreateArray();
    cJSON_ArrayForEach(e, list) {
        const cJSON *id = cJSON_IsObject(e) ? cJSON_GetObjectItemCaseSensitive(e, "req") : e;
        if (cJSON_IsNumber(id) && web_workshop_owner(w, (int64_t)id->valuedouble) == rq->student)
            cJSON_AddItemToArray(mine, cJSON_Duplicate(e, 1));
    }
    cJSON_Delete(list);
    return mine;
}

/* Any other event of no request (the model's forward, an op, a kernel)
 * holds the whole batch's tokens, FLOPs and bytes: a student gets none of
 * its args, since the others' prompt lengths follow from them. */
static void own_part(web *w, web_req *rq, cJSON *args) {
    const cJSON *ids = cJSON_GetObjectItemCaseSensitive(args, "requests");
    if (cJSON_IsNumber(ids)) {   /* a count, not the ids (--pp's update_from_output): the batch's size alone */
        int n = ids->valueint;
        while (args->child) cJSON_Delete(cJSON_DetachItemViaPointer(args, args->child));
        cJSON_AddNumberToObject(args, "batch_size", n);
        return;
    }
    cJSON *all = cJSON_IsString(ids) ? cJSON_Parse(ids->valuestring) : NULL;
    int n = cJSON_GetArraySize(cJSON_IsArray(ids) ? ids : all);
    cJSON_Delete(all);
    cJSON *mine = ids ? own_list(w, rq, args, "requests") : NULL, *chunks = ids ? own_list(w, rq, args, "chunks") : NULL;
    while (args->child) cJSON_Delete(cJSON_DetachItemViaPointer(args, args->child));
    if (!ids) return;
    cJSON_AddItemToObject(args, "requests", mine);
    cJSON_AddItemToObject(args, "chunks", chunks);
    cJSON_AddNumberToObject(args, "batch_size", n);
}

/* GET /api/slices/N?run=: one event, its args and its arrows. */
static enum MHD_Result slice(web *w, web_req *rq, sqlite3 *db, int64_t id) {
    int64_t run = default_run(w, db);
    web_param ps[] = { { "run", 1, INT64_MAX, &run } };
    enum MHD_Result r;
    if (web_params(rq, ps, 1, &r)) return r;
    sqlite3_stmt *st = TSQL_PREP(db, TSQL_WEB_SLICE, run, id);
    if (!st || sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_finalize(st);
        return web_fail(rq, 404, "slice_not_found", NULL, "run %lld has no event %lld", (long long)run, (long long)id);
    }
    static const char *const keys[] = { "id", "ts_ns", "dur_ns", "layer", "direction", "name", "request", "step", "clock", "track",
                                        "depth", "kind", "thread" };
    cJSON *o = web_row(st, keys, 13);
    cJSON_AddStringToObject(o, "layer_name", trace_layer_name(sqlite3_column_int(st, 3)));
    cJSON *args = sqlite3_column_type(st, 13) == SQLITE_TEXT ? cJSON_Parse(text(st, 13)) : NULL;
    if (rq->student && args && sqlite3_column_type(st, 6) == SQLITE_NULL) own_part(w, rq, args);   /* a batch's, not theirs alone */
    cJSON_AddItemToObject(o, "args", args ? args : cJSON_CreateObject());
    if (sqlite3_column_type(st, 14) == SQLITE_TEXT) cJSON_AddStringToObject(o, "track_name", text(st, 14));
    sqlite3_finalize(st);
    for (int k = 0; k < 2; k++) {   /* 0: the arrows out of it, 1: those into it */
        cJSON *a = cJSON_AddArrayToObject(o, k ? "flows_in" : "flows_out");
        st = TSQL_PREP(db, TSQL_WEB_SLICE_FLOWS, run, id, k, 64);
        while (st && sqlite3_step(st) == SQLITE_ROW) {
            if (rq->student && sqlite3_column_type(st, 3) != SQLITE_NULL &&   /* an arrow to another's request's event */
                web_workshop_owner(w, sqlite3_column_int64(st, 3)) != rq->student) continue;
            cJSON *f = cJSON_CreateObject();
            cJSON_AddNumberToObject(f, "id", (double)sqlite3_column_int64(st, 0));
            cJSON_AddNumberToObject(f, "layer", sqlite3_column_int(st, 1));
            cJSON_AddStringToObject(f, "name", text(st, 2));
            cJSON_AddItemToArray(a, f);
        }
        sqlite3_finalize(st);
    }
    return web_json(rq, 200, o);
}

/* A workshop's student may read the served run's requests of their own,
 * and nothing of the whole room (the runs' list; a Perfetto download,
 * which holds every request of its window). 1 with the 403 made in *r. */
static int student_refused(web *w, web_req *rq, int teachers, int64_t request, enum MHD_Result *r) {
    int64_t run = w->run;
    web_param ps[] = { { "run", 1, INT64_MAX, &run } };
    if (web_params_some(rq, ps, 1, r)) return 1;
    if (teachers) *r = web_fail(rq, 403, "teacher_only", NULL, "this is the teacher's: it holds other students' requests");
    else if (run != w->run) *r = web_fail(rq, 403, "not_yours", "run", "a student reads the served run (%lld) only", (long long)w->run);
    else if (request && web_workshop_owner(w, request) != rq->student)
        *r = web_fail(rq, 403, "not_yours", NULL, "request %lld is not yours", (long long)request);
    else return 0;
    return 1;
}

/* "N" or "N/rest": N a positive whole number, *rest what follows ("" for none). */
static int64_t id_of(const char *s, const char **rest) {
    char *end;
    if (*s < '1' || *s > '9') return -1;
    long long v = strtoll(s, &end, 10);
    if (*end && *end != '/') return -1;
    *rest = *end ? end + 1 : end;
    return v > 0 ? v : -1;
}

enum MHD_Result web_api(web *w, web_req *rq, const char *method, const char *url, const char *body, size_t len) {
    const char *p = url[4] ? url + 5 : url + 4, *rest = "";   /* "/api" alone: "" (no endpoint) */
    int get = !strcmp(method, "GET") || !strcmp(method, "HEAD"), post = !strcmp(method, "POST");
    int64_t id = -1;
    enum MHD_Result r;
    if (web_params_some(rq, NULL, 0, &r)) return r;   /* no parameter given twice, on any route */
    if (!strncmp(p, "labs", 4) && (!p[4] || p[4] == '/')) {
        if (rq->student && !get) return web_fail(rq, 403, "teacher_only", NULL, "a lab is run by the teacher, not with a student's key");
        return web_labs(w, rq, method, p[4] ? p + 5 : "");
    }
    if (!strncmp(p, "workshop", 8) && (!p[8] || p[8] == '/')) return web_workshop_api(w, rq, method, p[8] ? p + 9 : "", body, len);
    enum { NONE, INFO, RUNS, REQUESTS, REQUEST, EVENTS, PERFETTO, CLIENT, SLICE } what = NONE;
    if (!strcmp(p, "info")) what = INFO;
    else if (!strcmp(p, "runs")) what = RUNS;
    else if (!strcmp(p, "requests")) what = REQUESTS;
    else if (!strncmp(p, "requests/", 9) && (id = id_of(p + 9, &rest)) > 0) {
        what = !*rest ? REQUEST : !strcmp(rest, "events") ? EVENTS : !strcmp(rest, "perfetto") ? PERFETTO
             : !strcmp(rest, "client") ? CLIENT : NONE;
    } else if (!strncmp(p, "slices/", 7) && (id = id_of(p + 7, &rest)) > 0 && !*rest) what = SLICE;
    if (what == NONE) return web_fail(rq, 404, "not_found", NULL, "no such endpoint: %.16s %.200s", method, url);
    if (what == CLIENT ? !post : !get)
        return web_fail(rq, 405, "method_not_allowed", NULL, "%.16s is not allowed on %.200s", method, url);
    if (rq->student && student_refused(w, rq, what == RUNS || what == PERFETTO, what >= REQUEST && what != SLICE ? id : 0, &r)) return r;
    if (what == CLIENT) return web_report(w, rq, id, body, len);
    sqlite3 *db = web_db(w, rq, &r);
    if (!db) return r;
    if (rq->student && what == SLICE && student_slice_refused(w, rq, db, id, &r)) {
        sqlite3_close(db);
        return r;
    }
    if (what == PERFETTO) {
        int64_t run = default_run(w, db);
        web_param ps[] = { { "run", 1, INT64_MAX, &run } };
        if (!web_params(rq, ps, 1, &r)) r = web_perfetto(w, rq, run, id);
    } else {
        r = what == INFO ? info(w, rq, db) : what == RUNS ? runs(w, rq, db) : what == REQUESTS ? requests(w, rq, db)
          : what == REQUEST ? request(w, rq, db, id) : what == EVENTS ? events(w, rq, db, id) : slice(w, rq, db, id);
    }
    sqlite3_close(db);
    return r;
}
