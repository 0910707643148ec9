/*
 * mla.h -- layer 5: deepseek_v3's attention block, multi-head latent
 * attention (layers/common/mla.h), and the step's buffers it needs.
 */
#ifndef HIPATH_TENSOR_MLA_H
#define HIPATH_TENSOR_MLA_H

#include "layers/tensor/model.h"
#include "layers/ops/ops.h"

/* Device buffers for T tokens (all NULL for a model without MLA). */
typedef struct {
    float *q_a;                  /* [T, q_lora_rank] */
    float *c_kv, *k_pe;          /* [T, kv_lora_rank], [T, qk_rope_head_dim]: what the cache keeps */
    float *q_lat, *q_pe, *o_lat; /* [T, H, kv_lora_rank], [T, H, qk_rope_head_dim], [T, H, kv_lora_rank] */
    float *att;                  /* [T, H, v_head_dim]: o_proj's input */
    float *inv_freq;             /* yarn's RoPE frequencies [qk_rope_head_dim / 2], or NULL */
} mla_state;

size_t mla_state_bytes(const model_config *c, int max_tokens);
int    mla_state_init(mla_state *s, const model_config *c, int max_tokens);
void   mla_state_free(mla_state *s);
mla_dims mla_dims_of(const model_config *c);

/* out [T, dim] = the attention block of layer l on x [T, dim] (the normed
 * residual) for the step's sequences b, through the latent cache; q is
 * scratch of [T, H, qk_nope + qk_rope]; pos the rows' positions on the
 * device. out may be x. Over tp GPUs (forward.c's plans: whole, cols,
 * rows) as vLLM splits it: the heads by columns, o_proj by rows (out is a
 * partial sum to all-reduce), the latent's projections and cache whole on
 * every GPU. */
void mla_attention(const model_config *c, const layer_weights *L, mla_state *s, float *out, const float *x, float *q,
                   kv_cache *kv, const kv_batch *b, int l, const int *pos, op_plan whole, op_plan cols, op_plan rows);

#endif
