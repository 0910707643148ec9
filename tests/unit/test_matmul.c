/* test_matmul.c -- the reference loop k_matmul_ref against a float64
 * product with the weights dequantized here, from the format's definition;
 * then k_matmul, the fast kernels, against k_matmul_ref, on every weight
 * dtype, both as the file stores them and from the CPU's copy (k_pack;
 * block formats interleaved), and an embedding's rows read back out of the
 * copy; the block formats by each build of quant_dot.c this CPU can run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/cpu/kernels.h"

static uint32_t rng = 12345;
static uint32_t next(void) { rng ^= rng << 13; rng ^= rng >> 17; rng ^= rng << 5; return rng; }
static double unif(void) { return (next() & 0xffffff) / 16777216.0 * 2 - 1; }

static double half(uint16_t h) {   /* IEEE half, written out: sign, exponent, mantissa */
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e ? ldexp(1 + m / 1024.0, e - 15) : ldexp(m / 1024.0, -14);
    return h >> 15 ? -v : v;
}

/* One weight value of row n, column k, from the bytes. */
static double weight(dtype dt, const uint8_t *w, int K, int n, int k) {
    size_t row = dtype_row_bytes(dt, K);
    const uint8_t *r = w + n * row;
    switch (dt) {
    case DT_F32: { float f; memcpy(&f, r + 4 * k, 4); return f; }
    case DT_F16: return half((uint16_t)(r[2 * k] | r[2 * k + 1] << 8));
    case DT_BF16: { uint32_t u = (uint32_t)(r[2 * k] | r[2 * k + 1] << 8) << 16; float f; memcpy(&f, &u, 4); return f; }
    default: break;
    }
    int b = k / 32, j = k % 32;
    if (dt == DT_Q8_0) { const uint8_t *p = r + b * 34; return half((uint16_t)(p[0] | p[1] << 8)) * (int8_t)p[2 + j]; }
    if (dt == DT_Q4_0) {
        const uint8_t *p = r + b * 18; int q = j < 16 ? p[2 + j] & 15 : p[2 + j - 16] >> 4;
        return half((uint16_t)(p[0] | p[1] << 8)) * (q - 8);
    }
    const uint8_t *p = r + b * 20; int q = j < 16 ? p[4 + j] & 15 : p[4 + j - 16] >> 4;   /* Q4_1 */
    return half((uint16_t)(p[0] | p[1] << 8)) * q + half((uint16_t)(p[2] | p[3] << 8));
}

/* Random bytes, with every scale a sane half (0.001 .. 0.06). */
static uint8_t *random_weights(dtype dt, int N, int K) {
    size_t row = dtype_row_bytes(dt, K), nb = (size_t)N * row;
    uint8_t *w = malloc(nb);
    for (size_t i = 0; i < nb; i++) w[i] = (uint8_t)next();
    for (int n = 0; n < N; n++) {
        uint8_t *r = w + n * row;
        if (dt == DT_F32) for (int k = 0; k < K; k++) { float f = (float)unif(); memcpy(r + 4 * k, &f, 4); }
        if (dt == DT_F16 || dt == DT_BF16)
            for (int k = 0; k < K; k++) {
                uint16_t h = dt == DT_F16 ? (uint16_t)(0x3000 + (next() & 0x3ff) + (next() & 0x8000))
                                          : (uint16_t)(0x3e00 + (next() & 0x7f) + (next() & 0x8000));
                r[2 * k] = h & 255; r[2 * k + 1] = h >> 8;
            }
        int bb = dt == DT_Q8_0 ? 34 : dt == DT_Q4_0 ? 18 : 20;
        if (dtype_block(dt) == 32)
            for (int b = 0; b < K / 32; b++) {
                uint8_t *p = r + b * bb;
                uint16_t d = (uint16_t)(0x1400 + (next() & 0x7ff));
                p[0] = d & 255; p[1] = d >> 8;
                if (dt == DT_Q4_1) { uint16_t m = (uint16_t)(0x9400 + (next() & 0x3ff)); p[2] = m & 255; p[3] = m >> 8; }
            }
    }
    return w;
}

