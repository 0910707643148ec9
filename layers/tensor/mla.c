/*
 * mla.c -- layer 5: multi-head latent attention (DeepSeek-V2 section 2.1,
 * DeepSeek-V3), in the absorbed form engines decode with:
 *   q      = W_UQ norm(W_DQ x)            (or W_Q x without q_lora_rank)
 *   c_kv   = norm(W_DKV x),  k_pe = rope(W_KR x)    the cache keeps these
 *   q_lat  = W_UK_h^T q_nope,  q_pe = rope(q's rope part)       per head
 *   o_lat  = softmax((q_lat . c_kv + q_pe . k_pe) * scale) . c_kv
 *   out    = W_O [W_UV_h o_lat]_h
 * Every head's K and V are never formed: the cache is rank + rope floats
 * a token, read once for all heads.
 */
#include "layers/tensor/mla.h"
#include "layers/runtime/runtime.h"
#include "trace/trace.h"
#include <string.h>

mla_dims mla_dims_of(const model_config *c) {
    return (mla_dims){ c->n_heads, c->kv_lora_rank, c->qk_nope_head_dim, c->qk_rope_head_dim, c->v_head_dim, c->mla_scale };
}

/* The buffers' sizes for T tokens, one table for init and bytes. */
enum { M_QA, M_CKV, M_KPE, M_QLAT, M_QPE, M_OLAT, M_ATT, M_FREQ, M_N };
static const char *const M_NAME[M_N] = { "mla.q_a", "mla.c_kv", "mla.k_pe", "mla.q_lat", "mla.q_pe", "mla.o_lat", "mla.att",
                                         "mla.rope_inv_freq" };

static void sizes(const model_config *c, size_t T, size_t bytes[M_N]) {
    size_t f = sizeof(float), H = (size_t)c->n_heads, r = (size_t)c->kv_lora_rank, dr = (size_t)c->qk_rope_head_dim;
    int on = c->kv_lora_rank > 0;
    bytes[M_QA] = T * (size_t)c->q_lora_rank * f;
    bytes[M_CKV] = T * r * f;
    bytes[M_KPE] = on * T * dr * f;
    bytes[M_QLAT] = bytes[M_OLAT] = T * H * r * f;
    bytes[M_QPE] = on * T * H * dr * f;
    bytes[M_ATT] = on * T * H * (size_t)c->v_head_dim * f;
    bytes[M_FREQ] = c->rope_yarn ? dr / 2 * f : 0;
}

size_t mla_state_bytes(const model_config *c, int max_tokens) {
    size_t bytes[M_N], sum = 0;
    sizes(c, (size_t)max_tokens, bytes);
    for (int i = 0; i < M_N; i++) sum += bytes[i];
    return sum;
}

int mla_state_init(mla_state *s, const model_config *c, int max_tokens) {
    float **buf[M_N] = { &s->q_a, &s->c_kv, &s->k_pe, &s->q_lat, &s->q_pe, &s->o_lat, &s->att, &s->inv_freq };
    size_t bytes[M_N];
    memset(s, 0, sizeof *s);
    sizes(c, (size_t)max_tokens, bytes);
    for (int i = 0; i < M_N; i++)
        if (bytes[i] && !(*buf[i] = rt_alloc(bytes[i], RT_ACTIVATIONS, M_NAME[i]))) { mla_state_free(s); return -1; }
    if (s->inv_freq) rt_copy(s->inv_freq, c->rope_inv_freq, bytes[M_FREQ], COPY_H2D, NO_STEP);
    return 0;
}

void mla_state_free(mla_state *s) {
    rt_free(s->q_a); rt_free(s->c_kv); rt_free(s->k_pe); rt_free(s->q_lat); rt_free(s->q_pe); rt_free(s->o_lat); rt_free(s->att);
    rt_free(s->inv_freq);
    memset(s, 0, sizeof *s);
}

void mla_attention(const model_config *c, const layer_weights *L, mla_state *s, float *out, const float *x, float *q,
                   kv_cache *kv, const kv_batch *b, int l, const int *pos, op_plan whole, op_plan cols, op_plan rows) {
    mla_dims d = mla_dims_of(c);
    int T = b->T, adjacent = c->rope == ROPE_ADJACENT;
    if (L->wq_a) {   /* the query through its own low rank */
        op_matmul(whole, "q_a_proj", s->q_a, x, L->wq_a, NULL, T);
        op_rmsnorm(whole, "q_a_layernorm", s->q_a, s->q_a, L->q_a_norm, T, c->q_lora_rank, c->norm_eps);
        op_matmul(cols, "q_b_proj", q, s->q_a, L->wq, NULL, T);   /* each GPU: its heads */
    } else op_matmul(cols, "q_proj", q, x, L->wq, NULL, T);
    /* kv_a_proj_with_mqa's two row blocks: the latent and the shared rope key */
    op_matmul(whole, "kv_a_proj_c_kv", s->c_kv, x, &L->w_dkv, NULL, T);
    op_rmsnorm(whole, "kv_a_layernorm", s->c_kv, s->c_kv, L->kv_a_norm, T, d.rank, c->norm_eps);
    op_matmul(whole, "kv_a_proj_k_pe", s->k_pe, x, &L->w_kr, NULL, T);
    op_rope(whole, s->k_pe, T, 1, d.rope, pos, c->rope_theta, s->inv_freq, adjacent);
    op_mla_kv_append(whole, kv, b, l, s->c_kv, s->k_pe, d);
    op_mla_absorb(cols, s->q_lat, s->q_pe, q, L->w_kv_b, T, d);
    op_rope(cols, s->q_pe, T, d.n_heads, d.rope, pos, c->rope_theta, s->inv_freq, adjacent);
    op_mla_attention(cols, s->o_lat, s->q_lat, s->q_pe, kv, b, l, d);
    op_mla_up_v(cols, s->att, s->o_lat, L->w_kv_b, T, d);
    op_matmul(rows, "o_proj", out, s->att, L->wo, NULL, T);
}
