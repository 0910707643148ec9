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
#include "trace/sql.h"
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <utf8proc.h>

#define KEY_HEX 32
#define NAME_BYTES 40
#define NAME_CAP (NAME_BYTES + 16)   /* and a " #N" that makes it unique */
#define FAIL_ADDRS 256     /* addresses whose wrong codes are counted */
#define FAIL_LIMIT 10      /* wrong codes an address may send a minute */
#define ROOM_FAIL_LIMIT 60 /* wrong codes the server takes a minute, from every address together */
#define MAX_STEPS 2000     /* steps one /api/workshop/steps answer holds */
#define MAX_REQUESTS 500
/* No 0/O or 1/I/L: read off a projector. */
static const char CODE_ALPHABET[] = "ABCDEFGHJKMNPQRSTUVWXYZ23456789";

typedef struct {
    char key[KEY_HEX + 1], name[NAME_CAP], fold[4 * NAME_CAP];   /* fold: the name as compared (NFKC, case folded) */
    char addr[64];         /* the address it joined from: its seats are counted */
    int removed;           /* by the teacher: the key opens nothing */
    int api_jobs;          /* its /api/ requests under way (work.c) */
    double *times;         /* the last `rate` requests' times, a ring */
    int head, count;
    long long requests, refused;
    double joined;
} student;

typedef struct { int64_t id; int who; } owned;

struct web_workshop {
    pthread_mutex_t mu;
    char code[WORKSHOP_CODE_LEN + 1];
    int rate, max_tokens, max_prompt_tokens, max_students, seats;
    student *st;           /* every student who joined, removed ones too: their number is their index + 1 */
    int n, cap, active;
    owned *own;            /* ids ascending */
    size_t n_own, cap_own;
    struct { char addr[64]; double since; int fails; } fails[FAIL_ADDRS];
    double room_fails[ROOM_FAIL_LIMIT];   /* the last wrong codes' times, a ring */
    int room_head;
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
    k->max_prompt_tokens = o->workshop_max_prompt_tokens;
    k->max_students = o->workshop_students > 0 ? o->workshop_students : 100;
    k->seats = o->workshop_seats;
    for (int i = 0; i < ROOM_FAIL_LIMIT; i++) k->room_fails[i] = -1e9;
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
        unsigned char diff = (unsigned char)k->st[i].removed;
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

int web_workshop_api_start(web *w, int who) {
    struct web_workshop *k = w->workshop;
    pthread_mutex_lock(&k->mu);
    int full = k->st[who - 1].api_jobs >= WEB_STUDENT_JOBS;
    if (!full) k->st[who - 1].api_jobs++;
    pthread_mutex_unlock(&k->mu);
    return full ? -1 : 0;
}

void web_workshop_api_done(web *w, int who) {
    struct web_workshop *k = w->workshop;
    pthread_mutex_lock(&k->mu);
    k->st[who - 1].api_jobs--;
    pthread_mutex_unlock(&k->mu);
}

/* Under mu: where id is in own, or would go (lo). */
static size_t owned_at(const struct web_workshop *k, int64_t id) {
    size_t lo = 0, hi = k->n_own;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (k->own[mid].id < id) lo = mid + 1; else hi = mid;
    }
    return lo;
}

