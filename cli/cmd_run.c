/*
 * cmd_run.c -- `hipath run "Hi"`: the whole journey, traced. A server
 * (layer 6 and below) starts in this process on a free loopback port, or
 * --url names a running one; the client (layer 8) sends the message as a
 * chat app would and prints the reply as it streams.
 */
#include "cli/cli.h"
#include "layers/client/client.h"
#include "kernels/backend.h"
#include "labs/bounds.h"
#include "layers/tensor/forward.h"
#include "layers/scheduler/server.h"
#include "layers/tokenizer/tokenizer.h"
#include "trace/journey.h"
#include "trace/trace.h"
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
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
    "  --connect-timeout S  give up when the server takes longer to connect (default 10)\n"
    "  --first-byte-timeout S  ... to start its answer (default 60)\n"
    "  --idle-timeout S     ... to send the next piece of text (default 60; keep-alives do not count)\n"
    "  --max-tokens N       reply length limit (default 64)\n"
    "  --temperature T      0 = greedy (default 0)\n"
    "  --seed S             seed for sampling\n"
    "  --kv-cache-mb M      KV-cache pool of the in-process server (default: 90% of a simulated device's\n"
    "                       memory left after weights and workspace, at most 256 on sim; 64 on cpu)\n"
    "  --device D           auto (default: hip:0 if present, else sim:w7900), cpu, sim:PROFILE, hip:N\n"
    "  --jit                hip: compile the kernels at run time, cached (docs/timing.md)\n"
    "  --trace-db FILE      SQLite trace (default traces/hipath.db)\n"
    "  --perfetto FILE      Perfetto trace (default traces/hipath-<timestamp>.pftrace)\n"
    "  --ignore-eos         generate --max-tokens tokens whatever is sampled (vLLM's ignore_eos)\n"
    "  --analytic           shapes only, every device time modeled: --config FILE on --device PROFILE\n"
    "  --config FILE        analytic: the model's config.json (Hugging Face)\n"
    "  --dtype D            analytic: weight dtype fp16 (default), bf16, fp32, int8, q4_0, q4_1\n"
    "  --tp N               tensor parallelism over N GPUs of a sim: or analytic: profile, joined by its\n"
    "                       interconnect (modeled: each GPU runs 1/N of every split kernel; docs/parallel.md)\n"
    "  --pp M               pipeline parallelism: the layers in M stages, each on its own --tp GPUs, the\n"
    "                       activations sent between them, up to M micro-batches in flight (docs/parallel.md)\n"
    "  --dp N               data parallelism: N engine replicas (analytic: only), each its own GPUs and KV pool\n"
    "  --dp-lb M            round_robin (default) or shortest_queue: which replica takes a request\n"
    "  --ep N               expert parallelism: a MoE model's experts over the --tp N GPUs (all-to-alls between)\n"
    "  --expert-skew S      analytic MoE routing: expert e drawn with probability ~ (e + 1)^-S (Zipf; 0: uniform)\n"
    "  --tokenizer FILE     the model's tokenizer.json (analytic: else the one beside the config, or a placeholder)\n"
    "  --reply TEXT         teacher forcing: the reply is TEXT's ids, then the end of the turn, whatever is sampled\n"
    "  --web                then keep serving, with the web page: prints the request's timeline URL (Ctrl-C stops)\n";

static void print_text(const char *text, size_t len, void *user) {
    (void)user;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
}

/* The summary after the reply: the client's latency, the journey table
 * read back from the trace, and where the traces are. Every figure names
 * its clock: measured on this host, or modeled (a simulated device), and
 * where both make one timeline, how much of each. */
