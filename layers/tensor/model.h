/*
 * model.h -- layer 5: a decoder-only transformer (llama, qwen2, qwen3, and
 * the mixture-of-experts qwen3_moe, mixtral, deepseek_v3 with its latent attention):
 * its configuration, its weights, and loading them from a checkpoint.
 */
#ifndef HIPATH_MODEL_H
#define HIPATH_MODEL_H

#include "layers/tensor/weights.h"

enum arch { ARCH_LLAMA, ARCH_QWEN2, ARCH_QWEN3, ARCH_QWEN3_MOE, ARCH_MIXTRAL, ARCH_DEEPSEEK_V3 };
/* How RoPE pairs the dimensions of a head: HF checkpoints rotate the two
 * halves (i, i + d/2); llama.cpp's GGUF permutes Q/K rows so pairs are
 * adjacent (2i, 2i + 1). Using the wrong one gives fluent nonsense. */
enum rope_style { ROPE_HALF, ROPE_ADJACENT };

#define MAX_STOP_IDS 8
#define MAX_LAYERS_MASK 256   /* qwen3_moe's mlp_only_layers: layer numbers below this */
/* Each expert is three tensors a layer, named and bound one by one: past
 * these a config would hold the loader for hours (real models: 512 experts,
 * top 10, 23,424 of them over the layers at most). */
#define MAX_EXPERTS (1 << 16)
#define MAX_EXPERTS_PER_TOK 1024
#define MAX_EXPERT_LAYERS (1 << 20)   /* n_layers x n_experts */
enum gating { GATE_SOFTMAX, GATE_SIGMOID };
#define MAX_ROPE_HALF 128   /* yarn's frequency table: rotated pairs */

typedef struct {
    enum arch arch;
    const char *arch_name;  /* "llama", "qwen2", "qwen3", "qwen3_moe", "mixtral", "deepseek_v3" */
    int dim;                /* hidden_size */
    int hidden_dim;         /* intermediate_size (FFN) */
    int n_layers;
    int n_heads;
    int n_kv_heads;         /* MLA: n_heads (each head has its own K and V, all from one latent) */
    int head_dim;           /* MLA: a query's and key's, qk_nope_head_dim + qk_rope_head_dim */
    /* MLA, multi-head latent attention (deepseek_v3; 0 = ordinary attention):
     * the KV cache holds one latent c_kv [kv_lora_rank] and one shared roped
     * key k_pe [qk_rope_head_dim] a token, from which every head's K and V
     * are kv_b_proj's up-projections (layers/tensor/mla.c). */
    int q_lora_rank;        /* 0 when null (q_proj direct) */
    int kv_lora_rank;       /* > 0 means MLA */
    int qk_nope_head_dim, qk_rope_head_dim, v_head_dim;
    float mla_scale;        /* the softmax's scale: 1/sqrt(head_dim), times yarn's mscale^2 */
    int rope_yarn;          /* deepseek_v3's rope_scaling yarn: RoPE's frequencies are rope_inv_freq */
    float rope_inv_freq[MAX_ROPE_HALF];   /* [qk_rope_head_dim / 2] */
    int vocab_size;
    int max_seq_len;        /* max_position_embeddings */
    float rope_theta;
    float norm_eps;
    enum rope_style rope;
    int tied;               /* lm_head shares token embeddings */
    int qkv_bias;           /* qwen2 */
    int qk_norm;            /* qwen3 */
    dtype torch_dtype;      /* the weights' dtype as config.json says (torch_dtype, or
                               dtype in newer files): DT_BF16, DT_F16, or DT_F32 (torch's
                               default) when absent or another */
    int bos_id;             /* -1 none */
    int n_stop;
    int stop_ids[MAX_STOP_IDS];
    /* Mixture of experts (0 experts: a dense model). A MoE layer's FFN is
     * a router choosing n_experts_per_tok of n_experts SwiGLU FFNs of
     * moe_hidden_dim per token, plus n_shared_experts every token takes. */
    int n_experts;          /* num_experts (qwen3_moe) / num_local_experts (mixtral) / n_routed_experts (deepseek_v3) */
    int n_experts_per_tok;  /* num_experts_per_tok: top-k */
    int moe_hidden_dim;     /* moe_intermediate_size (qwen3_moe, deepseek_v3); intermediate_size for mixtral */
    int n_shared_experts;   /* deepseek_v3 n_shared_experts (0 for the others) */
    int first_dense_layers; /* deepseek_v3 first_k_dense_replace: layers before it are dense */
    int sparse_step;        /* qwen3_moe decoder_sparse_step: layer l is MoE when (l + 1) % it == 0 (1 otherwise) */
    unsigned char mlp_only[MAX_LAYERS_MASK / 8];   /* qwen3_moe mlp_only_layers, a bit per layer: dense */
    int norm_topk_prob;     /* renormalize the top-k weights */
    enum gating gating;     /* softmax (qwen3_moe, mixtral) or sigmoid (deepseek_v3) scores */
    float routed_scaling;   /* deepseek_v3 routed_scaling_factor (1 otherwise) */
    int n_group, topk_group;/* deepseek_v3 group-limited routing (1, 1 otherwise) */
} model_config;

