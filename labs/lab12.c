/*
 * lab12.c -- Lab 12, four ways to split a model (lab12-parallel4.md): 8
 * H100s hold Llama-2-70B and Qwen3-30B-A3B by tensor, pipeline, expert and
 * data parallelism. (a) The calculator per GPU for each split, and
 * DeepSeek-V3 in int8 on 8 H200s and 8 MI300Xs; the MoEs' parameters, all
 * and active, and the experts a decode step reads by batch. (b) Analytic runs, each measured GPU by
 * GPU from the trace (labs/sql/lab12-gpus.sql): TP 8's all-reduces; PP 8's
 * bubble with one request and with eight; EP 8's all-to-alls and its hot
 * experts under Zipf routing. Every figure is the calculator's or modeled:
 * none holds host time.
 */
#include "labs/lab.h"
#include "layers/ops/ops.h"
#include "layers/runtime/runtime.h"
#include <stddef.h>
#include <stdio.h>

#define QWEN3_MOE "tests/data/qwen3-30b-a3b.config.json"
#define DSV3 "tests/data/deepseek-v3.config.json"

/* The runs: P prompt ids, TOK tokens (TOK - 1 decode steps); PP's filled
 * pipeline takes M = 8 requests, one prompt a micro-batch. SKEW: the Zipf
 * exponent of the hot-expert run. */
enum { N = 8, P = 64, TOK = 3, CALC_L = 512 };
static const double SKEW = 2;

/* lab12-gpus.sql's columns for one GPU. */
typedef struct {
    double busy_share, bytes_step, stream_step_s, all_reduces, all_reduce_s, all_to_alls, all_to_all_s, moe_gemm_s, sends, send_s,
        prefill_rows;
} gpu_row;

/* Each GPU over requests first..last of the session: 0, or -1. */
static int measure(const lab *L, int64_t first, int64_t last, gpu_row g[N]) {
    lab_query q;
    if (lab_sql_open(L, &q, SQL_LAB12_GPUS, (lab_args){ .first = first, .last = last })) return -1;
    for (int i = 0; i < N && lab_sql_next(&q); i++)
        g[i] = (gpu_row){ lab_col(&q, "busy_share"), lab_col(&q, "bytes_step"), lab_col(&q, "stream_step_s"), lab_col(&q, "all_reduces"),
                          lab_col(&q, "all_reduce_s"), lab_col(&q, "all_to_alls"), lab_col(&q, "all_to_all_s"), lab_col(&q, "moe_gemm_s"),
                          lab_col(&q, "sends"), lab_col(&q, "send_s"), lab_col(&q, "prefill_rows") };
    return lab_sql_close(&q);
}

/* A column's least, mean and most over the N GPUs. */
typedef struct { double min, mean, max; } spread;
static spread over(const gpu_row g[N], size_t offset) {
    spread s = { INFINITY, 0, -INFINITY };
    for (int i = 0; i < N; i++) {
        double v = *(const double *)((const char *)&g[i] + offset);
        s.min = fmin(s.min, v); s.max = fmax(s.max, v); s.mean += v / N;
    }
    return s;
}
#define OVER(g, field) over(g, offsetof(gpu_row, field))

/* ---- (a) the calculator: what a GPU holds under each split ---- */

typedef struct { const char *name; int tp, pp; } split;

static int calculator_rows(lab *L, const char *model, const char *config, const char *gpu, const char *dtype, const split *s) {
    gpu_profile g;
    bounds_result b;
    char dev[64], of[96];
    const bounds_options opt = { .tp = s->tp, .pp = s->pp };
    if (lab_profile(gpu, &g) || lab_bounds_with(config, &g, dtype, "bf16", 1, CALC_L, CALC_L, &opt, &b)) return -1;
    const bounds_capacity *c = &b.parallel.per_gpu;
    const bounds_parallel_phase *d = &b.parallel.decode;
    snprintf(dev, sizeof dev, "%s, %d x %s", s->name, N, gpu);
    snprintf(of, sizeof of, "%.2f of %.2f GB a GPU", c->total_bytes / 1e9, c->device_bytes / 1e9);
    L->pt = (lab_point){ model, dev, dtype, "bf16", 1, CALC_L, CALC_L };
    lab_row(L, "fits", "1/0", c->fits, NA, "parallel.per_gpu.fits", "", of);
    lab_row(L, "weights_bytes_gpu", "B", c->weights_bytes, NA, "parallel.per_gpu.weights_bytes", "", "");
    lab_row(L, "kv_bytes_token_gpu", "B", b.parallel.kv_bytes_per_token, NA, "parallel.kv_bytes_per_token", "", "");
    if (!c->fits) return 0;
    lab_row(L, "t_step", "s", d->t_step, NA, "parallel.decode.step_s", "", "");
    lab_row(L, "comm_share", "", d->comm_share, NA, "parallel.decode.comm_share", "", "");
    lab_row(L, "b_fit", "sequences", (double)b.parallel.b_fit, NA, "parallel.b_fit", "", "sequences of 512 tokens beside the weights");
    return 0;
}

