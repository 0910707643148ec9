/*
 * drain.c -- draining the rings into the sinks (the sink lock held): each
 * record decoded into an event, its flows handed to the slice that takes
 * them, a slice whose end is near stored whole.
 */
#include "trace/trace_internal.h"
#include <stdio.h>
#include <string.h>

#define LOOKAHEAD   64    /* records searched for a begin's end */

/* Every field set, none zeroed in bulk: an event is large (its args), and
 * this runs for every event written. Flows are deliver's. */
static void decode(const trace_thread *t, const trace_record *r, trace_event *e) {
    e->kind = r->kind;
    e->w = (trace_where){ .layer = r->layer, .dir = r->dir, .req = r->req, .step = r->step,
                          .clock = r->clock, .track = r->track };
    e->thread = t->index;
    e->depth = 0;
    e->ts = r->ts;
    e->dur = r->kind == EV_SLICE ? r->dur : 0;
    e->modeled = r->kind == EV_BEGIN || r->kind == EV_END ? r->dur : 0;
    e->modeled_ns = 0;
    e->value = r->kind == EV_COUNTER ? r->value : 0;
    e->nargs = r->kind == EV_SERIES ? 0 : r->nargs;   /* a series' nargs counts its samples */
    e->nout = e->nin = 0;
    e->out = e->in = NULL;
    e->row = NULL;
    e->end = NULL;
    e->stored = r->merged;
    const uint8_t *p = (const uint8_t *)(r + 1);
    const trace_ring_arg *a = (const trace_ring_arg *)p;
    p += e->nargs * sizeof(trace_ring_arg);
    e->name = r->name;
    for (int i = 0; i < e->nargs; i++) {
        trace_arg *x = &e->args[i];
        x->key = a[i].key;
        x->type = r->types >> 2 * i & 3;
        x->i = a[i].i;
        if (x->type == ARG_STR) { x->s = (const char *)p; p += strlen(x->s) + 1; }
        else if (x->type == ARG_LIT) {   /* the sinks see one kind of string */
            x->type = ARG_STR;
            if (!x->s) x->s = "";
        }
    }
}

/* The end of the slice that begins at pos, if it is among the next few
 * records already in the ring: then the SQLite sink stores the slice whole
 * in one INSERT, instead of an INSERT now and an UPDATE at its end. */
static trace_record *find_end(trace_thread *t, uint64_t pos, uint64_t head) {
    const trace_record *b = (const trace_record *)(t->w.ring + pos % TRACE_RING_BYTES);
    int depth = 0;
    pos += b->size;
    for (int k = 0; k < LOOKAHEAD && pos < head; ) {
        trace_record *r = (trace_record *)(t->w.ring + pos % TRACE_RING_BYTES);
        pos += r->size;
        if (r->kind == EV_FLOW || r->kind == EV_PAD) continue;   /* not events: not counted */
        k++;
        if ((r->kind != EV_BEGIN && r->kind != EV_END) || r->layer != b->layer || r->track != b->track) continue;
        if (r->kind == EV_BEGIN) depth++;
        else if (r->kind == EV_END && depth-- == 0) return r;
    }
    return NULL;
}

static void to_sinks(const trace_event *e) {
    if (tracer.db) tsql_event(tracer.db, e);
    if (tracer.pf) tpf_event(tracer.pf, e);
}

/* A flow record: the flow waits for the next slice of its thread that
 * takes it (take_flows). */
static void flow_waits(trace_thread *t, const trace_flow_record *f) {
    if (f->what == FLOW_FORGET) { t->waiting[FLOW_OUT].n = t->waiting[FLOW_IN].n = 0; return; }
    flow_queue *q = &t->waiting[f->what];
    if (q->n == TRACE_MAX_FLOWS) { atomic_fetch_add(&tracer.dropped, 1); return; }
    q->layer[q->n] = f->layer;
    q->track[q->n] = f->track;
    q->id[q->n++] = f->id;
}

/* The waiting flows a slice on (layer, track) takes (into ids): those for
 * any layer, those for its layer and any track, and those for its track;
 * the others keep waiting. */
static int take_flows(flow_queue *q, int layer, int track, uint64_t *ids) {
    int took = 0, kept = 0;
    for (int i = 0; i < q->n; i++)
        if (!q->layer[i] || (q->layer[i] == layer && (!q->track[i] || q->track[i] == track + 1))) ids[took++] = q->id[i];
        else { q->id[kept] = q->id[i]; q->layer[kept] = q->layer[i]; q->track[kept++] = q->track[i]; }
    q->n = kept;
    return took;
}

