/*
 * forward.c -- layer 5: the transformer, one step at a time.
 * Reads like the math: x = embed(tokens); per layer
 *   x += Wo . attention(rope(Wq . norm(x)), rope(Wk . norm(x)), Wv . norm(x))
 *        (deepseek_v3: latent attention, mla.c)
 *   x += Wdown . (silu(Wgate . norm(x)) * Wup . norm(x))
 * then logits = Wlm . norm(x) for each sequence's last token.
 *
 * Over tp GPUs (tensor parallelism, as Megatron-LM and vLLM split a
 * transformer): the embedding and the LM head by vocabulary rows, q k v
 * gate up by output columns, attention by heads, o and down by input
 * rows, so that each GPU holds 1/tp of every matrix and of the KV cache
 * (past tp = KV heads, one KV head each, repeated, as vLLM does; MLA's
 * latent cache is whole on every GPU, its heads split: mla.c).
 * Wo and Wdown then leave partial sums: an all-reduce makes x whole on
 * every GPU before the residual add; the embedding's rows too. The norms
 * and adds run whole on every GPU. The logits are gathered to GPU 0.
 *
 * With --ep (expert parallelism, tp = ep) a MoE layer's experts are spread
 * over the GPUs, E/ep whole on each, as DeepEP and SGLang's EP MoE run them:
 * attention's partial sums are reduce-scattered (each GPU then holds 1/ep
 * of the tokens), each GPU sends its tokens to their experts' GPUs and
 * gets the outputs back (two all-to-alls, moe.c), and an all-gather makes
 * x whole again for the next attention: the all-reduce's two halves, with
 * the experts between them.
 *
 * Over pp stages (pipeline parallelism) the layers are cut into pp runs,
 * as vLLM's get_pp_indices cuts them, each stage its own tp GPUs: the
 * first embeds, the last computes the logits, and each hands x to the
 * next (a send: T x dim f32). The logits then come back without the host
 * waiting: the engine waits for the step's event when it needs them, so
 * that other micro-batches are in the pipeline meanwhile.
 */
#include "layers/tensor/forward.h"
#include "layers/tensor/moe.h"
#include "layers/ops/ops.h"
#include "layers/runtime/runtime.h"
#include "trace/trace.h"
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* The activation buffers in device memory, and their sizes for T tokens
 * and S sequences (one table, so forward_state_bytes is what init takes). */
enum { A_X, A_XB, A_Q, A_K, A_V, A_ATT, A_GATE, A_UP, A_XLAST, A_LOGITS, A_IDS, A_POS,
       A_ROUTER, A_E_W, A_E_IDS, A_E_GATE, A_E_UP, A_E_OUT, A_SHARED, A_N };
static const char *const A_NAME[A_N] = { "x", "xb", "q", "k", "v", "att", "gate", "up", "xlast", "logits", "ids", "pos",
                                         "router", "expert_weights", "expert_ids", "experts_gate", "experts_up", "experts_out",
                                         "shared" };

static void sizes(const model_config *c, size_t T, size_t S, size_t bytes[A_N]) {
    size_t f = sizeof(float), q_dim = (size_t)c->n_heads * c->head_dim, kv_dim = (size_t)c->n_kv_heads * c->head_dim;
    size_t dim = (size_t)c->dim, ffn = (size_t)c->hidden_dim, shared = (size_t)c->n_shared_experts * c->moe_hidden_dim;
    size_t Tk = T * c->n_experts_per_tok;   /* a MoE model's (token, choice) slots; 0 for a dense one */
    if (shared > ffn) ffn = shared;         /* the shared experts' FFN uses gate and up too */
    bytes[A_X] = T * dim * f;
    bytes[A_XB] = T * (dim > q_dim ? dim : q_dim) * f;
    bytes[A_Q] = T * q_dim * f;
    bytes[A_ATT] = c->kv_lora_rank ? 0 : T * q_dim * f;                /* MLA: mla_state's att, and */
    bytes[A_K] = bytes[A_V] = c->kv_lora_rank ? 0 : T * kv_dim * f;   /* its latent instead of k, v */
    bytes[A_GATE] = bytes[A_UP] = T * ffn * f;
    bytes[A_XLAST] = S * dim * f;
    bytes[A_LOGITS] = S * (size_t)c->vocab_size * f;
    bytes[A_IDS] = bytes[A_POS] = T * sizeof(int);
    bytes[A_ROUTER] = T * (size_t)c->n_experts * f;
    bytes[A_E_W] = Tk * f;
    bytes[A_E_IDS] = Tk * sizeof(int);
    bytes[A_E_GATE] = bytes[A_E_UP] = Tk * (size_t)c->moe_hidden_dim * f;
    bytes[A_E_OUT] = Tk * dim * f;
    bytes[A_SHARED] = shared ? T * dim * f : 0;
}

