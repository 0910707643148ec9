/*
 * matmul.c -- y = x W^T, the operator that reads every weight.
 *
 * T == 1 (decode, GEMV): stream each weight row once, converting to f32 in
 * registers; the loop is memory-bound and its speed is the bandwidth.
 * T > 1 (prefill, batched decode, GEMM): keep four rows of W in cache and
 * reuse them for a block of up to 64 tokens, so each weight byte is read
 * from memory once per block, not once per token. That reuse is what
 * batching buys.
 * Block formats (Q8_0, Q4_0, Q4_1) go to quant_dot.c's integer kernels.
 * W is read from the CPU's copy when pack.c made one (2 MB pages).
 * The plain loop this computes is matmul_ref.c: read it first.
 */
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/simd.h"
#include <stdlib.h>
#include <string.h>

#ifdef __AVX2__
/* The vector unit: 16 floats with AVX512, else 8 (AVX2). V(f) names the
 * intrinsic of that width; the loops below are written once, for either. */
#ifdef __AVX512F__
typedef __m512 vf;
typedef __m256i vh;   /* VL 16-bit weights */
enum { VL = 16 };
#define V(f) _mm512_##f
static inline vh vloadh(const uint16_t *p) { return _mm256_loadu_si256((const __m256i *)p); }
static inline vf vbits(__m512i v) { return _mm512_castsi512_ps(v); }
static inline float vsum(vf v) { return _mm512_reduce_add_ps(v); }
#else
typedef __m256 vf;
typedef __m128i vh;
enum { VL = 8 };
#define V(f) _mm256_##f
static inline vh vloadh(const uint16_t *p) { return _mm_loadu_si128((const __m128i *)p); }
static inline vf vbits(__m256i v) { return _mm256_castsi256_ps(v); }
static inline float vsum(vf v) { return hsum8(v); }
#endif
static inline vf vzero(void) { return V(setzero_ps)(); }
static inline vf vload(const float *x) { return V(loadu_ps)(x); }
static inline void vstore(float *y, vf v) { V(storeu_ps)(y, v); }
static inline vf vfma(vf a, vf b, vf c) { return V(fmadd_ps)(a, b, c); }
static inline vf vadd(vf a, vf b) { return V(add_ps)(a, b); }
/* VL stored weights from w[i] as f32 */
static inline vf vloadw(const void *w, dtype dt, int64_t i) {
    switch (dt) {
    case DT_BF16: return vbits(V(slli_epi32)(V(cvtepu16_epi32)(vloadh((const uint16_t *)w + i)), 16));
    case DT_F16:  return V(cvtph_ps)(vloadh((const uint16_t *)w + i));
    default:      return vload((const float *)w + i);
    }
}
#endif

/* Ask for each weight line this many bytes before it is read. A row
 * streams from memory, and the hardware prefetcher stops at every 4 KB
 * boundary; rows follow one another, so this runs on into the next row,
 * and past a thread's last row into the next matrix (pack.c copies them in
 * the order forward reads them). */
enum { AHEAD = 4096 };

#ifdef __AVX2__
/* The vector part of a row's dot product, up to the last whole vector;
 * *k gets where it stopped. Inlined with dt a constant, so that vloadw's
 * switch leaves the loop. */
static inline __attribute__((always_inline)) float dot_vec(const void *w, dtype dt, const float *x, int K, int *k) {
    size_t step = 4 * VL * (dt == DT_F32 ? 4 : 2);   /* bytes per turn, 64 or more: a constant */
    vf a0 = vzero(), a1 = a0, a2 = a0, a3 = a0;
    int i = 0;
    for (const char *p = (const char *)w; i + 4 * VL <= K; i += 4 * VL, p += step) {
        for (size_t b = 0; b < step; b += 64) _mm_prefetch(p + AHEAD + b, _MM_HINT_T0);
        a0 = vfma(vloadw(w, dt, i), vload(x + i), a0);
        a1 = vfma(vloadw(w, dt, i + VL), vload(x + i + VL), a1);
        a2 = vfma(vloadw(w, dt, i + 2 * VL), vload(x + i + 2 * VL), a2);
        a3 = vfma(vloadw(w, dt, i + 3 * VL), vload(x + i + 3 * VL), a3);
    }
    for (; i + VL <= K; i += VL) a0 = vfma(vloadw(w, dt, i), vload(x + i), a0);
    *k = i;
    return vsum(vadd(vadd(a0, a1), vadd(a2, a3)));
}
#endif

