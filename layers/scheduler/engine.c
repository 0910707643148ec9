/*
 * engine.c -- layer 6: the engine. Its buffers (the weights made resident,
 * the KV-cache pool, the step's activations and logits), the queue's door
 * (engine_submit), and the step: the batch the scheduler composes
 * (scheduler.c), one forward() over every sequence in it, one sample per
 * sequence, and the requests that finished handed back.
 */
#include "layers/scheduler/scheduler.h"
#include "layers/runtime/runtime.h"
#include "trace/trace.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double now_s(void) { return trace_now_ns() * 1e-9; }

/* Make the weights resident on the device: the mapped files, and the f32
 * vectors made at load. */
static int map_weights(const model *m) {
    const model_config *c = &m->cfg;
    size_t f = sizeof(float), dim = c->dim, q = (size_t)c->n_heads * c->head_dim, kv = (size_t)c->n_kv_heads * c->head_dim;
    int rc = 0;
    for (int i = 0; i < m->files.nfiles; i++) rc |= rt_map(m->files.file[i].map, m->files.file[i].size, RT_WEIGHTS, m->files.file[i].path);
    for (int l = 0; l < c->n_layers; l++) {
        const layer_weights *L = &m->w.layer[l];
        const struct { const float *v; size_t n; } vec[] = { { L->attn_norm, dim }, { L->ffn_norm, dim }, { L->bq, q },
            { L->bk, kv }, { L->bv, kv }, { L->q_norm, c->head_dim }, { L->k_norm, c->head_dim } };
        for (size_t i = 0; i < sizeof vec / sizeof vec[0]; i++)
            if (vec[i].v) rc |= rt_map(vec[i].v, vec[i].n * f, RT_WEIGHTS, "norms and biases");
    }
    return rc | rt_map(m->w.final_norm, dim * f, RT_WEIGHTS, "final_norm");
}

static int init(engine *e, const model *m, const engine_opts *o, char *err, int errlen) {
    memset(e, 0, sizeof *e);
    e->m = m;
    e->o = *o;
    const model_config *c = &m->cfg;
    if (!e->o.max_model_len) e->o.max_model_len = c->max_seq_len;
    if (e->o.max_num_seqs < 1 || e->o.max_num_batched_tokens < e->o.max_num_seqs) {
        snprintf(err, errlen, "max_num_batched_tokens %d must hold a token of each of max_num_seqs %d requests",
                 e->o.max_num_batched_tokens, e->o.max_num_seqs);
        return -1;
    }
    int blocks = (o->kv_tokens + KV_BLOCK_SIZE - 1) / KV_BLOCK_SIZE, seqs = e->o.max_num_seqs;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->wake, NULL);
    metrics_init(&e->met);
    if (map_weights(m)) {
        snprintf(err, errlen, "out of device memory for the weights (%.0f bytes on %s)", rt_allocated(RT_WEIGHTS), rt_device_now()->name);
        engine_free(e);
        return -1;
    }
    if (kv_init(&e->kv, c->n_layers, c->n_kv_heads * c->head_dim, KV_BLOCK_SIZE, blocks, m->kv_bytes) ||
        blocks_init(&e->bm, blocks, KV_BLOCK_SIZE, !e->o.no_prefix_caching) ||
        !(e->hit = malloc((size_t)blocks * sizeof *e->hit)) ||
        forward_state_init(&e->fs, c, e->o.max_num_batched_tokens, seqs) ||
        !(e->logits = malloc((size_t)seqs * c->vocab_size * sizeof(float))) ||
        !(e->work = malloc(2 * (size_t)c->vocab_size * sizeof(float))) ||
        !(e->running = calloc(seqs, sizeof *e->running))) {
        snprintf(err, errlen, "out of memory for the KV cache (%d tokens) and step buffers", o->kv_tokens);
        engine_free(e);
        return -1;
    }
    return 0;
}

/* Setting up and tearing down are the calling thread's, on tracks of their
 * own in the trace: the layers' own tracks are the steps'. */
int engine_init(engine *e, const model *m, const engine_opts *o, char *err, int errlen) {
    trace_thread_name("engine setup");
    int rc = init(e, m, o, err, errlen);
    trace_thread_name(NULL);
    return rc;
}

void engine_free(engine *e) {
    trace_thread_name("engine teardown");
    kv_free(&e->kv);
    blocks_free(&e->bm);
    forward_state_free(&e->fs);
    free(e->hit); free(e->logits); free(e->work); free(e->running);
    rt_unmap_all();
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->wake);
    memset(e, 0, sizeof *e);
    trace_thread_name(NULL);
}

