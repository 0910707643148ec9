/*
 * cmd_replay.c -- `hipath replay`: a real engine's serving run against the
 * analytic device's (labs/replay.h): TTFT, TPOT and latency, real and
 * modeled, per statistic.
 */
#include "cli/cli.h"
#include "labs/replay.h"
#include "layers/common/kv.h"
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char USAGE[] =
    "usage: hipath replay REQUESTS.jsonl --config CONFIG.json --device PROFILE [options]\n"
    "  --config FILE                the model's Hugging Face config.json\n"
    "  --device PROFILE             a GPU profile (rtx-pro-6000-server, h100, ...; analytic:PROFILE too)\n"
    "  --dtype D                    weights and KV cache (default bf16; meta.json's when given)\n"
    "  --engine-meta META.json      the run's vLLM settings: max_num_seqs, max_num_batched_tokens,\n"
    "                               tensor_parallel_size, dtype (the flags below override it)\n"
    "  --max-num-batched-tokens N   a step's token budget (default 2048)\n"
    "  --max-num-seqs N             requests a step may hold (default 256)\n"
    "  --tp N                       GPUs in tensor parallel (default 1)\n"
    "  --kv-blocks N                the KV pool (default: derived as vLLM sizes it, 0.9 of a GPU's\n"
    "                               memory less its weights and a step's activations)\n"
    "  --block-size N               tokens a KV block (hipath's blocks are 16: only 16)\n"
    "  --trace DB                   trace into DB (SQLite): layer 6 (steps, admissions, preemptions)\n"
    "                               and layer 5 (each step's forward) in full; layers 4-1 left out\n"
    "  --kernel-sample N            with --trace: layers 4-1 (ops, kernels, the device) too, in every\n"
    "                               Nth engine step (steps 0, N, 2N, ...; each marked kernel_detail)\n"
    "  --json                       {\"requests\", \"metrics\": {metric: {\"real\", \"modeled\"}}, \"per_request\"}\n"
    "Each line of REQUESTS.jsonl: input_toks, output_toks and the engine's queued_ts,\n"
    "first_token_ts, last_token_ts (s). Each request reaches hipath's engine at its queued\n"
    "time on the modeled clock, its reply forced to output_toks tokens (ignore_eos). Times\n"
    "in ms from queued_ts. Modeled figures: the same on any machine. docs/replay.md.\n";

static const char *const LABEL[REPLAY_METRICS] = { "TTFT", "TPOT", "Latency" };

static void print_table(const replay *r, const char *profile, const char *dtype) {
    printf("%d requests on analytic:%s x %d, %s: max_num_seqs %d, max_num_batched_tokens %d, chunked prefill, prefix caching\n",
           r->n, profile, r->tp, dtype, r->o.max_num_seqs, r->o.max_num_batched_tokens);
    if (r->kv_derived)
        printf("KV pool %d blocks of %d (derived: 0.9 x memory - %.2f GiB weights - %.2f GiB activations, a GPU's)\n", r->kv_blocks,
               KV_BLOCK_SIZE, r->weights_gib, r->workspace_gib);
    else printf("KV pool %d blocks of %d (--kv-blocks)\n", r->kv_blocks, KV_BLOCK_SIZE);
    printf("\n%-8s %-7s %12s %12s %8s\n", "metric", "", "real ms", "modeled ms", "diff");
    for (int m = 0; m < REPLAY_METRICS; m++) {
        for (int s = 0; s < REPLAY_STATS; s++) {
            double x = r->stat[m][0][s], y = r->stat[m][1][s];
            printf("%-8s %-7s %12.1f %12.1f %+7.1f%%\n", LABEL[m], REPLAY_STAT[s], x, y, 100 * (y / x - 1));
        }
        printf("\n");
    }
    printf("modeled: %lld steps, at most %lld requests in one, %lld preemptions\n", (long long)r->steps,
           (long long)r->max_seqs, (long long)r->preemptions);
    printf("real: the engine's own timestamps; modeled: the analytic device's clock (the same on any machine);"
           " the replay took %.1f s of host time (measured)\n", r->wall_s);
}

