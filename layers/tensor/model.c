/*
 * model.c -- layer 5: load a checkpoint and bind its tensors to the model.
 */
#include "layers/tensor/model.h"
#include "layers/common/file.h"
#include "layers/ops/ops.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char *join(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static int file_exists(const char *p) { struct stat st; return stat(p, &st) == 0 && S_ISREG(st.st_mode); }

/* An int field; -1 when absent. `need` makes absence an error. */
static int get_int(cJSON *j, const char *key, int need, const char *path, int *out, char *err, int errlen) {
    cJSON *v = cJSON_GetObjectItem(j, key);
    if (!cJSON_IsNumber(v)) {
        if (need) { snprintf(err, errlen, "%s: missing or non-numeric field %s", path, key); return -1; }
        *out = -1; return 0;
    }
    if (v->valuedouble < 0 || v->valuedouble > 1e9) { snprintf(err, errlen, "%s: field %s out of range", path, key); return -1; }
    *out = v->valueint;
    return 0;
}

static void add_stop_ids(model_config *c, cJSON *v) {
    cJSON *e;
    if (cJSON_IsNumber(v)) { if (c->n_stop < MAX_STOP_IDS) c->stop_ids[c->n_stop++] = v->valueint; return; }
    cJSON_ArrayForEach(e, v) add_stop_ids(c, e);
}

static int get_bool(cJSON *j, const char *key, int dflt) {
    cJSON *v = cJSON_GetObjectItem(j, key);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : dflt;
}

/* The MoE fields, each under its family's name (model.h); the defaults
 * are transformers' own for a field a file leaves out. */
static int parse_moe(model_config *c, cJSON *j, const char *path, char *err, int errlen) {
    c->sparse_step = 1; c->n_group = c->topk_group = 1; c->routed_scaling = 1;
    if (c->arch != ARCH_QWEN3_MOE && c->arch != ARCH_MIXTRAL && c->arch != ARCH_DEEPSEEK_V3) return 0;
    static const char *const EXPERTS[] = { "num_experts", "num_local_experts", "n_routed_experts" };
    int e = -1, k = 2, shared = 0, step = 1, group = 1, topk_group = 1;
    for (int i = 0; i < 3 && e < 0; i++)
        if (get_int(j, EXPERTS[i], 0, path, &e, err, errlen)) return -1;
    if (get_int(j, "num_experts_per_tok", 0, path, &k, err, errlen)) return -1;
    int moe_hidden = c->hidden_dim;   /* mixtral: each expert is an FFN of intermediate_size */
    if (c->arch != ARCH_MIXTRAL && get_int(j, "moe_intermediate_size", 1, path, &moe_hidden, err, errlen)) return -1;
    if (c->arch == ARCH_QWEN3_MOE && get_int(j, "decoder_sparse_step", 0, path, &step, err, errlen)) return -1;
    if (c->arch == ARCH_DEEPSEEK_V3 &&   /* its first_k_dense_replace: parse_mla */
        (get_int(j, "n_shared_experts", 0, path, &shared, err, errlen) ||
         get_int(j, "n_group", 0, path, &group, err, errlen) || get_int(j, "topk_group", 0, path, &topk_group, err, errlen)))
        return -1;
    /* get_int gives -1 for a field that is absent or null: the default then */
    c->n_experts = e < 0 ? 8 : e;
    c->n_experts_per_tok = k < 0 ? 2 : k;
    c->moe_hidden_dim = moe_hidden;
    c->n_shared_experts = shared < 0 ? 0 : shared;
    c->sparse_step = step < 0 ? 1 : step;
    c->n_group = group < 0 ? 1 : group;
    c->topk_group = topk_group < 0 ? 1 : topk_group;
    c->norm_topk_prob = c->arch == ARCH_MIXTRAL || get_bool(j, "norm_topk_prob", c->arch == ARCH_DEEPSEEK_V3);
    c->gating = c->arch == ARCH_DEEPSEEK_V3 ? GATE_SIGMOID : GATE_SOFTMAX;
    cJSON *v = cJSON_GetObjectItem(j, "routed_scaling_factor"), *only = cJSON_GetObjectItem(j, "mlp_only_layers"), *l;
    if (c->arch == ARCH_DEEPSEEK_V3) c->routed_scaling = cJSON_IsNumber(v) ? (float)v->valuedouble : 1.0f;
    cJSON_ArrayForEach(l, only) {
        if (!cJSON_IsNumber(l) || l->valueint < 0 || l->valueint >= MAX_LAYERS_MASK) {
            snprintf(err, errlen, "%s: mlp_only_layers holds a layer outside 0..%d", path, MAX_LAYERS_MASK - 1);
            return -1;
        }
        c->mlp_only[l->valueint / 8] |= (unsigned char)(1u << l->valueint % 8);
    }
    if (c->n_experts < 1 || c->n_experts_per_tok < 1 || c->n_experts_per_tok > c->n_experts || c->moe_hidden_dim < 1 ||
        c->sparse_step < 1 || c->n_group < 1 || c->n_experts % c->n_group || c->topk_group < 1 || c->topk_group > c->n_group ||
        c->n_experts_per_tok > c->topk_group * (c->n_experts / c->n_group) || !(c->routed_scaling > 0) || isinf(c->routed_scaling)) {
        snprintf(err, errlen, "%s: inconsistent experts (%d experts, top %d, moe_intermediate_size %d, %d groups, top %d groups, "
                 "routed_scaling_factor %g)", path, c->n_experts, c->n_experts_per_tok, c->moe_hidden_dim, c->n_group, c->topk_group,
                 c->routed_scaling);
        return -1;
    }
    if (c->n_experts > MAX_EXPERTS || c->n_experts_per_tok > MAX_EXPERTS_PER_TOK || (int64_t)c->n_layers * c->n_experts > MAX_EXPERT_LAYERS) {
        snprintf(err, errlen, "%s: %d experts, top %d, over %d layers: hipath takes at most %d experts, top %d, and %d over all layers",
                 path, c->n_experts, c->n_experts_per_tok, c->n_layers, MAX_EXPERTS, MAX_EXPERTS_PER_TOK, MAX_EXPERT_LAYERS);
        return -1;
    }
    return 0;
}

