/*
 * metrics.h -- what the engine counts, rendered as Prometheus text for
 * GET /metrics. The engine updates these under its mutex.
 */
#ifndef HIPATH_METRICS_H
#define HIPATH_METRICS_H

#include <stdint.h>
#include <stdio.h>

#define HIST_MAX 16

/* A cumulative histogram with fixed upper bounds, as Prometheus wants. */
typedef struct {
    const double *le;            /* bucket upper bounds, ascending */
    int n;
    uint64_t count[HIST_MAX];    /* observations <= le[i] (not yet cumulative) */
    uint64_t total;
    double sum;
} histogram;

void hist_observe(histogram *h, double v);
void hist_print(FILE *f, const char *name, const char *help, const histogram *h);

enum { FIN_STOP, FIN_LENGTH, FIN_CANCELLED, FIN_ERROR, FIN_N };

typedef struct {
    uint64_t prompt_tokens, generation_tokens, steps;
    uint64_t computed_tokens;    /* ids the steps computed: prefill chunks, decodes, and again after a preemption */
    uint64_t preemptions;
    uint64_t prefix_queries, prefix_hits;   /* prompt tokens looked up in the prefix cache, and found (vLLM's counts) */
    uint64_t finished[FIN_N];
    histogram ttft;              /* arrival to first token, seconds */
    histogram itl;               /* between tokens of one request, seconds */
    histogram queue;             /* arrival to admission, seconds */
    histogram batch;             /* requests per step */
} engine_metrics;

void metrics_init(engine_metrics *m);
int  metrics_finish_index(const char *finish);

#endif
