/*
 * openai.h -- layer 6: the OpenAI API's JSON. A request body in, checked
 * field by field (every refusal names the field, in OpenAI's error shape);
 * response bodies and stream chunks out, in OpenAI's shapes.
 */
#ifndef HIPATH_OPENAI_H
#define HIPATH_OPENAI_H

#include "layers/common/chat.h"
#include "layers/ops/sample.h"
#include "layers/scheduler/text.h"
#include <cjson/cJSON.h>

#define API_MAX_STOP 4

/* {"error": {"message", "type", "param", "code"}} plus the HTTP status. */
typedef struct {
    int status;
    const char *type;        /* "invalid_request_error", "server_error", ... */
    const char *param;       /* the offending field, or NULL */
    const char *code;        /* e.g. "model_not_found", or NULL */
    char message[512];
} api_error;

typedef struct {
    int chat;                /* 1: /v1/chat/completions, 0: /v1/completions */
    cJSON *root;             /* the parsed body; the strings below live in it */
    chat_message *msgs;      /* chat */
    int n_msgs;
    const char *prompt;      /* completions */
    int max_tokens;          /* 0: not given */
    float temperature, top_p;
    int has_seed;
    uint64_t seed;
    const char *stop[API_MAX_STOP];
    int n_stop;
    int stream, include_usage;
    int logprobs, top_logprobs;
    int ignore_eos;          /* vLLM's extension: generate until max_tokens */
    int split_special_tokens; /* HF's name: special-token text in the prompt is ordinary text; -1 not given */
} api_request;

/* Parse and check a body. 0, or -1 with e filled. served: the model name. */
int  api_parse(api_request *q, const char *body, size_t len, int chat, const char *served, api_error *e);
void api_request_free(api_request *q);

int api_fail(api_error *e, int status, const char *type, const char *param, const char *code,
             const char *fmt, ...) __attribute__((format(printf, 6, 7)));
char *api_error_json(const api_error *e);

/* What every response and chunk of one request shares. */
typedef struct {
    int chat;
    char id[48];             /* "chatcmpl-7" / "cmpl-7" */
    long created;
    const char *model;
    const text_codec *text;  /* for the logprobs' token strings */
    int top_logprobs;
    const int *stop_ids;     /* end-of-turn ids: an entry of one (ignore_eos) adds no text to the reply */
    int n_stop_ids;
} api_reply;

/* Logprobs of tokens s[0..n) in the endpoint's shape; text_offset: where
 * the first token's text starts in the reply (completions only). */
cJSON *api_logprobs(const api_reply *a, const sample_result *s, int n, int text_offset);
/* What a request used: its prompt's tokens, those of them the prefix
 * cache held, and the tokens it generated (usage, as OpenAI reports it). */
typedef struct { int prompt_tokens, cached_tokens, completion_tokens; } api_usage;
/* The whole response (stream: false). logprobs (or NULL) is taken. */
char *api_response(const api_reply *a, const char *text, const char *finish, cJSON *logprobs, api_usage u);
/* One stream chunk: role only on the first chat chunk; finish on the last. */
char *api_chunk(const api_reply *a, int first, const char *text, cJSON *logprobs, const char *finish);
char *api_usage_chunk(const api_reply *a, api_usage u);

#endif
