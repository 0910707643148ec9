/*
 * lab5.c -- Lab 5, prefill versus decode (lab5-prefill-decode.md): TTFT and
 * the prefill step against the prompt length P, the compute/memory
 * crossover, and every kernel on a roofline; on the device and on a 7B
 * model analytically.
 */
#include "labs/lab.h"
#include <stdlib.h>

enum { NP = 4, TOK = 8 };
static const int PS[NP] = { 16, 64, 128, 256 };

/* The prefill and decode rows of the request of each P, then P_cross and
 * P_knee. The knee is read off the device time, not the step: the step
 * holds host time, which would put the knee where the host was busy. */
static int prompt_rows(lab *L, const char *model, const char *config, const char *dt, const int *plen, int np) {
    double prev = NA, knee = NA, cross = NA;
    for (int k = 0; k < np; k++) {
        bounds_result b, d;
        lab_request m;
        int P = plen[k];
        if (lab_bounds(config, &L->gpu, dt, "fp32", 1, P, P, &b) || lab_bounds(config, &L->gpu, dt, "fp32", 1, P, P + 4, &d)) return -1;
        if (lab_measure_request(L, 2 + k, &m)) return -1;
        L->pt = (lab_point){ served_name(model, L->model_name, sizeof L->model_name), L->session_device, dt, "fp32", 1, P, P };
        if (!isnan(prev) && isnan(knee) && m.prefill_gpu_s / prev > 1.6) knee = plen[k - 1];
        if (isnan(cross) && bounds_compute_bound(&b.prefill)) cross = P;
        prev = m.prefill_gpu_s;
        lab_row(L, "prefill_flops", "FLOP", b.prefill.flops, m.prefill_flops, "prefill.flops", "v_steps.op_flops, prefill", NULL);
        lab_row(L, "prefill_bytes", "B", b.prefill.bytes, m.prefill_bytes, "prefill.bytes", "v_steps.op_bytes, prefill", NULL);
        lab_row(L, "prefill_intensity", "FLOP/B", b.prefill.intensity, NA, "prefill.arithmetic_intensity", "", bounds_compute_bound(&b.prefill) ? "compute-bound" : "memory-bound");
        lab_row(L, "prefill_t_device", "s", b.prefill.t_lower, m.prefill_gpu_s, "prefill.t_lower_s", "v_steps.gpu_ns, prefill", NULL);
        lab_row(L, "prefill_step", "s", b.prefill.t_lower, m.prefill_s, "prefill.t_lower_s", "v_steps.dur_ns, prefill", NULL);
        lab_row(L, "ttft", "s", b.prefill.t_lower, m.ttft_s, "prefill.t_lower_s", "v_request_latency.ttft_ns", "TTFT adds HTTP, tokenizer, queue and the first sample");
        lab_row(L, "decode_step", "s", d.decode.t_lower, m.step_s, "decode.t_lower_s", "v_steps.dur_ns, decode median", NULL);
    }
    lab_row(L, "P_cross", "tokens", cross, NA, "smallest swept P with prefill compute-bound", "", isnan(cross) ? "no swept P is compute-bound" : "");
    lab_row(L, "P_knee", "tokens", cross, knee, "P_cross", "smallest P with prefill_t_device(2P)/prefill_t_device(P) > 1.6", "");
    return 0;
}

/* Each kernel on the roofline, every P together: Pi is the weights' dtype's,
 * as the bound's (hipath's kernels compute in f32, so a compute-bound one
 * reaches at most fp32/Pi of that roof). */
static int kernel_rows(lab *L, double peak) {
    lab_query q;
    const gpu_profile *g = &L->gpu;
    if (lab_sql_open(L, &q, SQL_LAB5_KERNELS, (lab_args){ 0 })) return -1;
    while (lab_sql_next(&q)) {
        char why[96];
        double I = lab_col(&q, "intensity"), gf = lab_col(&q, "gflop_per_s");
        snprintf(why, sizeof why, "kernel %s", lab_text(&q, "name"));
        lab_row(L, "kernel_intensity", "FLOP/B", NA, I, "", "v_kernel_time flops / bytes", why);
        lab_row(L, "kernel_roof_fraction", "", 1, gf * 1e9 / fmin(peak, I * g->bandwidth), "the roof",
                L->session_modeled ? "gflop_per_s / min(Pi, I beta), modeled" : "gflop_per_s / min(Pi, I beta)", why);
    }
    return lab_sql_close(&q);
}

int lab5(lab *L) {
    char cfg[1100], analytic[200];
    model_config c;
    if (lab_config(L->model, &c, cfg, sizeof cfg)) return -1;
    snprintf(analytic, sizeof analytic, "analytic:%s", L->profile);
    const struct { const char *device, *model, *analytic_dtype, *config, *tokenizer_dir; } RUNS[] = {
        { L->device, L->model, NULL, cfg, L->model }, { analytic, QWEN7B, "fp16", QWEN7B, NULL } };
    for (int i = 0; i < 2; i++) {
        const char *adt = RUNS[i].analytic_dtype;
        int plen[NP], np = 0;
        if (lab_session_begin(L, RUNS[i].device, RUNS[i].model, adt, adt ? 1024 : 0, 0)) return -1;
        int rc = lab_send(L, "Hi", TOK, 1, 1, NULL);
        for (int k = 0; k < NP && !rc; k++) {
            if (PS[k] > c.max_seq_len - TOK && !adt) break;   /* the prompt and its reply fit the real model */
            char *text = lab_prompt(RUNS[i].tokenizer_dir, RUNS[i].config, PS[k]);
            chat_result r;
            rc = !text || lab_send(L, text, TOK, 1, 2 + k, &r);
            if (!rc) { plen[np++] = r.prompt_tokens; chat_result_free(&r); }
            free(text);
        }
        if (lab_session_end(L) || rc) return -1;
        bounds_result b;
        const char *dt = adt ? adt : lab_dtype(&c);
        if (prompt_rows(L, RUNS[i].model, RUNS[i].config, dt, plen, np) ||
            lab_bounds(RUNS[i].config, &L->gpu, dt, "fp32", 1, 1, 1, &b) || kernel_rows(L, b.peak)) return -1;
    }
    return 0;
}
