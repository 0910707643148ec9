/*
 * lab.h -- what the nine labs share. Lab N (labs/labN.c, beside its sheet
 * labN-*.md, whose last section "What `hipath lab N` does" it follows) runs
 * requests through an in-process server into OUT/labN.db (a session),
 * predicts with the calculator (labs/bounds.h), measures with the SQL of
 * labs/sql/ on the trace, and writes one row per (sweep point, quantity): a
 * table on stdout (or, with --json, the JSON), OUT/labN.csv and OUT/labN.json,
 * whose chart labs/plot.py draws. Lab 9 drives an engine itself, open loop
 * (layers/scheduler/arrivals.h), and measures from its requests' own times.
 */
#ifndef HIPATH_LAB_H
#define HIPATH_LAB_H

#include "labs/bounds.h"
#include "labs/lab_sql.h"   /* made by the Makefile: enum lab_sql, SQL_<FILE> per labs/sql/ file */
#include "layers/client/client.h"
#include "stack/stack.h"
#include "layers/scheduler/served.h"   /* served_name: a model's name, the server's rule */
#include <cjson/cJSON.h>
#include <math.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>

#define LAB_COUNT 10
#define NA NAN              /* a row's empty predicted or measured cell */
#define QWEN7B   "tests/data/qwen2.5-7b-instruct.config.json"
#define QWEN14B  "tests/data/deepseek-r1-distill-qwen-14b.config.json"
#define QWEN3_8B "labs/configs/qwen3-8b.config.json"
#define LLAMA70B "tests/data/llama-2-70b.config.json"

/* The sweep point the next rows belong to (the CSV's leading columns). */
typedef struct { const char *model, *device, *dtype, *kv_dtype; int batch, prompt_len, context; } lab_point;

typedef struct {
    int n;                      /* 1..LAB_COUNT */
    char tag[16];               /* names its runs and files: "lab3" (hipath validate: "validate") */
    int quiet_runs;             /* no line on stderr for each session's run (validate: one a row) */
    const char *out, *model;    /* --out, --model */
    char device[160];           /* --device, auto resolved ("sim:w7900", "hip:0") */
    char profile[160];          /* the profile predictions use: sim's, else w7900 */
    char db[1024];              /* OUT/labN.db: every session's run */
    int sessions;
    int64_t run;                /* the current session's run */
    char session_device[160];   /* its device, as the runtime names it */
    int session_on_cpu;         /* the device models no GPU */
    int session_modeled;        /* its device time is modeled (sim, analytic): a rate from it is too */
    gpu_profile gpu;            /* the GPU its predictions use: the device's (on cpu, L->profile) */
    stack st;                   /* the current session's stack (stack/stack.h) */
    char served[256];           /* the model name the server answers to */
    lab_point pt;
    char model_name[128];       /* the text pt.model points to, when not a literal */
    FILE *csv;
    cJSON *rows;
    int printed, quiet;         /* quiet: rows go to the files only */
    int json;                   /* --json: no table; the JSON on stdout at the end */
    const char *analytic_kv;    /* lab_engine_waves' analytic KV dtype (NULL: fp32, hipath's) */
    cJSON *runs;                /* lab 9: each run's requests, their times (labN.json's "runs") */
} lab;

/* Lab n with its files in out (NULL: labs/out/labN); with json, the JSON
 * on stdout instead of the table. The exit code. */
int lab_run(int n, const char *device, const char *model, const char *out, int json);

int lab1(lab *L);
int lab2(lab *L);
int lab3(lab *L);
int lab4(lab *L);
int lab5(lab *L);
int lab6(lab *L);
int lab7(lab *L);
int lab8(lab *L);
int lab9(lab *L);
int lab10(lab *L);

/* ---- rows ---- */

/* One row at L->pt; ratio = measured / predicted. reading NULL: a stock
 * reading of the ratio. */
void lab_row(lab *L, const char *quantity, const char *unit, double predicted, double measured,
             const char *predicted_from, const char *measured_from, const char *reading);

/* ---- the model and the calculator ---- */

/* A profile's datasheet figures (memory in the datasheet's GB, bandwidth,
 * peaks, compute units, 1 GB read at beta) as rows of "profile @ name". */
void lab_profile_rows(lab *L, const gpu_profile *g, const char *name);

/* model_dir/config.json into c, its path into cfg. 0, or -1 (the reason printed). */
int lab_config(const char *model_dir, model_config *c, char *cfg, int cap);
/* The calculator's name for the weights' dtype the config states. */
const char *lab_dtype(const model_config *c);
/* A profile by name (gpu_profile_load's search path) or path. 0, or -1. */
int lab_profile(const char *name, gpu_profile *g);
/* bounds_compute for config at B, P, context (P and context capped at the
 * config's max_position_embeddings). 0, or -1 (the reason printed). */
int lab_bounds(const char *config, const gpu_profile *g, const char *dtype, const char *kv_dtype,
               int B, int P, int context, bounds_result *b);
/* The same with options: over opt->tp GPUs (lab 8). */
int lab_bounds_with(const char *config, const gpu_profile *g, const char *dtype, const char *kv_dtype,
                    int B, int P, int context, const bounds_options *opt, bounds_result *b);

