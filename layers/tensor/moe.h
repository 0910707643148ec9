/*
 * moe.h -- layer 5: a mixture-of-experts FFN (qwen3_moe, mixtral,
 * deepseek_v3) in place of the dense one, and its tensors' HF names.
 */
#ifndef HIPATH_TENSOR_MOE_H
#define HIPATH_TENSOR_MOE_H

#include "layers/tensor/forward.h"
#include "layers/ops/ops.h"
#include <stddef.h>

/* Is layer l's FFN a mixture of experts (else a dense SwiGLU of hidden_dim)? */
int model_layer_is_moe(const model_config *c, int l);

/* A MoE layer's tensors, by their Hugging Face names (moe_name). */
enum moe_part { MOE_ROUTER, MOE_BIAS, MOE_GATE, MOE_UP, MOE_DOWN, MOE_SHARED_GATE, MOE_SHARED_UP, MOE_SHARED_DOWN };
/* The name of layer l's part (of expert e for MOE_GATE, MOE_UP, MOE_DOWN). */
void moe_name(const model_config *c, int l, int e, enum moe_part part, char *name, size_t n);

/* s->xb holds norm(x) of the step's T rows; on return, the layer's FFN
 * output: sum_j w[t,j] FFN_e(xb[t]) over token t's chosen experts e, plus
 * the shared experts' FFN(xb[t]). whole, cols, rows: forward.c's plans. */
void moe_ffn(const model *m, forward_state *s, const layer_weights *L, int l, int T, op_plan whole, op_plan cols, op_plan rows);

#endif
