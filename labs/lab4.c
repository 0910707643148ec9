/*
 * lab4.c -- Lab 4, batching (lab4-batching.md): B requests at once; the
 * step time, throughput and TPOT against B, and B* against the knee:
 * tiny-hi on the device for B = 1..16 (and what its users see over HTTP);
 * Qwen3-8B on an RTX PRO 6000 and DeepSeek-R1-Distill-Qwen-14B on a W7900,
 * analytic, for B = 1..512; the calculator alone for Qwen3-8B at 2048 tokens.
 */
#include "labs/lab.h"
#include <stdlib.h>
#include <string.h>

enum { NB = 5, TOK = 32, KV_MB = 64, MAX_BATCH = 64 };
static const int BS[NB] = { 1, 2, 4, 8, 16 };
/* The big sweep: B = 1, 2, 4 ... 512, prompts of BIG_P ids, BIG_TOK tokens
 * each (the prefill gives the first, then BIG_TOK - 1 decode steps). */
enum { NBIG = 10, BIG_P = 16, BIG_TOK = 2 };
static const int BIG[NBIG] = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512 };

/* What lab4-batch.sql measures of one batch. */
typedef struct { double step_s, gpu_s, ops, device_slices, tpot_s, ttft_s, span_s; } batch;

static int measure(const lab *L, int64_t first, int B, batch *m) {
    lab_query q;
    if (lab_sql_open(L, &q, SQL_LAB4_BATCH, (lab_args){ .first = first, .last = first + B - 1, .batch = B })) return -1;
    lab_sql_next(&q);
    *m = (batch){ lab_col(&q, "step_s"), lab_col(&q, "gpu_s"), lab_col(&q, "ops_per_step"), lab_col(&q, "device_slices_per_step"),
                  lab_col(&q, "tpot_s"), lab_col(&q, "ttft_s"), lab_col(&q, "span_s") };
    return lab_sql_close(&q);
}

/* The knee: the batch at which what a step gains per added sequence (the
 * slope between the two largest batches) has added up to what a step costs
 * at B = 1: t(B_1) / slope. Under T = max(W, B c) it is B* = W / c. */
static double knee(const int *Bs, const double *t, int n) {
    return t[0] / ((t[n - 1] - t[n - 2]) / (Bs[n - 1] - Bs[n - 2]));
}

static const char *knee_reading(double knee, double b_star) {
    return knee < 0.8 * b_star ? "before B*: more than compute grows with B (kernels, copies, samples per sequence)"
         : knee > 1.25 * b_star ? "past B*: compute grows more slowly than B* says" : "matches";
}

/* The rows of n batches at L->pt (its batch set here): each against the
 * bound at its B; then B* and the knees, by the step and by the device. */
static int batch_rows(lab *L, const char *config, const char *dtype, int P, int ctx, const int *Bs, const batch *m, int n) {
    /* The ops of a step grow by the same count with each sequence it serves
     * (any that run per sequence; since attention is batched, none): the
     * trace's steps at B = 1 and B = 2, counted rather than copied from
     * forward(), give the line. */
    double ops1 = m[0].ops, per_seq = m[1].ops - m[0].ops, t[NBIG], t_dev[NBIG];
    bounds_result b;
    for (int i = 0; i < n; i++) {
        int B = L->pt.batch = Bs[i];
        if (lab_bounds(config, &L->gpu, dtype, "fp32", B, P, ctx, &b)) return -1;
        const char *bound = bounds_compute_bound(&b.decode) ? "compute-bound" : "memory-bound: the bound rises with B";
        t[i] = m[i].step_s;
        t_dev[i] = m[i].gpu_s;
        lab_row(L, "t_step", "s", b.decode.t_lower, m[i].step_s, "decode.t_lower_s",
                "v_steps.dur_ns, median of the steps with n_decode = B (mixed: host CPU time and the device waits, modeled)", NULL);
        lab_row(L, "t_device", "s", b.decode.t_lower, m[i].gpu_s, "decode.t_lower_s", "v_steps.gpu_ns, median of the steps with n_decode = B (modeled)", NULL);
        lab_row(L, "throughput", "tok/s", B / b.decode.t_lower, B / t[i], "B / t_step", "B / t_step (mixed)", bound);
        lab_row(L, "throughput_device", "tok/s", B / b.decode.t_lower, B / t_dev[i], "B / t_step", "B / t_device (modeled)", bound);
        lab_row(L, "tpot", "s", b.decode.t_lower, m[i].tpot_s, "t_step", "v_steps.dur_ns, median of every decode step of the B requests (mixed)", NULL);
        lab_row(L, "kernels_per_step", "kernels", ops1 + (B - 1) * per_seq, m[i].device_slices,
                "ops at B = 1 + (B-1) x (ops at B = 2 - ops at B = 1): v_steps.n_ops, per sequence", "v_steps.n_device", NULL);
    }
    lab_row(L, "b_star", "B", b.b_star, NA, "b_W Pi / (2 beta)", "", "");
    double k = knee(Bs, t, n), k_dev = knee(Bs, t_dev, n);
    lab_row(L, "knee_B", "B", b.b_star, k, "b_star", "t_step(1) / (growth of t_step per sequence between the two largest B) (mixed)", knee_reading(k, b.b_star));
    lab_row(L, "knee_B_device", "B", b.b_star, k_dev, "b_star", "t_device(1) / (growth of t_device per sequence between the two largest B) (modeled)",
            knee_reading(k_dev, b.b_star));
    return 0;
}

