/*
 * scheduler.h -- layer 6: the engine (engine.c: the model, the paged KV
 * cache and the step buffers; the queue's door; the step) and the batch
 * policy that composes each step (scheduler.c).
 *
 * Requests wait in a queue. Each engine step runs one token of every
 * running request (decode) plus the whole prompt of each newly admitted
 * one (prefill), stacked into one forward() pass, so the weights are read
 * once per step however many requests share it (continuous batching).
 * Requests join and leave between steps. KV blocks are taken as sequences
 * grow and returned when they end; a request is admitted only when the
 * blocks it may still need fit beside those promised to running ones.
 */
#ifndef HIPATH_SCHEDULER_H
#define HIPATH_SCHEDULER_H

#include "layers/scheduler/text.h"
#include "trace/trace.h"
#include "layers/tensor/forward.h"
#include "layers/ops/sample.h"
#include "layers/scheduler/metrics.h"
#include <pthread.h>
#include <stdatomic.h>

typedef struct request request;
/* Called on the engine thread for each sampled token (the stop token too);
 * return non-zero to finish the request now with reason "stop". */
typedef int (*token_fn)(request *r, const sample_result *s, void *user);
/* Called on the engine thread once, when the request leaves the engine
 * (r->finish is set). After it the engine never touches r again. */
typedef void (*done_fn)(request *r, void *user);
/* Called on the engine thread (under the engine's lock) before each step
 * the request would take part in, admission included: non-zero when its
 * client has gone, and the request is cancelled then. May be NULL. */
typedef int (*gone_fn)(request *r, void *user);

struct request {
    int64_t id;
    const int *prompt;
    int n_prompt;
    int max_tokens;
    sampler samp;
    int top_logprobs;
    int n_stop;                  /* stop ids (EOS, end of turn) */
    const int *stop_ids;
    const int *forced;           /* teacher forcing: the reply's ids, emitted whatever is sampled */
    int n_forced;
    token_fn on_token;
    done_fn on_done;
    gone_fn client_gone;
    void *user;
    double t_arrive;             /* when the request reached the server (0: at submit) */
    trace_stamp arrive;          /* the submitter's clock at submit: the engine is not before it */
    atomic_int cancel;           /* any thread: the client went away */
    /* results */
    int n_out;
    const char *finish;          /* NULL while in the engine; "stop", "length", "cancelled", "error" */
    double prefill_s, decode_s;  /* admission to first token, first token to finish */
    /* the scheduler's */
    kv_seq kv;                   /* block table */
    int last;                    /* last sampled token: the next step's input */
    int worst_blocks;            /* blocks for prompt + max_tokens, promised at admission */
    double t_admit, t_token;
    request *next;               /* waiting-queue link */
};

typedef struct {
    const model *m;
    kv_cache kv;
    forward_state fs;
    int max_batch;               /* sequences per step */
    int max_step_tokens;         /* new tokens per step, prefill and decode together */
    float *logits, *work;        /* [max_batch][vocab], sampler scratch */
    int64_t step;                /* engine steps so far */
    /* Shared with the submitting threads, under mu. */
    pthread_mutex_t mu;
    pthread_cond_t wake;
    request *wait_head, *wait_tail;
    int n_waiting;
    request **running;           /* [max_batch] */
    int n_running;
    int promised;                /* KV blocks promised to running requests */
    int quit, started;
    pthread_t thread;
    engine_metrics met;
} engine;

enum { SUBMIT_OK = 0, SUBMIT_INVALID = -1, SUBMIT_NO_ROOM = -2, SUBMIT_CLOSED = -3 };

/* kv_tokens: KV-cache capacity in tokens (rounded up to whole blocks). */
int  engine_init(engine *e, const model *m, int max_step_tokens, int max_batch, int kv_tokens,
                 char *err, int errlen);
void engine_free(engine *e);
/* Queue a request (any thread). SUBMIT_OK, or a SUBMIT_* code with a reason:
 * INVALID (bad prompt or length), NO_ROOM (can never fit the KV cache),
 * CLOSED (the engine is stopping). */
int  engine_submit(engine *e, request *r, char *err, int errlen);
/* One engine step on the calling thread. Returns the requests still in the
 * engine (running and waiting). */
int  engine_step(engine *e);
/* Run steps on a thread of the engine's own until engine_stop(), which
 * finishes every request still inside as "cancelled". */
int  engine_start(engine *e);
void engine_stop(engine *e);
/* Run one request to completion on the calling thread. 0, or -1 with a reason. */
int  engine_generate(engine *e, request *r, char *err, int errlen);
/* The ids that end a reply: the model config's EOS ids, then the
 * tokenizer's end-of-turn tokens (text may be NULL). Returns how many were
 * written, at most cap. */
int  engine_stop_ids(const model *m, const text_codec *text, int *ids, int cap);
/* The engine's counters and gauges as Prometheus text (metrics.c). */
void metrics_print(engine *e, FILE *f);

/* The batch policy (scheduler.c), called by engine_step with e->mu held.
 * sched_compose: the next step's batch, running[0..n_running): the
 * running requests grown by a token, then waiting ones admitted while
 * they fit; returns the step's tokens. sched_retire: r leaves (its blocks
 * back), onto the gone list; sched_compact drops the finished from
 * running[]; sched_hand_back tells their submitters (lock dropped). */
int  sched_compose(engine *e, request **gone);
void sched_retire(engine *e, request *r, const char *finish, request **gone);
void sched_compact(engine *e);
void sched_hand_back(request *gone);
/* Whether id is one of ids[0..n). */
static inline int is_stop_id(const int *ids, int n, int id) {
    for (int i = 0; i < n; i++)
        if (ids[i] == id) return 1;
    return 0;
}

#endif
