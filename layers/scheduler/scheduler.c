/*
 * scheduler.c -- layer 6: the batch policy, continuous batching as vLLM V1
 * schedules (its v1/core/sched/scheduler.py). Which requests compute how
 * many ids in the next step (sched_compose: the one place the batch is
 * decided), their KV blocks as they grow, their preemption, and their
 * leaving. The engine (engine.c) runs the step it composes. Every
 * decision is a trace event.
 */
#include "layers/scheduler/scheduler.h"
#include "trace/trace.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double now_s(void) { return trace_now_ns() * 1e-9; }

static void kv_counter(engine *e) {
    trace_counter(trace_at(L_SCHEDULER, DIR_NONE, NO_REQ, NO_STEP), e->kv_name, e->kv.n_blocks - e->bm.n_free, 0);
}

/* Grow r's block table to hold len ids (after taking n_hit cached blocks);
 * a trace event when a block is taken. 0, or -1 if the pool is short. */
static int grow(engine *e, request *r, const int *hit, int n_hit, int len) {
    int had = r->kv.n_blocks;
    if (blocks_allocate(&e->bm, &r->kv, hit, n_hit, len)) return -1;
    if (r->kv.n_blocks > had) {
        trace_instant(trace_at(L_SCHEDULER, DIR_DOWN, r->id, r->n_out), "kv_alloc",
                      TRACE_ARGS(TA_INT("new_blocks", r->kv.n_blocks - had - n_hit), TA_INT("cached_blocks", n_hit),
                                 TA_INT("seq_blocks", r->kv.n_blocks), TA_INT("tokens", len), TA_INT("free_blocks", e->bm.n_free)));
        kv_counter(e);
    }
    return 0;
}

/* r's blocks back to the pool (the cached ones stay findable until reused). */
static void let_go(engine *e, request *r) {
    int blocks = r->kv.n_blocks;
    if (!blocks) return;
    blocks_release(&e->bm, &r->kv);
    trace_instant(trace_at(L_SCHEDULER, DIR_UP, r->id, r->n_out), "kv_free",
                  TRACE_ARGS(TA_INT("blocks", blocks), TA_INT("free_blocks", e->bm.n_free)));
    kv_counter(e);
}

/* r leaves running[] (mu held), keeping the others' order. */
static void unseat(engine *e, request *r) {
    int k = 0;
    for (int i = 0; i < e->n_running; i++)
        if (e->running[i] != r) e->running[k++] = e->running[i];
    e->n_running = k;
    e->promised -= r->worst_blocks;
    r->seated = 0;
}

/* r leaves the engine (mu held): blocks back to the pool, onto the `gone`
 * list for on_done once the lock is dropped. A running r stays in
 * running[] until sched_compact. */
void sched_retire(engine *e, request *r, const char *finish, request **gone) {
    let_go(e, r);
    if (r->seated) e->promised -= r->worst_blocks, r->seated = 0;
    double t = now_s();
    if (r->n_out) r->decode_s = r->t_token - r->t_admit - r->prefill_s;
    r->finish = finish;
    free(r->ids);
    r->ids = NULL;
    e->met.finished[metrics_finish_index(finish)]++;
    trace_instant(trace_at(L_SCHEDULER, DIR_UP, r->id, r->n_out), "finish",
                  TRACE_ARGS(TA_STR("finish", finish), TA_INT("generated", r->n_out), TA_INT("preempted", r->n_preempted),
                             TA_DBL("latency_s", t - r->t_arrive)));
    r->next = *gone;
    *gone = r;
}

