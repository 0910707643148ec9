/*
 * analytic.c -- layer 5 without numbers: a model built from config.json
 * alone. Every tensor has its name, shape and dtype but no data, so a 28 GB
 * model costs a few MB of host memory; the kernels of an analytic device
 * only report their cost (docs/timing.md, "Analytic mode").
 */
#include "layers/tensor/model.h"
#include "layers/tensor/moe.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The calculator's dtype names (hipath bounds --dtype) as stored tensors. */
static int weight_dtype(const char *name, dtype *dt) {
    static const struct { const char *name; dtype dt; } D[] = {
        { "fp32", DT_F32 }, { "fp16", DT_F16 }, { "bf16", DT_BF16 }, { "int8", DT_Q8_0 }, { "q4_0", DT_Q4_0 }, { "q4_1", DT_Q4_1 } };
    for (size_t i = 0; i < sizeof D / sizeof *D; i++)
        if (!strcmp(name, D[i].name)) { *dt = D[i].dt; return 0; }
    return -1;
}

/* Add tensor `name` [d0] or [d0, d1] of dtype dt pointing at data. */
static int add(model *m, const char *name, dtype dt, int64_t d0, int64_t d1, const void *data) {
    tensor t = { .name = strdup(name), .dt = dt, .ndim = d1 ? 2 : 1, .shape = { d0, d1 }, .data = data,
                 .nbytes = dtype_row_bytes(dt, d1 ? d1 : d0) * (size_t)(d1 ? d0 : 1) };
    if (!t.name || weights_add(&m->files, t)) { free((char *)t.name); return -1; }
    if (d1) m->files.file[0].size += t.nbytes;
    return 0;
}

/* Layer l's router, experts and shared experts (moe.h's names). The
 * router stays in the weights' dtype, as vLLM loads it. */
static int add_moe(model *m, int l, dtype dt, const float *zeros) {
    const model_config *c = &m->cfg;
    int64_t dim = c->dim, hid = c->moe_hidden_dim, shared = (int64_t)c->n_shared_experts * hid;
    char n[160];
    int rc = 0;
    moe_name(c, l, 0, MOE_ROUTER, n, sizeof n);
    rc |= add(m, n, dt, c->n_experts, dim, NULL);
    if (c->gating == GATE_SIGMOID) {
        moe_name(c, l, 0, MOE_BIAS, n, sizeof n);
        rc |= add(m, n, DT_F32, c->n_experts, 0, zeros);
    }
    for (int e = -1; e < c->n_experts && !rc; e++)   /* e = -1: the shared experts' FFN */
        for (int part = 0; part < 3 && (e >= 0 || shared); part++) {
            int down = part == 2;
            int64_t h = e < 0 ? shared : hid;
            moe_name(c, l, e, (enum moe_part)((e < 0 ? MOE_SHARED_GATE : MOE_GATE) + part), n, sizeof n);
            rc |= add(m, n, dt, down ? dim : h, down ? h : dim, NULL);
        }
    return rc;
}

/* The KV cache's element: 4, 2 or 1 bytes; 0 for a name it does not know. */
static int kv_elem_bytes(const char *name) {
    static const struct { const char *name; int bytes; } K[] = { { "fp32", 4 }, { "fp16", 2 }, { "bf16", 2 }, { "fp8", 1 } };
    for (size_t i = 0; i < sizeof K / sizeof *K; i++)
        if (!strcmp(name, K[i].name)) return K[i].bytes;
    return 0;
}

