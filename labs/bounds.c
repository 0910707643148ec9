/*
 * bounds.c -- the labs' calculator: FLOPs and bytes per operator, summed
 * into the prefill and decode lower bounds (bounds.h, docs/bounds.md).
 */
#include "labs/bounds.h"
#include "layers/tensor/forward.h"
#include "layers/tensor/moe.h"
#include "layers/gpu/link.h"
#include <limits.h>
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

/* What one GPU holds and does: `layers` of the blocks from layer `from`,
 * the embedding table if `first`, the final norm and LM head if `last` (a
 * pipeline stage; all three for the whole model), each matrix split N ways
 * as Megatron and vLLM split it (docs/bounds.md, "More than one GPU"). */
typedef struct { int layers, first, last, N, from; } shard;

double bounds_experts_read(const model_config *c, double tokens) {
    double E = c->n_experts, k = c->n_experts_per_tok;
    return E > 0 ? E * (1 - pow(1 - k / E, tokens)) : 0;
}

/* A mixture of experts' op: each of n tokens runs k experts of the three
 * matrices [d, h] (m_e bytes in all), and the batch reads the distinct
 * experts it chose, E (1 - (1 - k/E)^n) expected of E a layer. */
static void experts(bounds_result *r, const model_config *c, int times, double d, double h, double m_e,
                    double prefill_tokens, double decode_tokens) {
    bounds_op *o = add_op(r, "experts", times);
    double w = times * 3 * d * h * c->n_experts_per_tok;
    set(&o->phase[BOUNDS_PREFILL], 2 * w * prefill_tokens, times * bounds_experts_read(c, prefill_tokens) * m_e, 0);
    set(&o->phase[BOUNDS_DECODE], 2 * w * decode_tokens, times * bounds_experts_read(c, decode_tokens) * m_e, 0);
}

/* The attention's projections before o, as linear ops of the shard's
 * layers, for prefill's and decode's tokens: their bytes and parameters a
 * layer (o's included) into *bytes and *params; returns the FLOPs of one
 * (query, key) pair. Grouped-query attention: q k v, and QK^T plus AV at 2
 * x 2 h hd a pair. */
static double gqa_ops(bounds_result *r, double d, double q, double kv, shard s, double b_q, int G, double prefill, double decode,
                      double *bytes, double *params) {
    double m_q = matrix_bytes(d, q, b_q, G), m_kv = matrix_bytes(d, kv, b_q, G);
    linear(r, "q", s.layers, d, q, m_q, prefill, decode);
    linear(r, "k", s.layers, d, kv, m_kv, prefill, decode);
    linear(r, "v", s.layers, d, kv, m_kv, prefill, decode);
    *bytes = m_q + 2 * m_kv + matrix_bytes(q, d, b_q, G);
    *params = d * q + 2 * d * kv + q * d;
    return 4 * q;
}

/* MLA (layers/common/mla.h), as hipath runs it, absorbed, for prefill
 * too: q (through q_lora_rank, or direct), kv_a (the latent and the rope
 * key: all the cache keeps), and kv_b_proj's W_UK and W_UV applied per
 * token to the query and the output (absorbed, so its rows multiply the
 * latent once a token, not once a cached position). A pair scores rank +
 * rope and sums rank, per head: 2 h (2 rank + rope). Over N GPUs (vLLM's
 * split) the heads divide: q (q_b), kv_b and o by N; q_a and kv_a, like
 * the latent cache, are whole on each. */
static double mla_ops(bounds_result *r, const model_config *c, shard s, double b_q, int G, double prefill, double decode,
                      double *bytes, double *params) {
    double d = c->dim, H = (double)c->n_heads / s.N, qr = c->q_lora_rank, rank = c->kv_lora_rank, rope = c->qk_rope_head_dim;
    double q = H * c->head_dim, kv_b = H * ((double)c->qk_nope_head_dim + c->v_head_dim), o_in = H * c->v_head_dim;
    double m_qa = qr ? matrix_bytes(d, qr, b_q, G) : 0, m_q = matrix_bytes(qr ? qr : d, q, b_q, G);
    double m_kva = matrix_bytes(d, rank + rope, b_q, G), m_kvb = matrix_bytes(rank, kv_b, b_q, G);
    if (qr) linear(r, "q_a", s.layers, d, qr, m_qa, prefill, decode);
    linear(r, "q", s.layers, qr ? qr : d, q, m_q, prefill, decode);
    linear(r, "kv_a", s.layers, d, rank + rope, m_kva, prefill, decode);
    linear(r, "kv_b", s.layers, rank, kv_b, m_kvb, prefill, decode);
    *bytes = m_qa + m_q + m_kva + m_kvb + matrix_bytes(o_in, d, b_q, G);
    *params = d * qr + (qr ? qr : d) * q + d * (rank + rope) + rank * kv_b + o_in * d;
    return 2 * H * (2 * rank + rope);
}


