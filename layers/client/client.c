/* client.c -- layer 8: one chat request over HTTP (libcurl), streamed. */
#include "layers/client/client.h"
#include "layers/client/sse_parse.h"
#include "trace/trace.h"
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double now_s(void) { return trace_now_ns() * 1e-9; }

void client_init(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

/* What a server may make the client hold (over it: an error, not memory). */
#define MAX_LINE  (1u << 20)     /* one SSE line: a chunk is a few hundred bytes */
#define MAX_REPLY (64u << 20)    /* the reply's text */
#define MAX_BODY  (1u << 20)     /* an error body, or the model list */

typedef struct { char *p; size_t len, cap, max; } buffer;

/* Append; -1 when out of memory or past b->max. */
static int buf_add(buffer *b, const char *s, size_t n) {
    if (n > b->max - b->len) return -1;
    if (b->len + n + 1 > b->cap) {
        char *p = realloc(b->p, b->cap = 2 * (b->len + n + 1));
        if (!p) return -1;
        b->p = p;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
    return 0;
}

/* The timeouts asked for, defaults where none was. */
static client_timeouts limits(const client_timeouts *t) {
    client_timeouts d = { CLIENT_CONNECT_S, CLIENT_FIRST_BYTE_S, CLIENT_IDLE_S };
    if (t && t->connect_s > 0) d.connect_s = t->connect_s;
    if (t && t->first_byte_s > 0) d.first_byte_s = t->first_byte_s;
    if (t && t->idle_s > 0) d.idle_s = t->idle_s;
    return d;
}

/* A request of either kind: its URL, headers, and the connect timeout
 * (curl's only timeout here: CURLE_OPERATION_TIMEDOUT means it). */
static CURL *request(const char *url, struct curl_slist *h, const client_timeouts *t) {
    CURL *c = curl_easy_init();
    if (!c) return NULL;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(t->connect_s * 1000));
    return c;
}

/* "URL: why", why being ours, curl's, or the connect timeout's. */
static void transfer_error(char *out, int cap, const char *url, CURLcode rc, const char *ours, const char *curls,
                           const client_timeouts *t) {
    char why[300];
    if (*ours) snprintf(why, sizeof why, "%s", ours);
    else if (rc == CURLE_OPERATION_TIMEDOUT) snprintf(why, sizeof why, "no connection within %g s (--connect-timeout)", t->connect_s);
    else snprintf(why, sizeof why, "%s", *curls ? curls : curl_easy_strerror(rc));
    snprintf(out, cap, "%.200s: %s", url, why);
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *user) {
    return buf_add(user, p, size * nmemb) ? 0 : size * nmemb;
}

typedef struct {
    const chat_request *q;
    chat_result *r;
    CURL *curl;
    sse_lines lines;             /* the stream, cut into lines */
    buffer body;                 /* an error body */
    buffer text;                 /* the reply */
    int answered, got_byte, sent, done, stop;   /* answered: the response's first byte (a header) came */
    double t_send, t_first, t_end;
    double wall_send, wall_news; /* host clock (the timeline may be virtual): sent; the last headers, text or error bytes */
    client_timeouts limit;
    trace_where up;
} stream;

/* Stop the transfer for a reason of our own (kept over curl's). 1. */
static int give_up(stream *s, const char *fmt, double v) {
    if (!*s->r->error) snprintf(s->r->error, sizeof s->r->error, fmt, v);
    return s->stop = 1;
}

/* One SSE line. Our events are one `data:` line each; comments (":") and
 * blank separators carry nothing, except the clock comment before each. */
static void on_line(void *user, const char *line, size_t n) {
    stream *s = user;
    trace_stamp at;   /* the time the next event left the server, when it is this process's */
    if (n > 15 && n < 128 && !strncmp(line, ": hipath-clock ", 15)) {
        char stamp[128];
        snprintf(stamp, sizeof stamp, "%.*s", (int)(n - 15), line + 15);
        if (!trace_stamp_read(stamp, &at)) trace_clock_receive(at);
    }
    sse_chunk c;
    if (!sse_chunk_read(line, n, &c)) return;
    chat_result *r = s->r;
    double t = now_s();
    if (c.done) s->done = 1;
    if (c.not_json) snprintf(r->error, sizeof r->error, "a stream chunk is not JSON: %.*s", (int)(n < 100 ? n : 100), line);
    if (c.error) snprintf(r->error, sizeof r->error, "error in the stream: %s", c.error);
    if (c.content && *c.content) {
        size_t k = strlen(c.content);
        s->wall_news = trace_host_seconds();
        if (!r->n_chunks++) { s->t_first = t; r->ttft_s = t - s->t_send; }
        if (buf_add(&s->text, c.content, k)) give_up(s, "the reply is longer than %.0f MiB", MAX_REPLY / 1048576.0);
        else if (s->q->on_text) s->q->on_text(c.content, k, s->q->user);
        if (r->n_chunks == 1) trace_flow_in(trace_request_flow(r->id, HOP_STREAMED));   /* the first token's way up ends here */
        trace_instant(s->up, "token", TRACE_ARGS(TA_STR("text", c.content), TA_INT("index", r->n_chunks - 1)));
    }
    if (c.finish) { snprintf(r->finish, sizeof r->finish, "%s", c.finish); s->t_end = t; }
    if (c.usage) {
        r->prompt_tokens = c.prompt_tokens;
        r->completion_tokens = c.completion_tokens;
    }
    sse_chunk_free(&c);
}

/* A header line: the server has answered. */
static size_t on_header(char *p, size_t size, size_t nmemb, void *user) {
    stream *s = user;
    (void)p;
    if (!s->answered) s->wall_news = trace_host_seconds();
    s->answered = 1;
    return size * nmemb;
}

static size_t on_bytes(char *p, size_t size, size_t nmemb, void *user) {
    stream *s = user;
    size_t n = size * nmemb;
    if (!s->got_byte) {
        s->got_byte = 1;
        curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &s->r->status);
        trace_instant(s->up, "first_byte", TRACE_ARGS(TA_INT("status", s->r->status), TA_DBL("after_s", now_s() - s->t_send)));
    }
    if (s->r->status != 200) {   /* an error body: kept whole; its bytes are news */
        s->wall_news = trace_host_seconds();
        if (buf_add(&s->body, p, n)) give_up(s, "an HTTP error body longer than %.0f MiB", MAX_BODY / 1048576.0);
    } else if (sse_lines_feed(&s->lines, p, n, on_line, s)) {
        give_up(s, "a stream line longer than %.0f MiB", MAX_LINE / 1048576.0);
    }
    return s->stop ? 0 : n;
}

