/*
 * web_int.h -- what the files of web/server/ share: the state, the
 * request as the handlers see it, replies (errors in the OpenAI shape),
 * the query's parameters, the database.
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
#define WEB_WORKERS 4            /* threads that answer /api/ (work.c); students' requests take all but one */
#define WEB_QUEUE 64             /* /api/ requests waiting for one, the teacher's and the students' each; past it 503 */
#define WEB_STUDENT_JOBS 4       /* a student's /api/ requests waiting or answered at once; past it 429 */

struct web {
    char root[4096];        /* realpath of the static folder */
    int root_fd;            /* opened once: files are opened beneath it */
    char db[4096];          /* the trace database ("" : none) */
    char trace_dir[4096];   /* its folder: the Perfetto exports are made there */
    int64_t run;
    char labs_dir[4096];
    char exe[4096];         /* this program, to run a lab */
    double cap_mb;          /* the trace's cap, shown (the trace keeps it: trace_keep_under) */
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
    int stopping;
    /* The workers that answer /api/ (work.c), and their queue. Under work_mu. */
    pthread_mutex_t work_mu;
    pthread_cond_t work_cv;
    pthread_t workers[WEB_WORKERS];
    int n_workers;
    struct web_job *queue[2], **queue_end[2];   /* [0] the teacher's (any key but a student's), [1] the students' */
    int queued[2];
    int busy_students;           /* workers answering a student */
    int work_stopping;
    char hold[4096];             /* HIPATH_WEB_HOLD: a FIFO the slow work waits on (tests only; web_hold) */
    struct web_workshop *workshop;   /* --workshop: the students (workshop.c); NULL otherwise */
};

/* One request as its handler sees it. The handler reads the query and
 * headers from c and makes the response; only c's own thread queues it
 * (web_queue), whichever thread made it. */
typedef struct {
    struct MHD_Connection *c;
    int gzip;                    /* the client takes gzip (Accept-Encoding: web_takes_gzip) */
    int student;                 /* a workshop's student sent it (index + 1): their own requests only; 0: full access */
    int status;
    struct MHD_Response *resp;   /* NULL: none made (out of memory): the connection is closed */
} web_req;

/* The response rq answers with (taken); MHD_NO when r is NULL. */
enum MHD_Result web_answer(web_req *rq, int status, struct MHD_Response *r);
/* Queue rq's response on its connection, on that connection's thread. */
enum MHD_Result web_queue(web_req *rq);

