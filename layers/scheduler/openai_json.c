/* openai_json.c -- OpenAI request checking and response building (cJSON). */
#include "layers/scheduler/openai.h"
#include "layers/scheduler/scheduler.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

int api_fail(api_error *e, int status, const char *type, const char *param, const char *code, const char *fmt, ...) {
    e->status = status; e->type = type; e->param = param; e->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return -1;
}

#define BAD(param, ...) api_fail(e, 400, "invalid_request_error", param, NULL, __VA_ARGS__)

char *api_error_json(const api_error *e) {
    cJSON *j = cJSON_CreateObject(), *o = cJSON_AddObjectToObject(j, "error");
    cJSON_AddStringToObject(o, "message", e->message);
    cJSON_AddStringToObject(o, "type", e->type);
    if (e->param) cJSON_AddStringToObject(o, "param", e->param); else cJSON_AddNullToObject(o, "param");
    if (e->code) cJSON_AddStringToObject(o, "code", e->code); else cJSON_AddNullToObject(o, "code");
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return s;
}

static int valid_utf8(const char *s) {
    const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)s;
    for (utf8proc_int32_t c; *p;) {
        utf8proc_ssize_t n = utf8proc_iterate(p, -1, &c);
        if (n <= 0) return 0;
        p += n;
    }
    return 1;
}

/* A field that is absent or null counts as not given (OpenAI accepts null). */
static cJSON *field(cJSON *o, const char *name) {
    cJSON *f = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsNull(f) ? NULL : f;
}

static int get_bool(cJSON *o, const char *name, int *out, api_error *e) {
    cJSON *f = field(o, name);
    if (!f) return 0;
    if (!cJSON_IsBool(f)) return BAD(name, "'%s' must be a boolean", name);
    *out = cJSON_IsTrue(f);
    return 0;
}

/* A sampling parameter, checked as the sampler will hold it (a float: a
 * top_p of 1e-50 is 0 there, and must be refused as 0 is). */
static int get_number(cJSON *o, const char *name, double lo, double hi, int lo_open, double *out, api_error *e) {
    cJSON *f = field(o, name);
    if (!f) return 0;
    if (!cJSON_IsNumber(f)) return BAD(name, "'%s' must be a number", name);
    double v = (float)f->valuedouble;
    if (!(lo_open ? v > lo : v >= lo) || !(v <= hi))
        return BAD(name, "'%s' must be in %s%g, %g], got %g", name, lo_open ? "(" : "[", lo, hi, v);
    *out = v;
    return 0;
}

static int get_int(cJSON *o, const char *name, double lo, double hi, long long *out, api_error *e) {
    cJSON *f = field(o, name);
    if (!f) return 0;
    double v = f->valuedouble;
    if (!cJSON_IsNumber(f) || v != floor(v)) return BAD(name, "'%s' must be an integer", name);
    if (v < lo || v > hi) return BAD(name, "'%s' must be %s%.0f, got %.0f", name, v < lo ? "at least " : "at most ", v < lo ? lo : hi, v);
    *out = (long long)v;
    return 0;
}

/* A non-empty, valid UTF-8 string. */
static int check_text(const cJSON *f, const char *param, const char *what, api_error *e) {
    if (!cJSON_IsString(f)) return BAD(param, "%s must be a string", what);
    if (!*f->valuestring) return BAD(param, "%s is empty", what);
    if (!valid_utf8(f->valuestring)) return BAD(param, "%s is not valid UTF-8", what);
    return 0;
}

/* Content given as parts [{"type": "text", "text": ...}] is joined into one
 * string in place, so the rest sees a string. */
static int join_parts(cJSON *msg, cJSON *content, const char *what, api_error *e) {
    size_t len = 0;
    cJSON *p;
    cJSON_ArrayForEach(p, content) {
        cJSON *type = cJSON_GetObjectItemCaseSensitive(p, "type"), *text = cJSON_GetObjectItemCaseSensitive(p, "text");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "text") || !cJSON_IsString(text))
            return BAD("messages", "%s: only parts of type \"text\" with a string \"text\" are supported", what);
        len += strlen(text->valuestring);
    }
    char *s = malloc(len + 1), *q = s;
    if (!s) return api_fail(e, 500, "server_error", NULL, NULL, "out of memory");
    cJSON_ArrayForEach(p, content) {
        const char *t = cJSON_GetObjectItemCaseSensitive(p, "text")->valuestring;
        size_t n = strlen(t);
        memcpy(q, t, n);
        q += n;
    }
    *q = 0;
    cJSON_ReplaceItemInObjectCaseSensitive(msg, "content", cJSON_CreateString(s));
    free(s);
    return 0;
}

