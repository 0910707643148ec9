/*
 * served.c -- layer 6: the model, its tokenizer, the KV pool and the engine
 * a server serves (served.h), and each request made ready for the engine.
 */
#include "layers/scheduler/served.h"
#include "layers/runtime/runtime.h"
#include "trace/trace.h"
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const DP_LB_NAME[2] = { "round_robin", "shortest_queue" };

const char *served_name(const char *path, char *buf, int cap) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    size_t b = n;
    while (b > 0 && path[b - 1] != '/') b--;
    snprintf(buf, cap, "%.*s", (int)(n - b), path + b);
    char *ext = strstr(buf, ".config.json");
    if (ext || (ext = strstr(buf, ".json"))) *ext = 0;
    return buf;
}

/* Teacher forcing: the reply's ids (no template: the model's own words),
 * then the end of the turn, emitted whatever the model samples. */
static int force_reply(served *s, const char *reply, char *err, int errlen) {
    int cap = (int)strlen(reply) + 2, *ids;
    for (;;) {   /* normalization may make the text longer than its bytes: then again, at the count */
        if (!(ids = realloc(s->forced, cap * sizeof *ids))) return snprintf(err, errlen, "out of memory"), -1;
        s->forced = ids;
        if ((s->n_forced = s->text.encode(s->text.ctx, reply, 0, s->forced, cap - 1, err, errlen, NO_REQ)) < 0) return -1;
        if (s->n_forced <= cap - 1) break;
        cap = s->n_forced + 1;
    }
    if (!s->n_stop_ids) return snprintf(err, errlen, "--reply: the tokenizer has no end-of-turn token to end it"), -1;
    s->forced[s->n_forced++] = s->stop_ids[0];
    return 0;
}

/* The KV pool and the context length. --kv-cache-mb sets the pool, and the
 * context is the model's, capped by the pool. Otherwise, on a device whose
 * memory is known (a profile's; a GPU's), the pool takes what 90% of it
 * leaves after the weights and the workspace, as vLLM's
 * --gpu-memory-utilization 0.9 does; the context is the longest whose
 * prompt's activations and KV fit together (capped by the model's); a
 * simulated device with data computes on this host, so its pool is capped
 * at 256 MiB of host memory. On cpu: 64 MiB. What it chose is printed.
 * Over --tp N GPUs each holds 1/N of the weights and its KV heads' share of
 * every token (a KV head is kept whole: past N = KV heads they repeat, as
 * vLLM does; MLA's latent is whole on each), and the whole workspace; over --pp M stages a GPU holds its
 * stage's layers' share of both, the fullest stage's (the embedding and
 * the LM head counted as if spread with the layers). The workspace holds a step's ids:
 * the budget with chunked prefill, else the longest prompt and a token of
 * every other request. */
