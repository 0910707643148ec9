/*
 * mla.c -- multi-head latent attention's kernels (layers/common/mla.h):
 * the query absorbed into the latent space, the latent rows stored, the
 * attention over them, and the values brought up out of it.
 */
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/attend.h"
#include <string.h>

/* Row n of kv_b_proj as f32. */
static void kv_b_row(float *w, const tensor *W, int n, int rank) {
    row_to_f32(w, (const char *)W->data + (size_t)n * dtype_row_bytes(W->dt, rank), W->dt, rank);
}

/* q_lat[t,h] = W_UK_h^T q_nope[t,h] = sum_i q_nope[t,h,i] W_UK_h[i, :], and
 * q_pe[t,h] copied out of q [T, H, nope + rope]. A row of W_UK is made f32
 * once and added into every token's q_lat. */
void k_mla_absorb(float *q_lat, float *q_pe, const float *q, const tensor *W, int T, mla_dims d) {
    int qd = d.nope + d.rope;
    memset(q_lat, 0, (size_t)T * d.n_heads * d.rank * sizeof *q_lat);
    #pragma omp parallel if ((size_t)T * d.n_heads * d.nope * d.rank >= PARALLEL_MIN)
    {
        float *w = k_scratch((size_t)d.rank * sizeof *w, 0);
        #pragma omp for schedule(static)
        for (int h = 0; h < d.n_heads; h++)
            for (int i = 0; i < d.nope; i++) {
                kv_b_row(w, W, h * (d.nope + d.v_dim) + i, d.rank);   /* W_UK_h[i, :] */
                for (int t = 0; t < T; t++) {
                    float a = q[((size_t)t * d.n_heads + h) * qd + i], *o = q_lat + ((size_t)t * d.n_heads + h) * d.rank;
                    for (int e = 0; e < d.rank; e++) o[e] += a * w[e];
                }
            }
        free(w);
    }
    for (int t = 0; t < T; t++)
        for (int h = 0; h < d.n_heads; h++)
            memcpy(q_pe + ((size_t)t * d.n_heads + h) * d.rope, q + ((size_t)t * d.n_heads + h) * qd + d.nope, d.rope * sizeof *q_pe);
}

/* Each row's [c_kv | k_pe] at its slot: the whole of its KV. */
void k_mla_kv_append(kv_cache *c, const kv_batch *b, int l, const float *c_kv, const float *k_pe, mla_dims d) {
    for (int t = 0; t < b->T; t++) {
        float *row = kv_k(c, b->seq[b->row_seq[t]], l, b->pos[t]);
        memcpy(row, c_kv + (size_t)t * d.rank, d.rank * sizeof *row);
        memcpy(row + d.rank, k_pe + (size_t)t * d.rope, d.rope * sizeof *row);
    }
}

/* For each query row and head, online softmax over the sequence's latent
 * rows as attention.c does over K and V: the score reads all of a row,
 * the sum only its c_kv. Every head reads the same rows (one KV "head"). */
void k_mla_attention(float *o_lat, const float *q_lat, const float *q_pe, const kv_cache *c, const kv_batch *b, int l,
                     mla_dims d) {
    int BS = c->block_size;
    size_t keys = 0;
    for (int t = 0; t < b->T; t++) keys += (size_t)b->pos[t] + 1;
    #pragma omp parallel for collapse(2) schedule(static) if (keys * d.n_heads * d.rank >= PARALLEL_MIN / 8)
    for (int i = 0; i < b->T; i++)
        for (int h = 0; h < d.n_heads; h++) {
            const kv_seq *s = b->seq[b->row_seq[i]];
            const float *ql = q_lat + ((size_t)i * d.n_heads + h) * d.rank, *qp = q_pe + ((size_t)i * d.n_heads + h) * d.rope;
            float *o = o_lat + ((size_t)i * d.n_heads + h) * d.rank;
            int len = b->pos[i] + 1;   /* causal: keys 0..pos */
            float m = -INFINITY, lsum = 0, score[BS];
            memset(o, 0, d.rank * sizeof *o);
            for (int p0 = 0; p0 < len; p0 += BS) {
                int nb = len - p0 < BS ? len - p0 : BS;
                const float *kv = kv_k(c, s, l, p0);   /* nb consecutive rows [c_kv | k_pe] */
                if (p0 + BS < len) prefetch_rows(kv_k(c, s, l, p0 + BS), c->kv_dim, len - p0 - BS < BS ? len - p0 - BS : BS, c->kv_dim);
                float bm = m;
                for (int j = 0; j < nb; j++) {
                    const float *row = kv + (size_t)j * c->kv_dim;
                    score[j] = (dot(ql, row, d.rank) + dot(qp, row + d.rank, d.rope)) * d.scale;
                    bm = score[j] > bm ? score[j] : bm;
                }
                float r = expf(m - bm);
                lsum *= r;
                lsum += exp_minus(score, bm, nb);
                accumulate(o, r, score, kv, c->kv_dim, nb, d.rank);
                m = bm;
            }
            for (int e = 0; e < d.rank; e++) o[e] /= lsum;
        }
}

/* out[t,h] = W_UV_h o_lat[t,h]: v_dim dot products of rank each; a row of
 * W_UV is made f32 once for every token. */
void k_mla_up_v(float *out, const float *o_lat, const tensor *W, int T, mla_dims d) {
    #pragma omp parallel if ((size_t)T * d.n_heads * d.v_dim * d.rank >= PARALLEL_MIN)
    {
        float *w = k_scratch((size_t)d.rank * sizeof *w, 0);
        #pragma omp for schedule(static)
        for (int h = 0; h < d.n_heads; h++)
            for (int i = 0; i < d.v_dim; i++) {
                kv_b_row(w, W, h * (d.nope + d.v_dim) + d.nope + i, d.rank);   /* W_UV_h[i, :] */
                for (int t = 0; t < T; t++)
                    out[((size_t)t * d.n_heads + h) * d.v_dim + i] = dot(w, o_lat + ((size_t)t * d.n_heads + h) * d.rank, d.rank);
            }
        free(w);
    }
}