/* An MoE's parameters, all and a token's, and the experts a MoE layer
 * reads in a decode step of B tokens, expected: E (1 - (1 - k/E)^B). */
static int moe_rows(lab *L, const char *model, const char *config, const char *gpu, const char *dtype) {
    gpu_profile g;
    bounds_result b;
    model_config c;
    char err[512];
    if (lab_profile(gpu, &g) || lab_bounds_with(config, &g, dtype, "bf16", 1, CALC_L, CALC_L, &(bounds_options){ 0 }, &b)) return -1;
    if (model_config_load(&c, config, err, sizeof err)) return stack_fail("%s", err);
    L->pt = (lab_point){ model, gpu, dtype, "bf16", 1, CALC_L, CALC_L };
    lab_row(L, "params", "", (double)b.params, NA, "params", "", "");
    lab_row(L, "params_active", "", (double)b.params_active, NA, "params_active: the experts a token is not routed to left out", "", "");
    static const int BS[] = { 1, 8, 64, 512 };
    for (size_t i = 0; i < sizeof BS / sizeof *BS; i++) {
        L->pt.batch = BS[i];
        lab_row(L, "experts_read", "experts", bounds_experts_read(&c, BS[i]), NA, "E (1 - (1 - k/E)^B) a MoE layer", "", "");
    }
    return 0;
}

/* ---- (b) the runs ---- */

/* One analytic session of config on tp x pp H100s (ep over the tp GPUs,
 * the router's Zipf skew), waves Bs[0..n) after a warm-up of one, the
 * step's budget `budget` prompt ids (0: the lab's usual). */
static int session(lab *L, const char *config, int tp, int pp, int ep, double skew, int budget, const int *Bs, int n, int64_t *first) {
    rt_gpus(tp); rt_stages(pp); rt_expert_parallel(ep); op_moe_skew(skew);
    L->step_tokens = budget;
    int rc = lab_engine_waves(L, "analytic:h100", config, "bf16", P, TOK, Bs, n, first);
    rt_gpus(1); rt_stages(1); rt_expert_parallel(1); op_moe_skew(0);
    L->step_tokens = 0;
    return rc;
}

/* TP 8: a GPU's bytes a decode step, its all-reduces and the step, against
 * the calculator's (hipath's f32 KV and activations in the bound). */
static int tp_rows(lab *L, const gpu_profile *h100) {
    bounds_result b;
    gpu_row g[N];
    int64_t first;
    const bounds_options opt = { .tp = N };
    if (session(L, LLAMA70B, N, 1, 1, 0, 0, (const int[]){ 1 }, 1, &first) || measure(L, first, first, g) ||
        lab_bounds_with(LLAMA70B, h100, "bf16", "fp32", 1, P, P + TOK / 2, &opt, &b)) return -1;
    const bounds_parallel_phase *d = &b.parallel.decode;
    L->pt = (lab_point){ "llama-2-70b", "tp 8, 8 x analytic:h100", "bf16", "fp32", 1, P, P + TOK / 2 };
    lab_row(L, "bytes_step_gpu", "B", d->t_memory * h100->bandwidth, OVER(g, bytes_step).max, "parallel.decode.t_memory_s x beta",
            "the busiest GPU's kernels' bytes a decode step", "");
    lab_row(L, "all_reduces", "", d->all_reduce.per_step, g[0].all_reduces, "2 n_L", "allReduce slices a decode step, GPU 0",
            "one more: the embedding's");
    lab_row(L, "all_reduce_s", "s", d->all_reduce.total_s, g[0].all_reduce_s, "2 n_L x (2(N-1)/N bytes / beta_ring + 2(N-1) alpha)",
            "allReduce dur_ns a decode step (modeled)", "f32 activations: only the tiny bandwidth term doubles");
    lab_row(L, "t_step", "s", d->t_step, OVER(g, stream_step_s).max, "parallel.decode.step_s", "the busiest stream's time a decode step (modeled)",
            "above the bound: launches, small kernels");
    lab_row(L, "comm_share", "", d->comm_share, g[0].all_reduce_s / g[0].stream_step_s, "parallel.decode.comm_share", "all_reduce_s / t_step", "");
    return 0;
}