int web_workshop_owner(web *w, int64_t request) {
    struct web_workshop *k = w->workshop;
    if (!k) return 0;
    pthread_mutex_lock(&k->mu);
    size_t i = owned_at(k, request);
    int who = i < k->n_own && k->own[i].id == request ? k->own[i].who : 0;
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

/* Under mu: id is who's. Ids come nearly in order (the server's own, taken
 * by several threads), so the place is found from the end; -1 when out of memory. */
static int note_owner(struct web_workshop *k, int64_t id, int who) {
    if (k->n_own == k->cap_own) {
        size_t cap = 2 * k->cap_own + 1024;
        owned *p = realloc(k->own, cap * sizeof *p);
        if (!p) return -1;
        k->own = p, k->cap_own = cap;
    }
    size_t i = k->n_own;
    while (i > 0 && k->own[i - 1].id > id) i--;
    if (i > 0 && k->own[i - 1].id == id) return 0;   /* noted already */
    memmove(k->own + i + 1, k->own + i, (k->n_own - i) * sizeof *k->own);
    k->own[i] = (owned){ id, who };
    k->n_own++;
    return 0;
}

static void refuse(server_admission *a, int status, const char *code, const char *msg, int retry) {
    a->status = status;
    snprintf(a->code, sizeof a->code, "%s", code);
    snprintf(a->message, sizeof a->message, "%s", msg);
    a->retry_after_s = retry;
}

/* Under mu: 1 with the 429 made in a when student s has had its rate's
 * requests in the last minute. */
static int over_rate(const struct web_workshop *k, student *s, server_admission *a) {
    double t = now_s();
    if (k->rate <= 0 || s->count < k->rate || t - s->times[s->head] >= 60) return 0;
    s->refused++;
    char m[200];
    int retry = (int)ceil(60 - (t - s->times[s->head]));
    snprintf(m, sizeof m, "%d requests a minute per student in this workshop: try again in %d s", k->rate, retry);
    refuse(a, 429, "rate_limit_exceeded", m, retry);
    return 1;
}

/* The gate (server.h): id 0 asks whether the key is a student's and under
 * its rate (a request past it is refused before it has an id, so it
 * leaves nothing in the trace); a generation's id counts it against the
 * student's rate (requests in the last minute; asked again: two may have
 * passed the first look at once) and notes whose it is, before the server
 * answers anything about it (so a student never meets their own request
 * as another's). */
void web_workshop_admit(void *ctx, const char *key, int64_t id, server_admission *a) {
    struct web_workshop *k = ((web *)ctx)->workshop;
    if (!k) { refuse(a, 401, "invalid_api_key", "", 0); return; }
    pthread_mutex_lock(&k->mu);
    int who = find_key(k, key);
    if (!who) {
        refuse(a, 401, "invalid_api_key", "Incorrect or missing key: join the workshop at /join (or send the teacher's key)", 0);
    } else if (id == 0) {
        if (a->generation) over_rate(k, &k->st[who - 1], a);
    } else {
        student *s = &k->st[who - 1];
        snprintf(a->owner, sizeof a->owner, "#%d %.*s", who, (int)sizeof a->owner - 8, s->name);   /* refused or not: the trace says whose */
        double t = now_s();
        if (over_rate(k, s, a)) {}
        else if (note_owner(k, id, who)) refuse(a, 503, "server_error", "out of memory", 0);
        else {
            if (k->rate > 0) {
                s->times[s->head] = t;
                s->head = (s->head + 1) % k->rate;
                if (s->count < k->rate) s->count++;
            }
            s->requests++;
            a->max_tokens = k->max_tokens;
            a->max_prompt_tokens = k->max_prompt_tokens;
        }
    }
    pthread_mutex_unlock(&k->mu);
}

/* The address a request came from, for counting wrong codes and seats. */
static void address_of(struct MHD_Connection *c, char *out, size_t cap) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    snprintf(out, cap, "?");
    if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)ci->client_addr)->sin_addr, out, (socklen_t)cap);
}

/* Under mu: an address's slot of wrong codes in the last minute, -1 when
 * every slot is an address still counting (then the room's limit alone
 * holds it). A slot is taken over only once its minute is over, so many
 * addresses cannot make the table forget one. */
static int fail_slot(struct web_workshop *k, const char *addr, double t) {
    int free_slot = -1;
    for (int i = 0; i < FAIL_ADDRS; i++) {
        int over = t - k->fails[i].since > 60;
        if (!strcmp(k->fails[i].addr, addr)) {
            if (over) k->fails[i].since = t, k->fails[i].fails = 0;
            return i;
        }
        if (free_slot < 0 && (!k->fails[i].addr[0] || over)) free_slot = i;
    }
    if (free_slot < 0) return -1;
    snprintf(k->fails[free_slot].addr, sizeof k->fails[free_slot].addr, "%s", addr);
    k->fails[free_slot].since = t;
    k->fails[free_slot].fails = 0;
    return free_slot;
}

/* Under mu: the seats an address holds (its students not removed); *banned:
 * the teacher removed one of its students. */
static int seats_of(const struct web_workshop *k, const char *addr, int *banned) {
    int n = 0;
    *banned = 0;
    for (int i = 0; i < k->n; i++) {
        if (strcmp(k->st[i].addr, addr)) continue;
        n += !k->st[i].removed;
        *banned |= k->st[i].removed;
    }
    return n;
}

