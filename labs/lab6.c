/*
 * lab6.c -- Lab 6, context length (lab6-context.md): the context grows; KV
 * bytes against weight bytes, the context L_x where they meet, and the
 * paged KV blocks. Plus the calculator alone for Qwen3-8B at long contexts.
 */
#include "labs/lab.h"
#include "layers/common/kv.h"
#include <stdlib.h>

/* Prompts from 64 tokens to tiny-hi's 512-token context less the reply: a
 * token of context adds ~14 ns of modeled attention to a step, so only a
 * few hundred tokens lift it clear of the host's microsecond jitter. */
enum { NP = 4, TOK = 40 };
static const int PS[NP] = { 64, 128, 256, 448 };

/* The rows of one request of P prompt tokens (request req); its median
 * decode step into step_s, the bound's slope into bound. */
static int context_rows(lab *L, const char *cfg, const char *dt, int P, int64_t req, double *step_s, double *bound) {
    bounds_result b;
    lab_request m;
    char alloc_from[96], blocks_from[64];
    int ctx = P + TOK / 2;   /* the mean context of its decode steps */
    if (lab_bounds(cfg, &L->gpu, dt, "fp32", 1, P, ctx, &b) || lab_measure_request(L, req, &m)) return -1;
    L->pt = (lab_point){ served_name(L->model, L->model_name, sizeof L->model_name), L->device, dt, "fp32", 1, P, ctx };
    lab_row(L, "kv_bytes_per_token", "B", b.kv_bytes_per_token, NA, "bounds kv_bytes_per_token", "", "");
    lab_row(L, "weight_bytes_per_step", "B", b.decode.weight_bytes, m.weight_bytes_per_step, "decode.weight_bytes", "v_steps.weight_bytes (matmuls)", NULL);
    lab_row(L, "kv_bytes_per_step", "B", b.decode.kv_bytes, m.kv_bytes_per_step, "decode.kv_bytes at the mean context", "v_steps.attention_bytes", NULL);
    lab_row(L, "L_x", "tokens", b.decode.weight_bytes / b.kv_bytes_per_token, NA, "weight_bytes / kv_bytes_per_token", "", "the context where KV reads equal weight reads");
    lab_row(L, "t_lower", "s", b.decode.t_lower, m.gpu_s, "decode.t_lower_s", "v_steps.gpu_ns, decode median", NULL);
    lab_row(L, "step_s", "s", b.decode.t_lower, m.step_s, "decode.t_lower_s", "v_steps.dur_ns, decode median", NULL);
    lab_row(L, "slope_s_per_token", "s/token", b.kv_bytes_per_token / L->gpu.bandwidth, m.gpu_s_slope, "kv_bytes_per_token / beta",
            "least squares of the decode steps' gpu_ns against the step (modeled)",
            "decode attention runs a workgroup per head: most CUs idle, so each token of context costs more than at beta");
    /* The prompt's blocks come in one kv_alloc, then one per new block. */
    double blocks = ceil((double)(P + TOK) / KV_BLOCK_SIZE);
    snprintf(alloc_from, sizeof alloc_from, "1 + ceil((P + %d) / %d) - ceil(P / %d)", TOK, KV_BLOCK_SIZE, KV_BLOCK_SIZE);
    snprintf(blocks_from, sizeof blocks_from, "ceil((P + %d) / %d)", TOK, KV_BLOCK_SIZE);
    lab_row(L, "kv_alloc_events", "events", 1 + blocks - ceil((double)P / KV_BLOCK_SIZE), m.kv_allocs, alloc_from, "kv_alloc instants of the request",
            "the prompt's blocks come in one kv_alloc, then one per new block");
    lab_row(L, "kv_blocks_end", "blocks", blocks, m.kv_blocks_end, blocks_from, "kv_free blocks", NULL);
    *step_s = m.step_s;
    *bound = b.kv_bytes_per_token / L->gpu.bandwidth;
    return 0;
}

/* The step time against the context across the requests: a line through
 * (mean context, median step) by least squares, at the last request's
 * point; bound: kv_bytes_per_token / beta. */
static void step_slope_row(lab *L, const int *plen, const double *step_s, int n, double bound) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int k = 0; k < n; k++) {
        double x = plen[k] + TOK / 2;
        sx += x; sy += step_s[k]; sxx += x * x; sxy += x * step_s[k];
    }
    lab_row(L, "step_slope_s_per_token", "s/token", bound, (n * sxy - sx * sy) / (n * sxx - sx * sx), "kv_bytes_per_token / beta",
            "least squares of each request's median decode step against its mean context (mixed)",
            "over hundreds of tokens the step follows its device time; one request's 40 tokens sit in the host's jitter");
}

int lab6(lab *L) {
    char cfg[1100];
    model_config c;
    int plen[NP], np = 0;
    if (lab_config(L->model, &c, cfg, sizeof cfg)) return -1;
    if (lab_session_begin(L, L->device, L->model, NULL, 0, 0)) return -1;
    int rc = lab_send(L, "Hi", TOK, 1, 1, NULL);
    for (int k = 0; k < NP && !rc && PS[k] <= c.max_seq_len - 64; k++) {
        char *text = lab_prompt(L->model, NULL, PS[k]);
        chat_result r;
        rc = !text || lab_send(L, text, TOK, 1, 2 + k, &r);
        if (!rc) { plen[np++] = r.prompt_tokens; chat_result_free(&r); }
        free(text);
    }
    if (lab_session_end(L) || rc) return -1;
    double step_s[NP], bound = NA;
    for (int k = 0; k < np; k++) if (context_rows(L, cfg, lab_dtype(&c), plen[k], 2 + k, &step_s[k], &bound)) return -1;
    step_slope_row(L, plen, step_s, np, bound);

    gpu_profile g2;
    if (lab_profile("rtx-pro-6000", &g2)) return -1;
    static const int LS[] = { 2048, 8192, 32768, 40960 }, BS[] = { 1, 8, 64 };
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++) {
            bounds_result b;
            if (lab_bounds(QWEN3_8B, &g2, "bf16", "bf16", BS[j], LS[i], LS[i], &b)) return -1;
            L->pt = (lab_point){ "qwen3-8b", "rtx-pro-6000", "bf16", "bf16", BS[j], LS[i], LS[i] };
            lab_row(L, "kv_bytes_per_step", "B", b.decode.kv_bytes, NA, "decode.kv_bytes (calculator only)", "", "");
            lab_row(L, "L_x", "tokens", b.decode.weight_bytes / (BS[j] * b.kv_bytes_per_token), NA, "weight_bytes / (B kv_bytes_per_token)", "", "");
            lab_row(L, "t_lower", "s", b.decode.t_lower, NA, "decode.t_lower_s", "", "");
            lab_row(L, "kv_capacity_fits", "1/0", b.capacity.fits, NA, "capacity.fits", "", "");
        }
    return 0;
}