/* PP 8: the bubble with one request (the warm-up) and with M, one prompt a
 * micro-batch; a hand-off's cost. */
static int pp_rows(lab *L, const gpu_profile *h100) {
    bounds_result b;
    gpu_row one[N], many[N];
    int64_t first;
    const bounds_options opt = { .pp = N };
    if (session(L, LLAMA70B, 1, N, 1, 0, P, (const int[]){ N }, 1, &first) || measure(L, 1, 1, one) ||
        measure(L, first, first + N - 1, many) || lab_bounds_with(LLAMA70B, h100, "bf16", "fp32", 1, P, P + TOK / 2, &opt, &b)) return -1;
    const bounds_parallel_phase *d = &b.parallel.decode;
    spread s1 = OVER(one, busy_share), sm = OVER(many, busy_share);
    char why[128];
    L->pt = (lab_point){ "llama-2-70b", "pp 8, 8 x analytic:h100", "bf16", "fp32", 1, P, P + TOK / 2 };
    lab_row(L, "bytes_step_gpu", "B", d->t_memory * h100->bandwidth / N, OVER(one, bytes_step).mean,
            "parallel.decode.t_memory_s x beta / pp", "a GPU's kernels' bytes a decode step, the mean", "");
    snprintf(why, sizeof why, "each stage works 1/M of the time; the GPUs range %.3f-%.3f", s1.min, s1.max);
    lab_row(L, "busy_share_1", "", 1.0 / N, s1.mean, "1 / M", "lab12-gpus.sql busy_share, request 1, the mean", why);
    lab_row(L, "send_s", "s", d->send_s / (N - 1), one[0].send_s / fmax(one[0].sends, 1), "bytes / beta_pair + alpha (one hand-off)",
            "send dur_ns, stage 0, a decode step (modeled)", "");
    L->pt.batch = N;
    snprintf(why, sizeof why, "the fill and the drain idle, the passes unequal; range %.3f-%.3f", sm.min, sm.max);
    lab_row(L, "busy_share_m", "", (double)TOK * N / (TOK * N + N - 1), sm.mean, "R m / (R M + m - 1), R = passes a request, m = M requests",
            "lab12-gpus.sql busy_share, requests 2-9, the mean", why);
    return 0;
}

/* The Zipf router's chance that a token picks expert e among its k
 * distinct ones, pi_e = 1 - exp(-lambda p_e) with sum pi_e = k (Rosén's
 * approximation of drawing without replacement, p_e ~ (e + 1)^-s); a
 * GPU's share of the rows is its E/N experts' pi over k. The busiest GPU's
 * share (GPU 0's: the hottest experts are the first) times N. */
static double hot_ratio(int E, int k, double s) {
    if (s <= 0) return 1;
    double p[E], sum = 0, lo = 0, hi = 1e9;
    for (int e = 0; e < E; e++) sum += p[e] = pow(e + 1.0, -s);
    for (int it = 0; it < 200; it++) {
        double lam = (lo + hi) / 2, n = 0;
        for (int e = 0; e < E; e++) n += 1 - exp(-lam * p[e] / sum);
        if (n < k) lo = lam; else hi = lam;
    }
    double g0 = 0;
    for (int e = 0; e < E / N; e++) g0 += 1 - exp(-lo * p[e] / sum);
    return g0 / k * N;
}

/* EP 8 (+ attention TP 8), uniform then Zipf routing: the all-to-alls, the
 * rows each GPU's experts take in the prefill, the busiest GPU's expert
 * matmuls and the step. */
