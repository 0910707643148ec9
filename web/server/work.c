/*
 * work.c -- every /api/ request is answered on a worker thread. Its work
 * may be slow: a Perfetto export, the report's flush of the trace, a query
 * over 96,000 events, SQLite waiting out the writer. On the connection's
 * thread it would hold every other connection that thread polls
 * (libmicrohttpd shares the sockets among a few threads: server.c). So the
 * connection is suspended, a worker makes the response and resumes it, and
 * the connection's own thread queues the response (web_handle is called
 * again with the job: the seam in layers/scheduler/server.h).
 *
 * The worker reads the query and headers from the suspended connection:
 * its thread leaves it alone until it is resumed, and they were parsed
 * before the handler was first called.
 */
#include "web/server/web_int.h"
#include <stdio.h>
#include <stdlib.h>

struct web_job {
    web_req rq;
    const char *method, *url, *body;   /* the connection's: valid until the request is over */
    size_t len;
    struct web_job *next;
};

/* Under work_mu: the next job a worker may take. The teacher's (and any
 * key's but a student's) first; a student's only while another worker is
 * left for the teacher, so a room's loops never hold the teacher's page. */
static struct web_job *next_job(web *w) {
    int q = w->queue[0] ? 0 : w->queue[1] && w->busy_students < WEB_WORKERS - 1 ? 1 : -1;
    if (q < 0) return NULL;
    struct web_job *j = w->queue[q];
    if (!(w->queue[q] = j->next)) w->queue_end[q] = &w->queue[q];
    w->queued[q]--;
    return j;
}

static void *worker(void *arg) {
    web *w = arg;
    pthread_mutex_lock(&w->work_mu);
    for (;;) {
        struct web_job *j;
        while (!(j = next_job(w)) && !(w->work_stopping && !w->queue[0] && !w->queue[1])) pthread_cond_wait(&w->work_cv, &w->work_mu);
        if (!j) break;   /* stopping, and nothing waits */
        int stopping = w->work_stopping, student = j->rq.student;
        w->busy_students += student > 0;
        pthread_mutex_unlock(&w->work_mu);
        if (stopping) web_fail(&j->rq, 503, "shutting_down", NULL, "the server is shutting down");
        else web_api(w, &j->rq, j->method, j->url, j->body, j->len);
        pthread_mutex_lock(&w->work_mu);
        w->busy_students -= student > 0;
        if (student > 0) web_workshop_api_done(w, student);
        pthread_cond_broadcast(&w->work_cv);   /* a student's job may wait for this worker */
        pthread_mutex_unlock(&w->work_mu);
        MHD_resume_connection(j->rq.c);   /* j is the connection's again: not touched here after this */
        pthread_mutex_lock(&w->work_mu);
    }
    pthread_mutex_unlock(&w->work_mu);
    return NULL;
}

/* work_mu and work_cv are web_open's, destroyed by web_close. */
int web_work_start(web *w) {
    const char *hold = getenv("HIPATH_WEB_HOLD");
    if (hold) snprintf(w->hold, sizeof w->hold, "%s", hold);
    for (int q = 0; q < 2; q++) w->queue_end[q] = &w->queue[q];
    while (w->n_workers < WEB_WORKERS && !pthread_create(&w->workers[w->n_workers], NULL, worker, w)) w->n_workers++;
    return w->n_workers ? 0 : -1;
}

int web_work_submit(web *w, web_req *rq, const char *method, const char *url, const char *body, size_t len,
                    void **state) {
    struct web_job *j = calloc(1, sizeof *j);
    if (!j) return WORK_FULL;
    *j = (struct web_job){ .rq = *rq, .method = method, .url = url, .body = body, .len = len };
    int q = rq->student > 0;
    pthread_mutex_lock(&w->work_mu);
    int rc = w->work_stopping ? WORK_STOPPING : w->queued[q] >= WEB_QUEUE ? WORK_FULL
           : q && web_workshop_api_start(w, rq->student) ? WORK_BUSY : WORK_QUEUED;
    if (rc == WORK_QUEUED) {
        MHD_suspend_connection(rq->c);   /* before a worker can resume it */
        *w->queue_end[q] = j;
        w->queue_end[q] = &j->next;
        w->queued[q]++;
        *state = j;
        pthread_cond_broadcast(&w->work_cv);
    }
    pthread_mutex_unlock(&w->work_mu);
    if (rc != WORK_QUEUED) free(j);
    return rc;
}

void web_work_stop(web *w) {
    pthread_mutex_lock(&w->work_mu);
    w->work_stopping = 1;   /* web_work_submit refuses from here on; what waits is answered 503 */
    pthread_cond_broadcast(&w->work_cv);
    pthread_mutex_unlock(&w->work_mu);
    for (int i = 0; i < w->n_workers; i++) pthread_join(w->workers[i], NULL);
    w->n_workers = 0;
}

enum MHD_Result web_work_queue(void *job) { return web_queue(&((struct web_job *)job)->rq); }

void web_work_free(void *job) {
    struct web_job *j = job;
    if (j->rq.resp) MHD_destroy_response(j->rq.resp);
    free(j);
}
