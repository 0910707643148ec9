/*
 * web.h -- the web front end's server side: the pages under web/static/
 * and the JSON endpoints under /api/ that read the SQLite trace, served by
 * layer 6's HTTP server through the handler it was handed (server.h,
 * server_opts.other). It sits above the layers, beside cli/: the CLI
 * assembles it; nothing below calls it. docs/web.md lists the endpoints.
 */
#ifndef HIPATH_WEB_H
#define HIPATH_WEB_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *root;       /* the static files (NULL: web/static beside the executable, else ./web/static) */
    const char *db;         /* the SQLite trace the server records (NULL: /api/ answers 503) */
    int64_t run;            /* its run (trace_run_id) */
    const char *labs_dir;   /* the labs' output (NULL: labs/out) */
    double cap_mb;          /* > 0: the trace is kept under this size, the oldest events deleted first */
} web_opts;

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
const char *web_root(const web *w);
/* After the server has stopped. */
void web_close(web *w);

#endif