/* A name as the room sees it on the projector: valid UTF-8 without
 * surrogates; no control, format, private or unassigned characters; none
 * that Unicode says to draw as nothing (zero-width, fillers, variation
 * selectors: default-ignorable); no space but the plain one; at most two
 * marks on a letter; at least one letter or digit; spaces at the ends
 * trimmed, NFC; 1 to NAME_BYTES bytes. out: the name, fold: the form
 * names are compared in (NFKC, case folded). Look-alike letters of other
 * scripts pass: every name is shown with its number (#3). */
static int name_ok(const char *s, char *out, char *fold) {
    const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)s;
    size_t n = strlen(s);
    int marks = 0, seen = 0;
    if (n > 4 * NAME_BYTES) return 0;
    for (size_t i = 0; i < n;) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t k = utf8proc_iterate(p + i, (utf8proc_ssize_t)(n - i), &cp);
        if (k <= 0) return 0;
        utf8proc_category_t c = utf8proc_category(cp);
        if (c == UTF8PROC_CATEGORY_CC || c == UTF8PROC_CATEGORY_CF || c == UTF8PROC_CATEGORY_CS || c == UTF8PROC_CATEGORY_CO ||
            c == UTF8PROC_CATEGORY_CN || c == UTF8PROC_CATEGORY_ZL || c == UTF8PROC_CATEGORY_ZP ||
            (c == UTF8PROC_CATEGORY_ZS && cp != ' ') || utf8proc_get_property(cp)->ignorable || cp == 0x2800) return 0;
        int mark = c == UTF8PROC_CATEGORY_MN || c == UTF8PROC_CATEGORY_MC || c == UTF8PROC_CATEGORY_ME;
        if ((marks = mark ? marks + 1 : 0) > 2) return 0;
        seen |= c <= UTF8PROC_CATEGORY_LO || (c >= UTF8PROC_CATEGORY_ND && c <= UTF8PROC_CATEGORY_NO);
        i += (size_t)k;
    }
    if (!seen) return 0;
    char *nfc = (char *)utf8proc_NFC(p), *cf = NULL;
    int ok = 0;
    if (nfc) {   /* trimmed, then folded: only plain spaces are left to trim */
        char *a = nfc, *e = nfc + strlen(nfc);
        while (*a == ' ') a++;
        while (e > a && e[-1] == ' ') e--;
        *e = 0;
        if (e > a && e - a <= NAME_BYTES && (cf = (char *)utf8proc_NFKC_Casefold((const utf8proc_uint8_t *)a))) {
            snprintf(out, NAME_CAP, "%s", a);
            snprintf(fold, 4 * NAME_CAP, "%s", cf);
            ok = 1;
        }
    }
    free(nfc);
    free(cf);
    return ok;
}

/* Under mu: name made unique in the room ("Ana", "Ana #2", ...). */
static void unique_name(const struct web_workshop *k, char *name, char *fold) {
    char base[NAME_CAP], base_fold[4 * NAME_CAP];
    snprintf(base, sizeof base, "%s", name);
    snprintf(base_fold, sizeof base_fold, "%s", fold);
    for (int n = 2;; n++) {
        int taken = 0;
        for (int i = 0; i < k->n && !taken; i++) taken = !strcmp(k->st[i].fold, fold);
        if (!taken) return;
        snprintf(name, NAME_CAP, "%.*s #%d", NAME_BYTES, base, n);
        snprintf(fold, 4 * NAME_CAP, "%.*s #%d", 4 * NAME_BYTES, base_fold, n);
    }
}

/* Under mu: a new student's slot, or NULL when out of memory. */
static student *new_student(struct web_workshop *k) {
    if (k->n == k->cap) {
        int cap = 2 * k->cap + 16;
        student *p = realloc(k->st, cap * sizeof *p);
        if (!p) return NULL;
        k->st = p, k->cap = cap;
    }
    student *s = &k->st[k->n];
    memset(s, 0, sizeof *s);
    if (k->rate > 0 && !(s->times = calloc(k->rate, sizeof(double)))) return NULL;
    return s;
}

/* POST /api/workshop/join {"code", "name"} as application/json (a form on
 * another site cannot send that without asking first): a key of the
 * student's own. A wrong code counts against the address (FAIL_LIMIT a
 * minute) and the room (ROOM_FAIL_LIMIT a minute: past it only addresses
 * with a student already may join), a right one takes one of the
 * address's seats. */