static int parse_messages(api_request *q, api_error *e) {
    static const char *ROLES[] = { "system", "developer", "user", "assistant", "tool" };
    cJSON *m = field(q->root, "messages");
    if (!m) return BAD("messages", "'messages' is required");
    if (!cJSON_IsArray(m) || !cJSON_GetArraySize(m)) return BAD("messages", "'messages' must be a non-empty array");
    q->n_msgs = cJSON_GetArraySize(m);
    q->msgs = calloc(q->n_msgs, sizeof *q->msgs);
    if (!q->msgs) return api_fail(e, 500, "server_error", NULL, NULL, "out of memory");
    int i = 0;
    cJSON *msg;
    cJSON_ArrayForEach(msg, m) {
        char what[64];
        if (!cJSON_IsObject(msg)) return BAD("messages", "messages[%d] must be an object", i);
        cJSON *role = cJSON_GetObjectItemCaseSensitive(msg, "role"), *content = field(msg, "content");
        int known = 0;
        for (size_t r = 0; cJSON_IsString(role) && r < sizeof ROLES / sizeof *ROLES; r++) known |= !strcmp(role->valuestring, ROLES[r]);
        if (!known) return BAD("messages", "messages[%d].role must be one of system, developer, user, assistant, tool", i);
        snprintf(what, sizeof what, "messages[%d].content", i);
        if (!content) return BAD("messages", "%s is required", what);
        if (cJSON_IsArray(content)) {
            if (join_parts(msg, content, what, e)) return -1;
            content = cJSON_GetObjectItemCaseSensitive(msg, "content");
        }
        if (check_text(content, "messages", what, e)) return -1;
        q->msgs[i++] = (chat_message){ role->valuestring, content->valuestring };
    }
    return 0;
}

static int parse_prompt(api_request *q, api_error *e) {
    cJSON *p = field(q->root, "prompt");
    if (!p) return BAD("prompt", "'prompt' is required");
    if (cJSON_IsArray(p)) {   /* a batch of one prompt */
        if (cJSON_GetArraySize(p) != 1) return BAD("prompt", "'prompt' must be a string (or an array of one string)");
        p = cJSON_GetArrayItem(p, 0);
    }
    if (check_text(p, "prompt", "'prompt'", e)) return -1;
    q->prompt = p->valuestring;
    return 0;
}

static int parse_stop(api_request *q, api_error *e) {
    cJSON *s = field(q->root, "stop"), *x;
    if (!s) return 0;
    if (cJSON_IsString(s)) {
        if (check_text(s, "stop", "'stop'", e)) return -1;
        q->stop[q->n_stop++] = s->valuestring;
        return 0;
    }
    if (!cJSON_IsArray(s) || cJSON_GetArraySize(s) > API_MAX_STOP)
        return BAD("stop", "'stop' must be a string or an array of at most %d strings", API_MAX_STOP);
    cJSON_ArrayForEach(x, s) {
        if (check_text(x, "stop", "each 'stop' entry", e)) return -1;
        q->stop[q->n_stop++] = x->valuestring;
    }
    return 0;
}

