/*
 * cmd_serve.c -- `hipath serve`: the OpenAI-compatible server (layer 6)
 * until Ctrl-C. Point any OpenAI client at http://HOST:PORT/v1.
 */
#include "cli/cli.h"
#include "kernels/backend.h"
#include "layers/scheduler/server.h"
#include "layers/tokenizer/tokenizer.h"
#include "trace/trace.h"
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>

static const char USAGE[] =
    "usage: hipath serve --model DIR [options]\n"
    "  --host ADDR              IPv4 address to listen on (default 127.0.0.1: this machine only)\n"
    "  --port N                 TCP port (default 8000; 0 = any free port)\n"
    "  --served-model-name NAME the name clients put in \"model\" (default: the folder's name)\n"
    "  --max-model-len N        prompt + completion tokens per request (default: the model's context)\n"
    "  --max-batch B            requests per engine step (default 32)\n"
    "  --kv-cache-mb M          KV-cache pool size in MiB (default 64)\n"
    "  --api-key KEY            require 'Authorization: Bearer KEY' on /v1/*\n"
    "  --max-connections N      connections held at once, in all (default 4096)\n"
    "  --max-connections-per-ip N  ... from one client address (default 128)\n"
    "  --connection-timeout S   close a connection idle this long (default 10; a request in progress waits)\n"
    "  --split-special-tokens   special-token text in messages (\"<|im_start|>\") is ordinary text, not the\n"
    "                           token (default: the token, as Hugging Face does); a request may say either\n"
    "  --device D               auto (default: hip:0 if present, else sim:w7900), cpu, sim:PROFILE, hip:N\n"
    "  --jit                    hip: compile the kernels at run time, cached (docs/timing.md)\n"
    "  --trace-db FILE          record a SQLite trace of everything served (written every second)\n"
    "  --perfetto FILE          record a Perfetto trace too (default with --trace-db: traces/...)\n";

int cmd_serve(int argc, char **argv) {
    static const struct option OPTS[] = {
        { "model", 1, 0, 'm' }, { "host", 1, 0, 'H' }, { "port", 1, 0, 'p' }, { "served-model-name", 1, 0, 'n' },
        { "max-model-len", 1, 0, 'l' }, { "max-batch", 1, 0, 'b' }, { "kv-cache-mb", 1, 0, 'k' },
        { "api-key", 1, 0, 'a' }, { "device", 1, 0, 'D' }, { "trace-db", 1, 0, 'd' }, { "perfetto", 1, 0, 'P' },
        { "jit", 0, 0, 'J' }, { "max-connections", 1, 0, 'C' }, { "max-connections-per-ip", 1, 0, 'I' },
        { "connection-timeout", 1, 0, 'T' }, { "split-special-tokens", 0, 0, 'S' }, { "help", 0, 0, 'h' }, { 0, 0, 0, 0 } };
    const char *device = "auto", *db = NULL, *pftrace = NULL;
    server_opts o = { .host = "127.0.0.1", .port = 8000, .open_text = tokenizer_open_text };
    long v;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", OPTS, NULL)) != -1) {
        switch (c) {
        case 'm': o.model_dir = optarg; break;
        case 'H': o.host = optarg; break;
        case 'p': if (parse_int(optarg, 0, 65535, &v)) return cli_fail("--port must be 0 to 65535, got '%s'", optarg); o.port = (int)v; break;
        case 'n': o.served_name = optarg; break;
        case 'l': if (parse_int(optarg, 2, 1 << 24, &v)) return cli_fail("--max-model-len must be an integer >= 2, got '%s'", optarg); o.max_model_len = (int)v; break;
        case 'b': if (parse_int(optarg, 1, 4096, &v)) return cli_fail("--max-batch must be 1 to 4096, got '%s'", optarg); o.max_batch = (int)v; break;
        case 'k': if (parse_float(optarg, 1e-3, 1 << 20, &o.kv_cache_mb)) return cli_fail("--kv-cache-mb must be a positive number, got '%s'", optarg); break;
        case 'a': o.api_key = optarg; break;
        case 'S': o.split_special_tokens = 1; break;
        case 'C': if (parse_int(optarg, 1, 1 << 20, &v)) return cli_fail("--max-connections must be a positive integer, got '%s'", optarg); o.max_connections = (int)v; break;
        case 'I': if (parse_int(optarg, 1, 1 << 20, &v)) return cli_fail("--max-connections-per-ip must be a positive integer, got '%s'", optarg); o.max_connections_per_ip = (int)v; break;
        case 'T': if (parse_int(optarg, 1, 3600, &v)) return cli_fail("--connection-timeout must be 1 to 3600 seconds, got '%s'", optarg); o.connection_timeout_s = (int)v; break;
        case 'D': device = optarg; break;
        case 'd': db = optarg; break;
        case 'P': pftrace = optarg; break;
        case 'J': rt_jit(1); break;
        case 'h': fputs(USAGE, stdout); return 0;
        default: return cli_fail("serve: unknown or incomplete option '%s' (see --help)", argv[optind - 1]);
        }
    }
    if (!o.model_dir) return cli_fail("serve: --model is required");

    /* Every thread inherits the blocked signals; only sigwait below takes them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    char err[512];
    if (backend_open(device, err, sizeof err)) return cli_fail("%s", err);
    /* A server is never quiet for long, and may be killed: its trace is
     * written every second, and a thread with 4 MiB of events unwritten
     * (about a second of the writer's work) waits for it. */
    trace_flush_every(1, 4u << 20);
    if ((db || pftrace) && cli_trace_open(argc, argv, db, &pftrace, o.model_dir)) return 1;
    server *s = server_start(&o, err, sizeof err);
    if (!s) { trace_close(err, sizeof err); return cli_fail("%s", err); }
    fprintf(stderr, "hipath: serving %s at http://%s:%d/v1 (Ctrl-C stops)\n", server_model_name(s), o.host, server_port(s));
    int sig;
    sigwait(&stop, &sig);
    fprintf(stderr, "hipath: stopping\n");
    server_stop(s);
    if (trace_close(err, sizeof err)) return cli_fail("%s", err);
    if (db || pftrace) fprintf(stderr, "hipath: trace written%s%s\n", db ? " to " : "", db ? db : "");
    backend_close();
    return 0;
}