static enum MHD_Result join(web *w, web_req *rq, const char *body, size_t len) {
    struct web_workshop *k = w->workshop;
    const char *type = MHD_lookup_connection_value(rq->c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!type || strncasecmp(type, "application/json", 16) || (type[16] && type[16] != ';' && type[16] != ' '))
        return web_fail(rq, 415, "unsupported_media_type", NULL, "Content-Type must be application/json");
    cJSON *j = body ? cJSON_ParseWithLength(body, len) : NULL;
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(j, "code"), *name = cJSON_GetObjectItemCaseSensitive(j, "name");
    char clean[NAME_CAP], fold[4 * NAME_CAP];
    enum MHD_Result r;
    if (!cJSON_IsObject(j)) r = web_fail(rq, 400, "invalid_json", NULL, "the body must be a JSON object {\"code\", \"name\"}");
    else if (!cJSON_IsString(code)) r = web_fail(rq, 400, "invalid_parameter", "code", "code must be the join code (a string)");
    else if (!cJSON_IsString(name) || memmem(body, len, "\\u0000", 6) || !name_ok(name->valuestring, clean, fold))   /* cJSON ends a string at \u0000 */
        r = web_fail(rq, 400, "invalid_parameter", "name", "name must be 1 to %d bytes of text: letters, digits, punctuation "
                     "and spaces, no control, format or invisible characters", NAME_BYTES);
    else {
        char addr[64], upper[WORKSHOP_CODE_LEN + 1] = "";
        address_of(rq->c, addr, sizeof addr);
        for (int i = 0; i < WORKSHOP_CODE_LEN && code->valuestring[i]; i++)
            upper[i] = (char)(code->valuestring[i] >= 'a' && code->valuestring[i] <= 'z' ? code->valuestring[i] - 32 : code->valuestring[i]);
        unsigned char key[KEY_HEX / 2];
        int rnd = random_bytes(key, sizeof key);
        double t = now_s();
        pthread_mutex_lock(&k->mu);
        int banned, slot = fail_slot(k, addr, t), who = 0, retry = 0, seated = seats_of(k, addr, &banned), why = 0;
        double room_oldest = k->room_fails[k->room_head];   /* the ring's oldest wrong code */
        unsigned char diff = strlen(code->valuestring) != WORKSHOP_CODE_LEN;
        for (int i = 0; i < WORKSHOP_CODE_LEN; i++) diff |= (unsigned char)(upper[i] ^ k->code[i]);
        enum { OK, ADDR_LOCKED, ROOM_LOCKED, WRONG, BANNED, SEATS, FULL, NO_MEMORY };
        if (slot >= 0 && k->fails[slot].fails >= FAIL_LIMIT) why = ADDR_LOCKED, retry = (int)fmax(1, ceil(60 - (t - k->fails[slot].since)));
        else if (!seated && t - room_oldest < 60) why = ROOM_LOCKED, retry = (int)fmax(1, ceil(60 - (t - room_oldest)));
        else if (diff) {
            why = WRONG;
            if (slot >= 0) k->fails[slot].fails++;
            k->room_fails[k->room_head] = t;
            k->room_head = (k->room_head + 1) % ROOM_FAIL_LIMIT;
        } else if (k->seats > 0 && banned) why = BANNED;   /* seats per address: an address is a person's */
        else if (k->seats > 0 && seated >= k->seats) why = SEATS;
        else if (k->active >= k->max_students) why = FULL;
        else {
            student *s = rnd ? NULL : new_student(k);
            if (!s) why = NO_MEMORY;
            else {
                for (size_t i = 0; i < sizeof key; i++) snprintf(s->key + 2 * i, 3, "%02x", key[i]);
                unique_name(k, clean, fold);
                snprintf(s->name, sizeof s->name, "%s", clean);
                snprintf(s->fold, sizeof s->fold, "%s", fold);
                snprintf(s->addr, sizeof s->addr, "%s", addr);
                s->joined = t - k->t0;
                who = ++k->n;
                k->active++;
            }
        }
        int rate = k->rate, cap = k->max_tokens, prompt_cap = k->max_prompt_tokens;
        char skey[KEY_HEX + 1];
        if (who) memcpy(skey, k->st[who - 1].key, sizeof skey);
        pthread_mutex_unlock(&k->mu);
        if (why == ADDR_LOCKED || why == ROOM_LOCKED) {
            if (why == ADDR_LOCKED)
                r = web_fail(rq, 429, "rate_limit_exceeded", "code", "%d wrong codes from this address in a minute: try again in %d s", FAIL_LIMIT, retry);
            else
                r = web_fail(rq, 429, "rate_limit_exceeded", "code", "%d wrong codes reached this workshop in a minute: only "
                             "addresses that joined already may join now; try again in %d s", ROOM_FAIL_LIMIT, retry);
            char b[16];
            snprintf(b, sizeof b, "%d", retry);
            if (rq->resp) MHD_add_response_header(rq->resp, "Retry-After", b);
        } else if (why == WRONG) r = web_fail(rq, 403, "invalid_join_code", "code", "that is not this workshop's join code");
        else if (why == BANNED) r = web_fail(rq, 403, "removed_by_teacher", NULL, "the teacher removed a student of this address; ask the teacher");
        else if (why == SEATS)
            r = web_fail(rq, 403, "seats_per_address", NULL, "%d students have joined from this address already "
                         "(--workshop-seats-per-address); ask the teacher", k->seats);
        else if (why == FULL) r = web_fail(rq, 409, "workshop_full", NULL, "the workshop is full (%d students: --workshop-students)", k->max_students);
        else if (why == NO_MEMORY) r = web_fail(rq, 500, "server_error", NULL, "out of memory, or no random bytes");
        else {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "key", skey);
            cJSON_AddNumberToObject(o, "student", who);
            cJSON_AddStringToObject(o, "name", clean);
            cJSON_AddNumberToObject(o, "rate_per_minute", rate);
            cJSON_AddNumberToObject(o, "max_tokens", cap);
            cJSON_AddNumberToObject(o, "max_prompt_tokens", prompt_cap);
            r = web_json(rq, 200, o);
        }
    }
    cJSON_Delete(j);
    return r;
}

