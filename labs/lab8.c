/*
 * lab8.c -- Lab 8, bigger than one GPU (lab8-parallel.md): Llama-2-70B in
 * bf16 split over N = 1, 2, 4, 8 H100s and MI300Xs by tensor parallelism.
 * (a) The calculator per GPU: what fits, the decode bound with its
 * all-reduces, B* and B_fit. (b) Each N that fits, analytic: the decode
 * step on GPU 0's stream and its parts, and its speed-up over the smallest
 * N against Amdahl's, from the part of that N's step that does not split.
 * Every figure is the calculator's or modeled: none holds host time.
 */
#include "labs/lab.h"
#include "labs/amdahl.h"
#include "stack/stack.h"
#include "layers/runtime/runtime.h"
#include <stdio.h>

/* The runs: one sequence, a prompt of P ids and TOK tokens (TOK - 1
 * decode steps): the 70B at N = 8 models ~1,450 slices a step on each GPU,
 * so few steps. */
enum { NG = 2, NN = 4, P = 16, TOK = 3, CTX = P + TOK / 2, CALC_L = 512, FIT_L = 4096 };
static const char *const GPUS[NG] = { "h100", "mi300x" };
static const int NS[NN] = { 1, 2, 4, 8 };

/* What lab8-step.sql measures of request req's decode steps, on GPU 0. */
typedef struct { double step_s, all_reduces, all_reduce_s, gather_s, kernels, waves_s, replicated_s, launch_s; } parts;

static int measure(const lab *L, int64_t req, parts *m) {
    lab_query q;
    if (lab_sql_open(L, &q, SQL_LAB8_STEP, (lab_args){ .first = req, .last = req, .batch = 1 })) return -1;
    lab_sql_next(&q);
    *m = (parts){ lab_col(&q, "step_s"), lab_col(&q, "all_reduces"), lab_col(&q, "all_reduce_s"), lab_col(&q, "gather_s"),
                  lab_col(&q, "kernels"), lab_col(&q, "waves_s"), lab_col(&q, "replicated_s"), lab_col(&q, "launch_s") };
    return lab_sql_close(&q);
}

/* The work that splits over the GPUs: every kernel's waves but the
 * replicated ones'. The rest of the step does not get shorter with N. */
static double split_s(const parts *m) { return m->waves_s - m->replicated_s; }

/* (a) N GPUs of g, bf16 KV as an engine keeps it: a GPU's share, the
 * decode bound at B = 1 and L = CALC_L, B_fit at FIT_L. 1 if it fits. */
static int calculator_rows(lab *L, const gpu_profile *g, const char *gpu, int N) {
    bounds_result b, f;
    char dev[64], of[64];
    const bounds_options opt = { .tp = N };
    if (lab_bounds_with(LLAMA70B, g, "bf16", "bf16", 1, CALC_L, CALC_L, &opt, &b) ||
        lab_bounds_with(LLAMA70B, g, "bf16", "bf16", 1, FIT_L, FIT_L, &opt, &f)) return -1;
    const bounds_capacity *c = &b.parallel.per_gpu;
    const bounds_parallel_phase *d = &b.parallel.decode;
    snprintf(dev, sizeof dev, "%d x %s", N, gpu);
    snprintf(of, sizeof of, "%.2f of %.2f GB a GPU", c->total_bytes / 1e9, c->device_bytes / 1e9);
    L->pt = (lab_point){ "llama-2-70b", dev, "bf16", "bf16", 1, CALC_L, CALC_L };
    lab_row(L, "fits", "1/0", c->fits, NA, "parallel.per_gpu.fits", "", of);
    lab_row(L, "weights_bytes_gpu", "B", c->weights_bytes, NA, "parallel.per_gpu.weights_bytes", "", "");
    lab_row(L, "kv_bytes_gpu", "B", c->kv_bytes, NA, "parallel.per_gpu.kv_bytes (B x L x a GPU's KV heads' bytes)", "", "");
    lab_row(L, "total_bytes_gpu", "B", c->total_bytes, NA, "parallel.per_gpu.total_bytes", "", of);
    lab_row(L, "t_memory", "s", d->t_memory, NA, "parallel.decode.t_memory_s: a GPU's R / beta", "", "");
    lab_row(L, "all_reduce_bandwidth_s", "s", d->all_reduce.bandwidth_s, NA, "2 n_L x 2(N-1)/N x B d b_act / beta_ring", "", "");
    lab_row(L, "all_reduce_latency_s", "s", d->all_reduce.latency_s, NA, "2 n_L x 2(N-1) x alpha", "", "");
    lab_row(L, "t_step", "s", d->t_step, NA, "parallel.decode.step_s", "", c->fits ? "" : "does not fit");
    lab_row(L, "comm_share", "", d->comm_share, NA, "parallel.decode.comm_share", "", "");
    lab_row(L, "b_star", "B", b.b_star, NA, "b_W Pi / (2 beta)", "", "the same at every N: a GPU's weight bytes and FLOPs split alike");
    L->pt.prompt_len = L->pt.context = FIT_L;
    lab_row(L, "b_fit", "sequences", (double)f.parallel.b_fit, NA, "parallel.b_fit", "", "sequences of 4096 tokens that fit on every GPU");
    return c->fits;
}

/* (b) One analytic session of N GPUs of gpu: a warm-up, then the wave of
 * one sequence, measured. The runtime is N GPUs while the session opens. */
