/*
 * moe.c -- layer 4: a mixture-of-experts layer's operators. The router's
 * top-k, which also groups the step's (token, choice) slots by expert on
 * the host for the grouped matmul and the trace; the grouped matmul, whose
 * weight bytes are those of the experts some token chose (read once
 * each), its FLOPs per token routed; and the weighted combine.
 */
#include "layers/ops/op_cost.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int op_moe_supported(void) {
    const backend *b = backend_now();
    return b->moe_route && b->moe_matmul && b->moe_combine;
}

/* The analytic device's router: it has no logits, so each token draws k
 * distinct experts from moe_draw_dist, seeded by (step, layer, token) so
 * that a run repeats (there are no weights to give: nothing is computed).
 * The one place routing without data is decided. */
static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
/* One expert of E drawn: uniform (P NULL), or Zipf of exponent skew
 * (--expert-skew): P[e] = (e + 1)^-skew / sum_i (i + 1)^-skew. */
static double skew;
void op_moe_skew(double s) { skew = s; }
static int moe_draw_dist(uint64_t *s, int E, const double *P) {
    if (!P) return (int)(splitmix64(s) % (uint64_t)E);
    double u = (splitmix64(s) >> 11) * (1.0 / 9007199254740992.0);
    for (int e = 0; e < E; e++)
        if ((u -= P[e]) < 0) return e;
    return E - 1;
}
/* Zipf's P, once for a step's layer rather than once a draw. */
static double *zipf(int E) {
    double sum = 0, *P = malloc((size_t)E * sizeof *P);
    if (!P) { fprintf(stderr, "hipath: layer 4 ops: out of memory for the experts' routing\n"); abort(); }
    for (int e = 0; e < E; e++) sum += pow(e + 1.0, -skew);
    for (int e = 0; e < E; e++) P[e] = pow(e + 1.0, -skew) / sum;
    return P;
}
static void draw(int *ids, int T, const moe_gate *g, int64_t step, int layer) {
    double *P = skew > 0 ? zipf(g->n_experts) : NULL;
    for (int t = 0; t < T; t++) {
        uint64_t s = ((uint64_t)step << 40) ^ ((uint64_t)layer << 24) ^ (uint64_t)t;
        int *id = ids + (size_t)t * g->k;
        for (int j = 0; j < g->k; j++) {
            int e, again;
            do {   /* k distinct: draw again on a repeat */
                e = moe_draw_dist(&s, g->n_experts, P);
                again = 0;
                for (int i = 0; i < j; i++) again |= id[i] == e;
            } while (again);
            id[j] = e;
        }
    }
    free(P);
}

/* Counting sort of the slots by expert. */
static void group(moe_groups *grp, int T, const moe_gate *g) {
    int E = g->n_experts, n = T * g->k;
    grp->n_experts = E; grp->k = g->k; grp->T = T;
    memset(grp->start, 0, ((size_t)E + 1) * sizeof(int));
    for (int s = 0; s < n; s++) grp->start[grp->ids[s] + 1]++;
    for (int e = 0; e < E; e++) grp->start[e + 1] += grp->start[e];
    for (int s = 0, e; s < n; s++) {   /* start[e] moves past each slot placed, then back */
        e = grp->ids[s];
        grp->slot[grp->start[e]++] = s;
    }
    for (int e = E; e > 0; e--) grp->start[e] = grp->start[e - 1];
    grp->start[0] = 0;
}

/* The trace's view of the routing: "expert:tokens" for each expert chosen,
 * and, for a step of at most 16 tokens, each token's experts ("3 7|0 5"). */
static void describe(const moe_groups *grp, char *counts, size_t nc, char *tokens, size_t nt) {
    size_t o = 0;
    counts[0] = tokens[0] = 0;
    for (int e = 0; e < grp->n_experts && o < nc; e++)
        if (grp->start[e + 1] > grp->start[e])
            o += (size_t)snprintf(counts + o, nc - o, "%s%d:%d", o ? " " : "", e, grp->start[e + 1] - grp->start[e]);
    if (grp->T > 16) return;
    o = 0;
    for (int s = 0; s < grp->T * grp->k && o < nt; s++)
        o += (size_t)snprintf(tokens + o, nt - o, "%s%d", s == 0 ? "" : s % grp->k ? " " : "|", grp->ids[s]);
}