/* Tell the submitters, outside the lock (on_done may free r: next is read first). */
void sched_hand_back(request *gone) {
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
void sched_compact(engine *e) {
    int k = 0;
    for (int i = 0; i < e->n_running; i++)
        if (!e->running[i]->finish) e->running[k++] = e->running[i];
    e->n_running = k;
}

/* The arrow from r's k-th preemption (from 0) to the admission that
 * resumes it: a hop of its own each, so the first MAX_RESUME_FLOWS only
 * (a flow id holds 8 bits of hop). */
#define MAX_RESUME_FLOWS 200
static void resume_flow(const request *r, int k, int out) {
    if (k >= MAX_RESUME_FLOWS) return;
    uint64_t f = trace_request_flow(r->id, HOP_PREEMPTED + k);
    if (out) trace_flow_out(f); else trace_flow_in(f);
}

/* Preemption by recompute, vLLM's default: r's blocks are freed, its ids
 * so far kept, and it goes back to the head of the queue; when it is
 * admitted again it computes them again (what the prefix cache still
 * holds of them excepted). */
static void preempt(engine *e, request *r) {
    resume_flow(r, r->n_preempted, 1);
    trace_instant(trace_at(L_SCHEDULER, DIR_UP, r->id, r->n_out), "preempt",
                  TRACE_ARGS(TA_INT("computed_tokens", r->kv.len), TA_INT("blocks", r->kv.n_blocks),
                             TA_INT("generated", r->n_out), TA_INT("running", e->n_running - 1), TA_INT("waiting", e->n_waiting + 1)));
    let_go(e, r);
    unseat(e, r);
    r->chunk = 0;
    r->n_preempted++;
    e->met.preemptions++;
    r->next = e->wait_head;
    e->wait_head = r;
    if (!e->wait_tail) e->wait_tail = r;
    e->n_waiting++;
}

/* The request to preempt: the most recently admitted that is not already
 * in this step (it may be the one that needs the block), nor in a batch
 * still in the pipeline. */
static request *victim(engine *e) {
    for (int i = e->n_running - 1; i >= 0; i--)
        if (!e->running[i]->chunk && !e->running[i]->in_flight) return e->running[i];
    return NULL;
}

/* Schedule the running requests of one kind (decoding, or prefilling a
 * prompt's next chunk: is_decoding), in admission order,
 * within the budget, preempting for blocks. Returns the budget left. */
static int schedule_running(engine *e, int decoding, int budget) {
    for (int i = 0; i < e->n_running && budget > 0;) {
        request *r = e->running[i];
        int left = r->n_ids - r->kv.len, n = left < budget ? left : budget;
        if (r->chunk || is_decoding(r) != decoding || (e->o.no_chunked_prefill && n < left)) { i++; continue; }
        request *v = NULL;
        int short_of_blocks;
        while ((short_of_blocks = grow(e, r, NULL, 0, r->kv.len + n)) && (v = victim(e)) && v != r) preempt(e, v);
        if (short_of_blocks && v == r) { preempt(e, r); continue; }   /* none left to take from: it waits for blocks at the queue's head */
        if (short_of_blocks) { i++; continue; }   /* those holding them are in flight: it waits for their tokens */
        r->chunk = n;
        budget -= n;
        i++;
    }
    return budget;
}

/* Admit the request at the queue's head if what it computes now fits:
 * the prefix cache's blocks, then the chunk's. 0 if it does not (it keeps
 * its place); else the ids it computes in this step. */
static int admit(engine *e, request *r, int budget) {
    int bs = e->kv.block_size;
    int n_hit = blocks_lookup(&e->bm, r->cache_salt, r->ids, r->n_ids - 1, e->hit, e->kv.n_blocks);   /* the last id gives the logits */
    int cached = n_hit * bs, left = r->n_ids - cached, n = left < budget ? left : budget;
    if ((e->o.no_chunked_prefill && n < left) ||
        (e->o.reserve_worst_case && e->promised + r->worst_blocks > e->kv.n_blocks) ||
        grow(e, r, e->hit, n_hit, cached + n)) return 0;
    if (!(e->wait_head = r->next)) e->wait_tail = NULL;
    e->n_waiting--;
    int resumed = r->n_preempted > 0;
    if (resumed) {
        resume_flow(r, r->n_preempted - 1, 0);
    } else {
        trace_clock_receive(r->arrive);   /* a request is admitted no sooner than it arrived */
        r->t_admit = now_s();
        r->n_cached = cached;
        e->met.prefix_queries += e->o.no_prefix_caching ? 0 : r->n_prompt;
        e->met.prefix_hits += cached;
        hist_observe(&e->met.queue, r->t_admit - r->t_arrive);
        trace_flow_in(trace_request_flow(r->id, HOP_TOKENIZED));
        trace_flow_out(trace_request_flow(r->id, HOP_ADMITTED));   /* -> the step that computes its first chunk */
    }
    trace_instant(trace_at(L_SCHEDULER, DIR_DOWN, r->id, r->n_out), resumed ? "resume" : "admit",
                  TRACE_ARGS(TA_INT("prompt_tokens", r->n_prompt), TA_INT("tokens", r->n_ids), TA_INT("cached_tokens", cached),
                             TA_INT("chunk", n), TA_DBL("queued_s", now_s() - r->t_arrive), TA_INT("running", e->n_running + 1),
                             TA_INT("waiting", e->n_waiting)));
    if (cached)   /* the prefill it skips: its cached blocks' ids are not computed */
        trace_instant(trace_at(L_SCHEDULER, DIR_DOWN, r->id, r->n_out), "prefix_cache_hit",
                      TRACE_ARGS(TA_INT("cached_tokens", cached), TA_INT("cached_blocks", n_hit), TA_INT("computed_tokens", left)));
    e->running[e->n_running++] = r;
    e->promised += r->worst_blocks;
    r->seated = 1;
    return r->chunk = n;
}

/* Waiting requests whose connection let them go (cancel) leave the queue
 * wherever they are in it, as vLLM aborts a waiting request at once; a
 * suspended client's hang-up, which costs a look at its socket, is seen at
 * the queue's head (unwanted, below). */
static void drop_cancelled(engine *e, request **gone) {
    request **p = &e->wait_head, *last = NULL;
    while (*p) {
        request *r = *p;
        if (!atomic_load(&r->cancel)) { last = r; p = &r->next; continue; }
        *p = r->next;
        e->n_waiting--;
        sched_retire(e, r, "cancelled", gone);   /* r->next is the gone list's now */
    }
    e->wait_tail = last;
}

/*
 * THE scheduling decision, once per step (mu held), within a budget of
 * max_num_batched_tokens ids:
 *  1. running requests whose client went away leave; their blocks return
 *     (so a hang-up costs at most the step that was running); so do
 *     cancelled waiting ones, wherever they wait;
 *  2. every running request that decodes computes one id, in admission
 *     order; then the running prefills compute their prompts' next chunks
 *     (as much as the budget leaves). One that needs a block when none is
 *     free preempts the most recently admitted not yet in the step, or
 *     itself if none is left;
 *  3. unless one was preempted, waiting requests are admitted in queue
 *     order while the step has a seat (max_num_seqs), budget, and blocks
 *     for what each computes now: the prefix cache's hit, then the rest
 *     of its prompt, or as much of it as the budget leaves (a chunk).
 *     The head waits otherwise (FIFO).
 * Without chunked prefill a prompt is computed whole or waits; with
 * reserve_worst_case a request is admitted only when its prompt +
 * max_tokens fit beside the running ones', and nothing is preempted.
 * Returns the step's ids; those in it have r->chunk > 0.
 */
int sched_compose(engine *e, request **gone) {
    for (int i = 0; i < e->n_running; i++)   /* one in flight leaves once its tokens are back */
        if (!e->running[i]->in_flight && unwanted(e->running[i])) sched_retire(e, e->running[i], "cancelled", gone);
    sched_compact(e);
    drop_cancelled(e, gone);
    for (int i = 0; i < e->n_running; i++) e->running[i]->chunk = 0;

    uint64_t preempted = e->met.preemptions;
    int budget = e->o.max_num_batched_tokens;
    budget = schedule_running(e, 1, budget);
    budget = schedule_running(e, 0, budget);
    while (e->wait_head && e->met.preemptions == preempted && budget > 0 && e->n_running < e->o.max_num_seqs) {
        request *r = e->wait_head;
        if (unwanted(r)) {
            if (!(e->wait_head = r->next)) e->wait_tail = NULL;
            e->n_waiting--;
            sched_retire(e, r, "cancelled", gone);
            continue;
        }
        int n = admit(e, r, budget);
        if (!n) break;
        budget -= n;
    }
    trace_where w = trace_at(L_SCHEDULER, DIR_NONE, NO_REQ, e->step);
    trace_counter(w, e->running_name, e->n_running, 0);
    trace_counter(w, e->waiting_name, e->n_waiting, 0);
    return e->o.max_num_batched_tokens - budget;
}