/* The headers every reply carries (nosniff, no referrer, no framing). */
void web_headers(struct MHD_Response *r);
/* Replies. Each makes rq's response (taking body) and returns MHD_YES, or MHD_NO when out of memory. */
enum MHD_Result web_reply(web_req *rq, int status, const char *type, char *body, size_t len);
enum MHD_Result web_json(web_req *rq, int status, cJSON *j);   /* takes j */
/* {"error": {"message", "type", "param", "code"}}, as the /v1/ endpoints refuse. */
enum MHD_Result web_fail(web_req *rq, int status, const char *code, const char *param,
                         const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Content-Encoding (gzip.c). Does the request's Accept-Encoding take gzip? */
int web_takes_gzip(struct MHD_Connection *c);
/* A response with body (taken), gzip-compressed when rq->gzip and it pays;
 * compresses: a type gzip makes smaller (else sent as it is, and no Vary). */
struct MHD_Response *web_body(const web_req *rq, char *body, size_t len, int compresses);
/* ... with the file fd's size bytes (fd taken). */
struct MHD_Response *web_file(const web_req *rq, int fd, uint64_t size, int compresses);

/* The query's parameters: every one given must be named here, given once,
 * and be a whole number in [lo, hi]; those not given keep *out. 0, or -1
 * with the 400 made in *r. web_params_some: others may be given too (each
 * once), for a check that reads a few before the route reads them all. */
typedef struct { const char *name; int64_t lo, hi, *out; } web_param;
int web_params(web_req *rq, const web_param *ps, int n, enum MHD_Result *r);
int web_params_some(web_req *rq, const web_param *ps, int n, enum MHD_Result *r);

/* A column of the current row as JSON: null, a string or a number; a row's
 * first n columns as an object with those keys. */
cJSON *web_column(sqlite3_stmt *st, int col);
cJSON *web_row(sqlite3_stmt *st, const char *const *keys, int n);

/* The trace, read-only. NULL with the 503 made in *r. */
sqlite3 *web_db(const web *w, web_req *rq, enum MHD_Result *r);

/* The routes of each file. */
enum MHD_Result web_static(web *w, web_req *rq, const char *method, const char *url);
enum MHD_Result web_api(web *w, web_req *rq, const char *method, const char *url,
                        const char *body, size_t len);
enum MHD_Result web_report(web *w, web_req *rq, int64_t request, const char *body, size_t len);
enum MHD_Result web_labs(web *w, web_req *rq, const char *method, const char *rest);
/* Stops a lab run from the page, if one is going, and waits for its thread. */
void web_labs_stop(web *w);
enum MHD_Result web_perfetto(web *w, web_req *rq, int64_t run, int64_t request);

/* The workers (work.c): every /api/ request is answered on one, its
 * connection suspended meanwhile, so that slow work (an export, a flush,
 * a long query) holds no connection's thread. WORK_QUEUED: rq's
 * connection is suspended and *state is the job. */
enum { WORK_QUEUED, WORK_FULL, WORK_BUSY, WORK_STOPPING };   /* WORK_BUSY: the student has WEB_STUDENT_JOBS going */
int  web_work_start(web *w);
int  web_work_submit(web *w, web_req *rq, const char *method, const char *url, const char *body, size_t len,
                     void **state);
/* The server is stopping: what waits is answered 503, what runs finishes,
 * every connection is resumed, and no request is taken after. Once or more. */
void web_work_stop(web *w);
/* Once the job's connection is resumed, on its thread: queue the answer. */
enum MHD_Result web_work_queue(void *job);
void web_work_free(void *job);
/* Tests only: with HIPATH_WEB_HOLD=FIFO, slow work first waits for a line on FIFO. */
void web_hold(const web *w);

/* The first and last ns of a request's events in run (0 when it has none);
 * web_server_window: of the server's own (layers 7 and below), not the
 * client's, whose report places them (report.c): what authorizes a
 * student's read of an event of no request. */
int web_request_window(sqlite3 *db, int64_t run, int64_t request, int64_t *t0, int64_t *t1);
int web_server_window(sqlite3 *db, int64_t run, int64_t request, int64_t *t0, int64_t *t1);
/* 404 for a request the trace does not hold: deleted under the cap, or not written yet. */
enum MHD_Result web_no_request(const web *w, web_req *rq, sqlite3 *db, int64_t run, int64_t request);

/* The workshop (workshop.c). who: the student whose Bearer key c sent
 * (index + 1), 0 for none; owner: the student who sent request (of the
 * served run), 0 for none (the teacher, or not a workshop's); ids: that
 * student's request ids below before, newest first. */
int  web_workshop_open(web *w, const web_opts *o, char *err, int errlen);
void web_workshop_close(web *w);
int  web_workshop_who(web *w, struct MHD_Connection *c);
int  web_workshop_owner(web *w, int64_t request);
int  web_workshop_ids(web *w, int who, int64_t before, int64_t *out, int max);
int  web_workshop_max_tokens(const web *w);   /* a student's request's cap (0: none) */
/* A student's /api/ request starts (0; -1: WEB_STUDENT_JOBS of theirs are going already) and ends. */
int  web_workshop_api_start(web *w, int who);
void web_workshop_api_done(web *w, int who);
enum MHD_Result web_workshop_api(web *w, web_req *rq, const char *method, const char *rest, const char *body, size_t len);


#endif