size_t forward_state_bytes(const model_config *c, int max_tokens, int max_seqs) {
    size_t bytes[A_N], sum = 0;
    sizes(c, (size_t)max_tokens, (size_t)max_seqs, bytes);
    for (int i = 0; i < A_N; i++) sum += bytes[i];
    return sum + mla_state_bytes(c, max_tokens);
}

int forward_split_check(const model_config *c, int tp, int pp, int ep, char *err, int errlen) {
    if (pp > c->n_layers) return snprintf(err, errlen, "pp %d: more stages than the %d layers", pp, c->n_layers), -1;
    if (ep > 1 && !c->n_experts) return snprintf(err, errlen, "ep %d: the model has no experts (a dense FFN)", ep), -1;
    if (ep > 1 && c->n_experts % ep)
        return snprintf(err, errlen, "ep %d: it must divide the %d experts (each GPU holds as many)", ep, c->n_experts), -1;
    if (tp <= 1) return 0;
    if (c->n_heads % tp) return snprintf(err, errlen, "tp %d: it must divide the %d attention heads", tp, c->n_heads), -1;
    if (!c->kv_lora_rank && c->n_kv_heads % tp && tp % c->n_kv_heads)   /* MLA: the latent is whole on every GPU */
        return snprintf(err, errlen, "tp %d: it must divide the %d KV heads, or be a multiple of them (each GPU then keeps one)",
                        tp, c->n_kv_heads), -1;
    if (c->hidden_dim % tp) return snprintf(err, errlen, "tp %d: it must divide intermediate_size %d", tp, c->hidden_dim), -1;
    if (c->n_experts && ep == 1 && c->moe_hidden_dim % tp)
        return snprintf(err, errlen, "tp %d: it must divide the experts' moe_intermediate_size %d", tp, c->moe_hidden_dim), -1;
    return 0;
}

/* Layer l's stage of pp, as vLLM's get_pp_indices: n_layers / pp each, the
 * remainder one more each to the stages before the last, from the last but
 * one back (the first holds the embedding and the last the LM head). */
int forward_stage_of(int n_layers, int pp, int l) {
    int base = n_layers / pp, extra = n_layers % pp, end = 0;
    for (int s = 0; s < pp; s++) {
        end += base + (s >= pp - 1 - extra && s < pp - 1);
        if (l < end) return s;
    }
    return pp - 1;
}

int forward_state_init(forward_state *s, const model_config *c, int max_tokens, int max_seqs) {
    memset(s, 0, sizeof *s);
    s->max_tokens = max_tokens; s->max_seqs = max_seqs;
    void **buf[A_N] = { (void **)&s->x, (void **)&s->xb, (void **)&s->q, (void **)&s->k, (void **)&s->v, (void **)&s->att,
                        (void **)&s->gate, (void **)&s->up, (void **)&s->xlast, (void **)&s->logits, (void **)&s->d_ids,
                        (void **)&s->d_pos, (void **)&s->router, (void **)&s->e_w, (void **)&s->e_ids, (void **)&s->e_gate,
                        (void **)&s->e_up, (void **)&s->e_out, (void **)&s->shared };
    size_t bytes[A_N];
    sizes(c, (size_t)max_tokens, (size_t)max_seqs, bytes);
    int bad = !(s->ids = malloc((size_t)max_tokens * sizeof(int))) || !(s->pos = malloc((size_t)max_tokens * sizeof(int))) ||
              !(s->row_seq = malloc((size_t)max_tokens * sizeof(int))) || !(s->row0 = malloc(((size_t)max_seqs + 1) * sizeof(int))) ||
              !(s->seq = malloc((size_t)max_seqs * sizeof *s->seq));
    if (c->n_experts)
        bad |= !(s->groups.start = malloc(((size_t)c->n_experts + 1) * sizeof(int))) ||
               !(s->groups.slot = malloc((size_t)max_tokens * c->n_experts_per_tok * sizeof(int))) ||
               !(s->groups.ids = malloc((size_t)max_tokens * c->n_experts_per_tok * sizeof(int)));
    for (int i = 0; i < A_N; i++) bad |= bytes[i] && !(*buf[i] = rt_alloc(bytes[i], RT_ACTIVATIONS, A_NAME[i]));   /* a dense model's MoE ones: 0 */
    if (bad || mla_state_init(&s->mla, c, max_tokens)) {
        forward_state_free(s);
        return -1;
    }
    return 0;
}

