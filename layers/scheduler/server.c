/*
 * server.c -- layer 6: HTTP requests in, checked and tokenized, handed to
 * the engine as jobs; responses out, whole or as a stream (sse.c).
 *
 * libmicrohttpd serves every connection from a small pool of threads, each
 * polling its share of the sockets (epoll), so an idle or slow connection
 * costs a socket, not a thread, and cannot keep /health waiting. No
 * callback waits for the engine: a connection with nothing to send yet is
 * suspended, and resumed by the engine (job.c); the handler of other paths
 * suspends its slow ones the same way (server.h). Limits: connections in all
 * and per client address, and an idle connection is closed after a few
 * seconds (docs/serving.md, docs/security.md).
 */
#include "layers/scheduler/server.h"
#include "layers/scheduler/served.h"
#include "trace/trace.h"
#include <arpa/inet.h>
#include <math.h>
#include <errno.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>

#define MAX_BODY (1 << 20)
#define MAX_DRAIN (16 << 20)   /* a body up to this is read (and dropped) before the 413, so naive clients see it */
#define HTTP_THREADS 4         /* MHD's pool (unless --http-threads): each polls its share of the connections */
#define KEEPALIVE_S 5          /* the default of --sse-keepalive */

struct server {
    served sv;                     /* the model, its tokenizer and the engine (served.c) */
    struct MHD_Daemon *d;
    char *api_key;
    server_handler other;          /* paths not routed here (server.h) */
    server_gate gate;              /* lets in /v1/ requests the API key does not (server.h) */
    int port;
    double keepalive_s;            /* a stream waiting this long gets a comment line */
    long created;
    atomic_int in_flight;          /* POSTs whose response is not yet all sent */
    atomic_int closing;            /* server_stop: a new request gets 503 */
    atomic_ullong responses[600];  /* by HTTP status */
    /* Request ids in flight (each request's is its own), under ids_mu; the
     * streams the keep-alive ticker looks at (every second, or every
     * keepalive_s if shorter), under mu (which the ticker holds while it
     * resumes connections: libmicrohttpd may call completed(), which takes
     * ids_mu, with a lock of its own held). */
    pthread_mutex_t ids_mu, mu;
    pthread_cond_t tick;
    int64_t next_id, *ids;
    int n_ids, cap_ids;
    job *streams;
    int stopping;
    pthread_t ticker;
    /* Each connection's deadline for the request it is reading (read_clock),
     * under clocks_mu; the ticker closes the late ones. */
    pthread_mutex_t clocks_mu;
    struct read_clock *clocks;
    double read_timeout_s;
};

/* A connection's time to receive a whole request, headers and body: from
 * its start, or from the end of its previous request, read_timeout_s. A
 * byte now and then resets libmicrohttpd's idle timeout, not this, so a
 * client that trickles (slowloris) cannot hold a connection for long.
 * deadline 0: the request is in (its answer may take long: a stream). */
typedef struct read_clock {
    int fd;
    double deadline;
    struct read_clock *prev, *next;
} read_clock;

static void read_clock_set(server *s, struct MHD_Connection *c, double deadline) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    read_clock *k = ci ? ci->socket_context : NULL;
    if (!k) return;
    pthread_mutex_lock(&s->clocks_mu);
    k->deadline = deadline;
    pthread_mutex_unlock(&s->clocks_mu);
}

static void notify_connection(void *cls, struct MHD_Connection *c, void **ctx, enum MHD_ConnectionNotificationCode toe) {
    server *s = cls;
    read_clock *k = *ctx;
    pthread_mutex_lock(&s->clocks_mu);
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (ci && (k = calloc(1, sizeof *k))) {
            *k = (read_clock){ .fd = ci->connect_fd, .deadline = trace_host_seconds() + s->read_timeout_s, .next = s->clocks };
            if (s->clocks) s->clocks->prev = k;
            s->clocks = k;
            *ctx = k;
        }
    } else if (k) {   /* closed: libmicrohttpd closes the socket after this, so the ticker never sees its number reused */
        if (k->prev) k->prev->next = k->next; else s->clocks = k->next;
        if (k->next) k->next->prev = k->prev;
        free(k);
        *ctx = NULL;
    }
    pthread_mutex_unlock(&s->clocks_mu);
}

