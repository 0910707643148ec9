/*
 * attend.h -- the inner loops of online-softmax attention, which the
 * ordinary kernel (attention.c) and MLA's (mla.c) share: a dot product,
 * the weighted sum of value rows, the block's exponentials, and the
 * prefetch of the next block's rows.
 */
#ifndef HIPATH_ATTEND_H
#define HIPATH_ATTEND_H

#include "kernels/cpu/simd.h"
#include <math.h>

/* q . k. Without -ffast-math the compiler keeps a plain loop's one serial
 * chain of adds (4 cycles each); eight lanes times two chains break it. */
static inline float dot(const float *a, const float *b, int n) {
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
static inline void accumulate(float *o, float r, const float *p, const float *v, size_t stride, int nb, int n) {
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
static inline float exp_minus(float *p, float m, int n) {
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
static inline void prefetch_rows(const float *p, size_t stride, int nb, int head_dim) {
    for (int j = 0; j < nb; j++)
        for (int e = 0; e < head_dim; e += 16) __builtin_prefetch(p + j * stride + e, 0, 2);   /* T1: into L2; T0 was slower */
}

#endif