/* Teacher forcing: the next id of the reply it was given replaces the
 * sampled one, said so in the trace (logprobs stay the sampled id's);
 * past the reply's end, its last id (the end of the turn). */
static void force(request *r, sample_result *s) {
    int id = r->forced[r->n_out < r->n_forced ? r->n_out : r->n_forced - 1];
    trace_instant(trace_at(L_SCHEDULER, DIR_UP, r->id, r->n_out), "teacher_forced",
                  TRACE_ARGS(TA_INT("sampled", s->id), TA_INT("id", id)));
    s->id = id;
}

/* One token for r: count it, time it, decide whether r is done. */
static const char *emit(engine *e, request *r, const sample_result *s, double t) {
    r->ids[r->n_ids++] = s->id;
    r->n_out++;
    if (r->n_out == 1) {
        r->prefill_s = t - r->t_admit;
        hist_observe(&e->met.ttft, t - r->t_arrive);
        trace_instant(trace_at(L_SCHEDULER, DIR_UP, r->id, 0), "first_token",
                      TRACE_ARGS(TA_DBL("ttft_s", t - r->t_arrive), TA_INT("id", s->id)));
    } else {
        hist_observe(&e->met.itl, t - r->t_token);
    }
    r->t_token = t;
    int stop = is_stop_id(r->stop_ids, r->n_stop, s->id);
    if (r->on_token && r->on_token(r, s, r->user)) return "stop";
    if (stop) return "stop";
    if (r->n_out >= r->max_tokens) return "length";
    return NULL;
}

/* The step's layer-6 slice says what it computes: its requests' ids (a
 * JSON array), and for each one prefilling which chunk of how many ids
 * (another: [{"req":7,"from":0,"to":512,"of":2000}]). */
static void describe(char *ids, char *chunks, size_t cap, request *const *batch, int n) {
    size_t a = snprintf(ids, cap, "["), b = snprintf(chunks, cap, "[");
    for (int i = 0, k = 0; i < n; i++) {
        const request *r = batch[i];
        a += snprintf(ids + a, cap - a, "%s%lld", i ? "," : "", (long long)r->id);
        if (!is_decoding(r))
            b += snprintf(chunks + b, cap - b, "%s{\"req\":%lld,\"from\":%d,\"to\":%d,\"of\":%d}", k++ ? "," : "",
                          (long long)r->id, r->kv.len, r->kv.len + r->chunk, r->n_ids);
    }
    snprintf(ids + a, cap - a, "]");
    snprintf(chunks + b, cap - b, "]");
}

