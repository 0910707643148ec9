/*
 * membw.c -- this machine's memory bandwidth, the bound decode is held to.
 * Copy counts bytes read + written (STREAM's convention); read counts a
 * sum over the array. Both with all OpenMP threads, best of 5.
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

int main(int argc, char **argv) {
    size_t n = (argc > 1 ? (size_t)atol(argv[1]) : 512) << 20;   /* MiB per array */
    float *a = malloc(n), *b = malloc(n);
    size_t m = n / sizeof(float);
    #pragma omp parallel for
    for (size_t i = 0; i < m; i++) { a[i] = 1; b[i] = 0; }
    double best_copy = 1e9, best_read = 1e9, sink = 0;
    for (int r = 0; r < 5; r++) {
        double t = now();
        #pragma omp parallel
        {
            int k = omp_get_thread_num(), p = omp_get_num_threads();
            size_t lo = m / p * k, hi = k == p - 1 ? m : m / p * (k + 1);
            memcpy(b + lo, a + lo, (hi - lo) * sizeof(float));
        }
        t = now() - t; if (t < best_copy) best_copy = t;
        t = now();
        uint64_t s = 0;                       /* integer sum, 4 lanes x 4 chains: reads every byte */
        const uint64_t *q = (const uint64_t *)a;
        #pragma omp parallel for reduction(+:s)
        for (size_t i = 0; i < n / 8; i += 16) {
            uint64_t t = 0;
            for (int k = 0; k < 16; k++) t += q[i + k];
            s += t;
        }
        t = now() - t; if (t < best_read) best_read = t;
        sink += (double)s + b[r];
    }
    printf("{\"threads\": %d, \"bytes\": %zu, \"copy_GBps\": %.2f, \"read_GBps\": %.2f, \"sink\": %g}\n",
           omp_get_max_threads(), n, 2.0 * n / best_copy / 1e9, (double)n / best_read / 1e9, sink);
    free(a); free(b);
    return 0;
}
