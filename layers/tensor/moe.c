/*
 * moe.c -- layer 5: a mixture-of-experts FFN, as transformers computes
 * Qwen3MoeSparseMoeBlock, MixtralSparseMoeBlock and DeepseekV3MoE:
 *   logits = Wr . xb                         the router, [T, n_experts]
 *   (e[t,j], w[t,j]) = top-k of the scores   softmax, or sigmoid + bias for the choice only
 *   y[t] = sum_j w[t,j] Wdown_e . (silu(Wgate_e . xb[t]) * Wup_e . xb[t])
 *        + the shared experts' FFN(xb[t])    deepseek_v3
 * Each expert runs once over the rows routed to it (the grouped matmul),
 * so a step reads only the experts its tokens chose.
 */
#include "layers/tensor/moe.h"
#include "layers/runtime/runtime.h"
#include <stdio.h>

int model_layer_is_moe(const model_config *c, int l) {
    if (c->n_experts == 0 || l < c->first_dense_layers || (l + 1) % c->sparse_step) return 0;
    return l >= MAX_LAYERS_MASK || !(c->mlp_only[l / 8] >> l % 8 & 1);
}

void moe_name(const model_config *c, int l, int e, enum moe_part part, char *name, size_t n) {
    int mixtral = c->arch == ARCH_MIXTRAL;
    const char *block = mixtral ? "block_sparse_moe" : "mlp";
    static const char *const EXPERT[2][3] = { { "gate_proj", "up_proj", "down_proj" }, { "w1", "w3", "w2" } };
    switch (part) {
    case MOE_ROUTER: snprintf(name, n, "model.layers.%d.%s.gate.weight", l, block); break;
    case MOE_BIAS: snprintf(name, n, "model.layers.%d.%s.gate.e_score_correction_bias", l, block); break;
    case MOE_GATE: case MOE_UP: case MOE_DOWN:
        snprintf(name, n, "model.layers.%d.%s.experts.%d.%s.weight", l, block, e, EXPERT[mixtral][part - MOE_GATE]); break;
    default:
        snprintf(name, n, "model.layers.%d.%s.shared_experts.%s.weight", l, block, EXPERT[0][part - MOE_SHARED_GATE]); break;
    }
}

void moe_ffn(const model *m, forward_state *s, const layer_weights *L, int l, int T, op_plan whole, op_plan cols, op_plan rows) {
    const model_config *c = &m->cfg;
    int k = c->n_experts_per_tok, dim = c->dim, ep = rt_device_now()->ep;
    moe_gate g = { c->n_experts, k, c->gating == GATE_SIGMOID, c->norm_topk_prob, c->routed_scaling, c->n_group, c->topk_group,
                   L->router_bias };
    /* tp: each GPU its columns of every expert's FFN (vLLM's TP of experts);
     * ep: each GPU its E/ep experts whole, over the rows sent to them */
    op_plan experts = { whole.step, ep, SPLIT_EXPERTS }, e_cols = ep > 1 ? experts : cols, e_rows = ep > 1 ? experts : rows;
    op_matmul(whole, "router", s->router, s->xb, L->w_router, NULL, T);
    op_moe_route(whole, s->e_ids, s->e_w, s->router, T, &g, &s->groups, l);
    if (ep > 1) op_moe_all_to_all(experts, "moe_dispatch", &s->groups, dim, 0);   /* each token to its experts' GPUs */
    op_moe_matmul(e_cols, "experts_gate_proj", s->e_gate, s->xb, L->e_gate, &s->groups, 1);
    op_moe_matmul(e_cols, "experts_up_proj", s->e_up, s->xb, L->e_up, &s->groups, 1);
    op_silu_mul(ep > 1 ? cols : e_cols, s->e_gate, s->e_up, T * k, c->moe_hidden_dim);   /* ep: as if the rows were even */
    op_moe_matmul(e_rows, "experts_down_proj", s->e_out, s->e_gate, L->e_down, &s->groups, 0);
    if (ep > 1) op_moe_all_to_all(experts, "moe_combine_a2a", &s->groups, dim, 1);   /* and each output back */
    if (L->s_gate) {   /* the shared experts: one dense SwiGLU FFN every token takes (ep: each GPU its tokens', the same share) */
        op_matmul(cols, "shared_gate_proj", s->gate, s->xb, L->s_gate, NULL, T);
        op_matmul(cols, "shared_up_proj", s->up, s->xb, L->s_up, NULL, T);
        op_silu_mul(cols, s->gate, s->up, T, (int)L->s_gate->shape[0]);
        op_matmul(rows, "shared_down_proj", s->shared, s->gate, L->s_down, NULL, T);
    }
    op_moe_combine(whole, s->xb, s->e_out, s->e_w, T, k, dim);
    if (L->s_gate) op_add(whole, "shared_add", s->xb, s->shared, T, dim);
}
