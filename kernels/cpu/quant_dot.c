/*
 * quant_dot.c -- y = x W^T for a block-quantized W, as integer dot products
 * (llama.cpp's method, with a finer x).
 *
 * A weight block holds 32 small integers q and an fp16 scale d, and for Q4_1
 * an fp16 minimum m: w_j = d*q_j + m. Q4_0 stores q offset by 8, so it is
 * the same with m = -8d; Q8_0 has m = 0. Each row of x is first rounded,
 * 32 values at a time, to x_j ~ dx*qx_j with integer qx_j, keeping
 * sx = dx * sum_j qx_j. Then per block
 *
 *     sum_j w_j x_j ~ d*dx * sum_j q_j qx_j  +  m*sx
 *
 * and the inner sum is byte multiplies summed into int32 in a few AVX2
 * instructions, instead of 32 weights widened to f32.
 *
 * llama.cpp rounds x to 8 bits (qx in [-127, 127]). On SmolLM2 that moves
 * the top-5 logprobs by up to 0.4 against float32: its activations have
 * outliers (one value 3000 times the next in its block), and a block's
 * step is set by its largest value. So x here gets 16 bits as two bytes,
 * qx = 256*hi + lo, and each block costs two byte dot products: the
 * logprobs move by under 4e-3.
 *
 * Tiles: a few weight rows times a few tokens per inner loop. Each weight
 * block is unpacked once for all the tile's tokens and each x block loaded
 * once for all its rows, both held in registers.
 *
 * Two kernels: one on W as the file stores it (AVX2), and one on the copy
 * pack.c made at load (AVX512-VNNI), 16 rows per vector; that one needs
 * about a third of the instructions, and decode is then bound by memory.
 *
 * The Makefile compiles this file once per instruction set, QUANT_ISA
 * naming the build and its entry, quant_dot_<isa>: avx2 (the byte multiply
 * as maddubs + madd), avxvnni (vpdpbusd, 8 lanes), avx512vnni (also the
 * packed kernel) and amx (also AMX's tiles from 8 tokens). quant.c picks
 * one at run time.
 */
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/simd.h"
#include <stdlib.h>
#include <string.h>
#if defined(__AVX2__) && defined(QUANT_ISA)

enum { R = 4, C = 4 };   /* tile: weight rows x tokens */
/* Ask for each weight line this many rows before it is used. Per token the
 * model's 85 MB of weights come from L3 or memory, and the hardware
 * prefetcher alone left the loads waiting: decode on one core went from 30
 * to 60 tok/s with this. */
enum { AHEAD = 4 * R };

/* 32 values of x as x_j ~ d * (256*hi_j + lo_j), and s = d * sum_j (256*hi_j + lo_j).
 * hi is x rounded to 8 bits (llama.cpp's block_q8_1); lo is what that
 * rounding left, rounded again with a step 256 times finer: together a
 * 16-bit x, built from two 8-bit dot products. */
typedef struct { float d, s; int8_t hi[32], lo[32]; } xblock;

/* A weight block in registers: w_j = d*q_j + m, the 32 q's in x's order. */
typedef struct { __m256i q; float d, m; } wblock;

static inline float f16(const uint8_t *p) { return _cvtsh_ss((unsigned short)(p[0] | p[1] << 8)); }

/* q_j = round(v_j * inv) clamped to [-127, 127], for 32 values v: stored as
 * int8 in q, returned as floats in qf; the sum of the q's is returned. */