/* A number field of o, or def when absent or null. */
static double num(cJSON *o, const char *key, double def) {
    cJSON *v = cJSON_GetObjectItem(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : def;
}

/* YaRN's mscale: 0.1 m ln(s) + 1 past s = 1. */
static double yarn_mscale(double s, double m) { return s <= 1 ? 1 : 0.1 * m * log(s) + 1; }

/* rope_scaling (or transformers 5's rope_parameters) of type yarn, as
 * DeepSeek-V3 and transformers compute it (modeling_rope_utils.py,
 * _compute_yarn_parameters): each rotated pair's frequency blends the
 * plain one (fast dimensions: extrapolated) with it over factor (slow
 * ones: interpolated) along a ramp between the dimensions that turn
 * beta_fast and beta_slow times in the original context; the softmax
 * scale gains mscale(factor, mscale_all_dim)^2. Only an attention_factor
 * of 1 (mscale = mscale_all_dim, as DeepSeek's) is run: others scale
 * cos and sin, which hipath's RoPE does not. Anything else: plain RoPE
 * in the config, refused by a real load (model_load_hf). */
static void parse_yarn(model_config *c, cJSON *j) {
    cJSON *s = cJSON_GetObjectItem(j, "rope_scaling"), *t;
    if (!cJSON_IsObject(s)) s = cJSON_GetObjectItem(j, "rope_parameters");
    if (!(t = cJSON_GetObjectItem(s, "type"))) t = cJSON_GetObjectItem(s, "rope_type");
    int d = c->qk_rope_head_dim, half = d / 2;
    double f = num(s, "factor", 0), orig = num(s, "original_max_position_embeddings", 0), base = c->rope_theta;
    if (!cJSON_IsString(t) || strcmp(t->valuestring, "yarn") || !(f > 0) || !(orig > 0) || half > MAX_ROPE_HALF) return;
    double m = num(s, "mscale", 0), m_all = num(s, "mscale_all_dim", 0);
    double af = num(s, "attention_factor", m && m_all ? yarn_mscale(f, m) / yarn_mscale(f, m_all) : yarn_mscale(f, 1));
    if (fabs(af - 1) > 1e-6) return;
    /* the dimension that turns r times in orig positions */
    double lo = d * log(orig / (num(s, "beta_fast", 32) * 2 * M_PI)) / (2 * log(base)),
           hi = d * log(orig / (num(s, "beta_slow", 1) * 2 * M_PI)) / (2 * log(base));
    if (!cJSON_IsFalse(cJSON_GetObjectItem(s, "truncate"))) lo = floor(lo), hi = ceil(hi);
    lo = fmax(lo, 0), hi = fmin(hi, d - 1);
    if (lo == hi) hi += 0.001;
    for (int i = 0; i < half; i++) {
        float plain = 1 / powf((float)base, (float)(2 * i) / d), ramp = fminf(fmaxf((float)((i - lo) / (hi - lo)), 0), 1);
        c->rope_inv_freq[i] = plain / (float)f * ramp + plain * (1 - ramp);   /* float, as transformers */
    }
    if (m_all) c->mla_scale *= (float)(yarn_mscale(f, m_all) * yarn_mscale(f, m_all));
    c->rope_yarn = 1;
}

/* deepseek_v3's attention, MLA: the latent ranks and the heads' parts.
 * Every head has its own K and V (n_kv_heads = n_heads), a query and key
 * of qk_nope + qk_rope dims; first_k_dense_replace as transformers
 * defaults it (3). */
static int parse_mla(model_config *c, cJSON *j, const char *path, char *err, int errlen) {
    if (get_int(j, "kv_lora_rank", 1, path, &c->kv_lora_rank, err, errlen) ||
        get_int(j, "q_lora_rank", 0, path, &c->q_lora_rank, err, errlen) ||
        get_int(j, "qk_nope_head_dim", 1, path, &c->qk_nope_head_dim, err, errlen) ||
        get_int(j, "qk_rope_head_dim", 1, path, &c->qk_rope_head_dim, err, errlen) ||
        get_int(j, "v_head_dim", 1, path, &c->v_head_dim, err, errlen) ||
        get_int(j, "first_k_dense_replace", 0, path, &c->first_dense_layers, err, errlen))
        return -1;
    if (c->q_lora_rank < 0) c->q_lora_rank = 0;   /* null: q_proj */
    if (c->first_dense_layers < 0) c->first_dense_layers = 3;
    if (!c->kv_lora_rank || !c->qk_rope_head_dim || !c->v_head_dim) {
        snprintf(err, errlen, "%s: kv_lora_rank %d, qk_rope_head_dim %d and v_head_dim %d must be positive", path,
                 c->kv_lora_rank, c->qk_rope_head_dim, c->v_head_dim);
        return -1;
    }
    if (cJSON_IsTrue(cJSON_GetObjectItem(j, "attention_bias"))) { snprintf(err, errlen, "%s: attention_bias is not supported", path); return -1; }
    c->n_kv_heads = c->n_heads;
    c->head_dim = c->qk_nope_head_dim + c->qk_rope_head_dim;
    c->mla_scale = 1 / sqrtf((float)c->head_dim);
    return 0;
}

/* Is RoPE scaled in a way the engine does not compute? */
static int rope_unsupported(const model_config *c, cJSON *j) {
    cJSON *scaling = cJSON_GetObjectItem(j, "rope_scaling"), *type = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "rope_parameters"), "rope_type");
    return !c->rope_yarn && ((scaling && !cJSON_IsNull(scaling)) || (cJSON_IsString(type) && strcmp(type->valuestring, "default")));
}