int engine_step(engine *e) {
    const model_config *c = &e->m->cfg;
    request *gone = NULL;
    pthread_mutex_lock(&e->mu);
    int tokens = sched_compose(e, &gone), n = 0;
    for (int i = 0; i < e->n_running; i++) n += e->running[i]->chunk > 0;
    pthread_mutex_unlock(&e->mu);

    if (n) {
        request *batch[n];
        seq_step seqs[n];
        const char *fin[n];
        size_t cap = (size_t)n * 80 + 8;   /* an entry: 5 numbers of 20 digits at most, 30 bytes of keys */
        char *ids = malloc(cap), *chunks = malloc(cap);
        int n_prefill = 0, prefill_tokens = 0, n_sampled = 0;
        for (int i = 0, k = 0; i < e->n_running; i++) {   /* only this thread changes running[] */
            request *r = e->running[i];
            if (!r->chunk) continue;
            int decode = is_decoding(r), last = r->kv.len + r->chunk == r->n_ids;
            n_prefill += !decode;
            prefill_tokens += decode ? 0 : r->chunk;
            n_sampled += last;
            batch[k] = r;
            seqs[k] = (seq_step){ .tokens = r->ids + r->kv.len, .n = r->chunk, .kv = &r->kv,
                                  .logits = last ? e->logits + (size_t)k * c->vocab_size : NULL,
                                  .req = r->id, .first = last && r->n_out == 0 };
            k++;
        }
        if (ids && chunks) describe(ids, chunks, cap, batch, n);
        trace_where w = trace_at(L_SCHEDULER, DIR_DOWN, NO_REQ, e->step);
        for (int i = 0; i < n; i++)   /* arrows from each new request's admission, and on to the model (layer 5) */
            if (!batch[i]->n_preempted && batch[i]->kv.len == batch[i]->n_cached && batch[i]->n_out == 0)
                trace_flow_in(trace_request_flow(batch[i]->id, HOP_ADMITTED));
        trace_begin_flowing(w, "step", TRACE_ARGS(TA_INT("n_prefill", n_prefill), TA_INT("n_decode", n - n_prefill),
                                                  TA_INT("prefill_tokens", prefill_tokens), TA_INT("decode_tokens", tokens - prefill_tokens),
                                                  TA_INT("tokens", tokens), TA_STR("requests", ids && chunks ? ids : "[]"),
                                                  TA_STR("chunks", ids && chunks ? chunks : "[]"),
                                                  TA_INT("kv_blocks_used", e->kv.n_blocks - e->bm.n_free)));
        free(ids); free(chunks);
        uint64_t dev0 = rt_modeled_ns();
        int failed = forward(e->m, &e->fs, &e->kv, seqs, n, e->step++);
        double t = now_s();
        for (int i = 0; i < n; i++) {
            sample_result s;
            fin[i] = failed ? "error" : NULL;
            if (failed || !seqs[i].logits) continue;   /* a prompt's chunk before its last: nothing to sample */
            if (seqs[i].first) {   /* the first token's way up: its logits, copied back, are sampled */
                trace_flow_in(trace_request_flow(batch[i]->id, HOP_COPIED_BACK));
                trace_flow_out(trace_request_flow(batch[i]->id, HOP_SAMPLED));
            }
            /* unsampled: the logits' copy is modeled all the same; only the host's draw is skipped */
            if (batch[i]->unsampled) s = (sample_result){ .id = -1, .logprob = NAN };
            else sampler_pick(&batch[i]->samp, batch[i]->id, seqs[i].logits, c->vocab_size, batch[i]->top_logprobs, e->work, &s);
            if (batch[i]->n_forced) force(batch[i], &s);
            fin[i] = emit(e, batch[i], &s, t);
        }
        trace_end(w, TRACE_ARGS(TA_INT("device_ns", (int64_t)(rt_modeled_ns() - dev0))));   /* modeled (0 on a measured device) */

        pthread_mutex_lock(&e->mu);
        e->met.steps++;
        e->met.generation_tokens += failed ? 0 : n_sampled;
        e->met.computed_tokens += failed ? 0 : tokens;
        hist_observe(&e->met.batch, n);
        for (int i = 0; i < n; i++) {
            request *r = batch[i];
            if (!failed) blocks_commit(&e->bm, &r->kv, r->cache_salt, r->ids, r->kv.len);   /* its full blocks, K and V stored, into the prefix cache */
            if (!failed && seqs[i].first) e->met.prompt_tokens += r->n_prompt;
            if (fin[i]) sched_retire(e, r, fin[i], &gone);
        }
        sched_compact(e);
        pthread_mutex_unlock(&e->mu);
    }
    sched_hand_back(gone);
    pthread_mutex_lock(&e->mu);
    int left = e->n_running + e->n_waiting;
    pthread_mutex_unlock(&e->mu);
    return left;
}