/* B = Bs[0..n) sequences a step, of the model at path (with analytic_dtype:
 * a config's shapes) on device, P prompt ids and tok tokens each, driven
 * on this thread (lab_engine_waves: over HTTP few steps would hold all B),
 * and their rows. */
static int engine_sweep(lab *L, const char *device, const char *path, const char *analytic_dtype, int P, int tok, const int *Bs, int n) {
    char cfg[1100];
    model_config c;
    if (!analytic_dtype && lab_config(path, &c, cfg, sizeof cfg)) return -1;
    const char *config = analytic_dtype ? path : cfg, *dt = analytic_dtype ? analytic_dtype : lab_dtype(&c);
    int64_t first[NBIG];
    batch m[NBIG];
    if (lab_engine_waves(L, device, path, analytic_dtype, P, tok, Bs, n, first)) return -1;
    for (int i = 0; i < n; i++) if (measure(L, first[i], Bs[i], &m[i])) return -1;
    L->pt = (lab_point){ served_name(path, L->model_name, sizeof L->model_name), L->session_device, dt, "fp32", 1, P, P + tok / 2 };
    return batch_rows(L, config, dt, P, P + tok / 2, Bs, m, n);
}

/* What a user of tiny-hi sees over HTTP: B "Hi" requests sent at once, for
 * each B; their median TTFT and the tokens of all B over the time from the
 * first start to the last end. Its prompt length into P. */
static int http_rows(lab *L, int *P) {
    char cfg[1100];
    model_config c;
    int64_t first[NB];
    int ntok[NB] = { 0 };
    if (lab_config(L->model, &c, cfg, sizeof cfg) || lab_session_begin(L, L->device, L->model, NULL, KV_MB, MAX_BATCH)) return -1;
    int rc = lab_send(L, "Hi", TOK, 1, 1, NULL);
    for (int i = 0, id = 2; i < NB && !rc; id += BS[i++]) {
        chat_result r[16];   /* the largest B */
        first[i] = id;
        if ((rc = lab_send(L, "Hi", TOK, BS[i], id, r))) break;
        for (int k = 0; k < BS[i]; k++) { *P = r[k].prompt_tokens; ntok[i] += r[k].completion_tokens; chat_result_free(&r[k]); }
    }
    if (lab_session_end(L) || rc) return -1;
    for (int i = 0; i < NB; i++) {
        batch m;
        if (measure(L, first[i], BS[i], &m)) return -1;
        L->pt = (lab_point){ served_name(L->model, L->model_name, sizeof L->model_name), L->device, lab_dtype(&c), "fp32", BS[i], *P, *P + TOK / 2 };
        lab_row(L, "ttft", "s", NA, m.ttft_s, "", "median v_request_latency.ttft_ns (mixed)", "");
        lab_row(L, "throughput_e2e", "tok/s", NA, ntok[i] / m.span_s, "", "completion tokens / (last end - first start) (mixed)", "");
    }
    return 0;
}

int lab4(lab *L) {
    int P = 0;
    if (http_rows(L, &P) || engine_sweep(L, L->device, L->model, NULL, P, TOK, BS, NB) ||
        engine_sweep(L, "analytic:rtx-pro-6000", QWEN3_8B, "bf16", BIG_P, BIG_TOK, BIG, NBIG) ||
        engine_sweep(L, "analytic:w7900", QWEN14B, "bf16", BIG_P, BIG_TOK, BIG, NBIG)) return -1;
    gpu_profile g2;
    if (lab_profile("rtx-pro-6000", &g2)) return -1;
    for (int i = 0; i < NB; i++) {
        bounds_result b;
        if (lab_bounds(QWEN3_8B, &g2, "bf16", "bf16", BS[i], 2048, 2048, &b)) return -1;
        L->pt = (lab_point){ "qwen3-8b", "rtx-pro-6000", "bf16", "bf16", BS[i], 2048, 2048 };
        lab_row(L, "t_step", "s", b.decode.t_lower, NA, "decode.t_lower_s (calculator only)", "", "");
        lab_row(L, "throughput", "tok/s", BS[i] / b.decode.t_lower, NA, "B / t_step", "", bounds_compute_bound(&b.decode) ? "compute-bound" : "memory-bound");
        if (i == NB - 1) lab_row(L, "b_star", "B", b.b_star, NA, "b_W Pi / (2 beta)", "", "");
    }
    return 0;
}
