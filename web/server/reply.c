/*
 * reply.c -- what every route of web/server/ uses: replies (errors in the
 * OpenAI shape the /v1/ endpoints use), the query's parameters, the trace,
 * the tests' hold on slow work.
 */
#include "web/server/web_int.h"
#include "layers/scheduler/openai.h"
#include "trace/db_error.h"
#include "trace/sql.h"
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void web_headers(struct MHD_Response *r) {
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(r, "X-Frame-Options", "DENY");
}

enum MHD_Result web_answer(web_req *rq, int status, struct MHD_Response *r) {
    if (rq->resp) MHD_destroy_response(rq->resp);
    rq->status = status;
    rq->resp = r;
    return r ? MHD_YES : MHD_NO;
}

enum MHD_Result web_queue(web_req *rq) {
    if (!rq->resp) return MHD_NO;
    enum MHD_Result ok = MHD_queue_response(rq->c, (unsigned)rq->status, rq->resp);
    MHD_destroy_response(rq->resp);
    rq->resp = NULL;
    return ok;
}

enum MHD_Result web_reply(web_req *rq, int status, const char *type, char *body, size_t len) {
    struct MHD_Response *r = web_body(rq, body, len, 1);
    if (r) {
        MHD_add_response_header(r, "Content-Type", type);
        MHD_add_response_header(r, "Cache-Control", "no-store");
        web_headers(r);
    }
    return web_answer(rq, status, r);
}

/* What a workshop's student reads in no answer, wherever it sits: a run's
 * command line (the teacher's options) and where the trace lies on disk. */
static const char *STUDENT_HIDDEN[] = { "command", "db" };

static void hide_from_student(cJSON *j) {
    for (cJSON *c = j ? j->child : NULL, *next; c; c = next) {
        next = c->next;
        int hidden = 0;
        for (size_t i = 0; cJSON_IsObject(j) && i < sizeof STUDENT_HIDDEN / sizeof *STUDENT_HIDDEN; i++)
            hidden |= c->string && !strcmp(c->string, STUDENT_HIDDEN[i]);
        if (hidden) cJSON_Delete(cJSON_DetachItemViaPointer(j, c));
        else if (cJSON_IsObject(c) || cJSON_IsArray(c)) hide_from_student(c);
    }
}

enum MHD_Result web_json(web_req *rq, int status, cJSON *j) {
    if (rq->student) hide_from_student(j);
    char *s = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    if (!s) return web_fail(rq, 500, "server_error", NULL, "out of memory");
    return web_reply(rq, status, "application/json", s, strlen(s));
}

enum MHD_Result web_fail(web_req *rq, int status, const char *code, const char *param, const char *fmt, ...) {
    api_error e = { .status = status, .type = status >= 500 ? "server_error" : "invalid_request_error",
                    .code = code, .param = param };
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.message, sizeof e.message, fmt, ap);
    va_end(ap);
    char *s = api_error_json(&e);
    return s ? web_reply(rq, status, "application/json", s, strlen(s)) : MHD_NO;
}

/* ---- parameters ---- */

/* The one parser of the query: every name at most once (a repeated one is
 * refused, not read first here and last there), each named one a whole
 * number in its range; others are refused unless `any`. */
#define MAX_NAMES 16
typedef struct { const web_param *ps; int n, any, nseen; const char *seen[MAX_NAMES]; char bad[160]; } param_check;

static enum MHD_Result check_param(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    (void)kind;
    param_check *k = cls;
    for (int i = 0; i < k->nseen; i++)
        if (!strcmp(k->seen[i], key)) {
            snprintf(k->bad, sizeof k->bad, "parameter '%.40s' is given more than once", key);
            return MHD_NO;
        }
    if (k->nseen == MAX_NAMES) { snprintf(k->bad, sizeof k->bad, "more than %d parameters", MAX_NAMES); return MHD_NO; }
    k->seen[k->nseen++] = key;
    for (int i = 0; i < k->n; i++) {
        if (strcmp(key, k->ps[i].name)) continue;
        char *end;
        long long v = value ? strtoll(value, &end, 10) : 0;
        if (!value || !*value || *end || v < k->ps[i].lo || v > k->ps[i].hi) {
            snprintf(k->bad, sizeof k->bad, "%.40s must be a whole number from %lld to %lld, got '%.40s'", key,
                     (long long)k->ps[i].lo, (long long)k->ps[i].hi, value ? value : "");
            return MHD_NO;
        }
        *k->ps[i].out = v;
        return MHD_YES;
    }
    if (k->any) return MHD_YES;
    snprintf(k->bad, sizeof k->bad, "unknown parameter '%.40s'", key);
    return MHD_NO;
}

