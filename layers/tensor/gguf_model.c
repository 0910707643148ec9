/*
 * gguf_model.c -- load a model from a GGUF file: the config from the
 * `{arch}.*` metadata, the tensors renamed from llama.cpp's names onto
 * Hugging Face's so model_bind() finds them the same way.
 */
#include "layers/tensor/gguf.h"
#include "layers/tensor/model.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* llama.cpp name -> HF name, the part before ".weight" / ".bias". */
static const struct { const char *gguf, *hf; } TOP[] = {
    { "token_embd", "model.embed_tokens" }, { "output_norm", "model.norm" }, { "output", "lm_head" } };
static const struct { const char *gguf, *hf; } BLK[] = {
    { "attn_norm", "input_layernorm" }, { "attn_q", "self_attn.q_proj" }, { "attn_k", "self_attn.k_proj" },
    { "attn_v", "self_attn.v_proj" }, { "attn_output", "self_attn.o_proj" },
    { "attn_q_norm", "self_attn.q_norm" }, { "attn_k_norm", "self_attn.k_norm" },
    { "ffn_norm", "post_attention_layernorm" }, { "ffn_gate", "mlp.gate_proj" },
    { "ffn_up", "mlp.up_proj" }, { "ffn_down", "mlp.down_proj" } };

/* "blk.3.attn_q.weight" -> "model.layers.3.self_attn.q_proj.weight";
 * names we do not know are kept as they are. */
static char *hf_name(const char *name) {
    char out[300];
    const char *dot = strrchr(name, '.');
    int layer, skip = 0;
    snprintf(out, sizeof out, "%s", name);
    if (dot && sscanf(name, "blk.%d.%n", &layer, &skip) == 1 && skip) {
        for (size_t i = 0; i < sizeof BLK / sizeof BLK[0]; i++)
            if ((size_t)(dot - name - skip) == strlen(BLK[i].gguf) && !strncmp(name + skip, BLK[i].gguf, dot - name - skip))
                snprintf(out, sizeof out, "model.layers.%d.%s%s", layer, BLK[i].hf, dot);
    } else if (dot)
        for (size_t i = 0; i < sizeof TOP / sizeof TOP[0]; i++)
            if ((size_t)(dot - name) == strlen(TOP[i].gguf) && !strncmp(name, TOP[i].gguf, dot - name))
                snprintf(out, sizeof out, "%s%s", TOP[i].hf, dot);
    return strdup(out);
}

static const gguf_tensor_info *find_info(const gguf *g, const char *name) {
    for (int i = 0; i < g->n_tensors; i++)
        if (!strcmp(g->ti[i].name, name)) return &g->ti[i];
    return NULL;
}

/* `{arch}.{key}` as an int in [1, 1e9]; def when absent (def < 0: required). */
static int arch_int(const gguf *g, const char *arch, const char *key, int def, int *out, char *err, int errlen) {
    char k[128];
    int64_t v;
    snprintf(k, sizeof k, "%s.%s", arch, key);
    if (gguf_meta_int(g, k, &v)) {
        if (def >= 0 && !gguf_meta(g, k)) { *out = def; return 0; }
        snprintf(err, errlen, "%s: %s is %s", g->path, k, gguf_meta(g, k) ? "not an integer" : "missing"); return -1;
    }
    if (v < 1 || v > 1000000000) { snprintf(err, errlen, "%s: %s = %lld out of range", g->path, k, (long long)v); return -1; }
    *out = (int)v;
    return 0;
}

static float arch_float(const gguf *g, const char *arch, const char *key, float def) {
    char k[128];
    double v;
    snprintf(k, sizeof k, "%s.%s", arch, key);
    return gguf_meta_float(g, k, &v) ? def : (float)v;
}

static void add_stop(model_config *c, const gguf *g, const char *key) {
    int64_t id;
    if (gguf_meta_int(g, key, &id) || c->n_stop == MAX_STOP_IDS) return;
    for (int i = 0; i < c->n_stop; i++) if (c->stop_ids[i] == id) return;
    c->stop_ids[c->n_stop++] = (int)id;
}

