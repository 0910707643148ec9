/*
 * report.c -- POST /api/requests/N/client: the chat page is layer 8, the
 * client, and says what it saw; its events join the trace here, on a
 * thread named "browser (request N)".
 *
 * The browser's clock is not the trace's, so each event is placed at the
 * server event it answers to: the request reaches the server at
 * `http_request` (less the browser's time to build the JSON, host work,
 * measured), the k-th piece of text arrives with the k-th `sse_chunk`, the
 * end with `sse_done` (the bytes cross the loopback, which takes no time
 * on the virtual clock either: docs/timing.md). What the browser measured
 * on its own clock is kept as args (browser_ms). On a virtual clock the
 * request's span holds modeled device time: the SSE stamps the page read
 * (": hipath-clock pid:t:modeled", first and last) say how much, so the
 * slice is `mixed` with modeled_ns, as hipath's own client records it.
 */
#include "web/server/web_int.h"
#include "trace/trace.h"
#include "trace/sql.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TOKENS 4096
#define MAX_TEXT 1024
#define MAX_JSON 16384
/* A real report is a few kB: the request's JSON and its tokens' texts. No
 * more is taken, and no more than the request itself was (its bytes, its
 * chunks), so a report cannot fill the trace and push others' events out
 * under its cap. */
#define MAX_REPORT 65536

typedef struct {
    int64_t req;
    int64_t arrive, done, *chunks;   /* the server's events (trace ns) */
    int nchunks;
    int64_t bytes;                   /* the request's body, as the server read it */
    cJSON *q;                        /* the report */
    int64_t modeled_ns;              /* -1: not on a virtual clock */
    char name[48];
} placed;

static double ms(cJSON *q, const char *key) { return cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(q, key)); }

/* The report's fields: numbers of ms since the click, the tokens' texts. NULL, or the bad field. */
static const char *check(cJSON *q) {
    static const char *times[] = { "build_ms", "sent_ms", "first_byte_ms", "done_ms" };
    if (!cJSON_IsObject(q)) return "body";
    for (int i = 0; i < 4; i++) {
        cJSON *v = cJSON_GetObjectItemCaseSensitive(q, times[i]);
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0 || v->valuedouble > 1e9) return times[i];
    }
    cJSON *v = cJSON_GetObjectItemCaseSensitive(q, "json");
    if (!cJSON_IsString(v) || strlen(v->valuestring) > MAX_JSON) return "json";
    v = cJSON_GetObjectItemCaseSensitive(q, "status");
    if (!cJSON_IsNumber(v) || v->valuedouble < 100 || v->valuedouble > 599) return "status";
    v = cJSON_GetObjectItemCaseSensitive(q, "finish");
    if (v && (!cJSON_IsString(v) || strlen(v->valuestring) > 32)) return "finish";
    cJSON *t = cJSON_GetObjectItemCaseSensitive(q, "tokens"), *e;
    if (!cJSON_IsArray(t) || cJSON_GetArraySize(t) > MAX_TOKENS) return "tokens";
    cJSON_ArrayForEach(e, t) {
        cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "ms"), *x = cJSON_GetObjectItemCaseSensitive(e, "text");
        if (!cJSON_IsNumber(m) || !isfinite(m->valuedouble) || m->valuedouble < 0 || m->valuedouble > 1e9 ||
            !cJSON_IsString(x) || strlen(x->valuestring) > MAX_TEXT) return "tokens";
    }
    for (int i = 0; i < 2; i++) {
        v = cJSON_GetObjectItemCaseSensitive(q, i ? "last_stamp" : "first_stamp");   /* null or absent off a virtual clock */
        if (v && !cJSON_IsNull(v) && (!cJSON_IsString(v) || strlen(v->valuestring) > 80)) return i ? "last_stamp" : "first_stamp";
    }
    return NULL;
}

