/*
 * route.c -- the router's top-k kernel (k_moe_route) on logits read from
 * stdin, for tests/moe/route_ref.py to compare with transformers:
 *   in:  E k sigmoid norm_topk scaling n_group topk_group has_bias T
 *        [E bias values] T x E logits
 *   out: a line per token: its k "expert:weight" pairs
 */
#include "kernels/cpu/kernels.h"
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    moe_gate g;
    int has_bias, T;
    if (scanf("%d %d %d %d %f %d %d %d %d", &g.n_experts, &g.k, &g.sigmoid, &g.norm_topk, &g.scaling, &g.n_group,
              &g.topk_group, &has_bias, &T) != 9 || g.n_experts < 1 || g.k < 1 || g.k > g.n_experts || T < 1 ||
        g.n_group < 1 || g.n_experts % g.n_group || g.topk_group < 1 || g.topk_group > g.n_group) {
        fprintf(stderr, "moe_route: a bad header\n");
        return 1;
    }
    float *bias = malloc((size_t)g.n_experts * sizeof *bias), *logits = malloc((size_t)T * g.n_experts * sizeof *logits),
          *w = malloc((size_t)T * g.k * sizeof *w);
    int *ids = malloc((size_t)T * g.k * sizeof *ids);
    for (int e = 0; has_bias && e < g.n_experts; e++)
        if (scanf("%f", &bias[e]) != 1) return fprintf(stderr, "moe_route: short bias\n"), 1;
    for (int i = 0; i < T * g.n_experts; i++)
        if (scanf("%f", &logits[i]) != 1) return fprintf(stderr, "moe_route: short logits\n"), 1;
    g.bias = has_bias ? bias : NULL;
    k_moe_route(ids, w, logits, T, &g);
    for (int t = 0; t < T; t++)
        for (int j = 0; j < g.k; j++) printf("%d:%.9g%c", ids[t * g.k + j], w[t * g.k + j], j == g.k - 1 ? '\n' : ' ');
    free(bias); free(logits); free(w); free(ids);
    return 0;
}