/* The ticker's: connections past their deadline are shut down (the socket
 * stays libmicrohttpd's, which sees the end and closes it). */
static void read_clocks_check(server *s, double now) {
    pthread_mutex_lock(&s->clocks_mu);
    for (read_clock *k = s->clocks; k; k = k->next)
        if (k->deadline > 0 && now > k->deadline) {
            shutdown(k->fd, SHUT_RDWR);
            k->deadline = 0;
        }
    pthread_mutex_unlock(&s->clocks_mu);
}

enum route { R_NONE, R_CHAT, R_COMPLETIONS, R_MODELS, R_HEALTH, R_METRICS, R_OTHER };
static const struct { const char *method, *path; enum route route; } ROUTES[] = {
    { "POST", "/v1/chat/completions", R_CHAT }, { "POST", "/v1/completions", R_COMPLETIONS },
    { "GET", "/v1/models", R_MODELS }, { "GET", "/health", R_HEALTH }, { "GET", "/metrics", R_METRICS },
};

/* A POST's body, gathered over the handler's calls; then its id and, while
 * a whole (not streamed) response is awaited, its job. */
typedef struct {
    enum route route;
    char *body;
    size_t len, cap, received;
    int too_big;
    int64_t id;
    job *waiting;
    void *other_state;             /* the other handler's, between its calls (server.h) */
    int gated;                     /* let in by the gate, not the API key: admitted again with its id */
} conn;

static enum MHD_Result respond_after(server *s, struct MHD_Connection *c, int status, const char *type, char *body,
                                     int64_t id, int retry_after_s) {
    if (!body) return MHD_NO;
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!r) { free(body); return MHD_NO; }
    MHD_add_response_header(r, "Content-Type", type);
    if (retry_after_s > 0) {
        char b[16];
        snprintf(b, sizeof b, "%d", retry_after_s);
        MHD_add_response_header(r, "Retry-After", b);
    }
    if (id > 0) {
        char b[24];
        snprintf(b, sizeof b, "%lld", (long long)id);
        MHD_add_response_header(r, "X-Request-Id", b);
    }
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    atomic_fetch_add(&s->responses[status < 600 ? status : 0], 1);
    return ok;
}

static enum MHD_Result respond(server *s, struct MHD_Connection *c, int status, const char *type, char *body, int64_t id) {
    return respond_after(s, c, status, type, body, id, 0);
}

/* A refusal is traced when it is a request's (it has an id): one refused
 * before it has one (a wrong path, method or key, a rate past its limit)
 * is only counted, in /metrics, or anyone could fill the trace with them
 * and push the room's requests out under its cap. */
static enum MHD_Result refuse(server *s, struct MHD_Connection *c, const api_error *e, int64_t id, int retry_after_s) {
    if (id > 0)
        trace_instant(trace_at(L_SCHEDULER, DIR_UP, id, NO_STEP), "reject",
                      TRACE_ARGS(TA_INT("status", e->status), TA_STR("message", e->message)));
    return respond_after(s, c, e->status, "application/json", api_error_json(e), id, retry_after_s);
}

static enum MHD_Result respond_error(server *s, struct MHD_Connection *c, const api_error *e, int64_t id) {
    return refuse(s, c, e, id, 0);
}

/* Refuse before the body is read (404, 405, 401, 415, 413). */
static enum MHD_Result reject(server *s, struct MHD_Connection *c, int status, const char *code, const char *fmt, ...) {
    api_error e = { .status = status, .type = status >= 500 ? "server_error" : "invalid_request_error", .code = code };
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.message, sizeof e.message, fmt, ap);
    va_end(ap);
    return respond_error(s, c, &e, -1);
}

