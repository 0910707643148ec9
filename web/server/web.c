/*
 * web.c -- the web front end's entry: where its files are, the routes
 * (/api/ to api.c, anything else to static.c), replies and parameters.
 */
#include "web/server/web_int.h"
#include "layers/scheduler/openai.h"
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
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

enum MHD_Result web_reply(struct MHD_Connection *c, int status, const char *type, char *body, size_t len) {
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r) { free(body); return MHD_NO; }
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    web_headers(r);
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

enum MHD_Result web_json(struct MHD_Connection *c, int status, cJSON *j) {
    char *s = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    if (!s) return web_fail(c, 500, "server_error", NULL, "out of memory");
    return web_reply(c, status, "application/json", s, strlen(s));
}

enum MHD_Result web_fail(struct MHD_Connection *c, int status, const char *code, const char *param, const char *fmt, ...) {
    api_error e = { .status = status, .type = status >= 500 ? "server_error" : "invalid_request_error",
                    .code = code, .param = param };
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.message, sizeof e.message, fmt, ap);
    va_end(ap);
    char *s = api_error_json(&e);
    return s ? web_reply(c, status, "application/json", s, strlen(s)) : MHD_NO;
}

/* ---- parameters ---- */

typedef struct { const web_param *ps; int n; char bad[160]; } param_check;

static enum MHD_Result check_param(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    (void)kind;
    param_check *k = cls;
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
    snprintf(k->bad, sizeof k->bad, "unknown parameter '%.40s'", key);
    return MHD_NO;
}

int web_params(struct MHD_Connection *c, const web_param *ps, int n, enum MHD_Result *r) {
    param_check k = { ps, n, "" };
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, check_param, &k);
    if (!k.bad[0]) return 0;
    *r = web_fail(c, 400, "invalid_parameter", NULL, "%s", k.bad);
    return -1;
}

sqlite3 *web_db(const web *w, struct MHD_Connection *c, enum MHD_Result *r) {
    sqlite3 *db = NULL;
    if (!w->db[0]) {
        *r = web_fail(c, 503, "no_trace", NULL, "this server records no trace (started with --no-trace)");
        return NULL;
    }
    if (sqlite3_open_v2(w->db, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        *r = web_fail(c, 503, "no_trace", NULL, "the trace cannot be opened: %s", sqlite3_errmsg(db));
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_busy_timeout(db, 5000);
    return db;
}

/* ---- open, route, close ---- */

/* The static folder: given, else web/static beside the executable (build/
 * or build/asan/), else in the working directory. */
static int find_root(web *w, const char *given, char *err, int errlen) {
    char cand[3][PATH_MAX + 32], exe_dir[PATH_MAX];
    int n = 0;
    if (given) snprintf(cand[n++], sizeof cand[0], "%s", given);
    else {
        snprintf(exe_dir, sizeof exe_dir, "%s", w->exe);
        char *d = dirname(exe_dir);
        snprintf(cand[n++], sizeof cand[0], "%s/../web/static", d);
        snprintf(cand[n++], sizeof cand[0], "%s/../../web/static", d);
        snprintf(cand[n++], sizeof cand[0], "web/static");
    }
    for (int i = 0; i < n; i++)
        if (realpath(cand[i], w->root) && (w->root_fd = open(w->root, O_PATH | O_DIRECTORY | O_CLOEXEC)) >= 0) return 0;
    snprintf(err, errlen, "%s: no folder of web pages (give one with --web DIR)", cand[0]);
    return -1;
}

web *web_open(const web_opts *o, char *err, int errlen) {
    web *w = calloc(1, sizeof *w);
    if (!w) { snprintf(err, errlen, "out of memory"); return NULL; }
    w->root_fd = -1;
    ssize_t k = readlink("/proc/self/exe", w->exe, sizeof w->exe - 1);
    w->exe[k > 0 ? k : 0] = 0;
    if (find_root(w, o->root, err, errlen)) { free(w); return NULL; }
    if (o->db && !realpath(o->db, w->db)) snprintf(w->db, sizeof w->db, "%s", o->db);
    snprintf(w->trace_dir, sizeof w->trace_dir, "%s", w->db);
    char *slash = strrchr(w->trace_dir, '/');
    if (slash) *slash = 0; else snprintf(w->trace_dir, sizeof w->trace_dir, ".");
    w->run = o->run;
    snprintf(w->labs_dir, sizeof w->labs_dir, "%s", o->labs_dir ? o->labs_dir : "labs/out");
    w->cap_mb = o->cap_mb;
    pthread_mutex_init(&w->report_mu, NULL);
    pthread_mutex_init(&w->lab_mu, NULL);
    if (w->db[0] && w->cap_mb > 0 && web_cap_start(w)) {
        snprintf(err, errlen, "cannot start the trace's size cap");
        web_close(w);
        return NULL;
    }
    return w;
}

const char *web_root(const web *w) { return w->root; }

int web_handle(void *ctx, struct MHD_Connection *c, const char *method, const char *url,
               const char *body, size_t len, int authorized) {
    web *w = ctx;
    if (!strncmp(url, "/api/", 5) || !strcmp(url, "/api")) {
        if (!authorized)   /* the same key as /v1/: the trace holds every prompt and reply */
            return web_fail(c, 401, "invalid_api_key", NULL,
                            "Incorrect or missing API key: send the header 'Authorization: Bearer KEY'");
        return web_api(w, c, method, url, body, len);
    }
    return web_static(w, c, method, url);
}

void web_close(web *w) {
    if (!w) return;
    web_cap_stop(w);
    if (w->root_fd >= 0) close(w->root_fd);
    pthread_mutex_destroy(&w->report_mu);
    pthread_mutex_destroy(&w->lab_mu);
    free(w);
}
