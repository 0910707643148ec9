/*
 * engine.h -- layer 6: the engine loop that owns the model, the paged KV
 * cache and the step buffers, and turns a request into tokens:
 * one prefill step over the prompt, then one decode step per token.
 */
#ifndef HIPATH_ENGINE_H
#define HIPATH_ENGINE_H

#include "layers/tensor/forward.h"
#include "layers/ops/sample.h"

typedef struct request request;
/* Called for each generated token; return non-zero to stop (cancel). */
typedef int (*token_fn)(request *r, const sample_result *s, void *user);

struct request {
    int64_t id;
    const int *prompt;
    int n_prompt;
    int max_tokens;
    sampler samp;
    int top_logprobs;
    int n_stop;                  /* stop ids (EOS, end of turn) */
    const int *stop_ids;
    token_fn on_token;
    void *user;
    /* results */
    int n_out;
    const char *finish;          /* "stop", "length", "cancelled" */
    double prefill_s, decode_s;  /* measured wall time */
    kv_seq kv;
};

typedef struct {
    const model *m;
    kv_cache kv;
    forward_state fs;
    float *logits, *work;
    int64_t step;                /* engine steps so far */
} engine;

/* kv_tokens: KV-cache capacity in tokens (rounded up to whole blocks). */
int  engine_init(engine *e, const model *m, int max_tokens_per_step, int max_seqs, int kv_tokens,
                 char *err, int errlen);
void engine_free(engine *e);
/* Run one request to completion. 0, or -1 with a reason. */
int  engine_generate(engine *e, request *r, char *err, int errlen);

#define KV_BLOCK_SIZE 16

#endif
