/*
 * matmul_ref.c -- y = x W^T + b the plain way: one row of W at a time as
 * f32, a dot product with each row of x. This is what matmul.c computes;
 * matmul.c is it made fast (vector units, rows kept in cache, integer dot
 * products for the block formats). The unit tests use it as the oracle.
 */
#include "kernels/cpu/kernels.h"
#include <stdlib.h>

void k_matmul_ref(float *y, const float *x, const tensor *W, const float *b, int T, int N, int K) {
    size_t row = dtype_row_bytes(W->dt, K);
    float *w = k_scratch((size_t)K * sizeof *w, 0);
    for (int n = 0; n < N; n++) {
        row_to_f32(w, (const char *)W->data + n * row, W->dt, K);   /* W[n, :] */
        for (int t = 0; t < T; t++) {
            double s = b ? b[n] : 0;
            for (int k = 0; k < K; k++) s += (double)w[k] * x[(size_t)t * K + k];
            y[(size_t)t * N + n] = (float)s;
        }
    }
    free(w);
}