/* Upload progress: the moment the whole body has gone out. */
static int on_progress(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
    (void)dltotal; (void)dlnow;
    stream *s = user;
    if (!s->sent && ultotal > 0 && ulnow >= ultotal) {
        s->sent = 1;
        trace_instant(trace_at(L_CLIENT, DIR_DOWN, s->r->id, NO_STEP), "sent", TRACE_ARGS(TA_INT("bytes", ultotal)));
    }
    /* Called at least once a second while nothing moves: the timeouts after connecting. */
    double now = trace_host_seconds();
    if (!s->answered && now - s->wall_send > s->limit.first_byte_s)
        return give_up(s, "no response within %g s (--first-byte-timeout)", s->limit.first_byte_s);
    if (s->answered && now - s->wall_news > s->limit.idle_s)
        return give_up(s, "no text for %g s (--idle-timeout)", s->limit.idle_s);
    return s->stop;
}

/* The body a chat app sends. */
static char *request_json(const chat_request *q) {
    cJSON *j = cJSON_CreateObject(), *m = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "model", q->model);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(j, "messages"), m);
    cJSON_AddStringToObject(m, "role", "user");
    cJSON_AddStringToObject(m, "content", q->content);
    cJSON_AddNumberToObject(j, "max_tokens", q->max_tokens);
    if (q->temperature >= 0) cJSON_AddNumberToObject(j, "temperature", q->temperature);
    if (q->seed >= 0) cJSON_AddNumberToObject(j, "seed", (double)q->seed);
    if (q->ignore_eos) cJSON_AddTrueToObject(j, "ignore_eos");
    cJSON_AddTrueToObject(j, "stream");
    cJSON_AddTrueToObject(cJSON_AddObjectToObject(j, "stream_options"), "include_usage");
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return s;
}

static struct curl_slist *headers(const chat_request *q, int64_t id) {
    char h[600];
    struct curl_slist *l = curl_slist_append(NULL, "Content-Type: application/json");
    l = curl_slist_append(l, "Accept: text/event-stream");
    snprintf(h, sizeof h, "X-Request-Id: %lld", (long long)id);
    l = curl_slist_append(l, h);
    if (q->api_key) {
        snprintf(h, sizeof h, "Authorization: Bearer %s", q->api_key);
        l = curl_slist_append(l, h);
    }
    return l;
}

