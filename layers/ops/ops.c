/*
 * ops.c -- layer 4: each operator = trace event (FLOPs, bytes) + kernel.
 * FLOPs count 2 per multiply-add; bytes count what the kernel must move
 * between memory and the cores at least once.
 */
#include "layers/ops/ops.h"
#include "kernels/cpu/kernels.h"
#include "trace/trace.h"

static _Thread_local int64_t where_req = -1, where_step = -1;

void ops_set_where(int64_t req, int64_t step) { where_req = req; where_step = step; }

static trace_where W(void) {
    return (trace_where){ .layer = L_OPS, .dir = DIR_DOWN, .req = where_req, .step = where_step, .clock = CLOCK_MEASURED };
}

static void begin(const char *name, double flops, double bytes, int T) {
    trace_arg a[] = { TA_DBL("flops", flops), TA_DBL("bytes", bytes), TA_INT("tokens", T) };
    trace_begin(W(), name, 3, a);
}
static void end(void) { trace_end(W(), 0, NULL); }

void op_embedding(float *x, const tensor *E, const int *ids, int T) {
    begin("embedding", 0, (double)T * dtype_row_bytes(E->dt, E->shape[1]) + 4.0 * T * E->shape[1], T);
    k_embedding(x, E, ids, T);
    end();
}

void op_rmsnorm(const char *name, float *o, const float *x, const float *w, int T, int n, float eps) {
    begin(name, 4.0 * T * n, 4.0 * (2.0 * T * n + n), T);
    k_rmsnorm(o, x, w, T, n, eps);
    end();
}

void op_matmul(const char *name, float *y, const float *x, const tensor *Wt, const float *b, int T) {
    int N = (int)Wt->shape[0], K = (int)Wt->shape[1];
    double wbytes = (double)dtype_row_bytes(Wt->dt, K) * N;
    trace_arg a[] = { TA_DBL("flops", 2.0 * T * N * K), TA_DBL("bytes", wbytes + 4.0 * T * (K + N)),
                      TA_DBL("weight_bytes", wbytes), TA_INT("tokens", T), TA_INT("N", N), TA_INT("K", K),
                      TA_STR("dtype", dtype_name(Wt->dt)) };
    trace_begin(W(), name, 7, a);
    k_matmul(y, x, Wt, b, T, N, K);
    end();
}

void op_rope(float *x, int T, int n_heads, int head_dim, const int *pos, float theta, int adjacent) {
    begin("rope", 6.0 * T * n_heads * head_dim / 2, 8.0 * T * n_heads * head_dim, T);
    k_rope(x, T, n_heads, head_dim, pos, theta, adjacent);
    end();
}

void op_kv_append(kv_cache *c, const kv_seq *s, int l, int pos0, const float *k, const float *v, int n) {
    begin("kv_append", 0, 2.0 * 2 * sizeof(float) * n * c->kv_dim, n);
    k_kv_append(c, s, l, pos0, k, v, n);
    end();
}

void op_attention(float *out, const float *q, const kv_cache *c, const kv_seq *s, int l,
                  int pos0, int n, int n_heads, int n_kv_heads, int head_dim) {
    double keys = (double)n * pos0 + (double)n * (n + 1) / 2;   /* sum over queries of positions seen */
    double kv_read = 2.0 * sizeof(float) * (pos0 + n) * n_kv_heads * head_dim;
    begin("attention", 4.0 * keys * n_heads * head_dim, kv_read + 8.0 * n * n_heads * head_dim, n);
    k_attention(out, q, c, s, l, pos0, n, n_heads, n_kv_heads, head_dim);
    end();
}

void op_silu_mul(float *g, const float *u, int T, int n) {
    begin("silu_mul", 6.0 * T * n, 12.0 * T * n, T);
    k_silu_mul(g, u, T * n);
    end();
}

void op_add(const char *name, float *x, const float *y, int T, int n) {
    begin(name, (double)T * n, 12.0 * T * n, T);
    k_add(x, y, T * n);
    end();
}