void forward_state_free(forward_state *s) {
    rt_free(s->x); rt_free(s->xb); rt_free(s->q); rt_free(s->k); rt_free(s->v); rt_free(s->att);
    rt_free(s->gate); rt_free(s->up); rt_free(s->xlast); rt_free(s->logits); rt_free(s->d_ids); rt_free(s->d_pos);
    rt_free(s->router); rt_free(s->e_w); rt_free(s->e_ids); rt_free(s->e_gate); rt_free(s->e_up); rt_free(s->e_out); rt_free(s->shared);
    free(s->groups.start); free(s->groups.slot); free(s->groups.ids);
    free(s->ids); free(s->pos); free(s->row_seq); free(s->row0); free(s->seq);
    mla_state_free(&s->mla);
    memset(s, 0, sizeof *s);
}

/* Stack every sequence's new tokens into the step's rows, positions
 * continuing each cache, and copy the ids and positions to the device. */
static void stack(forward_state *s, const seq_step *seqs, int n_seqs, int T, int64_t step) {
    for (int i = 0, t = 0; i < n_seqs; i++)
        for (int j = 0; j < seqs[i].n; j++, t++) { s->ids[t] = seqs[i].tokens[j]; s->pos[t] = seqs[i].kv->len + j; s->row_seq[t] = i; }
    for (int i = 0, t = 0; i < n_seqs; t += seqs[i].n, i++) { s->seq[i] = seqs[i].kv; s->row0[i] = t; }
    s->row0[n_seqs] = T;
    static _Atomic unsigned long long batches;
    s->batch = (kv_batch){ .id = ++batches, .n_seqs = n_seqs, .T = T, .seq = s->seq, .row0 = s->row0, .row_seq = s->row_seq,
                           .pos = s->pos };
    uint64_t f = trace_flow_next();   /* the ids' copy -> the first op: the embedding */
    trace_flow_out(f);
    rt_copy_async(s->d_ids, s->ids, T * sizeof(int), COPY_H2D, step);
    trace_flow_in_at(L_OPS, f);
    rt_copy_async(s->d_pos, s->pos, T * sizeof(int), COPY_H2D, step);
}

/* logits = Wlm . norm(x), only for each sequence's last row that needs
 * them; then up to the host: the copy waits for every kernel queued before it. */
static void lm_head(const model *m, forward_state *s, seq_step *seqs, int n_seqs, int n_logits, op_plan whole, op_plan cols,
                    int wait) {
    const model_config *c = &m->cfg;
    int dim = c->dim, vocab = c->vocab_size;
    for (int i = 0, t = 0, r = 0; i < n_seqs; t += seqs[i].n, i++)
        if (seqs[i].logits)
            rt_copy_async(s->xlast + (size_t)r++ * dim, s->x + (size_t)(t + seqs[i].n - 1) * dim, dim * sizeof(float), COPY_D2D, whole.step);
    op_rmsnorm(whole, "final_norm", s->xlast, s->xlast, m->w.final_norm, n_logits, dim, c->norm_eps);
    op_matmul(cols, "lm_head", s->logits, s->xlast, m->w.lm_head, NULL, n_logits);
    if (cols.n > 1) op_gather(whole, "logits_gather", n_logits, vocab);   /* the join: GPU 0 samples */
    for (int i = 0, r = 0; i < n_seqs; i++) {
        if (!seqs[i].logits) continue;
        if (seqs[i].first) {   /* the first token's logits on their way up */
            trace_flow_in(trace_request_flow(seqs[i].req, HOP_COMPUTED));
            trace_flow_out(trace_request_flow(seqs[i].req, HOP_COPIED_BACK));
        }
        (wait ? rt_copy : rt_copy_async)(seqs[i].logits, s->logits + (size_t)r++ * vocab, vocab * sizeof(float), COPY_D2H, whole.step);
    }
}