/* How many times the request has header `name`. */
typedef struct { const char *name; int n; } tally;
static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    (void)kind; (void)value;
    tally *t = cls;
    t->n += !strcasecmp(key, t->name);
    return MHD_YES;
}
static int header_count(struct MHD_Connection *c, const char *name) {
    tally t = { name, 0 };
    MHD_get_connection_values(c, MHD_HEADER_KIND, count_header, &t);
    return t.n;
}

static int id_in_flight(const server *s, int64_t id) {
    for (int i = 0; i < s->n_ids; i++)
        if (s->ids[i] == id) return 1;
    return 0;
}

/* The request's id: the client's X-Request-Id when that is one header of
 * one positive number (18 digits at most) that no request in flight has;
 * else the next of the server's own that none has (a proxy's UUID, or two
 * clients that both count from 1). The response echoes it. In flight until
 * its connection lets it go (completed). -1 when out of memory. */
static int64_t take_id(server *s, struct MHD_Connection *c) {
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Request-Id");
    size_t n = h ? strlen(h) : 0;
    int64_t id = !s->gate.admit && n && n <= 18 && strspn(h, "0123456789") == n && header_count(c, "X-Request-Id") == 1
                 ? strtoll(h, NULL, 10) : 0;
    pthread_mutex_lock(&s->ids_mu);
    while (id <= 0 || id_in_flight(s, id)) id = s->next_id++;
    if (s->n_ids == s->cap_ids) {
        int64_t *p = realloc(s->ids, (s->cap_ids = 2 * s->cap_ids + 64) * sizeof *p);
        if (p) s->ids = p; else id = -1, s->cap_ids = s->n_ids;
    }
    if (id > 0) s->ids[s->n_ids++] = id;
    pthread_mutex_unlock(&s->ids_mu);
    return id;
}

static void drop_id(server *s, int64_t id) {
    pthread_mutex_lock(&s->ids_mu);
    for (int i = 0; i < s->n_ids; i++)
        if (s->ids[i] == id) { s->ids[i] = s->ids[--s->n_ids]; break; }
    pthread_mutex_unlock(&s->ids_mu);
}

/* stream: false -- once the job is done, the whole completion (until then
 * the connection is suspended, and this waits for nothing). */
static enum MHD_Result respond_whole(server *s, struct MHD_Connection *c, conn *k) {
    job *j = k->waiting;
    pthread_mutex_lock(&j->mu);
    if (!j->done) {
        job_suspend(j);   /* on_done resumes it, and MHD calls handle() again */
        pthread_mutex_unlock(&j->mu);
        return MHD_YES;
    }
    k->waiting = NULL;
    trace_clock_receive(j->done_at);
    const char *finish = job_finish(j);
    char *body = NULL;
    api_error e;
    if (!strcmp(finish, "error") || !strcmp(finish, "cancelled"))
        api_fail(&e, 503, "server_error", NULL, NULL, "generation %s", finish[0] == 'e' ? "failed"
                 : "was stopped (the server is shutting down, or the connection was closed)");
    else
        body = api_response(&j->a, j->text, finish, j->q.logprobs ? api_logprobs(&j->a, j->toks, j->n_toks, 0) : NULL,
                            (api_usage){ j->r.n_prompt, j->r.n_cached, j->r.n_out });
    pthread_mutex_unlock(&j->mu);
    int64_t id = j->r.id;
    job_release(j);
    return body ? respond(s, c, 200, "application/json", body, id) : respond_error(s, c, &e, id);
}

static enum MHD_Result respond_stream(server *s, struct MHD_Connection *c, job *j) {
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, sse_read, j, sse_free);
    if (!r) { job_release(j); return MHD_NO; }
    job_keep(j);   /* the keep-alive ticker's reference */
    pthread_mutex_lock(&s->mu);
    j->next_stream = s->streams;
    s->streams = j;
    pthread_mutex_unlock(&s->mu);
    char id[24];
    snprintf(id, sizeof id, "%lld", (long long)j->r.id);
    MHD_add_response_header(r, "Content-Type", "text/event-stream");
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    MHD_add_response_header(r, "X-Request-Id", id);
    enum MHD_Result ok = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);   /* the job now belongs to the response: sse_free releases it */
    atomic_fetch_add(&s->responses[200], 1);
    return ok;
}