/* The shard's operators, weights, KV and capacity into r (its b_* and
 * compute dtype set); returns its parameter count. Times come after, in
 * finish_all, once Pi is known. */
static double fill(bounds_result *r, const model_config *c, const gpu_profile *g, const bounds_input *in,
                   const bounds_options *opt, double b_q, shard s) {
    int G = opt->group_size, N = s.N, mla = c->kv_lora_rank > 0;
    double d = c->dim, V = c->vocab_size, nL = s.layers;
    /* q, k, v, gate, up split by columns (heads), o and down by rows; with
     * fewer KV heads than GPUs each GPU keeps one, copied (vLLM's
     * QKVParallelLinear). */
    double q = (double)c->n_heads * c->head_dim / N, f = (double)c->hidden_dim / N;
    double kv = (double)(c->n_kv_heads >= N ? c->n_kv_heads / N : 1) * c->head_dim;
    double o_in = mla ? (double)c->n_heads / N * c->v_head_dim : q;   /* o_proj's input: MLA's heads' values */
    /* MoE layers: a router [d, E] (whole on every GPU), E experts of three
     * [d, h] matrices and n_shared_experts more every token takes (their
     * h split as an FFN's); the others are dense. */
    int nM = 0;
    for (int l = s.from; l < s.from + s.layers; l++) nM += model_layer_is_moe(c, l);
    double nD = s.layers - nM, E = c->n_experts, h = (double)c->moe_hidden_dim / N, sh = c->n_shared_experts * h;
    double B = in->batch, P = in->prompt_len, L = in->context;
    double small = 2 * d + (c->qkv_bias ? q + 2 * kv : 0) + (c->qk_norm ? 2.0 * c->head_dim : 0)  /* per layer */
                 + (double)c->q_lora_rank + c->kv_lora_rank;   /* MLA's two norms */
    double moe_small = c->gating == GATE_SIGMOID ? E : 0;   /* e_score_correction_bias, per MoE layer */
    /* The embedding table and the LM head split by vocabulary; a tied one
     * is one table, unless they sit on two stages. */
    double table = V / N * d * (s.first + (s.last && !(c->tied && s.first)));
    double rest = table + nL * small + nM * moe_small + (s.last ? d : 0);   /* what is not in the blocks' matmuls */
    r->nops = 0;
    memset(&r->prefill, 0, sizeof r->prefill);
    memset(&r->decode, 0, sizeof r->decode);
    r->kv_bytes_per_token = c->kv_lora_rank ? nL * ((double)c->kv_lora_rank + c->qk_rope_head_dim) * r->b_kv   /* MLA's latent */
                                            : 2 * nL * kv * r->b_kv;
    r->kv_bytes_per_token_expanded = c->kv_lora_rank ? nL * (double)c->n_heads * (c->head_dim + c->v_head_dim) * r->b_kv : 0;

    /* Only the tokens' rows of the embedding table are read (a GPU's share
     * of them, with the table split). */
    bounds_op *o = add_op(r, "embed", 1);
    set(&o->phase[BOUNDS_PREFILL], 0, s.first ? B * P * d * r->b_other / N : 0, 0);
    set(&o->phase[BOUNDS_DECODE], 0, s.first ? B * d * r->b_other / N : 0, 0);
    /* Norm weights and biases of every layer, and the final norm: read; their
     * elementwise FLOPs left out. */
    o = add_op(r, "norms+bias", s.layers);
    set(&o->phase[BOUNDS_PREFILL], 0, (nL * small + nM * moe_small + (s.last ? d : 0)) * r->b_other, 0);
    o->phase[BOUNDS_DECODE] = o->phase[BOUNDS_PREFILL];
    double m_up = matrix_bytes(d, f, b_q, G), m_down = matrix_bytes(f, d, b_q, G), m_attn, p_attn;
    /* Causal: query i (1-based) attends to i positions, itself included, so
     * prefill sums 1..P = P(P+1)/2 pairs; each pair costs `pair` FLOPs.
     * Prefill writes the prompt's KV once; decode reads L positions. */
    double pair = mla ? mla_ops(r, c, s, b_q, G, B * P, B, &m_attn, &p_attn)
                      : gqa_ops(r, d, q, kv, s, b_q, G, B * P, B, &m_attn, &p_attn);
    o = add_op(r, "attn", s.layers);
    set(&o->phase[BOUNDS_PREFILL], B * nL * pair * P * (P + 1) / 2, 0, B * P * r->kv_bytes_per_token);
    set(&o->phase[BOUNDS_DECODE], B * nL * pair * L, 0, B * L * r->kv_bytes_per_token);
    linear(r, "o", s.layers, o_in, d, matrix_bytes(o_in, d, b_q, G), B * P, B);
    if (nD > 0) {
        linear(r, "gate", (int)nD, d, f, m_up, B * P, B);
        linear(r, "up", (int)nD, d, f, m_up, B * P, B);
        linear(r, "down", (int)nD, f, d, m_down, B * P, B);
    }
    double m_router = matrix_bytes(d, E, b_q, G), m_e = 2 * matrix_bytes(d, h, b_q, G) + matrix_bytes(h, d, b_q, G);
    double m_sh = 2 * matrix_bytes(d, sh, b_q, G) + matrix_bytes(sh, d, b_q, G);
    if (nM > 0) {
        linear(r, "router", nM, d, E, m_router, B * P, B);
        experts(r, c, nM, d, h, m_e, B * P, B);
        if (sh > 0) linear(r, "shared", nM, d, 3 * sh, m_sh, B * P, B);
    }
    r->moe_layers = nM;
    r->expert_bytes = m_e;
    linear(r, "lm_head", s.last, d, V / N, matrix_bytes(d, V / N, r->b_other, 0), B, B);   /* prefill: the last position only */
    r->weights_bytes = nL * m_attn + nD * (2 * m_up + m_down) + nM * (m_router + E * m_e + (sh > 0 ? m_sh : 0)) + rest * r->b_other;

    /* Workspace: hipath's estimate is one layer's prefill activations (x,
     * its norm, q k v, attention out, gate and up) in the compute dtype (16
     * bits unless fp32), and fp32 logits per sequence, gathered whole on the
     * last stage to be sampled; attention scores stay on chip
     * (FlashAttention-style). Or a fixed reserve, as the chapter's. */
    double act_b = strcmp(r->compute_dtype, "fp32") ? 2 : 4;
    r->capacity.weights_bytes = r->weights_bytes;
    r->capacity.kv_bytes = B * (P > L ? P : L) * r->kv_bytes_per_token;
    double mla_acts = c->kv_lora_rank ? 2.0 * c->n_heads / N * c->kv_lora_rank : 0;   /* MLA: q_lat, o_lat, [H, rank] each */
    r->capacity.workspace_bytes = opt->workspace_bytes > 0 ? opt->workspace_bytes
                                : B * P * (2 * d + 2 * q + 2 * kv + 2 * f + mla_acts) * act_b + (s.last ? B * V * 4 : 0);
    /* The profile stores "80 GB" of HBM as the 80 GiB it is; the chapter
     * reads the datasheet's figure as 80e9 bytes. */
    r->capacity.device_bytes = opt->decimal_gb ? g->memory_bytes / 1073741824.0 * 1e9 : g->memory_bytes;
    r->capacity.total_bytes = r->capacity.weights_bytes + r->capacity.kv_bytes + r->capacity.workspace_bytes;
    r->capacity.fits = r->capacity.total_bytes <= r->capacity.device_bytes;
    double moe = d * E + 3 * d * sh, expert = 3 * d * h;
    r->params_active = (int64_t)(rest + nL * p_attn + nD * 3 * d * f + nM * (moe + c->n_experts_per_tok * expert));
    return rest + nL * p_attn + nD * 3 * d * f + nM * (moe + E * expert);
}

