/* elementwise.c -- embedding, rmsnorm, rope, silu*mul, add, logsumexp. */
#include "kernels/backend.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/simd.h"
#include <math.h>
#include <string.h>

/* A tied embedding is also the LM head: packed, its rows come from the copy
 * (the file's pages are gone, pack.c). */
void k_embedding(float *x, const tensor *E, const int *ids, int T) {
    int64_t dim = E->shape[1];
    size_t row = dtype_row_bytes(E->dt, dim);
    const uint8_t *p = k_packed(E);
    for (int t = 0; t < T; t++)
        if (p) k_unpack_row(x + t * dim, p, E, ids[t]);
        else row_to_f32(x + t * dim, (const char *)E->data + (size_t)ids[t] * row, E->dt, dim);
}

/* sum x[i]^2 in double: 8 lanes of it with AVX512, and the tail */
static double sum_squares(const float *x, int n) {
    double ss = 0;
    int i = 0;
#ifdef __AVX512F__
    __m512d s0 = _mm512_setzero_pd(), s1 = s0;
    for (; i + 16 <= n; i += 16) {
        __m512d a = _mm512_cvtps_pd(_mm256_loadu_ps(x + i)), b = _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8));
        s0 = _mm512_fmadd_pd(a, a, s0);
        s1 = _mm512_fmadd_pd(b, b, s1);
    }
    ss = _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
#endif
    for (; i < n; i++) ss += (double)x[i] * x[i];
    return ss;
}

void k_rmsnorm(float *o, const float *x, const float *w, int T, int n, float eps) {
    for (int t = 0; t < T; t++, x += n, o += n) {
        float r = 1.0f / sqrtf((float)(sum_squares(x, n) / n) + eps);
        for (int i = 0; i < n; i++) o[i] = x[i] * r * w[i];
    }
}

/* freq[i] = theta^(-2i/d): the same for every call with this theta and d,
 * and a pow for each pair of each position of each layer's q and k was 5%
 * of a tiny-hi generation's profile (0.2% of SmolLM2's). One table per
 * thread: the last (theta, d) it saw. The same doubles as before. */
enum { ROPE_MAX_HALF = 512 };
static double rope_freq(float theta, int head_dim, int i) { return pow((double)theta, -2.0 * i / head_dim); }
static const double *rope_freqs(float theta, int head_dim) {
    static _Thread_local struct { float theta; int d; double f[ROPE_MAX_HALF]; } c;
    if (c.theta != theta || c.d != head_dim) {
        for (int i = 0; i < head_dim / 2; i++) c.f[i] = rope_freq(theta, head_dim, i);
        c.theta = theta;
        c.d = head_dim;
    }
    return c.f;
}

/* cos and sin of the angle pos * theta^(-2i/d) */
static void angle(float cs[2], int pos, const double *freq, float theta, int head_dim, int i) {
    double a = pos * (freq ? freq[i] : rope_freq(theta, head_dim, i));
    cs[0] = (float)cos(a), cs[1] = (float)sin(a);
}

/* Those of a step's T positions: q and k of every layer rotate by the
 * same angles, so one thread's last table is kept and used again while the
 * positions and (theta, d) are the same (a sin and a cos per pair per call
 * were 3% of a 42-token prefill). A fixed table, so that no thread leaves
 * memory behind: past it, NULL. */
enum { ROPE_TABLE = 8192 };   /* (cos, sin) pairs: 256 positions of head_dim 64 */
static const float *rope_angles(const int *pos, int T, float theta, int head_dim, const double *freq) {
    static _Thread_local struct { float theta; int d, T; int pos[ROPE_TABLE]; float cs[2 * ROPE_TABLE]; } c;
    int half = head_dim / 2;
    if (T <= 0 || T > ROPE_TABLE || (size_t)T * half > ROPE_TABLE) return NULL;
    if (c.theta == theta && c.d == head_dim && c.T == T && !memcmp(c.pos, pos, T * sizeof *pos)) return c.cs;
    for (int t = 0; t < T; t++)
        for (int i = 0; i < half; i++) angle(c.cs + 2 * (t * half + i), pos[t], freq, theta, head_dim, i);
    memcpy(c.pos, pos, T * sizeof *pos);
    c.theta = theta, c.d = head_dim, c.T = T;
    return c.cs;
}

/* Pair (a, b) of a head rotates by angle pos * theta^(-2i/d). HF pairs
 * dimension i with i + d/2 (rotate_half); GGUF llama pairs 2i with 2i+1. */
void k_rope(float *x, int T, int n_heads, int head_dim, const int *pos, float theta, const float *inv_freq, int adjacent) {
    int half = head_dim / 2;
    const double *freq = !inv_freq && half <= ROPE_MAX_HALF ? rope_freqs(theta, head_dim) : NULL;
    const float *table = inv_freq ? NULL : rope_angles(pos, T, theta, head_dim, freq);   /* the tables: theta's */
    for (int t = 0; t < T; t++)
        for (int i = 0; i < half; i++) {
            float cs[2];
            if (table) cs[0] = table[2 * (t * half + i)], cs[1] = table[2 * (t * half + i) + 1];
            else if (inv_freq) cs[0] = (float)cos(pos[t] * (double)inv_freq[i]), cs[1] = (float)sin(pos[t] * (double)inv_freq[i]);
            else angle(cs, pos[t], freq, theta, head_dim, i);
            for (int h = 0; h < n_heads; h++) {
                float *v = x + ((size_t)t * n_heads + h) * head_dim;
                int i0 = adjacent ? 2 * i : i, i1 = adjacent ? 2 * i + 1 : i + half;
                float a0 = v[i0], a1 = v[i1];
                v[i0] = a0 * cs[0] - a1 * cs[1];
                v[i1] = a1 * cs[0] + a0 * cs[1];
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
    int i = 0;
#ifdef __AVX2__   /* x and y may alias as far as the compiler knows: -O2 kept it scalar */
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_add_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
#endif
    for (; i < n; i++) x[i] += y[i];
}

/* e^x in float (2 ulp), summed in double: 10^5 terms of a vocabulary would
 * lose the last digits of a float sum. */
double k_exp_scaled(float *p, const float *x, int n, float max, float inv_t) {
    double z = 0;
    int i = 0;
#ifdef __AVX2__
    __m256d z0 = _mm256_setzero_pd(), z1 = z0;
    for (; i + 8 <= n; i += 8) {
        __m256 e = exp8(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), _mm256_set1_ps(max)), _mm256_set1_ps(inv_t)));
        if (p) _mm256_storeu_ps(p + i, e);
        z0 = _mm256_add_pd(z0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
        z1 = _mm256_add_pd(z1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    }
    double zl[4];
    _mm256_storeu_pd(zl, _mm256_add_pd(z0, z1));
    z = zl[0] + zl[1] + zl[2] + zl[3];
#endif
    for (; i < n; i++) {
        float e = expf((x[i] - max) * inv_t);
        if (p) p[i] = e;
        z += e;
    }
    return z;
}

float k_logsumexp(const float *x, int n, float *max) {
    float m = x[0];
    int i = 0;
#ifdef __AVX2__
    __m256 mv = _mm256_set1_ps(x[0]);
    for (; i + 8 <= n; i += 8) mv = _mm256_max_ps(mv, _mm256_loadu_ps(x + i));
    float lanes[8];
    _mm256_storeu_ps(lanes, mv);
    for (int j = 0; j < 8; j++) m = lanes[j] > m ? lanes[j] : m;
#endif
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    *max = m;
    return m + (float)log(k_exp_scaled(NULL, x, n, m, 1));
}
