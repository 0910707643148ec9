/*
 * matmul.c -- y = x W^T, the operator that reads every weight.
 *
 * T == 1 (decode, GEMV): stream each weight row once, converting to f32 in
 * registers; the loop is memory-bound and its speed is the bandwidth.
 * T > 1 (prefill, batched decode, GEMM): convert a few rows of W to f32
 * once, then reuse them for every token, so each weight byte is read once
 * per step whatever T is. That reuse is what batching buys.
 */
#include "kernels/cpu/kernels.h"
#include <stdlib.h>
#include <string.h>
#ifdef __AVX2__
#include <immintrin.h>
#endif

#ifdef __AVX2__
static inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
static inline __m256 load8(const void *w, dtype dt, int64_t i) {
    switch (dt) {
    case DT_BF16: return _mm256_castsi256_ps(_mm256_slli_epi32(
                      _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)((const uint16_t *)w + i))), 16));
    case DT_F16:  return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)w + i)));
    default:      return _mm256_loadu_ps((const float *)w + i);
    }
}
#endif

/* Dot product of one stored weight row with f32 x. */
static float dot_row(const void *w, dtype dt, const float *x, int K) {
    int k = 0;
    float s = 0;
#ifdef __AVX2__
    if (dt == DT_F32 || dt == DT_F16 || dt == DT_BF16) {
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (; k + 32 <= K; k += 32) {
            a0 = _mm256_fmadd_ps(load8(w, dt, k), _mm256_loadu_ps(x + k), a0);
            a1 = _mm256_fmadd_ps(load8(w, dt, k + 8), _mm256_loadu_ps(x + k + 8), a1);
            a2 = _mm256_fmadd_ps(load8(w, dt, k + 16), _mm256_loadu_ps(x + k + 16), a2);
            a3 = _mm256_fmadd_ps(load8(w, dt, k + 24), _mm256_loadu_ps(x + k + 24), a3);
        }
        for (; k + 8 <= K; k += 8) a0 = _mm256_fmadd_ps(load8(w, dt, k), _mm256_loadu_ps(x + k), a0);
        s = hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    }
#endif
    if (k < K) {   /* the tail, or a block format: one block of 32 at a time */
        int B = dtype_block(dt);
        float tmp[32];
        for (; k < K; k += B) {
            row_to_f32(tmp, (const char *)w + dtype_row_bytes(dt, k), dt, B);
            for (int j = 0; j < B; j++) s += tmp[j] * x[k + j];
        }
    }
    return s;
}

static float dot_f32(const float *a, const float *b, int K) { return dot_row(a, DT_F32, b, K); }

void k_matmul(float *y, const float *x, const tensor *W, const float *b, int T, int N, int K) {
    size_t row = dtype_row_bytes(W->dt, K);
    const char *w = W->data;
    if (T == 1) {
        #pragma omp parallel for schedule(static) if ((size_t)N * K >= PARALLEL_MIN)
        for (int n = 0; n < N; n++) y[n] = dot_row(w + n * row, W->dt, x, K) + (b ? b[n] : 0);
        return;
    }
    enum { R = 4 };   /* weight rows converted at once, reused over all T */
    #pragma omp parallel if ((size_t)T * N * K >= PARALLEL_MIN)
    {
        float *wr = malloc((size_t)R * K * sizeof *wr);
        #pragma omp for schedule(static)
        for (int n0 = 0; n0 < N; n0 += R) {
            int r = N - n0 < R ? N - n0 : R;
            for (int i = 0; i < r; i++) row_to_f32(wr + (size_t)i * K, w + (size_t)(n0 + i) * row, W->dt, K);
            for (int t = 0; t < T; t++)
                for (int i = 0; i < r; i++)
                    y[(size_t)t * N + n0 + i] = dot_f32(wr + (size_t)i * K, x + (size_t)t * K, K) + (b ? b[n0 + i] : 0);
        }
        free(wr);
    }
}