int api_parse(api_request *q, const char *body, size_t len, int chat, const char *served, api_error *e) {
    memset(q, 0, sizeof *q);
    q->chat = chat;
    q->temperature = 1;
    q->top_p = 1;
    q->split_special_tokens = -1;
    q->root = cJSON_ParseWithLength(body, len);
    if (!q->root) return BAD(NULL, "the body is not valid JSON (error near byte %ld)", (long)(cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() - body : 0));
    if (!cJSON_IsObject(q->root)) return BAD(NULL, "the body must be a JSON object");
    cJSON *model = field(q->root, "model");
    if (model && !cJSON_IsString(model)) return BAD("model", "'model' must be a string");
    if (model && strcmp(model->valuestring, served))
        return api_fail(e, 404, "invalid_request_error", "model", "model_not_found",
                        "The model `%.200s` does not exist. This server serves `%.200s`.", model->valuestring, served);
    if (chat ? parse_messages(q, e) : parse_prompt(q, e)) return -1;

    long long n = 1, max_tokens = 0, seed = 0, top = 0;
    double temperature = 1, top_p = 1;
    if (get_int(q->root, "n", 1, 1, &n, e)) return -1;
    if (get_int(q->root, "max_tokens", 1, 1e9, &max_tokens, e)) return -1;
    if (chat && get_int(q->root, "max_completion_tokens", 1, 1e9, &max_tokens, e)) return -1;
    if (get_number(q->root, "temperature", 0, 2, 0, &temperature, e)) return -1;
    if (get_number(q->root, "top_p", 0, 1, 1, &top_p, e)) return -1;
    if (get_int(q->root, "seed", -9.2e18, 9.2e18, &seed, e)) return -1;
    if (parse_stop(q, e) || get_bool(q->root, "stream", &q->stream, e) || get_bool(q->root, "ignore_eos", &q->ignore_eos, e)
        || get_bool(q->root, "split_special_tokens", &q->split_special_tokens, e))
        return -1;
    cJSON *so = field(q->root, "stream_options");
    if (so && !cJSON_IsObject(so)) return BAD("stream_options", "'stream_options' must be an object");
    if (so && get_bool(so, "include_usage", &q->include_usage, e)) { e->param = "stream_options"; return -1; }
    if (chat) {
        if (get_bool(q->root, "logprobs", &q->logprobs, e) || get_int(q->root, "top_logprobs", 0, MAX_TOP_LOGPROBS, &top, e)) return -1;
        if (field(q->root, "top_logprobs") && !q->logprobs) return BAD("top_logprobs", "'top_logprobs' requires 'logprobs': true");
    } else {   /* legacy completions: logprobs is the number of alternatives */
        if (get_int(q->root, "logprobs", 0, 5, &top, e)) return -1;
        q->logprobs = field(q->root, "logprobs") != NULL;
    }
    q->max_tokens = (int)max_tokens;
    q->temperature = (float)temperature;
    q->top_p = (float)top_p;
    q->has_seed = field(q->root, "seed") != NULL;
    q->seed = (uint64_t)seed;
    q->top_logprobs = (int)top;
    return 0;
}

void api_request_free(api_request *q) {
    cJSON_Delete(q->root);
    free(q->msgs);
    memset(q, 0, sizeof *q);
}

/* ---- responses ---- */

static cJSON *envelope(const api_reply *a, const char *object) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "id", a->id);
    cJSON_AddStringToObject(j, "object", object);
    cJSON_AddNumberToObject(j, "created", a->created);
    cJSON_AddStringToObject(j, "model", a->model);
    return j;
}

static char *print(cJSON *j) {
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return s;
}

/* A token's text for the logprobs: its bytes, with a broken UTF-8 piece
 * (one token of a multi-byte character) shown as U+FFFD. */
static cJSON *token_string(const text_codec *t, int id, cJSON **bytes) {
    size_t n = 0;
    const char *b = t->token_bytes(t->ctx, id, &n);
    char s[256 * 3 + 1], *q = s;
    const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)b;
    *bytes = cJSON_CreateArray();
    for (size_t i = 0; i < n;) {
        utf8proc_int32_t c;
        utf8proc_ssize_t k = utf8proc_iterate(p + i, n - i, &c);
        if (k <= 0) { c = 0xFFFD; k = 1; }
        if (q - s < (long)sizeof s - 4) q += utf8proc_encode_char(c, (utf8proc_uint8_t *)q);
        for (utf8proc_ssize_t j = 0; j < k; j++) cJSON_AddItemToArray(*bytes, cJSON_CreateNumber(p[i + j]));
        i += k;
    }
    *q = 0;
    return cJSON_CreateString(s);
}

static cJSON *chat_logprob(const text_codec *t, int id, float lp) {
    cJSON *o = cJSON_CreateObject(), *bytes;
    cJSON_AddItemToObject(o, "token", token_string(t, id, &bytes));
    cJSON_AddNumberToObject(o, "logprob", lp);
    cJSON_AddItemToObject(o, "bytes", bytes);
    return o;
}