int model_load_analytic(model *m, const char *config_json, const char *dtype_str, const char *kv_dtype, char *err, int errlen) {
    memset(m, 0, sizeof *m);
    dtype dt;
    if (weight_dtype(dtype_str, &dt)) { snprintf(err, errlen, "--dtype %s: expected fp32, fp16, bf16, int8, q4_0 or q4_1", dtype_str); return -1; }
    int kv_bytes = kv_dtype ? kv_elem_bytes(kv_dtype) : 4;
    if (!kv_bytes) { snprintf(err, errlen, "KV dtype %s: expected fp32, fp16, bf16 or fp8", kv_dtype); return -1; }
    if (model_config_load(&m->cfg, config_json, err, errlen)) return -1;
    const model_config *c = &m->cfg;
    int64_t dim = c->dim, hid = c->hidden_dim, q = (int64_t)c->n_heads * c->head_dim, kv = (int64_t)c->n_kv_heads * c->head_dim;
    if (dim % dtype_block(dt) || hid % dtype_block(dt) || q % dtype_block(dt) || (c->n_experts && c->moe_hidden_dim % dtype_block(dt))) {
        snprintf(err, errlen, "%s: sizes are not multiples of %s's block of %d", config_json, dtype_str, dtype_block(dt));
        return -1;
    }
    /* The norm weights and biases get real zeros (model_bind converts them);
     * the matrices, one "file" of weights that is never allocated. */
    int64_t vmax = dim > q ? dim : q;
    if (c->n_experts > vmax) vmax = c->n_experts;   /* e_score_correction_bias */
    float *zeros = calloc((size_t)vmax, sizeof *zeros);
    m->small = malloc(sizeof *m->small);
    m->path = strdup(config_json);
    m->files.file[0].path = strdup("analytic weights (shapes only, not allocated)");
    if (!zeros || !m->small || !m->path || !m->files.file[0].path) { free(zeros); model_free(m); snprintf(err, errlen, "out of memory"); return -1; }
    m->small[m->nsmall++] = zeros;
    m->files.nfiles = 1;
    char n[128];
    int rc = add(m, "model.embed_tokens.weight", dt, c->vocab_size, dim, NULL) | add(m, "model.norm.weight", DT_F32, dim, 0, zeros);
    if (!c->tied) rc |= add(m, "lm_head.weight", dt, c->vocab_size, dim, NULL);
    for (int l = 0; l < c->n_layers && !rc; l++) {
        int moe = model_layer_is_moe(c, l);
        const struct { const char *name; int64_t d0, d1; int on; } T[] = {
            { "input_layernorm.weight", dim, 0, 1 }, { "post_attention_layernorm.weight", dim, 0, 1 },
            { "self_attn.q_proj.weight", q, dim, 1 }, { "self_attn.k_proj.weight", kv, dim, 1 },
            { "self_attn.v_proj.weight", kv, dim, 1 }, { "self_attn.o_proj.weight", dim, q, 1 },
            { "mlp.gate_proj.weight", hid, dim, !moe }, { "mlp.up_proj.weight", hid, dim, !moe }, { "mlp.down_proj.weight", dim, hid, !moe },
            { "self_attn.q_proj.bias", q, 0, c->qkv_bias }, { "self_attn.k_proj.bias", kv, 0, c->qkv_bias },
            { "self_attn.v_proj.bias", kv, 0, c->qkv_bias },
            { "self_attn.q_norm.weight", c->head_dim, 0, c->qk_norm }, { "self_attn.k_norm.weight", c->head_dim, 0, c->qk_norm } };
        for (size_t i = 0; i < sizeof T / sizeof *T; i++)
            if (T[i].on) {
                snprintf(n, sizeof n, "model.layers.%d.%s", l, T[i].name);
                rc |= add(m, n, T[i].d1 ? dt : DT_F32, T[i].d0, T[i].d1, T[i].d1 ? NULL : zeros);
            }
        if (moe) rc |= add_moe(m, l, dt, zeros);
    }
    if (rc) { model_free(m); snprintf(err, errlen, "out of memory"); return -1; }
    /* A tokenizer.json beside the config is used; otherwise a placeholder. */
    const char *slash = strrchr(config_json, '/');
    int dl = slash ? (int)(slash - config_json) : 1;
    char tok[4096];
    struct stat st;
    snprintf(tok, sizeof tok, "%.*s/tokenizer.json", dl, slash ? config_json : ".");
    if (stat(tok, &st) == 0 && S_ISREG(st.st_mode)) m->tokenizer_path = strdup(tok);
    if (model_bind(m, err, errlen)) { model_free(m); return -1; }
    m->kv_bytes = kv_bytes;
    return 0;
}
