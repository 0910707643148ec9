/*
 * scheduler.c -- layer 6: the batch policy, continuous batching. Which
 * requests run in the next step (sched_compose: the one place the batch
 * is decided), their KV blocks as they grow, and their leaving. The engine
 * (engine.c) runs the step it composes. Every decision is a trace event.
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
void sched_retire(engine *e, request *r, const char *finish, request **gone) {
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
int sched_compose(engine *e, request **gone) {
    for (int i = 0; i < e->n_running; i++)
        if (unwanted(e->running[i])) sched_retire(e, e->running[i], "cancelled", gone);
    sched_compact(e);
    for (int i = 0; i < e->n_running; i++) {
        request *r = e->running[i];
        if (grow(e, r, r->kv.len + 1)) sched_retire(e, r, "error", gone);   /* cannot happen: blocks were promised */
    }
    sched_compact(e);

    int tokens = e->n_running;
    while (e->wait_head && e->n_running < e->max_batch) {
        request *r = e->wait_head;
        int cancelled = unwanted(r);
        if (!cancelled && (tokens + r->n_prompt > e->max_step_tokens || e->promised + r->worst_blocks > e->kv.n_blocks))
            break;
        if (!(e->wait_head = r->next)) e->wait_tail = NULL;
        e->n_waiting--;
        if (cancelled) { sched_retire(e, r, "cancelled", gone); continue; }
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