static cJSON *stats_json(const double *s) {
    cJSON *o = cJSON_CreateObject();
    for (int k = 0; k < REPLAY_STATS; k++) cJSON_AddNumberToObject(o, REPLAY_STAT[k], s[k]);
    return o;
}

static cJSON *times_json(const replay_request *q, int modeled) {
    cJSON *o = cJSON_CreateObject();
    double first = modeled ? q->m_first : q->first - q->queued, last = modeled ? q->m_last : q->last - q->queued;
    cJSON_AddNumberToObject(o, "ttft_ms", 1e3 * first);
    if (q->output > 1) cJSON_AddNumberToObject(o, "tpot_ms", 1e3 * (last - first) / (q->output - 1));
    else cJSON_AddNullToObject(o, "tpot_ms");
    cJSON_AddNumberToObject(o, "latency_ms", 1e3 * last);
    return o;
}

static void print_json(const replay *r, const char *profile, const char *dtype) {
    cJSON *j = cJSON_CreateObject(), *m = cJSON_CreateObject(), *pr = cJSON_CreateArray(), *eng = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "requests", r->n);
    for (int k = 0; k < REPLAY_METRICS; k++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "real", stats_json(r->stat[k][0]));
        cJSON_AddItemToObject(o, "modeled", stats_json(r->stat[k][1]));
        cJSON_AddItemToObject(m, REPLAY_METRIC[k], o);
    }
    cJSON_AddItemToObject(j, "metrics", m);
    cJSON_AddStringToObject(eng, "device", profile);
    cJSON_AddNumberToObject(eng, "tp", r->tp);
    cJSON_AddStringToObject(eng, "dtype", dtype);
    cJSON_AddNumberToObject(eng, "max_num_seqs", r->o.max_num_seqs);
    cJSON_AddNumberToObject(eng, "max_num_batched_tokens", r->o.max_num_batched_tokens);
    cJSON_AddNumberToObject(eng, "kv_blocks", r->kv_blocks);
    cJSON_AddBoolToObject(eng, "kv_blocks_derived", r->kv_derived);
    cJSON_AddNumberToObject(eng, "block_size", KV_BLOCK_SIZE);
    cJSON_AddNumberToObject(eng, "steps", (double)r->steps);
    cJSON_AddNumberToObject(eng, "preemptions", (double)r->preemptions);
    cJSON_AddNumberToObject(eng, "max_seqs", (double)r->max_seqs);
    cJSON_AddItemToObject(j, "engine", eng);
    cJSON_AddNumberToObject(j, "wall_s", r->wall_s);
    for (int i = 0; i < r->n; i++) {
        const replay_request *q = &r->req[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "input_toks", q->input);
        cJSON_AddNumberToObject(o, "output_toks", q->output);
        cJSON_AddNumberToObject(o, "arrival_ms", 1e3 * (q->queued - r->req[0].queued));
        cJSON_AddItemToObject(o, "real", times_json(q, 0));
        cJSON_AddItemToObject(o, "modeled", times_json(q, 1));
        cJSON_AddNumberToObject(o, "cached_tokens", q->cached);
        cJSON_AddNumberToObject(o, "preempted", q->preempted);
        cJSON_AddItemToArray(pr, o);
    }
    cJSON_AddItemToObject(j, "per_request", pr);
    char *s = cJSON_PrintUnformatted(j);
    if (s) puts(s);
    free(s);
    cJSON_Delete(j);
}

