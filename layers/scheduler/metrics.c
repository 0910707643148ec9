/* metrics.c -- histograms and the engine's Prometheus text. */
#include "layers/scheduler/scheduler.h"
#include <string.h>

static const double LATENCY_S[] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60 };
static const double BATCH[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256 };
#define LEN(a) (int)(sizeof a / sizeof a[0])

void hist_observe(histogram *h, double v) {
    int i = 0;
    while (i < h->n && v > h->le[i]) i++;
    if (i < h->n) h->count[i]++;
    h->total++;
    h->sum += v;
}

void hist_print(FILE *f, const char *name, const char *help, const histogram *h) {
    fprintf(f, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t c = 0;
    for (int i = 0; i < h->n; i++) {
        c += h->count[i];
        fprintf(f, "%s_bucket{le=\"%g\"} %llu\n", name, h->le[i], (unsigned long long)c);
    }
    fprintf(f, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.9g\n%s_count %llu\n", name, (unsigned long long)h->total,
            name, h->sum, name, (unsigned long long)h->total);
}

void metrics_init(engine_metrics *m) {
    memset(m, 0, sizeof *m);
    m->ttft = (histogram){ .le = LATENCY_S, .n = LEN(LATENCY_S) };
    m->itl = (histogram){ .le = LATENCY_S, .n = LEN(LATENCY_S) };
    m->queue = (histogram){ .le = LATENCY_S, .n = LEN(LATENCY_S) };
    m->batch = (histogram){ .le = BATCH, .n = LEN(BATCH) };
}

static const char *FINISH[FIN_N] = { "stop", "length", "cancelled", "error" };

int metrics_finish_index(const char *finish) {
    for (int i = 0; i < FIN_N; i++) if (!strcmp(finish, FINISH[i])) return i;
    return FIN_ERROR;
}

static void counter(FILE *f, const char *name, const char *help, uint64_t v) {
    fprintf(f, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name, (unsigned long long)v);
}

static void gauge(FILE *f, const char *name, const char *help, double v) {
    fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n%s %.6g\n", name, help, name, name, v);
}

static void hist_add(histogram *h, const histogram *o) {
    for (int i = 0; i < h->n; i++) h->count[i] += o->count[i];
    h->total += o->total;
    h->sum += o->sum;
}

/* Each replica's load (v: running, waiting, computed tokens, a row each),
 * and how uneven it is: the busiest's computed tokens over the mean (1:
 * even; n: one did all the work). */
static void replicas_print(int n, double v[3][n], FILE *f) {
    static const char *const NAME[3] = { "hipath_dp_requests_running", "hipath_dp_requests_waiting", "hipath_dp_computed_tokens_total" };
    static const char *const HELP[3] = { "Requests in a data-parallel replica's running batch.", "Requests queued at a replica.",
                                         "Tokens a replica's steps computed (prefill chunks and decodes)." };
    double most = 0, sum = 0;
    for (int r = 0; r < n; r++) {
        sum += v[2][r];
        if (v[2][r] > most) most = v[2][r];
    }
    for (int k = 0; k < 3; k++) {
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", NAME[k], HELP[k], NAME[k], k < 2 ? "gauge" : "counter");
        for (int r = 0; r < n; r++) fprintf(f, "%s{engine=\"%d\"} %.0f\n", NAME[k], r, v[k][r]);
    }
    gauge(f, "hipath_dp_load_imbalance", "The busiest replica's computed tokens over the replicas' mean (1: even).",
          sum > 0 ? most / (sum / n) : 1);
}

void metrics_print(engine *e, int n, FILE *f) {
    engine_metrics m;
    metrics_init(&m);
    int running = 0, waiting = 0, promised = 0, used = 0, total = 0;
    double load[3][n];
    for (int r = 0; r < n; r++) {   /* the replicas' sums: one server's */
        engine *x = &e[r];
        pthread_mutex_lock(&x->mu);
        const engine_metrics *o = &x->met;
        m.prompt_tokens += o->prompt_tokens; m.generation_tokens += o->generation_tokens; m.steps += o->steps;
        m.computed_tokens += o->computed_tokens; m.preemptions += o->preemptions;
        m.prefix_queries += o->prefix_queries; m.prefix_hits += o->prefix_hits;
        for (int i = 0; i < FIN_N; i++) m.finished[i] += o->finished[i];
        hist_add(&m.ttft, &o->ttft); hist_add(&m.itl, &o->itl); hist_add(&m.queue, &o->queue); hist_add(&m.batch, &o->batch);
        running += x->n_running; waiting += x->n_waiting; promised += x->promised;
        used += x->kv.n_blocks - x->bm.n_free; total += x->kv.n_blocks;
        load[0][r] = x->n_running; load[1][r] = x->n_waiting; load[2][r] = (double)o->computed_tokens;
        pthread_mutex_unlock(&x->mu);
    }
    counter(f, "hipath_prompt_tokens_total", "Prompt tokens prefilled.", m.prompt_tokens);
    counter(f, "hipath_generation_tokens_total", "Tokens generated.", m.generation_tokens);
    counter(f, "hipath_engine_steps_total", "Engine steps (forward passes).", m.steps);
    counter(f, "hipath_num_preemptions_total", "Requests preempted: their KV blocks freed, to be computed again.", m.preemptions);
    counter(f, "hipath_prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.", m.prefix_queries);
    counter(f, "hipath_prefix_cache_hits_total", "Prompt tokens the prefix cache held (not computed again).", m.prefix_hits);
    fprintf(f, "# HELP hipath_requests_finished_total Requests that left the engine, by finish reason.\n"
               "# TYPE hipath_requests_finished_total counter\n");
    for (int i = 0; i < FIN_N; i++)
        fprintf(f, "hipath_requests_finished_total{finish_reason=\"%s\"} %llu\n", FINISH[i], (unsigned long long)m.finished[i]);
    gauge(f, "hipath_requests_running", "Requests in the running batch.", running);
    gauge(f, "hipath_requests_waiting", "Requests queued for admission.", waiting);
    gauge(f, "hipath_kv_blocks_used", "KV-cache blocks held by sequences.", used);
    gauge(f, "hipath_kv_blocks_promised", "Blocks of the running requests' worst cases (prompt + max_tokens).", promised);
    gauge(f, "hipath_kv_blocks_total", "KV-cache blocks in the pool.", total);
    gauge(f, "hipath_kv_cache_usage_ratio", "Fraction of KV-cache blocks in use.", total ? (double)used / total : 0);
    hist_print(f, "hipath_time_to_first_token_seconds", "Arrival to first generated token.", &m.ttft);
    hist_print(f, "hipath_inter_token_latency_seconds", "Time between consecutive tokens of a request.", &m.itl);
    hist_print(f, "hipath_queue_time_seconds", "Arrival to admission into the batch.", &m.queue);
    hist_print(f, "hipath_batch_size", "Requests per engine step.", &m.batch);
    if (n > 1) replicas_print(n, load, f);
}
