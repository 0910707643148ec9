/*
 * backend_sim.c -- the simulated GPU's kernels (sim:PROFILE): each launch
 * is traced as the HIP backend would launch it (kernel, grid, block,
 * wavefronts), layer 1 models its time from the launch shape, then the
 * CPU twin computes the result. The twin's time is not GPU time: the clock
 * is shifted back by it, so the host's timeline shows only the launch
 * (docs/timing.md). analytic:PROFILE is the same table on a driver without
 * data: the launch and its modeled time are all there is.
 */
#include "kernels/backend.h"
#include "kernels/cpu/kernels.h"
#include "layers/gpu/sim.h"
#include "trace/trace.h"
#include <stdio.h>
#include <stdlib.h>

static int wave(void) { return sim_profile()->wavefront_size; }
static int cus(void) { return sim_profile()->compute_units; }
static int twin(void) { return rt_device_now()->driver->has_data; }

static int gpus(const kcost *c) { return c->split > 1 ? c->split : 1; }

/* Launch `kernel` with d, one GPU's shape; returns when emulation starts.
 * Split over GPUs, each does 1/split of the FLOPs and bytes. */
static uint64_t launch_shard(const kcost *c, const char *kernel, kdims d) {
    sim_kernel k;
    char err[256];
    const gpu_profile *g = sim_profile();
    double flops = c->flops / gpus(c), bytes = c->bytes / gpus(c);
    if (sim_model(g, d.grid, d.block, flops, bytes, gpu_profile_matmul_peak(g, c->dt), &k, err, sizeof err)) {
        fprintf(stderr, "hipath: layer 1 gpu: %s: %s\n", kernel, err);   /* shapes come from a checked model */
        abort();
    }
    uint64_t t = rt_launch_begin(kernel, c->t0);   /* it launches as the op begins */
    uint64_t end = launch_record(c, kernel, d, k.wavefronts, t);
    sim_launch(kernel, c->name, c->step, &k, flops, bytes, t);   /* queued at the launch call */
    rt_kernel_done(c->name, k.total_s, flops, bytes);
    return end;
}
/* The same with d the whole op's shape: each GPU with 1/split of the grid
 * (its outputs), or along the input with the whole grid, each
 * workgroup's loop 1/split as long. */
static uint64_t launch(const kcost *c, const char *kernel, kdims d) {
    if (!c->split_in) d.grid = cdiv(d.grid, gpus(c));
    return launch_shard(c, kernel, d);
}

/* Expert parallelism: GPU i runs its experts' tiles over their rows, the
 * weights of those some row chose read once each; each GPU its own shape,
 * the slowest setting the group's pace (the hot-expert straggler). */
static uint64_t launch_experts(const kcost *c, const char *kernel, const tensor *const *W, const moe_groups *g, int N, int K) {
    int n = c->split, per = g->n_experts / n;
    sim_kernel k[n];
    double flops[n], bytes[n];
    char err[256];
    const gpu_profile *p = sim_profile();
    kdims all = geo_moe_gemm(0, N);
    for (int i = 0; i < n; i++) {
        double rows = 0, wbytes = 0;
        int tiles = 0;
        for (int e = i * per; e < (i + 1) * per; e++) {
            int r = g->start[e + 1] - g->start[e];
            if (!r) continue;
            tiles += cdiv(r, GEMM_TILE);
            rows += r;
            wbytes += (double)dtype_row_bytes(W[e]->dt, K) * N;
        }
        kdims d = geo_moe_gemm(tiles, N);
        flops[i] = 2.0 * rows * N * K;
        bytes[i] = wbytes + 4.0 * rows * (K + N);
        k[i] = (sim_kernel){ 0 };
        if (d.grid && sim_model(p, d.grid, d.block, flops[i], bytes[i], gpu_profile_matmul_peak(p, c->dt), &k[i], err, sizeof err)) {
            fprintf(stderr, "hipath: layer 1 gpu: %s: %s\n", kernel, err);
            abort();
        }
        all.grid += d.grid;
    }
    uint64_t t = rt_launch_begin(kernel, c->t0);
    uint64_t end = launch_record(c, kernel, all, 0, t);
    sim_launch_each(kernel, c->name, c->step, k, flops, bytes, t);
    double most = 0;
    for (int i = 0; i < n; i++) most = k[i].total_s > most ? k[i].total_s : most;
    rt_kernel_done(c->name, most, c->flops, c->bytes);
    return end;
}

