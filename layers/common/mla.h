/*
 * mla.h -- shared vocabulary: the shape of multi-head latent attention
 * (DeepSeek-V2/V3's MLA) as layers 5, 4 and 3 pass it.
 *
 * Each token's K and V for all heads come from one latent c_kv [rank]:
 * head h's key is [W_UK_h c_kv | k_pe], its value W_UV_h c_kv, k_pe
 * [rope] one roped key every head shares. The cache keeps [c_kv | k_pe]
 * a token (kv.h, kv_dim = rank + rope, no V plane). Attention runs in the
 * latent space, as engines decode it (FlashMLA, vLLM's MLA backends):
 * q_nope is absorbed through W_UK_h^T into q_lat [rank], so
 *   score_j = (q_lat . c_kv_j + q_pe . k_pe_j) * scale
 *   o_lat = sum_j softmax_j c_kv_j,   o_h = W_UV_h o_lat
 * which is the same number as expanding every K and V, with the cache
 * read once for all heads. W_UK_h and W_UV_h are rows of kv_b_proj
 * [n_heads * (nope + v_dim), rank]: head h's nope rows, then its v_dim.
 */
#ifndef HIPATH_MLA_H
#define HIPATH_MLA_H

typedef struct {
    int n_heads;
    int rank;        /* kv_lora_rank: the latent's size */
    int nope, rope;  /* qk_nope_head_dim, qk_rope_head_dim: a query's two parts */
    int v_dim;       /* v_head_dim */
    float scale;     /* the softmax's */
} mla_dims;

#endif