static void check_as(dtype dt, int T, int N, int K, int packed) {
    uint8_t *w = random_weights(dt, N, K);
    tensor W = { .name = "W", .dt = dt, .ndim = 2, .shape = { N, K }, .data = w, .nbytes = dtype_row_bytes(dt, K) * N };
    if (packed) assert_true(k_pack(&W) >= 0);
    float *x = malloc(sizeof(float) * T * K), *y = malloc(sizeof(float) * T * N), *b = malloc(sizeof(float) * N);
    for (int i = 0; i < T * K; i++) x[i] = (float)unif() * (i % 17 == 0 ? 40 : 1);   /* some outliers */
    for (int n = 0; n < N; n++) b[n] = (float)unif();
    float *yref = malloc(sizeof(float) * T * N);
    k_matmul_ref(yref, x, &W, b, T, N, K);
    k_matmul(y, x, &W, b, T, N, K);
    /* Once, not once a product: each weight from its bytes, and each x's
     * largest magnitude in its block of 32 (the block formats' x step). */
    double *wd = malloc(sizeof(double) * N * K), *bmax = calloc((size_t)T * K, sizeof(double));
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++) wd[n * K + k] = weight(dt, w, K, n, k);
    for (int t = 0; t < T; t++)
        for (int k = 0; k < K; k++)
            for (int j = k / 32 * 32; j < k / 32 * 32 + 32 && j < K; j++) bmax[t * K + k] = fmax(bmax[t * K + k], fabs(x[t * K + j]));
    for (int t = 0; t < T; t++)
        for (int n = 0; n < N; n++) {
            double ref = b[n], mag = fabs(b[n]), xerr = 0;
            for (int k = 0; k < K; k++) {
                double wk = wd[n * K + k], p = wk * x[t * K + k];
                ref += p; mag += fabs(p);
                xerr += fabs(wk) * bmax[t * K + k] / (127.0 * 256);   /* x as two bytes: step max/127/256 */
            }
            /* the reference: exact products, one f32 rounding at the end */
            double yr = yref[t * N + n];
            if (fabs(yr - ref) > 1e-6 * mag + 1e-7)
                fail_msg("%s T=%d N=%d K=%d: k_matmul_ref y[%d,%d] = %.7g, float64 says %.7g", dtype_name(dt), T, N, K, t, n, yr, ref);
            /* the fast kernels: f32 accumulation; block formats also round x, per block of 32 */
            double tol = 1e-5 * mag + (dtype_block(dt) == 32 ? xerr : 0) + 1e-6;
            if (fabs(y[t * N + n] - yr) > tol)
                fail_msg("%s%s T=%d N=%d K=%d: y[%d,%d] = %.7g, k_matmul_ref says %.7g (tol %.2g)", dtype_name(dt),
                         packed ? " packed" : "", T, N, K, t, n, y[t * N + n], yr, tol);
        }
    k_pack_reset();
    free(w); free(x); free(y); free(yref); free(b); free(wd); free(bmax);
}

/* Each dtype as the file stores it and from the CPU's copy (block formats:
 * those whose rows are a multiple of 16, interleaved). */
static void check(dtype dt, int T, int N, int K) {
    check_as(dt, T, N, K, 0);
    if (dtype_block(dt) == 1 || N % 16 == 0) check_as(dt, T, N, K, 1);
}

static void shapes(const dtype *dts, size_t n_dts) {
    /* rows of K = 7, 45, 200 end part way through a vector or an unrolled turn (float dtypes only) */
    const int TS[] = { 1, 3, 5, 9 }, NS[] = { 1, 3, 7, 13, 130, 16, 48 }, KS[] = { 32, 96, 256, 7, 45, 200 };
    for (size_t d = 0; d < n_dts; d++)
        for (size_t t = 0; t < 4; t++)
            for (size_t n = 0; n < 7; n++)
                for (size_t k = 0; k < 6; k++)
                    if (KS[k] % dtype_block(dts[d]) == 0) check(dts[d], TS[t], NS[n], KS[k]);
}

