/*
 * quant_dot.c -- dot product of one block-quantized weight row with f32 x.
 *
 * A block holds 32 weights as small integers q and one fp16 scale d (and,
 * for Q4_1, an fp16 minimum m): w = d*q (Q8_0), d*(q-8) (Q4_0), d*q + m
 * (Q4_1). So per block
 *     sum_j w_j x_j = d * sum_j q_j x_j   (+ m * sum_j x_j for Q4_1),
 * and the 32 q's are widened to f32 in registers and FMA'd with x: the
 * row is read once, in its 4.5-8.5 bits per weight, never expanded in
 * memory. x stays f32, so the result matches a dequantize-then-multiply
 * reference to rounding.
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

float quant_dot(const void *w, dtype dt, const float *x, int K) {
    const uint8_t *p = w;
    const __m128i low4 = _mm_set1_epi8(0x0f), eight = _mm_set1_epi8(8);
    __m256 acc = _mm256_setzero_ps();
    for (int b = 0; b < K / 32; b++, x += 32) {
        __m128i lo, hi, q;
        float d = f16(p);
        switch (dt) {
        case DT_Q8_0:
            lo = _mm_loadu_si128((const __m128i *)(p + 2));
            hi = _mm_loadu_si128((const __m128i *)(p + 18));
            p += 34;
            break;
        case DT_Q4_0:   /* byte j: q_j in the low nibble, q_{j+16} in the high */
            q = _mm_loadu_si128((const __m128i *)(p + 2));
            lo = _mm_sub_epi8(_mm_and_si128(q, low4), eight);
            hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), low4), eight);
            p += 18;
            break;
        default: {      /* DT_Q4_1 */
            __m256 xs = _mm256_add_ps(_mm256_add_ps(_mm256_loadu_ps(x), _mm256_loadu_ps(x + 8)),
                                      _mm256_add_ps(_mm256_loadu_ps(x + 16), _mm256_loadu_ps(x + 24)));
            acc = _mm256_fmadd_ps(_mm256_set1_ps(f16(p + 2)), xs, acc);
            q = _mm_loadu_si128((const __m128i *)(p + 4));
            lo = _mm_and_si128(q, low4);
            hi = _mm_and_si128(_mm_srli_epi16(q, 4), low4);
            p += 20;
        }
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), block_dot(lo, hi, x), acc);
    }
    return hsum8(acc);
}
#endif
