/*
 * cmd_run.c -- `hipath run "Hi"`: the whole journey, traced. A server
 * (layer 6 and below) starts in this process on a free loopback port, or
 * --url names a running one; the client (layer 8) sends the message as a
 * chat app would and prints the reply as it streams.
 */
#include "cli/cli.h"
#include "layers/client/client.h"
#include "layers/scheduler/server.h"
#include "trace/trace.h"
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static const char USAGE[] =
    "usage: hipath run [options] MESSAGE\n"
    "  --model DIR          model folder (default models/tiny-hi)\n"
    "  --url URL            talk to a running server instead of starting one\n"
    "  --api-key KEY        sent as 'Authorization: Bearer KEY'\n"
    "  --max-tokens N       reply length limit (default 64)\n"
    "  --temperature T      0 = greedy (default 0)\n"
    "  --seed S             seed for sampling\n"
    "  --trace-db FILE      SQLite trace (default traces/hipath.db)\n"
    "  --perfetto FILE      Perfetto trace (default traces/hipath-<timestamp>.pftrace)\n";

/* mkdir -p of the folder holding path. */
static void make_parent(const char *path) {
    char d[1024];
    snprintf(d, sizeof d, "%s", path);
    for (char *p = d + 1; *p; p++)
        if (*p == '/') { *p = 0; mkdir(d, 0755); *p = '/'; }
}

static void print_text(const char *text, size_t len, void *user) {
    (void)user;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
}

/* The summary after the reply (the lead adds the per-layer journey here). */
static void print_summary(const chat_result *r, const char *db, const char *pftrace) {
    double decode_rate = r->tpot_s > 0 ? 1 / r->tpot_s : 0;
    fprintf(stderr, "\n[request %lld: %d prompt tokens, %d generated, finish %s]\n", (long long)r->id,
            r->prompt_tokens, r->completion_tokens, r->finish);
    fprintf(stderr, "TTFT %.1f ms, %.2f ms per output token (%.1f tokens/s), total %.1f ms (measured at the client)\n",
            r->ttft_s * 1e3, r->tpot_s * 1e3, decode_rate, r->total_s * 1e3);
    fprintf(stderr, "trace: %s (SQLite), %s (Perfetto: open in ui.perfetto.dev)\n", db, pftrace);
}

int cmd_run(int argc, char **argv) {
    static const struct option OPTS[] = {
        { "model", 1, 0, 'm' }, { "url", 1, 0, 'u' }, { "api-key", 1, 0, 'a' }, { "max-tokens", 1, 0, 'n' },
        { "temperature", 1, 0, 't' }, { "seed", 1, 0, 's' }, { "trace-db", 1, 0, 'd' }, { "perfetto", 1, 0, 'p' },
        { "help", 0, 0, 'h' }, { 0, 0, 0, 0 } };
    const char *model_dir = "models/tiny-hi", *url = NULL, *api_key = NULL, *db = "traces/hipath.db", *pftrace = NULL;
    long max_tokens = 64, seed = -1;
    double temperature = 0;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", OPTS, NULL)) != -1) {
        switch (c) {
        case 'm': model_dir = optarg; break;
        case 'u': url = optarg; break;
        case 'a': api_key = optarg; break;
        case 'n': if (parse_int(optarg, 1, 1 << 24, &max_tokens)) return fail("--max-tokens must be a positive integer, got '%s'", optarg); break;
        case 't': if (parse_float(optarg, 0, 2, &temperature)) return fail("--temperature must be 0 to 2, got '%s'", optarg); break;
        case 's': if (parse_int(optarg, 0, 0x7fffffffL, &seed)) return fail("--seed must be an integer >= 0, got '%s'", optarg); break;
        case 'd': db = optarg; break;
        case 'p': pftrace = optarg; break;
        case 'h': fputs(USAGE, stdout); return 0;
        default: return fail("run: unknown or incomplete option '%s' (see --help)", argv[optind - 1]);
        }
    }
    if (optind != argc - 1) return fail("run: give the message as one argument, e.g. hipath run \"Hi\"");
    char pf_default[128], cmdline[1024] = "hipath", err[512], base[256], model[256];
    if (!pftrace) {
        time_t now = time(NULL);
        strftime(pf_default, sizeof pf_default, "traces/hipath-%Y%m%d-%H%M%S.pftrace", localtime(&now));
        pftrace = pf_default;
    }
    for (int i = 0; i < argc; i++) {
        size_t n = strlen(cmdline);
        snprintf(cmdline + n, sizeof cmdline - n, " %s", argv[i]);
    }
    make_parent(db);
    make_parent(pftrace);
    signal(SIGPIPE, SIG_IGN);
    trace_run_info info = { .db_path = db, .perfetto_path = pftrace, .command = cmdline, .model = model_dir,
                            .device = "cpu", .clock_domain = "host-monotonic" };
    if (trace_open(&info, err, sizeof err)) return fail("%s", err);

    server *s = NULL;
    int rc = 1;
    if (!url) {
        server_opts o = { .model_dir = model_dir, .host = "127.0.0.1", .port = 0 };
        if (!(s = server_start(&o, err, sizeof err))) { fail("%s", err); goto out; }
        snprintf(base, sizeof base, "http://127.0.0.1:%d", server_port(s));
        snprintf(model, sizeof model, "%s", server_model_name(s));
        url = base;
    } else if (client_first_model(url, api_key, model, sizeof model, err, sizeof err)) {
        fail("%s", err);
        goto out;
    }
    chat_request q = { .url = url, .model = model, .content = argv[optind], .max_tokens = (int)max_tokens,
                       .temperature = temperature, .seed = seed, .api_key = api_key, .on_text = print_text };
    chat_result r;
    int ok = client_chat(&q, &r) == 0;
    fputc('\n', stdout);
    fflush(stdout);
    if (!ok) fail("%s", r.error);
    if (s) server_stop(s);
    s = NULL;
    if (trace_close(err, sizeof err)) fail("%s", err);
    else if (ok) print_summary(&r, db, pftrace);
    chat_result_free(&r);
    return ok ? 0 : 1;
out:
    if (s) server_stop(s);
    trace_close(err, sizeof err);
    return rc;
}
