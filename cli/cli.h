/* cli.h -- the subcommands of build/hipath, one file each. */
#ifndef HIPATH_CLI_H
#define HIPATH_CLI_H

#include "layers/scheduler/server.h"
#include "web/server/web.h"

int cmd_generate(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_bounds(int argc, char **argv);
int cmd_amdahl(int argc, char **argv);
int cmd_device(int argc, char **argv);
int cmd_lab(int argc, char **argv);
int cmd_validate(int argc, char **argv);

/* Print "hipath: <reason>" as one line on stderr; returns 1 (the exit code). */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Parse a whole decimal number / float; 0 on success. */
int parse_int(const char *s, long lo, long hi, long *out);
int parse_float(const char *s, double lo, double hi, double *out);
/* mkdir -p of the folder holding path; 0 once it exists, else -1. */
int cli_make_parent(const char *path);

/* --analytic --device PROFILE: the analytic device of that profile (auto,
 * sim:P and analytic:P name it too). */
void cli_analytic_device(const char *device, char *out, int cap);

/* Open the trace for this command: the command line, the model and the
 * device (backend_open() first) go into the runs table; parent folders of the
 * two paths are created. *pftrace may be NULL: it is set to a timestamped
 * default under traces/; pftrace NULL: no Perfetto file. 0, or 1 after
 * printing the reason. */
int cli_trace_open(int argc, char **argv, const char *db, const char **pftrace, const char *model);

/* The web front end on the trace at db (NULL: none), handed to the server
 * through o (o->other); the trace is open (cli_trace_open) and gets its
 * readers' indexes. NULL after printing the reason. */
web *cli_web_open(web_opts *wo, const char *db, server_opts *o);

/* --workshop (cli/workshop.c): a random teacher's key (32 hex digits,
 * cap >= 33; 0 or -1), and what the room needs to know, printed: the
 * join URLs (the LAN's addresses when host is 0.0.0.0), the code, the
 * teacher's URL with its key. */
int  cli_workshop_key(char *out, int cap);
void cli_workshop_print(const char *host, int port, const char *code, const char *teacher_key, const web_opts *wo);

#endif
