/*
 * served.h -- layer 6: what a server serves, made ready before it listens:
 * the model (layer 5), its tokenizer (layer 7, opened by the opener the
 * caller hands in), the KV pool and the context sized to the device, the
 * teacher-forced reply, and the engine running on them. server.c is the
 * HTTP around it: it hands each parsed request here to be tokenized and
 * checked (served_prepare), then to the engine (job.c).
 */
#ifndef HIPATH_SERVED_H
#define HIPATH_SERVED_H

#include "layers/scheduler/job.h"
#include "layers/scheduler/server.h"

/* Data parallelism (--dp N): N engine replicas, each its own GPUs and KV
 * pool, behind one server; a load balancer gives each request to one, as
 * SGLang's --load-balance-method names them: in turn (round_robin), or
 * the least loaded, scored as vLLM's DP load balancer scores an engine,
 * 4 x waiting + running (shortest_queue), the lowest replica on a tie. */
enum { DP_LB_ROUND_ROBIN, DP_LB_SHORTEST_QUEUE };
extern const char *const DP_LB_NAME[2];   /* "round_robin", "shortest_queue" */

typedef struct {
    model m;
    text_codec text;               /* filled by server_opts.open_text (layers/tokenizer/open.c) */
    engine *e;                     /* [dp] */
    int dp, dp_lb;
    atomic_uint next;              /* round_robin's next replica */
    char name[256];                /* what clients put in "model" */
    int max_model_len;
    int split_special_tokens;      /* the default of the request field of that name */
    int stop_ids[24], n_stop_ids;  /* the model's and the tokenizer's end-of-turn ids */
    int *forced, n_forced;         /* --reply: its ids, then the end of the turn (teacher forcing) */
} served;

/* Load, size and start: the engine thread runs when it returns 0; -1 with
 * a one-line reason (a line on stderr says what the KV pool got). */
int  served_open(served *sv, const server_opts *o, char *err, int errlen);
/* Every replica's engine stopped (its requests finished "cancelled"). */
void served_stop(served *sv);
/* After served_stop (server_stop): frees everything. */
void served_close(served *sv);
/* The replica that takes the next request (the load balancer; any thread). */
engine *served_engine(served *sv);
/* The request's prompt through the chat template and the tokenizer (layer
 * 7), the length checks against max_model_len and the admission's caps
 * (a workshop's), then the engine's request in j. 0, or -1 with e made. */
int  served_prepare(const served *sv, job *j, const server_admission *a, api_error *e);
/* The name a model is served as: path's last part, without a trailing
 * slash and without .config.json or .json (an analytic model's config). */
const char *served_name(const char *path, char *buf, int cap);

#endif
