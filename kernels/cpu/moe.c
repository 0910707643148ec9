/*
 * moe.c -- the CPU twins of a mixture-of-experts layer's kernels: the
 * router's top-k, the grouped expert matmul, and the weighted combine.
 */
#include "kernels/cpu/kernels.h"
#include <math.h>
#include <string.h>

/* The index of the largest of n values not yet taken (ties: the lowest index). */
static int argmax_free(const float *v, const unsigned char *taken, int n) {
    int best = -1;
    for (int i = 0; i < n; i++)
        if (!taken[i] && (best < 0 || v[i] > v[best])) best = i;
    return best;
}

/* One token: scores, the choice among the best groups, top-k, weights
 * (HF's Qwen3MoeTopKRouter, MixtralTopKRouter, DeepseekV3TopkRouter). */
static void route1(int *ids, float *w, const float *logit, float *score, float *choice, unsigned char *taken, const moe_gate *g) {
    int E = g->n_experts, per = E / g->n_group;
    float max = logit[0], sum = 0;
    for (int e = 1; e < E; e++) max = logit[e] > max ? logit[e] : max;
    for (int e = 0; e < E; e++) {
        score[e] = g->sigmoid ? 1 / (1 + expf(-logit[e])) : expf(logit[e] - max);
        sum += score[e];
    }
    for (int e = 0; e < E; e++) {
        if (!g->sigmoid) score[e] /= sum;
        choice[e] = score[e] + (g->bias ? g->bias[e] : 0);
    }
    if (g->topk_group < g->n_group) {   /* a group scores the sum of its best two; keep the topk_group best groups */
        float gscore[g->n_group];
        unsigned char gtaken[g->n_group];
        for (int q = 0; q < g->n_group; q++) {
            const float *c = choice + q * per;
            int a = 0, b = -1;
            for (int i = 1; i < per; i++)
                if (c[i] > c[a]) { b = a; a = i; } else if (b < 0 || c[i] > c[b]) b = i;
            gscore[q] = c[a] + (b >= 0 ? c[b] : 0);
            gtaken[q] = 0;
        }
        for (int i = 0; i < g->topk_group; i++) gtaken[argmax_free(gscore, gtaken, g->n_group)] = 1;
        for (int e = 0; e < E; e++)
            if (!gtaken[e / per]) choice[e] = -INFINITY;
    }
    memset(taken, 0, (size_t)E);
    float wsum = 0;
    for (int j = 0; j < g->k; j++) {
        int e = argmax_free(choice, taken, E);
        taken[e] = 1;
        ids[j] = e;
        w[j] = score[e];   /* the score without the bias: the bias only chooses */
        wsum += w[j];
    }
    for (int j = 0; j < g->k; j++) w[j] = (g->norm_topk ? w[j] / (wsum + 1e-20f) : w[j]) * g->scaling;
}

void k_moe_route(int *ids, float *w, const float *logits, int T, const moe_gate *g) {
    int E = g->n_experts;
    float *score = k_scratch(2 * (size_t)E * sizeof(float), 0);
    unsigned char *taken = k_scratch((size_t)E, 0);
    for (int t = 0; t < T; t++)
        route1(ids + (size_t)t * g->k, w + (size_t)t * g->k, logits + (size_t)t * E, score, score + E, taken, g);
    free(score); free(taken);
}

/* Each expert: gather its rows, one matmul over them, scatter the results
 * to their slots. A row is slot s's own (x[s]) or its token's (x[s / k]). */
void k_moe_matmul(float *y, const float *x, const tensor *const *W, const moe_groups *g, int per_token, int N, int K) {
    int most = 0;
    for (int e = 0; e < g->n_experts; e++) most = g->start[e + 1] - g->start[e] > most ? g->start[e + 1] - g->start[e] : most;
    float *xs = k_scratch((size_t)most * K * sizeof(float), 0), *ys = k_scratch((size_t)most * N * sizeof(float), 0);
    for (int e = 0; e < g->n_experts; e++) {
        const int *slot = g->slot + g->start[e];
        int n = g->start[e + 1] - g->start[e];
        if (!n) continue;
        for (int i = 0; i < n; i++)
            memcpy(xs + (size_t)i * K, x + (size_t)(per_token ? slot[i] / g->k : slot[i]) * K, (size_t)K * sizeof(float));
        k_matmul(ys, xs, W[e], NULL, n, N, K);
        for (int i = 0; i < n; i++) memcpy(y + (size_t)slot[i] * N, ys + (size_t)i * N, (size_t)N * sizeof(float));
    }
    free(xs); free(ys);
}

void k_moe_combine(float *out, const float *y, const float *w, int T, int k, int n) {
    for (int t = 0; t < T; t++) {
        float *o = out + (size_t)t * n;
        memset(o, 0, (size_t)n * sizeof(float));
        for (int j = 0; j < k; j++) {
            const float *yj = y + ((size_t)t * k + j) * n;
            float wj = w[(size_t)t * k + j];
            for (int i = 0; i < n; i++) o[i] += wj * yj[i];
        }
    }
}