static int parse_config(model_config *c, cJSON *j, const char *path, char *err, int errlen) {
    static const struct { const char *hf, *name; enum arch a; } ARCHS[] = {
        { "LlamaForCausalLM", "llama", ARCH_LLAMA },
        { "Qwen2ForCausalLM", "qwen2", ARCH_QWEN2 },
        { "Qwen3ForCausalLM", "qwen3", ARCH_QWEN3 },
        { "Qwen3MoeForCausalLM", "qwen3_moe", ARCH_QWEN3_MOE },
        { "MixtralForCausalLM", "mixtral", ARCH_MIXTRAL },
        { "DeepseekV3ForCausalLM", "deepseek_v3", ARCH_DEEPSEEK_V3 } };
    cJSON *archs = cJSON_GetObjectItem(j, "architectures");
    const char *a = cJSON_IsArray(archs) && cJSON_IsString(cJSON_GetArrayItem(archs, 0))
                    ? cJSON_GetArrayItem(archs, 0)->valuestring : "(none)";
    int found = 0;
    for (size_t i = 0; i < sizeof ARCHS / sizeof ARCHS[0]; i++)
        if (!strcmp(a, ARCHS[i].hf)) { c->arch = ARCHS[i].a; c->arch_name = ARCHS[i].name; found = 1; }
    if (!found) {
        snprintf(err, errlen, "%s: architecture %s is not supported (llama, qwen2, qwen3, qwen3_moe, mixtral, deepseek_v3)", path, a);
        return -1;
    }
    if (get_int(j, "hidden_size", 1, path, &c->dim, err, errlen) ||
        get_int(j, "intermediate_size", 1, path, &c->hidden_dim, err, errlen) ||
        get_int(j, "num_hidden_layers", 1, path, &c->n_layers, err, errlen) ||
        get_int(j, "num_attention_heads", 1, path, &c->n_heads, err, errlen) ||
        get_int(j, "vocab_size", 1, path, &c->vocab_size, err, errlen) ||
        get_int(j, "num_key_value_heads", 0, path, &c->n_kv_heads, err, errlen) ||
        get_int(j, "head_dim", 0, path, &c->head_dim, err, errlen) ||
        get_int(j, "max_position_embeddings", 0, path, &c->max_seq_len, err, errlen) ||
        get_int(j, "bos_token_id", 0, path, &c->bos_id, err, errlen))
        return -1;
    if (c->n_kv_heads < 0) c->n_kv_heads = c->n_heads;
    if (c->max_seq_len < 0) c->max_seq_len = 2048;
    if (c->head_dim < 0) c->head_dim = c->n_heads ? c->dim / c->n_heads : 0;
    if (c->arch == ARCH_DEEPSEEK_V3 && parse_mla(c, j, path, err, errlen)) return -1;
    if (!c->dim || !c->n_heads || !c->n_kv_heads || c->n_heads % c->n_kv_heads || !c->head_dim || !c->vocab_size || !c->n_layers || !c->hidden_dim) {
        snprintf(err, errlen, "%s: inconsistent sizes (hidden %d, heads %d, kv heads %d, head_dim %d)", path, c->dim, c->n_heads, c->n_kv_heads, c->head_dim);
        return -1;
    }
    int roped = c->kv_lora_rank ? c->qk_rope_head_dim : c->head_dim;
    if (roped % 2) { snprintf(err, errlen, "%s: the roped head dim %d is odd; RoPE needs pairs", path, roped); return -1; }
    cJSON *v = cJSON_GetObjectItem(j, "rope_theta");
    if (!cJSON_IsNumber(v)) v = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "rope_parameters"), "rope_theta");   /* transformers 5 */
    c->rope_theta = cJSON_IsNumber(v) ? (float)v->valuedouble : 10000.0f;
    if (c->kv_lora_rank) parse_yarn(c, j);
    if (c->kv_lora_rank && !(c->mla_scale > 0 && isfinite(c->mla_scale))) {   /* yarn's mscale^2 past a float's range */
        snprintf(err, errlen, "%s: the attention's softmax scale %g (yarn's mscale_all_dim) is not a positive float", path, c->mla_scale);
        return -1;
    }
    v = cJSON_GetObjectItem(j, "rms_norm_eps");
    c->norm_eps = cJSON_IsNumber(v) ? (float)v->valuedouble : 1e-6f;
    v = cJSON_GetObjectItem(j, "tie_word_embeddings");
    c->tied = cJSON_IsBool(v) ? cJSON_IsTrue(v) : 0;
    c->qkv_bias = c->arch == ARCH_QWEN2;
    c->qk_norm = c->arch == ARCH_QWEN3 || c->arch == ARCH_QWEN3_MOE;
    /* deepseek_v3 rotates adjacent pairs unless rope_interleave is false
     * (transformers' apply_rotary_pos_emb_interleave; DeepSeek's own code
     * permutes q_pe and k_pe to halves: the same rotation) */
    v = cJSON_GetObjectItem(j, "rope_interleave");
    c->rope = c->arch == ARCH_DEEPSEEK_V3 && !cJSON_IsFalse(v) ? ROPE_ADJACENT : ROPE_HALF;
    if (parse_moe(c, j, path, err, errlen)) return -1;
    v = cJSON_GetObjectItem(j, "torch_dtype");
    if (!cJSON_IsString(v)) v = cJSON_GetObjectItem(j, "dtype");
    const char *td = cJSON_IsString(v) ? v->valuestring : "";
    c->torch_dtype = !strcmp(td, "bfloat16") ? DT_BF16 : !strcmp(td, "float16") ? DT_F16 : DT_F32;
    add_stop_ids(c, cJSON_GetObjectItem(j, "eos_token_id"));
    return 0;
}