int engine_submit(engine *e, request *r, char *err, int errlen) {
    const model_config *c = &e->m->cfg;
    if (r->n_prompt < 1 || r->max_tokens < 1 || r->n_prompt + r->max_tokens > e->o.max_model_len) {
        snprintf(err, errlen, "prompt (%d) + max tokens (%d): need 1 or more of each, %d in all at most (the context length)",
                 r->n_prompt, r->max_tokens, e->o.max_model_len);
        return SUBMIT_INVALID;
    }
    if (r->unsampled && (!r->n_forced || r->top_logprobs)) {
        snprintf(err, errlen, "an unsampled request needs a forced reply and no logprobs");
        return SUBMIT_INVALID;
    }
    /* Without chunked prefill a prompt is computed in one step; so is a
     * preempted request's whole sequence, when it is admitted again. */
    int whole = e->o.reserve_worst_case ? r->n_prompt : r->n_prompt + r->max_tokens;
    if (e->o.no_chunked_prefill && whole > e->o.max_num_batched_tokens) {
        snprintf(err, errlen, "%d tokens to compute in one step, but a step holds %d (max_num_batched_tokens; chunked prefill is off)",
                 whole, e->o.max_num_batched_tokens);
        return SUBMIT_INVALID;
    }
    for (int i = 0; i < r->n_prompt; i++)
        if (r->prompt[i] < 0 || r->prompt[i] >= c->vocab_size) {
            snprintf(err, errlen, "token id %d is outside the vocabulary (0..%d)", r->prompt[i], c->vocab_size - 1);
            return SUBMIT_INVALID;
        }
    r->worst_blocks = kv_blocks_for(&e->kv, r->n_prompt + r->max_tokens);
    if (r->worst_blocks > e->kv.n_blocks) {
        snprintf(err, errlen, "the request needs up to %d KV-cache tokens (%d blocks) but the whole cache holds %d (%d blocks)",
                 r->n_prompt + r->max_tokens, r->worst_blocks, e->kv.n_blocks * e->kv.block_size, e->kv.n_blocks);
        return SUBMIT_NO_ROOM;
    }
    if (!(r->ids = malloc((size_t)(r->n_prompt + r->max_tokens) * sizeof *r->ids))) {
        snprintf(err, errlen, "out of memory for a request's %d ids", r->n_prompt + r->max_tokens);
        return SUBMIT_NO_ROOM;
    }
    memcpy(r->ids, r->prompt, (size_t)r->n_prompt * sizeof *r->ids);
    r->n_ids = r->n_prompt;
    memset(&r->kv, 0, sizeof r->kv);
    r->n_out = r->n_cached = r->n_preempted = r->chunk = r->seated = 0;
    r->t_admit = 0;
    r->finish = NULL;
    r->next = NULL;
    r->arrive = trace_clock_stamp();
    if (!r->t_arrive) r->t_arrive = r->arrive.t * 1e-9;

    pthread_mutex_lock(&e->mu);
    if (e->quit) {
        pthread_mutex_unlock(&e->mu);
        free(r->ids);
        r->ids = NULL;
        snprintf(err, errlen, "the server is shutting down");
        return SUBMIT_CLOSED;
    }
    if (e->wait_tail) e->wait_tail->next = r; else e->wait_head = r;
    e->wait_tail = r;
    e->n_waiting++;
    trace_instant(trace_at(L_SCHEDULER, DIR_DOWN, r->id, NO_STEP), "enqueue",
                  TRACE_ARGS(TA_INT("prompt_tokens", r->n_prompt), TA_INT("max_tokens", r->max_tokens),
                             TA_INT("waiting", e->n_waiting), TA_INT("running", e->n_running)));
    pthread_cond_signal(&e->wake);
    pthread_mutex_unlock(&e->mu);
    return SUBMIT_OK;
}

int engine_generate(engine *e, request *r, char *err, int errlen) {
    if (engine_submit(e, r, err, errlen)) return -1;
    while (!r->finish) engine_step(e);
    if (!strcmp(r->finish, "error")) { snprintf(err, errlen, "engine step failed"); return -1; }
    return 0;
}

int engine_stop_ids(const model *m, const text_codec *text, int *ids, int cap) {
    int n = 0;
    for (int i = 0; i < m->cfg.n_stop && n < cap; i++) ids[n++] = m->cfg.stop_ids[i];
    return text ? n + text->stop_ids(text->ctx, ids + n, cap - n) : n;
}

static void *engine_main(void *arg) {
    engine *e = arg;
    pthread_mutex_lock(&e->mu);
    while (!e->quit) {
        if (!e->n_running && !e->wait_head) { pthread_cond_wait(&e->wake, &e->mu); continue; }
        pthread_mutex_unlock(&e->mu);
        engine_step(e);
        pthread_mutex_lock(&e->mu);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

int engine_start(engine *e) {
    if (pthread_create(&e->thread, NULL, engine_main, e)) return -1;
    e->started = 1;
    return 0;
}

void engine_stop(engine *e) {
    pthread_mutex_lock(&e->mu);
    e->quit = 1;
    pthread_cond_signal(&e->wake);
    pthread_mutex_unlock(&e->mu);
    if (e->started) pthread_join(e->thread, NULL);
    e->started = 0;
    request *gone = NULL;
    pthread_mutex_lock(&e->mu);
    for (int i = 0; i < e->n_running; i++) sched_retire(e, e->running[i], "cancelled", &gone);
    e->n_running = 0;
    for (request *r = e->wait_head, *next; r; r = next) { next = r->next; sched_retire(e, r, "cancelled", &gone); }
    e->wait_head = e->wait_tail = NULL;
    e->n_waiting = 0;
    pthread_mutex_unlock(&e->mu);
    sched_hand_back(gone);
}