#define KV_MEMORY_SHARE 0.9
static int size_kv(served *s, const server_opts *o, engine_opts *eo, char *err, int errlen) {
    int max_batch = eo->max_num_seqs, *kv_tokens = &eo->kv_tokens;
    const model_config *c = &s->m.cfg;
    const rt_device *d = rt_device_now();
    int n = d->gpus, kv_split = c->kv_lora_rank ? 1 : n < c->n_kv_heads ? n : c->n_kv_heads;   /* MLA: the latent whole on each */
    int stage_layers = c->n_layers / d->stages + (c->n_layers % d->stages > 0);   /* the fullest stage's (forward_stage_of) */
    double stage_share = (double)stage_layers / c->n_layers;
    double per_token = (double)model_kv_token_bytes(c, sizeof(float)), per_token_gpu = per_token / kv_split * stage_share;
    double budget = KV_MEMORY_SHARE * d->prof.memory_bytes, mb = o->kv_cache_mb;
    if (mb <= 0 && !(budget > 0)) mb = 64;
    if (mb > 0) {
        *kv_tokens = (int)fmin(mb * 1048576 / per_token, INT_MAX / 2);
        s->max_model_len = o->max_model_len ? o->max_model_len : (c->max_seq_len < *kv_tokens ? c->max_seq_len : *kv_tokens);
        if (*kv_tokens < KV_BLOCK_SIZE) return snprintf(err, errlen, "--kv-cache-mb %g holds no whole KV block", mb), -1;
        /* the batch can be no larger than the requests this holds: say it */
        fprintf(stderr, "hipath: KV cache %g MiB = %d tokens, %.0f B a token (%s; set with --kv-cache-mb)\n", mb, *kv_tokens,
                per_token, o->kv_cache_mb > 0 ? "asked for" : "the default on a device with no memory size");
        return 0;
    }
    double weights = (double)weights_bytes(&s->m.files) / n * stage_share;   /* one GPU's */
    double ws_token = (double)forward_state_bytes(c, 1, 0), ws_fixed = (double)forward_state_bytes(c, 0, max_batch);
    int fixed_step = eo->max_num_batched_tokens > 0;   /* else the step grows with the context (served_open's default) */
    double room = budget - weights - ws_fixed - ws_token * (fixed_step ? eo->max_num_batched_tokens : max_batch);
    long len = o->max_model_len ? o->max_model_len : (long)fmin(c->max_seq_len, floor(room / (per_token_gpu + (fixed_step ? 0 : ws_token))));
    double step = fixed_step ? eo->max_num_batched_tokens : len + max_batch;
    double workspace = ws_fixed + ws_token * step, kv = budget - weights - workspace;
    const char *cap = "";
    if (d->driver->has_data && d->driver->modeled && kv * kv_split > 268435456.0 / d->replicas) {
        kv = 268435456.0 / d->replicas / kv_split;
        cap = ", capped at 256 MiB of host memory (sim computes on this host)";
    }
    if (len < 2 || kv < KV_BLOCK_SIZE * per_token_gpu)
        return snprintf(err, errlen, "%s: the weights (%.2f GB%s) and the workspace (%.2f GB) leave no room for a KV cache in %.0f%% of %.2f GB",
                        d->name, weights / 1e9, n * d->stages > 1 ? " a GPU" : "", workspace / 1e9, 100 * KV_MEMORY_SHARE, d->prof.memory_bytes / 1e9), -1;
    *kv_tokens = (int)fmin(kv / per_token_gpu, INT_MAX / 2);
    s->max_model_len = (int)len;
    if (n * d->stages > 1)
        fprintf(stderr, "hipath: KV cache %d tokens over %d GPUs: on each, %.3g GB: %.0f%% of %s's %.4g GB, less its weights %.3g GB "
                        "and workspace %.3g GB%s; context %d tokens (set with --kv-cache-mb, --max-model-len)\n", *kv_tokens, n * d->stages,
                kv / 1e9, 100 * KV_MEMORY_SHARE, d->name, d->prof.memory_bytes / 1e9, weights / 1e9, workspace / 1e9, cap,
                s->max_model_len);
    else
        fprintf(stderr, "hipath: KV cache %.3g GB = %d tokens: %.0f%% of %s's %.4g GB, less weights %.3g GB and workspace %.3g GB%s; "
                        "context %d tokens (set with --kv-cache-mb, --max-model-len)\n", kv / 1e9, *kv_tokens, 100 * KV_MEMORY_SHARE,
                d->name, d->prof.memory_bytes / 1e9, weights / 1e9, workspace / 1e9, cap, s->max_model_len);
    return 0;
}

