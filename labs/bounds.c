/*
 * bounds.c -- the labs' calculator: FLOPs and bytes per operator, summed
 * into the prefill and decode lower bounds (bounds.h, docs/bounds.md).
 */
#include "labs/bounds.h"
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Bytes per element, and the peak that applies: quantized weights are
 * dequantized into int8-rate math, so q4_1 runs at the int8 peak. */
static const struct { const char *name; double bytes; size_t peak; int weights_only; } DTYPES[] = {
    { "bf16", 2,     offsetof(gpu_profile, peak.bf16), 0 },
    { "fp16", 2,     offsetof(gpu_profile, peak.fp16), 0 },
    { "fp32", 4,     offsetof(gpu_profile, peak.fp32), 0 },
    { "int8", 1,     offsetof(gpu_profile, peak.int8), 0 },
    { "q4_1", 0.625, offsetof(gpu_profile, peak.int8), 1 },  /* 4 bits + a scale and a min per 32: 5 bits */
};
#define NDTYPES (int)(sizeof DTYPES / sizeof *DTYPES)

static int find_dtype(const char *name, int weights) {
    for (int i = 0; i < NDTYPES; i++)
        if (name && !strcmp(name, DTYPES[i].name) && (weights || !DTYPES[i].weights_only)) return i;
    return -1;
}

static bounds_op *add_op(bounds_result *r, const char *name, int times) {
    bounds_op *o = &r->op[r->nops++];
    memset(o, 0, sizeof *o);
    o->name = name;
    o->times = times;
    return o;
}

static void set(bounds_phase *p, double flops, double weight_bytes, double kv_bytes) {
    p->flops = flops;
    p->weight_bytes = weight_bytes;
    p->kv_bytes = kv_bytes;
}

/* A matrix [in, out] repeated `times`: every token does in x out multiply-adds,
 * and each phase reads the matrix once whatever the number of tokens. */
static void linear(bounds_result *r, const char *name, int times, double in, double out,
                   double prefill_tokens, double decode_tokens) {
    bounds_op *o = add_op(r, name, times);
    double w = times * in * out;
    set(&o->phase[BOUNDS_PREFILL], 2 * w * prefill_tokens, w * r->b_w, 0);
    set(&o->phase[BOUNDS_DECODE], 2 * w * decode_tokens, w * r->b_w, 0);
}

static void finish(bounds_phase *p, double peak, double bandwidth) {
    p->bytes = p->weight_bytes + p->kv_bytes;
    p->t_compute = p->flops / peak;
    p->t_memory = p->bytes / bandwidth;
    p->t_lower = p->t_compute > p->t_memory ? p->t_compute : p->t_memory;
    p->intensity = p->bytes > 0 ? p->flops / p->bytes : 0;
}

