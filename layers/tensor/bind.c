/*
 * bind.c -- layer 5: find every tensor the architecture needs by its
 * Hugging Face name and check its shape against the config.
 */
#include "layers/tensor/model.h"
#include "layers/tensor/moe.h"
#include "layers/ops/ops.h"
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { model *m; char *err; int errlen; } binder;

static const tensor *need(binder *b, const char *name, int64_t d0, int64_t d1) {
    const tensor *t = weights_find(&b->m->files, name);
    if (!t) { snprintf(b->err, b->errlen, "%s: missing tensor %s", b->m->path, name); return NULL; }
    int ndim = d1 ? 2 : 1;
    if (t->ndim != ndim || t->shape[0] != d0 || (d1 && t->shape[1] != d1)) {
        snprintf(b->err, b->errlen, "%s: tensor %s has shape [%lld%s%lld], config says [%lld%s%lld]",
                 b->m->path, name, (long long)t->shape[0], t->ndim > 1 ? ", " : "",
                 t->ndim > 1 ? (long long)t->shape[1] : 0LL, (long long)d0, d1 ? ", " : "", (long long)d1);
        return NULL;
    }
    if (t->dt == DT_I32 || (d1 && d1 % dtype_block(t->dt))) {
        snprintf(b->err, b->errlen, "%s: tensor %s has unusable dtype %s", b->m->path, name, dtype_name(t->dt));
        return NULL;
    }
    return t;
}

/* A vector converted once to f32 (norm weights, biases). */
static const float *need_vec(binder *b, const char *name, int64_t n) {
    const tensor *t = need(b, name, n, 0);
    if (!t) return NULL;
    model *m = b->m;
    float *v = malloc((size_t)n * sizeof *v);
    float **s = realloc(m->small, (size_t)(m->nsmall + 1) * sizeof *s);
    if (!v || !s) { free(v); snprintf(b->err, b->errlen, "out of memory"); return NULL; }
    m->small = s;
    m->small[m->nsmall++] = v;
    row_to_f32(v, t->data, t->dt, n);
    return v;
}

/* The backend's own copy of every matrix it wants one of (the CPU's: the
 * block-quantized ones, rows interleaved for the vector units, in
 * kernels/cpu/pack.c, for decode twice as fast). A copy replaces the
 * file's bytes: their pages are dropped at once, so the weights are in
 * memory once, and the peak is the copies plus one matrix. */
static int prepare1(const tensor *W, char *err, int errlen) {
    int rc = op_prepare_weight(W);
    if (rc > 0) weights_release(W->data, W->nbytes);
    if (rc >= 0) return 0;
    snprintf(err, errlen, "out of memory copying %s for the backend", W->name);
    return -1;
}
/* The LM head first: the largest matrix (often the embedding too) is
 * copied while nothing else is. */
static int prepare(const model *m, char *err, int errlen) {
    op_release_weights();
    /* Binding read the norm vectors through the mapping, and a kernel with
     * large folios maps the whole folio round each read (up to 2 MB): 54
     * of SmolLM2 Q4_1's 98 MB were mapped before the first copy, which
     * came on top (a 125 MB peak against 118 once loaded). Dropped here;
     * the page cache keeps them. */
    for (int i = 0; i < m->files.nfiles; i++)
        if (m->files.file[i].map) weights_release(m->files.file[i].map, m->files.file[i].size);   /* analytic: none */
    if (prepare1(m->w.lm_head, err, errlen)) return -1;
    for (int l = 0; l < m->cfg.n_layers; l++) {
        const layer_weights *L = &m->w.layer[l];
        const tensor *W[] = { L->wq, L->wk, L->wv, L->wo, L->w_gate, L->w_up, L->w_down, L->w_router, L->s_gate, L->s_up, L->s_down };
        for (size_t i = 0; i < sizeof W / sizeof W[0]; i++)
            if (W[i] && prepare1(W[i], err, errlen)) return -1;
        for (int e = 0; L->w_router && e < m->cfg.n_experts; e++)
            if (prepare1(L->e_gate[e], err, errlen) || prepare1(L->e_up[e], err, errlen) || prepare1(L->e_down[e], err, errlen)) return -1;
    }
    return 0;
}

