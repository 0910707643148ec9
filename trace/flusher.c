/*
 * flusher.c -- the flusher thread: it writes the rings out when the
 * recorders are quiet (or a ring is half full, or it is asked), and maps
 * their pages ahead of them.
 */
#include "trace/trace_internal.h"
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#define QUIET_NS    100000000         /* no event for this long: the recorders are quiet */
#define LOOK_NS     10000000          /* how often the flusher looks (and gives pages) */

/* Wake the flusher (one post until it wakes): for pages, or for a flush. */
void trace_wake_flusher(int flush) {
    if (flush) atomic_store(&tracer.flush_asked, 1);
    if (!atomic_load_explicit(&tracer.kicked, memory_order_relaxed) && !atomic_exchange(&tracer.kicked, 1))
        sem_post(&tracer.wake);
}

/* The flusher writes at idle priority, taking no core from the recorders
 * (below). But a thread that waits for it (a full ring; trace_flush, whose
 * lock it may hold mid-write) needs it now, and a busy machine (a class's,
 * a shared CI host's) may give an idle thread no time for seconds: two
 * busy loops made a lab's run 40x slower. The waiter lifts it to normal
 * priority, every time it finds it still waiting; the flusher goes back
 * to idle after a flush that someone urged. Lifting a thread back from
 * SCHED_IDLE takes CAP_SYS_NICE or RLIMIT_NICE >= 20 (sched(7)): where the
 * process has neither, the flusher never goes idle (idle_ok). */
void trace_urge_flusher(void) {
    if (!tracer.idle_ok || !atomic_load(&tracer.running)) return;
    atomic_store(&tracer.urged, 1);
    pthread_setschedparam(tracer.flusher, SCHED_OTHER, &(struct sched_param){ 0 });
}

static int may_lift(void) {
    struct rlimit r;
    return geteuid() == 0 || (getrlimit(RLIMIT_NICE, &r) == 0 && (r.rlim_cur == RLIM_INFINITY || r.rlim_cur >= 20));
}

/* Each ring gets the pages it was promised, and one whose recorder has
 * used half its pages POPULATE more. */
static void give_pages(void) {
    int nthreads = atomic_load_explicit(&tracer.nthreads, memory_order_acquire);
    for (int i = 0; i < nthreads; i++) {
        trace_thread *t = tracer.threads[i];
        uint64_t head = atomic_load_explicit(&t->w.head, memory_order_relaxed);
        size_t want = atomic_load_explicit(&t->want, memory_order_relaxed);
        if (head + HEADROOM > atomic_load(&t->populated) && head + POPULATE > want) want = head + POPULATE;
        trace_populate(t, want);
    }
}

/* Events recorded so far, by all rings: unchanged over QUIET_NS means quiet. */
static uint64_t heads(void) {
    uint64_t sum = 0;
    int nthreads = atomic_load_explicit(&tracer.nthreads, memory_order_acquire);
    for (int i = 0; i < nthreads; i++) sum += atomic_load_explicit(&tracer.threads[i]->w.head, memory_order_relaxed);
    return sum;
}

static void *flusher(void *arg) {
    (void)arg;
    /* When it must write while the others work (a ring half full), it
     * takes only idle CPU time rather than a core from one of them; unless
     * it must write every so often, which idle time may never allow. */
    uint64_t every = atomic_load(&tracer.every_ns);
    if (!every && tracer.idle_ok) pthread_setschedparam(pthread_self(), SCHED_IDLE, &(struct sched_param){ 0 });
    uint64_t seen = 0, changed = clock_of(CLOCK_MONOTONIC), wrote = changed;
    while (!atomic_load(&tracer.stop)) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += LOOK_NS;
        if (until.tv_nsec >= 1000000000) { until.tv_sec++; until.tv_nsec -= 1000000000; }
        sem_clockwait(&tracer.wake, CLOCK_MONOTONIC, &until);
        atomic_store(&tracer.kicked, 0);
        int asked = atomic_exchange(&tracer.flush_asked, 0);
        give_pages();
        uint64_t now = heads(), t = clock_of(CLOCK_MONOTONIC);
        if (now != seen) { seen = now; changed = t; }
        if (!asked && (t - changed < QUIET_NS || !trace_backlog()) && !(every && t - wrote >= every)) continue;
        wrote = t;
        char err[256];
        pthread_mutex_lock(&tracer.sink_lock);
        /* one message per run: the same failure would repeat every time */
        if (trace_flush_locked(err, sizeof err) && !tracer.flush_failed++) fprintf(stderr, "trace: %s\n", err);
        pthread_mutex_unlock(&tracer.sink_lock);
        if (!every && tracer.idle_ok && atomic_exchange(&tracer.urged, 0))
            pthread_setschedparam(pthread_self(), SCHED_IDLE, &(struct sched_param){ 0 });
    }
    return NULL;
}

/* Signals go to the program's threads, never to the flusher. */
int trace_start_flusher(void) {
    sigset_t all, old;
    sigfillset(&all);
    atomic_store(&tracer.stop, 0);
    atomic_store(&tracer.kicked, 0);
    atomic_store(&tracer.flush_asked, 0);
    atomic_store(&tracer.urged, 0);
    tracer.idle_ok = may_lift();
    if (sem_init(&tracer.wake, 0, 0)) return -1;
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&tracer.flusher, NULL, flusher, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) sem_destroy(&tracer.wake);
    else atomic_store(&tracer.running, 1);
    return rc ? -1 : 0;
}

void trace_stop_flusher(void) {
    atomic_store(&tracer.stop, 1);
    atomic_store(&tracer.running, 0);
    sem_post(&tracer.wake);
    pthread_join(tracer.flusher, NULL);
    sem_destroy(&tracer.wake);
}
