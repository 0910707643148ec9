/* simd.h -- AVX2 helpers the CPU kernels share. */
#ifndef HIPATH_SIMD_H
#define HIPATH_SIMD_H
#ifdef __AVX2__
#include "layers/tensor/tensor.h"
#include <immintrin.h>

/* The sum of the 8 lanes. */
static inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* The sum of the 8 int32 lanes. */
static inline int hsum8i(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    return _mm_cvtsi128_si32(_mm_add_epi32(s, _mm_shuffle_epi32(s, 1)));
}

/* quant_dot.c: y[T,N] = x[T,K] W[N,K]^T (+ bias) for a Q8_0 / Q4_0 / Q4_1 W. */
void quant_matmul(float *y, const float *x, const tensor *W, const float *bias, int T, int N, int K);
#endif
#endif