/* A MoE layer's router, experts (their tables from *table on) and shared
 * experts, by their HF names (moe.c). */
static int bind_moe(binder *b, layer_weights *L, int l, const tensor ***table) {
    const model_config *c = &b->m->cfg;
    int64_t dim = c->dim, E = c->n_experts, hid = c->moe_hidden_dim, shared = (int64_t)c->n_shared_experts * hid;
    char name[160];
    L->e_gate = *table; L->e_up = *table + E; L->e_down = *table + 2 * E;
    *table += 3 * E;
    moe_name(c, l, 0, MOE_ROUTER, name, sizeof name);
    if (!(L->w_router = need(b, name, E, dim))) return -1;
    if (c->gating == GATE_SIGMOID && (moe_name(c, l, 0, MOE_BIAS, name, sizeof name), !(L->router_bias = need_vec(b, name, E)))) return -1;
    for (int e = 0; e < E; e++)
        if ((moe_name(c, l, e, MOE_GATE, name, sizeof name), !(L->e_gate[e] = need(b, name, hid, dim))) ||
            (moe_name(c, l, e, MOE_UP, name, sizeof name), !(L->e_up[e] = need(b, name, hid, dim))) ||
            (moe_name(c, l, e, MOE_DOWN, name, sizeof name), !(L->e_down[e] = need(b, name, dim, hid))))
            return -1;
    if (shared &&
        ((moe_name(c, l, 0, MOE_SHARED_GATE, name, sizeof name), !(L->s_gate = need(b, name, shared, dim))) ||
         (moe_name(c, l, 0, MOE_SHARED_UP, name, sizeof name), !(L->s_up = need(b, name, shared, dim))) ||
         (moe_name(c, l, 0, MOE_SHARED_DOWN, name, sizeof name), !(L->s_down = need(b, name, dim, shared)))))
        return -1;
    return 0;
}

#define NAME(fmt, ...) (snprintf(name, sizeof name, fmt, __VA_ARGS__), name)

/* The layers the weights hold: one past the highest K of "model.layers.K.". */
static long held_layers(const weights *w) {
    long n = 0;
    for (int i = 0; i < w->n; i++) {
        const char *s = w->t[i].name, *p = "model.layers.";
        char *end;
        if (strncmp(s, p, strlen(p))) continue;
        long k = strtol(s + strlen(p), &end, 10);
        if (end > s + strlen(p) && *end == '.' && k >= n) n = k < LONG_MAX ? k + 1 : k;
    }
    return n;
}

/* What the config says and the weights must agree with, checked before
 * anything is allocated by it: the layer count (a config of 1e9 layers
 * asked for 112 GB before the first missing tensor was noticed; one of 2
 * layers against a file of 4 ran silently on half the model), and the two
 * numbers the forward pass divides by or raises to a power, which make
 * every logit NaN when they are not positive (rms_norm_eps -1e30, rope_theta 0). */
static int check_config(const model *m, char *err, int errlen) {
    const model_config *c = &m->cfg;
    long held = held_layers(&m->files);
    if (held != c->n_layers) {
        snprintf(err, errlen, "%s: the config has %d layers but the weights hold %ld", m->path, c->n_layers, held);
        return -1;
    }
    if (c->kv_lora_rank > 0) {
        snprintf(err, errlen, "%s: multi-head latent attention (%s) is not supported yet", m->path, c->arch_name);
        return -1;
    }
    if (c->n_experts && !op_moe_supported()) {
        snprintf(err, errlen, "%s: a mixture of experts (%s) needs the moe kernels, which this device has not", m->path, c->arch_name);
        return -1;
    }
    if (!(c->norm_eps > 0 && c->norm_eps < 1) || !(c->rope_theta > 0 && isfinite(c->rope_theta))) {
        snprintf(err, errlen, "%s: rms_norm_eps %g must be in (0, 1) and rope_theta %g positive", m->path, c->norm_eps, c->rope_theta);
        return -1;
    }
    return 0;
}

