/*
 * workshop.c -- hipath serve --workshop: one teacher's server, a room of
 * students' browsers (docs/workshop.md). A student joins with the code the
 * teacher shows (POST /api/workshop/join) and gets a key of their own; the
 * server's API key is the teacher's. Layer 6 asks here (its gate,
 * server.h) whether a /v1/ key may in, and counts each generation against
 * its student's rate, noting whose request id it is; the /api/ routes ask
 * whose a request is, so a student reads their own requests only. Keys,
 * names and owners live in memory: a restart ends the workshop.
 */
#include "web/server/web_int.h"
#include "layers/scheduler/server.h"
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define KEY_HEX 32
#define NAME_BYTES 40
#define FAIL_ADDRS 256     /* addresses whose wrong codes are counted */
#define FAIL_LIMIT 10      /* wrong codes an address may send a minute */
#define MAX_STEPS 2000     /* steps one /api/workshop/steps answer holds */
#define MAX_REQUESTS 500
/* No 0/O or 1/I/L: read off a projector. */
static const char CODE_ALPHABET[] = "ABCDEFGHJKMNPQRSTUVWXYZ23456789";

typedef struct {
    char key[KEY_HEX + 1], name[NAME_BYTES + 1];
    double *times;         /* the last `rate` requests' times, a ring */
    int head, count;
    long long requests, refused;
    double joined;
} student;

typedef struct { int64_t id; int who; } owned;

struct web_workshop {
    pthread_mutex_t mu;
    char code[WORKSHOP_CODE_LEN + 1];
    int rate, max_tokens, max_students;
    student *st;
    int n;
    owned *own;            /* ids ascending: with a gate they are the server's own, one after another */
    size_t n_own, cap_own;
    struct { char addr[64]; double since; int fails; } fails[FAIL_ADDRS];
    double t0;
};

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int random_bytes(unsigned char *b, size_t n) {
    for (size_t got = 0; got < n;) {
        ssize_t k = getrandom(b + got, n - got, 0);
        if (k <= 0) return -1;
        got += (size_t)k;
    }
    return 0;
}

int web_workshop_open(web *w, const web_opts *o, char *err, int errlen) {
    if (!o->workshop) return 0;
    struct web_workshop *k = calloc(1, sizeof *k);
    unsigned char r[WORKSHOP_CODE_LEN];
    if (!k || random_bytes(r, sizeof r)) { free(k); snprintf(err, errlen, "workshop: no random bytes"); return -1; }
    if (o->workshop_code) snprintf(k->code, sizeof k->code, "%s", o->workshop_code);
    else for (int i = 0; i < WORKSHOP_CODE_LEN; i++) k->code[i] = CODE_ALPHABET[r[i] % (sizeof CODE_ALPHABET - 1)];
    k->rate = o->workshop_rate;
    k->max_tokens = o->workshop_max_tokens;
    k->max_students = o->workshop_students > 0 ? o->workshop_students : 100;
    if (!(k->st = calloc(k->max_students, sizeof *k->st))) { free(k); snprintf(err, errlen, "out of memory"); return -1; }
    pthread_mutex_init(&k->mu, NULL);
    k->t0 = now_s();
    w->workshop = k;
    return 0;
}

void web_workshop_close(web *w) {
    struct web_workshop *k = w->workshop;
    if (!k) return;
    for (int i = 0; i < k->n; i++) free(k->st[i].times);
    free(k->st);
    free(k->own);
    pthread_mutex_destroy(&k->mu);
    free(k);
    w->workshop = NULL;
}

const char *web_workshop_code(const web *w) { return w->workshop ? w->workshop->code : NULL; }

int web_workshop_max_tokens(const web *w) { return w->workshop ? w->workshop->max_tokens : 0; }

/* The student whose key this is (index + 1), 0 for none. Under mu. Every
 * key is compared whole, so a 401's timing says nothing of a near miss. */
static int find_key(const struct web_workshop *k, const char *key) {
    if (!key || strlen(key) != KEY_HEX) return 0;
    int who = 0;
    for (int i = 0; i < k->n; i++) {
        unsigned char diff = 0;
        for (int j = 0; j < KEY_HEX; j++) diff |= (unsigned char)(k->st[i].key[j] ^ key[j]);
        if (!diff) who = i + 1;
    }
    return who;
}