static inline int round_int8(int8_t q[32], __m256 qf[4], const __m256 v[4], __m256 inv) {
    const __m256 lo = _mm256_set1_ps(-127), hi = _mm256_set1_ps(127);
    __m256i qi[4];
    for (int i = 0; i < 4; i++) {
        __m256 r = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(v[i], inv), lo), hi);
        qf[i] = _mm256_round_ps(r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        qi[i] = _mm256_cvtps_epi32(qf[i]);
    }
    /* The packs narrow within each 128-bit half, interleaving the four
     * inputs; the permute puts the 32 bytes back in order. */
    __m256i q8 = _mm256_packs_epi16(_mm256_packs_epi32(qi[0], qi[1]), _mm256_packs_epi32(qi[2], qi[3]));
    _mm256_storeu_si256((__m256i *)q, _mm256_permutevar8x32_epi32(q8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    return hsum8i(_mm256_add_epi32(_mm256_add_epi32(qi[0], qi[1]), _mm256_add_epi32(qi[2], qi[3])));
}

/* x[K] -> K/32 blocks. The coarse step is max|x_j| / 127, so the largest
 * value maps to +-127; the residual is at most half that step, and a step
 * 256 times finer maps it to at most +-128 (clamped to 127). */
static void quantize_x(xblock *xb, const float *x, int K) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    for (int b = 0; b < K / 32; b++, x += 32) {
        __m256 v[4], qf[4], amax = _mm256_setzero_ps();
        for (int i = 0; i < 4; i++) {
            v[i] = _mm256_loadu_ps(x + 8 * i);
            amax = _mm256_max_ps(amax, _mm256_and_ps(v[i], abs_mask));
        }
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        float m = _mm_cvtss_f32(_mm_max_ss(m4, _mm_movehdup_ps(m4)));
        float step = m / 127, inv = m > 0 ? 127 / m : 0;
        int hi = round_int8(xb[b].hi, qf, v, _mm256_set1_ps(inv));
        for (int i = 0; i < 4; i++) v[i] = _mm256_fnmadd_ps(qf[i], _mm256_set1_ps(step), v[i]);
        int lo = round_int8(xb[b].lo, qf, v, _mm256_set1_ps(256 * inv));
        xb[b].d = step / 256;
        xb[b].s = xb[b].d * (256.0f * hi + lo);
    }
}

/* byte j holds q_j in its low four bits and q_{j+16} in its high four */
static inline __m256i nibbles(const uint8_t *p) {
    __m128i b = _mm_loadu_si128((const __m128i *)p);
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(b, 4), b), _mm256_set1_epi8(0x0f));
}

/* Q4_0's q - 8 is written as m = -8d rather than subtracted from the bytes:
 * the nibbles stay unsigned for the byte multiply, and the offset rides on
 * the m*sx term Q4_1 needs anyway. */
static inline wblock load_w(const uint8_t *p, dtype dt) {
    float d = f16(p);
    switch (dt) {
    case DT_Q8_0: return (wblock){ _mm256_loadu_si256((const __m256i *)(p + 2)), d, 0 };
    case DT_Q4_0: return (wblock){ nibbles(p + 2), d, -8 * d };
    default:      return (wblock){ nibbles(p + 4), d, f16(p + 2) };   /* DT_Q4_1 */
    }
}

/* acc + the sum of u_j v_j over each 4 adjacent bytes, as 8 int32: u unsigned, v signed */
static inline __m256i dot_us8(__m256i acc, __m256i u, __m256i v) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpbusd_epi32(acc, u, v);
#elif defined(__AVXVNNI__)
    return _mm256_dpbusd_avx_epi32(acc, u, v);
#else   /* pairs to int16, then pairs of those to int32. The int16 step saturates
         * past 32767; here u <= 128 and |v| <= 127, so 2*128*127 fits. */
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, v), _mm256_set1_epi16(1)));
#endif
}

/* sum_j q_j (256*hi_j + lo_j) in 8 int32 lanes: two byte dot products, the
 * first shifted up 8 bits (at most 4*128*127 << 8, well inside int32). The
 * byte multiply takes one unsigned operand: nibbles are; a signed Q8_0 q is
 * made so as |q| times x with q's sign. */
static inline __m256i dot_q(__m256i q, __m256i hi, __m256i lo, dtype dt) {
    if (dt == DT_Q8_0) { hi = _mm256_sign_epi8(hi, q); lo = _mm256_sign_epi8(lo, q); q = _mm256_sign_epi8(q, q); }
    return dot_us8(_mm256_slli_epi32(dot_us8(_mm256_setzero_si256(), q, hi), 8), q, lo);
}

/* y[c][r] = sum_k w[r][k] x[c][k] for an r x c tile (r <= R, c <= C) of
 * weight rows w (row bytes apart) and x blocks xq (nb per token). Inlined
 * with constant dt, r, c, so the arrays below become registers. */
