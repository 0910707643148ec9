/*
 * job.h -- one API request on its way through the server: the bridge
 * between the HTTP connection's thread and the engine thread.
 *
 * The engine thread appends each token (on_token): its logprobs, its text
 * (detokenized incrementally, so a multi-byte character is never split),
 * and cuts the text at a stop string. The connection's side takes what is
 * new and safe to send. Both hold a reference; the last one frees it.
 *
 * The HTTP threads are a small pool that serves every connection (server.c),
 * so they never wait for the engine: a connection with nothing to send is
 * suspended (MHD_suspend_connection), and the engine resumes it when there
 * is news: a token for a stream, the end for a whole response.
 */
#ifndef HIPATH_JOB_H
#define HIPATH_JOB_H

#include "layers/scheduler/scheduler.h"
#include "layers/scheduler/openai.h"
#include <sys/types.h>

struct MHD_Connection;

typedef struct {
    request r;                   /* what the engine sees */
    api_request q;               /* the parsed body */
    api_reply a;
    int *prompt;
    int stop_ids[24], n_stop_ids; /* end-of-turn ids: never part of the text */
    pthread_mutex_t mu;
    int refs;                    /* the connection and the engine (and the keep-alive list) */
    int done;                    /* the engine let go: r.finish is set */
    int released;                /* the connection let go */
    /* The connection, and whether it is suspended until there is news. */
    struct MHD_Connection *conn;
    int fd;                      /* its socket: a hang-up is seen there while suspended */
    int suspended, keepalive_due;
    double suspended_at;         /* on the host's monotonic clock */
    void *next_stream;           /* the server's keep-alive list */
    /* Written by the engine thread, under mu. */
    text_decoder *dec;           /* ids to text, incrementally */
    char *text;                  /* the reply so far, NUL-terminated, cut at a stop string */
    size_t len, cap;
    sample_result *toks;         /* content tokens, for logprobs */
    int *tok_end;                /* where each one's text ends in text[] */
    trace_stamp *tok_at;         /* the engine's clock when each one was ready */
    trace_stamp done_at;         /* ... when the request left the engine */
    int n_toks, cap_toks;
    int stopped;                 /* a stop string matched */
    /* The connection's side. */
    size_t sent;                 /* text bytes already sent */
    int toks_sent;
    int first, ended;            /* SSE: role chunk pending; [DONE] written */
    char *out;                   /* SSE bytes not yet handed to the socket */
    size_t out_len, out_off, out_cap;
} job;

/* A job for a parsed request (q is taken) on connection c; refs = 1 (the connection). */
job *job_new(api_request *q, const text_codec *text, const char *model, int64_t id, struct MHD_Connection *c);
/* Hand it to the engine (the engine takes a reference). SUBMIT_* code. */
int  job_submit(job *j, engine *e, char *err, int errlen);
/* The connection is done with it: cancel it if still running, drop the reference. */
void job_release(job *j);
/* Another reference (the keep-alive list's), and its drop. */
void job_keep(job *j);
void job_unref(job *j);

/* Suspend the connection until there is news (mu held): for a stream a
 * token or the end, else the end. */
void job_suspend(job *j);
/* A stream suspended for `after` seconds is resumed with keepalive_due set.
 * 0 once the connection has let the job go (drop it from the list). */
int  job_keepalive(job *j, double now, double after);

/* What the connection may send now: text[sent..end) and toks[toks_sent..n_toks),
 * one token's text at a time (so a stream has as many events however the
 * threads run), and the engine's clock when it was ready. Call with mu
 * held. There is news when end > sent, or done. */
typedef struct { size_t end; int n_toks, done; trace_stamp at; } job_news;
job_news job_news_now(const job *j);
/* The finish reason as the API reports it. */
const char *job_finish(const job *j);

/* The SSE body of a streaming response (MHD content reader) and its free. */
ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max);
void sse_free(void *cls);

#endif