/* The request's Bearer key, NULL when it sent none. */
static const char *bearer(struct MHD_Connection *c) {
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    return h && !strncmp(h, "Bearer ", 7) ? h + 7 : NULL;
}

static const api_error *admission_error(const server_admission *a, api_error *e) {
    *e = (api_error){ .status = a->status, .type = a->status >= 500 ? "server_error" : "invalid_request_error",
                      .code = a->code[0] ? a->code : "refused" };
    snprintf(e->message, sizeof e->message, "%s", a->message);
    return e;
}

static int from_loopback(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return ci && ci->client_addr && ci->client_addr->sa_family == AF_INET &&
           (ntohl(((const struct sockaddr_in *)ci->client_addr)->sin_addr.s_addr) >> 24) == 127;
}

/* A whole POST body is here: check it, tokenize, queue it, answer. */
static enum MHD_Result complete(server *s, struct MHD_Connection *c, conn *k) {
    int64_t id = k->id = take_id(s, c);
    if (id < 0) return MHD_NO;
    /* The client's clock when it sent the request: hipath's own client in
     * this process (hipath run), on a virtual clock. Only from loopback and
     * a key the server trusts: a student's stamp could push the clock (and
     * every window on it) anywhere. */
    trace_stamp sent;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Hipath-Clock");
    if (h && !k->gated && from_loopback(c) && !trace_stamp_read(h, &sent)) trace_clock_receive(sent);
    double t_arrive = trace_now_ns() * 1e-9;
    server_admission a = { .generation = 1 };
    if (k->gated) s->gate.admit(s->gate.ctx, bearer(c), id, &a);   /* counted now, with its id */
    const char *path = k->route == R_CHAT ? "/v1/chat/completions" : "/v1/completions";
    trace_where at = trace_at(L_SCHEDULER, DIR_DOWN, id, NO_STEP);
    if (a.owner[0])
        trace_instant(at, "http_request", TRACE_ARGS(TA_LIT("path", path), TA_INT("bytes", k->len), TA_STR("owner", a.owner)));
    else
        trace_instant(at, "http_request", TRACE_ARGS(TA_LIT("path", path), TA_INT("bytes", k->len)));
    api_request q;
    api_error e;
    if (a.status) return refuse(s, c, admission_error(&a, &e), id, a.retry_after_s);
    if (api_parse(&q, k->body ? k->body : "", k->len, k->route == R_CHAT, s->sv.name, &e)) {
        api_request_free(&q);
        return respond_error(s, c, &e, id);
    }
    job *j = job_new(&q, &s->sv.text, s->sv.name, id, c);
    j->r.t_arrive = t_arrive;
    if (served_prepare(&s->sv, j, &a, &e)) { job_release(j); return respond_error(s, c, &e, id); }
    char err[256];
    int rc = job_submit(j, served_engine(&s->sv), err, sizeof err);
    if (rc) {
        int invalid = rc == SUBMIT_INVALID;
        api_fail(&e, invalid ? 400 : 503, invalid ? "invalid_request_error" : "server_error", NULL,
                 rc == SUBMIT_NO_ROOM ? "kv_cache_too_small" : NULL, "%s", err);
        job_release(j);
        return respond_error(s, c, &e, id);
    }
    if (j->q.stream) return respond_stream(s, c, j);
    k->waiting = j;
    return respond_whole(s, c, k);
}

static char *models_json(server *s) {
    cJSON *j = cJSON_CreateObject(), *m = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "object", "list");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(j, "data"), m);
    cJSON_AddStringToObject(m, "id", s->sv.name);
    cJSON_AddStringToObject(m, "object", "model");
    cJSON_AddNumberToObject(m, "created", s->created);
    cJSON_AddStringToObject(m, "owned_by", "hipath");
    cJSON_AddNumberToObject(m, "max_model_len", s->sv.max_model_len);
    char *out = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return out;
}

