/*
 * chat.c -- the chat template and the stop tokens, from tokenizer_config.json.
 *
 * hipath does not run Jinja. It recognises the three template families that
 * its models use and writes their format directly:
 *   ChatML:   <|im_start|>role\ncontent<|im_end|>\n ... <|im_start|>assistant\n
 *   Llama-3:  <|begin_of_text|><|start_header_id|>role<|end_header_id|>\n\n
 *             content<|eot_id|> ... <|start_header_id|>assistant<|end_header_id|>\n\n
 *   DeepSeek (R1 and its Qwen/Llama distills):
 *             BOS system <｜User｜>content<｜Assistant｜>content<｜end▁of▁sentence｜>
 *             ... <｜User｜>content<｜Assistant｜><think>\n
 * A template that opens a system turn with literal text (Qwen2.5's "You are
 * Qwen, created by Alibaba Cloud...") inserts that text when the caller
 * gives no system message; it is read out of the template's source.
 */
#include "layers/tokenizer/tok_internal.h"
#include "layers/common/file.h"
#include <unistd.h>
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { const char *open, *mid, *close; } family;   /* open role mid content close */
static const family CHATML = { "<|im_start|>", "\n", "<|im_end|>\n" };
static const family LLAMA3 = { "<|start_header_id|>", "<|end_header_id|>\n\n", "<|eot_id|>" };
#define DS_USER "<｜User｜>"
#define DS_ASSISTANT "<｜Assistant｜>"
#define DS_END "<｜end▁of▁sentence｜>"

/* The literal system prompt in template source tmpl, or NULL: the text
 * between `open` and `close`, if that stretch is one plain string literal
 * (no quotes, no {{ }}). Jinja source spells open's newlines as \n escapes
 * (Qwen) or as real newlines (Llama-3): try both. */
static char *template_default(const char *tmpl, const char *open, const char *close) {
    char escaped[128], *q = escaped;
    for (const char *c = open; *c && q < escaped + sizeof escaped - 2; c++)
        if (*c == '\n') *q++ = '\\', *q++ = 'n';
        else *q++ = *c;
    *q = 0;
    for (int form = 0; form < 2; form++) {
        const char *o = form ? open : escaped;
        for (const char *p = strstr(tmpl, o); p; p = strstr(p + 1, o)) {
            const char *s = p + strlen(o), *e = strstr(s, close);
            if (!e || e == s || strcspn(s, "'\"{}") < (size_t)(e - s)) continue;
            char *out = malloc(e - s + 1), *w = out;
            if (!out) return NULL;
            for (; s < e; s++) {   /* undo the string literal's escapes */
                if (*s == '\\' && s + 1 < e) { s++; *w++ = *s == 'n' ? '\n' : *s == 't' ? '\t' : *s; }
                else *w++ = *s;
            }
            *w = 0;
            return out;
        }
    }
    return NULL;
}

/* A special-token field: "<|im_end|>" or {"content": "<|im_end|>", ...}. */
static const char *token_field(const cJSON *cfg, const char *name) {
    const cJSON *f = cJSON_GetObjectItem(cfg, name);
    return cJSON_IsObject(f) ? cJSON_GetStringValue(cJSON_GetObjectItem(f, "content")) : cJSON_GetStringValue(f);
}

/* chat_template is a string, or a list of {name, template}: take "default". */
static const char *template_text(const cJSON *cfg) {
    const cJSON *c = cJSON_GetObjectItem(cfg, "chat_template"), *e;
    if (cJSON_IsString(c)) return c->valuestring;
    cJSON_ArrayForEach(e, c) {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(e, "name"));
        if (name && !strcmp(name, "default")) return cJSON_GetStringValue(cJSON_GetObjectItem(e, "template"));
    }
    return NULL;
}

int tok_load_config(tokenizer *t, const char *tokenizer_json, char *err, int errlen) {
    const char *slash = strrchr(tokenizer_json, '/');
    char path[4096];
    snprintf(path, sizeof path, "%.*stokenizer_config.json", slash ? (int)(slash - tokenizer_json + 1) : 0,
             tokenizer_json);
    if (access(path, F_OK)) return 0;   /* optional: ChatML, no default system prompt */
    cJSON *cfg = json_read(path, FILE_SMALL, err, errlen);
    if (!cfg) return -1;
    const char *eos = token_field(cfg, "eos_token"), *bos = token_field(cfg, "bos_token");
    t->eos_id = eos ? tokenizer_token_id(t, eos) : -1;
    if (bos && !(t->bos = strdup(bos))) { cJSON_Delete(cfg); snprintf(err, errlen, "%s: out of memory", path); return -1; }
    const char *tmpl = template_text(cfg);
    if (tmpl) tok_set_template(t, tmpl);
    cJSON_Delete(cfg);
    return 0;
}

