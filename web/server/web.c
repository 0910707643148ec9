/*
 * web.c -- the web front end's entry: where its files are, and the routes
 * (/api/ to api.c on a worker, work.c; anything else to static.c).
 */
#include "web/server/web_int.h"
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define JOIN_MAX_BYTES 4096   /* {"code", "name"}: a hundred bytes */

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
    pthread_mutex_init(&w->work_mu, NULL);
    pthread_cond_init(&w->work_cv, NULL);
    if (web_workshop_open(w, o, err, errlen)) { web_close(w); return NULL; }
    if (web_work_start(w)) {
        snprintf(err, errlen, "cannot start the web page's workers");
        web_close(w);
        return NULL;
    }
    return w;
}

/* Called again, with *state the job, once a worker has made the answer. */
int web_handle(void *ctx, struct MHD_Connection *c, const char *method, const char *url,
               const char *body, size_t len, int authorized, void **state) {
    web *w = ctx;
    if (*state) return web_work_queue(*state);
    web_req rq = { .c = c, .gzip = web_takes_gzip(c) };
    if (!strncmp(url, "/api/", 5) || !strcmp(url, "/api")) {
        /* a workshop's student: their own requests only (api.c) */
        if (!authorized && w->workshop) rq.student = web_workshop_who(w, c);
        if (!authorized && !rq.student && w->workshop && !strcmp(url, "/api/workshop/join")) {
            /* joining needs no key, so anyone may send it: answered here, a few
             * bytes parsed at most, never queued beside the teacher's work */
            if (len > JOIN_MAX_BYTES) web_fail(&rq, 413, "request_too_large", NULL, "a join is %zu bytes; the limit is %d", len, JOIN_MAX_BYTES);
            else web_api(w, &rq, method, url, body, len);
            return web_queue(&rq);
        }
        authorized = authorized || rq.student;
        if (!authorized)   /* the same key as /v1/: the trace holds every prompt and reply */
            web_fail(&rq, 401, "invalid_api_key", NULL, "Incorrect or missing API key: send the header 'Authorization: Bearer KEY'");
        else {
            int rc = web_work_submit(w, &rq, method, url, body, len, state);
            if (rc == WORK_QUEUED) return MHD_YES;   /* suspended until a worker has answered */
            if (rc == WORK_FULL) web_fail(&rq, 503, "server_busy", NULL, "%d requests to /api/ wait for a worker already: try again", WEB_QUEUE);
            else if (rc == WORK_BUSY && web_fail(&rq, 429, "rate_limit_exceeded", NULL, "%d of your requests to /api/ are under way "
                                                 "already: try again when one is answered", WEB_STUDENT_JOBS) == MHD_YES)
                MHD_add_response_header(rq.resp, "Retry-After", "1");
            else if (rc == WORK_STOPPING) web_fail(&rq, 503, "shutting_down", NULL, "the server is shutting down");
        }
    } else {
        web_static(w, &rq, method, url);   /* a file: quick, done here */
    }
    return web_queue(&rq);
}

void web_handle_done(void *ctx, void *state) {
    (void)ctx;
    web_work_free(state);
}

void web_handle_stop(void *ctx) { web_work_stop(ctx); }

void web_close(web *w) {
    if (!w) return;
    web_work_stop(w);
    web_labs_stop(w);
    web_workshop_close(w);
    if (w->root_fd >= 0) close(w->root_fd);
    pthread_mutex_destroy(&w->report_mu);
    pthread_mutex_destroy(&w->lab_mu);
    pthread_mutex_destroy(&w->work_mu);
    pthread_cond_destroy(&w->work_cv);
    free(w);
}
