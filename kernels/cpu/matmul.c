/*
 * matmul.c -- y = x W^T, the operator that reads every weight.
 *
 * T == 1 (decode, GEMV): stream each weight row once, converting to f32 in
 * registers; the loop is memory-bound and its speed is the bandwidth.
 * T > 1 (prefill, batched decode, GEMM): keep four rows of W in cache and
 * reuse them for every token, so each weight byte is read from memory once
 * per step whatever T is. That reuse is what batching buys.
 * Block formats (Q8_0, Q4_0, Q4_1) go to quant_dot.c's integer kernels.
 * The plain loop this computes is matmul_ref.c: read it first.
 */
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/simd.h"
#include <stdlib.h>
#include <string.h>

#ifdef __AVX2__
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
        s = hsum8(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
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

/* Four weight rows . one x row: each x load feeds four FMAs. */
static void dot4(const char *w, size_t row, dtype dt, const float *x, int K, float out[4]) {
    int k = 0;
    for (int i = 0; i < 4; i++) out[i] = 0;
#ifdef __AVX2__
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (; k + 8 <= K; k += 8) {
        __m256 xv = _mm256_loadu_ps(x + k);
        a0 = _mm256_fmadd_ps(load8(w, dt, k), xv, a0);
        a1 = _mm256_fmadd_ps(load8(w + row, dt, k), xv, a1);
        a2 = _mm256_fmadd_ps(load8(w + 2 * row, dt, k), xv, a2);
        a3 = _mm256_fmadd_ps(load8(w + 3 * row, dt, k), xv, a3);
    }
    out[0] = hsum8(a0); out[1] = hsum8(a1); out[2] = hsum8(a2); out[3] = hsum8(a3);
#endif
    for (; k < K; k++)
        for (int i = 0; i < 4; i++) {
            float wi;
            row_to_f32(&wi, w + i * row + dtype_row_bytes(dt, k), dt, 1);
            out[i] += wi * x[k];
        }
}

void k_matmul(float *y, const float *x, const tensor *W, const float *b, int T, int N, int K) {
    size_t row = dtype_row_bytes(W->dt, K);
    const char *w = W->data;
#ifdef __AVX2__
    if (dtype_block(W->dt) == 32) { quant_matmul(y, x, W, b, T, N, K); return; }
#endif
    if (T == 1) {
        #pragma omp parallel for schedule(static) if ((size_t)N * K >= PARALLEL_MIN)
        for (int n = 0; n < N; n++) y[n] = dot_row(w + n * row, W->dt, x, K) + (b ? b[n] : 0);
        return;
    }
    /* Four weight rows stay in L1 while every token passes by: each weight
     * byte comes from memory once per step, whatever T is. Without AVX2,
     * block formats are expanded four rows at a time into f32 first. */
    int block = dtype_block(W->dt) > 1;
    #pragma omp parallel if ((size_t)T * N * K >= PARALLEL_MIN)
    {
        float *wr = block ? malloc(4 * (size_t)K * sizeof *wr) : NULL;
        #pragma omp for schedule(static)
        for (int n0 = 0; n0 < N; n0 += 4) {
            if (N - n0 < 4) {   /* the last rows, one at a time */
                for (int n = n0; n < N; n++)
                    for (int t = 0; t < T; t++) y[(size_t)t * N + n] = dot_row(w + n * row, W->dt, x + (size_t)t * K, K) + (b ? b[n] : 0);
                continue;
            }
            const char *w4 = w + n0 * row;
            size_t r4 = row;
            dtype dt = W->dt;
            if (block) {
                for (int i = 0; i < 4; i++) row_to_f32(wr + (size_t)i * K, w4 + i * row, dt, K);
                w4 = (const char *)wr; r4 = (size_t)K * sizeof(float); dt = DT_F32;
            }
            for (int t = 0; t < T; t++) {
                float o[4];
                dot4(w4, r4, dt, x + (size_t)t * K, K, o);
                for (int i = 0; i < 4; i++) y[(size_t)t * N + n0 + i] = o[i] + (b ? b[n0 + i] : 0);
            }
        }
        free(wr);
    }
}
