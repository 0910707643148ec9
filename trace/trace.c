/*
 * trace.c -- the clock, the per-thread event rings, the recording API and
 * the flusher thread that writes the rings out.
 *
 * Each thread owns a ring of variable-length records. The thread is the only
 * writer of the ring's head; whoever drains the rings (holding the sink lock:
 * the flusher thread, or a caller of trace_flush) is the only writer of its
 * tail. So recording takes no lock and allocates nothing: the ring is
 * allocated once, when the thread first records. The flusher writes every
 * ring out in one transaction, so the recording threads never write files,
 * and it writes when the recorders are quiet: writing while they work slows
 * what they measure (it takes cores, caches and memory bandwidth from a
 * decode that needs them all), so a busy stretch is buffered and written
 * after it. It writes early only when a ring is half full, and when
 * asked (trace_flush, trace_close). A thread whose ring is full waits for
 * the flusher (counted in the stats), so no event is lost. A server is
 * never quiet for long and may be killed: there (trace_flush_every) it also
 * writes at least every so often, at the CPU share of any other thread,
 * and a ring counts as full at a smaller backlog, so that events come no
 * faster than they are written and a kill loses only the last of them.
 */
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <sys/resource.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "trace/trace_sink.h"

#define POPULATE    (2u << 20)        /* ring bytes given pages ahead of a busy recorder */
#define HEADROOM    (512u << 10)      /* ... when it gets this close to their end */
#define FIRST_PAGES (1u << 20)        /* ... and of a new one (most threads record little) */
#define OPENER_PAGES (8u << 20)       /* ... but the thread that opens the trace records most */
#define RECORDER_PAGES (64u << 10)    /* mapped by a recorder that ran out of pages */
#define QUIET_NS    100000000         /* no event for this long: the recorders are quiet */
#define LOOK_NS     10000000          /* how often the flusher looks (and gives pages) */
#define MAX_DEPTH   256   /* open slices per thread */
#define MAX_STR     16384 /* longer copied strings are cut; a step's `requests` (an id per
                               * sequence, 512 and more) must not be: v_step_requests reads it as JSON */
#define LOOKAHEAD   64    /* records searched for a begin's end */


/* Flows waiting for a slice, each on its layer (0: any). */
typedef struct { uint64_t id[TRACE_MAX_FLOWS]; int8_t layer[TRACE_MAX_FLOWS]; uint8_t track[TRACE_MAX_FLOWS]; int n; } flow_queue;

typedef struct {
    trace_writer w;                      /* first: trace_mine.w points to it */
    uint64_t tail_seen;                  /* the owner's last look at tail */
    _Alignas(64) _Atomic uint64_t tail;  /* drainer writes */
    flow_queue waiting[2];               /* drainer's: flows out ([FLOW_OUT]) and in ([FLOW_IN]) */
    struct { int layer, track; int64_t row; uint64_t modeled; } open[MAX_DEPTH]; /* begun, not ended */
    int nopen, overflow;
    int index;
    _Atomic int idle;                    /* its thread exited: another may adopt it */
    _Atomic size_t populated;            /* ring bytes that have their pages */
    _Atomic size_t want;                 /* ... that should have them now (FIRST_PAGES at enroll) */
} trace_thread;

static struct {
    _Atomic int nthreads;
    _Atomic uint64_t next_flow, dropped, retired_events;
    _Atomic uint64_t flushes, flush_ns, waits, wait_ns, max_wait_ns;
    pthread_mutex_t enroll_lock, sink_lock;
    trace_thread *threads[TRACE_MAX_THREADS];
    tsql *db;
    tpf *pf;
    int warned, flush_failed;
    char lost_why[256];        /* the first failed flush's reason */
    pthread_t flusher;
    sem_t wake;                /* posted to start a flush now */
    _Atomic int kicked, stop;  /* kicked: wake is posted and not yet taken */
    _Atomic int flush_asked;   /* the post asks for a flush, not only for pages */
    _Atomic int urged;         /* a thread waits for the flusher: it runs at normal priority */
    _Atomic int running;       /* the flusher thread exists (urge may name it) */
    int idle_ok;               /* it may go idle: this process may lift it back (urge_flusher) */
    _Atomic uint64_t every_ns; /* trace_flush_every: write at least this often (0: when quiet) */
    uint64_t max_bytes;        /* trace_keep_under: the database's cap (0: none) */
    _Atomic uint64_t room;     /* ... the backlog a ring may hold (TRACE_RING_BYTES, or less) */
} T = { .enroll_lock = PTHREAD_MUTEX_INITIALIZER, .sink_lock = PTHREAD_MUTEX_INITIALIZER, .room = TRACE_RING_BYTES };