cJSON *api_logprobs(const api_reply *a, const sample_result *s, int n, int text_offset) {
    cJSON *lp = cJSON_CreateObject(), *bytes;
    if (a->chat) {
        cJSON *content = cJSON_AddArrayToObject(lp, "content");
        for (int i = 0; i < n; i++) {
            cJSON *o = chat_logprob(a->text, s[i].id, s[i].logprob), *top = cJSON_AddArrayToObject(o, "top_logprobs");
            for (int k = 0; k < a->top_logprobs && k < s[i].n_top; k++)
                cJSON_AddItemToArray(top, chat_logprob(a->text, s[i].top_id[k], s[i].top_logprob[k]));
            cJSON_AddItemToArray(content, o);
        }
        return lp;
    }
    cJSON *tokens = cJSON_AddArrayToObject(lp, "tokens"), *lps = cJSON_AddArrayToObject(lp, "token_logprobs"),
          *tops = cJSON_AddArrayToObject(lp, "top_logprobs"), *offs = cJSON_AddArrayToObject(lp, "text_offset");
    for (int i = 0; i < n; i++) {
        cJSON *tok = token_string(a->text, s[i].id, &bytes), *top = cJSON_CreateObject();
        cJSON_AddItemToArray(offs, cJSON_CreateNumber(text_offset));
        if (!is_stop_id(a->stop_ids, a->n_stop_ids, s[i].id)) text_offset += cJSON_GetArraySize(bytes);
        cJSON_Delete(bytes);
        cJSON_AddItemToArray(tokens, tok);
        cJSON_AddItemToArray(lps, cJSON_CreateNumber(s[i].logprob));
        for (int k = 0; k < a->top_logprobs && k < s[i].n_top; k++) {
            cJSON *alt = token_string(a->text, s[i].top_id[k], &bytes);
            cJSON_Delete(bytes);
            if (!cJSON_GetObjectItemCaseSensitive(top, alt->valuestring))
                cJSON_AddNumberToObject(top, alt->valuestring, s[i].top_logprob[k]);
            cJSON_Delete(alt);
        }
        cJSON_AddItemToArray(tops, top);
    }
    return lp;
}

static void add_usage(cJSON *j, api_usage a) {
    cJSON *u = cJSON_AddObjectToObject(j, "usage");
    cJSON_AddNumberToObject(u, "prompt_tokens", a.prompt_tokens);
    cJSON_AddNumberToObject(u, "completion_tokens", a.completion_tokens);
    cJSON_AddNumberToObject(u, "total_tokens", a.prompt_tokens + a.completion_tokens);
    cJSON_AddNumberToObject(cJSON_AddObjectToObject(u, "prompt_tokens_details"), "cached_tokens", a.cached_tokens);
}

/* choices[0] with the text as a chat message, chat delta or completion text. */
static cJSON *choice(cJSON *j, cJSON *logprobs, const char *finish) {
    cJSON *c = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(j, "choices"), c);
    cJSON_AddNumberToObject(c, "index", 0);
    if (logprobs) cJSON_AddItemToObject(c, "logprobs", logprobs); else cJSON_AddNullToObject(c, "logprobs");
    if (finish) cJSON_AddStringToObject(c, "finish_reason", finish); else cJSON_AddNullToObject(c, "finish_reason");
    return c;
}

char *api_response(const api_reply *a, const char *text, const char *finish, cJSON *logprobs, api_usage u) {
    cJSON *j = envelope(a, a->chat ? "chat.completion" : "text_completion"), *c = choice(j, logprobs, finish);
    if (a->chat) {
        cJSON *m = cJSON_AddObjectToObject(c, "message");
        cJSON_AddStringToObject(m, "role", "assistant");
        cJSON_AddStringToObject(m, "content", text);
    } else {
        cJSON_AddStringToObject(c, "text", text);
    }
    add_usage(j, u);
    return print(j);
}

char *api_chunk(const api_reply *a, int first, const char *text, cJSON *logprobs, const char *finish) {
    cJSON *j = envelope(a, a->chat ? "chat.completion.chunk" : "text_completion"), *c = choice(j, logprobs, finish);
    if (a->chat) {
        cJSON *d = cJSON_AddObjectToObject(c, "delta");
        if (first) cJSON_AddStringToObject(d, "role", "assistant");
        if (text) cJSON_AddStringToObject(d, "content", text);
    } else {
        cJSON_AddStringToObject(c, "text", text ? text : "");
    }
    return print(j);
}

char *api_usage_chunk(const api_reply *a, api_usage u) {
    cJSON *j = envelope(a, a->chat ? "chat.completion.chunk" : "text_completion");
    cJSON_AddArrayToObject(j, "choices");
    add_usage(j, u);
    return print(j);
}
