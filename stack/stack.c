/* stack.c -- the stack opened in steps and closed in one order (stack.h). */
#include "stack/stack.h"
#include "kernels/backend.h"
#include "layers/runtime/runtime.h"
#include "trace/db_index.h"
#include "trace/trace.h"
#include <stdio.h>
#include <string.h>
#include <time.h>

int stack_device(stack *k, const char *device, char *err, int errlen) {
    if (backend_open(device, err, errlen)) return -1;
    k->device = 1;
    return 0;
}

int stack_trace(stack *k, const char *db, const char **pftrace, const char *command, const char *model,
                char *err, int errlen) {
    static char pf_default[128];
    if (pftrace && !*pftrace) {
        time_t now = time(NULL);
        strftime(pf_default, sizeof pf_default, "traces/hipath-%Y%m%d-%H%M%S.pftrace", localtime(&now));
        *pftrace = pf_default;
    }
    if (db) stack_make_parent(db);
    if (pftrace) stack_make_parent(*pftrace);
    const rt_device *d = rt_device_now();
    trace_run_info info = { .db_path = db, .perfetto_path = pftrace ? *pftrace : NULL, .command = command, .model = model,
                            .device = d->name, .clock_domain = d->driver->clock_domain };
    if (trace_open(&info, err, errlen)) return -1;
    k->traced = 1;
    k->run = trace_run_id();
    return 0;
}

int stack_serve(stack *k, server_opts *o, web_opts *wo, const char *db, char *err, int errlen) {
    if (wo) {
        wo->db = db;
        wo->run = trace_run_id();
        if (db && trace_db_index(db, err, errlen)) return -1;
        if (!(k->web = web_open(wo, err, errlen))) return -1;
        o->other = (server_handler){ .handle = web_handle, .done = web_handle_done, .stop = web_handle_stop, .ctx = k->web };
        if (wo->workshop) o->gate = (server_gate){ .admit = web_workshop_admit, .ctx = k->web };
        if (db) fprintf(stderr, "hipath: recording the trace to %s (run %lld)%s\n", db, (long long)wo->run,
                        wo->cap_mb > 0 ? "; kept under --trace-cap-mb, the oldest events deleted first" : "");
    }
    return (k->srv = server_start(o, err, errlen)) ? 0 : -1;
}

int stack_close(stack *k, char *err, int errlen) {
    if (k->srv) server_stop(k->srv);
    web_close(k->web);
    if (k->device) backend_close();
    int rc = k->traced ? trace_close(err, errlen) : 0;
    *k = (stack){ .run = -1 };
    return rc ? -1 : 0;
}

/* Options whose value is a secret, and the shortest prefix getopt_long
 * takes for each ("--api" for --api-key; "--workshop" alone is a flag of
 * its own); "--opt=VALUE" too. */
static const struct { const char *name; size_t shortest; } SECRET_OPTS[] = {
    { "--api-key", 3 }, { "--workshop-code", 12 },
};

/* The option arg is (before any '='), if it names a secret one: its length, else 0. */
static size_t secret_option(const char *arg) {
    size_t n = strcspn(arg, "=");
    for (size_t i = 0; i < sizeof SECRET_OPTS / sizeof *SECRET_OPTS; i++)
        if (n >= SECRET_OPTS[i].shortest && n <= strlen(SECRET_OPTS[i].name) && !strncmp(arg, SECRET_OPTS[i].name, n)) return n;
    return 0;
}

void stack_command(int argc, char **argv, char *out, size_t cap) {
    snprintf(out, cap, "hipath");
    for (int i = 0, masked = 0; i < argc; i++) {
        size_t n = strlen(out), name = masked ? 0 : secret_option(argv[i]);
        if (masked) snprintf(out + n, cap - n, " ***");
        else if (name && argv[i][name] == '=') snprintf(out + n, cap - n, " %.*s=***", (int)name, argv[i]);
        else snprintf(out + n, cap - n, " %s", argv[i]);
        masked = name && !argv[i][name];   /* the next argument is the value */
    }
}

void stack_analytic_device(const char *device, char *out, int cap) {
    const char *p = !strcmp(device, "auto") ? "w7900" : !strncmp(device, "sim:", 4) ? device + 4
                  : !strncmp(device, "analytic:", 9) ? device + 9 : device;
    snprintf(out, cap, "analytic:%s", p);
}
