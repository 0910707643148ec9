/*
 * mla.c -- layer 4: multi-head latent attention's operators (ops.h), each
 * a trace event with its FLOPs, bytes and the latent shapes, then the
 * kernel. The cache's bytes are the latent rows, read once a sequence for
 * all heads: (rank + rope) elements a token, against 2 x heads x head_dim.
 */
#include "layers/ops/op_cost.h"
#include <stdio.h>

/* The slice, with the latent shapes beside the costs; weight_bytes: of
 * kv_b_proj's rows read (v_steps sums them with the matmuls'). */
static void end_mla(const kcost *c, uint64_t t1, int T, mla_dims d, double weight_bytes, const char *dims, int n) {
    if (!trace_enabled() || !c->t0) return;
    if (!t1) t1 = trace_now_ns();
    trace_slice(trace_at(L_OPS, DIR_DOWN, NO_REQ, c->step), c->name, c->t0, t1 - c->t0,
                TRACE_ARGS(TA_DBL("flops", c->flops), TA_DBL("bytes", c->bytes), TA_DBL("weight_bytes", weight_bytes),
                           TA_INT("tokens", T), TA_INT("heads", d.n_heads), TA_INT("kv_lora_rank", d.rank),
                           TA_INT("qk_rope_head_dim", d.rope), TA_INT(dims, n)));
}

int op_mla_supported(char *err, int errlen) {
    const backend *b = backend_now();
    if (b->mla_attention) return 1;
    snprintf(err, errlen, "device %s has no MLA kernels (deepseek_v3's attention): use cpu, sim: or analytic:", b->name);
    return 0;
}

/* kv_b_proj's row-block bytes: rows of rank elements. */
static double rows_bytes(const tensor *W, double rows, int rank) { return rows * (double)dtype_row_bytes(W->dt, rank); }

void op_mla_absorb(op_plan p, float *q_lat, float *q_pe, const float *q, const tensor *W_kv_b, int T, mla_dims d) {
    double H = d.n_heads, w = rows_bytes(W_kv_b, H * d.nope, d.rank);
    kcost c = begin(p, "mla_absorb", 2.0 * T * H * d.nope * d.rank, w + 4.0 * T * H * (d.nope + d.rope + d.rank + d.rope));
    c.dt = W_kv_b->dt;   /* a batched matmul: its dtype's peak */
    end_mla(&c, backend_now()->mla_absorb(&c, q_lat, q_pe, q, W_kv_b, T, d), T, d, w, "qk_nope_head_dim", d.nope);
}

void op_mla_kv_append(op_plan p, kv_cache *c, const kv_batch *b, int l, const float *c_kv, const float *k_pe, mla_dims d) {
    kcost cost = begin(p, "mla_kv_append", 0, (4.0 + c->elem_bytes) * b->T * (d.rank + d.rope));   /* read f32, stored */
    end_mla(&cost, backend_now()->mla_kv_append(&cost, c, b, l, c_kv, k_pe, d), b->T, d, 0, "kv_bytes_per_token_layer",
        (d.rank + d.rope) * c->elem_bytes);
}

/* Each row scores its sequence's keys 0..its position over rank + rope
 * and sums rank of each; each sequence's latent rows are read once for
 * all heads and rows (MQA's reuse, which is why MLA decodes cheaply).
 * Split by heads over GPUs, each GPU still reads every latent row: the
 * op's bytes, over all of them, count the rows once a GPU. */
void op_mla_attention(op_plan p, float *o_lat, const float *q_lat, const float *q_pe, const kv_cache *c, const kv_batch *b,
                      int l, mla_dims d) {
    double keys = 0, kv_read = 0, H = d.n_heads;
    for (int t = 0; t < b->T; t++) keys += b->pos[t] + 1.0;
    for (int i = 0; i < b->n_seqs; i++) kv_read += (double)c->elem_bytes * (b->pos[b->row0[i + 1] - 1] + 1) * (d.rank + d.rope);
    kv_read *= p.n > 1 ? p.n : 1;
    kcost cost = begin(p, "mla_attention", 2.0 * keys * H * (2.0 * d.rank + d.rope),
                       kv_read + 4.0 * b->T * H * (2.0 * d.rank + d.rope));
    end_mla(&cost, backend_now()->mla_attention(&cost, o_lat, q_lat, q_pe, c, b, l, d), b->T, d, 0, "keys", (int)keys);
}

void op_mla_up_v(op_plan p, float *out, const float *o_lat, const tensor *W_kv_b, int T, mla_dims d) {
    double H = d.n_heads, w = rows_bytes(W_kv_b, H * d.v_dim, d.rank);
    kcost c = begin(p, "mla_up_v", 2.0 * T * H * d.v_dim * d.rank, w + 4.0 * T * H * (d.rank + d.v_dim));
    c.dt = W_kv_b->dt;
    end_mla(&c, backend_now()->mla_up_v(&c, out, o_lat, W_kv_b, T, d), T, d, w, "v_head_dim", d.v_dim);
}
