/*
 * quant_dot.c -- y = W x for a block-quantized W, one token (GEMV).
 *
 * A block holds 32 weights as small integers q and one fp16 scale d (and,
 * for Q4_1, an fp16 minimum m): w = d*q (Q8_0), d*(q-8) (Q4_0), d*q + m
 * (Q4_1). x is cut into the same blocks of 32 and each block stored once
 * as int16 with its own scale s (x ~ s*xq, error below 1/65534 of the
 * block's largest |x|), so per block
 *     sum_j w_j x_j = d*s * sum_j q_j xq_j   (+ m * sum_j x_j for Q4_1)
 * and the inner sum is integer multiply-adds (vpmaddwd: 16 products per
 * instruction). Each weight row is read once, in its 4.5-8.5 bits per
 * weight, never expanded in memory. llama.cpp rounds x to int8 instead,
 * which is faster still but moves logprobs by ~1e-2; int16 keeps hipath
 * within 1e-4 of a dequantize-then-multiply reference.
 */
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/simd.h"
#include <math.h>
#include <stdlib.h>
#ifdef __AVX2__

typedef struct { int16_t *q; float *s, *sum; } quant_x;   /* [K], [K/32], [K/32] */

static int quant_x_init(quant_x *x, const float *f, int K) {
    x->q = malloc((size_t)K * sizeof *x->q);
    x->s = malloc((size_t)K / 32 * sizeof *x->s);
    x->sum = malloc((size_t)K / 32 * sizeof *x->sum);
    if (!x->q || !x->s || !x->sum) return -1;
    for (int b = 0; b < K / 32; b++, f += 32) {
        float amax = 0, sum = 0;
        for (int j = 0; j < 32; j++) { amax = fmaxf(amax, fabsf(f[j])); sum += f[j]; }
        float s = amax / 32767, inv = s > 0 ? 1 / s : 0;
        for (int j = 0; j < 32; j++) x->q[b * 32 + j] = (int16_t)lrintf(f[j] * inv);
        x->s[b] = s;
        x->sum[b] = sum;
    }
    return 0;
}

static void quant_x_free(quant_x *x) { free(x->q); free(x->s); free(x->sum); }

static inline float f16(const uint8_t *p) { return _cvtsh_ss((unsigned short)(p[0] | p[1] << 8)); }

/* sum_j q_j xq_j for q[0..15] in lo and q[16..31] in hi (int8 each) */
static inline __m256i block_dot(__m128i lo, __m128i hi, const int16_t *xq) {
    __m256i a = _mm256_madd_epi16(_mm256_cvtepi8_epi16(lo), _mm256_loadu_si256((const __m256i *)xq));
    __m256i b = _mm256_madd_epi16(_mm256_cvtepi8_epi16(hi), _mm256_loadu_si256((const __m256i *)(xq + 16)));
    return _mm256_add_epi32(a, b);
}

/* Block b of a row (at p): acc += d*s * sum q xq (8 lanes), macc += m * sum x. */
static inline void block(const uint8_t *p, dtype dt, const quant_x *x, int b, __m256 *acc, float *macc) {
    const __m128i low4 = _mm_set1_epi8(0x0f), eight = _mm_set1_epi8(8);
    __m128i lo, hi, q;
    switch (dt) {
    case DT_Q8_0:
        lo = _mm_loadu_si128((const __m128i *)(p + 2));
        hi = _mm_loadu_si128((const __m128i *)(p + 18));
        break;
    case DT_Q4_0:   /* byte j: q_j in the low nibble, q_{j+16} in the high */
        q = _mm_loadu_si128((const __m128i *)(p + 2));
        lo = _mm_sub_epi8(_mm_and_si128(q, low4), eight);
        hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), low4), eight);
        break;
    default:        /* DT_Q4_1 */
        *macc += f16(p + 2) * x->sum[b];
        q = _mm_loadu_si128((const __m128i *)(p + 4));
        lo = _mm_and_si128(q, low4);
        hi = _mm_and_si128(_mm_srli_epi16(q, 4), low4);
    }
    __m256 s = _mm256_cvtepi32_ps(block_dot(lo, hi, x->q + b * 32));
    *acc = _mm256_fmadd_ps(_mm256_set1_ps(f16(p) * x->s[b]), s, *acc);
}

/* Two blocks at a time into two accumulators: each FMA then waits on the
 * one two blocks back, not the one just before (4-cycle latency). */
static float quant_dot(const uint8_t *p, dtype dt, const quant_x *x, int K) {
    size_t bytes = dtype_row_bytes(dt, 32);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0;
    float m0 = 0, m1 = 0;
    int b = 0;
    for (; b + 2 <= K / 32; b += 2) {
        block(p + b * bytes, dt, x, b, &acc0, &m0);
        block(p + (b + 1) * bytes, dt, x, b + 1, &acc1, &m1);
    }
    if (b < K / 32) block(p + b * bytes, dt, x, b, &acc0, &m0);
    return hsum8(_mm256_add_ps(acc0, acc1)) + m0 + m1;
}

int quant_gemv(float *y, const float *x, const tensor *W, const float *bias, int N, int K) {
    quant_x qx;
    if (quant_x_init(&qx, x, K)) { quant_x_free(&qx); return -1; }
    size_t row = dtype_row_bytes(W->dt, K);
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++)
        y[n] = quant_dot((const uint8_t *)W->data + n * row, W->dt, &qx, K) + (bias ? bias[n] : 0);
    quant_x_free(&qx);
    return 0;
}
#endif
