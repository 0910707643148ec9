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

void metrics_print(engine *e, FILE *f) {
    pthread_mutex_lock(&e->mu);
    engine_metrics m = e->met;
    int running = e->n_running, waiting = e->n_waiting, promised = e->promised;
    int used = e->kv.n_blocks - e->bm.n_free, total = e->kv.n_blocks;
    pthread_mutex_unlock(&e->mu);
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
}
