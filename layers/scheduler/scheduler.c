/*
 * scheduler.c -- layer 6: continuous batching.
 *
 * engine_submit() is the queue's door; engine_step() = compose_batch()
 * (the one place the batch is decided), one forward() over every sequence
 * in it, one sample per sequence, and retiring the requests that finished.
 * Every decision is a trace event.
 */
#include "layers/scheduler/scheduler.h"
#include "trace/trace.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double now_s(void) { return trace_now_ns() * 1e-9; }

static void kv_counter(engine *e) {
    trace_counter(trace_at(L_SCHEDULER, DIR_NONE, NO_REQ, NO_STEP), "kv_blocks_used", e->kv.n_blocks - e->kv.n_free, 0);
}

/* Grow r's block table to hold len tokens; a trace event when a block is taken. */
static int grow(engine *e, request *r, int len) {
    int had = r->kv.n_blocks;
    if (kv_reserve(&e->kv, &r->kv, len)) return -1;
    if (r->kv.n_blocks > had) {
        trace_instant(trace_at(L_SCHEDULER, DIR_DOWN, r->id, r->n_out), "kv_alloc",
                      TRACE_ARGS(TA_INT("new_blocks", r->kv.n_blocks - had), TA_INT("seq_blocks", r->kv.n_blocks),
                                 TA_INT("tokens", len), TA_INT("free_blocks", e->kv.n_free)));
        kv_counter(e);
    }
    return 0;
}

/* r leaves the engine (mu held): blocks back to the pool, onto the `gone`
 * list for on_done once the lock is dropped. */
static void retire(engine *e, request *r, const char *finish, request **gone) {
    if (r->kv.n_blocks) {
        trace_instant(trace_at(L_SCHEDULER, DIR_UP, r->id, r->n_out), "kv_free",
                      TRACE_ARGS(TA_INT("blocks", r->kv.n_blocks), TA_INT("free_blocks", e->kv.n_free + r->kv.n_blocks)));
        kv_release(&e->kv, &r->kv);
        kv_counter(e);
    }
    if (r->t_admit) e->promised -= r->worst_blocks;
    double t = now_s();
    if (r->n_out) r->decode_s = r->t_token - r->t_admit - r->prefill_s;
    r->finish = finish;
    e->met.finished[metrics_finish_index(finish)]++;
    trace_instant(trace_at(L_SCHEDULER, DIR_UP, r->id, r->n_out), "finish",
                  TRACE_ARGS(TA_STR("finish", finish), TA_INT("generated", r->n_out), TA_DBL("latency_s", t - r->t_arrive)));
    r->next = *gone;
    *gone = r;
}

/* Tell the submitters, outside the lock (on_done may free r: next is read first). */
static void hand_back(request *gone) {
    while (gone) {
        request *r = gone;
        gone = r->next;
        if (r->on_done) r->on_done(r, r->user);
    }
}

/* Whether r should leave before the step: cancelled, or its client gone
 * (a hang-up costs at most the step already running). */
static int unwanted(request *r) {
    return atomic_load(&r->cancel) || (r->client_gone && r->client_gone(r, r->user));
}

/* Drop finished requests from the running list, keeping the order. */
static void compact(engine *e) {
    int k = 0;
    for (int i = 0; i < e->n_running; i++)
        if (!e->running[i]->finish) e->running[k++] = e->running[i];
    e->n_running = k;
}

/*
 * THE scheduling decision, once per step (mu held):
 *  1. running requests whose client went away leave; their blocks return
 *     (so a hang-up costs at most the step that was running);
 *  2. every running request decodes one token; its block table takes a new
 *     block when that token starts one;
 *  3. waiting requests are admitted in arrival order while the batch has a
 *     seat, the step has room for the whole prompt, and the blocks the
 *     request may ever need fit beside those promised to running ones.
 *     The head waits otherwise (FIFO), so decode never runs out of blocks
 *     and nothing has to be preempted.
 * Returns the step's tokens; the batch is running[0..n_running).
 */