static void print_summary(const chat_result *r, const char *db, const char *pftrace, int64_t run, const char *reply) {
    const rt_device *d = rt_device_now();
    int modeled = d->driver->modeled;
    char clock[200];
    snprintf(clock, sizeof clock, modeled ? "virtual clock: host CPU time measured, %s's time modeled" : "measured on this host's clock",
             d->name);
    fprintf(stderr, "\n[request %lld: %d prompt tokens, %d generated, finish %s]\n", (long long)r->id,
            r->prompt_tokens, r->completion_tokens, r->finish);
    if (reply) fprintf(stderr, "[the reply was forced (--reply, teacher forcing): the model's samples were set aside]\n");
    fprintf(stderr, "at the client (%s): TTFT %.2f ms, ", clock, r->ttft_s * 1e3);
    if (r->tpot_s > 0) fprintf(stderr, "%.3f ms per output token (%.1f tokens/s), ", r->tpot_s * 1e3, 1 / r->tpot_s);
    else fprintf(stderr, "no time per output token (fewer than 2 tokens), ");
    fprintf(stderr, "%.2f ms in all\n", r->total_s * 1e3);
    journey_row rows[16];
    int n;
    double total, by_clock[3] = { 0 };
    char err[256];
    if (db && trace_journey(db, run, rows, &n, &total, err, sizeof err) == 0) {
        fprintf(stderr, "\nthe journey (time: when that layer was the deepest one at work, on the trace's timeline)\n");
        fprintf(stderr, "  %-12s %-4s %10s %-8s %6s  %s\n", "layer", "dir", "time", "clock", "share", "what happened to the data");
        for (int i = 0; i < n; i++) {
            by_clock[rows[i].clock] += rows[i].self_s;
            fprintf(stderr, "  %d %-10s %-4s %7.3f ms %-8s %5.1f%%  %.260s%s\n", rows[i].layer, trace_layer_name(rows[i].layer),
                    rows[i].dir == DIR_DOWN ? "down" : "up", rows[i].self_s * 1e3, trace_clock_name(rows[i].clock),
                    total > 0 ? 100 * rows[i].self_s / total : 0, rows[i].what, strlen(rows[i].what) > 260 ? "..." : "");
        }
        if (modeled)
            fprintf(stderr, "  %-17s %7.3f ms %-8s 100.0%%  = %.3f ms measured (host) + %.3f ms modeled (device)\n", "total",
                    total * 1e3, "mixed", by_clock[TRACE_MEASURED] * 1e3, by_clock[TRACE_MODELED] * 1e3);
        else
            fprintf(stderr, "  %-17s %7.3f ms %-8s 100.0%%\n", "total", total * 1e3, "measured");
    } else if (db) fprintf(stderr, "(no journey table: %s)\n", err);
    if (db) fprintf(stderr, "\nSQLite trace: %s    try: sqlite3 %s 'SELECT * FROM v_layer_time'\n", db, db);
    fprintf(stderr, "Perfetto trace: %s    open it at https://ui.perfetto.dev (Open trace file)\n", pftrace);
}

/* --web: the summary now (the trace written so far), then the page until Ctrl-C. */
static void serve_on(server *s, const chat_result *r, const char *db, const char *pftrace, int64_t run, const char *reply,
                     const sigset_t *stop) {
    char err[256];
    if (trace_flush(err, sizeof err)) stack_fail("%s", err);
    print_summary(r, db, pftrace, run, reply);
    fprintf(stderr, "\nhipath: follow it at http://127.0.0.1:%d/trace/%lld (the web page; Ctrl-C stops)\n", server_port(s),
            (long long)r->id);
    int sig;
    sigwait(stop, &sig);
    fprintf(stderr, "hipath: stopping\n");
}

/* Refuse a model the device cannot hold, with the calculator's three terms
 * (over --tp N GPUs: one GPU's share of them). Past one GPU, say what the
 * calculator bounds a decode step by: a GPU's read of its weights, and the
 * all-reduces' bandwidth term (docs/parallel.md). */