static inline __attribute__((always_inline))
void tile(float *y, int N, const uint8_t *w, size_t row, dtype dt, const xblock *xq, int nb, int r, int c) {
    size_t bytes = dtype_row_bytes(dt, 32);
    __m256 acc[R][C];
    float macc[R][C];   /* sum_b m*sx, kept apart: one scalar FMA a block */
    UNROLL for (int i = 0; i < r; i++)
        UNROLL for (int t = 0; t < c; t++) { acc[i][t] = _mm256_setzero_ps(); macc[i][t] = 0; }
    for (int b = 0; b < nb; b++) {
        wblock wb[R];
        UNROLL for (int i = 0; i < r; i++) {
            const uint8_t *p = w + i * row + b * bytes;
            _mm_prefetch((const char *)p + AHEAD * row, _MM_HINT_T0);
            wb[i] = load_w(p, dt);
        }
        UNROLL for (int t = 0; t < c; t++) {
            const xblock *x = xq + (size_t)t * nb + b;
            __m256i hi = _mm256_loadu_si256((const __m256i *)x->hi), lo = _mm256_loadu_si256((const __m256i *)x->lo);
            UNROLL for (int i = 0; i < r; i++) {
                __m256 s = _mm256_cvtepi32_ps(dot_q(wb[i].q, hi, lo, dt));
                acc[i][t] = _mm256_fmadd_ps(s, _mm256_set1_ps(wb[i].d * x->d), acc[i][t]);
                if (dt != DT_Q8_0) macc[i][t] += wb[i].m * x->s;
            }
        }
    }
    UNROLL for (int i = 0; i < r; i++)
        UNROLL for (int t = 0; t < c; t++) y[(size_t)t * N + i] = hsum8(acc[i][t]) + macc[i][t];
}

/* All T tokens against rows n..n+r-1, C tokens at a time. */
static inline __attribute__((always_inline))
void row_tile(float *y, int N, const uint8_t *w, size_t row, dtype dt, const xblock *xq, int nb, int T, int r) {
    int t = 0;
    for (; t + C <= T; t += C) tile(y + (size_t)t * N, N, w, row, dt, xq + (size_t)t * nb, nb, r, C);
    for (; t < T; t++) tile(y + (size_t)t * N, N, w, row, dt, xq + (size_t)t * nb, nb, r, 1);
}

/* Rows n..n+R-1 (the last few rows one at a time) against all T tokens. */
static inline __attribute__((always_inline))
void row_block(float *y, const uint8_t *w, size_t row, dtype dt, const xblock *xq, int nb, int T, int N, int n) {
    if (N - n >= R) { row_tile(y + n, N, w + n * row, row, dt, xq, nb, T, R); return; }
    for (; n < N; n++) row_tile(y + n, N, w + n * row, row, dt, xq, nb, T, 1);
}

#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
/* Ask for every line of the group this many bytes before it is used:
 * each block asks for a block's share of the bytes (its q and scales),
 * so the lines asked for run on without a gap, past the group's end into
 * the next group's, which the same thread does next (static schedule), or
 * into the next matrix (bind.c packs them in the order forward uses them,
 * but the LM head first). Asking for each block's q alone, 32 blocks
 * ahead, left the scales' lines and as many of q's to wait on memory
 * (each group's scales follow its q): on an EPYC (Zen 4), one thread, the
 * SmolLM2 Q4_0 LM head took 0.94 ms, as long as the same loop doing no
 * arithmetic, against 0.56 for a plain read of its bytes; now 0.62-0.69
 * (bench/matmul_bench.c). 24 KB ahead rather than 8 or 16: decode tok/s
 * Q4_0 176 / 207 / 188 / 192 at 8 / 16 / 24 / 32 KB, Q4_1 137 / 133 /
 * 155 / 152 (median of 5, before the scales were asked for). */
enum { PACK_AHEAD = 24 << 10 };
/* A Q4 block's 4 chunks of nibbles (pack.c) as 8 vectors of bytes: u[j]
 * the low nibbles of chunk j, u[j+4] the high */
static inline void unpack_q4(__m512i u[8], const uint8_t *q) {
    UNROLL for (int j = 0; j < 4; j++) {
        __m512i v = _mm512_loadu_si512(q + 64 * j);
        u[j] = _mm512_and_si512(v, _mm512_set1_epi8(0x0f));
        u[j + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), _mm512_set1_epi8(0x0f));
    }
}

