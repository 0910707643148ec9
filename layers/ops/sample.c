/* sample.c -- temperature, top-k, top-p, and logprobs. */
#include "layers/ops/sample.h"
#include "kernels/backend.h"
#include "trace/trace.h"
#include <math.h>
#include <stdlib.h>

void sampler_seed(sampler *s, uint64_t seed) { s->rng = seed * 0x9E3779B97F4A7C15ull + 1; }

static float uniform01(sampler *s) {          /* xorshift64*, top 24 bits */
    s->rng ^= s->rng >> 12; s->rng ^= s->rng << 25; s->rng ^= s->rng >> 27;
    return (float)((s->rng * 0x2545F4914F6CDD1Dull) >> 40) / 16777216.0f;
}

typedef struct { float p; int id; } cand;
static int by_p_desc(const void *a, const void *b) {
    float x = ((const cand *)a)->p, y = ((const cand *)b)->p;
    return (x < y) - (x > y);
}

/* The first of the largest logits (m is the largest). */
static int greedy(const float *logits, int vocab, float m) {
    int id = 0;
    while (id < vocab - 1 && logits[id] < m) id++;
    return id;
}

/* A draw from softmax(logits / T), cut to the top-k and the nucleus; -1
 * when there is nothing to draw from. The largest term is e^0 = 1, so the
 * terms sum to between 1 and vocab: a sum outside that means they are not
 * probabilities (1/T overflowed to infinity, as at T = 1e-45, or the
 * logits were not numbers). */
static int draw(sampler *s, const float *logits, int vocab, float m, float *work) {
    float *p = work;                   /* work: 2*vocab floats */
    double sum = k_exp_scaled(p, logits, vocab, m, 1 / s->temperature);
    if (!(sum > 0.5 && sum < 2.0 * vocab)) return -1;
    float u = uniform01(s);
    if (s->top_p >= 1 && s->top_k <= 0) {
        /* the whole distribution: no order needed, one pass */
        double acc = 0, at = u * sum;
        for (int i = 0; i < vocab; i++) { acc += p[i]; if (at < acc) return i; }
        return vocab - 1;
    }
    /* (p, id) pairs in the same buffer, filled from the top: c[i] covers
     * p[2i] and p[2i+1], which are read already */
    cand *c = (cand *)work;
    for (int i = vocab - 1; i >= 0; i--) c[i] = (cand){ .p = (float)(p[i] / sum), .id = i };
    /* Sort only candidates that can be in the nucleus: any token with
     * p < (1 - top_p) / (vocab - 1) cannot (llama2.c's trick). */
    int n = 0;
    float cut = s->top_p < 1 ? (1 - s->top_p) / (vocab - 1) : 0;
    for (int i = 0; i < vocab; i++) if (c[i].p >= cut) c[n++] = c[i];
    /* None left: a flat distribution and a top_p under 1/vocab put even the
     * largest under the cut (by rounding); the nucleus is the largest alone. */
    if (n == 0) return -1;
    qsort(c, (size_t)n, sizeof *c, by_p_desc);
    if (s->top_k > 0 && s->top_k < n) n = s->top_k;
    double cum = 0;
    int keep = n;
    for (int i = 0; i < n; i++) { cum += c[i].p; if (s->top_p < 1 && cum >= s->top_p) { keep = i + 1; break; } }
    float at = u * (float)cum, acc = 0;
    for (int i = 0; i < keep; i++) { acc += c[i].p; if (at < acc) return c[i].id; }
    return c[keep - 1].id;
}

void sampler_pick(sampler *s, int64_t req, const float *logits, int vocab, int n_top, float *work, sample_result *r) {
    trace_where w = trace_at(L_OPS, DIR_UP, req, NO_STEP);
    trace_begin(w, "sample", TRACE_ARGS(TA_DBL("temperature", s->temperature), TA_DBL("top_p", s->top_p),
                                        TA_INT("top_k", s->top_k), TA_INT("vocab", vocab), TA_DBL("bytes", 4.0 * vocab)));
    /* log_softmax of the raw logits */
    float m, lse = k_logsumexp(logits, vocab, &m);

    if (n_top > MAX_TOP_LOGPROBS) n_top = MAX_TOP_LOGPROBS;
    if (n_top > vocab) n_top = vocab;
    r->n_top = n_top;
    for (int j = 0; j < n_top; j++) r->top_id[j] = -1;
    for (int i = 0; n_top > 0 && i < vocab; i++) {   /* insertion into a short sorted list */
        int j = n_top;
        while (j > 0 && (r->top_id[j - 1] < 0 || logits[i] > logits[r->top_id[j - 1]])) j--;
        if (j >= n_top) continue;
        for (int k = n_top - 1; k > j; k--) r->top_id[k] = r->top_id[k - 1];
        r->top_id[j] = i;
    }
    for (int j = 0; j < n_top; j++) r->top_logprob[j] = logits[r->top_id[j]] - lse;

    int id = s->temperature > 0 ? draw(s, logits, vocab, m, work) : -1;
    if (id < 0) id = greedy(logits, vocab, m);   /* temperature 0, or nothing to draw from */
    r->id = id;
    r->logprob = logits[id] - lse;
    trace_end(w, TRACE_ARGS(TA_INT("id", id), TA_DBL("logprob", r->logprob)));
}
