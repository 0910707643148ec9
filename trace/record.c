/*
 * record.c -- recording (no lock, no malloc once the thread is enrolled):
 * a thread's ring, room in it, the slow path of every event, flows, names.
 */
#include "trace/trace_internal.h"
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define MAX_STR 16384  /* longer copied strings are cut; a step's `requests` (an id per
                        * sequence, 512 and more) must not be: v_step_requests reads it as JSON */

static pthread_key_t exit_key;  /* its destructor hands the ring back */
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

static void flow_record(trace_thread *t, int what, uint64_t id, int layer, int track);
static void kick(void) { trace_wake_flusher(1); }

static uint8_t *new_ring(void) {
    void *p = mmap(NULL, TRACE_RING_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* A thread that exits leaves its ring (and any events not yet flushed) to
 * the next thread that enrolls, so short-lived threads do not pile up. */
static void on_thread_exit(void *p) {
    struct trace_mine *mine = p;
    pthread_mutex_lock(&tracer.enroll_lock);
    if (mine->gen == atomic_load(&trace_live.gen)) atomic_store(&((trace_thread *)mine->w)->idle, 1);
    pthread_mutex_unlock(&tracer.enroll_lock);
}

static void make_exit_key(void) { pthread_key_create(&exit_key, on_thread_exit); }

static trace_thread *enroll(void) {
    pthread_once(&exit_key_once, make_exit_key);
    pthread_mutex_lock(&tracer.enroll_lock);
    int n = atomic_load_explicit(&tracer.nthreads, memory_order_relaxed);
    trace_thread *t = NULL;
    int adopted = 0;
    for (int i = 0; i < n && !t; i++)
        if (atomic_load(&tracer.threads[i]->idle)) {
            t = tracer.threads[i];
            atomic_store(&t->idle, 0);
            adopted = 1;
        }
    if (!t && n < TRACE_MAX_THREADS && (t = aligned_alloc(64, sizeof *t))) {
        memset(t, 0, sizeof *t);
        t->index = n;
        if ((t->w.ring = new_ring())) {
            atomic_store(&t->want, FIRST_PAGES);
            trace_wake_flusher(0);
            tracer.threads[n] = t;
            atomic_store_explicit(&tracer.nthreads, n + 1, memory_order_release);
        } else {
            free(t);
            t = NULL;
        }
    }
    if (t) {
        trace_mine.w = &t->w;
        trace_mine.gen = atomic_load(&trace_live.gen);
        pthread_setspecific(exit_key, &trace_mine);
    }
    pthread_mutex_unlock(&tracer.enroll_lock);
    /* the flows the ring's last thread left waiting are not this one's;
     * written by the adopter, the ring's only writer now */
    if (adopted) flow_record(t, FLOW_FORGET, 0, 0, 0);
    return t;
}

trace_thread *trace_self(void) {
    if (trace_mine.w && trace_mine.gen == atomic_load_explicit(&trace_live.gen, memory_order_relaxed))
        return (trace_thread *)trace_mine.w;
    return enroll();
}

static void wait_stats(uint64_t ns) {
    atomic_fetch_add(&tracer.waits, 1);
    atomic_fetch_add(&tracer.wait_ns, ns);
    uint64_t max = atomic_load(&tracer.max_wait_ns);
    while (ns > max && !atomic_compare_exchange_weak(&tracer.max_wait_ns, &max, ns)) {}
}

/* The ring has no room for bytes up to end: wait for the flusher. */
static void wait_for_room(trace_thread *t, uint64_t end, uint64_t room) {
    uint64_t start = clock_of(CLOCK_MONOTONIC);
    while (end - (t->tail_seen = atomic_load_explicit(&t->tail, memory_order_acquire)) > room) {
        kick();
        trace_urge_flusher();   /* not a write here: its CPU time would be this thread's, in the trace's own clock */
        nanosleep(&(struct timespec){ .tv_nsec = 20000 }, NULL);
    }
    wait_stats(clock_of(CLOCK_MONOTONIC) - start);
}

/* The ring's bytes have their pages up to end (trace_populate); returns how
 * far they have them, UINT64_MAX once all have. */
static uint64_t page_in(trace_thread *t, uint64_t end) {
    size_t have = atomic_load_explicit(&t->populated, memory_order_acquire);
    if (have < end) {
        trace_populate(t, end + RECORDER_PAGES);
        have = atomic_load_explicit(&t->populated, memory_order_acquire);
    }
    return have >= TRACE_RING_BYTES ? UINT64_MAX : have;
}

/* A record of n bytes at head would pass the limit: the end of the ring is
 * skipped with a pad record (a record never wraps), a big backlog wakes the
 * flusher (a full ring waits for it), pages are mapped, or asked of the
 * flusher near their end; and the limit is set again. Returns the record's
 * place. */
static uint64_t make_room(trace_thread *t, uint64_t head, uint32_t n) {
    uint32_t pos = head % TRACE_RING_BYTES, pad = pos + n > TRACE_RING_BYTES ? TRACE_RING_BYTES - pos : 0;
    uint64_t end = head + pad + n, room = atomic_load_explicit(&tracer.room, memory_order_relaxed);
    if (end - t->tail_seen > room / 2) {
        t->tail_seen = atomic_load_explicit(&t->tail, memory_order_acquire);
        if (end - t->tail_seen > room / 2) kick();
        if (end - t->tail_seen > room) wait_for_room(t, end, room);
    }
    uint64_t paged = page_in(t, end), lap_end;
    if (pad) {
        trace_record *r = (trace_record *)(t->w.ring + pos);
        r->size = pad;
        r->kind = EV_PAD;
        head += pad;
        atomic_store_explicit(&t->w.head, head, memory_order_release);
    }
    lap_end = (head / TRACE_RING_BYTES + 1) * TRACE_RING_BYTES;
    t->w.limit = t->tail_seen + room / 2;
    if (paged < t->w.limit) t->w.limit = paged;
    if (lap_end < t->w.limit) t->w.limit = lap_end;
    if (paged != UINT64_MAX) {   /* near the end of its pages, it asks the writer for more */
        if (end + HEADROOM > paged) trace_wake_flusher(0);
        else if (paged - HEADROOM < t->w.limit) t->w.limit = paged - HEADROOM;
    }
    return head;
}

/* n contiguous bytes at the head, for the slow paths (trace_fast.h checks
 * the same limit inline): the tail, the pages and the ring's end are looked
 * at only past it, so the flusher's stores do not slow every event. */
static uint8_t *reserve(trace_thread *t, uint32_t n) {
    uint64_t head = atomic_load_explicit(&t->w.head, memory_order_relaxed);
    if (head + n > t->w.limit) head = make_room(t, head, n);
    return t->w.ring + head % TRACE_RING_BYTES;
}

static size_t cut(const char *s) { return strnlen(s ? s : "", MAX_STR - 1); }

/* The room the copied (ARG_STR) strings take after the args, and their copy. */
static size_t strings_size(int nargs, const trace_arg *args) {
    size_t n = 0;
    for (int i = 0; i < nargs; i++)
        if (args[i].type == ARG_STR) n += cut(args[i].s) + 1;
    return n;
}
static void put_strings(uint8_t *q, int nargs, const trace_arg *args) {
    for (int i = 0; i < nargs; i++)
        if (args[i].type == ARG_STR) {
            size_t len = cut(args[i].s);
            memcpy(q, args[i].s ? args[i].s : "", len);
            q[len] = 0;
            q += len + 1;
        }
}

/* The header of an n-byte record at the ring's head; publish() makes it
 * visible to the drainer once the rest is written. */
static trace_record *start_record(trace_thread *t, size_t n, int kind, const trace_where *w,
                                  const char *name, uint64_t ts) {
    return trace_header(reserve(t, n), n, kind, w, name, ts);
}

static void publish(trace_thread *t, size_t n, uint64_t events) {
    trace_publish(&t->w, atomic_load_explicit(&t->w.head, memory_order_relaxed), n, events);
}

static trace_thread *recorder(const trace_where *w) {
    trace_thread *t = trace_self();
    if (!t || w->layer < L_GPU || w->layer > L_CLIENT) { atomic_fetch_add(&tracer.dropped, 1); return NULL; }
    return t;
}

/* What trace_emit() leaves to the slow path, and everything else. */
void trace_emit_slow(int kind, const trace_where *w, const char *name, uint64_t ts,
                     uint64_t dur, double value, int nargs, const trace_arg *args) {
    trace_thread *t = recorder(w);
    if (!t) return;
    if (nargs < 0 || !args) nargs = 0;
    if (nargs > TRACE_MAX_ARGS) nargs = TRACE_MAX_ARGS;
    int strs;
    uint32_t types = trace_arg_types(nargs, args, &strs);
    size_t n = sizeof(trace_record) + nargs * sizeof(trace_ring_arg);
    if (strs) n += (strings_size(nargs, args) + 7) & ~(size_t)7;
    trace_record *r = start_record(t, n, kind, w, name, ts);
    trace_ring_arg *a = (trace_ring_arg *)(r + 1);
    trace_put_args(a, nargs, args);
    if (strs) put_strings((uint8_t *)(a + nargs), nargs, args);
    r->nargs = nargs;
    r->types = types;
    if (kind == EV_COUNTER) r->value = value; else r->dur = dur;
    publish(t, n, kind != EV_TRACK && kind != EV_THREAD);
}

/* What trace_counter_series() leaves to the slow path. */
void trace_series_slow(const trace_where *w, const char *name, int n, const uint64_t *ts_ns, const double *values) {
    trace_thread *t = recorder(w);
    if (!t) return;
    if (n > TRACE_MAX_SAMPLES) { atomic_fetch_add(&tracer.dropped, n - TRACE_MAX_SAMPLES); n = TRACE_MAX_SAMPLES; }
    size_t size = sizeof(trace_record) + n * sizeof(trace_sample);
    trace_record *r = start_record(t, size, EV_SERIES, w, name, ts_ns[0]);
    r->nargs = n;
    trace_sample *s = (trace_sample *)(r + 1);
    for (int i = 0; i < n; i++) s[i] = (trace_sample){ ts_ns[i], values[i] };
    publish(t, size, n);
}

void trace_mute(unsigned layers) { atomic_store(&trace_live.muted, layers); }

uint64_t trace_flow_next(void) {
    return trace_enabled() ? atomic_fetch_add(&tracer.next_flow, 1) : 0;
}

/* A flow goes into the ring like an event; the drainer gives it to the
 * slice that takes it (flow_waits, drain.c). */
static void flow_record(trace_thread *t, int what, uint64_t id, int layer, int track) {
    trace_flow_record *f = (trace_flow_record *)reserve(t, sizeof *f);
    *f = (trace_flow_record){ .size = sizeof *f, .kind = EV_FLOW, .what = what, .layer = layer, .track = track, .id = id };
    publish(t, sizeof *f, 0);
}
static void flow_add(int what, uint64_t id, int layer, int track) {
    trace_thread *t = trace_enabled() && !trace_muted(layer) ? trace_self() : NULL;
    if (t) flow_record(t, what, id, layer, track);
}
void trace_flow_out(uint64_t flow_id) { flow_add(FLOW_OUT, flow_id, 0, 0); }
void trace_flow_in(uint64_t flow_id)  { flow_add(FLOW_IN, flow_id, 0, 0); }
void trace_flow_out_at(int layer, uint64_t flow_id) { flow_add(FLOW_OUT, flow_id, layer, 0); }
void trace_flow_in_at(int layer, uint64_t flow_id)  { flow_add(FLOW_IN, flow_id, layer, 0); }
void trace_flow_in_track(int layer, int track, uint64_t flow_id) { flow_add(FLOW_IN, flow_id, layer, track + 1); }

/* Goes through the ring like an event: no lock, and it reaches the sinks
 * before anything this thread records on that track afterwards. */
void trace_track_name(int layer, int track, const char *name) {
    if (trace_enabled() && name && layer >= L_GPU && layer <= L_CLIENT)
        trace_emit_slow(EV_TRACK, &(trace_where){ .layer = layer, .track = track }, "", 0, 0, 0,
                        1, &TA_STR("name", name));   /* made up at run time: copied */
}

/* The same for the thread: its name goes before its events. */
void trace_thread_name(const char *name) {
    if (trace_enabled())
        trace_emit_slow(EV_THREAD, &(trace_where){ .layer = L_GPU }, "", 0, 0, 0, 1, &TA_STR("name", name ? name : ""));
}
