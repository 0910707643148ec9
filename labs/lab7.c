/*
 * lab7.c -- Lab 7, Amdahl across the path (lab7-amdahl.md): how much of a
 * request a 2x GPU speeds up. tiny-hi on the lab's profile and on one with
 * twice the bandwidth and FLOP/s; a 14B model analytically on those and on
 * one with twice the FLOP/s only. The doubled profiles are written to OUT
 * as PROFILE-2x.json and PROFILE-2xflops.json.
 */
#include "labs/lab.h"
#include "cli/cli.h"
#include "trace/trace.h"
#include <stdlib.h>

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
    snprintf(path, cap, "%s/%s-%s.json", L->out, lab_short_name(L->profile, nm, sizeof nm), suffix);
    char *s = cJSON_Print(j);
    FILE *f = fopen(path, "w");
    int rc = f && s && fputs(s, f) >= 0 ? 0 : cli_fail("%s: cannot write", path);
    if (f) fclose(f);
    free(s);
    cJSON_Delete(j);
    return rc;
}

int lab7(lab *L) {
    char cfg[1100], p2x[1200], pfl[1200], dev[5][1300];
    model_config c;
    if (lab_config(L->model, &c, cfg, sizeof cfg) || write_profile(L, "2x", 2, 2, p2x, sizeof p2x) || write_profile(L, "2xflops", 1, 2, pfl, sizeof pfl)) return -1;
    snprintf(dev[0], sizeof dev[0], "sim:%s", L->profile);
    snprintf(dev[1], sizeof dev[1], "sim:%s", p2x);
    snprintf(dev[2], sizeof dev[2], "analytic:%s", L->profile);
    snprintf(dev[3], sizeof dev[3], "analytic:%s", p2x);
    snprintf(dev[4], sizeof dev[4], "analytic:%s", pfl);
    double e2e_base = NA, tpot_base = NA;
    for (int i = 0; i < 5; i++) {
        int analytic = i >= 2;
        const char *model = analytic ? QWEN14B : L->model, *config = analytic ? QWEN14B : cfg, *dt = analytic ? "fp16" : lab_dtype(&c);
        chat_result r;
        bounds_result b, pre;
        lab_request warm, m;
        lab_layer layer[9];
        if (lab_one_request(L, dev[i], model, analytic ? "fp16" : NULL, 32, &r)) return -1;
        int P = r.prompt_tokens, n = r.completion_tokens;
        chat_result_free(&r);
        if (lab_bounds(config, &L->gpu, dt, "fp32", 1, P, P + n / 2, &b) || lab_bounds(config, &L->gpu, dt, "fp32", 1, P, P, &pre)) return -1;
        if (lab_measure_request(L, 1, &warm) || lab_measure_request(L, 2, &m) || lab_measure_layers(L, 2, layer)) return -1;
        L->pt = (lab_point){ lab_short_name(model, L->model_name, sizeof L->model_name), dev[i], dt, "fp32", 1, P, P + n / 2 };
        /* Every step launches the ops forward() ran, counted in the warm-up's steps. */
        double device = layer[1].all_s, f = device / m.e2e_s;
        double pred = (n - 1) * b.decode.t_lower + pre.prefill.t_lower + n * warm.ops_per_step * L->gpu.launch_latency_s;
        lab_row(L, "e2e_s", "s", NA, m.e2e_s, "", "v_request_latency.e2e_ns", "");
        lab_row(L, "ttft_s", "s", NA, m.ttft_s, "", "v_request_latency.ttft_ns", "");
        lab_row(L, "tpot_s", "s", b.decode.t_lower, m.step_s, "decode.t_lower_s", "v_steps.dur_ns, decode median", NULL);
        lab_row(L, "device_s", "s", pred, device, "steps x t_lower + prefill t_lower + kernels x launch latency (kernels: the warm-up's v_steps.n_ops)",
                "layer-1 dur_ns in the request window", NULL);
        for (int l = 8; l >= 2; l--) {
            char q[32];
            snprintf(q, sizeof q, "host_layer_s_%d", l);
            lab_row(L, q, "s", NA, layer[l].top_measured_s, "", "top-level measured slices of the layer in the request window", trace_layer_name(l));
        }
        lab_row(L, "launch_s", "s", NA, layer[3].all_s, "", "layer-3 launches in the request window", "");
        if (i == 0 || i == 2) {
            char why[96];
            e2e_base = m.e2e_s; tpot_base = m.step_s;
            snprintf(why, sizeof why, "the device is %.0f%% of the request", 100 * f);
            lab_row(L, "f", "", NA, f, "", "device_s / e2e_s", why);
            lab_row(L, "speedup_amdahl", "x", 1 / ((1 - f) + f / 2), NA, "1 / ((1 - f) + f / 2)", "", "");
            lab_row(L, "speedup_flops_only", "x", bounds_compute_bound(&b.decode) ? 1 / ((1 - f) + f / 2) : 1, NA, "decode at B = 1 is memory-bound: 1", "", "");
        } else {
            lab_row(L, "speedup_measured", "x", NA, e2e_base / m.e2e_s, "", "e2e base / e2e here", i == 4 ? "only FLOP/s doubled: decode does not care" : "");
            lab_row(L, "tpot_speedup_measured", "x", NA, tpot_base / m.step_s, "", "tpot base / tpot here", "");
        }
    }
    return 0;
}