/* B* with the experts a batch reads: the B where a decode step's matmul
 * FLOPs 2 B A (A: the active matmul parameters) take as long at Pi as
 * reading its weights, b_W (A - k x + E_read(B) x) per MoE layer's x
 * parameters of an expert, at beta. A dense model's is b_W Pi / (2 beta);
 * an MoE's is larger, as each step of more tokens reads more experts. */
static double moe_b_star(const bounds_result *r, const model_config *c) {
    double k = c->n_experts_per_tok, x = 3.0 * c->dim * c->moe_hidden_dim * r->moe_layers;
    /* an untied embedding table is not a matmul (a tied one is the LM head's) */
    double A = (double)r->params_active - (c->tied ? 0 : (double)c->vocab_size * c->dim);
    double lo = 0, hi = 1;
    #define GAP(B) (2 * (B) * A * r->bandwidth - r->b_w * (A - k * x + bounds_experts_read(c, B) * x) * r->peak)
    while (GAP(hi) < 0 && hi < 1e12) hi *= 2;
    for (int i = 0; i < 100; i++) { double m = (lo + hi) / 2; if (GAP(m) < 0) lo = m; else hi = m; }
    #undef GAP
    return hi;
}

/* Every operator's times, and the phases' sums. */
static void finish_all(bounds_result *r) {
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
}