static char *metrics_text(server *s) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    fprintf(f, "# HELP hipath_http_responses_total HTTP responses, by status.\n# TYPE hipath_http_responses_total counter\n");
    for (int i = 0; i < 600; i++) {
        unsigned long long n = atomic_load(&s->responses[i]);
        if (n) fprintf(f, "hipath_http_responses_total{code=\"%d\"} %llu\n", i, n);
    }
    metrics_print(s->sv.e, s->sv.dp, f);
    fclose(f);
    return buf;
}

static int json_content_type(struct MHD_Connection *c) {
    const char *t = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    return t && !strncasecmp(t, "application/json", 16) && (!t[16] || t[16] == ';' || t[16] == ' ');
}

/* The key is compared in a time that depends on its length only, so the
 * answer's timing says nothing of how many leading bytes were right. */
static int authorized(server *s, struct MHD_Connection *c) {
    if (!s->api_key) return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h || strncmp(h, "Bearer ", 7)) return 0;
    const unsigned char *got = (const unsigned char *)h + 7, *key = (const unsigned char *)s->api_key;
    size_t n = strlen((const char *)got), k = strlen((const char *)key);
    unsigned char diff = n != k;
    for (size_t i = 0; i < k; i++) diff |= key[i] ^ (i < n ? got[i] : 0);
    return !diff;
}

/* The first call for a request sees only its headers: route, key, type,
 * size. Then the body arrives in pieces; the last call has none. */
static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *upload, size_t *upload_size, void **con_cls) {
    (void)version;
    server *s = cls;
    conn *k = *con_cls;
    static _Thread_local int named;   /* the thread's own tracks in the trace, named for what it is */
    if (!named) {
        char name[40];
        static atomic_int n;
        snprintf(name, sizeof name, "HTTP connection %d", atomic_fetch_add(&n, 1) + 1);
        trace_thread_name(name);
        named = 1;
    }
    if (!k) {
        if (atomic_load(&s->closing)) return reject(s, c, 503, "shutting_down", "the server is shutting down");
        enum route route = R_NONE;
        int path_known = 0;
        for (size_t i = 0; i < sizeof ROUTES / sizeof *ROUTES; i++)
            if (!strcmp(url, ROUTES[i].path)) {
                path_known = 1;
                if (!strcmp(method, ROUTES[i].method)) route = ROUTES[i].route;
            }
        if (!route && path_known) return reject(s, c, 405, "method_not_allowed", "%.16s is not allowed on %.200s", method, url);
        if (!route && s->other.handle && strncmp(url, "/v1/", 4)) route = R_OTHER;
        if (!route) return reject(s, c, 404, "not_found", "Invalid URL (%.16s %.200s)", method, url);
        int gated = 0;
        if (!strncmp(url, "/v1/", 4) && !authorized(s, c)) {
            server_admission a = { .generation = route == R_CHAT || route == R_COMPLETIONS };
            if (s->gate.admit) s->gate.admit(s->gate.ctx, bearer(c), 0, &a);
            else a.status = 401;
            if (a.status == 401 && !a.message[0])
                return reject(s, c, 401, "invalid_api_key", "Incorrect or missing API key: send the header 'Authorization: Bearer KEY'");
            if (a.status) { api_error e; return refuse(s, c, admission_error(&a, &e), -1, a.retry_after_s); }
            gated = 1;
        }
        if (route == R_MODELS) return respond(s, c, 200, "application/json", models_json(s), -1);
        if (route == R_HEALTH) return respond(s, c, 200, "application/json", strdup("{\"status\":\"ok\"}"), -1);
        if (route == R_METRICS) return respond(s, c, 200, "text/plain; version=0.0.4", metrics_text(s), -1);
        if (route != R_OTHER && !json_content_type(c)) return reject(s, c, 415, "unsupported_media_type", "Content-Type must be application/json");
        /* Where a body ends must be clear, or a proxy in front may read it
         * otherwise (request smuggling): one Content-Length, or chunks. */
        int lengths = header_count(c, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (lengths > 1 || (lengths && header_count(c, MHD_HTTP_HEADER_TRANSFER_ENCODING)))
            return reject(s, c, 400, "ambiguous_length", lengths > 1 ? "more than one Content-Length header"
                                                                     : "both Content-Length and Transfer-Encoding");
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > MAX_DRAIN)
            return reject(s, c, 413, "request_too_large", "the body has %.20s bytes; the limit is %d", cl, MAX_BODY);
        if (!(k = calloc(1, sizeof *k))) return MHD_NO;
        k->route = route;
        k->gated = gated;
        *con_cls = k;
        atomic_fetch_add(&s->in_flight, 1);
        return MHD_YES;
    }
    if (k->waiting) return respond_whole(s, c, k);   /* resumed: its job is done */
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        /* Chunks, so no length said it first: past the drain, the connection
         * is closed (MHD takes no response before the body's end). */
        if ((k->received += n) > MAX_DRAIN) return MHD_NO;
        if (k->too_big || k->len + n > MAX_BODY) { k->too_big = 1; return MHD_YES; }
        if (k->len + n + 1 > k->cap) {
            char *b = realloc(k->body, k->cap = 2 * (k->len + n + 1));
            if (!b) return MHD_NO;
            k->body = b;
        }
        memcpy(k->body + k->len, upload, n);
        k->len += n;
        return MHD_YES;
    }
    read_clock_set(s, c, 0);   /* the whole request is in */
    if (k->too_big) return reject(s, c, 413, "request_too_large", "the body is over %d bytes", MAX_BODY);
    if (k->route == R_OTHER)
        return (enum MHD_Result)s->other.handle(s->other.ctx, c, method, url, k->body, k->len, authorized(s, c), &k->other_state);
    return complete(s, c, k);
}

