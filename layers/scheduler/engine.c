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
            { L->bk, kv }, { L->bv, kv }, { L->q_norm, c->head_dim }, { L->k_norm, c->head_dim },
            { L->q_a_norm, (size_t)c->q_lora_rank }, { L->kv_a_norm, (size_t)c->kv_lora_rank }, { L->router_bias, c->n_experts } };
        for (size_t i = 0; i < sizeof vec / sizeof vec[0]; i++)
            if (vec[i].v) rc |= rt_map(vec[i].v, vec[i].n * f, RT_WEIGHTS, "norms and biases");
    }
    return rc | rt_map(m->w.final_norm, dim * f, RT_WEIGHTS, "final_norm");
}

/* The batch queue's slots, each with room for a whole step. */
static int batch_queue_init(engine *e) {
    int seqs = e->o.max_num_seqs;
    if (!(e->batch_queue = calloc(e->batch_queue_size, sizeof *e->batch_queue))) return -1;
    for (int i = 0; i < e->batch_queue_size; i++) {
        scheduler_output *o = &e->batch_queue[i];
        o->logits = e->logits + (size_t)i * seqs * e->m->cfg.vocab_size;
        if (!(o->batch = malloc(seqs * sizeof *o->batch)) || !(o->seqs = malloc(seqs * sizeof *o->seqs)) ||
            !(o->fin = malloc(seqs * sizeof *o->fin))) return -1;
    }
    return 0;
}

static void batch_queue_free(engine *e) {
    for (int i = 0; e->batch_queue && i < e->batch_queue_size; i++) {
        free(e->batch_queue[i].batch); free(e->batch_queue[i].seqs); free(e->batch_queue[i].fin);
    }
    free(e->batch_queue);
}

/* Replica r's names in the trace (trace.h keeps them by pointer); one
 * engine alone keeps the plain ones, and no thread name nor tokens counter. */
#define MAX_REPLICAS 64
static char REPLICA_NAME[MAX_REPLICAS][5][32];
static void name_replica(engine *e, int r) {
    static const char *const WHAT[5] = { NULL, "running", "waiting", "kv_blocks_used", "computed_tokens" };
    const char **name[5] = { &e->thread_name, &e->running_name, &e->waiting_name, &e->kv_name, &e->tokens_name };
    for (int i = 0; i < 5; i++) {
        if (rt_device_now()->replicas < 2 || r >= MAX_REPLICAS) { *name[i] = i < 4 ? WHAT[i] : NULL; continue; }
        snprintf(REPLICA_NAME[r][i], sizeof REPLICA_NAME[r][i], i ? "engine %d/%s" : "engine %d", r, WHAT[i]);
        *name[i] = REPLICA_NAME[r][i];
    }
}

static int init(engine *e, const model *m, const engine_opts *o, char *err, int errlen) {
    memset(e, 0, sizeof *e);
    e->m = m;
    e->o = *o;
    name_replica(e, o->replica);
    const model_config *c = &m->cfg;
    if (!e->o.max_model_len) e->o.max_model_len = c->max_seq_len;
    if (e->o.max_num_seqs < 1 || e->o.max_num_batched_tokens < e->o.max_num_seqs) {
        snprintf(err, errlen, "max_num_batched_tokens %d must hold a token of each of max_num_seqs %d requests",
                 e->o.max_num_batched_tokens, e->o.max_num_seqs);
        return -1;
    }
    int blocks = (o->kv_tokens + KV_BLOCK_SIZE - 1) / KV_BLOCK_SIZE, seqs = e->o.max_num_seqs;
    e->batch_queue_size = rt_device_now()->stages;   /* vLLM: the executor's max_concurrent_batches, the pipeline's stages */
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->wake, NULL);
    metrics_init(&e->met);
    if (map_weights(m)) {
        snprintf(err, errlen, "out of device memory for the weights (%.0f bytes on %s)", rt_allocated(RT_WEIGHTS), rt_device_now()->name);
        engine_free(e);
        return -1;
    }
    int planes, row = model_kv_row(c, &planes);
    if (kv_init(&e->kv, c->n_layers, row, planes, KV_BLOCK_SIZE, blocks, m->kv_bytes) ||
        blocks_init(&e->bm, blocks, KV_BLOCK_SIZE, !e->o.no_prefix_caching) ||
        !(e->hit = malloc((size_t)blocks * sizeof *e->hit)) ||
        forward_state_init(&e->fs, c, e->o.max_num_batched_tokens, seqs) ||
        !(e->logits = malloc((size_t)e->batch_queue_size * seqs * c->vocab_size * sizeof(float))) ||
        !(e->work = malloc(2 * (size_t)c->vocab_size * sizeof(float))) ||
        !(e->running = calloc(seqs, sizeof *e->running)) || batch_queue_init(e)) {
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
    rt_replica(o->replica);   /* its weights' upload on its own GPUs */
    int rc = init(e, m, o, err, errlen);
    rt_replica(0);
    trace_thread_name(NULL);
    return rc;
}