/* m = mk * d where the format stores no m: Q4_0's q and Q8_0's were offset
 * to unsigned by 8 and 128 */
static inline float m_scale(dtype dt) { return dt == DT_Q4_1 ? 1 : dt == DT_Q4_0 ? -8 : -128; }

/* 4 bytes of x from p, in each of the 16 lanes */
static inline __m512i bcast4(const int8_t *p) { int32_t v; memcpy(&v, p, 4); return _mm512_set1_epi32(v); }

/* y[t][16g + i] for the 16 rows of packed group g (pack.c) and c <= C
 * tokens; ahead: this pass asks for the bytes ahead (the group's first
 * tokens' pass: the others find them in cache). Lane i of every vector is
 * row i: u[j] holds q[4j..4j+3] of each row, one byte dot product with
 * x[4j..4j+3] in every lane. The scales are a vector per block, d*x.d
 * and m*x.s as in the tile above; Q4_0 and Q8_0 store no m: it is -8d and
 * -128d (their q were offset to unsigned). */
static inline __attribute__((always_inline))
void group_tile(float *y, int N, const uint8_t *g, dtype dt, const xblock *xq, int nb, int c, int ahead) {
    size_t qb = pack_q_bytes(dt), bb = pack_block_bytes(dt);
    const uint8_t *q = g;
    const __m256i *d = (const __m256i *)(g + nb * qb), *m = d + nb;
    __m512 acc[C], macc[C];
    UNROLL for (int t = 0; t < c; t++) { acc[t] = _mm512_setzero_ps(); macc[t] = _mm512_setzero_ps(); }
    if (ahead)   /* the next group's scales: past 24 KB of q they would come late */
        for (size_t a = 0; a < nb * (bb - qb); a += 64) _mm_prefetch((const char *)g + nb * bb + nb * qb + a, _MM_HINT_T1);
    for (int b = 0; b < nb; b++, q += qb) {
        if (ahead)
            for (size_t a = b * bb; a < (b + 1) * bb; a += 64) _mm_prefetch((const char *)g + PACK_AHEAD + a, _MM_HINT_T1);
        __m512i u[8];
        if (dt == DT_Q8_0)
            UNROLL for (int j = 0; j < 8; j++) u[j] = _mm512_loadu_si512(q + 64 * j);
        else
            unpack_q4(u, q);
        __m512 dv = _mm512_cvtph_ps(_mm256_loadu_si256(d + b));
        __m512 mv = dt == DT_Q4_1 ? _mm512_cvtph_ps(_mm256_loadu_si256(m + b)) : dv;
        UNROLL for (int t = 0; t < c; t++) {
            const xblock *x = xq + (size_t)t * nb + b;
            __m512i hi = _mm512_setzero_si512(), lo = hi;
            UNROLL for (int j = 0; j < 8; j++) {
                hi = _mm512_dpbusd_epi32(hi, u[j], bcast4(x->hi + 4 * j));
                lo = _mm512_dpbusd_epi32(lo, u[j], bcast4(x->lo + 4 * j));
            }
            __m512 s = _mm512_cvtepi32_ps(_mm512_add_epi32(_mm512_slli_epi32(hi, 8), lo));
            acc[t] = _mm512_fmadd_ps(s, _mm512_mul_ps(dv, _mm512_set1_ps(x->d)), acc[t]);
            macc[t] = _mm512_fmadd_ps(mv, _mm512_set1_ps(x->s), macc[t]);
        }
    }
    float mk = m_scale(dt);
    UNROLL for (int t = 0; t < c; t++)
        _mm512_storeu_ps(y + (size_t)t * N, _mm512_fmadd_ps(macc[t], _mm512_set1_ps(mk), acc[t]));
}

/* Group g (rows 16g..16g+15) against all T tokens, C at a time. */
static inline __attribute__((always_inline))
void group_block(float *y, const uint8_t *w, dtype dt, const xblock *xq, int nb, int T, int N, int g) {
    int t = 0;
    for (; t + C <= T; t += C) group_tile(y + (size_t)t * N + g * PACK_ROWS, N, w, dt, xq + (size_t)t * nb, nb, C, t == 0);
    for (; t < T; t++) group_tile(y + (size_t)t * N + g * PACK_ROWS, N, w, dt, xq + (size_t)t * nb, nb, 1, t == 0);
}