/* The events, recorded on a thread of their own (its own track in Perfetto). */
static void *record(void *arg) {
    placed *p = arg;
    trace_thread_name(p->name);
    cJSON *q = p->q, *tokens = cJSON_GetObjectItemCaseSensitive(q, "tokens"), *t;
    const char *json = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(q, "json"));
    const char *finish = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(q, "finish"));
    int status = (int)ms(q, "status"), ntok = cJSON_GetArraySize(tokens);
    double build_ms = fmin(ms(q, "build_ms"), 10);   /* a JSON body takes far less; no report stretches the window more */
    int64_t build = (int64_t)(build_ms * 1e6), start = p->arrive > build ? p->arrive - build : 0;
    trace_where down = trace_at(L_CLIENT, DIR_DOWN, p->req, NO_STEP), up = trace_at(L_CLIENT, DIR_UP, p->req, NO_STEP);
    if (p->modeled_ns > 0) down.clock = TRACE_MIXED;   /* its span holds the device's modeled time */
    trace_flow_out(trace_request_flow(p->req, HOP_SENT));   /* -> the server's tokenize */
    trace_arg args[] = { TA_LIT("client", "browser (the chat page)"), TA_INT("status", status),
                         TA_DBL("browser_total_ms", ms(q, "done_ms")),
                         TA_LIT("placed", "at the server's http_request, sse_chunk, sse_done; browser_ms: the browser's clock"),
                         TA_INT("modeled_ns", p->modeled_ns) };   /* last: only when mixed */
    trace_slice(down, "request", (uint64_t)start, (uint64_t)(p->done - start), p->modeled_ns > 0 ? 5 : 4, args);
    down.clock = TRACE_MEASURED;
    trace_instant_at(down, "build", (uint64_t)start, TRACE_ARGS(TA_STR("json", json), TA_INT("bytes", strlen(json)),
                                                                TA_DBL("browser_ms", ms(q, "build_ms"))));
    trace_instant_at(down, "sent", (uint64_t)p->arrive, TRACE_ARGS(TA_INT("bytes", strlen(json)), TA_DBL("browser_ms", ms(q, "sent_ms"))));
    trace_instant_at(up, "first_byte", (uint64_t)(p->nchunks ? p->chunks[0] : p->done),
                     TRACE_ARGS(TA_INT("status", status), TA_DBL("browser_ms", ms(q, "first_byte_ms"))));
    int i = 0;
    cJSON_ArrayForEach(t, tokens) {
        if (!i) trace_flow_in(trace_request_flow(p->req, HOP_STREAMED));   /* the first token's way up ends here */
        trace_instant_at(up, "token", (uint64_t)(i < p->nchunks ? p->chunks[i] : p->done),
                         TRACE_ARGS(TA_STR("text", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "text"))),
                                    TA_INT("index", i), TA_DBL("browser_ms", ms(t, "ms"))));
        i++;
    }
    double first = ntok ? ms(cJSON_GetArrayItem(tokens, 0), "ms") : NAN;
    trace_instant_at(up, "done", (uint64_t)p->done,
                     TRACE_ARGS(TA_DBL("browser_ttft_ms", first), TA_DBL("browser_total_ms", ms(q, "done_ms")),
                                TA_INT("completion_tokens", ntok), TA_STR("finish", finish ? finish : "")));
    return NULL;
}

/* The modeled time between two SSE stamps of this process (-1: none). */
static int64_t modeled_between(cJSON *q) {
    trace_stamp a, b;
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(q, "first_stamp"));
    const char *e = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(q, "last_stamp"));
    if (!s || !e || trace_stamp_read(s, &a) || trace_stamp_read(e, &b) || b.modeled < a.modeled) return -1;
    return (int64_t)(b.modeled - a.modeled);
}

