/*
 * lab3.c -- Lab 3, one decode step against its bound (lab3-decode-bound.md):
 * F, R and T_lower of a step, the measured step, MBU and MFU, and where the
 * missing time goes; on the device, on cpu, and a 7B model analytically;
 * and the chapter's example 1-1 (a rounded 70B on an H100), by the
 * calculator and on analytic:h100.
 */
#include "labs/lab.h"
#include <stdio.h>

/* Example 1-1's model: N = 70e9, each parameter read once a step
 * (tests/chapter_numbers.py says how the config makes it). */
#define CH11 "tests/data/chapter-1-1-70e9.config.json"
enum { CH11_TOK = 4 };   /* tokens a request: 3 decode steps, their median */

/* One session's rows: the decode steps of request 2 against the bound. */
static int decode_rows(lab *L, const char *model, const char *config, const char *dt, const chat_result *r) {
    bounds_result b;
    lab_request warm, m;
    lab_query q;
    const gpu_profile *g = &L->gpu;
    int on_gpu = !L->session_on_cpu, P = r->prompt_tokens, ctx = P + r->completion_tokens / 2;
    if (lab_bounds(config, g, dt, "fp32", 1, P, ctx, &b)) return -1;
    if (lab_measure_request(L, 1, &warm) || lab_measure_request(L, 2, &m)) return -1;
    /* a rate from bytes and time on one clock: the device's kernels where it has them, else the ops */
    if (lab_sql_open(L, &q, SQL_LAB3_OP_FIT, (lab_args){ .req = 2, .layer = on_gpu ? 1 : 4 })) return -1;
    lab_sql_next(&q);
    double overhead = lab_col(&q, "op_overhead_s"), beta = lab_col(&q, "bytes_per_s");
    if (lab_sql_close(&q)) return -1;

    L->pt = (lab_point){ served_name(model, L->model_name, sizeof L->model_name), L->session_device, dt, "fp32", 1, P, ctx };
    const char *host = on_gpu ? "" : "on cpu the bound is the w7900's: the ratio shows how far the CPU is from that GPU";
    /* The kernels of a step are the ops forward() ran, counted in the trace:
     * the warm-up's decode steps predict the measured request's. */
    double ops = warm.ops_per_step;
    lab_row(L, "F", "FLOP", b.decode.flops, m.flops_per_step, "bounds decode.flops", "v_steps.op_flops, decode mean", "the trace also counts norms, RoPE, attention scores");
    lab_row(L, "R", "B", b.decode.bytes, m.bytes_per_step, "bounds decode.bytes", "v_steps.op_bytes, decode mean", "the trace counts activations in and out of every op");
    lab_row(L, "t_compute", "s", b.decode.t_compute, NA, "F / Pi", "", "");
    lab_row(L, "t_memory", "s", b.decode.t_memory, NA, "R / beta", "", "");
    lab_row(L, "launch_total", "s", ops * g->launch_latency_s, NA, "kernels_per_step x launch_latency_s", "", "");
    lab_row(L, "kernels_per_step", "kernels", ops, m.launches_per_step, "v_steps.n_ops of the warm-up's decode steps", "v_steps.n_launches", "");
    lab_row(L, "gpu_s", "s", b.decode.t_lower, on_gpu ? m.gpu_s : NA, "decode.t_lower_s", "v_steps.gpu_ns, decode median (modeled)",
            on_gpu ? "ratio = 1/MBU of the device: launch latency and small grids" : "no device time on cpu");
    lab_row(L, "step_s", "s", b.decode.t_lower, m.step_s, "decode.t_lower_s", "v_steps.dur_ns, decode median (host clock)",
            on_gpu ? "ratio = 1/MBU of the step: device time plus the host's launches" : host);
    lab_row(L, "MBU_device", "", NA, on_gpu ? m.bytes_per_step / (g->bandwidth * m.gpu_s) : NA, "", "R / (beta gpu_s)", "");
    lab_row(L, "MBU_step", "", NA, m.bytes_per_step / (g->bandwidth * m.step_s), "", "R / (beta step_s)", host);
    lab_row(L, "MFU_step", "", NA, m.flops_per_step / (b.peak * m.step_s), "", "F / (Pi step_s), Pi of the weights' dtype", "");
    const char *clock = L->session_modeled ? " (modeled)" : "";
    char from[160];
    snprintf(from, sizeof from, "their bytes / their time, decode steps%s", clock);
    lab_row(L, "op_overhead_s", "s", NA, overhead, "",
            on_gpu ? "intercept of kernel median dur_ns against bytes" : "intercept of op median dur_ns against bytes",
            on_gpu ? "per kernel, what no byte explains: launch latency" : "host time per op that no byte explains");
    /* only a physical rate is shown: no more than the profile's beta (on cpu, any: it is the host's own) */
    lab_row(L, "beta_eff", "B/s", g->bandwidth, on_gpu && !(beta <= g->bandwidth * 1.0001) ? NA : beta, "profile beta", from,
            on_gpu ? (L->session_modeled ? "the device's kernels, modeled: the wave model's bandwidth per byte" : "the device's kernels, GPU events")
                   : "on cpu the ops are the computation: the host's bandwidth per byte; the bound is the w7900's");
    return 0;
}

/* Example 1-1's bound as the chapter works it: int8 weights of one byte,
 * bf16 compute, one token of context. */
static int ch11_bound(const gpu_profile *g, const char *dtype, int B, bounds_result *b) {
    return lab_bounds_with(CH11, g, dtype, "bf16", B, 1, 1, &(bounds_options){ .compute_dtype = "bf16" }, b);
}

/* Its calculator rows at B; at B = 1 also on the H100 with twice the
 * FLOP/s, with twice the bandwidth, and with int4 (half the bytes). */
