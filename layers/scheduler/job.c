/* job.c -- one API request between its connection and the engine thread. */
#include "layers/scheduler/job.h"
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

static void *grow(void *p, size_t n) {
    void *q = realloc(p, n);
    if (!q) { fprintf(stderr, "hipath: out of memory (%zu bytes)\n", n); abort(); }
    return q;
}

job *job_new(api_request *q, const text_codec *text, const char *model, int64_t id, struct MHD_Connection *c) {
    job *j = grow(NULL, sizeof *j);
    memset(j, 0, sizeof *j);
    j->q = *q;
    memset(q, 0, sizeof *q);
    pthread_mutex_init(&j->mu, NULL);
    j->refs = 1;
    j->first = j->q.chat;
    j->a = (api_reply){ .chat = j->q.chat, .created = (long)time(NULL), .model = model, .text = text,
                        .top_logprobs = j->q.top_logprobs };
    snprintf(j->a.id, sizeof j->a.id, "%s-%lld", j->q.chat ? "chatcmpl" : "cmpl", (long long)id);
    j->r.id = id;
    if (!(j->dec = text->decoder(text->ctx))) { fprintf(stderr, "hipath: out of memory (a decoder)\n"); abort(); }
    j->text = grow(NULL, j->cap = 256);
    j->text[0] = 0;
    j->conn = c;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    j->fd = ci ? ci->connect_fd : -1;
    return j;
}

void job_keep(job *j) {
    pthread_mutex_lock(&j->mu);
    j->refs++;
    pthread_mutex_unlock(&j->mu);
}

void job_unref(job *j) {
    pthread_mutex_lock(&j->mu);
    int left = --j->refs;
    pthread_mutex_unlock(&j->mu);
    if (left) return;
    api_request_free(&j->q);
    pthread_mutex_destroy(&j->mu);
    j->a.text->decoder_free(j->dec);
    free(j->prompt); free(j->text); free(j->toks); free(j->tok_end); free(j->tok_at); free(j->out);
    free(j);
}

void job_release(job *j) {
    atomic_store(&j->r.cancel, 1);
    pthread_mutex_lock(&j->mu);
    j->released = 1;
    pthread_mutex_unlock(&j->mu);
    job_unref(j);
}

void job_suspend(job *j) {
    j->suspended = 1;
    j->suspended_at = trace_host_seconds();
    MHD_suspend_connection(j->conn);
}

/* Under mu: whether the suspended connection has news now; if so it is no
 * longer marked suspended, and the caller resumes it after unlocking (no
 * one else will: the flag is cleared here). */
static int news_for(job *j) {
    if (!j->suspended || !(j->done || j->q.stream)) return 0;
    j->suspended = 0;
    return 1;
}

int job_keepalive(job *j, double now, double after) {
    pthread_mutex_lock(&j->mu);
    int keep = !j->released, wake = j->suspended && now - j->suspended_at >= after;
    if (wake) j->suspended = 0, j->keepalive_due = 1;
    pthread_mutex_unlock(&j->mu);
    if (wake) MHD_resume_connection(j->conn);
    return keep;
}

/* The engine asks before each step: has the client of a suspended
 * connection hung up? (MHD does not look at a suspended connection; a
 * peek at its socket that reads the end of the stream says so.) */
static int client_gone(request *r, void *user) {
    job *j = user;
    (void)r;
    char b;
    pthread_mutex_lock(&j->mu);
    ssize_t n = j->suspended && j->fd >= 0 ? recv(j->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) : 1;
    int gone = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
    pthread_mutex_unlock(&j->mu);
    return gone;
}

/* Append text (mu held); cut it at the first stop string. 1 if one matched. */
static int add_text(job *j, const char *s, size_t n) {
    size_t from = j->len;
    if (j->len + n + 1 > j->cap) j->text = grow(j->text, j->cap = 2 * (j->len + n + 1));
    memcpy(j->text + j->len, s, n);
    j->len += n;
    j->text[j->len] = 0;
    const char *hit = NULL;
    for (int i = 0; i < j->q.n_stop; i++) {
        size_t sl = strlen(j->q.stop[i]), start = from >= sl - 1 ? from - (sl - 1) : 0;
        const char *p = memmem(j->text + start, j->len - start, j->q.stop[i], sl);
        if (p && (!hit || p < hit)) hit = p;
    }
    if (!hit) return 0;
    j->len = hit - j->text;
    j->text[j->len] = 0;
    for (int k = j->n_toks - 1; k >= 0 && j->tok_end[k] > (int)j->len; k--) j->tok_end[k] = (int)j->len;
    return j->stopped = 1;
}