static void packed_matmul(float *y, const uint8_t *p, dtype dt, const xblock *xq, int nb, int T, int N) {
    size_t group = PACK_ROWS * dtype_row_bytes(dt, 32 * nb);
    #pragma omp parallel for schedule(static) if ((size_t)T * N * nb * 32 >= PARALLEL_MIN)
    for (int g = 0; g < N / PACK_ROWS; g++)
        switch (dt) {
        case DT_Q8_0: group_block(y, p + g * group, DT_Q8_0, xq, nb, T, N, g); break;
        case DT_Q4_0: group_block(y, p + g * group, DT_Q4_0, xq, nb, T, N, g); break;
        default:      group_block(y, p + g * group, DT_Q4_1, xq, nb, T, N, g); break;
        }
}

#ifdef __AMX_BF16__
/* Many tokens at once (prefill, batched decode): AMX's tile multiply, in
 * bf16 with fp32 sums (TDPBF16PS), so that no x needs rounding to 8 bits:
 *   - every weight q of these formats is a small integer, exact in bf16
 *     (Q8_0 -128..127, Q4_0 -8..7, Q4_1 0..15); the scales stay fp32;
 *   - each x is split as hi + lo, two bf16 (hi its top 16 bits, lo what
 *     is left, 8 more bits), so x keeps 16 bits of its own, as in the
 *     integer kernels, but relative to itself rather than to its block's
 *     largest value;
 *   - C = A_hi B + A_lo B sums in fp32 inside the tile: one tile store a
 *     block, then y += d * C (Q4_1: + m * sum x), 16 rows a vector.
 * Against the integer AMX multiply (TDPBSUD, x as two bytes) this halves
 * the tile stores and the vector work a block, and no x scale is applied:
 * SmolLM2's Q8_0 gate_proj at 42 tokens, one thread, 0.210 ms against
 * 0.254 (bench/matmul_bench.c; docs/cpu.md).
 * A group's blocks are converted to bf16 once (into bq) and read back as
 * B tiles by every 16 tokens. TDPBF16PS multiplies pairs: B's row p holds
 * for each of 16 weight rows two weights, A's row m the two x's they meet.
 * Which two k make a pair is free if A and B agree; the cheapest for the
 * formats' bytes is k and k+2 (below), so x is stored in each 4 as
 * x0 x2 x1 x3. */
enum { AMX_MIN = 8, TM = 16 };   /* tokens: fewer go to group_tile; a tile's rows */
/* the tiles (GCC's intrinsics paste the number into the instruction):
 * A (hi, lo), B, and two C (3 and 4, taking turns by block) */
#define TAH 0
#define TAL 1
#define TB 2

typedef struct __attribute__((packed, aligned(64))) {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

/* x[T][K] -> xa[padded][K/32][2][32]: each block's hi, then its lo (bf16,
 * pairs k, k+2 as above; rows past T zero), and sx[t][b], the sum of block
 * b of token t. hi and lo side by side: the line holding lo comes with
 * hi's (L2 fetches lines in aligned pairs). */
static void amx_x(uint16_t *xa, float *sx, const float *x, int T, int padded, int K) {
    const __m512i perm = _mm512_setr_epi32(0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15);
    const __m512i top = _mm512_set1_epi32((int)0xffff0000);
    for (int t = 0; t < T; t++)
        for (int k = 0; k < K; k += 32) {
            __m512 sum = _mm512_setzero_ps();
            for (int h = 0; h < 32; h += 16) {
                __m512 v = _mm512_permutexvar_ps(perm, _mm512_loadu_ps(x + (size_t)t * K + k + h));
                __m512i vh = _mm512_and_si512(_mm512_castps_si512(v), top);
                __m512 vl = _mm512_sub_ps(v, _mm512_castsi512_ps(vh));   /* exact: x and hi share the exponent */
                uint16_t *a = xa + ((size_t)t * K + k) * 2 + h;
                _mm256_storeu_si256((__m256i *)a, _mm512_cvtepi32_epi16(_mm512_srli_epi32(vh, 16)));
                _mm256_storeu_si256((__m256i *)(a + 32), _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(vl), 16)));
                sum = _mm512_add_ps(sum, v);
            }
            sx[(size_t)t * (K / 32) + k / 32] = _mm512_reduce_add_ps(sum);
        }
    memset(xa + (size_t)T * K * 2, 0, (size_t)(padded - T) * K * 4);
    memset(sx + (size_t)T * (K / 32), 0, (size_t)(padded - T) * (K / 32) * sizeof *sx);
}