/* tp and pp against the model and the interconnect: 0, or -1 with the reason. */
static int check_parallel(const model_config *c, const gpu_profile *g, int N, int M, char *err, int errlen) {
    char why[384];
    if (N < 1 || M < 1) return snprintf(err, errlen, "tp %d, pp %d: each must be at least 1", N, M), -1;
    if (forward_split_check(c, N, M, 1, err, errlen)) return -1;   /* the engine's own split rule */
    long n = (long)N * M;
    if (gpu_link_check(g, n > INT_MAX ? INT_MAX : (int)n, why, sizeof why))
        return snprintf(err, errlen, "tp %d x pp %d: %s%s", N, M, why,
                        g->link.links > 0 ? "; pipeline stages across servers are not modeled" : ""), -1;
    return 0;
}

/* One stage's part of a phase on its GPUs: its own bound, then its layers'
 * all-reduces (2 a layer, after o and after down, each of `bytes`), which
 * a decode step does not overlap with the next layer's matmuls. */
static void add_stage(bounds_parallel_phase *p, const bounds_phase *s, int layers, const gpu_profile *g, int N, double bytes) {
    gpu_all_reduce a = gpu_all_reduce_time(g, N, bytes);
    int n = N > 1 ? 2 * layers : 0;
    p->t_compute += s->t_compute;
    p->t_memory += s->t_memory;
    p->all_reduce.bytes = N > 1 ? bytes : 0;
    p->all_reduce.per_step += n;
    p->all_reduce.bandwidth_s += n * a.bandwidth_s;
    p->all_reduce.latency_s += n * a.latency_s;
    p->all_reduce.total_s += n * a.total_s;
    p->t_step += s->t_lower + n * a.total_s;
}

/* The pp - 1 hand-offs of `bytes`, and the share of the step that is
 * communication. */
static void add_sends(bounds_parallel_phase *p, const gpu_profile *g, int M, double bytes) {
    p->send_bytes = M > 1 ? bytes : 0;
    p->send_s = M > 1 ? (M - 1) * gpu_send_time(g, bytes) : 0;
    p->t_step += p->send_s;
    p->comm_share = p->t_step > 0 ? (p->all_reduce.total_s + p->send_s) / p->t_step : 0;
}

/* tp x pp GPUs: each stage's shard, the fullest GPU's capacity, one
 * batch's phases through every stage in turn, and the largest batch that
 * fits on every GPU. */
