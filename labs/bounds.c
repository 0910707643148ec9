/*
 * bounds.c -- the labs' calculator: FLOPs and bytes per operator, summed
 * into the prefill and decode lower bounds (bounds.h, docs/bounds.md).
 */
#include "labs/bounds.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Bytes per element, and the dtype the matmuls run in unless told (its peak
 * is Pi): quantized weights are dequantized into int8-rate math, so int4,
 * q4_0 and q4_1 run at the int8 peak. A dtype that is not its own compute dtype is a
 * weight format only. `grouped`: it may take a scale per group (--group-size). */
static const struct { const char *name; double bytes; const char *compute; int grouped; } DTYPES[] = {
    { "bf16", 2,     "bf16", 0 },
    { "fp16", 2,     "fp16", 0 },
    { "fp32", 4,     "fp32", 0 },
    { "int8", 1,     "int8", 1 },
    { "int4", 0.5,   "int8", 1 },
    { "q4_0", 0.5625, "int8", 0 }, /* 4 bits + a scale per 32: 4.5 bits */
    { "q4_1", 0.625, "int8", 0 },  /* 4 bits + a scale and a min per 32: 5 bits */
};
#define NDTYPES (int)(sizeof DTYPES / sizeof *DTYPES)

/* With groups, a scale is a bf16, and what is not quantized stays bf16. */
static const double B_SCALE = 2, B_KEPT = 2;

/* The largest count a double holds exactly: a config past it is not a model. */
static const double MAX_PARAMS = 9007199254740992.0;   /* 2^53 */

