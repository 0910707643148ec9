/*
 * web.h -- the web front end's server side: the pages under web/static/
 * and the JSON endpoints under /api/ that read the SQLite trace, served by
 * layer 6's HTTP server through the handler it was handed (server.h,
 * server_opts.other). It sits above the layers, beside cli/: the CLI
 * assembles it; nothing below calls it. docs/web.md lists the endpoints.
 */
#ifndef HIPATH_WEB_H
#define HIPATH_WEB_H

#include "layers/scheduler/server.h"
#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *root;       /* the static files (NULL: web/static beside the executable, else ./web/static) */
    const char *db;         /* the SQLite trace the server records (NULL: /api/ answers 503) */
    int64_t run;            /* its run (trace_run_id) */
    const char *labs_dir;   /* the labs' output (NULL: labs/out) */
    double cap_mb;          /* > 0: the trace is kept under this size, the oldest events deleted first */
    /* hipath serve --workshop (workshop.c, docs/workshop.md): students join with a code and get keys of their own */
    int workshop;
    const char *workshop_code;   /* NULL: a random one */
    int workshop_rate;           /* generations a student may start a minute (0: no limit) */
    int workshop_max_tokens;     /* a student's request's completion, at most (0: no cap) */
    int workshop_max_prompt_tokens;   /* ... and its prompt (0: no cap) */
    int workshop_students;       /* students who may join (0: 100) */
    int workshop_seats;          /* students who may join from one address (0: no cap) */
} web_opts;
#define WORKSHOP_CODE_LEN 6

typedef struct web web;

/* NULL with a one-line reason (no static folder, ...). */
web *web_open(const web_opts *o, char *err, int errlen);
/* server_handler (server.h): every path but /v1/..., /health, /metrics.
 * /api/ is answered on a worker thread, its connection suspended meanwhile
 * (work.c); the pages at once. */
struct MHD_Connection;
int  web_handle(void *ctx, struct MHD_Connection *c, const char *method, const char *url,
                const char *body, size_t len, int authorized, void **state);
void web_handle_done(void *ctx, void *state);
void web_handle_stop(void *ctx);
/* The workshop's join code (NULL: no workshop). */
const char *web_workshop_code(const web *w);
/* server_gate (server.h): lets a student's key in, counts their rate, notes whose a request is. ctx: the web. */
void web_workshop_admit(void *ctx, const char *key, int64_t id, server_admission *a);

/* After the server has stopped. */
void web_close(web *w);

#endif
