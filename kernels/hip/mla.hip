/*
 * mla.hip -- the launchers of mla_kernels.h: MLA's four kernels, on the
 * step's sequences attention.hip uploads, kv_b_proj read in place in its
 * stored dtype.
 */
#include "kernels/hip/hip_common.h"
#include "kernels/hip/mla_kernels.h"

/* f.operator()<DT>() for W's dtype: the kernel instance of each. */
template <typename F> static uint64_t by_dtype(dtype dt, F f) {
    switch (dt) {
    case DT_F32:  return f.template operator()<DT_F32>();
    case DT_F16:  return f.template operator()<DT_F16>();
    case DT_BF16: return f.template operator()<DT_BF16>();
    case DT_Q8_0: return f.template operator()<DT_Q8_0>();
    case DT_Q4_0: return f.template operator()<DT_Q4_0>();
    case DT_Q4_1: return f.template operator()<DT_Q4_1>();
    default: rt_hip_fail(3, "mla", "no HIP kernel for this weight dtype", __FILE__, __LINE__);
    }
    return 0;
}

uint64_t hip_mla_absorb(const kcost *c, float *q_lat, float *q_pe, const float *q, const tensor *W, int T, mla_dims d) {
    const void *w = rt_dev(W->data);
    size_t row = dtype_row_bytes(W->dt, d.rank);
    return by_dtype(W->dt, [&]<int DT>() {
        return launch(c, "mla_absorb", mla_absorb_kernel<DT>, geo_mla_heads(T, d.n_heads), 0, q_lat, q_pe, q, w, d.n_heads, d.nope,
                      d.rope, d.v_dim, d.rank, row);
    });
}

uint64_t hip_mla_up_v(const kcost *c, float *out, const float *o_lat, const tensor *W, int T, mla_dims d) {
    const void *w = rt_dev(W->data);
    size_t row = dtype_row_bytes(W->dt, d.rank);
    return by_dtype(W->dt, [&]<int DT>() {
        return launch(c, "mla_up_v", mla_up_v_kernel<DT>, geo_mla_heads(T, d.n_heads), 0, out, o_lat, w, d.n_heads, d.nope,
                      d.v_dim, d.rank, row);
    });
}

uint64_t hip_mla_kv_append(const kcost *c, kv_cache *kv, const kv_batch *b, int l, const float *c_kv, const float *k_pe,
                           mla_dims d) {
    const hip_kv_step *S = hip_kv_upload(b, c->step);
    return launch(c, "mla_kv_append", mla_kv_append_kernel, geo_kv_append(b->T), 0, kv->k, (const int *)S->tables,
                  (const int *)S->table_off, (const int *)S->row_seq, (const int *)S->pos, l, c_kv, k_pe, kv->n_blocks,
                  kv->block_size, d.rank, d.rope);
}

uint64_t hip_mla_attention(const kcost *c, float *o_lat, const float *q_lat, const float *q_pe, const kv_cache *kv,
                           const kv_batch *b, int l, mla_dims d) {
    size_t lds = (size_t)kv->block_size * kv->kv_dim * sizeof(float);
    if (d.rank > MLA_PER_LANE * hip_wave() || d.rope > MLA_ROPE_PER_LANE * hip_wave() || lds > 65536)
        rt_hip_fail(3, "mla_attention", "kv_lora_rank or qk_rope_head_dim larger than the kernel's registers or LDS hold",
                    __FILE__, __LINE__);
    const hip_kv_step *S = hip_kv_upload(b, c->step);
    kdims g = geo_attention(S->workgroups, S->rows, d.n_heads, hip_wave());
    return launch(c, S->rows == 1 ? "mla_decode" : "mla_prefill", mla_attention_kernel, g, lds, o_lat, q_lat, q_pe,
                  (const float *)kv->k, (const int *)S->tables, (const int *)S->work, l, d.n_heads, d.rank, d.rope, d.scale,
                  kv->n_blocks, kv->block_size, S->rows);
}

JIT_SOURCE(jit_mla, "kernels/hip/mla_kernels.h", MLA_KERNELS)