/* Dot product of one stored weight row with f32 x. */
static float dot_row(const void *w, dtype dt, const float *x, int K) {
    int k = 0;
    float s = 0;
#ifdef __AVX2__
    switch (dt) {
    case DT_BF16: s = dot_vec(w, DT_BF16, x, K, &k); break;
    case DT_F16:  s = dot_vec(w, DT_F16, x, K, &k); break;
    case DT_F32:  s = dot_vec(w, DT_F32, x, K, &k); break;
    default: break;
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

/* K stored weights as f32, a vector at a time: row_to_f32's scalar loop
 * would cost more than the FMAs when T is small. */
static void to_f32(float *dst, const void *w, dtype dt, int K) {
    int k = 0;
#ifdef __AVX2__
    if (dtype_block(dt) == 1)
        for (; k + VL <= K; k += VL) vstore(dst + k, vloadw(w, dt, k));
#endif
    row_to_f32(dst + k, (const char *)w + dtype_row_bytes(dt, k), dt, K - k);
}

#ifdef __AVX512F__
enum { TC = 4 };   /* tokens a tile takes: 4 x 4 sums fill half of AVX512's 32 registers */
#else
enum { TC = 2 };   /* AVX2 has 16 */
#endif
/* Tokens a block holds: their x stays in L2 while every weight row passes. */
enum { TB = 64 };

/* y[t][i] = w_i . x_t (+ b[i]) for four f32 weight rows w and c <= TC
 * tokens x, K apart: each weight load feeds c FMAs, each x load four, and
 * the 4c sums are separate chains (one chain waits on every FMA's
 * latency). Inlined with c a constant, so the arrays are registers. */
static inline __attribute__((always_inline))
void tile(float *y, int N, const float *w, const float *x, const float *b, int K, int c) {
    float s[4][TC] = { { 0 } };
    int k = 0;
#ifdef __AVX2__
    vf acc[4][TC];
    UNROLL for (int i = 0; i < 4; i++)
        UNROLL for (int t = 0; t < c; t++) acc[i][t] = vzero();
    for (; k + VL <= K; k += VL) {
        vf wv[4];
        UNROLL for (int i = 0; i < 4; i++) wv[i] = vload(w + (size_t)i * K + k);
        UNROLL for (int t = 0; t < c; t++) {
            vf xv = vload(x + (size_t)t * K + k);
            UNROLL for (int i = 0; i < 4; i++) acc[i][t] = vfma(wv[i], xv, acc[i][t]);
        }
    }
    UNROLL for (int i = 0; i < 4; i++)
        UNROLL for (int t = 0; t < c; t++) s[i][t] = vsum(acc[i][t]);
#endif
    for (; k < K; k++)
        for (int i = 0; i < 4; i++)
            for (int t = 0; t < c; t++) s[i][t] += w[(size_t)i * K + k] * x[(size_t)t * K + k];
    for (int i = 0; i < 4; i++)
        for (int t = 0; t < c; t++) y[(size_t)t * N + i] = s[i][t] + (b ? b[i] : 0);
}

void k_matmul(float *y, const float *x, const tensor *W, const float *b, int T, int N, int K) {
    size_t row = dtype_row_bytes(W->dt, K);
    const uint8_t *copy = k_packed(W);
    if (dtype_block(W->dt) == 32 && !quant_matmul(y, x, W, copy, b, T, N, K)) return;
    const char *w = copy ? (const char *)copy : W->data;
    if (T == 1) {
        #pragma omp parallel for schedule(static) if ((size_t)N * K >= PARALLEL_MIN)
        for (int n = 0; n < N; n++) y[n] = dot_row(w + n * row, W->dt, x, K) + (b ? b[n] : 0);
        return;
    }
    /* A block of TB tokens stays in cache while the weights pass by, four
     * rows at a time, converted to f32 once a block (F32 rows are used as
     * they are), each against TC tokens at once. */
    #pragma omp parallel if ((size_t)T * N * K >= PARALLEL_MIN)
    {
        float *wr = W->dt == DT_F32 ? NULL : k_scratch(4 * (size_t)K * sizeof *wr, 0);
        for (int t0 = 0; t0 < T; t0 += TB) {
            int tb = T - t0 < TB ? T - t0 : TB;
            const float *xb = x + (size_t)t0 * K;
            float *yb = y + (size_t)t0 * N;
            #pragma omp for schedule(static) nowait
            for (int n0 = 0; n0 < N; n0 += 4) {
                if (N - n0 < 4) {   /* the last rows, one at a time */
                    for (int n = n0; n < N; n++)
                        for (int t = 0; t < tb; t++) yb[(size_t)t * N + n] = dot_row(w + n * row, W->dt, xb + (size_t)t * K, K) + (b ? b[n] : 0);
                    continue;
                }
                const float *w4 = (const float *)(w + n0 * row), *b4 = b ? b + n0 : NULL;
                if (wr) {
                    for (int i = 0; i < 4; i++) to_f32(wr + (size_t)i * K, w + (n0 + i) * row, W->dt, K);
                    w4 = wr;
                }
                int t = 0;
                for (; t + TC <= tb; t += TC) tile(yb + (size_t)t * N + n0, N, w4, xb + (size_t)t * K, b4, K, TC);
                for (; t < tb; t++) tile(yb + (size_t)t * N + n0, N, w4, xb + (size_t)t * K, b4, K, 1);
            }
        }
        free(wr);
    }
}