int cmd_replay(int argc, char **argv) {
    static const struct option OPTS[] = { { "config", 1, 0, 'c' }, { "device", 1, 0, 'd' }, { "dtype", 1, 0, 't' },
                                          { "engine-meta", 1, 0, 'm' }, { "max-num-batched-tokens", 1, 0, 'B' },
                                          { "max-num-seqs", 1, 0, 'S' }, { "tp", 1, 0, 'T' }, { "kv-blocks", 1, 0, 'K' },
                                          { "block-size", 1, 0, 'b' }, { "trace", 1, 0, 'D' }, { "kernel-sample", 1, 0, 'k' }, { "json", 0, 0, 'j' }, { "help", 0, 0, 'h' }, { 0, 0, 0, 0 } };
    const char *config = NULL, *device = NULL, *dtype_flag = NULL, *meta = NULL, *db = NULL;
    long budget = 0, seqs = 0, tp = 0, blocks = 0, sample = 0, v;
    int c, json = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", OPTS, NULL)) != -1) {
        switch (c) {
        case 'c': config = optarg; break;
        case 'd': device = strncmp(optarg, "analytic:", 9) ? optarg : optarg + 9; break;
        case 't': dtype_flag = optarg; break;
        case 'm': meta = optarg; break;
        case 'B': if (parse_int(optarg, 1, 1 << 20, &budget)) return stack_fail("replay: --max-num-batched-tokens must be a whole number from 1, got '%s'", optarg); break;
        case 'S': if (parse_int(optarg, 1, 1 << 16, &seqs)) return stack_fail("replay: --max-num-seqs must be a whole number from 1, got '%s'", optarg); break;
        case 'T': if (parse_int(optarg, 1, 64, &tp)) return stack_fail("replay: --tp must be a whole number from 1 to 64, got '%s'", optarg); break;
        case 'K': if (parse_int(optarg, 1, 1 << 26, &blocks)) return stack_fail("replay: --kv-blocks must be a whole number from 1, got '%s'", optarg); break;
        case 'b':
            if (parse_int(optarg, 1, 1 << 20, &v) || v != KV_BLOCK_SIZE) return stack_fail("replay: --block-size: hipath's KV blocks are %d tokens, got '%s'", KV_BLOCK_SIZE, optarg);
            break;
        case 'D': db = optarg; break;
        case 'k': if (parse_int(optarg, 1, 1 << 30, &sample)) return stack_fail("replay: --kernel-sample must be a whole number from 1, got '%s'", optarg); break;
        case 'j': json = 1; break;
        case 'h': fputs(USAGE, stdout); return 0;
        default: return stack_fail("replay: unknown or incomplete option '%s' (see --help)", argv[optind - 1]);
        }
    }
    if (optind != argc - 1) return stack_fail(optind < argc ? "replay: one REQUESTS.jsonl, got more (see --help)" : "replay: which REQUESTS.jsonl? (see --help)");
    if (!config || !device) return stack_fail("replay: --config and --device are needed (see --help)");
    if (sample && !db) return stack_fail("replay: --kernel-sample samples a trace: give --trace DB too");
    char dtype[32] = "bf16";
    int gpus = 1;
    replay r;
    if (replay_load(&r, argv[optind])) return 1;
    r.o = (engine_opts){ .max_num_batched_tokens = 2048, .max_num_seqs = 256 };
    if (meta && replay_meta(meta, &r.o, &gpus, dtype, sizeof dtype)) { replay_free(&r); return 1; }
    if (dtype_flag) snprintf(dtype, sizeof dtype, "%s", dtype_flag);
    if (budget) r.o.max_num_batched_tokens = (int)budget;
    if (seqs) r.o.max_num_seqs = (int)seqs;
    r.tp = tp ? (int)tp : gpus;
    if (blocks) r.kv_blocks = (int)blocks;
    r.kernel_sample = (int)sample;
    int rc = (!blocks && replay_kv_blocks(&r, config, device, dtype)) || replay_run(&r, config, device, dtype, db);
    if (rc) { replay_free(&r); return 1; }
    if (json) print_json(&r, device, dtype); else print_table(&r, device, dtype);
    replay_free(&r);
    return 0;
}
