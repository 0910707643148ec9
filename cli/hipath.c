/*
 * hipath.c -- the command line: one subcommand per job.
 */
#include "cli/cli.h"
#include "kernels/cpu/kernels.h"
#include "layers/runtime/runtime.h"
#include "trace/db_index.h"
#include "trace/trace.h"
#include <sys/stat.h>
#include <time.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_fail(const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    for (char *p = buf; *p; p++) if (*p == '\n') *p = ' ';   /* one line, always */
    fprintf(stderr, "hipath: %s\n", buf);
    return 1;
}

int parse_int(const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int parse_float(const char *s, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) return -1;
    *out = v;
    return 0;
}

int cli_make_parent(const char *path) {
    char d[1024];
    snprintf(d, sizeof d, "%s", path);
    for (char *p = d + 1; *p; p++)
        if (*p == '/') { *p = 0; mkdir(d, 0755); *p = '/'; }
    char *last = strrchr(d, '/');
    if (!last || last == d) return 0;
    *last = 0;
    struct stat st;
    return stat(d, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
}

void cli_analytic_device(const char *device, char *out, int cap) {
    const char *p = !strcmp(device, "auto") ? "w7900" : !strncmp(device, "sim:", 4) ? device + 4
                  : !strncmp(device, "analytic:", 9) ? device + 9 : device;
    snprintf(out, cap, "analytic:%s", p);
}

/* Options whose value is a secret: the trace's command line says "***"
 * instead (a secret never enters the trace; docs/security.md). getopt_long
 * takes any unambiguous prefix ("--api" for --api-key) and "--opt=VALUE". */
static const struct { const char *name; size_t shortest; } SECRET_OPTS[] = {
    { "--api-key", 3 }, { "--workshop-code", 12 },   /* "--workshop" alone is a flag of its own */
};

/* The option arg is (before any '='), if it names a secret one: its length, else 0. */
static size_t secret_option(const char *arg) {
    size_t n = strcspn(arg, "=");
    for (size_t i = 0; i < sizeof SECRET_OPTS / sizeof *SECRET_OPTS; i++)
        if (n >= SECRET_OPTS[i].shortest && n <= strlen(SECRET_OPTS[i].name) && !strncmp(arg, SECRET_OPTS[i].name, n)) return n;
    return 0;
}

int cli_trace_open(int argc, char **argv, const char *db, const char **pftrace, const char *model) {
    static char pf_default[128];
    char cmdline[1024] = "hipath", err[512];
    if (pftrace && !*pftrace) {
        time_t now = time(NULL);
        strftime(pf_default, sizeof pf_default, "traces/hipath-%Y%m%d-%H%M%S.pftrace", localtime(&now));
        *pftrace = pf_default;
    }
    for (int i = 0, masked = 0; i < argc; i++) {
        size_t n = strlen(cmdline), name = masked ? 0 : secret_option(argv[i]);
        if (masked) snprintf(cmdline + n, sizeof cmdline - n, " ***");
        else if (name && argv[i][name] == '=') snprintf(cmdline + n, sizeof cmdline - n, " %.*s=***", (int)name, argv[i]);
        else snprintf(cmdline + n, sizeof cmdline - n, " %s", argv[i]);
        masked = name && !argv[i][name];   /* the next argument is the value */
    }
    if (db) cli_make_parent(db);
    if (pftrace) cli_make_parent(*pftrace);
    const rt_device *d = rt_device_now();
    trace_run_info info = { .db_path = db, .perfetto_path = pftrace ? *pftrace : NULL, .command = cmdline, .model = model,
                            .device = d->name, .clock_domain = d->driver->clock_domain };
    return trace_open(&info, err, sizeof err) ? cli_fail("%s", err) : 0;
}

web *cli_web_open(web_opts *wo, const char *db, server_opts *o) {
    char err[512];
    wo->db = db;
    wo->run = trace_run_id();
    if (db && trace_db_index(db, err, sizeof err)) { cli_fail("%s", err); return NULL; }
    web *w = web_open(wo, err, sizeof err);
    if (!w) { cli_fail("%s", err); return NULL; }
    o->other = (server_handler){ .handle = web_handle, .done = web_handle_done, .stop = web_handle_stop, .ctx = w };
    if (wo->workshop) o->gate = (server_gate){ .admit = web_workshop_admit, .ctx = w };
    if (db) fprintf(stderr, "hipath: recording the trace to %s (run %lld)%s\n", db, (long long)wo->run,
                    wo->cap_mb > 0 ? "; kept under --trace-cap-mb, the oldest events deleted first" : "");
    return w;
}

static const struct { const char *name; int (*fn)(int, char **); const char *help; } CMDS[] = {
    { "generate",   cmd_generate,   "run the model on a prompt (layers 7-4, no server)" },
    { "tokenize",   cmd_tokenize,   "text on stdin -> token ids as a JSON array" },
    { "detokenize", cmd_detokenize, "JSON array of ids on stdin -> text" },
    { "serve",      cmd_serve,      "OpenAI-compatible HTTP server (layer 6)" },
    { "run",        cmd_run,        "send a chat message through the whole path (layers 8-1), traced" },
    { "bounds",     cmd_bounds,     "capacity and prefill/decode lower bounds of a model on a GPU" },
    { "amdahl",     cmd_amdahl,     "the whole's speed-up when a share of its time gets faster" },
    { "device",     cmd_device,     "the device layers 2-1 run on, and its measured copy bandwidth" },
    { "lab",        cmd_lab,        "run lab N's experiment: predicted against measured (labs/)" },
    { "validate",   cmd_validate,   "the simulated GPU against real GPUs' published measurements" },
};

static void usage(FILE *f) {
    fprintf(f, "usage: hipath <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof CMDS / sizeof CMDS[0]; i++) fprintf(f, "  %-11s %s\n", CMDS[i].name, CMDS[i].help);
    fprintf(f, "\n'hipath <command> --help' describes a command's options.\n");
}

int main(int argc, char **argv) {
    cpu_threads_wait(argv);   /* OpenMP's policy, read as libgomp loads: may start again */
    const char *kernel = getenv("HIPATH_CPU_KERNEL");   /* the block formats' kernel; docs/cpu.md */
    if (kernel && *kernel && k_quant_use(kernel))
        return cli_fail("HIPATH_CPU_KERNEL=%s: this CPU's block-format kernels are: %s", kernel, k_quant_kernels());
    if (argc < 2) { usage(stderr); return 2; }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) { usage(stdout); return 0; }
    for (size_t i = 0; i < sizeof CMDS / sizeof CMDS[0]; i++)
        if (!strcmp(argv[1], CMDS[i].name)) return CMDS[i].fn(argc - 1, argv + 1);
    return cli_fail("unknown command '%s' (try 'hipath --help')", argv[1]);
}