static int ch11_calculator(lab *L, const gpu_profile *g, int B, const bounds_result *b) {
    L->pt = (lab_point){ "chapter-1-1-70e9", "h100", "int8", "bf16", B, 1, 1 };
    lab_row(L, "F", "FLOP", b->decode.flops, NA, "bounds decode.flops (2 B N)", "", "");
    lab_row(L, "R", "B", b->decode.bytes, NA, "bounds decode.bytes (b_W N, one read for the batch)", "", "");
    lab_row(L, "t_compute", "s", b->decode.t_compute, NA, "F / Pi (bf16)", "", "");
    lab_row(L, "t_memory", "s", b->decode.t_memory, NA, "R / beta", "", "");
    lab_row(L, "t_per_token", "s", b->decode.t_lower / B, NA, "decode.t_lower_s / B", "", "");
    lab_row(L, "throughput", "tok/s", B / b->decode.t_lower, NA, "B / decode.t_lower_s", "", "");
    if (B > 1) return 0;
    lab_row(L, "b_star", "B", b->b_star, NA, "b_W Pi / (2 beta)", "", "");
    gpu_profile fl = *g, bw = *g;
    fl.peak.fp32 *= 2; fl.peak.fp16 *= 2; fl.peak.bf16 *= 2; fl.peak.int8 *= 2;
    bw.bandwidth *= 2;
    const struct { const gpu_profile *g; const char *device, *dtype; } V[] = {
        { &fl, "h100-2xflops", "int8" }, { &bw, "h100-2xbw", "int8" }, { g, "h100", "int4" } };
    for (int i = 0; i < 3; i++) {
        bounds_result r;
        if (ch11_bound(V[i].g, V[i].dtype, 1, &r)) return -1;
        L->pt.device = V[i].device;
        L->pt.dtype = V[i].dtype;
        lab_row(L, "t_compute", "s", r.decode.t_compute, NA, "F / Pi (bf16)", "", "");
        lab_row(L, "t_memory", "s", r.decode.t_memory, NA, "R / beta", "", "");
    }
    return 0;
}

/* Example 1-1 run: waves of B = 1 and 8 on analytic:h100 (int8 stored as
 * Q8_0, hipath's fp32 KV), each decode step against the chapter's bound;
 * then the calculator's rows. */
static int ch11(lab *L) {
    static const int BS[2] = { 1, 8 };
    int64_t first[2];
    bounds_result b[2];
    lab_request warm, m;
    gpu_profile g;
    if (lab_profile("h100", &g) || lab_engine_waves(L, "analytic:h100", CH11, "int8", 1, CH11_TOK, BS, 2, first) ||
        lab_measure_request(L, 1, &warm)) return -1;
    for (int i = 0; i < 2; i++) {
        if (ch11_bound(&g, "int8", BS[i], &b[i]) || lab_measure_request(L, first[i], &m)) return -1;
        L->pt = (lab_point){ "chapter-1-1-70e9", L->session_device, "int8", "fp32", BS[i], 1, 1 + CH11_TOK / 2 };
        lab_row(L, "F", "FLOP", b[i].decode.flops, m.flops_per_step, "the chapter's bound: decode.flops", "v_steps.op_flops, decode mean",
                "the trace also counts attention and the norms");
        lab_row(L, "R", "B", b[i].decode.bytes, m.bytes_per_step, "the chapter's bound: decode.bytes", "v_steps.op_bytes, decode mean",
                "Q8_0: a 2-byte scale per 32 weights; fp32 activations per sequence");
        lab_row(L, "t_memory", "s", b[i].decode.t_memory, m.bytes_per_step / L->gpu.bandwidth, "the chapter's bound: R / beta",
                "the trace's R / beta", "");
        lab_row(L, "kernels_per_step", "kernels", warm.ops_per_step, m.launches_per_step, "v_steps.n_ops of the warm-up's decode steps", "v_steps.n_launches", "");
        lab_row(L, "launch_total", "s", warm.ops_per_step * L->gpu.launch_latency_s, NA, "kernels_per_step x launch_latency_s", "", "");
        lab_row(L, "gpu_s", "s", b[i].decode.t_lower, m.gpu_s, "the chapter's bound: decode.t_lower_s", "v_steps.gpu_ns, decode median (modeled)",
                "the scales' bytes, the launches and the small grids' tails");
        lab_row(L, "throughput", "tok/s", BS[i] / b[i].decode.t_lower, BS[i] / m.gpu_s, "B / decode.t_lower_s", "B / gpu_s (modeled)",
                "the bound is a ceiling: the modeled step is longer");
    }
    for (int i = 0; i < 2; i++) if (ch11_calculator(L, &g, BS[i], &b[i])) return -1;
    return 0;
}

int lab3(lab *L) {
    char cfg[1100], analytic[200];
    model_config c;
    if (lab_config(L->model, &c, cfg, sizeof cfg)) return -1;
    snprintf(analytic, sizeof analytic, "analytic:%s", L->profile);
    const struct { const char *device, *model, *analytic_dtype, *config; } RUNS[] = {
        { L->device, L->model, NULL, cfg }, { "cpu", L->model, NULL, cfg }, { analytic, QWEN7B, "fp16", QWEN7B } };
    for (int i = 0; i < 3; i++) {
        chat_result r;
        const char *dt = RUNS[i].analytic_dtype ? RUNS[i].analytic_dtype : lab_dtype(&c);
        if (lab_one_request(L, RUNS[i].device, RUNS[i].model, RUNS[i].analytic_dtype, 32, &r)) return -1;
        int rc = decode_rows(L, RUNS[i].model, RUNS[i].config, dt, &r);
        chat_result_free(&r);
        if (rc) return -1;
    }
    return ch11(L);
}
