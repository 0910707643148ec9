/*
 * ops.h -- layer 4, the operator library: the operators a transformer is
 * built from. Each call records one trace event with the FLOPs and bytes
 * its shapes imply (so arithmetic intensity is a query away), then runs
 * the kernel on the backend.
 */
#ifndef HIPATH_OPS_H
#define HIPATH_OPS_H

#include "layers/common/tensor.h"
#include "layers/common/kv.h"
#include "layers/common/moe.h"
#include "layers/common/mla.h"
#include <stdint.h>

/* How an op runs, passed to each (no state between calls): the engine
 * step it belongs to (for the trace), and tensor parallelism: its work
 * split evenly over n GPUs, each running a shard (1: every GPU runs it
 * whole), along its output (columns, heads: each GPU its own outputs) or
 * its input (rows: each GPU all outputs, partial sums over 1/n of the
 * input). Layer 5's plan says which ops split how (forward.c). */
enum { SPLIT_OUT, SPLIT_IN, SPLIT_EXPERTS };   /* SPLIT_EXPERTS: a MoE op's experts, E/n whole on each GPU (expert parallelism) */
typedef struct { int64_t step; int n, along; } op_plan;

/* The step's arrows that need the device, drawn for layer 5: from the next
 * slice this thread records (the step) to each of the gpus' first work on
 * its stream; and flow f from the step's first kernel on the device (on
 * the cpu: its first op). */
void op_fan_out(int gpus);
void op_flow_out_first(uint64_t f);

/* The backend's own copies of the weights: made once when a model is bound,
 * freed with it (see backend.h's prepare_weight). 1: copied, W's bytes are
 * read no more; 0: none; -1: out of memory. */
int  op_prepare_weight(const tensor *W);
void op_release_weights(void);

void op_embedding(op_plan p, float *x, const tensor *E, const int *ids, int T);
void op_rmsnorm(op_plan p, const char *name, float *o, const float *x, const float *w, int T, int n, float eps);
/* y[T, N] = x[T, K] W^T + b; N, K from W's shape [N, K]. */
void op_matmul(op_plan p, const char *name, float *y, const float *x, const tensor *W, const float *b, int T);
/* RoPE at frequencies theta^(-2i/head_dim), or inv_freq[i] when given (yarn). */
void op_rope(op_plan p, float *x, int T, int n_heads, int head_dim, const int *pos, float theta, const float *inv_freq, int adjacent);
/* Every sequence of the step at once (kv.h's kv_batch): one launch each. */
void op_kv_append(op_plan p, kv_cache *c, const kv_batch *b, int l, const float *k, const float *v);
void op_attention(op_plan p, float *out, const float *q, const kv_cache *c, const kv_batch *b, int l,
                  int n_heads, int n_kv_heads, int head_dim);
/* MLA (layers/common/mla.h), each every sequence of the step at once:
 * q [T, H, nope + rope] absorbed through kv_b_proj's W_UK into q_lat
 * [T, H, rank], its rope part copied to q_pe [T, H, rope]; the latent rows
 * [c_kv | k_pe] stored; attention over them into o_lat [T, H, rank]; the
 * values up through W_UV into out [T, H, v_dim]. op_mla_supported: does
 * this device have the kernels (0: a one-line reason in err). */
int  op_mla_supported(char *err, int errlen);
void op_mla_absorb(op_plan p, float *q_lat, float *q_pe, const float *q, const tensor *W_kv_b, int T, mla_dims d);
void op_mla_kv_append(op_plan p, kv_cache *c, const kv_batch *b, int l, const float *c_kv, const float *k_pe, mla_dims d);
void op_mla_attention(op_plan p, float *o_lat, const float *q_lat, const float *q_pe, const kv_cache *c, const kv_batch *b,
                      int l, mla_dims d);
void op_mla_up_v(op_plan p, float *out, const float *o_lat, const tensor *W_kv_b, int T, mla_dims d);
void op_silu_mul(op_plan p, float *g, const float *u, int T, int n);
void op_add(op_plan p, const char *name, float *x, const float *y, int T, int n);
/* A mixture of experts (moe.c). Whether this backend has the kernels. */
int  op_moe_supported(void);
/* The router: each token's k experts and weights (ids, w: [T*k], device)
 * from its logits [T, n_experts]; then grp (host) holds the slots grouped
 * by expert. Without data (analytic) each token draws its experts instead,
 * uniformly, seeded by (step, layer, token). The trace shows the tokens
 * each expert took, and for small steps each token's experts. */
void op_moe_route(op_plan p, int *ids, float *w, const float *logits, int T, const moe_gate *g, moe_groups *grp, int layer);
/* The grouped matmul over the experts W[n_experts] ([N, K] each): y[s] =
 * x[s / k or s] W[e]^T for each slot s of expert e. Each expert chosen
 * reads its weights once; FLOPs per slot. */
void op_moe_matmul(op_plan p, const char *name, float *y, const float *x, const tensor *const *W, const moe_groups *g, int per_token);
/* out[t] = sum_j w[t*k + j] y[t*k + j], rows of n. */
void op_moe_combine(op_plan p, float *out, const float *y, const float *w, int T, int k, int n);
/* Expert parallelism over p.n GPUs (GPU g: experts g E/n .. (g+1) E/n - 1;
 * token t: GPU t n / T's to send): each token's rows of n f32 to its
 * experts' GPUs (dispatch) or back (combine, `back` 1), an all-to-all;
 * its slice gives each GPU's routed rows (the experts' load). */
void op_moe_all_to_all(op_plan p, const char *name, const moe_groups *g, int n, int back);
/* --expert-skew S: the analytic router draws expert e with probability
 * proportional to (e + 1)^-S (Zipf: expert 0 the hottest); 0, the default: uniform. */
void op_moe_skew(double s);
/* The all-reduce's halves over the GPUs (expert-parallel layers): T rows
 * of n f32 reduce-scattered, or all-gathered. */
void op_reduce_scatter(op_plan p, const char *name, int T, int n);
void op_all_gather(op_plan p, const char *name, int T, int n);
/* Tensor parallelism's collectives over the device's GPUs (runtime.h): the
 * all-reduce of T rows of n f32 partial sums, and the gather to GPU 0 of
 * `rows` rows of n values split over the GPUs (the logits). */
void op_all_reduce(op_plan p, const char *name, int T, int n);
void op_gather(op_plan p, const char *name, int rows, int n);
/* Pipeline parallelism's hand-off: stage `from` sends T rows of n f32
 * activations to stage `to` (each GPU of one to its peer in the other). */
void op_send(op_plan p, const char *name, int T, int n, int from, int to);

#endif