int served_open(served *s, const server_opts *o, char *err, int errlen) {
    memset(s, 0, sizeof *s);
    if (o->analytic_dtype ? model_load_analytic(&s->m, o->model_dir, o->analytic_dtype, NULL, err, errlen)
                          : model_load(&s->m, o->model_dir, err, errlen)) return -1;
    const model_config *c = &s->m.cfg;
    if (forward_split_check(c, rt_device_now()->gpus, rt_device_now()->stages, rt_device_now()->ep, err, errlen)) goto fail_model;
    s->dp = rt_device_now()->replicas;
    s->dp_lb = o->dp_lb;
    if (!(s->e = calloc(s->dp, sizeof *s->e))) { snprintf(err, errlen, "out of memory"); goto fail_model; }
    const char *tok = o->tokenizer_path ? o->tokenizer_path : s->m.tokenizer_path;
    if (!tok && !o->analytic_dtype) { snprintf(err, errlen, "%s: no tokenizer.json; the server needs one", o->model_dir); goto fail_model; }
    if (o->open_text(tok, c->vocab_size, &s->text, err, errlen)) goto fail_model;
    s->n_stop_ids = engine_stop_ids(&s->m, &s->text, s->stop_ids, sizeof s->stop_ids / sizeof *s->stop_ids);
    if (o->reply && force_reply(s, o->reply, err, errlen)) goto fail_tok;
    if (o->served_name) snprintf(s->name, sizeof s->name, "%s", o->served_name);
    else served_name(o->model_dir, s->name, sizeof s->name);
    s->split_special_tokens = o->split_special_tokens;
    const rt_device *d = rt_device_now();
    engine_opts eo = { .max_num_seqs = o->max_batch > 0 ? o->max_batch : 32, .no_chunked_prefill = o->no_chunked_prefill,
                       .no_prefix_caching = o->no_prefix_caching, .reserve_worst_case = o->reserve_worst_case,
                       .max_num_batched_tokens = o->max_num_batched_tokens };
    if (!eo.max_num_batched_tokens && !eo.no_chunked_prefill)   /* vLLM's API server default, by the device's memory */
        eo.max_num_batched_tokens = d->prof.memory_bytes >= 70.0 * (1 << 30) && !strstr(d->prof.name, "A100") ? 8192 : 2048;
    if (size_kv(s, o, &eo, err, errlen)) goto fail_tok;
    int kv_tokens = eo.kv_tokens;
    if (!eo.max_num_batched_tokens) eo.max_num_batched_tokens = s->max_model_len + eo.max_num_seqs;   /* unchunked: the longest prompt */
    if (s->max_model_len < 2 || s->max_model_len > c->max_seq_len) {
        snprintf(err, errlen, "--max-model-len %d: must be 2 to the model's context length %d", s->max_model_len, c->max_seq_len);
        goto fail_tok;
    }
    if (s->max_model_len > kv_tokens)
        fprintf(stderr, "hipath: warning: the KV cache holds %d tokens, fewer than --max-model-len %d; "
                        "longer requests get 503\n", kv_tokens, s->max_model_len);
    eo.max_model_len = s->max_model_len;
    if (eo.no_chunked_prefill && eo.max_num_batched_tokens < s->max_model_len) {
        snprintf(err, errlen, "--max-num-batched-tokens %d is smaller than the context %d: without chunked prefill a step must hold "
                              "the longest prompt (lower --max-model-len, or leave chunked prefill on)", eo.max_num_batched_tokens, s->max_model_len);
        goto fail_tok;
    }
    if (eo.max_num_batched_tokens < eo.max_num_seqs) eo.max_num_seqs = eo.max_num_batched_tokens;   /* a token each, at most */
    int started = 0;
    for (; started < s->dp; started++) {   /* each replica its own KV pool and GPUs, the same settings */
        eo.replica = started;
        if (engine_init(&s->e[started], &s->m, &eo, err, errlen)) goto fail_engines;
        if (engine_start(&s->e[started])) {
            snprintf(err, errlen, "cannot start the engine thread");
            engine_free(&s->e[started]);
            goto fail_engines;
        }
    }
    fprintf(stderr, "hipath: scheduler: max_num_batched_tokens %d, max_num_seqs %d, chunked prefill %s, prefix caching %s, %s\n",
            eo.max_num_batched_tokens, eo.max_num_seqs, eo.no_chunked_prefill ? "off" : "on", eo.no_prefix_caching ? "off" : "on",
            eo.reserve_worst_case ? "worst case reserved (never preempts)" : "optimistic admission, preemption by recompute");
    if (s->dp > 1)
        fprintf(stderr, "hipath: data parallel: %d engine replicas, each its own %d GPU(s) and KV pool, requests balanced by %s\n",
                s->dp, d->gpus * d->stages, DP_LB_NAME[s->dp_lb]);
    return 0;

fail_engines:
    for (int r = 0; r < started; r++) { engine_stop(&s->e[r]); engine_free(&s->e[r]); }
fail_tok:
    free(s->forced);
    s->text.close(s->text.ctx);
fail_model:
    free(s->e);
    model_free(&s->m);
    return -1;
}

void served_stop(served *s) {
    for (int r = 0; r < s->dp; r++) engine_stop(&s->e[r]);
}