/* GET /api/workshop: the code, the caps, the students (no keys, no addresses). */
static enum MHD_Result state(web *w, web_req *rq) {
    struct web_workshop *k = w->workshop;
    cJSON *o = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(o, "students");
    pthread_mutex_lock(&k->mu);
    cJSON_AddStringToObject(o, "code", k->code);
    cJSON_AddNumberToObject(o, "rate_per_minute", k->rate);
    cJSON_AddNumberToObject(o, "max_tokens", k->max_tokens);
    cJSON_AddNumberToObject(o, "max_prompt_tokens", k->max_prompt_tokens);
    cJSON_AddNumberToObject(o, "max_students", k->max_students);
    cJSON_AddNumberToObject(o, "seats_per_address", k->seats);
    for (int i = 0; i < k->n; i++) {
        cJSON *s = cJSON_CreateObject();
        cJSON_AddNumberToObject(s, "student", i + 1);
        cJSON_AddStringToObject(s, "name", k->st[i].name);
        cJSON_AddNumberToObject(s, "requests", (double)k->st[i].requests);
        cJSON_AddNumberToObject(s, "refused", (double)k->st[i].refused);
        cJSON_AddNumberToObject(s, "joined_s", k->st[i].joined);
        cJSON_AddBoolToObject(s, "removed", k->st[i].removed);
        cJSON_AddItemToArray(a, s);
    }
    pthread_mutex_unlock(&k->mu);
    return web_json(rq, 200, o);
}

/* DELETE /api/workshop/students/N: the teacher removes student N (a seat
 * taken by a stranger, or one of twelve keys of one person): the key opens
 * nothing from then on, the name stays in the list, and its address may not
 * join again (while seats are counted per address). */
static enum MHD_Result remove_student(web *w, web_req *rq, const char *n) {
    struct web_workshop *k = w->workshop;
    char *end;
    long who = strtol(n, &end, 10);
    pthread_mutex_lock(&k->mu);
    int ok = *n >= '1' && *n <= '9' && !*end && who <= k->n;
    if (ok && !k->st[who - 1].removed) {
        k->st[who - 1].removed = 1;
        k->active--;
    }
    pthread_mutex_unlock(&k->mu);
    if (!ok) return web_fail(rq, 404, "student_not_found", NULL, "no student %.20s in this workshop", n);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "removed", (double)who);
    return web_json(rq, 200, o);
}

/* A step's row (web-workshop-steps.sql's columns): its numbers, then its
 * requests' ids and its chunks, parsed ([] for a step written without). */
