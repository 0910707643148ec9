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

typedef struct {
    const char *model_dir;       /* or, with analytic_dtype, a config.json */
    const char *analytic_dtype;  /* non-NULL: a shapes-only model of this weight dtype (analytic.c) */
    const char *host;            /* NULL: 127.0.0.1 */
    int port;                    /* 0: any free port */
    const char *served_name;     /* NULL: the model folder's name */
    int max_model_len;           /* 0: the model's context, capped by the KV cache */
    int max_batch;               /* 0: 32 */
    double kv_cache_mb;          /* 0: 64 */
    const char *api_key;         /* NULL: no key needed */
    int max_connections;         /* 0: 4096, in all (fewer when the process has too few file descriptors) */
    int max_connections_per_ip;  /* 0: 128 from one client address */
    int connection_timeout_s;    /* 0: 10: an idle connection is closed after this (a suspended one waits) */
    int split_special_tokens;    /* 1: special-token text in a message is ordinary text (a request may say otherwise) */
    text_opener open_text;       /* opens the model's tokenizer (layer 7): the caller hands it */
} server_opts;

typedef struct server server;

/* Load the model, start the engine thread and listen. NULL with a one-line reason. */
server *server_start(const server_opts *o, char *err, int errlen);
int server_port(const server *s);
const char *server_model_name(const server *s);
/* Finish every request still inside, stop listening, free everything. */
void server_stop(server *s);

#endif