int bounds_compute(const model_config *c, const gpu_profile *g, const bounds_input *in,
                   bounds_result *r, char *err, int errlen) {
    int wd = find_dtype(in->dtype, 1), kd = find_dtype(in->kv_dtype, 0);
    if (wd < 0) { snprintf(err, errlen, "unknown weight dtype '%s' (bf16, fp16, fp32, int8, q4_1)", in->dtype ? in->dtype : ""); return -1; }
    if (kd < 0) { snprintf(err, errlen, "unknown KV dtype '%s' (bf16, fp16, fp32, int8)", in->kv_dtype ? in->kv_dtype : ""); return -1; }
    if (in->batch < 1) { snprintf(err, errlen, "batch %d: it must be at least 1", in->batch); return -1; }
    if (in->prompt_len < 1 || in->prompt_len > c->max_seq_len) {
        snprintf(err, errlen, "prompt length %d: it must be 1 to max_position_embeddings %d", in->prompt_len, c->max_seq_len); return -1;
    }
    if (in->context < 1 || in->context > c->max_seq_len) {
        snprintf(err, errlen, "context %d: it must be 1 to max_position_embeddings %d", in->context, c->max_seq_len); return -1;
    }
    memset(r, 0, sizeof *r);
    r->b_w = DTYPES[wd].bytes;
    r->b_kv = DTYPES[kd].bytes;
    r->peak = *(const double *)((const char *)g + DTYPES[wd].peak);
    r->bandwidth = g->bandwidth;

    double d = c->dim, f = c->hidden_dim, V = c->vocab_size, nL = c->n_layers;
    double q = (double)c->n_heads * c->head_dim, kv = (double)c->n_kv_heads * c->head_dim;
    double B = in->batch, P = in->prompt_len, L = in->context;
    double small = 2 * d + (c->qkv_bias ? q + 2 * kv : 0) + (c->qk_norm ? 2.0 * c->head_dim : 0);  /* per layer */
    r->kv_bytes_per_token = 2 * nL * kv * r->b_kv;
    /* Counted in double; an absurd config (each size up to 1e9) gives ~1e27,
     * which as an int64 came out negative. Past 2^53 the count is no longer
     * exact: no model is within a million times of that. */
    double params = V * d * (c->tied ? 1 : 2) + nL * (d * q + 2 * d * kv + q * d + 3 * d * f + small) + d;
    if (params > 0x1p53) {
        snprintf(err, errlen, "the config describes %.3g parameters, more than the calculator counts exactly (2^53)", params);
        return -1;
    }
    r->params = (int64_t)params;
    r->weights_bytes = (double)r->params * r->b_w;

    /* Only the tokens' rows of the embedding table are read. */
    bounds_op *o = add_op(r, "embed", 1);
    set(&o->phase[BOUNDS_PREFILL], 0, B * P * d * r->b_w, 0);
    set(&o->phase[BOUNDS_DECODE], 0, B * d * r->b_w, 0);
    /* Norm weights and biases of every layer, and the final norm: read; their
     * elementwise FLOPs left out. */
    o = add_op(r, "norms+bias", c->n_layers);
    set(&o->phase[BOUNDS_PREFILL], 0, (nL * small + d) * r->b_w, 0);
    o->phase[BOUNDS_DECODE] = o->phase[BOUNDS_PREFILL];
    linear(r, "q", c->n_layers, d, q, B * P, B);
    linear(r, "k", c->n_layers, d, kv, B * P, B);
    linear(r, "v", c->n_layers, d, kv, B * P, B);
    /* Causal: query i (1-based) attends to i positions, itself included, so
     * prefill sums 1..P = P(P+1)/2 and QK^T plus AV cost 2 x 2 h hd each.
     * Prefill writes the prompt's KV once; decode reads L positions. */
    o = add_op(r, "attn", c->n_layers);
    set(&o->phase[BOUNDS_PREFILL], B * nL * 4 * q * P * (P + 1) / 2, 0, B * P * r->kv_bytes_per_token);
    set(&o->phase[BOUNDS_DECODE], B * nL * 4 * q * L, 0, B * L * r->kv_bytes_per_token);
    linear(r, "o", c->n_layers, q, d, B * P, B);
    linear(r, "gate", c->n_layers, d, f, B * P, B);
    linear(r, "up", c->n_layers, d, f, B * P, B);
    linear(r, "down", c->n_layers, f, d, B * P, B);
    linear(r, "lm_head", 1, d, V, B, B);   /* prefill: the last position only */

    for (int i = 0; i < r->nops; i++)
        for (int ph = BOUNDS_PREFILL; ph <= BOUNDS_DECODE; ph++) {
            bounds_phase *s = ph == BOUNDS_PREFILL ? &r->prefill : &r->decode, *p = &r->op[i].phase[ph];
            finish(p, r->peak, r->bandwidth);
            s->flops += p->flops;
            s->weight_bytes += p->weight_bytes;
            s->kv_bytes += p->kv_bytes;
        }
    finish(&r->prefill, r->peak, r->bandwidth);
    finish(&r->decode, r->peak, r->bandwidth);
    r->b_star = r->b_w * r->peak / (2 * r->bandwidth);

    /* Workspace: one layer's prefill activations (x, its norm, q k v, attention
     * out, gate and up) in the compute dtype, and fp32 logits per sequence;
     * attention scores stay on chip (FlashAttention-style). */
    double act_b = r->b_w == 4 ? 4 : 2;
    r->capacity.weights_bytes = r->weights_bytes;
    r->capacity.kv_bytes = B * (P > L ? P : L) * r->kv_bytes_per_token;
    r->capacity.workspace_bytes = B * P * (2 * d + 2 * q + 2 * kv + 2 * f) * act_b + B * V * 4;
    r->capacity.device_bytes = g->memory_bytes;
    r->capacity.fits = r->capacity.weights_bytes + r->capacity.kv_bytes + r->capacity.workspace_bytes <= g->memory_bytes;
    return 0;
}
