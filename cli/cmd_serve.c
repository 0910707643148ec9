/*
 * cmd_serve.c -- `hipath serve`: the OpenAI-compatible server (layer 6)
 * until Ctrl-C. Point any OpenAI client at http://HOST:PORT/v1.
 */
#include "cli/cli.h"
#include "kernels/backend.h"
#include "layers/scheduler/server.h"
#include "layers/tokenizer/tokenizer.h"
#include "trace/trace.h"
#include "web/server/web.h"
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static const char USAGE[] =
    "usage: hipath serve --model DIR [options]\n"
    "       hipath serve --analytic --config CONFIG.json --device PROFILE [options]\n"
    "  --host ADDR              IPv4 address to listen on (default 127.0.0.1: this machine only)\n"
    "  --port N                 TCP port (default 8000; 0 = any free port)\n"
    "  --served-model-name NAME the name clients put in \"model\" (default: the folder's name)\n"
    "  --max-model-len N        prompt + completion tokens per request (default: the model's context)\n"
    "  --max-num-seqs N         requests a step may hold (default 32; vLLM's: 256, 1024 on a GPU of 70 GiB\n"
    "                           or more but an A100; hipath's keeps a CPU's logits buffers small); --max-batch N too\n"
    "  --max-num-batched-tokens N  tokens a step may compute, prefill and decode together (default as vLLM's:\n"
    "                           8192 on a device of 70 GiB or more but an A100, else 2048; without chunked\n"
    "                           prefill, the context + --max-num-seqs)\n"
    "  --no-chunked-prefill     prefill a prompt whole in one step (default: chunked, as vLLM V1: a step's\n"
    "                           budget is shared by the decodes, the running prefills' chunks, then new requests)\n"
    "  --enable-prefix-caching  keep full KV blocks by their prefix and reuse them across requests (the default)\n"
    "  --no-enable-prefix-caching  compute every prompt in full\n"
    "  --reserve-worst-case     admit a request only when its prompt + max_tokens fit beside the running\n"
    "                           ones' (nothing is ever preempted); default: admit when what it computes now\n"
    "                           fits, and preempt the most recently admitted when blocks run out, as vLLM\n"
    "  --kv-cache-mb M          KV-cache pool size in MiB (default: 90% of a simulated device's memory left\n"
    "                           after weights and workspace, at most 256 on sim; 64 on cpu; printed at start)\n"
    "  --api-key KEY            require 'Authorization: Bearer KEY' on /v1/* and /api/*\n"
    "  --max-connections N      connections held at once, in all (default 4096)\n"
    "  --max-connections-per-ip N  ... from one client address (default 128)\n"
    "  --connection-timeout S   close a connection idle this long (default 10; a request in progress waits)\n"
    "  --read-timeout S         a request's headers and body must all arrive within S seconds of the\n"
    "                           connection's start (or its previous answer), however slowly they trickle\n"
    "                           (default 30, or --connection-timeout if longer; the answer may take longer)\n"
    "  --sse-keepalive S        a stream with nothing to send for S seconds gets a ': keepalive' comment\n"
    "                           (default 5; fractions allowed)\n"
    "  --http-threads N         threads that poll the connections, each its share (default 4)\n"
    "  --split-special-tokens   special-token text in messages (\"<|im_start|>\") is ordinary text, not the\n"
    "                           token (default: the token, as Hugging Face does); a request may say either\n"
    "  --device D               auto (default: hip:0 if present, else sim:w7900), cpu, sim:PROFILE, hip:N\n"
    "  --jit                    hip: compile the kernels at run time, cached (docs/timing.md)\n"
    "  --trace-db FILE          the SQLite trace of everything served (default traces/serve.db, written every second;\n"
    "                           the web page reads it)\n"
    "  --trace-cap-mb M         keep the trace under M MiB, the oldest events deleted first (default 512; 0: no cap)\n"
    "  --no-trace               record no trace (the web page then has no timelines)\n"
    "  --perfetto FILE          record a Perfetto trace too (not capped; the web page downloads a request's)\n"
    "  --web DIR                the web page's files (default web/static beside build/)\n"
    "  --labs-dir DIR           the labs' results the page charts (default labs/out)\n"
    "  --analytic               shapes only, every device time modeled: --config FILE on --device PROFILE\n"
    "  --config FILE            analytic: the model's config.json (Hugging Face)\n"
    "  --dtype D                analytic: weight dtype fp16 (default), bf16, fp32, int8, q4_0, q4_1\n"
    "  --tp N                   tensor parallelism over N GPUs of a sim: or analytic: profile, joined by its\n"
    "                           interconnect (modeled: each GPU runs 1/N of every split kernel; docs/parallel.md)\n"
    "  --pp M                   pipeline parallelism: the layers in M stages, each on its own --tp GPUs, the\n"
    "                           activations sent between them, up to M micro-batches in flight (docs/parallel.md)\n"
    "  --dp N                   data parallelism: N engine replicas (analytic: only), each its own tp x pp GPUs and\n"
    "                           KV pool, behind this one server (docs/parallel.md)\n"
    "  --ep N                   expert parallelism: a MoE model's experts spread over the --tp N GPUs, E/N whole\n"
    "                           on each, tokens sent to them and back by all-to-alls (docs/parallel.md)\n"
    "  --expert-skew S          analytic MoE routing: expert e drawn with probability ~ (e + 1)^-S (Zipf; 0: uniform)\n"
    "  --dp-lb M                which replica takes a request: round_robin (default), or shortest_queue (the\n"
    "                           lowest 4 x waiting + running, as vLLM's DP load balancer scores them)\n"
    "  --tokenizer FILE         the model's tokenizer.json (analytic: else the one beside the config, or a placeholder)\n"
    "  --reply TEXT             teacher forcing: every reply is TEXT's ids, then the end of the turn\n"
    "  --workshop               a room of students' browsers (docs/workshop.md): listens on every interface\n"
    "                           (unless --host), prints the join URL and code and the teacher's URL and key\n"
    "                           (--api-key, else a random one); each student joins with the code for a key of\n"
    "                           their own, and sees only their own requests\n"
    "  --workshop-rate N        generations a student may start a minute (default 10; 0: no limit; 429 past it)\n"
    "  --workshop-max-tokens N  completion tokens of a student's request, at most (default 256; 0: no cap)\n"
    "  --workshop-max-prompt-tokens N  prompt tokens of a student's request (chat template included), at most\n"
    "                           (default 512; 0: no cap): one long prompt's prefill would stall every other\n"
    "  --workshop-students N    students who may join (default 100)\n"
    "  --workshop-seats-per-address N  students who may join from one address (default 3; 0: no cap)\n"
    "  --workshop-code CODE     the join code: 6 letters or digits (default: random)\n";

