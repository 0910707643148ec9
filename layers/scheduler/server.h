/*
 * server.h -- layer 6: the OpenAI-compatible HTTP server (libmicrohttpd).
 * POST /v1/chat/completions, POST /v1/completions, GET /v1/models,
 * GET /health, GET /metrics. One engine thread runs the steps; a small
 * pool of HTTP threads serves every connection and hands requests over
 * through the engine's queue (server.c).
 */
#ifndef HIPATH_SERVER_H
#define HIPATH_SERVER_H

#include "layers/scheduler/text.h"
#include <stddef.h>
#include <stdint.h>

/* A path the server does not route (anything but /v1/..., /health,
 * /metrics), handed to whoever assembled the server (cli/ hands the web
 * front end, web/server/, which sits above the layers). handle is called
 * once the body (at most 1 MiB) is in, on the connection's thread, which
 * polls other connections too: it queues a response on c and returns an
 * enum MHD_Result. Slow work it does elsewhere: it suspends c
 * (MHD_suspend_connection), keeps what it needs in *state and returns
 * MHD_YES; once it resumes c, handle is called again with that *state and
 * queues the response. method, url and body stay valid until the request
 * is over; then done is called with the *state it left (if not NULL).
 * server_stop calls stop before it stops listening: no connection the
 * handler suspended may still be suspended when stop returns.
 * authorized: the API key, if one is set, was sent. */
struct MHD_Connection;
typedef struct {
    int  (*handle)(void *ctx, struct MHD_Connection *c, const char *method, const char *url,
                   const char *body, size_t len, int authorized, void **state);
    void (*done)(void *ctx, void *state);
    void (*stop)(void *ctx);
    void *ctx;
} server_handler;

/* A gate for /v1/ requests whose key is not the API key (the workshop's
 * students: web/server/workshop.c, handed by cli/). admit is called with
 * the request's Bearer key (NULL: none) once before the body, id 0 (may
 * this key in at all? for a generation, under its rate?), and, for a
 * generation, once more when the body is in, with the request's id (count
 * it, note whose it is). It lets the
 * request in (status 0: max_tokens caps its completion and
 * max_prompt_tokens its prompt, 0 no cap) or
 * refuses it (status 401 or 429, with code, message and, for 429,
 * retry_after_s); owner, when it names the sender, goes into the trace's
 * http_request either way.
 * With a gate, request ids are the server's own (X-Request-Id is not
 * taken), so no sender can give its request another's id. */
typedef struct {
    int generation;          /* in: the request asks for a generation (a POST to /v1/chat/completions or /v1/completions) */
    int status;
    char code[40], message[200];
    int retry_after_s;
    char owner[48];
    int max_tokens;
    int max_prompt_tokens;   /* the prompt's tokens, after the chat template, at most (0: no cap; 400 past it) */
} server_admission;
typedef struct {
    void (*admit)(void *ctx, const char *key, int64_t id, server_admission *a);
    void *ctx;
} server_gate;

typedef struct {
    const char *model_dir;       /* or, with analytic_dtype, a config.json */
    const char *analytic_dtype;  /* non-NULL: a shapes-only model of this weight dtype (analytic.c) */
    const char *host;            /* NULL: 127.0.0.1 */
    int port;                    /* 0: any free port */
    const char *served_name;     /* NULL: the model folder's name */
    int max_model_len;           /* 0: the model's context, capped by the KV cache */
    int max_batch;               /* max_num_seqs, requests a step may hold (0: 32) */
    int max_num_batched_tokens;  /* ids a step may compute (0: vLLM's default, 8192 on a device of 70 GiB
                                    or more but an A100, else 2048; without chunked prefill, the context + max_batch) */
    int no_chunked_prefill;      /* a prompt is prefilled whole, in one step */
    int no_prefix_caching;       /* every prompt computed in full */
    int reserve_worst_case;      /* admit only when prompt + max_tokens fit: never preempts */
    int dp_lb;                   /* over --dp replicas, which takes a request (served.h's DP_LB_*) */
    double kv_cache_mb;          /* 0: 90% of the device's memory left after weights and workspace
                                    (capped at 256 MiB on sim; 64 on cpu): server.c, size_kv */
    const char *api_key;         /* NULL: no key needed */
    int max_connections;         /* 0: 4096, in all (fewer when the process has too few file descriptors) */
    int max_connections_per_ip;  /* 0: 128 from one client address */
    int connection_timeout_s;    /* 0: 10: an idle connection is closed after this (a suspended one waits) */
    int read_timeout_s;          /* 0: 30 (or the idle timeout, if longer): a request's headers and body must all
                                    arrive within this of the connection's start or its previous answer, however they trickle */
    double keepalive_s;          /* 0: 5: a stream with nothing to send this long gets a comment line */
    int http_threads;            /* 0: 4: the threads that poll the connections, each its share */
    int split_special_tokens;    /* 1: special-token text in a message is ordinary text (a request may say otherwise) */
    text_opener open_text;       /* opens the model's tokenizer (layer 7): the caller hands it */
    const char *tokenizer_path;  /* NULL: the model's own (beside it, or in its .gguf) */
    const char *reply;           /* teacher forcing: every reply is this text, then the end of the turn */
    server_handler other;        /* .handle NULL: other paths get 404 */
    server_gate gate;            /* .admit NULL: only the API key (if any) lets a request in */
} server_opts;

typedef struct server server;

/* Load the model, start the engine thread and listen. NULL with a one-line reason. */
server *server_start(const server_opts *o, char *err, int errlen);
int server_port(const server *s);
const char *server_model_name(const server *s);
/* Finish every request still inside, stop listening, free everything. */
void server_stop(server *s);

#endif
