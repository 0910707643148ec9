/*
 * forward.h -- layer 5: one engine step of the transformer.
 *
 * A step takes new tokens from one or more sequences (a prompt being
 * prefilled, or the last sampled token of a sequence being decoded),
 * stacks them into one [T, dim] activation so every linear layer is one
 * matrix-matrix pass over the weights, and attends per sequence against
 * its paged KV cache.
 */
#ifndef HIPATH_FORWARD_H
#define HIPATH_FORWARD_H

#include "layers/tensor/model.h"
#include "layers/tensor/kvcache.h"
#include "layers/common/moe.h"
#include "layers/tensor/mla.h"

typedef struct {
    const int *tokens;   /* this step's new tokens */
    int n;
    kv_seq *kv;          /* the sequence's cache; caller reserved room for n more */
    float *logits;       /* [vocab]: logits of the last new token, or NULL */
    int64_t req;         /* for the trace: its request, and whether its first */
    int first;           /* token's way back up starts in this step */
} seq_step;

/* Activation buffers, sized once for the largest step, in device memory
 * (layers/runtime/runtime.h); ids and pos also have a host copy. */
typedef struct {
    int max_tokens, max_seqs;
    float *x, *xb, *q, *k, *v, *att, *gate, *up;   /* [T, ...] */
    float *xlast, *logits;                          /* [seqs, dim], [seqs, vocab] */
    int *ids, *pos;                                 /* host, [T] */
    kv_batch batch;                                 /* the step's sequences for attention: */
    const kv_seq **seq;                             /*   host, [seqs] */
    int *row0, *row_seq;                            /*   host, [seqs + 1], [T] */
    int *d_ids, *d_pos;                             /* device, [T] */
    /* a MoE model's (NULL for a dense one): */
    float *router, *e_w, *e_gate, *e_up, *e_out;    /* [T, n_experts], [T*k], [T*k, moe_hidden] x2, [T*k, dim] */
    int *e_ids;                                     /* [T*k] each token's chosen experts */
    float *shared;                                  /* [T, dim] the shared experts' output (deepseek_v3) */
    moe_groups groups;                              /* host: the slots grouped by expert */
    mla_state mla;                                  /* deepseek_v3's attention's own */
} forward_state;

int  forward_state_init(forward_state *s, const model_config *c, int max_tokens, int max_seqs);
/* The device memory forward_state_init takes: affine in both. */
size_t forward_state_bytes(const model_config *c, int max_tokens, int max_seqs);
/* Can forward() split this model over tp GPUs and pp stages? Each GPU
 * takes whole heads, and whole KV heads (or one, repeated, past tp = KV
 * heads, as vLLM does); each stage one layer at least; ep GPUs the same
 * number of whole experts each (ep > 1: tp = ep, rt_open's rule). 0, or -1 with a
 * one-line reason. */
int forward_split_check(const model_config *c, int tp, int pp, int ep, char *err, int errlen);
/* The stage (0..pp) that computes layer l (vLLM's get_pp_indices). */
int forward_stage_of(int n_layers, int pp, int l);
void forward_state_free(forward_state *s);

/* Run one step. Returns 0, or -1 if the step is larger than the state.
 * Over pp > 1 stages the logits' copies are queued, not waited for: the
 * caller records an event (rt_event_record) and waits for it before
 * reading them. */
int forward(const model *m, forward_state *s, kv_cache *kv, seq_step *seqs, int n_seqs, int64_t step);

#endif