int web_workshop_who(web *w, struct MHD_Connection *c) {
    struct web_workshop *k = w->workshop;
    if (!k) return 0;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    pthread_mutex_lock(&k->mu);
    int who = h && !strncmp(h, "Bearer ", 7) ? find_key(k, h + 7) : 0;
    pthread_mutex_unlock(&k->mu);
    return who;
}

/* Under mu: the index in own of id, or -1. */
static long find_owned(const struct web_workshop *k, int64_t id) {
    size_t lo = 0, hi = k->n_own;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (k->own[mid].id < id) lo = mid + 1; else hi = mid;
    }
    return lo < k->n_own && k->own[lo].id == id ? (long)lo : -1;
}

int web_workshop_owner(web *w, int64_t request) {
    struct web_workshop *k = w->workshop;
    if (!k) return 0;
    pthread_mutex_lock(&k->mu);
    long i = find_owned(k, request);
    int who = i >= 0 ? k->own[i].who : 0;
    pthread_mutex_unlock(&k->mu);
    return who;
}

int web_workshop_ids(web *w, int who, int64_t before, int64_t *out, int max) {
    struct web_workshop *k = w->workshop;
    int n = 0;
    if (!k) return 0;
    pthread_mutex_lock(&k->mu);
    for (size_t i = k->n_own; i-- > 0 && n < max;)
        if (k->own[i].who == who && k->own[i].id < before) out[n++] = k->own[i].id;
    pthread_mutex_unlock(&k->mu);
    return n;
}

static void refuse(server_admission *a, int status, const char *code, const char *msg, int retry) {
    a->status = status;
    snprintf(a->code, sizeof a->code, "%s", code);
    snprintf(a->message, sizeof a->message, "%s", msg);
    a->retry_after_s = retry;
}

/* The gate (server.h): id 0 asks whether the key is a student's; a
 * generation's id counts it against the student's rate (requests in the
 * last minute) and notes whose it is. */
void web_workshop_admit(void *ctx, const char *key, int64_t id, server_admission *a) {
    struct web_workshop *k = ((web *)ctx)->workshop;
    if (!k) { refuse(a, 401, "invalid_api_key", "", 0); return; }
    pthread_mutex_lock(&k->mu);
    int who = find_key(k, key);
    if (!who) {
        refuse(a, 401, "invalid_api_key", "Incorrect or missing key: join the workshop at /join (or send the teacher's key)", 0);
    } else if (id > 0) {
        student *s = &k->st[who - 1];
        snprintf(a->owner, sizeof a->owner, "#%d %s", who, s->name);   /* refused or not: the trace says whose */
        double t = now_s();
        if (k->rate > 0 && s->count == k->rate && t - s->times[s->head] < 60) {
            s->refused++;
            char m[200];
            int retry = (int)ceil(60 - (t - s->times[s->head]));
            snprintf(m, sizeof m, "%d requests a minute per student in this workshop: try again in %d s", k->rate, retry);
            refuse(a, 429, "rate_limit_exceeded", m, retry);
        } else {
            if (k->rate > 0) {
                s->times[s->head] = t;
                s->head = (s->head + 1) % k->rate;
                if (s->count < k->rate) s->count++;
            }
            s->requests++;
            if (k->n_own == k->cap_own) {
                size_t cap = 2 * k->cap_own + 1024;
                owned *p = realloc(k->own, cap * sizeof *p);
                if (p) k->own = p, k->cap_own = cap;
            }
            /* ids only grow (the server's own): kept in order; one that did not is not noted, so no one reads it */
            if (k->n_own < k->cap_own && (!k->n_own || k->own[k->n_own - 1].id < id))
                k->own[k->n_own++] = (owned){ id, who };
            a->max_tokens = k->max_tokens;
        }
    }
    pthread_mutex_unlock(&k->mu);
}

/* The address a request came from, for counting wrong codes. */
static void address_of(struct MHD_Connection *c, char *out, size_t cap) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    snprintf(out, cap, "?");
    if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)ci->client_addr)->sin_addr, out, (socklen_t)cap);
}

