/* matmul_bench.c -- one block-format matmul, y[T,N] = x[T,K] W[N,K]^T, timed
 * alone: random weights (any byte is a valid q; scales sane halves), W
 * packed as at load, the median of many calls after a warm-up. As in a
 * forward pass, each call reads another copy of W, about 128 MB of them in
 * turn, so W comes from L3 or memory, not from the core's own cache.
 * Prints the milliseconds a call and the multiply-adds a second (measured,
 * this host).
 *
 *   build/bench/matmul_bench [Q8_0|Q4_0|Q4_1] [T] [N] [K] [kernel]
 *   defaults: Q8_0 42 1536 576 (SmolLM2's gate_proj at the race's prompt),
 *   the kernel hipath would choose
 */
#include "kernels/cpu/kernels.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

int main(int argc, char **argv) {
    const char *fmt = argc > 1 ? argv[1] : "Q8_0";
    int T = argc > 2 ? atoi(argv[2]) : 42, N = argc > 3 ? atoi(argv[3]) : 1536, K = argc > 4 ? atoi(argv[4]) : 576;
    if (argc > 5 && k_quant_use(argv[5])) { fprintf(stderr, "kernel '%s' is unknown or not on this CPU (it has: %s)\n", argv[5], k_quant_kernels()); return 1; }
    dtype dt = !strcmp(fmt, "Q4_0") ? DT_Q4_0 : !strcmp(fmt, "Q4_1") ? DT_Q4_1 : DT_Q8_0;
    if (dt == DT_Q8_0 && strcmp(fmt, "Q8_0")) { fprintf(stderr, "format '%s' is not one of Q8_0, Q4_0, Q4_1\n", fmt); return 1; }
    if (T < 1 || N < 16 || N % 16 || K < 32 || K % 32) { fprintf(stderr, "T >= 1, N a multiple of 16, K of 32\n"); return 1; }
    size_t row = dtype_row_bytes(dt, K), bytes = row * N;
    int copies = (int)((128u << 20) / bytes) + 1;
    uint8_t *w = malloc(bytes);
    tensor *W = calloc(copies, sizeof *W);
    float *x = malloc(sizeof(float) * T * K), *y = malloc(sizeof(float) * T * N);
    srand(1);
    for (size_t i = 0; i < bytes; i++) w[i] = (uint8_t)rand();
    for (int n = 0; n < N; n++)
        for (int b = 0; b < K / 32; b++) { uint8_t *p = w + n * row + b * (row / (K / 32)); p[0] = 0; p[1] = 0x20; p[2] = dt == DT_Q4_1 ? 0 : p[2]; p[3] = dt == DT_Q4_1 ? 0xa0 : p[3]; }
    for (int i = 0; i < T * K; i++) x[i] = (float)rand() / RAND_MAX - 0.5f;
    for (int c = 0; c < copies; c++) {   /* pack.c keys its copies by the bytes' address */
        void *copy = malloc(bytes);
        if (!copy) { fprintf(stderr, "out of memory\n"); return 1; }
        W[c] = (tensor){ .name = "W", .dt = dt, .ndim = 2, .shape = { N, K }, .data = memcpy(copy, w, bytes), .nbytes = bytes };
        if (k_pack(&W[c]) < 0) { fprintf(stderr, "out of memory\n"); return 1; }
    }
    enum { RUNS = 400 };
    double t[RUNS];
    for (int i = 0; i < copies; i++) k_matmul(y, x, &W[i], NULL, T, N, K);
    for (int i = 0; i < RUNS; i++) {
        double t0 = now();
        k_matmul(y, x, &W[i % copies], NULL, T, N, K);
        t[i] = now() - t0;
    }
    qsort(t, RUNS, sizeof *t, cmp);
    printf("%s T=%d N=%d K=%d kernel %s: %.4f ms (median of %d, measured), %.1f GMAC/s\n",
           fmt, T, N, K, k_quant_kernel(), t[RUNS / 2] * 1e3, RUNS, (double)T * N * K / t[RUNS / 2] * 1e-9);
    return 0;
}