/* What a step of an analytic engine costs (lab 9's sheet, "The step-time
 * model"): the linear layers at their bound max(W / beta, n c) (weights
 * read once, c = 2 x their parameters / Pi per id); then what the bound
 * leaves out and the modeled device adds: every launch's latency (3 + 16
 * x layers kernels and 4 copies a step), attention in f32 (hipath's
 * kernel has no matrix cores: 4 q_dim layers FLOPs a query-key pair at
 * the fp32 peak), the K and V a decoding sequence reads at the bandwidth,
 * and per sampled sequence the LM head and its logits' copy back. */
typedef struct { double weights_s, launches_s, per_id, per_pair, per_position, per_sample; } lab_step;
/* Of config (bf16 weights and KV) on g. 0, or -1 (the reason printed). */
int lab_step_model(const char *config, const gpu_profile *g, lab_step *m);
/* A step computing n ids, `pairs` query-key pairs of prefill attention,
 * decodes reading `positions` cached tokens, `sampled` sequences sampled. */
double lab_t_step(const lab_step *m, double n, double pairs, double positions, double sampled);
/* Query-key pairs of a chunk of ids [from, to) of a prompt: each attends to itself and what precedes it. */
double lab_pairs(double from, double to);

/* ---- sessions: a device, a server, requests, a trace run ---- */

/* The device, its GPU profile (L->gpu) and a trace run in L->db and
 * OUT/labN[-K].pftrace: a session that drives an engine itself (lab 4's
 * batches). 0, or -1 (the reason printed). */
int lab_trace_begin(lab *L, const char *device, const char *model);
int lab_trace_end(lab *L);
/* The same and a server of
 * model (or, with analytic_dtype, of a config's shapes). 0, or -1 (the
 * reason printed). */
int lab_session_begin(lab *L, const char *device, const char *model, const char *analytic_dtype, double kv_mb, int max_batch);
int lab_session_end(lab *L);
/* A step of lab_engine_waves prefills at most this many tokens (else one
 * prompt): the default budget of vLLM (max_num_batched_tokens) and
 * TensorRT-LLM (max_num_tokens). */
enum { STEP_TOKENS = 8192 };
/* Waves of Bs[0..n) sequences, of the model at path (with analytic_dtype:
 * a config's shapes) on device, each a prompt of P ids (zeros: what is timed
 * is the step, not the text) and tok tokens, driven on this thread as
 * `hipath generate` does, so that every decode step of a wave holds its B
 * (over HTTP they would reach the engine over several steps); a warm-up
 * wave of one first, the KV pool sized for the largest. A session of its
 * own; first[i]: the id of wave i's first request. 0, or -1 (the reason printed). */
int lab_engine_waves(lab *L, const char *device, const char *path, const char *analytic_dtype, int P, int tok, const int *Bs, int n,
                     int64_t *first);
/* n requests of text at once (temperature 0, ignore_eos), ids id0.., their
 * results into r[] (r NULL: dropped); then the trace is flushed. 0, or -1
 * (the reason printed, nothing in r). */
int lab_send(lab *L, const char *text, int max_tokens, int n, int64_t id0, chat_result *r);
/* A session of two "Hi": the warm-up (request 1), the measured (request 2). */
int lab_one_request(lab *L, const char *device, const char *model, const char *analytic_dtype, int max_tokens, chat_result *r);
/* "Hi Hi ..." whose templated prompt has about P tokens, by the model's
 * tokenizer (or, with model_dir NULL, config's placeholder). Freed by the caller. */
char *lab_prompt(const char *model_dir, const char *config, int P);

/* ---- SQL on the trace: the queries of labs/sql/ ---- */

/* The named parameters a query may take; :run is always the session's run. */
typedef struct { int64_t req, first, last; int batch, layer; } lab_args;

typedef struct {
    sqlite3 *db;
    sqlite3_stmt *st;
    const char *file;
    int has_row, failed;
} lab_query;

/* Query `which` of labs/sql/ on L's database, args bound. 0, or -1 (the reason printed). */
int lab_sql_open(const lab *L, lab_query *q, enum lab_sql which, lab_args args);
/* The next row: 1, or 0 at the end. */
int lab_sql_next(lab_query *q);
/* Column `name` of the current row: NaN ("") when NULL or past the end. */
double lab_col(lab_query *q, const char *name);
const char *lab_text(lab_query *q, const char *name);
/* 0, or -1 when a step or a column name failed (the reason printed). */
int lab_sql_close(lab_query *q);

/* What the labs measure about one request (labs/sql/request.sql). */
typedef struct {
    double prompt_tokens, ttft_s, e2e_s, passes;
    double prefill_flops, prefill_bytes, prefill_gpu_s, prefill_s;
    double ops_per_step, flops_per_step, bytes_per_step, weight_bytes_per_step, kv_bytes_per_step, launches_per_step;
    double gpu_s, step_s, gpu_s_slope;    /* decode medians; the device time's slope against the step */
    double kv_allocs, kv_blocks_end;
} lab_request;
int lab_measure_request(const lab *L, int64_t req, lab_request *m);

/* Layer l's slices in request req's window (labs/sql/request-layers.sql), [1..8]. */
typedef struct { double top_s, top_measured_s, all_s, up_bytes, scaled_s; } lab_layer;
int lab_measure_layers(const lab *L, int64_t req, lab_layer layer[9]);

#endif