/* Block b of a group (pack.c) as a B tile of bf16: 16 rows of 64 bytes,
 * row 2c+s (s = 0, 1) holding k = 4c+s and 4c+s+2 of each weight row.
 * Q8_0: chunk c's bytes q+128 become floats through 2^23's mantissa, the
 * low 16 bits dropped exactly (|q| <= 128 has 8 significant bits). Q4: a
 * table lookup on each 16-bit word, whose low 5 bits hold a nibble and
 * one stray bit (the table is written twice). */
static inline void amx_b(uint8_t *out, const uint8_t *q, dtype dt) {
    __m512i *o = (__m512i *)out;
    if (dt == DT_Q8_0) {
        const __m512i byte = _mm512_set1_epi32(0xff), magic = _mm512_set1_epi32(0x4b000000);
        const __m512i top = _mm512_set1_epi32((int)0xffff0000);
        const __m512 bias = _mm512_set1_ps(8388608.0f + 128);
        UNROLL for (int c = 0; c < 8; c++) {
            __m512i v = _mm512_loadu_si512(q + 64 * c), f[4];
            UNROLL for (int i = 0; i < 4; i++)   /* (A & B) | C */
                f[i] = _mm512_castps_si512(_mm512_sub_ps(_mm512_castsi512_ps(
                           _mm512_ternarylogic_epi32(_mm512_srli_epi32(v, 8 * i), byte, magic, 0xea)), bias));
            /* (A & C) | B: the high word from k+2, the low from k */
            o[2 * c] = _mm512_ternarylogic_epi32(f[2], _mm512_srli_epi32(f[0], 16), top, 0xec);
            o[2 * c + 1] = _mm512_ternarylogic_epi32(f[3], _mm512_srli_epi32(f[1], 16), top, 0xec);
        }
        return;
    }
    /* bf16 of 0..15 (Q4_1) or of -8..7 (Q4_0), twice */
    static const uint16_t q4_1[32] __attribute__((aligned(64))) = {
        0x0000, 0x3f80, 0x4000, 0x4040, 0x4080, 0x40a0, 0x40c0, 0x40e0, 0x4100, 0x4110, 0x4120, 0x4130, 0x4140, 0x4150, 0x4160, 0x4170,
        0x0000, 0x3f80, 0x4000, 0x4040, 0x4080, 0x40a0, 0x40c0, 0x40e0, 0x4100, 0x4110, 0x4120, 0x4130, 0x4140, 0x4150, 0x4160, 0x4170 };
    static const uint16_t q4_0[32] __attribute__((aligned(64))) = {
        0xc100, 0xc0e0, 0xc0c0, 0xc0a0, 0xc080, 0xc040, 0xc000, 0xbf80, 0x0000, 0x3f80, 0x4000, 0x4040, 0x4080, 0x40a0, 0x40c0, 0x40e0,
        0xc100, 0xc0e0, 0xc0c0, 0xc0a0, 0xc080, 0xc040, 0xc000, 0xbf80, 0x0000, 0x3f80, 0x4000, 0x4040, 0x4080, 0x40a0, 0x40c0, 0x40e0 };
    const __m512i table = _mm512_load_si512(dt == DT_Q4_0 ? q4_0 : q4_1);
    UNROLL for (int c = 0; c < 4; c++) {   /* low nibbles k = 4c.., high k = 16+4c.. */
        __m512i v = _mm512_loadu_si512(q + 64 * c);
        o[2 * c] = _mm512_permutexvar_epi16(v, table);
        o[2 * c + 1] = _mm512_permutexvar_epi16(_mm512_srli_epi16(v, 8), table);
        o[8 + 2 * c] = _mm512_permutexvar_epi16(_mm512_srli_epi16(v, 4), table);
        o[9 + 2 * c] = _mm512_permutexvar_epi16(_mm512_srli_epi16(v, 12), table);
    }
}

