/*
 * lab1.c -- Lab 1, follow one "Hi" (lab1-follow-hi.md): one "Hi" down the
 * eight layers and back; its counts predicted, each layer's time measured.
 */
#include "labs/lab.h"
#include "trace/journey.h"
#include "trace/trace.h"

/* The layer that was the deepest at work longest (the journey table's self
 * time, whole run); its share of the run into why. */
static double dominant_layer(const lab *L, char *why, int cap) {
    journey_row jr[16];
    int nj, best = 0;
    double total, self[9] = { 0 };
    char err[256];
    if (trace_journey(L->db, L->run, jr, &nj, &total, err, sizeof err)) return NA;
    for (int i = 0; i < nj; i++) self[jr[i].layer] += jr[i].self_s;
    for (int l = 1; l <= 8; l++) if (!best || self[l] > self[best]) best = l;
    snprintf(why, cap, "%s: %.0f%% of the run's time", trace_layer_name(best), 100 * self[best] / total);
    return best;
}

int lab1(lab *L) {
    model_config c;
    chat_result r;
    bounds_result b;
    lab_request warm, m;
    lab_layer layer[9];
    char cfg[1100], why[64] = "";
    if (lab_config(L->model, &c, cfg, sizeof cfg)) return -1;
    if (lab_one_request(L, L->device, L->model, NULL, 16, &r)) return -1;
    int P = r.prompt_tokens, n = r.completion_tokens;
    chat_result_free(&r);
    const char *dt = lab_dtype(&c);
    L->pt = (lab_point){ served_name(L->model, L->model_name, sizeof L->model_name), L->device, dt, "fp32", 1, P, P + 1 };
    if (lab_bounds(cfg, &L->gpu, dt, "fp32", 1, P, P + 1, &b)) return -1;
    if (lab_measure_request(L, 1, &warm) || lab_measure_request(L, 2, &m) || lab_measure_layers(L, 2, layer)) return -1;

    lab_row(L, "prompt_tokens", "tokens", P, m.prompt_tokens, "client usage.prompt_tokens", "layer-7 tokenize args", NULL);
    lab_row(L, "forward_passes", "passes", n, m.passes, "completion tokens", "v_steps with the request", NULL);
    /* The ops of a step are what forward() ran, counted in the trace: the
     * warm-up's decode steps predict the measured request's. */
    lab_row(L, "ops_per_pass", "ops", warm.ops_per_step, m.ops_per_step, "v_steps.n_ops of the warm-up's decode steps (request.sql, request 1)", "v_steps.n_ops, decode", NULL);
    lab_row(L, "d2h_bytes_per_token", "B", 4.0 * c.vocab_size, layer[2].up_bytes / m.passes, "4 V (f32 logits)", "layer-2 D2H bytes in the request / passes", NULL);
    lab_row(L, "decode_t_lower_s", "s", b.decode.t_lower, m.gpu_s, "bounds decode.t_lower_s", "v_steps.gpu_ns, decode median",
            "device time per step against the bound: launch latency and idle CUs of tiny grids");
    for (int l = 8; l >= 1; l--) {
        char q[32];
        snprintf(q, sizeof q, "layer_ms_%d", l);
        lab_row(L, q, "ms", NA, layer[l].top_s * 1e3, "", "top-level slices of the layer in the request window", trace_layer_name(l));
    }
    /* Each layer's own time (the deepest at work, the journey's rows): the
     * layers above nest, so only these add up to request 2's e2e. */
    journey_row jr[16];
    int nj;
    double total, own[9] = { 0 };
    char err[256];
    if (trace_journey_request(L->db, L->run, 2, jr, &nj, &total, err, sizeof err)) return -1;
    for (int i = 0; i < nj; i++) own[jr[i].layer] += jr[i].self_s;
    for (int l = 8; l >= 1; l--)
        lab_row(L, "layer_self_ms", "ms", NA, own[l] * 1e3, "", "journey self time of the layer in request 2", trace_layer_name(l));
    lab_row(L, "ttft_ms", "ms", NA, m.ttft_s * 1e3, "", "v_request_latency.ttft_ns", "");
    lab_row(L, "e2e_ms", "ms", NA, m.e2e_s * 1e3, "", "v_request_latency.e2e_ns", "");
    double best = dominant_layer(L, why, sizeof why);
    lab_row(L, "dominant_layer", "layer", NA, best, "", "journey self time (whole run)", why);
    /* the device the journey article names, as its datasheet has it */
    gpu_profile g;
    if (lab_profile(L->profile, &g)) return -1;
    lab_profile_rows(L, &g, L->profile);
    return 0;
}
