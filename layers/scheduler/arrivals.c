/*
 * arrivals.c -- layer 6: the open-loop driver (arrivals.h).
 */
#include "layers/scheduler/arrivals.h"
#include "layers/runtime/runtime.h"
#include "trace/trace.h"
#include <math.h>
#include <stdio.h>
#include <time.h>

/* Measured: sleep on the host until the clock reads t. */
static void sleep_until(double t0, double t) {
    double left = t - (trace_host_seconds() - t0);
    if (left > 0) nanosleep(&(struct timespec){ (time_t)left, (long)((left - (time_t)left) * 1e9) }, NULL);
}

/* Layers 4-1 traced in step e->step when it is a multiple of every, else muted. */
static void kernel_sample(const engine *e, int every) {
    enum { BELOW = 1u << L_OPS | 1u << L_KERNELS | 1u << L_RUNTIME | 1u << L_GPU };
    int on = e->step % every == 0;
    trace_mute(on ? 0 : BELOW);
    if (on) trace_instant(trace_at(L_SCHEDULER, DIR_DOWN, NO_REQ, e->step), "kernel_detail", TRACE_ARGS(TA_INT("every", every)));
}

int arrivals_run(engine *e, arrival *a, int n, int kernel_every, arrivals_stats *s, char *err, int errlen) {
    const engine_metrics *m = &e->met;
    *s = (arrivals_stats){ .modeled = rt_device_now()->driver->modeled };
    for (int i = 1; i < n; i++)
        if (a[i].t_arrive < a[i - 1].t_arrive) { snprintf(err, errlen, "arrival %d comes before arrival %d", i, i - 1); return -1; }
    uint64_t pre0 = m->preemptions, tok0 = m->computed_tokens, q0 = m->prefix_queries, h0 = m->prefix_hits;
    double t0 = trace_host_seconds();
    int next = 0, first = 0, left = 0;   /* a[first..next) are in the engine or done */
    while (first < n) {
        for (; next < n && a[next].t_arrive <= s->t; next++) {
            a[next].n_token = 0;
            a[next].t_finish = NAN;
            if (engine_submit(e, a[next].r, err, errlen) != SUBMIT_OK) {   /* the others cancelled */
                engine_stop(e);
                if (kernel_every > 0) trace_mute(0);
                return -1;
            }
            left++;
        }
        if (!left) {   /* idle: on to the next arrival */
            if (!s->modeled) sleep_until(t0, a[next].t_arrive);
            s->t = s->modeled ? a[next].t_arrive : trace_host_seconds() - t0;
            continue;
        }
        uint64_t dev0 = rt_modeled_ns();
        double host0 = trace_host_seconds() - t0;
        double seqs0 = m->batch.sum;
        if (kernel_every > 0) kernel_sample(e, kernel_every);
        left = engine_step(e);
        double dt = s->modeled ? (rt_modeled_ns() - dev0) * 1e-9 : trace_host_seconds() - t0 - host0;
        s->t += dt;
        s->busy_s += dt;
        int in_step = (int)(m->batch.sum - seqs0);
        s->steps += in_step > 0;
        s->seqs += in_step;
        if (in_step > s->max_seqs) s->max_seqs = in_step;
        for (int i = first; i < next; i++) {
            arrival *x = &a[i];
            while (x->n_token < x->r->n_out) x->t_token[x->n_token++] = s->t;
            if (x->r->finish && isnan(x->t_finish)) x->t_finish = s->t;
        }
        while (first < next && a[first].r->finish) first++;
    }
    if (kernel_every > 0) trace_mute(0);
    s->preemptions = m->preemptions - pre0;
    s->computed_tokens = m->computed_tokens - tok0;
    s->prefix_queries = m->prefix_queries - q0;
    s->prefix_hits = m->prefix_hits - h0;
    return 0;
}
