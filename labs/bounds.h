/*
 * bounds.h -- the labs' calculator: the lower bounds of chapter 1 of the
 * AI-infrastructure textbook for one model (its config) on one GPU (its
 * profile): capacity M_W + M_state + M_work <= M_cap, and for a prefill and
 * one decode step T >= max(F / Pi, R / beta); and over tp x pp GPUs, each
 * GPU's share and the step with its all-reduces and hand-offs. Arithmetic
 * on a config, above every layer: `hipath bounds`, the labs and `run
 * --analytic`'s capacity check call it. Conventions: docs/bounds.md.
 */
#ifndef HIPATH_LABS_BOUNDS_H
#define HIPATH_LABS_BOUNDS_H

#include "layers/gpu/profile.h"
#include "layers/tensor/model.h"
#include <stdint.h>

typedef struct {
    const char *dtype;      /* weights: bf16 fp16 fp32 int8 int4 q4_1 */
    const char *kv_dtype;   /* KV cache: bf16 fp16 fp32 int8 */
    int batch;              /* B sequences */
    int prompt_len;         /* P tokens each, prefilled */
    int context;            /* L: the decode step's token attends to L positions, its own included */
} bounds_input;

/* Beyond hipath's defaults (all zero): how the weights are stored and
 * computed, and the chapter's capacity conventions (docs/bounds.md). */
typedef struct {
    const char *compute_dtype;  /* the matmuls' dtype, whose peak is Pi; NULL: the weights'
                                   (int8 for int8, int4 and q4_1) */
    int group_size;         /* G > 0 (int8, int4): the blocks' linear weights with a bf16 scale
                               per G; embeddings, LM head, norms and biases stay bf16 */
    int decimal_gb;         /* M_cap: the datasheet's "80 GB" as 80e9 bytes (the chapter's
                               nominal figure), not the profile's 80 GiB */
    double workspace_bytes; /* > 0: M_work fixed (the chapter reserves 2 GiB); 0: hipath's estimate */
    int tp, pp;             /* tensor parallel over tp GPUs, pipeline of pp stages; 0 or 1: one GPU
                               (docs/bounds.md, "More than one GPU") */
} bounds_options;

typedef struct {
    double flops;            /* F */
    double bytes;            /* R = weight_bytes + kv_bytes */
    double weight_bytes;     /* parameters read (and embedding rows) */
    double kv_bytes;         /* KV cache written (prefill) or read (decode) */
    double t_compute, t_memory, t_lower;   /* F / Pi, R / beta, their max */
    double intensity;        /* F / R, FLOP per byte */
} bounds_phase;

enum bounds_phase_id { BOUNDS_PREFILL, BOUNDS_DECODE };

typedef struct {
    const char *name;        /* "q", "attn", "lm_head", ... */
    int times;               /* how many layers it repeats in; figures are the sum */
    bounds_phase phase[2];   /* [BOUNDS_PREFILL], [BOUNDS_DECODE] */
} bounds_op;

#define BOUNDS_MAX_OPS 16
#define BOUNDS_MAX_STAGES 64     /* as many GPUs as a profile's server may join */

typedef struct { int fits; double weights_bytes, kv_bytes, workspace_bytes, device_bytes, total_bytes; } bounds_capacity;

/* A phase over tp x pp GPUs: one batch through every stage in turn. */
typedef struct {
    double t_compute, t_memory;  /* a GPU's F / Pi and R / beta, summed over the stages */
    struct {
        double bytes;            /* one all-reduce: B (x P) x d activations */
        int per_step;            /* how many: 2 a layer (after o and after down); 0 with tp 1 */
        double bandwidth_s, latency_s, total_s;   /* all of them: the ring's two terms, their sum */
    } all_reduce;
    double send_bytes, send_s;   /* one hand-off to the next stage; all pp - 1 of them */
    double t_step;               /* sum of the stages' max(F / Pi, R / beta) + all-reduces + hand-offs */
    double comm_share;           /* (all-reduces + hand-offs) / t_step */
} bounds_parallel_phase;

typedef struct {
    int tp, pp, gpus;
    int heads, kv_heads;         /* a GPU's attention heads and KV heads */
    int stage_layers[BOUNDS_MAX_STAGES];
    double ring_bandwidth;       /* a GPU's rate in the tp ring, bytes/s (0 with tp 1) */
    int fullest;                 /* the stage whose GPUs hold the most */
    double kv_bytes_per_token;   /* on a GPU of that stage */
    bounds_capacity per_gpu;     /* a GPU of that stage */
    bounds_parallel_phase prefill, decode;
    int64_t b_fit;               /* the most sequences whose KV at max(P, L) fits beside the weights
                                    and workspace on every GPU; 0 when the weights do not */
} bounds_parallel;

typedef struct {
    double b_w, b_kv;        /* bytes per weight of the blocks' linear layers (a scale's share
                                included), per KV element */
    double b_other;          /* bytes per weight of the rest: embeddings, LM head, norms, biases */
    const char *compute_dtype;   /* whose peak Pi is */
    double peak, bandwidth;  /* Pi, beta */
    int64_t params;          /* every parameter, embeddings and norms included */
    int64_t params_active;   /* a token's: all but the experts it is not routed to (= params if dense) */
    int moe_layers;          /* the layers whose FFN is a mixture of experts (0: dense) */
    double expert_bytes;     /* one expert's three matrices */
    double weights_bytes;    /* what the parameters take, scales included (params x b_w when flat) */
    double kv_bytes_per_token;
    bounds_capacity capacity;
    bounds_phase prefill, decode;   /* the sums over op[] */
    double b_star;           /* b_w Pi / (2 beta): the batch where decode turns compute-bound */
    double b_star_moe;       /* the same with the experts a batch reads (moe_b_star); b_star if dense */
    int nops;
    bounds_op op[BOUNDS_MAX_OPS];
    bounds_parallel parallel;   /* opt->tp x opt->pp GPUs (with one GPU: the figures above, no communication) */
} bounds_result;

/* 0, or -1 with a one-line reason (unknown dtype, a group size on weights
 * that take none, batch < 1, prompt or context outside
 * 1..max_position_embeddings, a config of more parameters than can be
 * real, a profile without the peak of the compute dtype; tp or pp under 1,
 * tp not dividing the heads or the FFN, KV heads neither split by tp nor
 * dividing it, more stages than layers, tp x pp GPUs the profile's
 * interconnect does not join). */
int bounds_compute_with(const model_config *c, const gpu_profile *g, const bounds_input *in,
                        const bounds_options *opt, bounds_result *r, char *err, int errlen);

/* bounds_compute_with hipath's defaults. */
int bounds_compute(const model_config *c, const gpu_profile *g, const bounds_input *in,
                   bounds_result *r, char *err, int errlen);

/* The experts a batch of n tokens reads in a MoE layer, expected: each
 * token picks k of E, so an expert goes unread with (1 - k/E)^n. */
double bounds_experts_read(const model_config *c, double tokens);

/* A phase is compute-bound when F / Pi exceeds R / beta. */
static inline int bounds_compute_bound(const bounds_phase *p) { return p->t_compute > p->t_memory; }

#endif