int model_config_load(model_config *c, const char *config_json_path, char *err, int errlen) {
    memset(c, 0, sizeof *c);
    cJSON *j = json_read(config_json_path, FILE_SMALL, err, errlen);
    int rc = j ? parse_config(c, j, config_json_path, err, errlen) : -1;
    cJSON_Delete(j);
    return rc;
}

static int load_shards(model *m, const char *dir, char *err, int errlen) {
    char *single = join(dir, "model.safetensors"), *index = join(dir, "model.safetensors.index.json");
    int rc = -1;
    if (file_exists(single)) rc = safetensors_add(&m->files, single, err, errlen);
    else if (file_exists(index)) {
        cJSON *j = json_read(index, FILE_SMALL, err, errlen), *map = j ? cJSON_GetObjectItem(j, "weight_map") : NULL, *e;
        if (j && !cJSON_IsObject(map)) snprintf(err, errlen, "%s: missing weight_map", index);
        else if (j) {
            rc = 0;
            cJSON_ArrayForEach(e, map) {    /* each shard once, in order of first mention */
                if (!cJSON_IsString(e) || strchr(e->valuestring, '/')) { snprintf(err, errlen, "%s: bad shard name for %s", index, e->string); rc = -1; break; }
                char *p = join(dir, e->valuestring);
                int seen = 0;
                for (int i = 0; i < m->files.nfiles; i++) seen |= !strcmp(m->files.file[i].path, p);
                if (!seen) rc = safetensors_add(&m->files, p, err, errlen);
                free(p);
                if (rc) break;
            }
        }
        cJSON_Delete(j);
    } else snprintf(err, errlen, "%s: no model.safetensors or model.safetensors.index.json", dir);
    free(single); free(index);
    return rc;
}