static int find_dtype(const char *name, int weights) {
    for (int i = 0; i < NDTYPES; i++)
        if (name && !strcmp(name, DTYPES[i].name) && (weights || !strcmp(name, DTYPES[i].compute))) return i;
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

/* An [in, out] matrix's bytes at b a weight, plus with G > 0 a scale per G
 * weights along `in` (a partial last group has one too). */
static double matrix_bytes(double in, double out, double b, int G) {
    return in * out * b + (G > 0 ? out * ceil(in / G) * B_SCALE : 0);
}

/* A matrix [in, out] of `bytes` repeated `times`: every token does in x out
 * multiply-adds, and each phase reads the matrix once whatever the number
 * of tokens. */
static void linear(bounds_result *r, const char *name, int times, double in, double out, double bytes,
                   double prefill_tokens, double decode_tokens) {
    bounds_op *o = add_op(r, name, times);
    double w = times * in * out;
    set(&o->phase[BOUNDS_PREFILL], 2 * w * prefill_tokens, times * bytes, 0);
    set(&o->phase[BOUNDS_DECODE], 2 * w * decode_tokens, times * bytes, 0);
}

static void finish(bounds_phase *p, double peak, double bandwidth) {
    p->bytes = p->weight_bytes + p->kv_bytes;
    p->t_compute = p->flops / peak;
    p->t_memory = p->bytes / bandwidth;
    p->t_lower = p->t_compute > p->t_memory ? p->t_compute : p->t_memory;
    p->intensity = p->bytes > 0 ? p->flops / p->bytes : 0;
}

/* The input's own checks, before any arithmetic: 0, or -1 with the reason. */
static int check_input(const model_config *c, const bounds_input *in, const bounds_options *opt, int wd,
                       char *err, int errlen) {
    if (wd < 0) { snprintf(err, errlen, "unknown weight dtype '%s' (bf16, fp16, fp32, int8, int4, q4_0, q4_1)", in->dtype ? in->dtype : ""); return -1; }
    if (find_dtype(in->kv_dtype, 0) < 0) { snprintf(err, errlen, "unknown KV dtype '%s' (bf16, fp16, fp32, int8)", in->kv_dtype ? in->kv_dtype : ""); return -1; }
    if (opt->compute_dtype && find_dtype(opt->compute_dtype, 0) < 0) {
        snprintf(err, errlen, "unknown compute dtype '%s' (bf16, fp16, fp32, int8)", opt->compute_dtype); return -1;
    }
    if (opt->group_size < 0) { snprintf(err, errlen, "group size %d: it must be at least 1", opt->group_size); return -1; }
    if (opt->group_size > 0 && !DTYPES[wd].grouped) {
        snprintf(err, errlen, "group size %d: only int8 and int4 weights take a scale per group, not %s", opt->group_size, in->dtype); return -1;
    }
    if (opt->workspace_bytes < 0) { snprintf(err, errlen, "workspace %g bytes: it must be positive", opt->workspace_bytes); return -1; }
    if (in->batch < 1) { snprintf(err, errlen, "batch %d: it must be at least 1", in->batch); return -1; }
    if (in->prompt_len < 1 || in->prompt_len > c->max_seq_len) {
        snprintf(err, errlen, "prompt length %d: it must be 1 to max_position_embeddings %d", in->prompt_len, c->max_seq_len); return -1;
    }
    if (in->context < 1 || in->context > c->max_seq_len) {
        snprintf(err, errlen, "context %d: it must be 1 to max_position_embeddings %d", in->context, c->max_seq_len); return -1;
    }
    return 0;
}

int bounds_compute_with(const model_config *c, const gpu_profile *g, const bounds_input *in,
                        const bounds_options *opt, bounds_result *r, char *err, int errlen) {
    int wd = find_dtype(in->dtype, 1), G = opt->group_size;
    if (check_input(c, in, opt, wd, err, errlen)) return -1;
    memset(r, 0, sizeof *r);
    double b_q = DTYPES[wd].bytes;   /* a quantized (or plain) weight, without its scale */
    r->b_w = b_q + (G > 0 ? B_SCALE / G : 0);
    r->b_other = G > 0 ? B_KEPT : b_q;
    r->b_kv = DTYPES[find_dtype(in->kv_dtype, 0)].bytes;
    r->compute_dtype = opt->compute_dtype ? opt->compute_dtype : DTYPES[wd].compute;
    r->bandwidth = g->bandwidth;

    double d = c->dim, f = c->hidden_dim, V = c->vocab_size, nL = c->n_layers;
    double q = (double)c->n_heads * c->head_dim, kv = (double)c->n_kv_heads * c->head_dim;
    double B = in->batch, P = in->prompt_len, L = in->context;
    double small = 2 * d + (c->qkv_bias ? q + 2 * kv : 0) + (c->qk_norm ? 2.0 * c->head_dim : 0);  /* per layer */
    double table = V * d * (c->tied ? 1 : 2), rest = table + nL * small + d;   /* what is not in the blocks' matmuls */
    double params = rest + nL * (d * q + 2 * d * kv + q * d + 3 * d * f);
    if (params > MAX_PARAMS) {
        snprintf(err, errlen, "the config has %.3g parameters, more than 2^53 = 9.0e15 (a count past exact, "
                 "and thousands of times any real model): check its sizes", params);
        return -1;
    }
    if (gpu_profile_peak(g, r->compute_dtype, &r->peak, err, errlen)) return -1;
    r->params = (int64_t)params;
    r->kv_bytes_per_token = 2 * nL * kv * r->b_kv;

    /* Only the tokens' rows of the embedding table are read. */
    bounds_op *o = add_op(r, "embed", 1);
    set(&o->phase[BOUNDS_PREFILL], 0, B * P * d * r->b_other, 0);
    set(&o->phase[BOUNDS_DECODE], 0, B * d * r->b_other, 0);
    /* Norm weights and biases of every layer, and the final norm: read; their
     * elementwise FLOPs left out. */
    o = add_op(r, "norms+bias", c->n_layers);
    set(&o->phase[BOUNDS_PREFILL], 0, (nL * small + d) * r->b_other, 0);
    o->phase[BOUNDS_DECODE] = o->phase[BOUNDS_PREFILL];
    double m_q = matrix_bytes(d, q, b_q, G), m_kv = matrix_bytes(d, kv, b_q, G), m_o = matrix_bytes(q, d, b_q, G);
    double m_up = matrix_bytes(d, f, b_q, G), m_down = matrix_bytes(f, d, b_q, G);
    linear(r, "q", c->n_layers, d, q, m_q, B * P, B);
    linear(r, "k", c->n_layers, d, kv, m_kv, B * P, B);
    linear(r, "v", c->n_layers, d, kv, m_kv, B * P, B);
    /* Causal: query i (1-based) attends to i positions, itself included, so
     * prefill sums 1..P = P(P+1)/2 and QK^T plus AV cost 2 x 2 h hd each.
     * Prefill writes the prompt's KV once; decode reads L positions. */
    o = add_op(r, "attn", c->n_layers);
    set(&o->phase[BOUNDS_PREFILL], B * nL * 4 * q * P * (P + 1) / 2, 0, B * P * r->kv_bytes_per_token);
    set(&o->phase[BOUNDS_DECODE], B * nL * 4 * q * L, 0, B * L * r->kv_bytes_per_token);
    linear(r, "o", c->n_layers, q, d, m_o, B * P, B);
    linear(r, "gate", c->n_layers, d, f, m_up, B * P, B);
    linear(r, "up", c->n_layers, d, f, m_up, B * P, B);
    linear(r, "down", c->n_layers, f, d, m_down, B * P, B);
    linear(r, "lm_head", 1, d, V, matrix_bytes(d, V, r->b_other, 0), B, B);   /* prefill: the last position only */
    r->weights_bytes = nL * (m_q + 2 * m_kv + m_o + 2 * m_up + m_down) + rest * r->b_other;

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

    /* Workspace: hipath's estimate is one layer's prefill activations (x,
     * its norm, q k v, attention out, gate and up) in the compute dtype (16
     * bits unless fp32), and fp32 logits per sequence; attention scores stay
     * on chip (FlashAttention-style). Or a fixed reserve, as the chapter's. */
    double act_b = strcmp(r->compute_dtype, "fp32") ? 2 : 4;
    r->capacity.weights_bytes = r->weights_bytes;
    r->capacity.kv_bytes = B * (P > L ? P : L) * r->kv_bytes_per_token;
    r->capacity.workspace_bytes = opt->workspace_bytes > 0 ? opt->workspace_bytes
                                : B * P * (2 * d + 2 * q + 2 * kv + 2 * f) * act_b + B * V * 4;
    /* The profile stores "80 GB" of HBM as the 80 GiB it is; the chapter
     * reads the datasheet's figure as 80e9 bytes. */
    r->capacity.device_bytes = opt->decimal_gb ? g->memory_bytes / 1073741824.0 * 1e9 : g->memory_bytes;
    r->capacity.total_bytes = r->capacity.weights_bytes + r->capacity.kv_bytes + r->capacity.workspace_bytes;
    r->capacity.fits = r->capacity.total_bytes <= r->capacity.device_bytes;
    return 0;
}

int bounds_compute(const model_config *c, const gpu_profile *g, const bounds_input *in,
                   bounds_result *r, char *err, int errlen) {
    return bounds_compute_with(c, g, in, &(bounds_options){ 0 }, r, err, errlen);
}
