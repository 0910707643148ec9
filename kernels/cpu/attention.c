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
#ifdef __AVX512F__   /* 16 lanes: a head of 64 is four FMAs */
    __m512 s0 = _mm512_setzero_ps(), s1 = s0;
    for (; e + 32 <= n; e += 32) {
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + e), _mm512_loadu_ps(b + e), s0);
        s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + e + 16), _mm512_loadu_ps(b + e + 16), s1);
    }
    d = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
#elif defined(__AVX2__)
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

/* o = r*o + sum_j p[j] v_j over nb rows v_j, stride apart. 32 columns at
 * a time through all rows, in four registers meanwhile: o is loaded and
 * stored once per block, not once per row, and four chains of FMAs run
 * side by side (one chain waited on each FMA's latency, a quarter of
 * decode's attention). */
static void accumulate(float *o, float r, const float *p, const float *v, size_t stride, int nb, int n) {
    int e = 0;
#ifdef __AVX2__
    const __m256 rv = _mm256_set1_ps(r);
    for (; e + 32 <= n; e += 32) {
        __m256 a[4];
        UNROLL for (int g = 0; g < 4; g++) a[g] = _mm256_mul_ps(rv, _mm256_loadu_ps(o + e + 8 * g));
        for (int j = 0; j < nb; j++) {
            __m256 pj = _mm256_set1_ps(p[j]);
            UNROLL for (int g = 0; g < 4; g++) a[g] = _mm256_fmadd_ps(pj, _mm256_loadu_ps(v + j * stride + e + 8 * g), a[g]);
        }
        UNROLL for (int g = 0; g < 4; g++) _mm256_storeu_ps(o + e + 8 * g, a[g]);
    }
    for (; e + 8 <= n; e += 8) {
        __m256 acc = _mm256_mul_ps(rv, _mm256_loadu_ps(o + e));
        for (int j = 0; j < nb; j++) acc = _mm256_fmadd_ps(_mm256_set1_ps(p[j]), _mm256_loadu_ps(v + j * stride + e), acc);
        _mm256_storeu_ps(o + e, acc);
    }
#endif
    for (; e < n; e++) {
        float a = r * o[e];
        for (int j = 0; j < nb; j++) a += p[j] * v[j * stride + e];
        o[e] = a;
    }
}

/* p[j] = e^(p[j] - m), and their sum: a libm call each was a third of
 * decode's attention */
static float exp_minus(float *p, float m, int n) {
    int j = 0;
    float sum = 0;
#ifdef __AVX2__
    __m256 s = _mm256_setzero_ps();
    for (; j + 8 <= n; j += 8) {
        __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(p + j), _mm256_set1_ps(m)));
        _mm256_storeu_ps(p + j, e);
        s = _mm256_add_ps(s, e);
    }
    sum = hsum8(s);
#endif
    for (; j < n; j++) sum += p[j] = expf(p[j] - m);
    return sum;
}

/* Ask for nb rows of one head's keys or values, stride floats apart. By
 * the time attention runs the layer's weights have streamed through the
 * caches, so its K and V come from memory, and rows a kv_dim apart are
 * not a stream the hardware prefetcher follows: decode's attention waited
 * on each row in turn. */
static void prefetch_rows(const float *p, size_t stride, int nb, int head_dim) {
    for (int j = 0; j < nb; j++)
        for (int e = 0; e < head_dim; e += 16) __builtin_prefetch(p + j * stride + e, 0, 2);   /* T1: into L2; T0 was slower */
}

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