static int on_token(request *r, const sample_result *s, void *user) {
    job *j = user;
    /* The end of the turn is not text; under ignore_eos it is still a
     * completion token that usage counts, so it keeps its logprobs entry. */
    int eot = is_stop_id(j->stop_ids, j->n_stop_ids, s->id);
    if (eot && !j->q.ignore_eos) return 0;
    size_t n = 0;
    /* layer 7, through the table server_opts.open_text filled (layers/tokenizer/open.c) */
    const char *piece = eot ? "" : j->a.text->decode(j->dec, s->id, &n, r->id, r->n_out - 1);
    if (!piece) piece = "", n = 0;   /* an id outside the vocabulary: no text */
    pthread_mutex_lock(&j->mu);
    if (j->n_toks == j->cap_toks) {
        j->cap_toks = 2 * j->cap_toks + 16;
        j->toks = grow(j->toks, j->cap_toks * sizeof *j->toks);
        j->tok_end = grow(j->tok_end, j->cap_toks * sizeof *j->tok_end);
        j->tok_at = grow(j->tok_at, j->cap_toks * sizeof *j->tok_at);
    }
    j->tok_at[j->n_toks] = trace_clock_stamp();
    j->toks[j->n_toks] = *s;
    j->tok_end[j->n_toks++] = (int)(j->len + n);
    int stop = add_text(j, piece, n), wake = news_for(j);
    pthread_mutex_unlock(&j->mu);
    if (wake) MHD_resume_connection(j->conn);
    return stop;
}

static void on_done(request *r, void *user) {
    (void)r;
    job *j = user;
    pthread_mutex_lock(&j->mu);
    size_t n = 0;
    const char *tail = j->a.text->flush(j->dec, &n);
    if (tail && n > 0 && !j->stopped) add_text(j, tail, n);
    j->done_at = trace_clock_stamp();
    j->done = 1;
    int wake = news_for(j);
    pthread_mutex_unlock(&j->mu);
    if (wake) MHD_resume_connection(j->conn);
    job_unref(j);
}

int job_submit(job *j, engine *e, char *err, int errlen) {
    j->r.on_token = on_token;
    j->r.on_done = on_done;
    j->r.client_gone = client_gone;
    j->r.user = j;
    j->refs++;   /* before: the engine may be done with it before submit returns */
    int rc = engine_submit(e, &j->r, err, errlen);
    if (rc) j->refs--;
    return rc;
}

/* The text that is safe to send: while running, all but what could still
 * become a stop string, cut at a character boundary; at the end, all of
 * it. Of that, one token's text: up to the first token that adds any. */
job_news job_news_now(const job *j) {
    size_t end = j->len, hold = 0;
    for (int i = 0; i < j->q.n_stop; i++) if (strlen(j->q.stop[i]) - 1 > hold) hold = strlen(j->q.stop[i]) - 1;
    if (!j->done) {
        end = end > j->sent + hold ? end - hold : j->sent;
        while (end > j->sent && (j->text[end] & 0xC0) == 0x80) end--;
    }
    int k = j->toks_sent;
    trace_stamp at = { 0, 0 };
    while (k < j->n_toks && j->tok_end[k] <= (int)end) {
        at = j->tok_at[k];
        if (j->tok_end[k++] > (int)j->sent) return (job_news){ .end = j->tok_end[k - 1], .n_toks = k, .at = at };
    }
    return (job_news){ .end = end, .n_toks = k, .done = j->done && k == j->n_toks, .at = j->done ? j->done_at : at };
}

const char *job_finish(const job *j) { return j->stopped ? "stop" : j->r.finish; }
