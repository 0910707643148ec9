/*
 * attention.c -- causal attention against the paged KV cache.
 *
 * For each query row and head: walk the sequence's blocks, score a block
 * of keys, and fold it into a running max m, sum l and output acc (online
 * softmax). Scores live only in a block-sized buffer, never as a matrix.
 */
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/simd.h"
#include <math.h>
#include <string.h>

/* q . k. Without -ffast-math the compiler keeps a plain loop's one serial
 * chain of adds (4 cycles each); eight lanes times two chains break it. */
static float dot(const float *a, const float *b, int n) {
    int e = 0;
    float d = 0;
#ifdef __AVX2__
    __m256 s0 = _mm256_setzero_ps(), s1 = s0;
    for (; e + 16 <= n; e += 16) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + e), _mm256_loadu_ps(b + e), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + e + 8), _mm256_loadu_ps(b + e + 8), s1);
    }
    d = hsum8(_mm256_add_ps(s0, s1));
#endif
    for (; e < n; e++) d += a[e] * b[e];
    return d;
}

void k_kv_append(kv_cache *c, const kv_seq *s, int l, int pos0, const float *k, const float *v, int n) {
    for (int i = 0; i < n; i++) {
        memcpy(kv_k(c, s, l, pos0 + i), k + (size_t)i * c->kv_dim, c->kv_dim * sizeof(float));
        memcpy(kv_v(c, s, l, pos0 + i), v + (size_t)i * c->kv_dim, c->kv_dim * sizeof(float));
    }
}

void k_attention(float *out, const float *q, const kv_cache *c, const kv_seq *s, int l,
                 int pos0, int n, int n_heads, int n_kv_heads, int head_dim) {
    int group = n_heads / n_kv_heads, BS = c->block_size;
    float scale = 1.0f / sqrtf((float)head_dim);
    #pragma omp parallel for collapse(2) schedule(static) if ((size_t)n * n_heads * (pos0 + n) * head_dim >= PARALLEL_MIN)
    for (int i = 0; i < n; i++)
        for (int h = 0; h < n_heads; h++) {
            const float *qh = q + ((size_t)i * n_heads + h) * head_dim;
            float *o = out + ((size_t)i * n_heads + h) * head_dim;
            int kvh = h / group, len = pos0 + i + 1;     /* causal: keys 0..pos */
            float m = -INFINITY, lsum = 0, score[BS];
            memset(o, 0, head_dim * sizeof *o);
            for (int p0 = 0; p0 < len; p0 += BS) {
                int nb = len - p0 < BS ? len - p0 : BS;
                float bm = m;
                for (int j = 0; j < nb; j++) {
                    const float *k = kv_k(c, s, l, p0 + j) + kvh * head_dim;
                    score[j] = dot(qh, k, head_dim) * scale;
                    bm = score[j] > bm ? score[j] : bm;
                }
                float r = expf(m - bm);                   /* rescale what came before */
                lsum *= r;
                for (int e = 0; e < head_dim; e++) o[e] *= r;
                for (int j = 0; j < nb; j++) {
                    float p = expf(score[j] - bm);
                    const float *v = kv_v(c, s, l, p0 + j) + kvh * head_dim;
                    lsum += p;
                    for (int e = 0; e < head_dim; e++) o[e] += p * v[e];
                }
                m = bm;
            }
            for (int e = 0; e < head_dim; e++) o[e] /= lsum;
        }
}