/* A request is over: its response was sent, or its connection dropped. */
static void completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode why) {
    (void)why;
    server *s = cls;
    conn *k = *con_cls;
    read_clock_set(s, c, trace_host_seconds() + s->read_timeout_s);   /* the next request's, on a kept-alive connection */
    if (k) {
        if (k->waiting) job_release(k->waiting);
        if (k->other_state && s->other.done) s->other.done(s->other.ctx, k->other_state);
        if (k->id > 0) drop_id(s, k->id);
        free(k->body);
        free(k);
        atomic_fetch_sub(&s->in_flight, 1);
    }
    *con_cls = NULL;
}

/* Every second (or keepalive_s, if shorter): streams suspended for
 * keepalive_s get a comment line (a proxy in front would otherwise time
 * the wait out), and the streams whose connection let go leave the list. */
static void *ticker(void *arg) {
    server *s = arg;
    long period_ns = (long)(fmin(s->keepalive_s, 1.0) * 1e9);
    pthread_mutex_lock(&s->mu);
    while (!s->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += period_ns;
        until.tv_sec += until.tv_nsec / 1000000000;
        until.tv_nsec %= 1000000000;
        pthread_cond_timedwait(&s->tick, &s->mu, &until);
        double now = trace_host_seconds();
        read_clocks_check(s, now);
        for (job **p = &s->streams; *p;) {
            job *j = *p;
            if (job_keepalive(j, now, s->keepalive_s)) { p = (job **)&j->next_stream; continue; }
            *p = j->next_stream;
            job_unref(j);
        }
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* The connections the process can hold: its file descriptors' soft limit
 * is raised towards the hard one (often 1024 of 1048576) to fit `want`,
 * and the limit is what fits, a few kept for the model and trace files. */
static unsigned connection_room(unsigned want) {
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r)) return want;
    rlim_t need = (rlim_t)want + 64;
    if (r.rlim_cur < need) {
        r.rlim_cur = r.rlim_max == RLIM_INFINITY || r.rlim_max >= need ? need : r.rlim_max;
        setrlimit(RLIMIT_NOFILE, &r);
        getrlimit(RLIMIT_NOFILE, &r);
    }
    if (r.rlim_cur >= need) return want;
    unsigned fit = r.rlim_cur > 128 ? (unsigned)(r.rlim_cur - 64) : 64;
    fprintf(stderr, "hipath: warning: %llu file descriptors: at most %u connections, not %u\n",
            (unsigned long long)r.rlim_cur, fit, want);
    return fit;
}