static int gguf_config(model_config *c, const gguf *g, char *err, int errlen) {
    /* How llama.cpp rotates each arch (llama_model_rope_type): llama is
     * "NORM", adjacent pairs, because its converter permuted the Q/K rows;
     * qwen2/qwen3 are "NEOX", the two halves, as in HF. */
    static const struct { const char *name; enum arch a; enum rope_style rope; } ARCHS[] = {
        { "llama", ARCH_LLAMA, ROPE_ADJACENT }, { "qwen2", ARCH_QWEN2, ROPE_HALF }, { "qwen3", ARCH_QWEN3, ROPE_HALF } };
    size_t len;
    const char *a = gguf_meta_str(g, "general.architecture", &len);
    if (!a) { snprintf(err, errlen, "%s: general.architecture is missing", g->path); return -1; }
    int found = 0;
    for (size_t i = 0; i < sizeof ARCHS / sizeof ARCHS[0]; i++)
        if (len == strlen(ARCHS[i].name) && !memcmp(a, ARCHS[i].name, len)) {
            c->arch = ARCHS[i].a; c->arch_name = ARCHS[i].name; c->rope = ARCHS[i].rope; found = 1;
        }
    if (!found) { snprintf(err, errlen, "%s: general.architecture %.*s is not supported (llama, qwen2, qwen3)", g->path, (int)(len < 40 ? len : 40), a); return -1; }
    const char *an = c->arch_name;
    if (arch_int(g, an, "embedding_length", -1, &c->dim, err, errlen) ||
        arch_int(g, an, "feed_forward_length", -1, &c->hidden_dim, err, errlen) ||
        arch_int(g, an, "block_count", -1, &c->n_layers, err, errlen) ||
        arch_int(g, an, "attention.head_count", -1, &c->n_heads, err, errlen) ||
        arch_int(g, an, "attention.head_count_kv", c->n_heads, &c->n_kv_heads, err, errlen) ||
        arch_int(g, an, "attention.key_length", c->dim / c->n_heads, &c->head_dim, err, errlen) ||
        arch_int(g, an, "context_length", 2048, &c->max_seq_len, err, errlen))
        return -1;
    int rot;
    if (arch_int(g, an, "rope.dimension_count", c->head_dim, &rot, err, errlen)) return -1;
    if (rot != c->head_dim || c->head_dim % 2 || c->n_heads % c->n_kv_heads) {
        snprintf(err, errlen, "%s: %d heads, %d kv heads, head_dim %d, rope over %d dims: not supported", g->path,
                 c->n_heads, c->n_kv_heads, c->head_dim, rot);
        return -1;
    }
    char k[128];
    snprintf(k, sizeof k, "%s.rope.scaling.type", an);
    const char *scaling = gguf_meta_str(g, k, &len);
    if (scaling && !(len == 4 && !memcmp(scaling, "none", 4))) { snprintf(err, errlen, "%s: %s: rope scaling is not supported", g->path, k); return -1; }
    c->rope_theta = arch_float(g, an, "rope.freq_base", 10000.0f);
    c->norm_eps = arch_float(g, an, "attention.layer_norm_rms_epsilon", 1e-5f);
    c->qkv_bias = c->arch == ARCH_QWEN2;
    c->qk_norm = c->arch == ARCH_QWEN3;

    const gguf_tensor_info *emb = find_info(g, "token_embd.weight");
    uint64_t n_tokens = 0;
    if (emb && emb->ndim == 2) c->vocab_size = (int)emb->ne[1];
    else if (gguf_meta_array(g, "tokenizer.ggml.tokens", GGUF_STRING, &n_tokens) && n_tokens < 1u << 30) c->vocab_size = (int)n_tokens;
    else { snprintf(err, errlen, "%s: no token_embd.weight and no tokenizer.ggml.tokens: vocabulary size unknown", g->path); return -1; }
    c->tied = !find_info(g, "output.weight");
    int64_t bos;
    c->bos_id = gguf_meta_int(g, "tokenizer.ggml.bos_token_id", &bos) ? -1 : (int)bos;
    add_stop(c, g, "tokenizer.ggml.eos_token_id");
    add_stop(c, g, "tokenizer.ggml.eot_token_id");
    return 0;
}

/* Each tensor under its HF name, shape reversed into row-major. */
static int add_tensors(weights *w, const gguf *g, char *err, int errlen) {
    int first = w->n;
    for (int i = 0; i < g->n_tensors; i++) {
        const gguf_tensor_info *ti = &g->ti[i];
        tensor t = { .dt = ti->dt, .ndim = ti->ndim, .data = g->base + g->data_start + ti->offset, .nbytes = ti->nbytes };
        for (int d = 0; d < ti->ndim; d++) t.shape[d] = (int64_t)ti->ne[ti->ndim - 1 - d];
        if (!(t.name = hf_name(ti->name)) || weights_add(w, t)) {
            free((char *)t.name); snprintf(err, errlen, "%s: out of memory", g->path); return -1;
        }
    }
    return weights_check(w, first, g->base, g->path, err, errlen);
}

int model_load_gguf(model *m, const char *file, char *err, int errlen) {
    const void *base;
    size_t size;
    gguf g;
    if (weights_map_file(&m->files, file, &base, &size, err, errlen)) return -1;
    int rc = gguf_parse(&g, file, base, size, err, errlen);
    if (rc == 0) rc = gguf_config(&m->cfg, &g, err, errlen);
    if (rc == 0) rc = add_tensors(&m->files, &g, err, errlen);
    if (rc == 0 && !(m->tokenizer_path = strdup(file))) { snprintf(err, errlen, "%s: out of memory", file); rc = -1; }
    if (rc == 0) weights_release(base, g.data_start);   /* the metadata, parsed: the tokenizer maps its own */
    gguf_close(&g);
    return rc;
}
