/*
 * quant_dot.c -- y = W x for a block-quantized W, one token (GEMV).
 *
 * A block holds 32 weights as small integers q and one fp16 scale d (and,
 * for Q4_1, an fp16 minimum m): w = d*q (Q8_0), d*(q-8) (Q4_0), d*q + m
 * (Q4_1). So per block
 *     sum_j w_j x_j = d * sum_j q_j x_j   (+ m * sum_j x_j for Q4_1),
 * and the 32 q's are widened to f32 in registers and FMA'd with x: each
 * weight row is read once, in its 4.5-8.5 bits per weight, never expanded
 * in memory. x stays f32, so y matches a dequantize-then-multiply
 * reference to rounding (3e-5 in logprob on SmolLM2). Rounding x to int16
 * per block for integer multiply-adds was 1.3x faster here but moved
 * logprobs by 6e-3: a block holding one of the model's outlier activations
 * gets a coarse step for all its 32 values (docs/gguf.md).
 */
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/simd.h"
#ifdef __AVX2__

/* 8 int8 (the low half of b) -> 8 floats */
static inline __m256 cvt8(__m128i b) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b)); }

/* sum_j q_j x_j for q[0..15] in lo and q[16..31] in hi, as 8 partial sums */
static inline __m256 block_dot(__m128i lo, __m128i hi, const float *x) {
    __m256 s = _mm256_mul_ps(cvt8(lo), _mm256_loadu_ps(x));
    s = _mm256_fmadd_ps(cvt8(_mm_unpackhi_epi64(lo, lo)), _mm256_loadu_ps(x + 8), s);
    s = _mm256_fmadd_ps(cvt8(hi), _mm256_loadu_ps(x + 16), s);
    return _mm256_fmadd_ps(cvt8(_mm_unpackhi_epi64(hi, hi)), _mm256_loadu_ps(x + 24), s);
}

static inline float f16(const uint8_t *p) { return _cvtsh_ss((unsigned short)(p[0] | p[1] << 8)); }

/* One block (at p) against x[0..31]: acc += its 8 partial sums. */
static inline void block(const uint8_t *p, dtype dt, const float *x, __m256 *acc) {
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
    default: {      /* DT_Q4_1 */
        __m256 xs = _mm256_add_ps(_mm256_add_ps(_mm256_loadu_ps(x), _mm256_loadu_ps(x + 8)),
                                  _mm256_add_ps(_mm256_loadu_ps(x + 16), _mm256_loadu_ps(x + 24)));
        *acc = _mm256_fmadd_ps(_mm256_set1_ps(f16(p + 2)), xs, *acc);
        q = _mm_loadu_si128((const __m128i *)(p + 4));
        lo = _mm_and_si128(q, low4);
        hi = _mm_and_si128(_mm_srli_epi16(q, 4), low4);
    }
    }
    *acc = _mm256_fmadd_ps(_mm256_set1_ps(f16(p)), block_dot(lo, hi, x), *acc);
}

/* Two blocks at a time into two accumulators, so each FMA waits on the one
 * two blocks back rather than the one just before (4-cycle latency). */
static float quant_dot(const uint8_t *p, dtype dt, const float *x, int K) {
    size_t bytes = dtype_row_bytes(dt, 32);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0;
    int b = 0;
    for (; b + 2 <= K / 32; b += 2) {
        block(p + b * bytes, dt, x + b * 32, &acc0);
        block(p + (b + 1) * bytes, dt, x + (b + 1) * 32, &acc1);
    }
    if (b < K / 32) block(p + b * bytes, dt, x + b * 32, &acc0);
    return hsum8(_mm256_add_ps(acc0, acc1));
}

void quant_gemv(float *y, const float *x, const tensor *W, const float *bias, int N, int K) {
    size_t row = dtype_row_bytes(W->dt, K);
    #pragma omp parallel for schedule(static) if ((size_t)N * K >= PARALLEL_MIN)
    for (int n = 0; n < N; n++)
        y[n] = quant_dot((const uint8_t *)W->data + n * row, W->dt, x, K) + (bias ? bias[n] : 0);
}
#endif