void op_moe_route(op_plan p, int *ids, float *w, const float *logits, int T, const moe_gate *g, moe_groups *grp, int layer) {
    int E = g->n_experts, n = T * g->k;
    kcost c = begin(p, "moe_topk", 8.0 * T * E, 4.0 * T * E + 8.0 * n);
    uint64_t t1 = backend_now()->moe_route(&c, ids, w, logits, T, g);
    const rt_device *d = rt_device_now();
    if (d->driver == &rt_analytic) draw(grp->ids, T, g, p.step, layer);
    else if (d->driver->separate) rt_copy(grp->ids, ids, (size_t)n * sizeof(int), COPY_D2H, p.step);   /* the host groups them */
    else memcpy(grp->ids, ids, (size_t)n * sizeof(int));   /* host memory: read in place, as a GPU's own align kernel would */
    group(grp, T, g);
    int touched = 0;
    for (int e = 0; e < E; e++) touched += grp->start[e + 1] > grp->start[e];
    if (!trace_enabled()) return;
    char counts[4096], tokens[1024];
    describe(grp, counts, sizeof counts, tokens, sizeof tokens);
    end(&c, t1, TRACE_ARGS(TA_DBL("flops", c.flops), TA_DBL("bytes", c.bytes), TA_INT("tokens", T), TA_INT("layer", layer),
                           TA_INT("experts", E), TA_INT("top_k", g->k), TA_INT("experts_touched", touched),
                           TA_STR("expert_tokens", counts), TA_STR("token_experts", tokens)));
}

void op_moe_matmul(op_plan p, const char *name, float *y, const float *x, const tensor *const *W, const moe_groups *g, int per_token) {
    int N = (int)W[0]->shape[0], K = (int)W[0]->shape[1], rows = g->T * g->k, touched = 0;
    double wbytes = 0;
    for (int e = 0; e < g->n_experts; e++)
        if (g->start[e + 1] > g->start[e]) { wbytes += (double)dtype_row_bytes(W[e]->dt, K) * N; touched++; }
    kcost c = begin(p, name, 2.0 * rows * N * K, wbytes + 4.0 * rows * (K + N));
    c.dt = W[0]->dt;
    uint64_t t1 = backend_now()->moe_matmul(&c, y, x, W, g, per_token, N, K);
    end(&c, t1, TRACE_ARGS(TA_DBL("flops", c.flops), TA_DBL("bytes", c.bytes), TA_DBL("weight_bytes", wbytes),
                           TA_INT("tokens", g->T), TA_INT("rows", rows), TA_INT("experts_touched", touched), TA_INT("N", N),
                           TA_INT("K", K), TA_LIT("dtype", dtype_name(W[0]->dt))));
}

void op_moe_combine(op_plan p, float *out, const float *y, const float *w, int T, int k, int n) {
    kcost c = begin(p, "moe_combine", 2.0 * T * k * n, 4.0 * ((double)T * k * n + (double)T * k + (double)T * n));
    end_tokens(&c, backend_now()->moe_combine(&c, out, y, w, T, k, n), T);
}

/* Token t is sent by GPU t n / T; expert e lives on GPU e / (E / n). A row
 * that stays on its GPU crosses no link. */
void op_moe_all_to_all(op_plan p, const char *name, const moe_groups *g, int n, int back) {
    int N = p.n, per = g->n_experts / N;
    double sent[N], received[N], rows[N], row = 4.0 * n, total = 0;
    for (int i = 0; i < N; i++) sent[i] = received[i] = rows[i] = 0;
    for (int s = 0; s < g->T * g->k; s++) {
        int from = (int)((int64_t)(s / g->k) * N / g->T), to = g->ids[s] / per;
        rows[to]++;
        if (from == to) continue;
        sent[back ? to : from] += row;
        received[back ? from : to] += row;
        total += row;
    }
    kcost c = begin(p, name, 0, total);
    rt_all_to_all(sent, received, c.step);
    if (!trace_enabled()) return;
    char load[1024];   /* the experts' load: rows routed to each GPU */
    for (int i = 0, o = 0; i < N && o < (int)sizeof load; i++) o += snprintf(load + o, sizeof load - o, "%s%.0f", i ? " " : "", rows[i]);
    end(&c, 0, TRACE_ARGS(TA_DBL("bytes", c.bytes), TA_INT("tokens", g->T), TA_INT("gpus", N), TA_STR("gpu_rows", load)));
}
