/*
 * stack.h -- the floor below cli/ and labs/: the whole stack assembled in
 * one place. It is opened in steps, each when its caller is ready for it:
 * the device (layers 2-1: backend_open), the trace, then the web front end
 * (web/server/) and the server (layer 6 and every layer below it); and
 * closed in one call, in one order: the server, the web front end, the
 * device, the trace last (what closing the others records goes in).
 * Beside it, what every command and lab shares: one-line failures,
 * numbers from the command line, folders for output.
 */
#ifndef HIPATH_STACK_H
#define HIPATH_STACK_H

#include "layers/scheduler/server.h"
#include "web/server/web.h"
#include <stddef.h>
#include <stdint.h>

typedef struct {
    server *srv;               /* stack_serve's (NULL: none) */
    web *web;                  /* ... and its web front end (NULL: none) */
    int64_t run;               /* the trace's run (stack_trace; -1: no trace) */
    int device, traced;        /* what is open */
} stack;

/* The device (auto, cpu, sim:PROFILE, hip:N, analytic:PROFILE). 0, or -1 with a reason. */
int stack_device(stack *k, const char *device, char *err, int errlen);
/* The trace: the SQLite file db (NULL: none) and a Perfetto file (pftrace
 * NULL: none; *pftrace NULL: a timestamped one under traces/, its path
 * set), their folders made; command and model are the runs table's, the
 * device the one open now. 0, or -1 with a reason. */
int stack_trace(stack *k, const char *db, const char **pftrace, const char *command, const char *model,
                char *err, int errlen);
/* The server on o; with wo, the web front end on the trace db handed to
 * it (and, with wo->workshop, its gate). 0, or -1 with a reason. */
int stack_serve(stack *k, server_opts *o, web_opts *wo, const char *db, char *err, int errlen);
/* Close what is open, in the one order. 0, or -1 when the trace was not
 * all written (the reason in err). */
int stack_close(stack *k, char *err, int errlen);

/* "hipath ARGS...": the command line as the runs table keeps it, every
 * secret option's value (--api-key, --workshop-code) as "***": a secret
 * never enters the trace. */
void stack_command(int argc, char **argv, char *out, size_t cap);
/* --analytic --device PROFILE: the analytic device of that profile (auto,
 * sim:P and analytic:P name it too). */
void stack_analytic_device(const char *device, char *out, int cap);

/* Print "hipath: <reason>" as one line on stderr; returns 1 (the exit code). */
int stack_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Parse a whole decimal number / float within [lo, hi]; 0 on success. */
int parse_int(const char *s, long lo, long hi, long *out);
int parse_float(const char *s, double lo, double hi, double *out);
/* mkdir -p of the folder holding path; 0 once it exists, else -1. */
int stack_make_parent(const char *path);

#endif
