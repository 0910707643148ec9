/* simd.h -- AVX2 helpers the CPU kernels share, and pack.c's layout. */
#ifndef HIPATH_SIMD_H
#define HIPATH_SIMD_H
#include "layers/common/tensor.h"

/* pack.c: rows interleaved this many at a time; bytes of q per block of a
 * group, and of all it holds per block (PACK_ROWS * dtype_row_bytes(dt,
 * 32), here as constants the kernels' loops can be unrolled by); the
 * packed copy of W, or NULL when it has none; row n of W as f32 from its
 * copy p. */
enum { PACK_ROWS = 16 };
static inline size_t pack_q_bytes(dtype dt) { return dt == DT_Q8_0 ? 32 * PACK_ROWS : 16 * PACK_ROWS; }
static inline size_t pack_block_bytes(dtype dt) { return PACK_ROWS * (dt == DT_Q8_0 ? 34 : dt == DT_Q4_0 ? 18 : 20); }
const uint8_t *k_packed(const tensor *W);
void k_unpack_row(float *dst, const uint8_t *p, const tensor *W, int64_t n);

/* A tile's loops have constant trip counts; unrolled, its arrays are registers. */
#define UNROLL _Pragma("GCC unroll 16")

#ifdef __AVX2__
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

/* e^x, 8 at a time (Cephes' expf, within 2 ulp): x = n ln2 + r with
 * |r| <= ln2/2, e^r from a degree-7 polynomial, 2^n built in the exponent
 * bits. */
static inline __m256 exp8(__m256 x) {
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3f));   /* 2^n stays normal */
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);    /* ln2 in two parts: n*hi is exact */
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    static const float P[] = { 1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f };
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    for (int i = 0; i < 5; i++) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(P[i]));
    p = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}
#endif

/* quant.c: y[T,N] = x[T,K] W[N,K]^T (+ bias) for a Q8_0 / Q4_0 / Q4_1 W, by
 * the build of quant_dot.c chosen for this CPU, from packed (W's copy,
 * k_packed, or NULL) where that build reads it; -1 where there is none
 * (not x86-64, or no AVX2): the caller's plain loop then. */
int quant_matmul(float *y, const float *x, const tensor *W, const uint8_t *packed, const float *bias, int T, int N, int K);
/* whether that build reads pack.c's interleaved copies */
int k_quant_interleaved(void);
#endif
