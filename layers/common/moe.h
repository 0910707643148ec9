/*
 * moe.h -- shared vocabulary of a mixture-of-experts layer (layers 3-5):
 * how a router turns its logits into each token's k experts and weights,
 * and a step's (token, choice) slots grouped by expert for the grouped
 * matmul.
 */
#ifndef HIPATH_MOE_H
#define HIPATH_MOE_H

typedef struct {
    int n_experts, k;          /* each token takes k of n_experts */
    int sigmoid;               /* scores: sigmoid(logit) (deepseek_v3), else softmax over the experts */
    int norm_topk;             /* the k weights renormalized to sum 1 */
    float scaling;             /* routed_scaling_factor: the weights times it */
    int n_group, topk_group;   /* the choice only among the topk_group best of n_group groups */
    const float *bias;         /* e_score_correction_bias, added to the scores for the choice only; NULL: none */
} moe_gate;

/* Slot s = t*k + j is token t's j-th choice; expert e's slots are
 * slot[start[e] .. start[e+1]) (what vLLM's moe_align_block_size sorts). */
typedef struct {
    int n_experts, k, T;
    int *start;                /* [n_experts + 1] */
    int *slot;                 /* [T * k] */
    int *ids;                  /* [T * k] the chosen experts, on the host */
} moe_groups;

#endif