/* Matrices stay in the mmap'd file; the small vectors (norm weights,
 * biases) are converted to f32 once at load. */
typedef struct {
    const float *attn_norm, *ffn_norm;    /* [dim] */
    const tensor *wq, *wk, *wv, *wo;      /* [out, in] */
    const tensor *w_gate, *w_up, *w_down;
    const float *bq, *bk, *bv;            /* qwen2 */
    const float *q_norm, *k_norm;         /* qwen3, [head_dim] */
    /* a MoE layer (model_layer_is_moe), in place of w_gate w_up w_down: */
    const tensor *w_router;               /* [n_experts, dim] */
    const float *router_bias;             /* deepseek_v3 e_score_correction_bias [n_experts], or NULL */
    const tensor **e_gate, **e_up, **e_down;   /* [n_experts] each: the experts' SwiGLU matrices */
    const tensor *s_gate, *s_up, *s_down; /* deepseek_v3 shared experts (one FFN of n_shared x moe_hidden), or NULL */
    /* MLA (wq: q_proj, or q_b_proj after q_a_proj with q_lora_rank). The
     * paper's W^DKV and W^KR are the two row blocks of kv_a_proj_with_mqa;
     * kv_b_proj holds every head's W^UK (qk_nope rows) then W^UV (v rows). */
    const tensor *wq_a;                   /* [q_lora_rank, dim], or NULL */
    const float *q_a_norm;                /* [q_lora_rank] */
    tensor w_dkv, w_kr;                   /* [kv_lora_rank, dim], [qk_rope_head_dim, dim]: views */
    const float *kv_a_norm;               /* [kv_lora_rank] */
    const tensor *w_kv_b;                 /* [n_heads * (qk_nope + v_head_dim), kv_lora_rank] */
} layer_weights;

typedef struct {
    const tensor *tok_emb;   /* [vocab, dim] */
    layer_weights *layer;    /* [n_layers] */
    const float *final_norm;
    const tensor *lm_head;   /* [vocab, dim], == tok_emb when tied */
} model_weights;

typedef struct {
    model_config cfg;
    model_weights w;
    weights files;
    char *path;              /* the folder or .gguf file */
    char *tokenizer_path;    /* tokenizer.json, or NULL */
    float **small;           /* the f32 vectors, owned */
    int nsmall;
    const tensor **experts;  /* the MoE layers' expert tables, one block, owned */
    int kv_bytes;            /* a KV element's bytes: 0, f32 slots; analytic: the KV dtype asked */
} model;

/* Load a Hugging Face folder (config.json + safetensors) or a .gguf file.
 * Every tensor's shape is checked against the config. 0, or -1 with a
 * one-line reason naming the file and tensor. */
int  model_load(model *m, const char *path, char *err, int errlen);
void model_free(model *m);

/* The bytes one token's KV takes in the cache over all layers at elem_bytes
 * an element: K and V of every KV head, or MLA's latent and rope key. */
size_t model_kv_token_bytes(const model_config *c, int elem_bytes);
/* A KV cache row's floats and planes: n_kv_heads * head_dim in K and in V
 * (2), or MLA's [c_kv | k_pe] alone (1). */
int model_kv_row(const model_config *c, int *planes);

/* Only the configuration: a Hugging Face config.json (llama, qwen2, qwen3,
 * qwen3_moe, mixtral, deepseek_v3).
 * 0, or -1 with a one-line reason naming the file and field. */
int  model_config_load(model_config *c, const char *config_json_path, char *err, int errlen);

/* The loaders fill m->cfg and m->files; model_bind() then finds and checks
 * every tensor by its HF name. */
int model_load_hf(model *m, const char *dir, char *err, int errlen);
int model_load_gguf(model *m, const char *file, char *err, int errlen);
int model_bind(model *m, char *err, int errlen);

/* Analytic: the model of config.json with weights of dtype (fp32 fp16 bf16
 * int8 q4_0 q4_1) that have shapes but no data (analytic.c); m->files holds
 * one "file" of the matrices' size at address NULL; its KV cache of kv_dtype
 * (fp32, fp16, bf16, fp8; NULL: fp32, hipath's own), whose slots nothing
 * reads: only what moving them costs. tokenizer_path is the tokenizer.json
 * beside the config, or NULL. 0, or -1 with a reason. */
int model_load_analytic(model *m, const char *config_json, const char *dtype, const char *kv_dtype, char *err, int errlen);

#endif