int client_chat(const chat_request *q, chat_result *r) {
    static atomic_llong next_id = 1;
    memset(r, 0, sizeof *r);
    r->id = q->id ? q->id : atomic_fetch_add(&next_id, 1);
    stream s = { .q = q, .r = r, .up = trace_at(L_CLIENT, DIR_UP, r->id, NO_STEP), .limit = limits(&q->timeout),
                 .lines.max = MAX_LINE, .body.max = MAX_BODY, .text.max = MAX_REPLY };
    trace_where down = trace_at(L_CLIENT, DIR_DOWN, r->id, NO_STEP);
    trace_flow_out(trace_request_flow(r->id, HOP_SENT));   /* -> the server's tokenize */
    trace_begin(down, "request", TRACE_ARGS(TA_STR("url", q->url), TA_STR("model", q->model)));
    s.t_send = now_s();   /* the user pressed Enter: TTFT and the request slice start together */

    char *body = request_json(q), url[1024], errbuf[CURL_ERROR_SIZE] = "";
    trace_instant(down, "build", TRACE_ARGS(TA_STR("json", body), TA_INT("bytes", strlen(body))));
    snprintf(url, sizeof url, "%s/v1/chat/completions", q->url);
    struct curl_slist *h = headers(q, r->id);
    CURL *c = s.curl = request(url, h, &s.limit);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_bytes);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &s);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &s);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    /* Stamped last, after the handle's set-up (CPU time on this thread's
     * clock): the time the bytes leave. */
    char clock[128] = "X-Hipath-Clock: ";   /* see trace_stamp_read */
    if (!trace_stamp_write(clock + 16, sizeof clock - 16)) curl_easy_setopt(c, CURLOPT_HTTPHEADER, h = curl_slist_append(h, clock));
    s.wall_send = trace_host_seconds();
    CURLcode rc = curl_easy_perform(c);
    double t = now_s();
    r->total_s = t - s.t_send;
    if (rc != CURLE_OK || s.stop) {
        char ours[sizeof r->error];
        snprintf(ours, sizeof ours, "%s", s.stop ? r->error : "");
        transfer_error(r->error, sizeof r->error, url, rc, ours, errbuf, &s.limit);
    } else if (r->status != 200) {
        cJSON *j = cJSON_Parse(s.body.p ? s.body.p : "");
        cJSON *m = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "error"), "message");
        snprintf(r->error, sizeof r->error, "HTTP %ld: %s", r->status, cJSON_IsString(m) ? m->valuestring : "(no error message)");
        cJSON_Delete(j);
    } else if (!s.done && !*r->error) {
        snprintf(r->error, sizeof r->error, "the stream ended without data: [DONE]");
    }
    if (!s.t_end) s.t_end = t;
    if (r->completion_tokens > 1 && r->n_chunks) r->tpot_s = (s.t_end - s.t_first) / (r->completion_tokens - 1);
    trace_instant(s.up, "done", TRACE_ARGS(TA_DBL("ttft_s", r->ttft_s), TA_DBL("tpot_s", r->tpot_s),
                                           TA_INT("completion_tokens", r->completion_tokens),
                                           TA_STR("finish", r->finish), TA_STR("error", r->error)));
    trace_end(down, TRACE_ARGS(TA_INT("status", r->status), TA_DBL("total_s", r->total_s)));
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    free(body);
    free(s.body.p);
    sse_lines_free(&s.lines);
    r->text = s.text.p;
    r->len = s.text.len;
    return *r->error ? -1 : 0;
}

void chat_result_free(chat_result *r) {
    free(r->text);
    r->text = NULL;
}

int client_first_model(const char *url, const char *api_key, const client_timeouts *t, char *name, int cap,
                       char *err, int errlen) {
    char full[1024], auth[600], errbuf[CURL_ERROR_SIZE] = "";
    buffer body = { .max = MAX_BODY };
    client_timeouts limit = limits(t);
    snprintf(full, sizeof full, "%s/v1/models", url);
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", api_key ? api_key : "");
    struct curl_slist *h = api_key ? curl_slist_append(NULL, auth) : NULL;
    CURL *c = request(full, h, &limit);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    /* a small answer: the whole of it within the first-byte timeout (after connecting) */
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)((limit.connect_s + limit.first_byte_s) * 1000));
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    cJSON *j = cJSON_Parse(body.p ? body.p : "");
    cJSON *id = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "data"), 0), "id");
    int ok = rc == CURLE_OK && status == 200 && cJSON_IsString(id);
    if (ok) snprintf(name, cap, "%s", id->valuestring);
    else if (rc == CURLE_WRITE_ERROR) snprintf(err, errlen, "%.300s: the model list is longer than %u bytes", full, MAX_BODY);
    else if (rc != CURLE_OK) transfer_error(err, errlen, full, rc, "", errbuf, &limit);
    else snprintf(err, errlen, "%.300s: no model listed (HTTP error or not an OpenAI server)", full);
    cJSON_Delete(j);
    free(body.p);
    return ok ? 0 : -1;
}