/* The clock goes back to t, the launch's end: the twin's time is not the GPU's. */
static uint64_t emulated(uint64_t t) {
    trace_clock_rewind(t);
    return t;
}

static uint64_t embedding(const kcost *c, float *x, const tensor *E, const int *ids, int T) {
    uint64_t t = launch(c, "embedding", geo_embedding(T));
    if (twin()) k_embedding(x, E, ids, T);
    return emulated(t);
}
static uint64_t rmsnorm(const kcost *c, float *o, const float *x, const float *w, int T, int n, float eps) {
    uint64_t t = launch(c, "rmsnorm", geo_rmsnorm(T));
    if (twin()) k_rmsnorm(o, x, w, T, n, eps);
    return emulated(t);
}
/* A GEMM is shaped on one GPU's shard (N/split outputs, or K/split
 * inputs), as that GPU's library would: split-K (geometry.h) when its
 * tiles are fewer than the CUs. Split in S, it runs as matmul.hip does: a
 * pass that writes y (4 T N bytes), then S slices each adding its partial
 * tile into y, S read-modify-writes of y in place of the one store. */
static uint64_t gemm(const kcost *c, int T, int N, int K) {
    int n = gpus(c), Ns = c->split_in ? N : cdiv(N, n), Ks = c->split_in ? cdiv(K, n) : K;
    int S = cdiv(Ks, gemm_slice_k(T, Ns, Ks, cus()));
    kcost g = *c;
    if (S > 1) {
        kcost z = *c;
        z.flops = 0, z.bytes = 4.0 * T * Ns * n;
        launch_shard(&z, "gemm_init", geo_elementwise(T * Ns));
        g.bytes += 4.0 * T * Ns * (2 * S - 1) * n;
    }
    return launch_shard(&g, "gemm", geo_matmul(T, Ns, Ks, wave(), cus()));
}
static uint64_t matmul(const kcost *c, float *y, const float *x, const tensor *W, const float *b, int T, int N, int K) {
    uint64_t t = T == 1 ? launch(c, "gemv", geo_matmul(T, N, K, wave(), cus())) : gemm(c, T, N, K);
    if (twin()) k_matmul(y, x, W, b, T, N, K);
    return emulated(t);
}
static uint64_t rope(const kcost *c, float *x, int T, int n_heads, int head_dim, const int *pos, float theta, const float *inv_freq,
                     int adjacent) {
    uint64_t t = launch(c, adjacent ? "rope_adjacent" : "rope_half", geo_rope(T, n_heads, head_dim));
    if (twin()) k_rope(x, T, n_heads, head_dim, pos, theta, inv_freq, adjacent);
    return emulated(t);
}
static uint64_t kv_append(const kcost *c, kv_cache *kv, const kv_batch *b, int l, const float *k, const float *v) {
    uint64_t t = launch(c, "kv_append", geo_kv_append(b->T));
    if (twin()) k_kv_append(kv, b, l, k, v);
    return emulated(t);
}
static uint64_t attention(const kcost *c, float *out, const float *q, const kv_cache *kv, const kv_batch *b, int l,
                          int n_heads, int n_kv_heads, int head_dim) {
    int rows = att_rows(b);
    uint64_t t = launch(c, rows == 1 ? "attention_decode" : "attention_prefill",
                        geo_attention(att_workgroups(b, rows), rows, n_heads, wave()));
    if (twin()) k_attention(out, q, kv, b, l, n_heads, n_kv_heads, head_dim);
    return emulated(t);
}
static uint64_t mla_absorb(const kcost *c, float *q_lat, float *q_pe, const float *q, const tensor *W, int T, mla_dims d) {
    uint64_t t = launch(c, "mla_absorb", geo_mla_heads(T, d.n_heads));
    if (twin()) k_mla_absorb(q_lat, q_pe, q, W, T, d);
    return emulated(t);
}
static uint64_t mla_kv_append(const kcost *c, kv_cache *kv, const kv_batch *b, int l, const float *c_kv, const float *k_pe,
                              mla_dims d) {
    uint64_t t = launch(c, "mla_kv_append", geo_kv_append(b->T));
    if (twin()) k_mla_kv_append(kv, b, l, c_kv, k_pe, d);
    return emulated(t);
}
static uint64_t mla_attention(const kcost *c, float *o_lat, const float *q_lat, const float *q_pe, const kv_cache *kv,
                              const kv_batch *b, int l, mla_dims d) {
    int rows = att_rows(b);
    uint64_t t = launch(c, rows == 1 ? "mla_decode" : "mla_prefill", geo_attention(att_workgroups(b, rows), rows, d.n_heads, wave()));
    if (twin()) k_mla_attention(o_lat, q_lat, q_pe, kv, b, l, d);
    return emulated(t);
}
static uint64_t mla_up_v(const kcost *c, float *out, const float *o_lat, const tensor *W, int T, mla_dims d) {
    uint64_t t = launch(c, "mla_up_v", geo_mla_heads(T, d.n_heads));
    if (twin()) k_mla_up_v(out, o_lat, W, T, d);
    return emulated(t);
}
static uint64_t silu_mul(const kcost *c, float *g, const float *u, int n) {
    uint64_t t = launch(c, "silu_mul", geo_elementwise(n));
    if (twin()) k_silu_mul(g, u, n);
    return emulated(t);
}
static uint64_t add(const kcost *c, float *x, const float *y, int n) {
    uint64_t t = launch(c, "add", geo_elementwise(n));
    if (twin()) k_add(x, y, n);
    return emulated(t);
}

