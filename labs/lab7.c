/*
 * lab7.c -- Lab 7, Amdahl across the path (lab7-amdahl.md): how much of a
 * request a 2x GPU speeds up. tiny-hi on the lab's profile and on one with
 * twice the bandwidth and FLOP/s; a 14B model analytically on those and on
 * one with twice the FLOP/s only. The doubled profiles are written to OUT
 * as PROFILE-2x.json and PROFILE-2xflops.json.
 */
#include "labs/amdahl.h"
#include "labs/lab.h"
#include "stack/stack.h"
#include "trace/trace.h"
#include <stdlib.h>
#include <string.h>

/* OUT/PROFILE-suffix.json: the lab's profile, its bandwidth and every peak
 * scaled (launch latency and the host link as they are). */
static int write_profile(const lab *L, const char *suffix, double bw, double flops, char *path, int cap) {
    gpu_profile g;
    char nm[128];
    if (lab_profile(L->profile, &g)) return -1;
    cJSON *j = cJSON_CreateObject(), *peak = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", g.name);
    cJSON_AddStringToObject(j, "arch", g.arch);
    cJSON_AddStringToObject(j, "source", g.source);
    cJSON_AddNumberToObject(j, "memory_bytes", g.memory_bytes);
    cJSON_AddNumberToObject(j, "memory_bandwidth_bytes_per_s", g.bandwidth * bw);
    cJSON_AddNumberToObject(peak, "fp32", g.peak.fp32 * flops);
    cJSON_AddNumberToObject(peak, "fp16", g.peak.fp16 * flops);
    cJSON_AddNumberToObject(peak, "bf16", g.peak.bf16 * flops);
    cJSON_AddNumberToObject(peak, "int8", g.peak.int8 * flops);
    cJSON_AddItemToObject(j, "peak_flops", peak);
    cJSON_AddNumberToObject(j, "compute_units", g.compute_units);
    cJSON_AddNumberToObject(j, "wavefront_size", g.wavefront_size);
    cJSON_AddNumberToObject(j, "lds_bytes_per_cu", g.lds_bytes_per_cu);
    cJSON_AddNumberToObject(j, "host_link_bytes_per_s", g.host_link);
    cJSON_AddNumberToObject(j, "launch_latency_s", g.launch_latency_s);
    snprintf(path, cap, "%s/%s-%s.json", L->out, served_name(L->profile, nm, sizeof nm), suffix);
    char *s = cJSON_Print(j);
    FILE *f = fopen(path, "w");
    int rc = f && s && fputs(s, f) >= 0 ? 0 : stack_fail("%s: cannot write", path);
    if (f) fclose(f);
    free(s);
    cJSON_Delete(j);
    return rc;
}

/* One session's measurements, kept until the 2x runs are in. */
typedef struct {
    char device[200];           /* as the rows name it: sim:w7900-2x, not the profile's path */
    int64_t run;
    gpu_profile gpu;
    int P, n;
    lab_request warm, m;
    lab_layer layer[9];
} session;