static int check_fits(const char *config, const char *dtype, int context) {
    model_config c;
    bounds_result b;
    char err[512];
    const rt_device *d = rt_device_now();
    if (model_config_load(&c, config, err, sizeof err) || forward_split_check(&c, d->gpus, d->stages, d->ep, err, sizeof err))
        return stack_fail("%s", err);   /* before the figures below: a refusal is one line */
    if (context > c.max_seq_len) context = c.max_seq_len;
    bounds_input in = { .dtype = dtype, .kv_dtype = "fp32", .batch = 1, .prompt_len = 1, .context = context };
    /* Capacity needs no peak: ask at fp32's, the one every simulated device has. */
    bounds_options opt = { .compute_dtype = "fp32", .tp = d->gpus, .pp = d->stages };
    if (bounds_compute_with(&c, &d->prof, &in, &opt, &b, err, sizeof err)) return stack_fail("%s", err);
    const bounds_capacity *cap = d->gpus * d->stages > 1 ? &b.parallel.per_gpu : &b.capacity;
    if (!cap->fits)
        return stack_fail("%s (%s) does not fit %s%s: weights %.2f GB + KV %.2f GB (%d tokens, fp32) + workspace %.2f GB = %.2f GB > %.2f GB of device memory",
                        config, dtype, d->gpus * d->stages > 1 ? "each GPU of " : "", d->prof.name, cap->weights_bytes / 1e9, cap->kv_bytes / 1e9,
                        context, cap->workspace_bytes / 1e9, cap->total_bytes / 1e9, cap->device_bytes / 1e9);
    if (d->gpus > 1) {
        const bounds_parallel_phase *t = &b.parallel.decode;
        fprintf(stderr, "hipath: %d x %s, %s: a decode step at batch 1 reads %.3g GB of weights a GPU, >= %.3f ms; its %d all-reduces "
                        "(ring, %.3g kB each) >= %.3f ms of bandwidth + %.3f ms of hop latency (calculator: hipath bounds --tp %d)\n",
                d->gpus, d->prof.name, d->prof.link.name, cap->weights_bytes / 1e9, t->t_memory * 1e3, t->all_reduce.per_step,
                t->all_reduce.bytes / 1e3, t->all_reduce.bandwidth_s * 1e3, t->all_reduce.latency_s * 1e3, d->gpus);
    }
    return 0;
}

static int bad_seconds(const char *which, const char *arg) {
    return stack_fail("--%s-timeout must be a number of seconds > 0, got '%s'", which, arg);
}

