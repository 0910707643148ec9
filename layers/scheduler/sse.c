/*
 * sse.c -- the body of a streaming response as Server-Sent Events:
 * `data: {chunk}` and a blank line per piece of text, `data: [DONE]` last.
 * MHD calls sse_read on one of its threads whenever the socket can take
 * more; with nothing to send, the connection is suspended until the engine
 * has a token (or a keep-alive comment is due) and resumes it.
 */
#include "layers/scheduler/job.h"
#include "trace/trace.h"
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

static void put(job *j, const char *s, size_t n) {
    if (j->out_len + n > j->out_cap) {
        j->out_cap = 2 * (j->out_len + n);
        if (!(j->out = realloc(j->out, j->out_cap))) abort();
    }
    memcpy(j->out + j->out_len, s, n);
    j->out_len += n;
}

/* Under a virtual clock, each event is preceded by the time it left as an
 * SSE comment (clients ignore comments; hipath's own client in this
 * process reads it: trace_stamp_read). */
static void event(job *j, char *json) {
    char stamp[96];
    if (!trace_stamp_write(stamp, sizeof stamp)) {
        put(j, ": hipath-clock ", 15);
        put(j, stamp, strlen(stamp));
        put(j, "\n", 1);
    }
    put(j, "data: ", 6);
    put(j, json, strlen(json));
    put(j, "\n\n", 2);
    free(json);
}

/* The next events: the role chunk, new text, a keep-alive comment, or the
 * end. 0 when there is nothing yet: the connection is then suspended. */
static int fill(job *j) {
    trace_where w = trace_at(L_SCHEDULER, DIR_UP, j->r.id, NO_STEP);
    if (j->first) {
        j->first = 0;
        event(j, api_chunk(&j->a, 1, "", NULL, NULL));
        return 1;
    }
    pthread_mutex_lock(&j->mu);
    job_news n = job_news_now(j);
    if (!n.done && n.end <= j->sent) {
        int keepalive = j->keepalive_due;
        j->keepalive_due = 0;
        if (!keepalive) job_suspend(j);
        pthread_mutex_unlock(&j->mu);
        if (keepalive) put(j, ": keepalive\n\n", 13);
        return keepalive;
    }
    trace_clock_receive(n.at);   /* the token was ready then: nothing is sent before */
    size_t from = j->sent;
    char *text = strndup(j->text + from, n.end - from);
    cJSON *lp = j->q.logprobs && n.n_toks > j->toks_sent
                ? api_logprobs(&j->a, j->toks + j->toks_sent, n.n_toks - j->toks_sent, (int)from) : NULL;
    j->sent = n.end;
    j->toks_sent = n.n_toks;
    const char *finish = job_finish(j);
    int n_out = j->r.n_out;
    pthread_mutex_unlock(&j->mu);

    if (*text || lp) {
        if (!from) {   /* the first token's text, on its way up to the client */
            trace_flow_in(trace_request_flow(j->r.id, HOP_DETOKENIZED));
            trace_flow_out(trace_request_flow(j->r.id, HOP_STREAMED));
        }
        /* the instant before the event: the time the event carries (its
         * stamp) is then never before it, so the client's token is not either */
        trace_instant(w, "sse_chunk", TRACE_ARGS(TA_STR("text", text), TA_INT("tokens", n_out)));
        event(j, api_chunk(&j->a, 0, text, lp, NULL));
    }
    free(text);
    if (!n.done) return 1;
    if (!strcmp(finish, "error") || !strcmp(finish, "cancelled")) {
        api_error e;
        api_fail(&e, 500, "server_error", NULL, NULL, "generation %s after %d tokens",
                 finish[0] == 'e' ? "failed" : "was stopped (the server is shutting down)", n_out);
        event(j, api_error_json(&e));
    } else {
        event(j, api_chunk(&j->a, 0, NULL, NULL, finish));
        if (j->q.include_usage) event(j, api_usage_chunk(&j->a, (api_usage){ j->r.n_prompt, j->r.n_cached, n_out }));
    }
    put(j, "data: [DONE]\n\n", 14);
    j->ended = 1;
    trace_instant(w, "sse_done", TRACE_ARGS(TA_STR("finish", finish), TA_INT("completion_tokens", n_out)));
    return 1;
}

ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    job *j = cls;
    while (j->out_off == j->out_len) {
        if (j->ended) return MHD_CONTENT_READER_END_OF_STREAM;
        j->out_off = j->out_len = 0;
        if (!fill(j)) return 0;   /* suspended: MHD calls again once resumed */
    }
    size_t n = j->out_len - j->out_off < max ? j->out_len - j->out_off : max;
    memcpy(buf, j->out + j->out_off, n);
    j->out_off += n;
    return (ssize_t)n;
}

void sse_free(void *cls) { job_release(cls); }
