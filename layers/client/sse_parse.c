/* sse_parse.c -- layer 8: a chat stream's bytes into lines, lines into chunks. */
#include "layers/client/sse_parse.h"
#include <limits.h>
#include <stdlib.h>
#include <string.h>

static int keep(sse_lines *l, const char *b, size_t n) {
    if (l->len + n > l->cap) {
        size_t cap = 2 * (l->len + n);
        char *p = realloc(l->p, cap < l->max ? cap : l->max);
        if (!p) return -1;
        l->p = p;
        l->cap = cap < l->max ? cap : l->max;
    }
    memcpy(l->p + l->len, b, n);
    l->len += n;
    return 0;
}

/* A line that ends in the piece it began in goes to fn in place; only a
 * line cut by the network is gathered, so each byte is copied at most once. */
int sse_lines_feed(sse_lines *l, const char *b, size_t n, sse_line_fn fn, void *user) {
    while (n) {
        const char *nl = memchr(b, '\n', n);
        size_t k = nl ? (size_t)(nl - b) : n;
        if (k > l->max - l->len) return -1;
        if (nl && !l->len) {
            fn(user, b, k - (k && b[k - 1] == '\r'));
        } else {
            if (keep(l, b, k)) return -1;
            if (nl) {
                fn(user, l->p, l->len - (l->len && l->p[l->len - 1] == '\r'));
                l->len = 0;
            }
        }
        if (!nl) break;
        b = nl + 1;
        n -= k + 1;
    }
    return 0;
}

void sse_lines_free(sse_lines *l) {
    free(l->p);
    l->p = NULL;
    l->len = l->cap = 0;
}

/* A token count as a server reports it: 0 unless a whole number an int
 * holds ({} or 1e300 once became -2147483648 prompt tokens). */
static int count(const cJSON *j) {
    double v = cJSON_IsNumber(j) ? j->valuedouble : -1;
    return v >= 0 && v <= INT_MAX && v == (int)v ? (int)v : 0;
}

static const char *string(const cJSON *j) { return cJSON_IsString(j) ? j->valuestring : NULL; }

int sse_chunk_read(const char *line, size_t n, sse_chunk *c) {
    memset(c, 0, sizeof *c);
    if (n < 5 || strncmp(line, "data:", 5)) return 0;
    line += 5; n -= 5;
    if (n && *line == ' ') { line++; n--; }
    if (n == 6 && !strncmp(line, "[DONE]", 6)) { c->done = 1; return 1; }
    if (!(c->json = cJSON_ParseWithLength(line, n))) { c->not_json = 1; return 1; }
    const cJSON *choice = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(c->json, "choices"), 0);
    c->content = string(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(choice, "delta"), "content"));
    c->finish = string(cJSON_GetObjectItemCaseSensitive(choice, "finish_reason"));
    c->error = string(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c->json, "error"), "message"));
    const cJSON *usage = cJSON_GetObjectItemCaseSensitive(c->json, "usage");
    if ((c->usage = cJSON_IsObject(usage))) {
        c->prompt_tokens = count(cJSON_GetObjectItemCaseSensitive(usage, "prompt_tokens"));
        c->completion_tokens = count(cJSON_GetObjectItemCaseSensitive(usage, "completion_tokens"));
    }
    return 1;
}

void sse_chunk_free(sse_chunk *c) {
    cJSON_Delete(c->json);
    c->json = NULL;
}