static void every_dtype_and_shape(void **state) {
    (void)state;
    const dtype DTS[] = { DT_F32, DT_F16, DT_BF16, DT_Q8_0, DT_Q4_0, DT_Q4_1 };
    shapes(DTS, 6);
}

/* quant.c picks the widest build at run time; each one this CPU has, in
 * turn, against the same reference (those it lacks are said, not run). */
static void every_cpu_kernel(void **state) {
    (void)state;
    const char *widest = k_quant_kernel(), *ALL[] = { "amx", "avx512vnni", "avxvnni", "avx2" };
    const dtype DTS[] = { DT_Q8_0, DT_Q4_0, DT_Q4_1 };
    print_message("this CPU's block-format kernels: %s; the default %s\n", k_quant_kernels(), widest);
    for (int i = 0; i < 4; i++) {
        if (k_quant_use(ALL[i])) { print_message("skip: this CPU has no %s\n", ALL[i]); continue; }
        assert_string_equal(k_quant_kernel(), ALL[i]);
        shapes(DTS, 3);
        check(DT_Q4_1, 1, 1024, 512);   /* in parallel */
        check(DT_Q8_0, 6, 512, 512);
        for (int d = 0; d < 3; d++) {   /* AMX's 16-token tiles: one, a part, several and a part */
            check(DTS[d], 16, 48, 96);
            check(DTS[d], 8, 32, 64);
            check(DTS[d], 42, 64, 576);
        }
        check(DT_Q4_0, 40, 512, 512);   /* in parallel */
    }
    assert_int_equal(k_quant_use("sse2"), -1);
    if (strcmp(widest, "none")) assert_int_equal(k_quant_use(widest), 0);
}

static void large_enough_to_run_in_parallel(void **state) {
    (void)state;
    check(DT_Q4_1, 1, 1024, 512);
    check(DT_Q4_0, 1, 1024, 512);
    check(DT_BF16, 1, 1024, 512);
    check(DT_Q8_0, 6, 512, 512);
    check(DT_Q4_1, 5, 512, 512);
    check(DT_F16, 6, 512, 512);
    /* more tokens than one block of the float GEMM (64) */
    check(DT_BF16, 70, 130, 200);
    check(DT_F32, 130, 48, 96);
}

/* A tied embedding is read back out of the CPU's copy (k_unpack_row):
 * every row the same floats as from the file's bytes. */
static void embedding_rows_from_the_packed_copy(void **state) {
    (void)state;
    const dtype DTS[] = { DT_F32, DT_F16, DT_BF16, DT_Q8_0, DT_Q4_0, DT_Q4_1 };
    const int NS[] = { 16, 48, 13 }, KS[] = { 32, 96, 256 };
    for (size_t d = 0; d < 6; d++)
        for (size_t n = 0; n < 3; n++)
            for (size_t k = 0; k < 3; k++) {
                int N = NS[n], K = KS[k], ids[64];
                uint8_t *w = random_weights(DTS[d], N, K);
                tensor E = { .name = "E", .dt = DTS[d], .ndim = 2, .shape = { N, K }, .data = w, .nbytes = dtype_row_bytes(DTS[d], K) * N };
                for (int t = 0; t < N; t++) ids[t] = (t * 7 + 3) % N;
                float *file = malloc(sizeof(float) * N * K), *copy = malloc(sizeof(float) * N * K);
                k_embedding(file, &E, ids, N);
                assert_true(k_pack(&E) >= 0);
                k_embedding(copy, &E, ids, N);
                assert_memory_equal(file, copy, sizeof(float) * N * K);
                k_pack_reset();
                free(w); free(file); free(copy);
            }
}

int main(void) {
    const struct CMUnitTest tests[] = { cmocka_unit_test(every_dtype_and_shape), cmocka_unit_test(every_cpu_kernel),
                                        cmocka_unit_test(large_enough_to_run_in_parallel),
                                        cmocka_unit_test(embedding_rows_from_the_packed_copy) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
