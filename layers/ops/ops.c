/*
 * ops.c -- layer 4: each operator = trace event (FLOPs, bytes) + kernel on
 * the current backend (kernels/backend.h). FLOPs count 2 per multiply-add;
 * bytes count what the kernel must move between memory and the cores at
 * least once. Also the arrows of a step that land on the device.
 */
#include "layers/ops/op_cost.h"
#include "layers/gpu/sim.h"

int op_prepare_weight(const tensor *W) {
    const backend *b = backend_now();
    return b->prepare_weight ? b->prepare_weight(W) : 0;
}

void op_release_weights(void) {
    const backend *b = backend_now();
    if (b->release_weights) b->release_weights();
}

/* Layer 5 knows the step, this layer the device: where its arrows land. */
void op_fan_out(int gpus) {
    for (int g = 0; gpus > 1 && g < gpus; g++) {
        uint64_t f = trace_flow_next();
        trace_flow_out(f);
        trace_flow_in_track(L_GPU, sim_track(g), f);
    }
}

void op_flow_out_first(uint64_t f) {
    trace_flow_out_at(backend_now()->launches ? L_GPU : L_OPS, f);
}

/* The first op of a step: arrows from it to its launch (layer 3) and from
 * the launch to the kernel on the device's stream (layer 1), each recorded
 * before the op's own slice; cpu has no launch to point at. */
void op_embedding(op_plan p, float *x, const tensor *E, const int *ids, int T) {
    if (backend_now()->launches) {
        uint64_t to_launch = trace_flow_next(), to_kernel = trace_flow_next();
        trace_flow_out_at(L_OPS, to_launch);
        trace_flow_in_at(L_KERNELS, to_launch);
        trace_flow_out_at(L_KERNELS, to_kernel);
        trace_flow_in_at(L_GPU, to_kernel);
    }
    kcost c = begin(p, "embedding", 0, (double)T * dtype_row_bytes(E->dt, E->shape[1]) + 4.0 * T * E->shape[1]);
    end_tokens(&c, backend_now()->embedding(&c, x, E, ids, T), T);
}

void op_rmsnorm(op_plan p, const char *name, float *o, const float *x, const float *w, int T, int n, float eps) {
    kcost c = begin(p, name, 4.0 * T * n, 4.0 * (2.0 * T * n + n));
    end_tokens(&c, backend_now()->rmsnorm(&c, o, x, w, T, n, eps), T);
}

void op_matmul(op_plan p, const char *name, float *y, const float *x, const tensor *Wt, const float *b, int T) {
    int N = (int)Wt->shape[0], K = (int)Wt->shape[1];
    double wbytes = (double)dtype_row_bytes(Wt->dt, K) * N;
    kcost c = begin(p, name, 2.0 * T * N * K, wbytes + 4.0 * T * (K + N));
    c.dt = Wt->dt;
    uint64_t t1 = backend_now()->matmul(&c, y, x, Wt, b, T, N, K);
    end(&c, t1, TRACE_ARGS(TA_DBL("flops", c.flops), TA_DBL("bytes", c.bytes), TA_DBL("weight_bytes", wbytes),
                           TA_INT("tokens", T), TA_INT("N", N), TA_INT("K", K), TA_LIT("dtype", dtype_name(Wt->dt))));
}

void op_rope(op_plan p, float *x, int T, int n_heads, int head_dim, const int *pos, float theta, const float *inv_freq, int adjacent) {
    kcost c = begin(p, "rope", 6.0 * T * n_heads * head_dim / 2, 8.0 * T * n_heads * head_dim);
    end_tokens(&c, backend_now()->rope(&c, x, T, n_heads, head_dim, pos, theta, inv_freq, adjacent), T);
}

void op_kv_append(op_plan p, kv_cache *c, const kv_batch *b, int l, const float *k, const float *v) {
    kcost cost = begin(p, "kv_append", 0, 2.0 * (sizeof(float) + c->elem_bytes) * b->T * c->kv_dim);   /* k, v read (f32), stored */
    end_tokens(&cost, backend_now()->kv_append(&cost, c, b, l, k, v), b->T);
}

/* Each row reads its sequence's keys 0..its position; each sequence's K
 * and V are read once (its rows share them in one workgroup's LDS). */
void op_attention(op_plan p, float *out, const float *q, const kv_cache *c, const kv_batch *b, int l,
                  int n_heads, int n_kv_heads, int head_dim) {
    double keys = 0, kv_read = 0;
    for (int t = 0; t < b->T; t++) keys += b->pos[t] + 1.0;
    for (int i = 0; i < b->n_seqs; i++)
        kv_read += 2.0 * c->elem_bytes * (b->pos[b->row0[i + 1] - 1] + 1) * n_kv_heads * head_dim;
    kcost cost = begin(p, "attention", 4.0 * keys * n_heads * head_dim, kv_read + 8.0 * b->T * n_heads * head_dim);
    end_tokens(&cost, backend_now()->attention(&cost, out, q, c, b, l, n_heads, n_kv_heads, head_dim), b->T);
}

void op_silu_mul(op_plan p, float *g, const float *u, int T, int n) {
    kcost c = begin(p, "silu_mul", 6.0 * T * n, 12.0 * T * n);
    end_tokens(&c, backend_now()->silu_mul(&c, g, u, T * n), T);
}

void op_add(op_plan p, const char *name, float *x, const float *y, int T, int n) {
    kcost c = begin(p, name, (double)T * n, 12.0 * T * n);
    end_tokens(&c, backend_now()->add(&c, x, y, T * n), T);
}

/* The collectives: layer 2 queues them on the GPUs' streams. x is already
 * whole (a modeled device computes every kernel whole), so nothing moves
 * here: the op is its bytes and the library call. */
/* The ring's collectives (all-reduce, its halves): bytes and the call. */
static void ring(op_plan p, const char *name, int T, int n, void (*call)(double, int64_t)) {
    kcost c = begin(p, name, 0, 4.0 * T * n);   /* the activations are f32 */
    call(c.bytes, c.step);
    end_tokens(&c, 0, T);
}
void op_all_reduce(op_plan p, const char *name, int T, int n) { ring(p, name, T, n, rt_all_reduce); }
void op_reduce_scatter(op_plan p, const char *name, int T, int n) { ring(p, name, T, n, rt_reduce_scatter); }
void op_all_gather(op_plan p, const char *name, int T, int n) { ring(p, name, T, n, rt_all_gather); }

void op_gather(op_plan p, const char *name, int rows, int n) {
    kcost c = begin(p, name, 0, 4.0 * rows * n / rt_device_now()->gpus);   /* each GPU's share of the rows */
    rt_gather(c.bytes, c.step);
    end_tokens(&c, 0, rows);
}

void op_send(op_plan p, const char *name, int T, int n, int from, int to) {
    kcost c = begin(p, name, 0, 4.0 * T * n);   /* the activations are f32 */
    rt_send(c.bytes, from, to, c.step);
    end_tokens(&c, 0, T);
}