int model_bind(model *m, char *err, int errlen) {
    binder b = { m, err, errlen };
    const model_config *c = &m->cfg;
    int64_t dim = c->dim, q_dim = (int64_t)c->n_heads * c->head_dim, kv_dim = (int64_t)c->n_kv_heads * c->head_dim;
    char name[128];
    if (check_config(m, err, errlen)) return -1;
    m->w.tok_emb = need(&b, "model.embed_tokens.weight", c->vocab_size, dim);
    m->w.final_norm = m->w.tok_emb ? need_vec(&b, "model.norm.weight", dim) : NULL;
    if (!m->w.final_norm) return -1;
    m->w.lm_head = c->tied && !weights_find(&m->files, "lm_head.weight") ? m->w.tok_emb
                                                                          : need(&b, "lm_head.weight", c->vocab_size, dim);
    if (!m->w.lm_head) return -1;
    m->w.layer = calloc((size_t)c->n_layers, sizeof *m->w.layer);
    int n_moe = 0;
    for (int l = 0; l < c->n_layers; l++) n_moe += model_layer_is_moe(c, l);
    const tensor **table = m->experts = n_moe ? calloc((size_t)n_moe * 3 * c->n_experts, sizeof *table) : NULL;
    if (!m->w.layer || (n_moe && !table)) { snprintf(err, errlen, "out of memory"); return -1; }
    for (int l = 0; l < c->n_layers; l++) {
        layer_weights *L = &m->w.layer[l];
        const char *p = "model.layers";
        if (!(L->attn_norm = need_vec(&b, NAME("%s.%d.input_layernorm.weight", p, l), dim)) ||
            !(L->wq = need(&b, NAME("%s.%d.self_attn.q_proj.weight", p, l), q_dim, dim)) ||
            !(L->wk = need(&b, NAME("%s.%d.self_attn.k_proj.weight", p, l), kv_dim, dim)) ||
            !(L->wv = need(&b, NAME("%s.%d.self_attn.v_proj.weight", p, l), kv_dim, dim)) ||
            !(L->wo = need(&b, NAME("%s.%d.self_attn.o_proj.weight", p, l), dim, q_dim)) ||
            !(L->ffn_norm = need_vec(&b, NAME("%s.%d.post_attention_layernorm.weight", p, l), dim)))
            return -1;
        if (model_layer_is_moe(c, l) ? bind_moe(&b, L, l, &table)
                                     : !(L->w_gate = need(&b, NAME("%s.%d.mlp.gate_proj.weight", p, l), c->hidden_dim, dim)) ||
                                       !(L->w_up = need(&b, NAME("%s.%d.mlp.up_proj.weight", p, l), c->hidden_dim, dim)) ||
                                       !(L->w_down = need(&b, NAME("%s.%d.mlp.down_proj.weight", p, l), dim, c->hidden_dim)))
            return -1;
        if (c->qkv_bias &&
            (!(L->bq = need_vec(&b, NAME("%s.%d.self_attn.q_proj.bias", p, l), q_dim)) ||
             !(L->bk = need_vec(&b, NAME("%s.%d.self_attn.k_proj.bias", p, l), kv_dim)) ||
             !(L->bv = need_vec(&b, NAME("%s.%d.self_attn.v_proj.bias", p, l), kv_dim))))
            return -1;
        if (c->qk_norm &&
            (!(L->q_norm = need_vec(&b, NAME("%s.%d.self_attn.q_norm.weight", p, l), c->head_dim)) ||
             !(L->k_norm = need_vec(&b, NAME("%s.%d.self_attn.k_norm.weight", p, l), c->head_dim))))
            return -1;
    }
    return prepare(m, err, errlen);
}