struct trace_live trace_live;
_Thread_local struct trace_mine trace_mine;
static pthread_key_t exit_key;  /* its destructor hands the ring back */
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

static void seterr(char *err, int errlen, const char *fmt, ...)
{
    if (!err || errlen <= 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- the timeline ---- */

static uint64_t clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
static uint64_t mono_ns(void) { return clock_ns(CLOCK_MONOTONIC); }


/* Ring pages are mapped ahead of the recorder, so that it does not stop at
 * a page fault the first time round its ring: a fault costs microseconds
 * (more in a virtual machine), and a tiny model's generation took 40-230
 * of them, 5-10% of its time. The flusher maps them (MADV_POPULATE_WRITE:
 * FIRST_PAGES when a thread enrolls; then POPULATE bytes past the head
 * of a recorder within HEADROOM of the end of its pages, which asks for
 * them when it gets there), so the zeroed pages pass through the flusher's
 * core's cache, not the recorder's; but the thread that opens the trace
 * maps its OPENER_PAGES itself, in trace_open (see there). Zeroing memory
 * during the run costs the run even on another core; before it, nothing
 * the bench sees: with 2 MiB mapped at open, tiny-hi's traced generation
 * cost +4.4% at 32 tokens (1.3 MB of events), +10.5% at 128 (5.2 MB) and
 * +15.1% at 256, the rest mapped as it went; with 8 MiB at open, +3.8-5.3%
 * at 128 and +4.4% at 256 (runs back to back, where the longer open also
 * cost about a point at 32 tokens; spaced 20 ms apart, mapping 8 MiB at
 * open costs the run nothing measurable: docs/trace-schema.md). The
 * flusher runs at idle priority, and while a model keeps every core busy
 * it may not run for a while: a recorder that reaches the end of its pages
 * maps the next RECORDER_PAGES itself, one call instead of a fault per
 * page. Both may map the same range at once; the kernel sorts that out.
 * Older kernels refuse MADV_POPULATE_WRITE and the recorder takes its
 * faults. */
static void populate(trace_thread *t, size_t upto)
{
    if (upto > TRACE_RING_BYTES) upto = TRACE_RING_BYTES;
    size_t from = atomic_load_explicit(&t->populated, memory_order_acquire);
    if (from >= upto) return;
    madvise(t->w.ring + from, upto - from, MADV_POPULATE_WRITE);
    while (from < upto && !atomic_compare_exchange_weak(&t->populated, &from, upto)) {}
}

static uint8_t *new_ring(void)
{
    void *p = mmap(NULL, TRACE_RING_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* ---- draining rings into the sinks (sink lock held) ---- */

/* Every field set, none zeroed in bulk: an event is large (its args), and
 * this runs for every event written. Flows are deliver's. */
static void decode(const trace_thread *t, const trace_record *r, trace_event *e)
{
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
static trace_record *find_end(trace_thread *t, uint64_t pos, uint64_t head)
{
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

static void to_sinks(const trace_event *e)
{
    if (T.db) tsql_event(T.db, e);
    if (T.pf) tpf_event(T.pf, e);
}

/* A flow record: the flow waits for the next slice of its thread that
 * takes it (take_flows). */
static void flow_waits(trace_thread *t, const trace_flow_record *f)
{
    if (f->what == FLOW_FORGET) { t->waiting[FLOW_OUT].n = t->waiting[FLOW_IN].n = 0; return; }
    flow_queue *q = &t->waiting[f->what];
    if (q->n == TRACE_MAX_FLOWS) { atomic_fetch_add(&T.dropped, 1); return; }
    q->layer[q->n] = f->layer;
    q->track[q->n] = f->track;
    q->id[q->n++] = f->id;
}

/* The waiting flows a slice on (layer, track) takes (into ids): those for
 * any layer, those for its layer and any track, and those for its track;
 * the others keep waiting. */
static int take_flows(flow_queue *q, int layer, int track, uint64_t *ids)
{
    int took = 0, kept = 0;
    for (int i = 0; i < q->n; i++)
        if (!q->layer[i] || (q->layer[i] == layer && (!q->track[i] || q->track[i] == track + 1))) ids[took++] = q->id[i];
        else { q->id[kept] = q->id[i]; q->layer[kept] = q->layer[i]; q->track[kept++] = q->track[i]; }
    q->n = kept;
    return took;
}

static void deliver(trace_thread *t, const trace_record *r, uint64_t pos, uint64_t head)
{
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
        if (t->nopen == MAX_DEPTH) { t->overflow++; atomic_fetch_add(&T.dropped, 1); return; }
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
        if (t->overflow) { t->overflow--; atomic_fetch_add(&T.dropped, 1); return; }
        if (top < 0) {
            if (!T.warned++)
                fprintf(stderr, "trace: end without begin on layer %d track %d (dropped)\n",
                        e.w.layer, e.w.track);
            atomic_fetch_add(&T.dropped, 1);
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

static int deliver_series(const trace_thread *t, const trace_record *r)
{
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
static uint64_t drain(trace_thread *t)
{
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

static int backlog(void)
{
    int nthreads = atomic_load_explicit(&T.nthreads, memory_order_acquire);
    for (int i = 0; i < nthreads; i++)
        if (atomic_load_explicit(&T.threads[i]->w.head, memory_order_acquire) !=
            atomic_load_explicit(&T.threads[i]->tail, memory_order_relaxed)) return 1;
    return 0;
}

/* All rings, one SQLite transaction. Events of a failed transaction are
 * counted as dropped, and the first failure's reason is kept for close.
 * flush_ns counts the CPU time of whichever thread writes. */
static int flush_locked(char *err, int errlen)
{
    if (!backlog()) return 0;
    uint64_t start = clock_ns(CLOCK_THREAD_CPUTIME_ID), n = 0;
    char why[256] = "";
    int rc = T.db ? tsql_begin(T.db, why, sizeof why) : 0;
    int nthreads = atomic_load_explicit(&T.nthreads, memory_order_acquire);
    for (int i = 0; i < nthreads; i++) n += drain(T.threads[i]);
    if (T.db && rc == 0) rc = tsql_commit(T.db, why, sizeof why);
    if (rc) atomic_fetch_add(&T.dropped, n);
    char pf_why[128];
    if (T.pf && tpf_commit(T.pf, pf_why, sizeof pf_why)) {   /* a full disk fails both: say both */
        size_t k = strlen(why);
        snprintf(why + k, sizeof why - k, "%s%s", k ? "; " : "", pf_why);
        rc = -1;
    }
    atomic_fetch_add(&T.flush_ns, clock_ns(CLOCK_THREAD_CPUTIME_ID) - start);
    atomic_fetch_add(&T.flushes, 1);
    if (rc) {
        if (!T.lost_why[0]) snprintf(T.lost_why, sizeof T.lost_why, "%s", why);
        seterr(err, errlen, "%s", why);
    }
    return rc;
}

static void urge_flusher(void);

int trace_flush(char *err, int errlen)
{
    if (!trace_enabled()) return 0;
    while (pthread_mutex_trylock(&T.sink_lock)) {   /* the flusher holds it, mid-write: hurry it */
        urge_flusher();
        nanosleep(&(struct timespec){ .tv_nsec = 20000 }, NULL);
    }
    int rc = flush_locked(err, errlen);
    pthread_mutex_unlock(&T.sink_lock);
    return rc;
}

/* ---- the flusher thread ---- */

/* Wake the flusher (one post until it wakes): for pages, or for a flush. */
static void wake_flusher(int flush)
{
    if (flush) atomic_store(&T.flush_asked, 1);
    if (!atomic_load_explicit(&T.kicked, memory_order_relaxed) && !atomic_exchange(&T.kicked, 1))
        sem_post(&T.wake);
}
static void kick(void) { wake_flusher(1); }

/* The flusher writes at idle priority, taking no core from the recorders
 * (below). But a thread that waits for it (a full ring; trace_flush, whose
 * lock it may hold mid-write) needs it now, and a busy machine (a class's,
 * a shared CI host's) may give an idle thread no time for seconds: two
 * busy loops made a lab's run 40x slower. The waiter lifts it to normal
 * priority, every time it finds it still waiting; the flusher goes back
 * to idle after a flush that someone urged. Lifting a thread back from
 * SCHED_IDLE takes CAP_SYS_NICE or RLIMIT_NICE >= 20 (sched(7)): where the
 * process has neither, the flusher never goes idle (idle_ok). */
static void urge_flusher(void)
{
    if (!T.idle_ok || !atomic_load(&T.running)) return;
    atomic_store(&T.urged, 1);
    pthread_setschedparam(T.flusher, SCHED_OTHER, &(struct sched_param){ 0 });
}

static int may_lift(void)
{
    struct rlimit r;
    return geteuid() == 0 || (getrlimit(RLIMIT_NICE, &r) == 0 && (r.rlim_cur == RLIM_INFINITY || r.rlim_cur >= 20));
}

/* Each ring gets the pages it was promised, and one whose recorder has
 * used half its pages POPULATE more. */
static void give_pages(void)
{
    int nthreads = atomic_load_explicit(&T.nthreads, memory_order_acquire);
    for (int i = 0; i < nthreads; i++) {
        trace_thread *t = T.threads[i];
        uint64_t head = atomic_load_explicit(&t->w.head, memory_order_relaxed);
        size_t want = atomic_load_explicit(&t->want, memory_order_relaxed);
        if (head + HEADROOM > atomic_load(&t->populated) && head + POPULATE > want) want = head + POPULATE;
        populate(t, want);
    }
}

/* Events recorded so far, by all rings: unchanged over QUIET_NS means quiet. */
static uint64_t heads(void)
{
    uint64_t sum = 0;
    int nthreads = atomic_load_explicit(&T.nthreads, memory_order_acquire);
    for (int i = 0; i < nthreads; i++) sum += atomic_load_explicit(&T.threads[i]->w.head, memory_order_relaxed);
    return sum;
}

static void *flusher(void *arg)
{
    (void)arg;
    /* When it must write while the others work (a ring half full), it
     * takes only idle CPU time rather than a core from one of them; unless
     * it must write every so often, which idle time may never allow. */
    uint64_t every = atomic_load(&T.every_ns);
    if (!every && T.idle_ok) pthread_setschedparam(pthread_self(), SCHED_IDLE, &(struct sched_param){ 0 });
    uint64_t seen = 0, changed = mono_ns(), wrote = changed;
    while (!atomic_load(&T.stop)) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += LOOK_NS;
        if (until.tv_nsec >= 1000000000) { until.tv_sec++; until.tv_nsec -= 1000000000; }
        sem_clockwait(&T.wake, CLOCK_MONOTONIC, &until);
        atomic_store(&T.kicked, 0);
        int asked = atomic_exchange(&T.flush_asked, 0);
        give_pages();
        uint64_t now = heads(), t = mono_ns();
        if (now != seen) { seen = now; changed = t; }
        if (!asked && (t - changed < QUIET_NS || !backlog()) && !(every && t - wrote >= every)) continue;
        wrote = t;
        char err[256];
        pthread_mutex_lock(&T.sink_lock);
        /* one message per run: the same failure would repeat every time */
        if (flush_locked(err, sizeof err) && !T.flush_failed++) fprintf(stderr, "trace: %s\n", err);
        pthread_mutex_unlock(&T.sink_lock);
        if (!every && T.idle_ok && atomic_exchange(&T.urged, 0))
            pthread_setschedparam(pthread_self(), SCHED_IDLE, &(struct sched_param){ 0 });
    }
    return NULL;
}

/* Signals go to the program's threads, never to the flusher. */
static int start_flusher(void)
{
    sigset_t all, old;
    sigfillset(&all);
    atomic_store(&T.stop, 0);
    atomic_store(&T.kicked, 0);
    atomic_store(&T.flush_asked, 0);
    atomic_store(&T.urged, 0);
    T.idle_ok = may_lift();
    if (sem_init(&T.wake, 0, 0)) return -1;
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&T.flusher, NULL, flusher, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) sem_destroy(&T.wake);
    else atomic_store(&T.running, 1);
    return rc ? -1 : 0;
}

static void stop_flusher(void)
{
    atomic_store(&T.stop, 1);
    atomic_store(&T.running, 0);
    sem_post(&T.wake);
    pthread_join(T.flusher, NULL);
    sem_destroy(&T.wake);
}

/* ---- recording (no lock, no malloc once the thread is enrolled) ---- */

static void flow_record(trace_thread *t, int what, uint64_t id, int layer, int track);

/* A thread that exits leaves its ring (and any events not yet flushed) to
 * the next thread that enrolls, so short-lived threads do not pile up. */
static void on_thread_exit(void *p)
{
    struct trace_mine *mine = p;
    pthread_mutex_lock(&T.enroll_lock);
    if (mine->gen == atomic_load(&trace_live.gen)) atomic_store(&((trace_thread *)mine->w)->idle, 1);
    pthread_mutex_unlock(&T.enroll_lock);
}

static void make_exit_key(void) { pthread_key_create(&exit_key, on_thread_exit); }

static trace_thread *enroll(void)
{
    pthread_once(&exit_key_once, make_exit_key);
    pthread_mutex_lock(&T.enroll_lock);
    int n = atomic_load_explicit(&T.nthreads, memory_order_relaxed);
    trace_thread *t = NULL;
    int adopted = 0;
    for (int i = 0; i < n && !t; i++)
        if (atomic_load(&T.threads[i]->idle)) {
            t = T.threads[i];
            atomic_store(&t->idle, 0);
            adopted = 1;
        }
    if (!t && n < TRACE_MAX_THREADS && (t = aligned_alloc(64, sizeof *t))) {
        memset(t, 0, sizeof *t);
        t->index = n;
        if ((t->w.ring = new_ring())) {
            atomic_store(&t->want, FIRST_PAGES);
            wake_flusher(0);
            T.threads[n] = t;
            atomic_store_explicit(&T.nthreads, n + 1, memory_order_release);
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
    pthread_mutex_unlock(&T.enroll_lock);
    /* the flows the ring's last thread left waiting are not this one's;
     * written by the adopter, the ring's only writer now */
    if (adopted) flow_record(t, FLOW_FORGET, 0, 0, 0);
    return t;
}

static trace_thread *self(void)
{
    if (trace_mine.w && trace_mine.gen == atomic_load_explicit(&trace_live.gen, memory_order_relaxed))
        return (trace_thread *)trace_mine.w;
    return enroll();
}

static void wait_stats(uint64_t ns)
{
    atomic_fetch_add(&T.waits, 1);
    atomic_fetch_add(&T.wait_ns, ns);
    uint64_t max = atomic_load(&T.max_wait_ns);
    while (ns > max && !atomic_compare_exchange_weak(&T.max_wait_ns, &max, ns)) {}
}

/* The ring has no room for bytes up to end: wait for the flusher. */
static void wait_for_room(trace_thread *t, uint64_t end, uint64_t room)
{
    uint64_t start = mono_ns();
    while (end - (t->tail_seen = atomic_load_explicit(&t->tail, memory_order_acquire)) > room) {
        kick();
        urge_flusher();   /* not a write here: its CPU time would be this thread's, in the trace's own clock */
        nanosleep(&(struct timespec){ .tv_nsec = 20000 }, NULL);
    }
    wait_stats(mono_ns() - start);
}

/* The ring's bytes have their pages up to end (see populate); returns how
 * far they have them, UINT64_MAX once all have. */
static uint64_t page_in(trace_thread *t, uint64_t end)
{
    size_t have = atomic_load_explicit(&t->populated, memory_order_acquire);
    if (have < end) {
        populate(t, end + RECORDER_PAGES);
        have = atomic_load_explicit(&t->populated, memory_order_acquire);
    }
    return have >= TRACE_RING_BYTES ? UINT64_MAX : have;
}

/* A record of n bytes at head would pass the limit: the end of the ring is
 * skipped with a pad record (a record never wraps), a big backlog wakes the
 * flusher (a full ring waits for it), pages are mapped, or asked of the
 * flusher near their end; and the limit is set again. Returns the record's
 * place. */
static uint64_t make_room(trace_thread *t, uint64_t head, uint32_t n)
{
    uint32_t pos = head % TRACE_RING_BYTES, pad = pos + n > TRACE_RING_BYTES ? TRACE_RING_BYTES - pos : 0;
    uint64_t end = head + pad + n, room = atomic_load_explicit(&T.room, memory_order_relaxed);
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
        if (end + HEADROOM > paged) wake_flusher(0);
        else if (paged - HEADROOM < t->w.limit) t->w.limit = paged - HEADROOM;
    }
    return head;
}

/* n contiguous bytes at the head, for the slow paths (trace_fast.h checks
 * the same limit inline): the tail, the pages and the ring's end are looked
 * at only past it, so the flusher's stores do not slow every event. */
static uint8_t *reserve(trace_thread *t, uint32_t n)
{
    uint64_t head = atomic_load_explicit(&t->w.head, memory_order_relaxed);
    if (head + n > t->w.limit) head = make_room(t, head, n);
    return t->w.ring + head % TRACE_RING_BYTES;
}

static size_t cut(const char *s) { return strnlen(s ? s : "", MAX_STR - 1); }

/* The room the copied (ARG_STR) strings take after the args, and their copy. */
static size_t strings_size(int nargs, const trace_arg *args)
{
    size_t n = 0;
    for (int i = 0; i < nargs; i++)
        if (args[i].type == ARG_STR) n += cut(args[i].s) + 1;
    return n;
}
static void put_strings(uint8_t *q, int nargs, const trace_arg *args)
{
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
                                  const char *name, uint64_t ts)
{
    return trace_header(reserve(t, n), n, kind, w, name, ts);
}

static void publish(trace_thread *t, size_t n, uint64_t events)
{
    trace_publish(&t->w, atomic_load_explicit(&t->w.head, memory_order_relaxed), n, events);
}

static trace_thread *recorder(const trace_where *w)
{
    trace_thread *t = self();
    if (!t || w->layer < L_GPU || w->layer > L_CLIENT) { atomic_fetch_add(&T.dropped, 1); return NULL; }
    return t;
}

/* What trace_emit() leaves to the slow path, and everything else. */
void trace_emit_slow(int kind, const trace_where *w, const char *name, uint64_t ts,
                     uint64_t dur, double value, int nargs, const trace_arg *args)
{
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
void trace_series_slow(const trace_where *w, const char *name, int n, const uint64_t *ts_ns, const double *values)
{
    trace_thread *t = recorder(w);
    if (!t) return;
    if (n > TRACE_MAX_SAMPLES) { atomic_fetch_add(&T.dropped, n - TRACE_MAX_SAMPLES); n = TRACE_MAX_SAMPLES; }
    size_t size = sizeof(trace_record) + n * sizeof(trace_sample);
    trace_record *r = start_record(t, size, EV_SERIES, w, name, ts_ns[0]);
    r->nargs = n;
    trace_sample *s = (trace_sample *)(r + 1);
    for (int i = 0; i < n; i++) s[i] = (trace_sample){ ts_ns[i], values[i] };
    publish(t, size, n);
}

uint64_t trace_flow_next(void)
{
    return trace_enabled() ? atomic_fetch_add(&T.next_flow, 1) : 0;
}

/* A flow goes into the ring like an event; the drainer gives it to the
 * slice that takes it (flow_waits). */
static void flow_record(trace_thread *t, int what, uint64_t id, int layer, int track)
{
    trace_flow_record *f = (trace_flow_record *)reserve(t, sizeof *f);
    *f = (trace_flow_record){ .size = sizeof *f, .kind = EV_FLOW, .what = what, .layer = layer, .track = track, .id = id };
    publish(t, sizeof *f, 0);
}
static void flow_add(int what, uint64_t id, int layer, int track)
{
    trace_thread *t = trace_enabled() ? self() : NULL;
    if (t) flow_record(t, what, id, layer, track);
}
void trace_flow_out(uint64_t flow_id) { flow_add(FLOW_OUT, flow_id, 0, 0); }
void trace_flow_in(uint64_t flow_id)  { flow_add(FLOW_IN, flow_id, 0, 0); }
void trace_flow_out_at(int layer, uint64_t flow_id) { flow_add(FLOW_OUT, flow_id, layer, 0); }
void trace_flow_in_at(int layer, uint64_t flow_id)  { flow_add(FLOW_IN, flow_id, layer, 0); }
void trace_flow_in_track(int layer, int track, uint64_t flow_id) { flow_add(FLOW_IN, flow_id, layer, track + 1); }

/* Goes through the ring like an event: no lock, and it reaches the sinks
 * before anything this thread records on that track afterwards. */
void trace_track_name(int layer, int track, const char *name)
{
    if (trace_enabled() && name && layer >= L_GPU && layer <= L_CLIENT)
        trace_emit_slow(EV_TRACK, &(trace_where){ .layer = layer, .track = track }, "", 0, 0, 0,
                        1, &TA_STR("name", name));   /* made up at run time: copied */
}

/* The same for the thread: its name goes before its events. */
void trace_thread_name(const char *name)
{
    if (trace_enabled())
        trace_emit_slow(EV_THREAD, &(trace_where){ .layer = L_GPU }, "", 0, 0, 0, 1, &TA_STR("name", name ? name : ""));
}

/* ---- open, close, stats ---- */

int trace_open(const trace_run_info *info, char *err, int errlen)
{
    if (trace_enabled()) { seterr(err, errlen, "trace: already open"); return -1; }
    trace_clock_restart();
    if (!info || (!info->db_path && !info->perfetto_path)) return 0;

    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    uint64_t t0_unix = (uint64_t)wall.tv_sec * 1000000000u + (uint64_t)wall.tv_nsec;
    if (info->db_path && !(T.db = tsql_open(info->db_path, info, t0_unix, T.max_bytes, err, errlen)))
        return -1;
    if (info->perfetto_path && !(T.pf = tpf_open(info->perfetto_path, err, errlen))) {
        if (T.db) tsql_close(T.db, NULL, 0);
        T.db = NULL;
        return -1;
    }
    atomic_store(&T.next_flow, 1);
    atomic_store(&T.dropped, 0);
    atomic_store(&T.retired_events, 0);
    atomic_store(&T.flushes, 0);
    atomic_store(&T.flush_ns, 0);
    atomic_store(&T.waits, 0);
    atomic_store(&T.wait_ns, 0);
    atomic_store(&T.max_wait_ns, 0);
    T.warned = T.flush_failed = 0;
    T.lost_why[0] = 0;
    if (start_flusher()) {
        seterr(err, errlen, "trace: cannot start the flusher thread");
        if (T.db) tsql_close(T.db, NULL, 0);
        if (T.pf) tpf_close(T.pf, NULL, 0);
        T.db = NULL;
        T.pf = NULL;
        return -1;
    }
    atomic_fetch_add(&trace_live.gen, 1);
    atomic_store(&trace_live.on, 1);
    trace_thread *t = self();
    if (t) {
        /* the opener records most (in a CLI run it runs the model): it maps
         * its pages now, rather than in the middle of what it records, and
         * itself (0.1-0.2 ms): waiting for the idle-priority flusher to be
         * scheduled took about 2 ms, and any wait before a run slows it
         * here (a 2 ms sleep cost tiny-hi's next generation 1%, a 3 ms busy
         * wait 2.3%; docs/trace-schema.md) */
        populate(t, OPENER_PAGES);
    }
    return 0;
}

void trace_flush_every(double seconds, uint64_t backlog)
{
    atomic_store(&T.every_ns, seconds > 0 ? (uint64_t)(seconds * 1e9) : 0);
    atomic_store(&T.room, backlog > 0 && backlog < TRACE_RING_BYTES ? backlog : TRACE_RING_BYTES);
}

void trace_keep_under(uint64_t bytes)
{
    T.max_bytes = bytes;
}

int64_t trace_run_id(void)
{
    return trace_enabled() && T.db ? tsql_run_id(T.db) : -1;
}

/* Recording threads must have stopped before close. */
int trace_close(char *err, int errlen)
{
    if (!trace_enabled()) return 0;
    uint64_t start = mono_ns(), flushed_before = atomic_load(&T.flush_ns);
    stop_flusher();
    pthread_mutex_lock(&T.sink_lock);
    int rc = flush_locked(err, errlen);
    atomic_store(&trace_live.on, 0);
    if (T.db && tsql_close(T.db, rc ? NULL : err, errlen)) rc = -1;
    if (T.pf && tpf_close(T.pf, rc ? NULL : err, errlen)) rc = -1;
    T.db = NULL;
    T.pf = NULL;
    pthread_mutex_lock(&T.enroll_lock);
    int nthreads = atomic_load(&T.nthreads);
    for (int i = 0; i < nthreads; i++) {
        atomic_fetch_add(&T.retired_events, atomic_load(&T.threads[i]->w.events));
        munmap(T.threads[i]->w.ring, TRACE_RING_BYTES);
        free(T.threads[i]);
    }
    atomic_store(&T.nthreads, 0);
    atomic_fetch_add(&trace_live.gen, 1);
    pthread_mutex_unlock(&T.enroll_lock);
    pthread_mutex_unlock(&T.sink_lock);
    /* a thread held up by the writer distorts the trace, a lost event makes
     * it incomplete: say so, and fail if anything was lost */
    trace_stats st = trace_get_stats();
    /* for bench/trace_overhead.sh: what writing cost during the run and after it */
    if (getenv("HIPATH_TRACE_STATS"))
        fprintf(stderr, "trace stats: %llu events, %llu flushes, writing %.1f ms of CPU during the run,"
                " close %.1f ms\n", (unsigned long long)st.events, (unsigned long long)st.flushes,
                flushed_before * 1e-6, (mono_ns() - start) * 1e-6);
    if (st.waits)
        fprintf(stderr, "trace: recording threads waited for the writer %llu times, %.1f ms in all,"
                " longest %.1f ms\n", (unsigned long long)st.waits, st.wait_ns * 1e-6, st.max_wait_ns * 1e-6);
    if (st.dropped) {
        seterr(err, errlen, "trace: %llu of %llu events were not written%s%s", (unsigned long long)st.dropped,
               (unsigned long long)st.events, T.lost_why[0] ? ": " : "", T.lost_why);
        rc = -1;
    }
    return rc;
}

trace_stats trace_get_stats(void)
{
    pthread_mutex_lock(&T.enroll_lock);
    trace_stats s = { .events = atomic_load(&T.retired_events), .dropped = atomic_load(&T.dropped),
                      .flush_ns = atomic_load(&T.flush_ns), .flushes = atomic_load(&T.flushes),
                      .waits = atomic_load(&T.waits), .wait_ns = atomic_load(&T.wait_ns),
                      .max_wait_ns = atomic_load(&T.max_wait_ns) };
    int nthreads = atomic_load(&T.nthreads);
    for (int i = 0; i < nthreads; i++) s.events += atomic_load(&T.threads[i]->w.events);
    pthread_mutex_unlock(&T.enroll_lock);
    return s;
}