int model_load_hf(model *m, const char *dir, char *err, int errlen) {
    char *cfg_path = join(dir, "config.json"), *gen_path = join(dir, "generation_config.json"),
         *tok_path = join(dir, "tokenizer.json");
    int rc = -1;
    cJSON *j = json_read(cfg_path, FILE_SMALL, err, errlen);
    /* The shapes of a rope-scaled model are fine for the calculator and
     * analytic runs, but the engine computes plain RoPE and deepseek_v3's
     * yarn only: refuse to run another rather than be wrong. */
    int ok = j && parse_config(&m->cfg, j, cfg_path, err, errlen) == 0;
    if (ok && rope_unsupported(&m->cfg, j)) {
        snprintf(err, errlen, "%s: rope_scaling is not supported (only deepseek_v3's yarn, with mscale = mscale_all_dim)", cfg_path);
        ok = 0;
    }
    if (ok) {
        if (file_exists(gen_path)) {
            cJSON *g = json_read(gen_path, FILE_SMALL, err, errlen);
            if (g) add_stop_ids(&m->cfg, cJSON_GetObjectItem(g, "eos_token_id"));
            cJSON_Delete(g);
        }
        if (file_exists(tok_path)) { m->tokenizer_path = tok_path; tok_path = NULL; }
        rc = load_shards(m, dir, err, errlen);
    }
    cJSON_Delete(j);
    free(cfg_path); free(gen_path); free(tok_path);
    return rc;
}

int model_load(model *m, const char *path, char *err, int errlen) {
    memset(m, 0, sizeof *m);
    m->path = strdup(path);
    size_t n = strlen(path);
    int rc = n > 5 && !strcmp(path + n - 5, ".gguf") ? model_load_gguf(m, path, err, errlen)
                                                    : model_load_hf(m, path, err, errlen);
    if (rc == 0) rc = model_bind(m, err, errlen);
    if (rc) model_free(m);
    return rc;
}

void model_free(model *m) {
    op_release_weights();
    for (int i = 0; i < m->nsmall; i++) free(m->small[i]);
    free(m->small);
    free(m->w.layer);
    free(m->experts);
    weights_free(&m->files);
    free(m->path);
    free(m->tokenizer_path);
    memset(m, 0, sizeof *m);
}

int model_kv_row(const model_config *c, int *planes) {
    *planes = c->kv_lora_rank ? 1 : 2;
    return c->kv_lora_rank ? c->kv_lora_rank + c->qk_rope_head_dim : c->n_kv_heads * c->head_dim;
}

size_t model_kv_token_bytes(const model_config *c, int elem_bytes) {
    int planes, row = model_kv_row(c, &planes);
    return (size_t)planes * c->n_layers * row * elem_bytes;
}