static int session(lab *L, const char *gpu, int N, parts *m) {
    char device[64];
    int64_t first;
    snprintf(device, sizeof device, "analytic:%s", gpu);
    rt_gpus(N);
    int rc = lab_engine_waves(L, device, LLAMA70B, "bf16", P, TOK, (const int[]){ 1 }, 1, &first);
    rt_gpus(1);
    return rc ? -1 : measure(L, first, m);
}

/* A session's rows: the step against its bound, its parts; at the
 * smallest N (base, N0) the share that does not split, past it the
 * speed-up against Amdahl's and against Amdahl's with the all-reduces the
 * calculator adds at N. hipath's KV (fp32) in the bound. */
static int run_rows(lab *L, const gpu_profile *g, const char *gpu, int N, const parts *m, const parts *base, int N0) {
    bounds_result b;
    char dev[64], why[128];
    const bounds_options opt = { .tp = N };
    if (lab_bounds_with(LLAMA70B, g, "bf16", "fp32", 1, P, CTX, &opt, &b)) return -1;
    const bounds_parallel_phase *d = &b.parallel.decode;
    double comm = m->all_reduce_s + m->gather_s, f0 = 1 - split_s(base) / base->step_s;
    snprintf(dev, sizeof dev, "%d x analytic:%s", N, gpu);
    L->pt = (lab_point){ "llama-2-70b", dev, "bf16", "fp32", 1, P, CTX };
    lab_row(L, "t_step", "s", d->t_step, m->step_s, "parallel.decode.step_s", "lab8-step.sql step_s: GPU 0's stream (modeled)",
            "above the bound: launches, replicated and small kernels, whole waves");
    lab_row(L, "all_reduces", "", d->all_reduce.per_step, m->all_reduces, "2 n_L", "allReduce slices a step",
            N > 1 ? "one more: the embedding's, which the bound leaves out" : "");
    lab_row(L, "all_reduce_s", "s", d->all_reduce.total_s, m->all_reduce_s, "parallel.decode.all_reduce.total_s", "allReduce dur_ns (modeled)",
            N > 1 ? "hipath reduces f32 (4 B an element), the bound bf16: only the bandwidth term doubles" : "");
    lab_row(L, "kernels", "kernels", NA, m->kernels, "", "slices with waves a step", "the same at every N: each kernel is split, not the kernels");
    lab_row(L, "launch_s", "s", m->kernels * g->launch_latency_s, m->launch_s, "kernels x launch_latency_s",
            "kernels' dur_ns - waves x wave_s (modeled)", NULL);
    lab_row(L, "launch_share", "", NA, m->launch_s / m->step_s, "", "launch_s / t_step", "what CUDA graphs would cut");
    lab_row(L, "comm_share", "", d->comm_share, comm / m->step_s, "parallel.decode.comm_share", "(allReduce + gather) / t_step",
            N > 1 ? "a share of a longer step than the bound's" : "");
    lab_row(L, "waves_s", "s", NA, m->waves_s, "", "kernels' waves x wave_s (modeled)", "");
    lab_row(L, "split_s", "s", NA, split_s(m), "", "waves_s - replicated_s: the work that splits", "");
    lab_row(L, "step_no_launch_s", "s", d->t_step, m->step_s - m->launch_s, "parallel.decode.step_s", "t_step - launch_s",
            "the step with its launches gone, as CUDA graphs would leave it");
    if (N == N0) {
        snprintf(why, sizeof why, "at %d GPU%s, %.0f%% of the step does not split", N0, N0 > 1 ? "s" : "", 100 * f0);
        lab_row(L, "f_serial", "", NA, f0, "", "1 - split_s / t_step at the smallest N", why);
        return 0;
    }
    amdahl_result a;
    char err[256];
    if (amdahl(1 - f0, (double)N / N0, &a, err, sizeof err)) return stack_fail("lab 8: %s", err);
    double ring = base->step_s * f0 - (base->all_reduce_s + base->gather_s) + base->step_s * (1 - f0) * N0 / N + d->all_reduce.total_s;
    snprintf(why, sizeof why, "ideal %.0fx; Amdahl's serial part is fixed, the ring's latency 2(N-1) alpha grows", (double)N / N0);
    lab_row(L, "speedup", "x", a.overall, base->step_s / m->step_s, "amdahl(1 - f_serial, N / N0)", "t_step at N0 / t_step", why);
    lab_row(L, "speedup_ring", "x", base->step_s / ring, base->step_s / m->step_s,
            "t_step(N0) / (serial(N0) - comm(N0) + split(N0) N0/N + all_reduce_s(N))", "t_step at N0 / t_step",
            "what is left: the matmuls' waves split unevenly");
    return 0;
}

int lab8(lab *L) {
    /* Its GPUs are its question: say so, since the device line above names --device's. */
    fprintf(stderr, "hipath lab 8: Llama-2-70B, analytic, on 1-8 x H100 and MI300X (not --device %s, not --model)\n", L->device);
    for (int i = 0; i < NG; i++) {
        gpu_profile g;
        parts m[NN];
        int fits[NN], k0 = -1;   /* k0: the smallest N that fits, the speed-ups' base */
        if (lab_profile(GPUS[i], &g)) return -1;
        for (int k = 0; k < NN; k++) if ((fits[k] = calculator_rows(L, &g, GPUS[i], NS[k])) < 0) return -1;
        for (int k = 0; k < NN; k++) {
            if (!fits[k]) continue;
            if (k0 < 0) k0 = k;
            if (session(L, GPUS[i], NS[k], &m[k]) || run_rows(L, &g, GPUS[i], NS[k], &m[k], &m[k0], NS[k0])) return -1;
        }
    }
    return 0;
}