/* Under mu: an address's wrong codes in the last minute (its slot). */
static int fail_slot(struct web_workshop *k, const char *addr, double t) {
    int free_slot = -1, oldest = 0;
    for (int i = 0; i < FAIL_ADDRS; i++) {
        if (!strcmp(k->fails[i].addr, addr)) {
            if (t - k->fails[i].since > 60) k->fails[i].since = t, k->fails[i].fails = 0;
            return i;
        }
        if (free_slot < 0 && !k->fails[i].addr[0]) free_slot = i;
        if (k->fails[i].since < k->fails[oldest].since) oldest = i;
    }
    int i = free_slot >= 0 ? free_slot : oldest;
    snprintf(k->fails[i].addr, sizeof k->fails[i].addr, "%s", addr);
    k->fails[i].since = t;
    k->fails[i].fails = 0;
    return i;
}

/* A name: 1 to 40 bytes, no control characters, valid UTF-8 (cJSON does not check). */
static int name_ok(const char *s) {
    size_t n = strlen(s);
    if (!n || n > NAME_BYTES) return 0;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        if (*p < 0x20 || *p == 0x7f) return 0;
        int more = *p < 0x80 ? 0 : (*p & 0xe0) == 0xc0 ? 1 : (*p & 0xf0) == 0xe0 ? 2 : (*p & 0xf8) == 0xf0 ? 3 : -1;
        if (more < 0 || (more == 1 && *p < 0xc2)) return 0;
        p++;
        for (int i = 0; i < more; i++, p++) if ((*p & 0xc0) != 0x80) return 0;
    }
    return 1;
}

/* POST /api/workshop/join {"code", "name"}: a key of the student's own. */
static enum MHD_Result join(web *w, web_req *rq, const char *body, size_t len) {
    struct web_workshop *k = w->workshop;
    cJSON *j = body ? cJSON_ParseWithLength(body, len) : NULL;
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(j, "code"), *name = cJSON_GetObjectItemCaseSensitive(j, "name");
    enum MHD_Result r;
    if (!cJSON_IsObject(j)) r = web_fail(rq, 400, "invalid_json", NULL, "the body must be a JSON object {\"code\", \"name\"}");
    else if (!cJSON_IsString(code)) r = web_fail(rq, 400, "invalid_parameter", "code", "code must be the join code (a string)");
    else if (!cJSON_IsString(name) || !name_ok(name->valuestring))
        r = web_fail(rq, 400, "invalid_parameter", "name", "name must be 1 to %d bytes of text, no control characters", NAME_BYTES);
    else {
        char addr[64], upper[WORKSHOP_CODE_LEN + 1] = "";
        address_of(rq->c, addr, sizeof addr);
        for (int i = 0; i < WORKSHOP_CODE_LEN && code->valuestring[i]; i++)
            upper[i] = (char)(code->valuestring[i] >= 'a' && code->valuestring[i] <= 'z' ? code->valuestring[i] - 32 : code->valuestring[i]);
        unsigned char key[KEY_HEX / 2];
        int rnd = random_bytes(key, sizeof key);
        double t = now_s();
        pthread_mutex_lock(&k->mu);
        int slot = fail_slot(k, addr, t), who = 0, retry = 0;
        unsigned char diff = strlen(code->valuestring) != WORKSHOP_CODE_LEN;
        for (int i = 0; i < WORKSHOP_CODE_LEN; i++) diff |= (unsigned char)(upper[i] ^ k->code[i]);
        if (k->fails[slot].fails >= FAIL_LIMIT) retry = (int)fmax(1, ceil(60 - (t - k->fails[slot].since)));
        else if (diff) k->fails[slot].fails++;
        else if (!rnd && k->n < k->max_students && (k->rate <= 0 || (k->st[k->n].times = calloc(k->rate, sizeof(double))))) {
            student *s = &k->st[k->n];
            for (size_t i = 0; i < sizeof key; i++) snprintf(s->key + 2 * i, 3, "%02x", key[i]);
            snprintf(s->name, sizeof s->name, "%s", name->valuestring);
            s->joined = t - k->t0;
            who = ++k->n;
        }
        int full = k->n >= k->max_students, rate = k->rate, cap = k->max_tokens;
        char skey[KEY_HEX + 1];
        if (who) memcpy(skey, k->st[who - 1].key, sizeof skey);
        pthread_mutex_unlock(&k->mu);
        if (retry) {
            r = web_fail(rq, 429, "rate_limit_exceeded", "code", "%d wrong codes from this address in a minute: try again in %d s", FAIL_LIMIT, retry);
            char b[16];
            snprintf(b, sizeof b, "%d", retry);
            if (rq->resp) MHD_add_response_header(rq->resp, "Retry-After", b);
        } else if (diff) r = web_fail(rq, 403, "invalid_join_code", "code", "that is not this workshop's join code");
        else if (!who) r = full ? web_fail(rq, 409, "workshop_full", NULL, "the workshop is full (%d students: --workshop-students)", k->max_students)
                                : web_fail(rq, 500, "server_error", NULL, "out of memory, or no random bytes");
        else {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "key", skey);
            cJSON_AddNumberToObject(o, "student", who);
            cJSON_AddStringToObject(o, "name", name->valuestring);
            cJSON_AddNumberToObject(o, "rate_per_minute", rate);
            cJSON_AddNumberToObject(o, "max_tokens", cap);
            r = web_json(rq, 200, o);
        }
    }
    cJSON_Delete(j);
    return r;
}