int forward(const model *m, forward_state *s, kv_cache *kv, seq_step *seqs, int n_seqs, int64_t step) {
    const model_config *c = &m->cfg;
    int T = 0, n_logits = 0;
    for (int i = 0; i < n_seqs; i++) { T += seqs[i].n; n_logits += seqs[i].logits != NULL; }
    if (T > s->max_tokens || n_logits > s->max_seqs || T == 0) return -1;
    int dim = c->dim, hd = c->head_dim;
    int adjacent = c->rope == ROPE_ADJACENT;

    /* The plan: how each op splits over the tp GPUs (ops.h); which of the pp stages runs it. */
    int tp = rt_device_now()->gpus, pp = rt_device_now()->stages, ep = rt_device_now()->ep, stage = 0;
    int kv_split = tp < c->n_kv_heads ? tp : c->n_kv_heads;   /* past tp = KV heads, a KV head repeats */
    op_plan whole = { step, 1, SPLIT_OUT }, cols = { step, tp, SPLIT_OUT }, rows = { step, tp, SPLIT_IN },
            kv_cols = { step, kv_split, SPLIT_OUT };

    trace_where w = trace_at(L_TENSOR, DIR_DOWN, NO_REQ, step);
    rt_stage(0);
    op_fan_out(tp);   /* the step fans out: an arrow to each GPU's first work */
    /* an arrow on to the first thing it does: copy the ids (layer 2) */
    trace_begin_flowing(w, "forward", TRACE_ARGS(TA_INT("tokens", T), TA_INT("seqs", n_seqs), TA_INT("dim", dim),
                                                 TA_LIT("x_dtype", "f32"), TA_LIT("w_dtype", dtype_name(m->w.lm_head->dt))));
    stack(s, seqs, n_seqs, T, step);
    for (int i = 0; i < n_seqs; i++)   /* a first token's way up starts at the device's first kernel */
        if (seqs[i].first && seqs[i].logits) op_flow_out_first(trace_request_flow(seqs[i].req, HOP_COMPUTED));
    op_embedding(cols, s->x, m->w.tok_emb, s->d_ids, T);
    if (tp > 1) op_all_reduce(whole, "embed_all_reduce", T, dim);   /* each GPU found the ids of its rows */

    for (int l = 0; l < c->n_layers; l++) {
        const layer_weights *L = &m->w.layer[l];
        if (forward_stage_of(c->n_layers, pp, l) != stage) {   /* the next stage's first layer: x goes over to it */
            op_send(whole, "pp_send", T, dim, stage, stage + 1);
            rt_stage(++stage);
        }
        trace_begin(w, "layer", TRACE_ARGS(TA_INT("layer", l)));

        op_rmsnorm(whole, "attn_norm", s->xb, s->x, L->attn_norm, T, dim, c->norm_eps);
        if (c->kv_lora_rank) mla_attention(c, L, &s->mla, s->xb, s->xb, s->q, kv, &s->batch, l, s->d_pos, whole, cols, rows);   /* deepseek_v3 */
        else {
            op_matmul(cols, "q_proj", s->q, s->xb, L->wq, L->bq, T);   /* each GPU: its query heads */
            if (c->qk_norm) op_rmsnorm(cols, "q_norm", s->q, s->q, L->q_norm, T * c->n_heads, hd, c->norm_eps);   /* qwen3 */
            op_rope(cols, s->q, T, c->n_heads, hd, s->d_pos, c->rope_theta, NULL, adjacent);
            op_matmul(kv_cols, "k_proj", s->k, s->xb, L->wk, L->bk, T);   /* ... and its KV heads, whose reads bound attention */
            op_matmul(kv_cols, "v_proj", s->v, s->xb, L->wv, L->bv, T);
            if (c->qk_norm) op_rmsnorm(kv_cols, "k_norm", s->k, s->k, L->k_norm, T * c->n_kv_heads, hd, c->norm_eps);
            op_rope(kv_cols, s->k, T, c->n_kv_heads, hd, s->d_pos, c->rope_theta, NULL, adjacent);
            op_kv_append(kv_cols, kv, &s->batch, l, s->k, s->v);
            op_attention(kv_cols, s->att, s->q, kv, &s->batch, l, c->n_heads, c->n_kv_heads, hd);
            op_matmul(rows, "o_proj", s->xb, s->att, L->wo, NULL, T);
        }
        int ep_layer = ep > 1 && L->w_router;   /* its experts spread over the GPUs (moe.c) */
        if (ep_layer) op_reduce_scatter(whole, "attn_reduce_scatter", T, dim);   /* each GPU: its tokens' sums, to dispatch */
        else if (tp > 1) op_all_reduce(whole, "attn_all_reduce", T, dim);   /* Wo's partial sums */
        op_add(whole, "residual", s->x, s->xb, T, dim);

        op_rmsnorm(whole, "ffn_norm", s->xb, s->x, L->ffn_norm, T, dim, c->norm_eps);
        if (L->w_router) moe_ffn(m, s, L, l, T, whole, cols, rows);   /* a mixture of experts (moe.c) */
        else {
            op_matmul(cols, "gate_proj", s->gate, s->xb, L->w_gate, NULL, T);   /* each GPU: its columns of the FFN */
            op_matmul(cols, "up_proj", s->up, s->xb, L->w_up, NULL, T);
            op_silu_mul(cols, s->gate, s->up, T, c->hidden_dim);
            op_matmul(rows, "down_proj", s->xb, s->gate, L->w_down, NULL, T);
        }
        if (ep_layer) op_all_gather(whole, "moe_all_gather", T, dim);   /* each GPU's tokens to all, for attention */
        else if (tp > 1) op_all_reduce(whole, "mlp_all_reduce", T, dim);   /* Wdown's partial sums */
        op_add(whole, "residual", s->x, s->xb, T, dim);

        trace_end(w, NO_ARGS);
    }
    for (int i = 0; i < n_seqs; i++) seqs[i].kv->len += seqs[i].n;

    if (n_logits) lm_head(m, s, seqs, n_seqs, n_logits, whole, cols, pp == 1);
    trace_end(w, NO_ARGS);
    return 0;
}