static cJSON *step_row(sqlite3_stmt *st) {
    cJSON *row = cJSON_CreateArray();
    for (int i = 0; i < 10; i++) cJSON_AddItemToArray(row, cJSON_CreateNumber(sqlite3_column_double(st, i)));
    for (int i = 10; i < 12; i++) {
        cJSON *list = cJSON_Parse((const char *)sqlite3_column_text(st, i));
        cJSON_AddItemToArray(row, cJSON_IsArray(list) ? list : (cJSON_Delete(list), cJSON_CreateArray()));
    }
    return row;
}

/* GET /api/workshop/steps?after=ID&limit=: the engine's steps (layer 6's
 * "step" slices), oldest first, after slice ID: when, how long, its
 * prefill and decode tokens, the KV blocks in use, the batch (its request
 * ids) and which chunk of its prompt each prefill computes.
 * GET /api/workshop/scheduler?after=ID&limit= (events): the scheduler's
 * preemptions, resumptions and prefix-cache hits (layer 6's instants),
 * oldest first, after slice ID, each with its request, tokens and blocks. */
static enum MHD_Result after_id(web *w, web_req *rq, sqlite3 *db, int events) {
    int64_t after = 0, limit = MAX_STEPS;
    web_param ps[] = { { "after", 0, INT64_MAX, &after }, { "limit", 1, MAX_STEPS, &limit } };
    enum MHD_Result r;
    if (web_params(rq, ps, 2, &r)) return r;
    sqlite3_stmt *st = TSQL_PREP(db, events ? TSQL_WEB_WORKSHOP_SCHEDULER : TSQL_WEB_WORKSHOP_STEPS, w->run, after, limit);
    cJSON *o = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(o, events ? "events" : "steps");
    static const char *const keys[] = { "id", "ts_ns", "name", "request", "tokens", "blocks" };
    if (!events)
        cJSON_AddStringToObject(o, "columns", "id, ts_ns, dur_ns, step, tokens, n_prefill, n_decode, kv_blocks_used, "
                                              "prefill_tokens, decode_tokens, requests, chunks");
    while (st && sqlite3_step(st) == SQLITE_ROW) cJSON_AddItemToArray(a, events ? web_row(st, keys, 6) : step_row(st));
    sqlite3_finalize(st);
    return web_json(rq, 200, o);
}

/* GET /api/workshop/requests?after=N: every request after N, from layer
 * 6's events: who sent it, when it arrived, its TTFT (first_token), its
 * tokens, latency and finish (finish), or its refusal; the prompt tokens
 * the prefix cache held at its admission, and how often it was preempted. */
static enum MHD_Result requests(web *w, web_req *rq, sqlite3 *db) {
    int64_t after = 0;
    web_param ps[] = { { "after", 0, INT64_MAX, &after } };
    enum MHD_Result r;
    if (web_params(rq, ps, 1, &r)) return r;
    sqlite3_stmt *st = TSQL_PREP(db, TSQL_WEB_WORKSHOP_REQUESTS, w->run, after, MAX_REQUESTS);
    cJSON *o = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(o, "requests");
    static const char *const keys[] = { "request", "arrived_ns", "owner", "ttft_s", "tokens", "latency_s", "finish", "refused",
                                        "cached_tokens", "preempted" };
    while (st && sqlite3_step(st) == SQLITE_ROW) cJSON_AddItemToArray(a, web_row(st, keys, 10));
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
    int what = !*rest ? 1 : !strcmp(rest, "steps") ? 2 : !strcmp(rest, "requests") ? 3 : !strncmp(rest, "students/", 9) ? 4
             : !strcmp(rest, "scheduler") ? 5 : 0;
    if (!what) return web_fail(rq, 404, "not_found", NULL, "no such endpoint: /api/workshop/%.100s", rest);
    if (what == 4 ? strcmp(method, "DELETE") : !get)
        return web_fail(rq, 405, "method_not_allowed", NULL, "%.16s is not allowed on /api/workshop/%.100s", method, rest);
    if (rq->student) return web_fail(rq, 403, "teacher_only", NULL, "the whole room is the teacher's to see and change");
    if (what == 1) return state(w, rq);
    if (what == 4) return remove_student(w, rq, rest + 9);
    enum MHD_Result r;
    sqlite3 *db = web_db(w, rq, &r);
    if (!db) return r;
    r = what == 3 ? requests(w, rq, db) : after_id(w, rq, db, what == 5);
    sqlite3_close(db);
    return r;
}