static void parallel(bounds_result *r, const model_config *c, const gpu_profile *g, const bounds_input *in,
                     const bounds_options *opt, double b_q, int N, int M) {
    bounds_parallel *p = &r->parallel;
    double B = in->batch, x = B * c->dim * (strcmp(r->compute_dtype, "fp32") ? 2 : 4);   /* B x d activations */
    int per = c->n_layers / M, extra = c->n_layers % M, fixed = opt->workspace_bytes > 0;
    p->tp = N;
    p->pp = M;
    p->gpus = N * M;
    p->heads = c->n_heads / N;
    p->kv_heads = c->kv_lora_rank ? 1 : c->n_kv_heads >= N ? c->n_kv_heads / N : 1;   /* MLA: the one latent, whole */
    p->ring_bandwidth = gpu_ring_bandwidth(g, N);
    p->b_fit = INT64_MAX;
    for (int i = 0, from = 0; i < M; i++) {
        /* vLLM's get_pp_indices: the layers left over go one each to the
         * stages before the last (it holds the final norm and LM head). */
        shard s = { per + (i >= M - 1 - extra && i < M - 1), i == 0, i == M - 1, N, from };
        from += s.layers;
        bounds_result st = *r;
        fill(&st, c, g, in, opt, b_q, s);
        finish_all(&st);
        p->stage_layers[i] = s.layers;
        if (i == 0 || st.capacity.total_bytes > p->per_gpu.total_bytes) {
            p->fullest = i;
            p->per_gpu = st.capacity;
            p->kv_bytes_per_token = st.kv_bytes_per_token;
        }
        /* KV and the estimated workspace grow with B; weights and a fixed
         * workspace do not. */
        const bounds_capacity *k = &st.capacity;
        double per_seq = (k->kv_bytes + (fixed ? 0 : k->workspace_bytes)) / B;
        double room = k->device_bytes - k->weights_bytes - (fixed ? k->workspace_bytes : 0);
        int64_t b = room > 0 ? (int64_t)floor(room / per_seq) : 0;
        if (b < p->b_fit) p->b_fit = b;
        add_stage(&p->prefill, &st.prefill, s.layers, g, N, x * in->prompt_len);
        add_stage(&p->decode, &st.decode, s.layers, g, N, x);
    }
    add_sends(&p->prefill, g, M, x * in->prompt_len);
    add_sends(&p->decode, g, M, x);
}

int bounds_compute_with(const model_config *c, const gpu_profile *g, const bounds_input *in,
                        const bounds_options *opt, bounds_result *r, char *err, int errlen) {
    int wd = find_dtype(in->dtype, 1), G = opt->group_size;
    int N = opt->tp ? opt->tp : 1, M = opt->pp ? opt->pp : 1;
    if (check_input(c, in, opt, wd, err, errlen)) return -1;
    memset(r, 0, sizeof *r);
    double b_q = DTYPES[wd].bytes;   /* a quantized (or plain) weight, without its scale */
    r->b_w = b_q + (G > 0 ? B_SCALE / G : 0);
    r->b_other = G > 0 ? B_KEPT : b_q;
    r->b_kv = DTYPES[find_dtype(in->kv_dtype, 0)].bytes;
    r->compute_dtype = opt->compute_dtype ? opt->compute_dtype : DTYPES[wd].compute;
    r->bandwidth = g->bandwidth;

    double params = fill(r, c, g, in, opt, b_q, (shard){ c->n_layers, 1, 1, 1, 0 });
    if (params > MAX_PARAMS) {
        snprintf(err, errlen, "the config has %.3g parameters, more than 2^53 = 9.0e15 (a count past exact, "
                 "and thousands of times any real model): check its sizes", params);
        return -1;
    }
    if (gpu_profile_peak(g, r->compute_dtype, &r->peak, err, errlen)) return -1;
    if (check_parallel(c, g, N, M, err, errlen)) return -1;
    r->params = (int64_t)params;
    finish_all(r);
    r->b_star = r->b_w * r->peak / (2 * r->bandwidth);
    r->b_star_moe = r->moe_layers ? moe_b_star(r, c) : r->b_star;
    parallel(r, c, g, in, opt, b_q, N, M);
    return 0;
}

int bounds_compute(const model_config *c, const gpu_profile *g, const bounds_input *in,
                   bounds_result *r, char *err, int errlen) {
    return bounds_compute_with(c, g, in, &(bounds_options){ 0 }, r, err, errlen);
}