/* GET /api/workshop: the code, the caps, the students (no keys). */
static enum MHD_Result state(web *w, web_req *rq) {
    struct web_workshop *k = w->workshop;
    cJSON *o = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(o, "students");
    pthread_mutex_lock(&k->mu);
    cJSON_AddStringToObject(o, "code", k->code);
    cJSON_AddNumberToObject(o, "rate_per_minute", k->rate);
    cJSON_AddNumberToObject(o, "max_tokens", k->max_tokens);
    cJSON_AddNumberToObject(o, "max_students", k->max_students);
    for (int i = 0; i < k->n; i++) {
        cJSON *s = cJSON_CreateObject();
        cJSON_AddNumberToObject(s, "student", i + 1);
        cJSON_AddStringToObject(s, "name", k->st[i].name);
        cJSON_AddNumberToObject(s, "requests", (double)k->st[i].requests);
        cJSON_AddNumberToObject(s, "refused", (double)k->st[i].refused);
        cJSON_AddNumberToObject(s, "joined_s", k->st[i].joined);
        cJSON_AddItemToArray(a, s);
    }
    pthread_mutex_unlock(&k->mu);
    return web_json(rq, 200, o);
}

/* GET /api/workshop/steps?after=ID&limit=: the engine's steps (layer 6's
 * "step" slices), oldest first, after slice ID: when, how long, the batch
 * (its request ids), its tokens and the KV blocks in use. */
static enum MHD_Result steps(web *w, web_req *rq, sqlite3 *db) {
    int64_t after = 0, limit = MAX_STEPS;
    web_param ps[] = { { "after", 0, INT64_MAX, &after }, { "limit", 1, MAX_STEPS, &limit } };
    enum MHD_Result r;
    if (web_params(rq, ps, 2, &r)) return r;
    sqlite3_stmt *st = NULL;
    sqlite3_prepare_v2(db, "SELECT id, ts_ns, coalesce(dur_ns, 0), step, json_extract(args, '$.tokens'), "
                           "json_extract(args, '$.n_prefill'), json_extract(args, '$.n_decode'), "
                           "json_extract(args, '$.kv_blocks_used'), json_extract(args, '$.requests') FROM slices "
                           "WHERE run_id = ?1 AND layer = 6 AND name = 'step' AND id > ?2 ORDER BY id LIMIT ?3", -1, &st, NULL);
    sqlite3_bind_int64(st, 1, w->run);
    sqlite3_bind_int64(st, 2, after);
    sqlite3_bind_int64(st, 3, limit);
    cJSON *o = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(o, "steps");
    cJSON_AddStringToObject(o, "columns", "id, ts_ns, dur_ns, step, tokens, n_prefill, n_decode, kv_blocks_used, requests");
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        cJSON *row = cJSON_CreateArray();
        for (int i = 0; i < 8; i++) cJSON_AddItemToArray(row, cJSON_CreateNumber(sqlite3_column_double(st, i)));
        cJSON *ids = cJSON_Parse((const char *)sqlite3_column_text(st, 8));
        cJSON_AddItemToArray(row, cJSON_IsArray(ids) ? ids : (cJSON_Delete(ids), cJSON_CreateArray()));
        cJSON_AddItemToArray(a, row);
    }
    sqlite3_finalize(st);
    return web_json(rq, 200, o);
}

