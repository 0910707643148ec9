/*
 * client.h -- layer 8: a chat client, as a chat app would be. It wraps the
 * user's message in OpenAI JSON, POSTs it to /v1/chat/completions with
 * stream: true, reads the Server-Sent Events as they arrive and hands each
 * piece of text on. Times are taken here, where the user sits: TTFT is
 * from sending the request to the first piece of text.
 */
#ifndef HIPATH_CLIENT_H
#define HIPATH_CLIENT_H

#include <stddef.h>
#include <stdint.h>

/* How long the client waits, in seconds (0: the default): to connect;
 * from sending the request to the response's first byte; and after that
 * for each next piece of text (keep-alive comments and empty events do
 * not count: a server that sends only those is given up on). */
typedef struct { double connect_s, first_byte_s, idle_s; } client_timeouts;
#define CLIENT_CONNECT_S    10
#define CLIENT_FIRST_BYTE_S 60
#define CLIENT_IDLE_S       60

typedef struct {
    const char *url;             /* the server, e.g. http://127.0.0.1:8000 */
    const char *model;
    const char *content;         /* the user's message */
    int max_tokens;
    double temperature;          /* < 0: not sent (the server's default) */
    long long seed;              /* < 0: not sent */
    int ignore_eos;              /* vLLM's extension: generate max_tokens whatever is sampled */
    const char *api_key;         /* NULL: none */
    int64_t id;                  /* sent as X-Request-Id; 0: the next of a counter */
    client_timeouts timeout;
    void (*on_text)(const char *text, size_t len, void *user);
    void *user;
} chat_request;

typedef struct {
    int64_t id;
    long status;                 /* HTTP status */
    char *text;                  /* the reply */
    size_t len;
    int n_chunks;                /* content deltas received */
    int prompt_tokens, completion_tokens;   /* from the usage chunk */
    char finish[32];
    double ttft_s;               /* send -> first text */
    double tpot_s;               /* per output token after the first */
    double total_s;              /* send -> end of stream */
    char error[512];
} chat_result;

/* Once, before any thread starts: libcurl's global set-up (it loads TLS:
 * done lazily inside the first request, it is not thread-safe, and its
 * CPU time would land in that request's slice). */
void client_init(void);

/* 0, or -1 with r->error set (transport failure, a timeout, HTTP error,
 * error chunk, a reply past the client's limits). */
int  client_chat(const chat_request *q, chat_result *r);
void chat_result_free(chat_result *r);
/* The first model the server lists at GET /v1/models (t may be NULL: the defaults). */
int  client_first_model(const char *url, const char *api_key, const client_timeouts *t, char *name, int cap,
                        char *err, int errlen);

#endif