/* The rows every session has: its time, split by layer and device. */
static int time_rows(lab *L, const session *s, bounds_result *b) {
    int analytic = !strncmp(s->device, "analytic:", 9);
    char cfg[1100];
    model_config c;
    bounds_result pre;
    if (!analytic && lab_config(L->model, &c, cfg, sizeof cfg)) return -1;
    const char *model = analytic ? QWEN14B : L->model, *config = analytic ? QWEN14B : cfg, *dt = analytic ? "fp16" : lab_dtype(&c);
    const lab_request *m = &s->m;
    L->run = s->run;
    L->gpu = s->gpu;
    if (lab_bounds(config, &L->gpu, dt, "fp32", 1, s->P, s->P + s->n / 2, b) || lab_bounds(config, &L->gpu, dt, "fp32", 1, s->P, s->P, &pre)) return -1;
    L->pt = (lab_point){ served_name(model, L->model_name, sizeof L->model_name), s->device, dt, "fp32", 1, s->P, s->P + s->n / 2 };
    /* Every step launches the ops forward() ran, counted in the warm-up's steps. */
    double pred = (s->n - 1) * b->decode.t_lower + pre.prefill.t_lower + s->n * s->warm.ops_per_step * L->gpu.launch_latency_s;
    lab_row(L, "e2e_s", "s", NA, m->e2e_s, "", "v_request_latency.e2e_ns (mixed)", "");
    lab_row(L, "ttft_s", "s", NA, m->ttft_s, "", "v_request_latency.ttft_ns (mixed)", "");
    lab_row(L, "tpot_s", "s", b->decode.t_lower, m->step_s, "decode.t_lower_s", "v_steps.dur_ns, decode median (mixed)", NULL);
    lab_row(L, "device_s", "s", pred, s->layer[1].all_s, "steps x t_lower + prefill t_lower + kernels x launch latency (kernels: the warm-up's v_steps.n_ops)",
            "layer-1 dur_ns in the request window (modeled)", NULL);
    for (int l = 8; l >= 2; l--) {
        char q[32];
        snprintf(q, sizeof q, "host_layer_s_%d", l);
        lab_row(L, q, "s", NA, s->layer[l].top_measured_s, "", "top-level measured slices of the layer in the request window", trace_layer_name(l));
    }
    lab_row(L, "launch_s", "s", NA, s->layer[3].all_s, "", "layer-3 launches in the request window", "");
    /* The share a faster GPU touches: the kernels' waves, which the wave
     * model scales with the peak and the bandwidth; their launch latency
     * and the copies over the host link stay as they are. */
    char why[96];
    double f = s->layer[1].all_s / m->e2e_s, f_scaled = s->layer[1].scaled_s / m->e2e_s;
    snprintf(why, sizeof why, "the device is %.0f%% of the request; not all of it gets faster", 100 * f);
    lab_row(L, "f", "", NA, f, "", "device_s / e2e_s (modeled over mixed)", why);
    snprintf(why, sizeof why, "kernel waves are %.0f%% of the request; launch latency and copies stay", 100 * f_scaled);
    lab_row(L, "f_scaled", "", NA, f_scaled, "", "layer-1 waves x wave_s in the request window / e2e_s (modeled over mixed)", why);
    return 0;
}

/* A base session: Amdahl's speed-up with f_scaled against the one
 * measured on its 2x profile (x2) and its 2x-FLOP/s one (flops, or NULL),
 * all on the one virtual clock. */
static int base_rows(lab *L, const session *s, const session *x2, const session *flops) {
    bounds_result b;
    if (time_rows(L, s, &b)) return -1;
    double e2e = s->m.e2e_s, f_scaled = s->layer[1].scaled_s / e2e, amdahl = 1 / ((1 - f_scaled) + f_scaled / 2);
    lab_row(L, "speedup_amdahl", "x", amdahl, e2e / x2->m.e2e_s, "1 / ((1 - f_scaled) + f_scaled / 2)", "e2e here / e2e on the 2x profile (mixed)", NULL);
    lab_row(L, "speedup_flops_only", "x", bounds_compute_bound(&b.decode) ? amdahl : 1, flops ? e2e / flops->m.e2e_s : NA,
            "decode at B = 1 is memory-bound: 1", flops ? "e2e here / e2e on the 2x-FLOP/s profile (mixed)" : "", NULL);
    return 0;
}

/* A faster profile's session: its speed-ups over base. */
static int faster_rows(lab *L, const session *s, const session *base, const char *why) {
    bounds_result b;
    if (time_rows(L, s, &b)) return -1;
    lab_row(L, "speedup_measured", "x", NA, base->m.e2e_s / s->m.e2e_s, "", "e2e base / e2e here (mixed)", why);
    lab_row(L, "tpot_speedup_measured", "x", NA, base->m.step_s / s->m.step_s, "", "tpot base / tpot here (mixed)", "");
    return 0;
}

