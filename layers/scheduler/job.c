/* job.c -- one API request between its connection and the engine thread. */
#include "layers/scheduler/job.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *grow(void *p, size_t n) {
    void *q = realloc(p, n);
    if (!q) { fprintf(stderr, "hipath: out of memory (%zu bytes)\n", n); abort(); }
    return q;
}

job *job_new(api_request *q, const text_codec *text, const char *model, int64_t id) {
    job *j = grow(NULL, sizeof *j);
    memset(j, 0, sizeof *j);
    j->q = *q;
    memset(q, 0, sizeof *q);
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    j->refs = 1;
    j->first = j->q.chat;
    j->a = (api_reply){ .chat = j->q.chat, .created = (long)time(NULL), .model = model, .text = text,
                        .top_logprobs = j->q.top_logprobs };
    snprintf(j->a.id, sizeof j->a.id, "%s-%lld", j->q.chat ? "chatcmpl" : "cmpl", (long long)id);
    j->r.id = id;
    if (!(j->dec = text->decoder(text->ctx))) { fprintf(stderr, "hipath: out of memory (a decoder)\n"); abort(); }
    j->text = grow(NULL, j->cap = 256);
    j->text[0] = 0;
    return j;
}

static void unref(job *j) {
    pthread_mutex_lock(&j->mu);
    int left = --j->refs;
    pthread_mutex_unlock(&j->mu);
    if (left) return;
    api_request_free(&j->q);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    j->a.text->decoder_free(j->dec);
    free(j->prompt); free(j->text); free(j->toks); free(j->tok_end); free(j->tok_at); free(j->out);
    free(j);
}

void job_release(job *j) {
    atomic_store(&j->r.cancel, 1);
    unref(j);
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
    if (is_stop_id(j->stop_ids, j->n_stop_ids, s->id)) return 0;   /* the end of the turn is not text */
    size_t n = 0;
    const char *piece = j->a.text->decode(j->dec, s->id, &n, r->id, r->n_out - 1);
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
    int stop = add_text(j, piece, n);
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
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
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
    unref(j);
}

int job_submit(job *j, engine *e, char *err, int errlen) {
    j->r.on_token = on_token;
    j->r.on_done = on_done;
    j->r.user = j;
    j->refs++;   /* before: the engine may be done with it before submit returns */
    int rc = engine_submit(e, &j->r, err, errlen);
    if (rc) j->refs--;
    return rc;
}

/* The text that is safe to send: while running, all but what could still
 * become a stop string, cut at a character boundary; at the end, all of
 * it. Of that, one token's text: up to the first token that adds any. */
static job_news news(const job *j) {
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

job_news job_wait(job *j, double wait_s) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    long long ns = until.tv_nsec + (long long)(wait_s * 1e9);
    until.tv_sec += ns / 1000000000;
    until.tv_nsec = ns % 1000000000;
    for (;;) {
        job_news n = news(j);
        if (n.done || n.end > j->sent) return n;
        if (pthread_cond_timedwait(&j->cv, &j->mu, &until) == ETIMEDOUT) return news(j);
    }
}

const char *job_finish(const job *j) { return j->stopped ? "stop" : j->r.finish; }
