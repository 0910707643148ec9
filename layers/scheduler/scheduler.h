/*
 * scheduler.h -- layer 6: the engine (engine.c: the model, the paged KV
 * cache and the step buffers; the queue's door; the step) and the batch
 * policy that composes each step (scheduler.c), as vLLM V1 schedules.
 *
 * Requests wait in a queue. Each engine step computes some tokens of each
 * request it holds: one for a request that is decoding, the next chunk of
 * a prompt being prefilled (chunked prefill, within a token budget a step
 * may compute), stacked into one forward() pass, so the weights are read
 * once per step however many requests share it (continuous batching).
 * Requests join and leave between steps. KV blocks are taken as sequences
 * grow: a request is admitted when the blocks for what it computes now
 * fit (optimistic admission); when a running one needs a block and none
 * is free, the most recently admitted is preempted (its blocks freed, its
 * tokens kept, to be computed again when it is back at the queue's head).
 * Full blocks are kept by their prefix (blocks.h): a prompt that starts
 * as an earlier one did takes that one's K and V instead of computing them.
 */
#ifndef HIPATH_SCHEDULER_H
#define HIPATH_SCHEDULER_H

#include "layers/scheduler/text.h"
#include "trace/trace.h"
#include "layers/tensor/forward.h"
#include "layers/ops/sample.h"
#include "layers/scheduler/metrics.h"
#include "layers/scheduler/blocks.h"
#include "layers/runtime/runtime.h"
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
    int unsampled;               /* with forced: no sampler run (nothing reads its draw or logprobs: hipath replay) */
    token_fn on_token;
    done_fn on_done;
    gone_fn client_gone;
    void *user;
    double t_arrive;             /* when the request reached the server (0: at submit) */
    uint64_t cache_salt;         /* prompts of another salt never share its cached blocks (0: the common one) */
    trace_stamp arrive;          /* the submitter's clock at submit: the engine is not before it */
    atomic_int cancel;           /* any thread: the client went away */
    /* results */
    int n_out;
    const char *finish;          /* NULL while in the engine; "stop", "length", "cancelled", "error" */
    double prefill_s, decode_s;  /* admission to first token, first token to finish */
    int n_cached;                /* prompt tokens the prefix cache gave at first admission */
    int n_preempted;             /* times it was preempted */
    /* the scheduler's */
    int *ids, n_ids;             /* the sequence so far: the prompt, then each sampled token */
    kv_seq kv;                   /* block table; kv.len of the ids have their K and V stored */
    int chunk;                   /* ids this step computes (0: not in this step) */
    int worst_blocks;            /* blocks for prompt + max_tokens */
    int seated;                  /* in running[], its worst case counted in promised */
    int in_flight;               /* batches it is in whose tokens are not back (pipeline parallelism) */
    double t_admit, t_token;     /* first admission; last token */
    request *next;               /* waiting-queue link */
};

/* What the engine is given (zero: the default). */
typedef struct {
    int max_num_batched_tokens;  /* ids a step may compute, prefill and decode together */
    int max_num_seqs;            /* requests a step may hold */
    int kv_tokens;               /* the KV pool, in tokens (rounded up to whole blocks) */
    int max_model_len;           /* prompt + completion of one request (0: the model's context) */
    int no_chunked_prefill;      /* a prompt is prefilled whole, in one step */
    int no_prefix_caching;
    int reserve_worst_case;      /* admit only when prompt + max_tokens fit beside those promised:
                                    nothing is ever preempted (hipath's scheduler before optimistic admission) */
    int replica;                 /* --dp: which of the device's replicas (vLLM's data_parallel_rank) runs it */
} engine_opts;

/* A step's batch, as vLLM's SchedulerOutput with its model output: the
 * requests, their sequences for forward(), their logits' rows, and, in
 * flight on a pipeline, the event its logits are waited for by. */
typedef struct {
    request **batch;             /* [max_num_seqs] */
    seq_step *seqs;
    const char **fin;            /* each one's finish, once sampled (NULL: goes on) */
    float *logits;               /* [max_num_seqs][vocab] */
    int n, tokens, n_prefill, prefill_tokens, n_sampled, failed;
    int64_t step;
    uint64_t device_ns;          /* the forward's modeled device time (0 on a measured device) */
    rt_event done;
} scheduler_output;

typedef struct {
    const model *m;
    engine_opts o;
    kv_cache kv;
    block_manager bm;            /* who holds which block, and the prefix cache */
    int *hit;                    /* a prefix-cache lookup's blocks, [kv.n_blocks] */
    forward_state fs;
    float *logits, *work;        /* [batch_queue_size][max_num_seqs][vocab], sampler scratch */
    /* The batches in flight, oldest first from queue_head (vLLM's batch
     * queue): as many as the pipeline's stages (max_concurrent_batches). */
    scheduler_output *batch_queue;
    int batch_queue_size, queue_head, n_queued;
    int64_t step;                /* engine steps so far */
    /* Shared with the submitting threads, under mu. */
    pthread_mutex_t mu;
    pthread_cond_t wake;
    request *wait_head, *wait_tail;
    int n_waiting;
    request **running;           /* [max_num_seqs], in the order they were admitted */
    int n_running;
    int promised;                /* blocks of running requests' worst cases */
    int quit, started;
    pthread_t thread;
    engine_metrics met;
    /* The trace's names for its thread and counters: the plain ones with one
     * replica, "engine R/..." with more (kept by pointer: a table made once). */
    const char *thread_name, *running_name, *waiting_name, *kv_name, *tokens_name;
} engine;

enum { SUBMIT_OK = 0, SUBMIT_INVALID = -1, SUBMIT_NO_ROOM = -2, SUBMIT_CLOSED = -3 };

/* 0, or -1 with a one-line reason (a budget too small for the context
 * without chunked prefill, no memory). */
int  engine_init(engine *e, const model *m, const engine_opts *o, char *err, int errlen);
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
/* The counters and gauges of n engines (--dp replicas) as Prometheus text,
 * summed; with n > 1 each replica's load too, and their imbalance (metrics.c). */
void metrics_print(engine *e, int n, FILE *f);
/* Replica r's load: its running and waiting requests, and the tokens its
 * steps computed (under its lock). */
void engine_load(engine *e, int *running, int *waiting, uint64_t *tokens);

/* The batch policy (scheduler.c), called by engine_step with e->mu held.
 * sched_compose: the next step: each request of running[0..n_running)
 * with r->chunk > 0 computes that many ids (running ones first, then
 * waiting ones admitted); returns the step's ids. sched_retire: r leaves
 * (its blocks back), onto the gone list; sched_compact drops the finished
 * from running[]; sched_hand_back tells their submitters (lock dropped). */
int  sched_compose(engine *e, request **gone);
void sched_retire(engine *e, request *r, const char *finish, request **gone);
void sched_compact(engine *e);
void sched_hand_back(request *gone);
/* Whether r's next step is a decode: one id to compute, the last it
 * sampled (a prompt's last id, even a one-id prompt, is its prefill's). */
static inline int is_decoding(const request *r) { return r->n_out > 0 && r->n_ids - r->kv.len == 1; }
/* Whether id is one of ids[0..n). */
static inline int is_stop_id(const int *ids, int n, int id) {
    for (int i = 0; i < n; i++)
        if (ids[i] == id) return 1;
    return 0;
}

#endif