static int params(web_req *rq, const web_param *ps, int n, int any, enum MHD_Result *r) {
    param_check k = { .ps = ps, .n = n, .any = any };
    MHD_get_connection_values(rq->c, MHD_GET_ARGUMENT_KIND, check_param, &k);
    if (!k.bad[0]) return 0;
    *r = web_fail(rq, 400, "invalid_parameter", NULL, "%s", k.bad);
    return -1;
}

int web_params(web_req *rq, const web_param *ps, int n, enum MHD_Result *r) { return params(rq, ps, n, 0, r); }
int web_params_some(web_req *rq, const web_param *ps, int n, enum MHD_Result *r) { return params(rq, ps, n, 1, r); }

cJSON *web_column(sqlite3_stmt *st, int col) {
    int t = sqlite3_column_type(st, col);
    return t == SQLITE_NULL ? cJSON_CreateNull() : t == SQLITE_TEXT ? cJSON_CreateString((const char *)sqlite3_column_text(st, col))
                                                                    : cJSON_CreateNumber(sqlite3_column_double(st, col));
}

cJSON *web_row(sqlite3_stmt *st, const char *const *keys, int n) {
    cJSON *o = cJSON_CreateObject();
    for (int i = 0; i < n; i++) cJSON_AddItemToObject(o, keys[i], web_column(st, i));
    return o;
}

sqlite3 *web_db(const web *w, web_req *rq, enum MHD_Result *r) {
    sqlite3 *db = NULL;
    if (!w->db[0]) {
        *r = web_fail(rq, 503, "no_trace", NULL, "this server records no trace (started with --no-trace)");
        return NULL;
    }
    if (sqlite3_open_v2(w->db, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        char why[256];
        *r = web_fail(rq, 503, "no_trace", NULL, "the trace cannot be opened: %s", trace_db_why(db, why, sizeof why));
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_busy_timeout(db, 5000);
    return db;
}

static int window(sqlite3 *db, int64_t run, int64_t request, int max_layer, int64_t *t0, int64_t *t1) {
    sqlite3_stmt *st = TSQL_PREP(db, TSQL_WEB_REQUEST_WINDOW, run, request, max_layer);
    int ok = st && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL;
    if (ok) { *t0 = sqlite3_column_int64(st, 0); *t1 = sqlite3_column_int64(st, 1); }
    sqlite3_finalize(st);
    return ok ? 0 : -1;
}

int web_request_window(sqlite3 *db, int64_t run, int64_t request, int64_t *t0, int64_t *t1) {
    return window(db, run, request, 8, t0, t1);
}

int web_server_window(sqlite3 *db, int64_t run, int64_t request, int64_t *t0, int64_t *t1) {
    return window(db, run, request, 7, t0, t1);
}

enum MHD_Result web_no_request(const web *w, web_req *rq, sqlite3 *db, int64_t run, int64_t request) {
    int64_t oldest = trace_sql_scalar(db, TSQL_WEB_OLDEST_REQUEST, 1, &run, -1);
    if (w->cap_mb > 0 && request < oldest)
        return web_fail(rq, 404, "request_not_found", NULL, "run %lld's request %lld was deleted to keep the trace under its cap"
                        " (--trace-cap-mb %g); the oldest request it keeps is %lld", (long long)run, (long long)request, w->cap_mb,
                        (long long)oldest);
    return web_fail(rq, 404, "request_not_found", NULL, "run %lld has no request %lld (%s)", (long long)run, (long long)request,
                    w->cap_mb > 0 ? "not written yet, or deleted to keep the trace under its cap" : "not written yet");
}

/* Tests only: the slow work waits until the test writes a line to the
 * FIFO, so a test can hold it for as long as it takes to show that other
 * requests are answered meanwhile, whatever the machine's load. Opening
 * the FIFO is what tells the test (its open for writing returns) that the
 * slow work has begun. */
void web_hold(const web *w) {
    if (!w->hold[0]) return;
    int fd = open(w->hold, O_RDONLY | O_CLOEXEC);
    char ch;
    if (fd < 0) return;
    while (read(fd, &ch, 1) == 1 && ch != '\n') {}
    close(fd);
}