/* The chapter's own Amdahl examples (1.2.1) and its GPU table (1.2.2), by
 * the calculators: `hipath amdahl` and the profiles. */
static int chapter_rows(lab *L) {
    static const struct { const char *example; double f, s, time; const char *unit; } A[] = {
        { "seeks-cpu-2x", 1.0 / 201, 2, 201, "ms" },      /* 20 seeks of 10 ms and 1 ms of CPU: the CPU twice as fast */
        { "seeks-halved", 200.0 / 201, 2, 201, "ms" },    /* half the seeks (their time halved) */
        { "seeks-cpu-gone", 1.0 / 201, INFINITY, 201, "ms" },
        { "coding-70%-5x", 0.7, 5, 100, "h" },            /* coding 70% or 80% of a project, 5x faster */
        { "coding-80%-5x", 0.8, 5, 100, "h" } };
    char err[128];
    for (size_t i = 0; i < sizeof A / sizeof *A; i++) {
        amdahl_result a;
        if (amdahl(A[i].f, A[i].s, &a, err, sizeof err)) return stack_fail("%s", err);
        L->pt = (lab_point){ A[i].example, "amdahl", "", "", 0, 0, 0 };
        lab_row(L, "speedup", "x", a.overall, NA, "1 / ((1 - f) + f / s)", "", "");
        lab_row(L, "time_after", A[i].unit, A[i].time / a.overall, NA, "time x ((1 - f) + f / s)", "", "");
        lab_row(L, "time_saved", A[i].unit, A[i].time * a.saved_share, NA, "time x f (1 - 1/s)", "", "");
        lab_row(L, "saved_share", "", a.saved_share, NA, "f (1 - 1/s)", "", "");
    }
    static const char *const GPUS[] = { "rtx4090", "a100", "h100" };
    for (int i = 0; i < 3; i++) {
        gpu_profile g;
        if (lab_profile(GPUS[i], &g)) return -1;
        lab_profile_rows(L, &g, GPUS[i]);
    }
    return 0;
}

int lab7(lab *L) {
    char p2x[1200], pfl[1200], dev[5][1300], nm[128];
    if (write_profile(L, "2x", 2, 2, p2x, sizeof p2x) || write_profile(L, "2xflops", 1, 2, pfl, sizeof pfl)) return -1;
    const char *profile[5] = { L->profile, p2x, L->profile, p2x, pfl };
    session s[5];
    for (int i = 0; i < 5; i++) {
        int analytic = i >= 2;
        chat_result r;
        snprintf(dev[i], sizeof dev[i], "%s:%s", analytic ? "analytic" : "sim", profile[i]);
        snprintf(s[i].device, sizeof s[i].device, "%s:%s", analytic ? "analytic" : "sim", served_name(profile[i], nm, sizeof nm));
        if (lab_one_request(L, dev[i], analytic ? QWEN14B : L->model, analytic ? "fp16" : NULL, 32, &r)) return -1;
        s[i].P = r.prompt_tokens;
        s[i].n = r.completion_tokens;
        s[i].run = L->run;
        s[i].gpu = L->gpu;
        chat_result_free(&r);
        if (lab_measure_request(L, 1, &s[i].warm) || lab_measure_request(L, 2, &s[i].m) || lab_measure_layers(L, 2, s[i].layer)) return -1;
    }
    /* tiny-hi: the base and its 2x; the 14B: the base, its 2x, its 2x FLOP/s */
    return base_rows(L, &s[0], &s[1], NULL) || faster_rows(L, &s[1], &s[0], "") ||
           base_rows(L, &s[2], &s[3], &s[4]) || faster_rows(L, &s[3], &s[2], "") ||
           faster_rows(L, &s[4], &s[2], "only FLOP/s doubled: decode does not care") || chapter_rows(L) ? -1 : 0;
}