static uint64_t moe_route(const kcost *c, int *ids, float *w, const float *logits, int T, const moe_gate *g) {
    uint64_t t = launch(c, "moe_topk", geo_moe_topk(T));
    if (twin()) k_moe_route(ids, w, logits, T, g);
    return emulated(t);
}
/* The grouped matmul: one launch, each expert's tiles over its own rows
 * (vLLM's fused_moe kernel): the grid is the sum of the experts' grids. */
static uint64_t moe_matmul(const kcost *c, float *y, const float *x, const tensor *const *W, const moe_groups *g,
                           int per_token, int N, int K) {
    int tiles = 0;
    for (int e = 0; e < g->n_experts; e++) tiles += cdiv(g->start[e + 1] - g->start[e], GEMM_TILE);
    uint64_t t = c->split_experts && c->split > 1 ? launch_experts(c, "moe_gemm", W, g, N, K)
                                                  : launch(c, "moe_gemm", geo_moe_gemm(tiles, N));
    if (twin()) k_moe_matmul(y, x, W, g, per_token, N, K);
    return emulated(t);
}
static uint64_t moe_combine(const kcost *c, float *out, const float *y, const float *w, int T, int k, int n) {
    uint64_t t = launch(c, "moe_combine", geo_elementwise(T * n));
    if (twin()) k_moe_combine(out, y, w, T, k, n);
    return emulated(t);
}

#define SIM_KERNELS \
    .launches = 1, \
    .embedding = embedding, .rmsnorm = rmsnorm, .matmul = matmul, .rope = rope, .kv_append = kv_append, \
    .attention = attention, .mla_absorb = mla_absorb, .mla_kv_append = mla_kv_append, .mla_attention = mla_attention, \
    .mla_up_v = mla_up_v, .silu_mul = silu_mul, .add = add, \
    .moe_route = moe_route, .moe_matmul = moe_matmul, .moe_combine = moe_combine
const backend backend_sim = { .name = "sim", .driver = &rt_sim, SIM_KERNELS,
                              .prepare_weight = k_pack, .release_weights = k_pack_reset };
const backend backend_analytic = { .name = "analytic", .driver = &rt_analytic, SIM_KERNELS };