void served_close(served *s) {
    for (int r = 0; r < s->dp; r++) engine_free(&s->e[r]);
    free(s->e);
    s->text.close(s->text.ctx);
    model_free(&s->m);
    free(s->forced);
}

engine *served_engine(served *s) {
    if (s->dp_lb == DP_LB_ROUND_ROBIN) return &s->e[atomic_fetch_add(&s->next, 1) % s->dp];
    int best = 0, best_score = 0;
    for (int r = 0; r < s->dp; r++) {
        int running, waiting;
        uint64_t tokens;
        engine_load(&s->e[r], &running, &waiting, &tokens);
        int score = 4 * waiting + running;
        if (!r || score < best_score) best = r, best_score = score;
    }
    return &s->e[best];
}

/* The tokenizer's table (s->text) is the one server_opts.open_text
 * filled: layers/tokenizer/open.c. */
int served_prepare(const served *s, job *j, const server_admission *a, api_error *e) {
    int cap = a->max_tokens;
    api_request *q = &j->q;
    const char *param = q->chat ? "messages" : "prompt";
    char err[256] = "out of memory";
    int split = q->split_special_tokens >= 0 ? q->split_special_tokens : s->split_special_tokens, n = -1;
    if ((j->prompt = malloc(s->max_model_len * sizeof *j->prompt)))
        n = q->chat ? s->text.encode_chat(   /* layer 7, through its table (layers/tokenizer/open.c) */s->text.ctx, q->msgs, q->n_msgs, split, j->prompt, s->max_model_len, err, sizeof err, j->r.id)
                    : s->text.encode(s->text.ctx, q->prompt, split, j->prompt, s->max_model_len, err, sizeof err, j->r.id);
    if (n < 0) return api_fail(e, 400, "invalid_request_error", param, NULL, "%s", err);
    if (n > s->max_model_len)
        return api_fail(e, 400, "invalid_request_error", param, "context_length_exceeded",
                        "This model's maximum context length is %d tokens, but the prompt has %d tokens.", s->max_model_len, n);
    if (a->max_prompt_tokens > 0 && n > a->max_prompt_tokens)   /* one long prompt's prefill would hold every other request's step */
        return api_fail(e, 400, "invalid_request_error", param, "prompt_over_cap",
                        "the prompt has %d tokens (with the chat template); a request may have at most %d here", n, a->max_prompt_tokens);
    if (cap > 0 && q->max_tokens > cap)
        return api_fail(e, 400, "invalid_request_error", "max_tokens", "max_tokens_over_cap",
                        "max_tokens is %d; a request may ask for at most %d tokens here", q->max_tokens, cap);
    int max_tokens = q->max_tokens ? q->max_tokens : s->max_model_len - n;
    if (cap > 0 && max_tokens > cap) max_tokens = cap;
    if (max_tokens < 1 || n + max_tokens > s->max_model_len)
        return api_fail(e, 400, "invalid_request_error", q->max_tokens ? "max_tokens" : param, "context_length_exceeded",
                        "This model's maximum context length is %d tokens. However, you requested %d tokens "
                        "(%d in the prompt, %d for the completion).", s->max_model_len, n + max_tokens, n, max_tokens);
    memcpy(j->stop_ids, s->stop_ids, sizeof j->stop_ids);
    j->n_stop_ids = j->a.n_stop_ids = s->n_stop_ids;
    j->a.stop_ids = j->stop_ids;
    request *r = &j->r;
    r->prompt = j->prompt;
    r->n_prompt = n;
    r->max_tokens = max_tokens;
    r->samp = (sampler){ .temperature = q->temperature, .top_p = q->top_p };
    sampler_seed(&r->samp, q->has_seed ? q->seed : trace_now_ns() ^ (uint64_t)r->id);
    r->top_logprobs = q->logprobs ? q->top_logprobs : 0;
    r->stop_ids = j->stop_ids;
    r->n_stop = q->ignore_eos ? 0 : j->n_stop_ids;
    r->forced = s->forced;
    r->n_forced = s->n_forced;
    /* A workshop's student caches prompts apart from the others (vLLM's
     * cache_salt): a hit would tell them another sent the same words. */
    r->cache_salt = 0;
    for (const char *o = a->owner; *o; o++) r->cache_salt = (r->cache_salt ^ (unsigned char)*o) * 0x100000001b3ull;
    return 0;
}
