/*
 * replay.h -- a real engine's serving run replayed on the analytic device
 * (hipath replay, docs/replay.md). A run's requests.jsonl holds, a request
 * a line, its input and output lengths and the engine's own timestamps
 * (vLLM's queued, scheduled, first-token, last-token); each request is
 * sent to hipath's engine at its recorded queued time on the modeled
 * clock, with a prompt of its input length and a reply forced to its
 * output length (ignore_eos), and what the model gives is set against
 * what the real engine did: TTFT, TPOT and end-to-end latency, each from
 * the request's queued time.
 */
#ifndef HIPATH_LABS_REPLAY_H
#define HIPATH_LABS_REPLAY_H

#include "layers/scheduler/scheduler.h"

typedef struct {
    int input, output;                   /* tokens */
    double queued, first, last;          /* the real engine's timestamps, s (its own clock) */
    double m_first, m_last;              /* modeled, s from queued */
    int cached, preempted;               /* modeled: prefix-cache hits, preemptions */
} replay_request;

enum { REPLAY_TTFT, REPLAY_TPOT, REPLAY_LATENCY, REPLAY_METRICS };
extern const char *const REPLAY_METRIC[REPLAY_METRICS];   /* "ttft_ms", "tpot_ms", "latency_ms" */
enum { REPLAY_MEAN, REPLAY_MEDIAN, REPLAY_P90, REPLAY_P95, REPLAY_P99, REPLAY_STATS };
extern const char *const REPLAY_STAT[REPLAY_STATS];       /* "mean", "median", "p90", "p95", "p99" */

typedef struct {
    replay_request *req;
    int n;
    engine_opts o;                       /* as run */
    int tp, kv_blocks;                   /* GPUs; the KV pool in blocks (kv_derived: from the memory left) */
    int kv_derived;
    int kernel_sample;                   /* traced: layers 4-1 in every Nth step only (0: in none) */
    double weights_gib, workspace_gib;   /* a GPU's, as the pool was derived */
    double stat[REPLAY_METRICS][2][REPLAY_STATS];   /* [metric][0 real, 1 modeled][stat], ms */
    double wall_s;                       /* the replay's host time (measured) */
    int64_t steps, preemptions, max_seqs;
} replay;

/* Read path (one JSON object a line: input_toks, output_toks, queued_ts,
 * first_token_ts, last_token_ts; blank lines skipped). 0, or non-zero
 * with a one-line reason naming the line printed. */
int replay_load(replay *r, const char *path);
/* The engine settings of a vLLM meta.json (engine_kwargs: max_num_seqs,
 * max_num_batched_tokens, tensor_parallel_size, dtype) into o, *tp,
 * dtype (cap bytes). 0, or non-zero (the reason printed). */
int replay_meta(const char *path, engine_opts *o, int *tp, char *dtype, int cap);

/* The KV pool in blocks as vLLM sizes it: gpu_memory_utilization (0.9) of
 * a GPU's memory, less its share of the weights and the activations of a
 * step of max_num_batched_tokens (labs/bounds.h's workspace estimate), over
 * a token's KV on that GPU. 0, or non-zero (the reason printed). */
int replay_kv_blocks(replay *r, const char *config, const char *profile, const char *dtype);

/* Run r's requests through the engine (r->o; r->kv_blocks) on
 * analytic:profile over r->tp GPUs, fill the modeled times and r->stat;
 * with db, traced into it: layers 6 and 5 in full, 4-1 in the steps
 * numbered a multiple of r->kernel_sample, or in none (their 500 kernels
 * a step would take 600 MB for 300 requests). 0, or non-zero (the reason
 * printed). */
int replay_run(replay *r, const char *config, const char *profile, const char *dtype, const char *db);

/* r->stat from the requests' times: the real ones, and the modeled ones
 * as replay_run left them (0 before it ran). */
void replay_stats(replay *r);

/* The p-th percentile of v[0..n) as numpy.percentile's default (linear
 * between the closest ranks); sorts v. */
double replay_percentile(double *v, int n, double p);

void replay_free(replay *r);

#endif