/* A and B of block b into C tile c */
#define AMX_BLOCK(b, c) do {                                           \
        _tile_loadd(TB, bq + (size_t)(b) * 1024, 64);                  \
        _tile_loadd(TAH, xa + 64 * (b), stride);                       \
        _tile_loadd(TAL, xa + 64 * (b) + 32, stride);                  \
        _tile_zero(c);                                                 \
        _tile_dpbf16ps(c, TAH, TB);                                    \
        _tile_dpbf16ps(c, TAL, TB);                                    \
    } while (0)

/* y[t0..t0+15][16g..16g+15] from the group's B tiles bq and scales d, m
 * (pack.c), and x's tokens t0.. as xa and sx */
static inline __attribute__((always_inline))
void amx_tile(float *y, int N, const uint8_t *bq, const __m256i *d, const __m256i *m, dtype dt,
              const uint16_t *xa, const float *sx, int nb, int t0, int T, const uint8_t *next) {
    size_t bb = pack_block_bytes(dt), stride = (size_t)nb * 128;
    float c[2][TM][16] __attribute__((aligned(64)));   /* the sums of blocks b and b-1 */
    __m512 acc[TM];
    UNROLL for (int t = 0; t < TM; t++) acc[t] = _mm512_setzero_ps();
    /* Three blocks in flight: AMX multiplies b+1 and stores b while the
     * vector unit scales b-1, whose store has reached memory (loads right
     * behind a tile store wait for it). */
    AMX_BLOCK(0, 3);
    for (int b = 0; b <= nb; b++) {
        if (b < nb) {
            if (next)
                for (size_t j = 0; j < bb; j += 64) _mm_prefetch((const char *)next + b * bb + j, _MM_HINT_T0);
            if (b % 2 == 0) {
                if (b + 1 < nb) AMX_BLOCK(b + 1, 4);
                _tile_stored(3, c[0], 64);
            } else {
                if (b + 1 < nb) AMX_BLOCK(b + 1, 3);
                _tile_stored(4, c[1], 64);
            }
        }
        if (b == 0) continue;
        int e = b - 1;
        __m512 dv = _mm512_cvtph_ps(_mm256_loadu_si256(d + e));
        if (dt == DT_Q4_1) {
            __m512 mv = _mm512_cvtph_ps(_mm256_loadu_si256(m + e));
            UNROLL for (int t = 0; t < TM; t++)
                acc[t] = _mm512_fmadd_ps(mv, _mm512_set1_ps(sx[(size_t)t * nb + e]), acc[t]);
        }
        UNROLL for (int t = 0; t < TM; t++) acc[t] = _mm512_fmadd_ps(_mm512_load_ps(c[e % 2][t]), dv, acc[t]);
    }
    UNROLL for (int t = 0; t < TM; t++)
        if (t0 + t < T) _mm512_storeu_ps(y + (size_t)(t0 + t) * N, acc[t]);
}

/* Group g: its blocks to bf16 in bq, then all tokens, 16 at a time; next:
 * the next group's bytes (NULL after the last). */
static inline __attribute__((always_inline))
void amx_group(float *y, int N, const uint8_t *g, const uint8_t *next, uint8_t *bq, dtype dt,
               const uint16_t *xa, const float *sx, int nb, int T, int K) {
    size_t qb = pack_q_bytes(dt);
    const __m256i *d = (const __m256i *)(g + nb * qb), *m = d + nb;
    for (int b = 0; b < nb; b++) amx_b(bq + (size_t)b * 1024, g + b * qb, dt);
    for (int t0 = 0; t0 < T; t0 += TM)   /* the first 16 tokens' pass asks for the next group's bytes */
        amx_tile(y, N, bq, d, m, dt, xa + (size_t)t0 * K * 2, sx + (size_t)t0 * nb, nb, t0, T,
                 t0 ? NULL : next);
}