/* GET /api/workshop/requests?after=N: every request after N, from layer
 * 6's events: who sent it, when it arrived, its TTFT (first_token), its
 * tokens, latency and finish (finish), or its refusal. */
static enum MHD_Result requests(web *w, web_req *rq, sqlite3 *db) {
    int64_t after = 0;
    web_param ps[] = { { "after", 0, INT64_MAX, &after } };
    enum MHD_Result r;
    if (web_params(rq, ps, 1, &r)) return r;
    sqlite3_stmt *st = NULL;
    sqlite3_prepare_v2(db, "SELECT request, min(ts_ns) FILTER (WHERE name = 'http_request'), "
                           "max(json_extract(args, '$.owner')) FILTER (WHERE name = 'http_request'), "
                           "max(json_extract(args, '$.ttft_s')) FILTER (WHERE name = 'first_token'), "
                           "max(json_extract(args, '$.generated')) FILTER (WHERE name = 'finish'), "
                           "max(json_extract(args, '$.latency_s')) FILTER (WHERE name = 'finish'), "
                           "max(json_extract(args, '$.finish')) FILTER (WHERE name = 'finish'), "
                           "max(json_extract(args, '$.status')) FILTER (WHERE name = 'reject') FROM slices "
                           "WHERE run_id = ?1 AND layer = 6 AND name IN ('http_request', 'first_token', 'finish', 'reject') "
                           "AND request > ?2 GROUP BY request ORDER BY request LIMIT ?3", -1, &st, NULL);
    sqlite3_bind_int64(st, 1, w->run);
    sqlite3_bind_int64(st, 2, after);
    sqlite3_bind_int64(st, 3, MAX_REQUESTS);
    cJSON *o = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(o, "requests");
    static const char *keys[] = { "request", "arrived_ns", "owner", "ttft_s", "tokens", "latency_s", "finish", "refused" };
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        cJSON *q = cJSON_CreateObject();
        for (int i = 0; i < 8; i++) {
            int t = sqlite3_column_type(st, i);
            cJSON_AddItemToObject(q, keys[i], t == SQLITE_NULL ? cJSON_CreateNull()
                                  : t == SQLITE_TEXT ? cJSON_CreateString((const char *)sqlite3_column_text(st, i))
                                  : cJSON_CreateNumber(sqlite3_column_double(st, i)));
        }
        cJSON_AddItemToArray(a, q);
    }
    sqlite3_finalize(st);
    return web_json(rq, 200, o);
}

enum MHD_Result web_workshop_api(web *w, web_req *rq, const char *method, const char *rest, const char *body, size_t len) {
    int get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    if (!w->workshop) return web_fail(rq, 404, "no_workshop", NULL, "this server runs no workshop (hipath serve --workshop)");
    if (!strcmp(rest, "join")) {
        if (strcmp(method, "POST")) return web_fail(rq, 405, "method_not_allowed", NULL, "%.16s is not allowed on /api/workshop/join", method);
        return join(w, rq, body, len);
    }
    int what = !*rest ? 1 : !strcmp(rest, "steps") ? 2 : !strcmp(rest, "requests") ? 3 : 0;
    if (!what) return web_fail(rq, 404, "not_found", NULL, "no such endpoint: /api/workshop/%.100s", rest);
    if (!get) return web_fail(rq, 405, "method_not_allowed", NULL, "%.16s is not allowed on /api/workshop/%.100s", method, rest);
    if (rq->student) return web_fail(rq, 403, "teacher_only", NULL, "the whole room's requests are the teacher's to see");
    if (what == 1) return state(w, rq);
    enum MHD_Result r;
    sqlite3 *db = web_db(w, rq, &r);
    if (!db) return r;
    r = what == 2 ? steps(w, rq, db) : requests(w, rq, db);
    sqlite3_close(db);
    return r;
}
