/*
 * attention.c -- causal attention against the paged KV cache.
 *
 * For each query row and head: walk the sequence's blocks, score a block
 * of keys, and fold it into a running max m, sum l and output acc (online
 * softmax). Scores live only in a block-sized buffer, never as a matrix.
 */
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/attend.h"
#include <math.h>
#include <string.h>

void k_kv_append(kv_cache *c, const kv_batch *b, int l, const float *k, const float *v) {
    for (int t = 0; t < b->T; t++) {
        const kv_seq *s = b->seq[b->row_seq[t]];
        memcpy(kv_k(c, s, l, b->pos[t]), k + (size_t)t * c->kv_dim, c->kv_dim * sizeof(float));
        memcpy(kv_v(c, s, l, b->pos[t]), v + (size_t)t * c->kv_dim, c->kv_dim * sizeof(float));
    }
}

void k_attention(float *out, const float *q, const kv_cache *c, const kv_batch *b, int l,
                 int n_heads, int n_kv_heads, int head_dim) {
    int group = n_heads / n_kv_heads, BS = c->block_size;
    float scale = 1.0f / sqrtf((float)head_dim);
    size_t keys = 0;   /* the work: every row's keys */
    for (int t = 0; t < b->T; t++) keys += (size_t)b->pos[t] + 1;
    /* A lower bar than the matmuls': decode's one query already takes
     * about 8 us a layer at 60 positions (SmolLM2), split by heads. */
    #pragma omp parallel for collapse(2) schedule(static) if (keys * n_heads * head_dim >= PARALLEL_MIN / 8)
    for (int i = 0; i < b->T; i++)
        for (int h = 0; h < n_heads; h++) {
            const kv_seq *s = b->seq[b->row_seq[i]];
            const float *qh = q + ((size_t)i * n_heads + h) * head_dim;
            float *o = out + ((size_t)i * n_heads + h) * head_dim;
            int kvh = h / group, len = b->pos[i] + 1;     /* causal: keys 0..pos */
            float m = -INFINITY, lsum = 0, score[BS];
            memset(o, 0, head_dim * sizeof *o);
            for (int p0 = 0; p0 < len; p0 += BS) {
                int nb = len - p0 < BS ? len - p0 : BS;
                /* a block's rows are consecutive slots of one cache block */
                const float *k = kv_k(c, s, l, p0) + kvh * head_dim, *v = kv_v(c, s, l, p0) + kvh * head_dim;
                if (p0 + BS < len) {   /* the next block's rows, while this one is scored */
                    int nn = len - p0 - BS < BS ? len - p0 - BS : BS;
                    prefetch_rows(kv_k(c, s, l, p0 + BS) + kvh * head_dim, c->kv_dim, nn, head_dim);
                    prefetch_rows(kv_v(c, s, l, p0 + BS) + kvh * head_dim, c->kv_dim, nn, head_dim);
                }
                float bm = m;
                for (int j = 0; j < nb; j++) {
                    score[j] = dot(qh, k + (size_t)j * c->kv_dim, head_dim) * scale;
                    bm = score[j] > bm ? score[j] : bm;
                }
                float r = expf(m - bm);                   /* rescale what came before */
                lsum *= r;
                lsum += exp_minus(score, bm, nb);
                accumulate(o, r, score, v, c->kv_dim, nb, head_dim);
                m = bm;
            }
            for (int e = 0; e < head_dim; e++) o[e] /= lsum;
        }
}
