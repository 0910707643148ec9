/*
 * arrivals.h -- layer 6: an open-loop driver. Each request arrives at a
 * time of its own, whatever the engine is doing (open loop: nobody waits
 * for an answer before sending the next, as traffic reaches a server);
 * the driver queues each one when its clock reaches the arrival, steps the
 * engine on the calling thread, and, when the engine has nothing to do,
 * moves the clock on to the next arrival. It records when each token of
 * each request came out.
 *
 * The clock: on a modeled device (sim, analytic) it advances by each
 * step's modeled device time (rt_modeled_ns: every kernel and copy of the
 * step back to back) and jumps over idle time, so the figures are the
 * model's, the same on any machine; the host's own scheduling time is left
 * out. On a measured device it is the host's monotonic clock, and the
 * driver sleeps until an arrival.
 */
#ifndef HIPATH_ARRIVALS_H
#define HIPATH_ARRIVALS_H

#include "layers/scheduler/scheduler.h"

typedef struct {
    request *r;          /* as engine_submit wants it; the caller's, not touched once it is done */
    double t_arrive;     /* s on the driver's clock */
    double *t_token;     /* [r->max_tokens]: when each token came out (the end of the step that sampled it) */
    int n_token;
    double t_finish;     /* when it left the engine */
} arrival;

typedef struct {
    int modeled;                 /* the clock: 1 modeled device time, 0 the host's (measured) */
    double t;                    /* the clock when the last request left, s */
    double busy_s;               /* of it, steps */
    int64_t steps, seqs;         /* steps, and requests in them summed over the steps */
    int max_seqs;                /* the most requests in one step */
    uint64_t preemptions, computed_tokens, prefix_queries, prefix_hits;   /* the engine's counters over the run */
} arrivals_stats;

/* Run a[0..n), in order of t_arrive, through e (an engine stepped by no
 * other thread) until every one has left; the clock starts at 0. With
 * kernel_every > 0, layers 4-1 are traced only in the engine's steps
 * numbered a multiple of it (each announced by a layer-6 instant
 * "kernel_detail"), muted in the others, and unmuted at the end: a long
 * run's trace keeps every step and a sample of its kernels; 0 leaves the
 * tracing as it is. 0, or -1 with a one-line reason: arrivals out of order
 * (nothing submitted), or a request refused (those already in the engine
 * cancelled, engine_stop). */
int arrivals_run(engine *e, arrival *a, int n, int kernel_every, arrivals_stats *s, char *err, int errlen);

#endif
