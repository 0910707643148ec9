/*
 * web_int.h -- what the files of web/server/ share: the state, replies in
 * the OpenAI error shape, the query's parameters, the database.
 */
#ifndef HIPATH_WEB_INT_H
#define HIPATH_WEB_INT_H

#include "web/server/web.h"
#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <pthread.h>
#include <sqlite3.h>
#include <sys/types.h>

enum { LAB_NONE, LAB_RUNNING, LAB_DONE, LAB_FAILED };

struct web {
    char root[4096];        /* realpath of the static folder */
    int root_fd;            /* opened once: files are opened beneath it */
    char db[4096];          /* the trace database ("" : none) */
    char trace_dir[4096];   /* its folder: the Perfetto exports are made there */
    int64_t run;
    char labs_dir[4096];
    char exe[4096];         /* this program, to run a lab */
    double cap_mb;
    pthread_mutex_t report_mu;   /* one browser report at a time (check, record, flush) */
    /* The lab run started from the page: one at a time, on a thread of its
     * own, so that no connection's thread waits for it. Under lab_mu. */
    pthread_mutex_t lab_mu;
    pthread_t lab_thread;
    int lab_state;               /* LAB_NONE, LAB_RUNNING, LAB_DONE, LAB_FAILED */
    int lab_n;
    char lab_dev[48];
    pid_t lab_pid;               /* the running lab's process, 0 before it starts */
    char lab_err[512];           /* why it failed */
    int lab_stopping;            /* web_close: no lab starts now */
    pthread_t capper;
    int capping;
    pthread_mutex_t cap_mu;
    pthread_cond_t cap_cv;
    int stopping;
};

/* The headers every reply carries (nosniff, no referrer, no framing). */
void web_headers(struct MHD_Response *r);
/* Replies. Each queues a response on c (taking body) and returns MHD's result. */
enum MHD_Result web_reply(struct MHD_Connection *c, int status, const char *type, char *body, size_t len);
enum MHD_Result web_json(struct MHD_Connection *c, int status, cJSON *j);   /* takes j */
/* {"error": {"message", "type", "param", "code"}}, as the /v1/ endpoints refuse. */
enum MHD_Result web_fail(struct MHD_Connection *c, int status, const char *code, const char *param,
                         const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* The query's parameters: every one given must be named here and be a
 * whole number in [lo, hi]; those not given keep *out. 0, or -1 with the
 * 400 queued in *r. */
typedef struct { const char *name; int64_t lo, hi, *out; } web_param;
int web_params(struct MHD_Connection *c, const web_param *ps, int n, enum MHD_Result *r);

/* The trace, read-only. NULL with the 503 queued in *r. */
sqlite3 *web_db(const web *w, struct MHD_Connection *c, enum MHD_Result *r);

/* The routes of each file. */
enum MHD_Result web_static(web *w, struct MHD_Connection *c, const char *method, const char *url);
enum MHD_Result web_api(web *w, struct MHD_Connection *c, const char *method, const char *url,
                        const char *body, size_t len);
enum MHD_Result web_report(web *w, struct MHD_Connection *c, int64_t request, const char *body, size_t len);
enum MHD_Result web_labs(web *w, struct MHD_Connection *c, const char *method, const char *rest);
/* Stops a lab run from the page, if one is going, and waits for its thread. */
void web_labs_stop(web *w);
enum MHD_Result web_perfetto(web *w, struct MHD_Connection *c, int64_t run, int64_t request);

/* The first and last ns of a request's events in run (0 when it has none). */
int web_request_window(sqlite3 *db, int64_t run, int64_t request, int64_t *t0, int64_t *t1);

/* The trace's size cap (cap.c): a thread that deletes the oldest events. */
int  web_cap_start(web *w);
void web_cap_stop(web *w);

#endif