server *server_start(const server_opts *o, char *err, int errlen) {
    server *s = calloc(1, sizeof *s);
    if (!s) { snprintf(err, errlen, "out of memory"); return NULL; }
    pthread_mutex_init(&s->ids_mu, NULL);
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->clocks_mu, NULL);
    pthread_cond_init(&s->tick, NULL);
    if (served_open(&s->sv, o, err, errlen)) { free(s); return NULL; }

    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)o->port) };
    const char *host = o->host && strcmp(o->host, "localhost") ? o->host : "127.0.0.1";
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) { snprintf(err, errlen, "--host %s: not an IPv4 address", host); goto fail_thread; }
    s->created = (long)time(NULL);
    s->next_id = 1;
    s->api_key = o->api_key ? strdup(o->api_key) : NULL;
    s->gate = o->gate;
    s->other = o->other;
    s->keepalive_s = o->keepalive_s > 0 ? o->keepalive_s : KEEPALIVE_S;
    unsigned conns = connection_room(o->max_connections > 0 ? o->max_connections : 4096);
    unsigned per_ip = o->max_connections_per_ip > 0 ? o->max_connections_per_ip : 128;
    unsigned timeout = o->connection_timeout_s > 0 ? o->connection_timeout_s : 10;
    /* an idle connection waiting for its request is the idle timeout's to close: never sooner */
    s->read_timeout_s = o->read_timeout_s > 0 ? o->read_timeout_s : timeout > 30 ? (double)timeout : 30;
    s->d = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME, 0, NULL, NULL, handle, s,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_NOTIFY_COMPLETED, completed, s,
                            MHD_OPTION_THREAD_POOL_SIZE, (unsigned)(o->http_threads > 0 ? o->http_threads : HTTP_THREADS),
                            MHD_OPTION_CONNECTION_LIMIT, conns, MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip,
                            MHD_OPTION_CONNECTION_TIMEOUT, timeout, MHD_OPTION_NOTIFY_CONNECTION, notify_connection, s,
                            MHD_OPTION_END);
    if (!s->d) { snprintf(err, errlen, "cannot listen on %s:%d (address in use?)", host, o->port); goto fail_thread; }
    s->port = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT)->port;
    if (pthread_create(&s->ticker, NULL, ticker, s)) {
        snprintf(err, errlen, "cannot start the keep-alive thread");
        MHD_stop_daemon(s->d);
        goto fail_thread;
    }
    return s;

fail_thread:
    free(s->api_key);
    served_stop(&s->sv);
    served_close(&s->sv);
    free(s);
    return NULL;
}

int server_port(const server *s) { return s->port; }
const char *server_model_name(const server *s) { return s->sv.name; }

void server_stop(server *s) {
    /* New requests get 503 from here (not MHD_quiesce_daemon: with a pool
     * of epoll threads it can race a thread that is using the listening
     * socket and abort the process, as it did in a test). */
    atomic_store(&s->closing, 1);
    served_stop(&s->sv);         /* every job ends and resumes its connection, so every response can finish... */
    for (int i = 0; i < 500 && atomic_load(&s->in_flight) > 0; i++) {   /* ...and is let finish (5 s at most) */
        struct timespec t = { 0, 10000000 };
        nanosleep(&t, NULL);
    }
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    pthread_cond_signal(&s->tick);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->ticker, NULL);
    if (s->other.stop) s->other.stop(s->other.ctx);   /* and resumes what it suspended */
    MHD_stop_daemon(s->d);       /* no connection is suspended: a job that ended resumed its own */
    for (job *j = s->streams, *next; j; j = next) {
        next = j->next_stream;
        job_unref(j);
    }
    free(s->ids);
    pthread_mutex_destroy(&s->ids_mu);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->clocks_mu);
    pthread_cond_destroy(&s->tick);
    served_close(&s->sv);
    free(s->api_key);
    free(s);
}