int cmd_serve(int argc, char **argv) {
    static const struct option OPTS[] = {
        MODEL_OPTIONS, { "host", 1, 0, 'H' }, { "port", 1, 0, 'p' }, { "served-model-name", 1, 0, 'n' },
        { "max-model-len", 1, 0, 'l' }, { "max-batch", 1, 0, 'b' }, { "api-key", 1, 0, 'a' },
        { "trace-cap-mb", 1, 0, 'c' }, { "no-trace", 0, 0, 'N' }, { "web", 1, 0, 'W' }, { "labs-dir", 1, 0, 'L' },
        { "max-connections", 1, 0, 'X' }, { "max-connections-per-ip", 1, 0, 'I' }, { "connection-timeout", 1, 0, 'O' },
        { "sse-keepalive", 1, 0, 'K' }, { "http-threads", 1, 0, 'E' },
        { "split-special-tokens", 0, 0, 'S' }, { "workshop", 0, 0, 'w' }, { "workshop-rate", 1, 0, 1000 },
        { "workshop-max-tokens", 1, 0, 1001 }, { "workshop-students", 1, 0, 1002 }, { "workshop-code", 1, 0, 1003 },
        { "workshop-max-prompt-tokens", 1, 0, 1004 }, { "workshop-seats-per-address", 1, 0, 1005 }, { "read-timeout", 1, 0, 1006 },
        { "max-num-seqs", 1, 0, 'b' }, { "max-num-batched-tokens", 1, 0, 1007 }, { "no-chunked-prefill", 0, 0, 1008 },
        { "enable-chunked-prefill", 0, 0, 1009 }, { "enable-prefix-caching", 0, 0, 1010 }, { "no-enable-prefix-caching", 0, 0, 1011 },
        { "reserve-worst-case", 0, 0, 1012 }, { "help", 0, 0, 'h' }, { 0, 0, 0, 0 } };
    model_opts m = { .device = "auto", .dtype = "fp16", .db = "traces/serve.db" };
    const web_opts plain = { .cap_mb = 512, .workshop_rate = 10, .workshop_max_tokens = 256, .workshop_max_prompt_tokens = 512,
                             .workshop_students = 100, .workshop_seats = 3 };
    web_opts wo = plain;
    int host_given = 0;
    char teacher_key[40];
    server_opts o = { .host = "127.0.0.1", .port = 8000, .open_text = tokenizer_open_text };
    long v;
    int c, r;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", OPTS, NULL)) != -1) {
        if ((r = model_option(&m, c, optarg))) { if (r < 0) return 1; continue; }
        switch (c) {
        case 'H': o.host = optarg; host_given = 1; break;
        case 'w': wo.workshop = 1; break;
        case 1000: if (parse_int(optarg, 0, 100000, &v)) return stack_fail("--workshop-rate must be 0 to 100000 a minute, got '%s'", optarg); wo.workshop_rate = (int)v; break;
        case 1001: if (parse_int(optarg, 0, 1 << 24, &v)) return stack_fail("--workshop-max-tokens must be a number >= 0, got '%s'", optarg); wo.workshop_max_tokens = (int)v; break;
        case 1002: if (parse_int(optarg, 1, 100000, &v)) return stack_fail("--workshop-students must be 1 to 100000, got '%s'", optarg); wo.workshop_students = (int)v; break;
        case 1004: if (parse_int(optarg, 0, 1 << 24, &v)) return stack_fail("--workshop-max-prompt-tokens must be a number >= 0, got '%s'", optarg); wo.workshop_max_prompt_tokens = (int)v; break;
        case 1005: if (parse_int(optarg, 0, 100000, &v)) return stack_fail("--workshop-seats-per-address must be 0 to 100000, got '%s'", optarg); wo.workshop_seats = (int)v; break;
        case 1006: if (parse_int(optarg, 1, 3600, &v)) return stack_fail("--read-timeout must be 1 to 3600 seconds, got '%s'", optarg); o.read_timeout_s = (int)v; break;
        case 1003:
            if (strlen(optarg) != WORKSHOP_CODE_LEN || strspn(optarg, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != WORKSHOP_CODE_LEN)
                return stack_fail("--workshop-code must be %d capital letters or digits, got '%s'", WORKSHOP_CODE_LEN, optarg);
            wo.workshop_code = optarg;
            break;
        case 'p': if (parse_int(optarg, 0, 65535, &v)) return stack_fail("--port must be 0 to 65535, got '%s'", optarg); o.port = (int)v; break;
        case 'n': o.served_name = optarg; break;
        case 'l': if (parse_int(optarg, 2, 1 << 24, &v)) return stack_fail("--max-model-len must be an integer >= 2, got '%s'", optarg); o.max_model_len = (int)v; break;
        case 'b': if (parse_int(optarg, 1, 4096, &v)) return stack_fail("--max-num-seqs must be 1 to 4096, got '%s'", optarg); o.max_batch = (int)v; break;
        case 1007: if (parse_int(optarg, 1, 1 << 24, &v)) return stack_fail("--max-num-batched-tokens must be a positive integer, got '%s'", optarg); o.max_num_batched_tokens = (int)v; break;
        case 1008: o.no_chunked_prefill = 1; break;
        case 1009: o.no_chunked_prefill = 0; break;
        case 1010: o.no_prefix_caching = 0; break;
        case 1011: o.no_prefix_caching = 1; break;
        case 1012: o.reserve_worst_case = 1; break;
        case 'a': o.api_key = optarg; break;
        case 'S': o.split_special_tokens = 1; break;
        case 'X': if (parse_int(optarg, 1, 1 << 20, &v)) return stack_fail("--max-connections must be a positive integer, got '%s'", optarg); o.max_connections = (int)v; break;
        case 'I': if (parse_int(optarg, 1, 1 << 20, &v)) return stack_fail("--max-connections-per-ip must be a positive integer, got '%s'", optarg); o.max_connections_per_ip = (int)v; break;
        case 'O': if (parse_int(optarg, 1, 3600, &v)) return stack_fail("--connection-timeout must be 1 to 3600 seconds, got '%s'", optarg); o.connection_timeout_s = (int)v; break;
        case 'K': if (parse_float(optarg, 0.01, 3600, &o.keepalive_s)) return stack_fail("--sse-keepalive must be 0.01 to 3600 seconds, got '%s'", optarg); break;
        case 'E': if (parse_int(optarg, 1, 64, &v)) return stack_fail("--http-threads must be 1 to 64, got '%s'", optarg); o.http_threads = (int)v; break;
        case 'c': if (parse_float(optarg, 0, 1 << 30, &wo.cap_mb)) return stack_fail("--trace-cap-mb must be a number >= 0, got '%s'", optarg); break;
        case 'N': m.db = NULL; break;
        case 'W': wo.root = optarg; break;
        case 'L': wo.labs_dir = optarg; break;
        case 'h': fputs(USAGE, stdout); return 0;
        default: return stack_fail("serve: unknown or incomplete option '%s' (see --help)", argv[optind - 1]);
        }
    }
    if (model_options_done(&m, "serve")) return 1;
    if (!m.model) return stack_fail("serve: --model is required");
    o.model_dir = m.model;
    o.analytic_dtype = m.analytic ? m.dtype : NULL;
    o.tokenizer_path = m.tokenizer;
    o.reply = m.reply;
    o.kv_cache_mb = m.kv_cache_mb;
    o.dp_lb = m.dp_lb;
    const char *db = m.db, *pftrace = m.perfetto;
    if (!wo.workshop && (wo.workshop_code || wo.workshop_rate != plain.workshop_rate || wo.workshop_max_tokens != plain.workshop_max_tokens ||
                         wo.workshop_max_prompt_tokens != plain.workshop_max_prompt_tokens || wo.workshop_students != plain.workshop_students ||
                         wo.workshop_seats != plain.workshop_seats))
        return stack_fail("serve: the --workshop-* options go with --workshop");
    if (wo.workshop) {   /* the room reaches it over the LAN; the server's key is the teacher's */
        if (!host_given) o.host = "0.0.0.0";
        if (!o.api_key && cli_workshop_key(teacher_key, sizeof teacher_key)) return stack_fail("--workshop: no random bytes for a key");
        if (!o.api_key) o.api_key = teacher_key;
    }

    /* Every thread inherits the blocked signals; only sigwait below takes them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    char err[512], cmd[1024];
    stack k = { .run = -1 };
    if (stack_device(&k, m.device, err, sizeof err)) return stack_fail("%s", err);
    /* A server is never quiet for long, and may be killed: its trace is
     * written every second, and a thread with 4 MiB of events unwritten
     * (about a second of the writer's work) waits for it. */
    trace_flush_every(1, 4u << 20);
    trace_keep_under((uint64_t)(wo.cap_mb * 1048576));
    stack_command(argc, argv, cmd, sizeof cmd);
    if (((db || pftrace) && stack_trace(&k, db, pftrace ? &pftrace : NULL, cmd, o.model_dir, err, sizeof err)) ||
        stack_serve(&k, &o, &wo, db, err, sizeof err)) {
        stack_fail("%s", err);
        stack_close(&k, err, sizeof err);
        return 1;
    }
    fprintf(stderr, "hipath: serving %s at http://%s:%d/v1 (Ctrl-C stops)\n", server_model_name(k.srv), o.host, server_port(k.srv));
    fprintf(stderr, "hipath: web page at http://%s:%d/\n", o.host, server_port(k.srv));
    if (wo.workshop) cli_workshop_print(o.host, server_port(k.srv), web_workshop_code(k.web), o.api_key, &wo);
    int sig;
    sigwait(&stop, &sig);
    fprintf(stderr, "hipath: stopping\n");
    if (stack_close(&k, err, sizeof err)) return stack_fail("%s", err);
    if (db || pftrace) fprintf(stderr, "hipath: trace written%s%s\n", db ? " to " : "", db ? db : "");
    return 0;
}