static enum MHD_Result place(web *w, web_req *rq, sqlite3 *db, int64_t req, cJSON *q) {
    placed p = { .req = req, .q = q, .arrive = -1, .done = -1 };
    sqlite3_stmt *st = TSQL_PREP(db, TSQL_WEB_REPORT_EVENTS, w->run, req, 5000);
    int client = 0;
    p.chunks = malloc(5000 * sizeof *p.chunks);
    while (p.chunks && st && sqlite3_step(st) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        int64_t ts = sqlite3_column_int64(st, 1);
        if (!strcmp(name, "http_request")) p.arrive = ts, p.bytes = sqlite3_column_int64(st, 2);
        else if (!strcmp(name, "sse_chunk")) p.chunks[p.nchunks++] = ts;
        else if (!strcmp(name, "sse_done")) p.done = ts;
        else client = 1;
    }
    sqlite3_finalize(st);
    enum MHD_Result r;
    if (!p.chunks) r = web_fail(rq, 500, "server_error", NULL, "out of memory");
    else if (p.arrive < 0) r = web_fail(rq, 404, "request_not_found", NULL, "this server has served no request %lld", (long long)req);
    else if (client) r = web_fail(rq, 409, "already_reported", NULL, "request %lld already has a client's events", (long long)req);
    else if (p.done < 0) r = web_fail(rq, 409, "not_finished", NULL, "request %lld has not finished streaming", (long long)req);
    else if (strlen(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(q, "json"))) > (size_t)p.bytes)
        r = web_fail(rq, 400, "invalid_parameter", "json", "the report's JSON is longer than request %lld's body (%lld bytes)",
                     (long long)req, (long long)p.bytes);
    else if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(q, "tokens")) > p.nchunks)
        r = web_fail(rq, 400, "invalid_parameter", "tokens", "the report has more tokens than request %lld streamed (%d)",
                     (long long)req, p.nchunks);
    else if (trace_clock_is_virtual() && (p.modeled_ns = modeled_between(q)) < 0)
        r = web_fail(rq, 400, "invalid_parameter", "first_stamp",
                     "on a simulated device the report needs the first and last SSE stamps (': hipath-clock ...') it read");
    else {
        if (!trace_clock_is_virtual()) p.modeled_ns = -1;
        snprintf(p.name, sizeof p.name, "browser (request %lld)", (long long)req);
        pthread_t t;
        char err[256];
        if (pthread_create(&t, NULL, record, &p)) r = web_fail(rq, 503, "server_error", NULL, "cannot start a thread");
        else {
            pthread_join(t, NULL);
            r = trace_flush(err, sizeof err) ? web_fail(rq, 500, "server_error", NULL, "%s", err)
                                             : web_json(rq, 200, cJSON_CreateRaw("{\"recorded\":true}"));
        }
    }
    free(p.chunks);
    return r;
}

enum MHD_Result web_report(web *w, web_req *rq, int64_t req, const char *body, size_t len) {
    const char *type = MHD_lookup_connection_value(rq->c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!type || strncmp(type, "application/json", 16))
        return web_fail(rq, 415, "unsupported_media_type", NULL, "Content-Type must be application/json");
    if (!trace_enabled() || !w->db[0]) return web_fail(rq, 503, "no_trace", NULL, "this server records no trace");
    if (len > MAX_REPORT) return web_fail(rq, 413, "request_too_large", NULL, "a report is %zu bytes; the limit is %d", len, MAX_REPORT);
    cJSON *q = cJSON_ParseWithLength(body ? body : "", len);
    const char *bad = check(q);
    if (bad) {
        cJSON_Delete(q);
        return web_fail(rq, 400, "invalid_parameter", bad, q ? "'%s' is missing or out of range" : "the body is not JSON%s", q ? bad : "");
    }
    enum MHD_Result r;
    pthread_mutex_lock(&w->report_mu);   /* check, record and write out as one: a second report sees the first */
    char err[256];
    sqlite3 *db = NULL;
    web_hold(w);
    if (trace_flush(err, sizeof err)) r = web_fail(rq, 500, "server_error", NULL, "%s", err);
    else db = web_db(w, rq, &r);
    if (db) {
        r = place(w, rq, db, req, q);
        sqlite3_close(db);
    }
    pthread_mutex_unlock(&w->report_mu);
    cJSON_Delete(q);
    return r;
}