int cmd_run(int argc, char **argv) {
    static const struct option OPTS[] = {
        MODEL_OPTIONS, { "url", 1, 0, 'u' }, { "api-key", 1, 0, 'a' }, { "max-tokens", 1, 0, 'n' },
        { "temperature", 1, 0, 't' }, { "seed", 1, 0, 's' }, { "ignore-eos", 0, 0, 'E' }, { "web", 0, 0, 'W' },
        { "connect-timeout", 1, 0, 'c' }, { "first-byte-timeout", 1, 0, 'f' }, { "idle-timeout", 1, 0, 'i' },
        { "help", 0, 0, 'h' }, { 0, 0, 0, 0 } };
    model_opts m = { .model = "models/tiny-hi", .device = "auto", .dtype = "fp16", .db = "traces/hipath.db" };
    const char *url = NULL, *api_key = NULL;
    long max_tokens = 64, seed = -1;
    double temperature = 0;
    client_timeouts timeout = { CLIENT_CONNECT_S, CLIENT_FIRST_BYTE_S, CLIENT_IDLE_S };
    int c, taken, ignore_eos = 0, web_too = 0;
    /* Here, not in main for every command: libcurl's TLS libraries cost
     * about 2 MB resident, and only run and lab (lab.c) send HTTP. Before
     * any thread: libcurl asks for that. */
    client_init();
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", OPTS, NULL)) != -1) {
        if ((taken = model_option(&m, c, optarg))) { if (taken < 0) return 1; continue; }
        switch (c) {
        case 'u': url = optarg; break;
        case 'a': api_key = optarg; break;
        case 'n': if (parse_int(optarg, 1, 1 << 24, &max_tokens)) return stack_fail("--max-tokens must be a positive integer, got '%s'", optarg); break;
        case 't': if (parse_float(optarg, 0, 2, &temperature)) return stack_fail("--temperature must be 0 to 2, got '%s'", optarg); break;
        case 's': if (parse_int(optarg, 0, 0x7fffffffL, &seed)) return stack_fail("--seed must be an integer >= 0, got '%s'", optarg); break;
        case 'E': ignore_eos = 1; break;
        case 'W': web_too = 1; break;
        case 'c': if (parse_float(optarg, 1e-3, 1e6, &timeout.connect_s)) return bad_seconds("connect", optarg); break;
        case 'f': if (parse_float(optarg, 1e-3, 1e6, &timeout.first_byte_s)) return bad_seconds("first-byte", optarg); break;
        case 'i': if (parse_float(optarg, 1e-3, 1e6, &timeout.idle_s)) return bad_seconds("idle", optarg); break;
        case 'h': fputs(USAGE, stdout); return 0;
        default: return stack_fail("run: unknown or incomplete option '%s' (see --help)", argv[optind - 1]);
        }
    }
    if (optind != argc - 1) return stack_fail("run: give the message as one argument, e.g. hipath run \"Hi\"");
    char err[512], base[256], model[256];
    if (url && m.analytic) return stack_fail("run --analytic: needs --config CONFIG.json and no --url");
    if (model_options_done(&m, "run")) return 1;
    if (url && (m.tokenizer || m.reply || web_too || m.tp > 1 || m.pp > 1 || m.dp > 1))
        return stack_fail("run: --tokenizer, --reply, --web, --tp, --pp and --dp are the in-process server's, not --url's");
    const char *db = m.db, *pftrace = m.perfetto;
    signal(SIGPIPE, SIG_IGN);
    sigset_t stop;   /* --web waits for these; every thread started from here on leaves them to sigwait */
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    if (web_too) pthread_sigmask(SIG_BLOCK, &stop, NULL);
    stack k = { .run = -1 };
    char cmd[1024];
    if (!url && stack_device(&k, m.device, err, sizeof err)) return stack_fail("%s", err);
    stack_command(argc, argv, cmd, sizeof cmd);
    if ((m.analytic && check_fits(m.config, m.dtype, (int)max_tokens + 64)) ||
        (stack_trace(&k, db, &pftrace, cmd, url ? url : m.model, err, sizeof err) && stack_fail("%s", err))) {
        stack_close(&k, err, sizeof err);
        return 1;
    }
    web_opts wo = { .cap_mb = 0 };
    if (!url) {
        server_opts o = { .model_dir = m.model, .host = "127.0.0.1", .port = 0, .kv_cache_mb = m.kv_cache_mb,
                          .open_text = tokenizer_open_text, .tokenizer_path = m.tokenizer, .reply = m.reply,
                          .analytic_dtype = m.analytic ? m.dtype : NULL, .dp_lb = m.dp_lb };
        if (stack_serve(&k, &o, web_too ? &wo : NULL, db, err, sizeof err)) {
            stack_fail("%s", err);
            stack_close(&k, err, sizeof err);
            return 1;
        }
        snprintf(base, sizeof base, "http://127.0.0.1:%d", server_port(k.srv));
        snprintf(model, sizeof model, "%s", server_model_name(k.srv));
        url = base;
    } else if (client_first_model(url, api_key, &timeout, model, sizeof model, err, sizeof err)) {
        stack_fail("%s", err);
        stack_close(&k, err, sizeof err);
        return 1;
    }
    chat_request q = { .url = url, .model = model, .content = argv[optind], .max_tokens = (int)max_tokens,
                       .temperature = temperature, .seed = seed, .api_key = api_key, .ignore_eos = ignore_eos,
                       .timeout = timeout, .on_text = print_text };
    chat_result r;
    int ok = client_chat(&q, &r) == 0;
    fputc('\n', stdout);
    fflush(stdout);
    if (!ok) stack_fail("%s", r.error);
    int64_t run = k.run;
    if (k.web && ok) serve_on(k.srv, &r, db, pftrace, run, m.reply, &stop);
    int traced = stack_close(&k, err, sizeof err) == 0;   /* a trace not written fails the run, the reply printed or not */
    if (!traced) stack_fail("%s", err);
    else if (ok && !web_too) print_summary(&r, db, pftrace, run, m.reply);
    chat_result_free(&r);
    return ok && traced ? 0 : 1;
}