static int ep_rows(lab *L, const gpu_profile *h100) {
    model_config c;
    char err[512];
    gpu_row g[2][N];
    int64_t first;
    if (model_config_load(&c, QWEN3_MOE, err, sizeof err)) return stack_fail("%s", err);
    for (int i = 0; i < 2; i++)
        if (session(L, QWEN3_MOE, N, 1, N, i ? SKEW : 0, 0, (const int[]){ 1 }, 1, &first) || measure(L, first, first, g[i])) return -1;
    int moe = c.n_layers - c.first_dense_layers;
    /* a decode token's k rows, those for the other GPUs sent, f32: the dispatch's and the combine's */
    double sent = (double)c.n_experts_per_tok * (N - 1) / N * c.dim * 4, link = h100->link.links * h100->link.link_bw;   /* NVSwitch: every link to any peer */
    double a2a = 2 * moe * (sent / link + (N - 1) * h100->link.latency_s);
    for (int i = 0; i < 2; i++) {
        char dev[64];
        snprintf(dev, sizeof dev, "ep 8, 8 x analytic:h100, skew %g", i ? SKEW : 0);
        L->pt = (lab_point){ "qwen3-30b-a3b", dev, "bf16", "fp32", 1, P, P + TOK / 2 };
        spread rows = OVER(g[i], prefill_rows), mm = OVER(g[i], moe_gemm_s);
        lab_row(L, "all_to_alls", "", 2 * moe, g[i][0].all_to_alls, "2 MoE layers (dispatch, combine)", "allToAll slices a decode step, GPU 0", "");
        lab_row(L, "all_to_all_s", "s", a2a, g[i][0].all_to_all_s, "2 n_moe x (k (N-1)/N d 4 / beta_link + (N-1) alpha)",
                "allToAll dur_ns a decode step, GPU 0 (modeled)", "the latency term: a small message to each of N - 1 peers");
        lab_row(L, "hot_rows", "x", hot_ratio(c.n_experts, c.n_experts_per_tok, i ? SKEW : 0), rows.max / rows.mean,
                "N x the busiest GPU's experts' sum of pi_e / k", "the busiest GPU's prefill rows / the mean (moe_dispatch gpu_rows)",
                i ? "GPU 0 holds the hottest experts" : "uniform: only chance");
        lab_row(L, "hot_moe_gemm", "x", NA, mm.max / mm.mean, "", "the busiest GPU's moe_gemm time a decode step / the mean", "");
        lab_row(L, "t_step", "s", i ? OVER(g[0], stream_step_s).max + mm.max - OVER(g[0], moe_gemm_s).max : NA, OVER(g[i], stream_step_s).max,
                i ? "uniform t_step + the busiest GPU's moe_gemm, skewed - uniform" : "", "the busiest stream's time a decode step (modeled)",
                i ? "each combine waits for the busiest GPU" : "");
    }
    return 0;
}

int lab12(lab *L) {
    fprintf(stderr, "hipath lab 12: Llama-2-70B, Qwen3-30B-A3B, DeepSeek-V3, analytic, on 8 GPUs (not --device %s, not --model)\n", L->device);
    static const split SPLITS[] = { { "tp 8", 8, 1 }, { "pp 8", 1, 8 }, { "tp 4 x pp 2", 4, 2 }, { "dp 8", 1, 1 } };
    for (size_t i = 0; i < sizeof SPLITS / sizeof *SPLITS; i++)
        if (calculator_rows(L, "llama-2-70b", LLAMA70B, "h100", "bf16", &SPLITS[i]) ||
            calculator_rows(L, "qwen3-30b-a3b", QWEN3_MOE, "h100", "bf16", &SPLITS[i])) return -1;
    for (int i = 0; i < 2; i++)
        if (calculator_rows(L, "deepseek-v3", DSV3, "h200", "int8", &SPLITS[i]) ||
            calculator_rows(L, "deepseek-v3", DSV3, "mi300x", "int8", &SPLITS[i])) return -1;
    if (moe_rows(L, "qwen3-30b-a3b", QWEN3_MOE, "h100", "bf16") || moe_rows(L, "deepseek-v3", DSV3, "h200", "int8")) return -1;
    gpu_profile h100;
    if (lab_profile("h100", &h100)) return -1;
    return tp_rows(L, &h100) || pp_rows(L, &h100) || ep_rows(L, &h100) ? -1 : 0;
}
