/* elementwise.c -- embedding, rmsnorm, rope, silu*mul, add. */
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/simd.h"
#include <math.h>

void k_embedding(float *x, const tensor *E, const int *ids, int T) {
    int64_t dim = E->shape[1];
    size_t row = dtype_row_bytes(E->dt, dim);
    for (int t = 0; t < T; t++) row_to_f32(x + t * dim, (const char *)E->data + (size_t)ids[t] * row, E->dt, dim);
}

void k_rmsnorm(float *o, const float *x, const float *w, int T, int n, float eps) {
    for (int t = 0; t < T; t++, x += n, o += n) {
        double ss = 0;
        for (int i = 0; i < n; i++) ss += (double)x[i] * x[i];
        float r = 1.0f / sqrtf((float)(ss / n) + eps);
        for (int i = 0; i < n; i++) o[i] = x[i] * r * w[i];
    }
}

/* Pair (a, b) of a head rotates by angle pos * theta^(-2i/d). HF pairs
 * dimension i with i + d/2 (rotate_half); GGUF llama pairs 2i with 2i+1. */
void k_rope(float *x, int T, int n_heads, int head_dim, const int *pos, float theta, int adjacent) {
    int half = head_dim / 2;
    for (int t = 0; t < T; t++)
        for (int i = 0; i < half; i++) {
            double freq = pow((double)theta, -2.0 * i / head_dim), a = pos[t] * freq;
            float c = (float)cos(a), s = (float)sin(a);
            for (int h = 0; h < n_heads; h++) {
                float *v = x + ((size_t)t * n_heads + h) * head_dim;
                int i0 = adjacent ? 2 * i : i, i1 = adjacent ? 2 * i + 1 : i + half;
                float a0 = v[i0], a1 = v[i1];
                v[i0] = a0 * c - a1 * s;
                v[i1] = a1 * c + a0 * s;
            }
        }
}

void k_silu_mul(float *g, const float *u, int n) {
    int i = 0;
#ifdef __AVX2__
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(g + i);
        __m256 s = _mm256_div_ps(v, _mm256_add_ps(_mm256_set1_ps(1), exp8(_mm256_sub_ps(_mm256_setzero_ps(), v))));
        _mm256_storeu_ps(g + i, _mm256_mul_ps(s, _mm256_loadu_ps(u + i)));
    }
#endif
    for (; i < n; i++) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

void k_add(float *x, const float *y, int n) {
    for (int i = 0; i < n; i++) x[i] += y[i];
}