void tok_set_template(tokenizer *t, const char *tmpl) {
    t->family = strstr(tmpl, DS_ASSISTANT) ? CHAT_DEEPSEEK : strstr(tmpl, LLAMA3.open) ? CHAT_LLAMA3 : CHAT_CHATML;
    t->default_system = t->family == CHAT_LLAMA3 ? template_default(tmpl, "<|start_header_id|>system<|end_header_id|>\n\n", LLAMA3.close)
                      : t->family == CHAT_CHATML ? template_default(tmpl, "<|im_start|>system\n", "<|im_end|>") : NULL;
}

typedef struct { char *p; size_t len, cap; int oom; } strbuf;

static void append(strbuf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = 2 * (b->len + n) + 256;
        char *p = realloc(b->p, cap);
        if (!p) { b->oom = 1; return; }
        b->p = p, b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

/* DeepSeek's template: the BOS, the (last) system message as it is, then
 * each turn after its role's token; the answer starts a thought. */
static void deepseek(strbuf *b, const tokenizer *t, const chat_message *msgs, int n, tok_span *content) {
    int system = -1;
    for (int i = 0; i < n; i++) if (!strcmp(msgs[i].role, "system")) system = i;
    if (t->bos) append(b, t->bos, strlen(t->bos));
    if (system >= 0) {
        if (content) content[system] = (tok_span){ b->len, b->len + strlen(msgs[system].content) };
        append(b, msgs[system].content, strlen(msgs[system].content));
    }
    for (int i = 0; i < n; i++) {
        int user = !strcmp(msgs[i].role, "user");
        if (!user && strcmp(msgs[i].role, "assistant")) continue;
        append(b, user ? DS_USER : DS_ASSISTANT, strlen(user ? DS_USER : DS_ASSISTANT));
        if (content) content[i] = (tok_span){ b->len, b->len + strlen(msgs[i].content) };
        append(b, msgs[i].content, strlen(msgs[i].content));
        if (!user) append(b, DS_END, strlen(DS_END));
    }
    append(b, DS_ASSISTANT "<think>\n", strlen(DS_ASSISTANT "<think>\n"));
}

static void turn(strbuf *b, const family *f, int llama3, const char *role, const char *content, tok_span *at) {
    size_t n = strlen(content);
    if (llama3) {   /* Llama-3's template trims each message */
        while (n > 0 && isspace((unsigned char)content[n - 1])) n--;
        while (n > 0 && isspace((unsigned char)*content)) content++, n--;
    }
    append(b, f->open, strlen(f->open));
    append(b, role, strlen(role));
    append(b, f->mid, strlen(f->mid));
    if (at) *at = (tok_span){ b->len, b->len + n };
    append(b, content, n);
    append(b, f->close, strlen(f->close));
}

char *tokenizer_apply_chat(const tokenizer *t, const chat_message *msgs, int n) {
    return tokenizer_apply_chat_spans(t, msgs, n, NULL);
}

char *tokenizer_apply_chat_spans(const tokenizer *t, const chat_message *msgs, int n, tok_span *content) {
    for (int i = 0; content && i < n; i++) content[i] = (tok_span){ 0, 0 };   /* a message the template leaves out */
    int llama3 = t->family == CHAT_LLAMA3;
    const family *f = llama3 ? &LLAMA3 : &CHATML;
    strbuf b = { 0 };
    append(&b, "", 0);
    if (t->family == CHAT_DEEPSEEK) {
        deepseek(&b, t, msgs, n, content);
        if (b.oom) { free(b.p); return NULL; }
        return b.p;
    }
    if (llama3) append(&b, "<|begin_of_text|>", strlen("<|begin_of_text|>"));
    if (t->default_system && (n == 0 || strcmp(msgs[0].role, "system")))
        turn(&b, f, llama3, "system", t->default_system, NULL);   /* the template's own text */
    for (int i = 0; i < n; i++) turn(&b, f, llama3, msgs[i].role, msgs[i].content, content ? &content[i] : NULL);
    append(&b, f->open, strlen(f->open));
    append(&b, "assistant", strlen("assistant"));
    append(&b, f->mid, strlen(f->mid));
    if (b.oom) { free(b.p); return NULL; }
    return b.p;
}

int tokenizer_stop_ids(const tokenizer *t, int *ids, int max_ids) {
    const char *names[] = { "<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>", DS_END };
    enum { N = sizeof names / sizeof *names };
    int n = 0;
    for (int i = 0; i <= N; i++) {
        int id = i < N ? tokenizer_token_id(t, names[i]) : t->eos_id, dup = 0;
        for (int j = 0; j < n; j++) dup |= ids[j] == id;
        if (id >= 0 && !dup && n < max_ids) ids[n++] = id;
    }
    return n;
}