void engine_free(engine *e) {
    trace_thread_name("engine teardown");
    kv_free(&e->kv);
    blocks_free(&e->bm);
    forward_state_free(&e->fs);
    batch_queue_free(e);
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

/* The batch sched_compose chose, made into the step's sequences (mu
 * held): its requests marked in flight, their logits into o's rows. */
static int batch_up(engine *e, scheduler_output *o) {
    const model_config *c = &e->m->cfg;
    int n = 0;
    o->n_prefill = o->prefill_tokens = o->n_sampled = 0;
    for (int i = 0; i < e->n_running; i++) {   /* only this thread changes running[] */
        request *r = e->running[i];
        if (!r->chunk) continue;
        int decode = is_decoding(r), last = r->kv.len + r->chunk == r->n_ids;
        o->n_prefill += !decode;
        o->prefill_tokens += decode ? 0 : r->chunk;
        o->n_sampled += last;
        o->batch[n] = r;
        o->seqs[n] = (seq_step){ .tokens = r->ids + r->kv.len, .n = r->chunk, .kv = &r->kv,
                                 .logits = last ? o->logits + (size_t)n * c->vocab_size : NULL,
                                 .req = r->id, .first = last && r->n_out == 0 };
        r->in_flight++;
        n++;
    }
    return o->n = n;
}

/* The step's layer-6 slice, begun (closed by the caller), and its forward:
 * vLLM's execute_model. */
static void execute_model(engine *e, scheduler_output *o) {
    int n = o->n;
    request **batch = o->batch;
    size_t cap = (size_t)n * 80 + 8;   /* an entry: 5 numbers of 20 digits at most, 30 bytes of keys */
    char *ids = malloc(cap), *chunks = malloc(cap);
    if (ids && chunks) describe(ids, chunks, cap, batch, n);
    o->step = e->step;
    trace_where w = trace_at(L_SCHEDULER, DIR_DOWN, NO_REQ, e->step);
    for (int i = 0; i < n; i++)   /* arrows from each new request's admission, and on to the model (layer 5) */
        if (!batch[i]->n_preempted && batch[i]->kv.len == batch[i]->n_cached && batch[i]->n_out == 0)
            trace_flow_in(trace_request_flow(batch[i]->id, HOP_ADMITTED));
    trace_arg args[] = { TA_INT("n_prefill", o->n_prefill), TA_INT("n_decode", n - o->n_prefill),
                         TA_INT("prefill_tokens", o->prefill_tokens), TA_INT("decode_tokens", o->tokens - o->prefill_tokens),
                         TA_INT("tokens", o->tokens), TA_STR("requests", ids && chunks ? ids : "[]"),
                         TA_STR("chunks", ids && chunks ? chunks : "[]"), TA_INT("kv_blocks_used", e->kv.n_blocks - e->bm.n_free),
                         TA_INT("engine", e->o.replica) };   /* the last: which replica, past one (--dp) */
    trace_begin_flowing(w, "step", (int)(sizeof args / sizeof *args) - (e->thread_name == NULL), args);
    free(ids); free(chunks);
    uint64_t dev0 = rt_modeled_ns();
    o->failed = forward(e->m, &e->fs, &e->kv, o->seqs, n, e->step++);
    o->device_ns = rt_modeled_ns() - dev0;
}

/* Each sequence with logits samples its token and is told it (on_token). */
static void sample(engine *e, scheduler_output *o) {
    const model_config *c = &e->m->cfg;
    double t = now_s();
    for (int i = 0; i < o->n; i++) {
        request *r = o->batch[i];
        sample_result s;
        o->fin[i] = o->failed ? "error" : NULL;
        if (o->failed || !o->seqs[i].logits) continue;   /* a prompt's chunk before its last: nothing to sample */
        if (o->seqs[i].first) {   /* the first token's way up: its logits, copied back, are sampled */
            trace_flow_in(trace_request_flow(r->id, HOP_COPIED_BACK));
            trace_flow_out(trace_request_flow(r->id, HOP_SAMPLED));
        }
        /* unsampled: the logits' copy is modeled all the same; only the host's draw is skipped */
        if (r->unsampled) s = (sample_result){ .id = -1, .logprob = NAN };
        else sampler_pick(&r->samp, r->id, o->seqs[i].logits, c->vocab_size, r->top_logprobs, e->work, &s);
        if (r->n_forced) force(r, &s);
        o->fin[i] = emit(e, r, &s, t);
    }
}

/* After sampling (vLLM's update_from_output): the step counted, each
 * request's full blocks into the prefix cache, the finished retired. */
static void update_from_output(engine *e, scheduler_output *o, request **gone) {
    pthread_mutex_lock(&e->mu);
    e->met.steps++;
    e->met.generation_tokens += o->failed ? 0 : o->n_sampled;
    e->met.computed_tokens += o->failed ? 0 : o->tokens;
    hist_observe(&e->met.batch, o->n);
    if (e->tokens_name)   /* a replica's load, beside the others' (--dp) */
        trace_counter(trace_at(L_SCHEDULER, DIR_NONE, NO_REQ, o->step), e->tokens_name, (double)e->met.computed_tokens, 0);
    for (int i = 0; i < o->n; i++) {
        request *r = o->batch[i];
        r->in_flight--;
        if (!o->failed) blocks_commit(&e->bm, &r->kv, r->cache_salt, r->ids, r->kv.len);   /* its full blocks, K and V stored, into the prefix cache */
        if (!o->failed && o->seqs[i].first) e->met.prompt_tokens += r->n_prompt;
        if (o->fin[i]) sched_retire(e, r, o->fin[i], gone);
    }
    sched_compact(e);
    pthread_mutex_unlock(&e->mu);
}

/* The next batch into the batch queue's free slot, if there is one to
 * compute: 1 if one was scheduled. */
static int schedule(engine *e, scheduler_output *o, request **gone) {
    pthread_mutex_lock(&e->mu);
    o->tokens = sched_compose(e, gone);
    int n = batch_up(e, o);
    pthread_mutex_unlock(&e->mu);
    return n > 0;
}

/* vLLM's step_with_batch_queue, for pipeline parallelism: fill the batch
 * queue first (a batch scheduled goes into the pipeline and the host goes
 * on, for the next); when it is full, or nothing else can be scheduled
 * (every request is in a batch in flight, or waits), wait for the oldest
 * batch's logits (its event) and take its tokens. A request is in one
 * batch at a time but for a prompt's chunks, whose next chunk may follow
 * its last into the pipeline. */
static void step_with_batch_queue(engine *e, request **gone) {
    int size = e->batch_queue_size;
    if (e->n_queued < size) {
        scheduler_output *o = &e->batch_queue[(e->queue_head + e->n_queued) % size];
        if (schedule(e, o, gone)) {
            execute_model(e, o);
            o->done = rt_event_record();   /* the last stage's logits copied back */
            trace_end(trace_at(L_SCHEDULER, DIR_DOWN, NO_REQ, o->step),
                      TRACE_ARGS(TA_INT("batch_queue", ++e->n_queued), TA_INT("device_ns", (int64_t)o->device_ns)));
            return;
        }
    }
    if (!e->n_queued) return;
    scheduler_output *o = &e->batch_queue[e->queue_head];
    e->queue_head = (e->queue_head + 1) % size;
    e->n_queued--;
    trace_where w = trace_at(L_SCHEDULER, DIR_UP, NO_REQ, o->step);
    trace_begin(w, "update_from_output", TRACE_ARGS(TA_INT("batch_queue", e->n_queued + 1), TA_INT("requests", o->n)));
    rt_event_synchronize(o->done, o->step);
    sample(e, o);
    trace_end(w, NO_ARGS);
    update_from_output(e, o, gone);
}

/* One batch at a time: schedule, execute, sample, update (vLLM's step). */
static void step(engine *e, request **gone) {
    scheduler_output *o = &e->batch_queue[0];
    if (!schedule(e, o, gone)) return;
    execute_model(e, o);
    sample(e, o);
    trace_end(trace_at(L_SCHEDULER, DIR_DOWN, NO_REQ, o->step), TRACE_ARGS(TA_INT("device_ns", (int64_t)o->device_ns)));   /* modeled */
    update_from_output(e, o, gone);
}

int engine_step(engine *e) {
    request *gone = NULL;
    if (e->batch_queue_size > 1) step_with_batch_queue(e, &gone);
    else step(e, &gone);
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
    r->n_out = r->n_cached = r->n_preempted = r->chunk = r->seated = r->in_flight = 0;
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
    rt_replica(e->o.replica);   /* its steps on its own GPUs */
    trace_thread_name(e->thread_name);   /* replicas' steps side by side, each on its own track */
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

void engine_load(engine *e, int *running, int *waiting, uint64_t *tokens) {
    pthread_mutex_lock(&e->mu);
    *running = e->n_running;
    *waiting = e->n_waiting;
    *tokens = e->met.computed_tokens;
    pthread_mutex_unlock(&e->mu);
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
    e->n_running = e->n_queued = 0;   /* the batches in flight are dropped with their requests */
    for (request *r = e->wait_head, *next; r; r = next) { next = r->next; sched_retire(e, r, "cancelled", &gone); }
    e->wait_head = e->wait_tail = NULL;
    e->n_waiting = 0;
    pthread_mutex_unlock(&e->mu);
    sched_hand_back(gone);
}
