/*
 * sample.h -- layer 4: pick the next token from the logits.
 * Greedy at temperature 0; otherwise softmax(logits / T), keep the top-k,
 * keep the smallest set whose probability reaches top-p, draw with a
 * seeded generator so a seed reproduces a run. Logprobs are those of the
 * model's own distribution (log_softmax of the raw logits), as OpenAI's
 * `logprobs` reports them.
 */
#ifndef HIPATH_SAMPLE_H
#define HIPATH_SAMPLE_H

#include <stdint.h>

#define MAX_TOP_LOGPROBS 20

typedef struct {
    float temperature;   /* 0: greedy */
    float top_p;         /* 1: off */
    int top_k;           /* 0: off */
    uint64_t rng;        /* state; seed with sampler_seed */
} sampler;

typedef struct {
    int id;
    float logprob;
    int n_top;
    int top_id[MAX_TOP_LOGPROBS];
    float top_logprob[MAX_TOP_LOGPROBS];
} sample_result;

void sampler_seed(sampler *s, uint64_t seed);
/* Choose a token for request req; fill r (with n_top alternatives,
 * 0..MAX_TOP_LOGPROBS). work is scratch of 2*vocab floats. The trace's
 * "sample" event names req (-1: none): the token it holds is that
 * request's, which only its sender may read (docs/security.md). */
void sampler_pick(sampler *s, int64_t req, const float *logits, int vocab, int n_top, float *work, sample_result *r);

#endif
