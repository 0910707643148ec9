/* client.c -- layer 8: one chat request over HTTP (libcurl), streamed. */
#include "layers/client/client.h"
#include "trace/trace.h"
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double now_s(void) { return trace_now_ns() * 1e-9; }

typedef struct { char *p; size_t len, cap; } buffer;

static int buf_add(buffer *b, const char *s, size_t n) {
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

static size_t on_body(char *p, size_t size, size_t nmemb, void *user) {
    return buf_add(user, p, size * nmemb) ? 0 : size * nmemb;
}

typedef struct {
    const chat_request *q;
    chat_result *r;
    CURL *curl;
    buffer in;                   /* bytes not yet making a whole line (or an error body) */
    buffer text;                 /* the reply */
    int got_byte, sent, done;
    double t_send, t_first, t_end;
    trace_where up;
} stream;

/* One SSE line. Our events are one `data:` line each; comments (":") and
 * blank separators carry nothing. */
static void on_line(stream *s, const char *line, size_t n) {
    trace_stamp at;   /* the time the next event left the server, when it is this process's */
    if (n > 15 && !strncmp(line, ": hipath-clock ", 15) && !trace_stamp_read(line + 15, &at)) trace_clock_receive(at);
    if (n < 5 || strncmp(line, "data:", 5)) return;
    line += 5; n -= 5;
    if (n && *line == ' ') { line++; n--; }
    if (n == 6 && !strncmp(line, "[DONE]", 6)) { s->done = 1; return; }
    cJSON *j = cJSON_ParseWithLength(line, n);
    chat_result *r = s->r;
    cJSON *err = cJSON_GetObjectItemCaseSensitive(j, "error");
    cJSON *msg = cJSON_GetObjectItemCaseSensitive(err, "message");
    if (!j) snprintf(r->error, sizeof r->error, "a stream chunk is not JSON: %.100s", line);
    if (cJSON_IsString(msg)) snprintf(r->error, sizeof r->error, "error in the stream: %s", msg->valuestring);
    cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "choices"), 0);
    cJSON *content = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c, "delta"), "content");
    cJSON *finish = cJSON_GetObjectItemCaseSensitive(c, "finish_reason");
    cJSON *usage = cJSON_GetObjectItemCaseSensitive(j, "usage");
    double t = now_s();
    if (cJSON_IsString(content) && *content->valuestring) {
        size_t k = strlen(content->valuestring);
        if (!r->n_chunks++) { s->t_first = t; r->ttft_s = t - s->t_send; }
        if (buf_add(&s->text, content->valuestring, k) == 0 && s->q->on_text)
            s->q->on_text(content->valuestring, k, s->q->user);
        if (r->n_chunks == 1) trace_flow_in(trace_request_flow(r->id, HOP_STREAMED));   /* the first token's way up ends here */
        trace_instant(s->up, "token",
                      TRACE_ARGS(TA_STR("text", content->valuestring), TA_INT("index", r->n_chunks - 1)));
    }
    if (cJSON_IsString(finish)) { snprintf(r->finish, sizeof r->finish, "%s", finish->valuestring); s->t_end = t; }
    if (cJSON_IsObject(usage)) {
        r->prompt_tokens = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(usage, "prompt_tokens"));
        r->completion_tokens = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(usage, "completion_tokens"));
    }
    cJSON_Delete(j);
}

static size_t on_bytes(char *p, size_t size, size_t nmemb, void *user) {
    stream *s = user;
    size_t n = size * nmemb;
    if (!s->got_byte) {
        s->got_byte = 1;
        curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &s->r->status);
        trace_instant(s->up, "first_byte", TRACE_ARGS(TA_INT("status", s->r->status), TA_DBL("after_s", now_s() - s->t_send)));
    }
    buffer *b = &s->in;
    if (buf_add(b, p, n)) return 0;
    if (s->r->status != 200) return n;   /* an error body: kept whole */
    size_t off = 0;
    for (char *nl; (nl = memchr(b->p + off, '\n', b->len - off)); off = nl + 1 - b->p) {
        size_t k = nl - (b->p + off);
        if (k && nl[-1] == '\r') k--;
        on_line(s, b->p + off, k);
    }
    memmove(b->p, b->p + off, b->len - off);
    b->len -= off;
    return n;
}

/* Upload progress: the moment the whole body has gone out. */
static int on_progress(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
    (void)dltotal; (void)dlnow;
    stream *s = user;
    if (!s->sent && ultotal > 0 && ulnow >= ultotal) {
        s->sent = 1;
        trace_instant(trace_at(L_CLIENT, DIR_DOWN, s->r->id, NO_STEP), "sent", TRACE_ARGS(TA_INT("bytes", ultotal)));
    }
    return 0;
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
    stream s = { .q = q, .r = r, .up = trace_at(L_CLIENT, DIR_UP, r->id, NO_STEP) };
    trace_where down = trace_at(L_CLIENT, DIR_DOWN, r->id, NO_STEP);
    trace_flow_out(trace_request_flow(r->id, HOP_SENT));   /* -> the server's tokenize */
    trace_begin(down, "request", TRACE_ARGS(TA_STR("url", q->url), TA_STR("model", q->model)));
    s.t_send = now_s();   /* the user pressed Enter: TTFT and the request slice start together */

    char *body = request_json(q), url[1024], errbuf[CURL_ERROR_SIZE] = "";
    trace_instant(down, "build", TRACE_ARGS(TA_STR("json", body), TA_INT("bytes", strlen(body))));
    snprintf(url, sizeof url, "%s/v1/chat/completions", q->url);
    struct curl_slist *h = headers(q, r->id);
    s.curl = curl_easy_init();
    CURL *c = s.curl;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_bytes);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &s);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    char clock[128] = "X-Hipath-Clock: ";   /* the time it leaves: see trace_stamp_read */
    if (!trace_stamp_write(clock + 16, sizeof clock - 16)) curl_easy_setopt(c, CURLOPT_HTTPHEADER, h = curl_slist_append(h, clock));
    CURLcode rc = curl_easy_perform(c);
    double t = now_s();
    r->total_s = t - s.t_send;
    if (rc != CURLE_OK) {
        snprintf(r->error, sizeof r->error, "%.200s: %.250s", url, *errbuf ? errbuf : curl_easy_strerror(rc));
    } else if (r->status != 200) {
        cJSON *j = cJSON_Parse(s.in.p ? s.in.p : "");
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
    free(s.in.p);
    r->text = s.text.p;
    r->len = s.text.len;
    return *r->error ? -1 : 0;
}

void chat_result_free(chat_result *r) {
    free(r->text);
    r->text = NULL;
}

int client_first_model(const char *url, const char *api_key, char *name, int cap, char *err, int errlen) {
    char full[1024], auth[600];
    buffer body = { 0 };
    snprintf(full, sizeof full, "%s/v1/models", url);
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", api_key ? api_key : "");
    struct curl_slist *h = api_key ? curl_slist_append(NULL, auth) : NULL;
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, full);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    cJSON *j = cJSON_Parse(body.p ? body.p : "");
    cJSON *id = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "data"), 0), "id");
    int ok = rc == CURLE_OK && status == 200 && cJSON_IsString(id);
    if (ok) snprintf(name, cap, "%s", id->valuestring);
    else snprintf(err, errlen, "%.300s: %s", full, rc != CURLE_OK ? curl_easy_strerror(rc) : "no model listed (HTTP error or not an OpenAI server)");
    cJSON_Delete(j);
    free(body.p);
    return ok ? 0 : -1;
}
