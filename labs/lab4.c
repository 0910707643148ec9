/*
 * lab4.c -- Lab 4, batching (lab4-batching.md): B requests at once, for
 * B = 1 2 4 8 16; the step time and throughput against B, and B* against
 * the knee. Plus the calculator alone for Qwen3-8B on an RTX PRO 6000.
 */
#include "labs/lab.h"

enum { NB = 5, TOK = 32, KV_MB = 64, MAX_BATCH = 64 };
static const int BS[NB] = { 1, 2, 4, 8, 16 };

/* What lab4-batch.sql measures of one batch. */
typedef struct { double step_s, ops, device_slices, tpot_s, ttft_s, span_s; } batch;

static int measure(const lab *L, int64_t first, int B, batch *m) {
    lab_query q;
    if (lab_sql_open(L, &q, SQL_LAB4_BATCH, (lab_args){ .first = first, .last = first + B - 1, .batch = B })) return -1;
    lab_sql_next(&q);
    *m = (batch){ lab_col(&q, "step_s"), lab_col(&q, "ops_per_step"), lab_col(&q, "device_slices_per_step"),
                  lab_col(&q, "tpot_s"), lab_col(&q, "ttft_s"), lab_col(&q, "span_s") };
    return lab_sql_close(&q);
}

int lab4(lab *L) {
    char cfg[1100];
    model_config c;
    batch m[NB];
    int64_t first[NB];
    int ntok[NB] = { 0 }, P = 0;
    if (lab_config(L->model, &c, cfg, sizeof cfg)) return -1;
    if (lab_session_begin(L, L->device, L->model, NULL, KV_MB, MAX_BATCH)) return -1;
    int rc = lab_send(L, "Hi", TOK, 1, 1, NULL);
    for (int i = 0, id = 2; i < NB && !rc; id += BS[i++]) {
        chat_result r[16];   /* the largest B */
        first[i] = id;
        if ((rc = lab_send(L, "Hi", TOK, BS[i], id, r))) break;
        for (int k = 0; k < BS[i]; k++) { P = r[k].prompt_tokens; ntok[i] += r[k].completion_tokens; chat_result_free(&r[k]); }
    }
    if (lab_session_end(L) || rc) return -1;
    for (int i = 0; i < NB; i++) if (measure(L, first[i], BS[i], &m[i])) return -1;

    const char *dt = lab_dtype(&c);
    /* The ops of a step grow by the same count with each sequence it serves
     * (those that run per sequence): the trace's steps at B = 1 and B = 2,
     * counted rather than copied from forward(), give the line. */
    double ops1 = m[0].ops, per_seq = m[1].ops - m[0].ops, thr[NB];
    for (int i = 0; i < NB; i++) {
        bounds_result b;
        int B = BS[i];
        if (lab_bounds(cfg, &L->gpu, dt, "fp32", B, P, P + TOK / 2, &b)) return -1;
        L->pt = (lab_point){ lab_short_name(L->model, L->model_name, sizeof L->model_name), L->device, dt, "fp32", B, P, P + TOK / 2 };
        thr[i] = B / m[i].step_s;
        lab_row(L, "t_step", "s", b.decode.t_lower, m[i].step_s, "decode.t_lower_s", "v_steps.dur_ns, median of the steps with n_decode = B", NULL);
        lab_row(L, "throughput", "tok/s", B / b.decode.t_lower, thr[i], "B / t_step", "B / step_s", bounds_compute_bound(&b.decode) ? "compute-bound" : "memory-bound: the bound rises with B");
        lab_row(L, "tpot", "s", b.decode.t_lower, m[i].tpot_s, "t_step", "v_steps.dur_ns, median of every decode step of the B requests", NULL);
        lab_row(L, "ttft", "s", NA, m[i].ttft_s, "", "median v_request_latency.ttft_ns", "");
        lab_row(L, "throughput_e2e", "tok/s", NA, ntok[i] / m[i].span_s, "", "completion tokens / (last end - first start)", "");
        lab_row(L, "kernels_per_step", "kernels", ops1 + (B - 1) * per_seq, m[i].device_slices,
                "ops at B = 1 + (B-1) x (ops at B = 2 - ops at B = 1): v_steps.n_ops, per sequence", "v_steps.n_device", NULL);
        if (i == NB - 1) {
            double knee = NA;
            for (int k = 0; k + 1 < NB && isnan(knee); k++) if (thr[k + 1] / thr[k] < 1.5) knee = BS[k];
            lab_row(L, "b_star", "B", b.b_star, NA, "b_W Pi / (2 beta)", "", "");
            lab_row(L, "knee_B", "B", b.b_star, knee, "b_star", "smallest B with throughput(2B)/throughput(B) < 1.5", "the knee comes where host time per step stops being shared");
        }
    }
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