static int compose_batch(engine *e, request **gone) {
    for (int i = 0; i < e->n_running; i++)
        if (unwanted(e->running[i])) retire(e, e->running[i], "cancelled", gone);
    compact(e);
    for (int i = 0; i < e->n_running; i++) {
        request *r = e->running[i];
        if (grow(e, r, r->kv.len + 1)) retire(e, r, "error", gone);   /* cannot happen: blocks were promised */
    }
    compact(e);

    int tokens = e->n_running;
    while (e->wait_head && e->n_running < e->max_batch) {
        request *r = e->wait_head;
        int cancelled = unwanted(r);
        if (!cancelled && (tokens + r->n_prompt > e->max_step_tokens || e->promised + r->worst_blocks > e->kv.n_blocks))
            break;
        if (!(e->wait_head = r->next)) e->wait_tail = NULL;
        e->n_waiting--;
        if (cancelled) { retire(e, r, "cancelled", gone); continue; }
        trace_clock_receive(r->arrive);   /* a request is admitted no sooner than it arrived */
        r->t_admit = now_s();
        e->promised += r->worst_blocks;
        hist_observe(&e->met.queue, r->t_admit - r->t_arrive);
        trace_flow_in(trace_request_flow(r->id, HOP_TOKENIZED));
        trace_flow_out(trace_request_flow(r->id, HOP_ADMITTED));   /* -> the step that prefills it */
        trace_instant(trace_at(L_SCHEDULER, DIR_DOWN, r->id, 0), "admit",
                      TRACE_ARGS(TA_INT("prompt_tokens", r->n_prompt), TA_INT("promised_blocks", r->worst_blocks),
                                 TA_DBL("queued_s", r->t_admit - r->t_arrive), TA_INT("running", e->n_running + 1),
                                 TA_INT("waiting", e->n_waiting)));
        grow(e, r, r->n_prompt);   /* fits: promised above */
        e->running[e->n_running++] = r;
        tokens += r->n_prompt;
    }
    trace_where w = trace_at(L_SCHEDULER, DIR_NONE, NO_REQ, e->step);
    trace_counter(w, "running", e->n_running, 0);
    trace_counter(w, "waiting", e->n_waiting, 0);
    return tokens;
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
    r->last = s->id;
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

int engine_step(engine *e) {
    const model_config *c = &e->m->cfg;
    request *gone = NULL;
    pthread_mutex_lock(&e->mu);
    int tokens = compose_batch(e, &gone);
    int n = e->n_running;
    pthread_mutex_unlock(&e->mu);

    if (n) {
        request *batch[n];
        seq_step seqs[n];
        const char *fin[n];
        char ids[n * 21 + 3];   /* the batch's request ids, a JSON array */
        int n_prefill = 0, len = 1;
        ids[0] = '[';
        for (int i = 0; i < n; i++) {
            request *r = batch[i] = e->running[i];   /* only this thread changes running[] */
            int prefill = r->kv.len == 0;
            n_prefill += prefill;
            seqs[i] = (seq_step){ .tokens = prefill ? r->prompt : &r->last, .n = prefill ? r->n_prompt : 1,
                                  .kv = &r->kv, .logits = e->logits + (size_t)i * c->vocab_size,
                                  .req = r->id, .first = prefill };
            len += snprintf(ids + len, sizeof ids - len, "%s%lld", i ? "," : "", (long long)r->id);
        }
        snprintf(ids + len, sizeof ids - len, "]");
        trace_where w = trace_at(L_SCHEDULER, DIR_DOWN, NO_REQ, e->step);
        for (int i = 0; i < n; i++)   /* arrows from each new request's admission, and on to the model (layer 5) */
            if (batch[i]->kv.len == 0) trace_flow_in(trace_request_flow(batch[i]->id, HOP_ADMITTED));
        trace_begin_flowing(w, "step", TRACE_ARGS(TA_INT("n_prefill", n_prefill), TA_INT("n_decode", n - n_prefill),
                                                  TA_INT("tokens", tokens), TA_STR("requests", ids),
                                                  TA_INT("kv_blocks_used", e->kv.n_blocks - e->kv.n_free)));
        int failed = forward(e->m, &e->fs, &e->kv, seqs, n, e->step++);
        double t = now_s();
        for (int i = 0; i < n; i++) {
            sample_result s;
            fin[i] = "error";
            if (failed) continue;
            if (seqs[i].first) {   /* the first token's way up: its logits, copied back, are sampled */
                trace_flow_in(trace_request_flow(batch[i]->id, HOP_COPIED_BACK));
                trace_flow_out(trace_request_flow(batch[i]->id, HOP_SAMPLED));
            }
            sampler_pick(&batch[i]->samp, batch[i]->id, seqs[i].logits, c->vocab_size, batch[i]->top_logprobs, e->work, &s);
            if (batch[i]->n_forced) force(batch[i], &s);
            fin[i] = emit(e, batch[i], &s, t);
        }
        trace_end(w, NO_ARGS);

        pthread_mutex_lock(&e->mu);
        e->met.steps++;
        e->met.generation_tokens += failed ? 0 : n;
        hist_observe(&e->met.batch, n);
        for (int i = 0; i < n; i++) {
            if (!failed && batch[i]->n_out == 1) e->met.prompt_tokens += batch[i]->n_prompt;
            if (fin[i]) retire(e, batch[i], fin[i], &gone);
        }
        compact(e);
        pthread_mutex_unlock(&e->mu);
    }
    hand_back(gone);
    pthread_mutex_lock(&e->mu);
    int left = e->n_running + e->n_waiting;
    pthread_mutex_unlock(&e->mu);
    return left;
}

int engine_submit(engine *e, request *r, char *err, int errlen) {
    const model_config *c = &e->m->cfg;
    if (r->n_prompt < 1 || r->n_prompt > e->max_step_tokens) {
        snprintf(err, errlen, "prompt of %d tokens: need 1 to %d", r->n_prompt, e->max_step_tokens);
        return SUBMIT_INVALID;
    }
    if (r->max_tokens < 1 || r->n_prompt + r->max_tokens > c->max_seq_len) {
        snprintf(err, errlen, "prompt (%d) + max tokens (%d) exceeds the context length %d", r->n_prompt, r->max_tokens, c->max_seq_len);
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
    memset(&r->kv, 0, sizeof r->kv);
    r->n_out = 0;
    r->finish = NULL;
    r->next = NULL;
    r->arrive = trace_clock_stamp();
    if (!r->t_arrive) r->t_arrive = r->arrive.t * 1e-9;

    pthread_mutex_lock(&e->mu);
    if (e->quit) {
        pthread_mutex_unlock(&e->mu);
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

int scheduler_stop_ids(const model *m, const text_codec *text, int *ids, int cap) {
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
    for (int i = 0; i < e->n_running; i++) retire(e, e->running[i], "cancelled", &gone);
    e->n_running = 0;
    for (request *r = e->wait_head, *next; r; r = next) { next = r->next; retire(e, r, "cancelled", &gone); }
    e->wait_head = e->wait_tail = NULL;
    e->n_waiting = 0;
    pthread_mutex_unlock(&e->mu);
    hand_back(gone);
}