static void deliver(trace_thread *t, const trace_record *r, uint64_t pos, uint64_t head) {
    trace_event e, end;
    uint64_t out[TRACE_MAX_FLOWS], in[TRACE_MAX_FLOWS];
    decode(t, r, &e);
    if (e.kind == EV_TRACK || e.kind == EV_THREAD) {
        e.name = e.args[0].s;
        e.nargs = 0;
        to_sinks(&e);
        return;
    }
    if ((e.kind == EV_BEGIN || e.kind == EV_SLICE || e.kind == EV_INSTANT) && (t->waiting[FLOW_OUT].n | t->waiting[FLOW_IN].n)) {
        e.nout = take_flows(&t->waiting[FLOW_OUT], e.w.layer, e.w.track, out);
        e.nin = take_flows(&t->waiting[FLOW_IN], e.w.layer, e.w.track, in);
        e.out = out;
        e.in = in;
    }
    /* begin/end nest per (thread, layer, track) */
    int depth = 0, top = -1;
    for (int i = 0; i < t->nopen; i++)
        if (t->open[i].layer == e.w.layer && t->open[i].track == e.w.track) { depth++; top = i; }
    e.depth = depth;
    if (e.kind == EV_BEGIN) {
        if (t->nopen == MAX_DEPTH) { t->overflow++; atomic_fetch_add(&tracer.dropped, 1); return; }
        t->open[t->nopen].layer = e.w.layer;
        t->open[t->nopen].track = e.w.track;
        t->open[t->nopen].row = -1;
        t->open[t->nopen].modeled = e.modeled;
        e.row = &t->open[t->nopen++].row;
        trace_record *er = find_end(t, pos, head);
        if (er) {
            decode(t, er, &end);
            e.end = &end;
            e.modeled_ns = end.modeled > e.modeled ? end.modeled - e.modeled : 0;
            er->merged = 1;   /* the drainer owns records below head */
        }
    } else if (e.kind == EV_END) {
        if (t->overflow) { t->overflow--; atomic_fetch_add(&tracer.dropped, 1); return; }
        if (top < 0) {
            if (!tracer.warned++)
                fprintf(stderr, "trace: end without begin on layer %d track %d (dropped)\n",
                        e.w.layer, e.w.track);
            atomic_fetch_add(&tracer.dropped, 1);
            return;
        }
        e.row = &t->open[top].row;
        e.modeled_ns = e.modeled > t->open[top].modeled ? e.modeled - t->open[top].modeled : 0;
    }
    to_sinks(&e);
    if (e.kind == EV_END) {
        memmove(&t->open[top], &t->open[top + 1], (t->nopen - top - 1) * sizeof t->open[0]);
        t->nopen--;
    }
}

static int deliver_series(const trace_thread *t, const trace_record *r) {
    trace_event e;
    decode(t, r, &e);
    e.kind = EV_COUNTER;
    const trace_sample *s = (const trace_sample *)(r + 1);
    for (int i = 0; i < r->nargs; i++) {
        e.ts = s[i].ts;
        e.value = s[i].value;
        to_sinks(&e);
    }
    return r->nargs;
}

/* The sinks copy what they keep, so each record's room goes back to the
 * recorder as soon as it is delivered, not at the end of the transaction. */
static uint64_t drain(trace_thread *t) {
    uint64_t head = atomic_load_explicit(&t->w.head, memory_order_acquire);
    uint64_t tail = atomic_load_explicit(&t->tail, memory_order_relaxed), n = 0;
    while (tail < head) {
        const trace_record *r = (const trace_record *)(t->w.ring + tail % TRACE_RING_BYTES);
        if (r->kind == EV_SERIES) n += deliver_series(t, r);
        else if (r->kind == EV_FLOW) flow_waits(t, (const trace_flow_record *)r);
        else if (r->kind != EV_PAD) { deliver(t, r, tail, head); n += r->kind != EV_TRACK && r->kind != EV_THREAD; }
        tail += r->size;
        atomic_store_explicit(&t->tail, tail, memory_order_release);
    }
    return n;
}

int trace_backlog(void) {
    int nthreads = atomic_load_explicit(&tracer.nthreads, memory_order_acquire);
    for (int i = 0; i < nthreads; i++)
        if (atomic_load_explicit(&tracer.threads[i]->w.head, memory_order_acquire) !=
            atomic_load_explicit(&tracer.threads[i]->tail, memory_order_relaxed)) return 1;
    return 0;
}

/* All rings, one SQLite transaction. Events of a failed transaction are
 * counted as dropped, and the first failure's reason is kept for close.
 * flush_ns counts the CPU time of whichever thread writes. */
int trace_flush_locked(char *err, int errlen) {
    if (!trace_backlog()) return 0;
    uint64_t start = clock_of(CLOCK_THREAD_CPUTIME_ID), n = 0;
    char why[256] = "";
    int rc = tracer.db ? tsql_begin(tracer.db, why, sizeof why) : 0;
    int nthreads = atomic_load_explicit(&tracer.nthreads, memory_order_acquire);
    for (int i = 0; i < nthreads; i++) n += drain(tracer.threads[i]);
    if (tracer.db && rc == 0) rc = tsql_commit(tracer.db, why, sizeof why);
    if (rc) atomic_fetch_add(&tracer.dropped, n);
    char pf_why[128];
    if (tracer.pf && tpf_commit(tracer.pf, pf_why, sizeof pf_why)) {   /* a full disk fails both: say both */
        size_t k = strlen(why);
        snprintf(why + k, sizeof why - k, "%s%s", k ? "; " : "", pf_why);
        rc = -1;
    }
    atomic_fetch_add(&tracer.flush_ns, clock_of(CLOCK_THREAD_CPUTIME_ID) - start);
    atomic_fetch_add(&tracer.flushes, 1);
    if (rc) {
        if (!tracer.lost_why[0]) snprintf(tracer.lost_why, sizeof tracer.lost_why, "%s", why);
        if (err && errlen > 0) snprintf(err, errlen, "%s", why);
    }
    return rc;
}