static void amx_matmul(float *y, const float *x, const uint8_t *p, dtype dt, int T, int N, int K) {
    int nb = K / 32, padded = (T + TM - 1) / TM * TM;
    size_t group = PACK_ROWS * dtype_row_bytes(dt, K);
    uint16_t *xa = k_scratch((size_t)padded * K * 4, 64);   /* a tile row, a cache line */
    float *sx = k_scratch((size_t)padded * nb * sizeof *sx, 0);
    amx_x(xa, sx, x, T, padded, K);
    tile_config cfg = { .palette = 1 };
    for (int t = 0; t < 5; t++) cfg.rows[t] = TM, cfg.colsb[t] = 64;   /* A, A, B, C, C: 16 x 64 bytes */
    #pragma omp parallel if ((size_t)T * N * K >= PARALLEL_MIN)
    {
        uint8_t *bq = k_scratch((size_t)nb * 1024, 64);   /* this thread's group of B tiles */
        _tile_loadconfig(&cfg);   /* each thread's own tile state */
        /* Denormal inputs read as zero (DAZ), as the tile products read
         * them: on SmolLM2 Q4_1 at 42 tokens, down_proj (30 layers) took
         * 12.3 ms without, 7.1 with, against 6.3 for up_proj; some input
         * of the vector scaling was denormal there (a microcode assist
         * each). The likely one, the sums sx of the padding tokens past T,
         * read Q4_1 only and were left uninitialized until amx_x zeroed
         * them; DAZ stays until that is measured on an AMX host.
         * Flush-to-zero of results alone changed nothing. */
        unsigned csr = _mm_getcsr();
        _mm_setcsr(csr | 0x0040);
        int groups = N / PACK_ROWS;
        #pragma omp for schedule(static)
        for (int g = 0; g < groups; g++) {
            const uint8_t *w = p + g * group, *next = g + 1 < groups ? w + group : NULL;
            switch (dt) {
            case DT_Q8_0: amx_group(y + g * PACK_ROWS, N, w, next, bq, DT_Q8_0, xa, sx, nb, T, K); break;
            case DT_Q4_0: amx_group(y + g * PACK_ROWS, N, w, next, bq, DT_Q4_0, xa, sx, nb, T, K); break;
            default:      amx_group(y + g * PACK_ROWS, N, w, next, bq, DT_Q4_1, xa, sx, nb, T, K); break;
            }
        }
        _tile_release();
        _mm_setcsr(csr);
        free(bq);
    }
    free(xa);
    free(sx);
}
#endif
#endif

/* W as the file stores it, R rows at a time. */
static void file_matmul(float *y, const uint8_t *w, dtype dt, const xblock *xq, int nb, int T, int N) {
    size_t row = dtype_row_bytes(dt, 32 * nb);
    /* The switch sits inside the parallel loop so that each case inlines
     * its own copy of the tile with dt a constant (OpenMP outlines the loop
     * body before the compiler inlines). */
    #pragma omp parallel for schedule(static) if ((size_t)T * N * nb * 32 >= PARALLEL_MIN)
    for (int n = 0; n < N; n += R)
        switch (dt) {
        case DT_Q8_0: row_block(y, w, row, DT_Q8_0, xq, nb, T, N, n); break;
        case DT_Q4_0: row_block(y, w, row, DT_Q4_0, xq, nb, T, N, n); break;
        default:      row_block(y, w, row, DT_Q4_1, xq, nb, T, N, n); break;
        }
}

#define ENTRY_(isa) quant_dot_##isa
#define ENTRY(isa) ENTRY_(isa)
/* p: pack.c's interleaved copy of W (avx512vnni only), else NULL */
void ENTRY(QUANT_ISA)(float *y, const float *x, const tensor *W, const uint8_t *p, const float *bias, int T, int N, int K) {
    int nb = K / 32;
#ifdef __AMX_BF16__
    if (p && T >= AMX_MIN) amx_matmul(y, x, p, W->dt, T, N, K);
    else
#endif
    {
        xblock *xq = k_scratch((size_t)T * nb * sizeof *xq, 0);
        for (int t = 0; t < T; t++) quantize_x(xq + (size_t)t * nb, x + (size_t)t * K, K);
        if (!p) file_matmul(y, W->data, W->dt, xq, nb, T, N);
#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
        else packed_matmul(y, p, W->dt, xq, nb, T, N);
#endif
        free(xq);
    }
    if (bias)
        for (int t = 0; t < T; t++)
            for (int n = 0; n < N; n++) y[(size_t)t * N + n] += bias[n];
}
#endif
