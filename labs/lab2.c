/*
 * lab2.c -- Lab 2, capacity (lab2-capacity.md): (a) which model fits which
 * card, by the calculator alone; (b) the KV pool of a small server, measured.
 */
#include "labs/lab.h"
#include "stack/stack.h"
#include "layers/common/kv.h"
#include <stdlib.h>
#include <string.h>

/* (a): every config x profile x weight dtype, KV bf16, B = 1. */
static int calculator_rows(lab *L) {
    static const char *CONFIGS[] = { QWEN7B, QWEN14B, "labs/configs/smollm2-135m.config.json", QWEN3_8B, "labs/configs/deepseek-r1-distill-llama-70b.config.json" };
    static const char *DT[] = { "bf16", "int8", "q4_1" };
    char names[1024], err[512];
    for (size_t i = 0; i < sizeof CONFIGS / sizeof *CONFIGS; i++) {
        gpu_profile_list(names, sizeof names);   /* afresh for each config: strtok_r cuts the list up */
        for (char *save, *p = strtok_r(names, ", ", &save); p; p = strtok_r(NULL, ", ", &save))
            for (int d = 0; d < 3; d++) {
                gpu_profile g;
                model_config c;
                bounds_result b, full;
                if (lab_profile(p, &g)) return -1;
                if (model_config_load(&c, CONFIGS[i], err, sizeof err)) return stack_fail("%s", err);
                int P = c.max_seq_len < 4096 ? c.max_seq_len : 4096;
                if (lab_bounds(CONFIGS[i], &g, DT[d], "bf16", 1, P, P, &b) || lab_bounds(CONFIGS[i], &g, DT[d], "bf16", 1, P, c.max_seq_len, &full)) return -1;
                L->pt = (lab_point){ served_name(CONFIGS[i], L->model_name, sizeof L->model_name), p, DT[d], "bf16", 1, P, c.max_seq_len };
                double free1 = b.capacity.device_bytes - b.weights_bytes - b.capacity.workspace_bytes;
                lab_row(L, "weights_bytes", "B", b.weights_bytes, NA, "bounds weights_bytes", "", "");
                lab_row(L, "kv_bytes_per_token", "B", b.kv_bytes_per_token, NA, "bounds kv_bytes_per_token", "", "");
                lab_row(L, "fits_P", "1/0", b.capacity.fits, NA, "bounds capacity.fits at P", "", "");
                lab_row(L, "fits_full_context", "1/0", full.capacity.fits, NA, "bounds capacity.fits at max_position_embeddings", "", "");
                lab_row(L, "max_kv_tokens", "tokens", floor(free1 / b.kv_bytes_per_token), NA, "(M_cap - M_W - M_work) / kv_bytes_per_token", "", "");
                lab_row(L, "max_kv_tokens_2cards", "tokens", floor((free1 + b.capacity.device_bytes - b.capacity.workspace_bytes) / b.kv_bytes_per_token), NA,
                        "(2 M_cap - M_W - 2 M_work) / kv_bytes_per_token", "", "");
            }
    }
    return 0;
}

int lab2(lab *L) {
    enum { KV_MB = 1, MAX_BATCH = 64, N = 16, TOK = 119 };
    L->quiet = 1;
    if (calculator_rows(L)) return -1;
    if (!L->json) printf("(%d calculator rows: every config x profile x bf16/int8/q4_1, in the CSV)\n", cJSON_GetArraySize(L->rows));
    L->quiet = 0;

    /* (b): KV_MB of KV, N requests of up to P + TOK tokens each */
    model_config c;
    bounds_result b;
    chat_result r[N];
    char cfg[1100], pool_from[96], kv_from[64], running_from[96];
    if (lab_config(L->model, &c, cfg, sizeof cfg)) return -1;
    if (lab_session_begin(L, L->device, L->model, NULL, KV_MB, MAX_BATCH)) return -1;
    int rc = lab_send(L, "Hi", TOK, 1, 1, NULL) || lab_send(L, "Hi", TOK, N, 2, r);
    if (lab_session_end(L) || rc) return -1;
    int P = r[0].prompt_tokens, ctx = P + TOK;
    for (int i = 0; i < N; i++) chat_result_free(&r[i]);
    const char *dt = lab_dtype(&c);
    if (lab_bounds(cfg, &L->gpu, dt, "fp32", 1, P, ctx, &b)) return -1;
    L->pt = (lab_point){ served_name(L->model, L->model_name, sizeof L->model_name), L->device, dt, "fp32", N, P, ctx };

    lab_query q;
    if (lab_sql_open(L, &q, SQL_LAB2_KV_POOL, (lab_args){ 0 })) return -1;
    lab_sql_next(&q);
    double weights = lab_col(&q, "weights_bytes"), kv_pool = lab_col(&q, "kv_pool_bytes");
    double pool_m = lab_col(&q, "pool_blocks"), running = lab_col(&q, "max_running");
    if (lab_sql_close(&q)) return -1;

    double pool = floor(KV_MB * 1048576.0 / (KV_BLOCK_SIZE * b.kv_bytes_per_token)), per_request = ceil((double)ctx / KV_BLOCK_SIZE);
    snprintf(pool_from, sizeof pool_from, "floor(%d MiB / (%d kv_bytes_per_token))", KV_MB, KV_BLOCK_SIZE);
    snprintf(kv_from, sizeof kv_from, "mem_kv_bytes / (%d pool blocks)", KV_BLOCK_SIZE);
    snprintf(running_from, sizeof running_from, "min(max_batch, pool_blocks / ceil(%d/%d))", ctx, KV_BLOCK_SIZE);
    lab_row(L, "weights_bytes", "B", b.weights_bytes, weights, "bounds weights_bytes", "counter mem_weights_bytes",
            "norms and biases are resident as f32, the calculator counts them at b_W");
    lab_row(L, "kv_bytes_per_token", "B", b.kv_bytes_per_token, kv_pool / (KV_BLOCK_SIZE * pool_m), "bounds kv_bytes_per_token", kv_from, NULL);
    lab_row(L, "pool_blocks", "blocks", pool, pool_m, pool_from, "first kv_alloc: free + seq blocks", "the engine rounds the pool up to whole blocks");
    lab_row(L, "max_running", "requests", fmin(MAX_BATCH, floor(pool / per_request)), running, running_from, "counter running, max",
            "admission promises every request its worst case (prompt + max_tokens)");
    return 0;
}
