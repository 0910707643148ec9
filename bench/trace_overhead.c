/*
 * trace_overhead.c -- what tracing costs the generation it traces: the same
 * greedy generation, in one process, alternately untraced and fully traced
 * (SQLite + Perfetto, every op and every kernel launch), many times.
 *
 *   make bench && build/bench/trace_overhead [MODEL_DIR [DEVICE [TOKENS [PAIRS]]]]
 *   (defaults: models/tiny-hi sim:w7900 32 100; bench/trace_overhead.sh runs it)
 *
 * Why one process and many pairs: on a shared or virtual machine a
 * millisecond-long run varies by tens of percent from one process to the
 * next (page faults, thread start, the host's other tenants), far more than
 * the few percent being measured. Here a few generations warm up, and each
 * traced run sits next to an untraced one (in alternating order); the
 * overhead is the median of the pairs' time ratios, with a 95% confidence
 * interval from the ranks around it (the host's hiccups, a few runs taking
 * twice as long, would swamp a mean). The files are written at
 * trace_close, after the timed generation: that time is reported apart, as
 * events written per second.
 *
 * Each run loads the model and then generates, as `hipath run` and
 * `generate` do (after opening the trace, when tracing), so a traced
 * generation does not start in the caches trace_open has just stirred: in
 * a real run the model load comes in between.
 *
 * And each run starts GAP_S after the generation before it ended, traced
 * or not (a traced run's trace_open counts toward it; its trace_close
 * alone takes longer): on this VM a generation started right after another
 * runs faster, with no trace at all a busy wait of 1 ms before it cost
 * +1.0%, of 3 ms +2.3%, of 10 ms +2.7%. Back to back, the untraced runs
 * would have that warmth and the traced ones (trace_open in between) less
 * of it; a one-shot `hipath run` has none.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kernels/backend.h"
#include "kernels/cpu/kernels.h"
#include "layers/scheduler/scheduler.h"
#include "layers/tokenizer/tokenizer.h"
#include "trace/trace.h"

static double clock_s(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}
static double now_s(void) { return clock_s(CLOCK_MONOTONIC); }

static void die(const char *what, const char *err) {
    fprintf(stderr, "trace_overhead: %s: %s\n", what, err);
    exit(1);
}

typedef struct { const char *dir; model m; int ids[512], n_ids, tokens; } job;

/* The generating thread's CPU time over the last generation: on a busy
 * machine it leaves out the time spent waiting for a core, which the wall
 * clock counts and tracing does not cause. The recording is this thread's;
 * OpenMP's workers and the trace's writer (which maps ring pages ahead at
 * idle priority) are left out. */
static double last_cpu_s;

#define GAP_S 0.020
static double last_end;   /* when the last generation ended */

/* One generation with the model loaded just before it, as `hipath run` and
 * `generate` do (after opening the trace, when they trace): its host time. */
static double generate(job *j) {
    char err[256];
    engine e;
    while (now_s() - last_end < GAP_S) {}   /* busy, as a model load would be */
    if (model_load(&j->m, j->dir, err, sizeof err)) die(j->dir, err);
    if (engine_init(&e, &j->m, j->n_ids, 1, j->n_ids + j->tokens, err, sizeof err)) die("engine", err);
    request r = { .id = 1, .prompt = j->ids, .n_prompt = j->n_ids, .max_tokens = j->tokens,
                  .samp = { .temperature = 0, .top_p = 1 } };
    double t0 = now_s(), c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
    if (engine_generate(&e, &r, err, sizeof err)) die("generate", err);
    double s = now_s() - t0;
    last_cpu_s = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
    last_end = now_s();
    engine_free(&e);
    model_free(&j->m);
    return s;
}

static const char *DB = "/tmp/hipath-trace-overhead.db", *PF = "/tmp/hipath-trace-overhead.pftrace";

static void remove_files(void) {
    const char *f[] = { DB, "/tmp/hipath-trace-overhead.db-wal", "/tmp/hipath-trace-overhead.db-shm", PF };
    for (int i = 0; i < 4; i++) unlink(f[i]);
}

/* A traced generation: its host time; *events and *close_s what it wrote. */
static double traced(job *j, const char *device, double *events, double *close_s) {
    char err[256];
    remove_files();
    const rt_device *d = rt_device_now();
    trace_run_info info = { .db_path = DB, .perfetto_path = PF, .command = "trace_overhead",
                            .model = "bench", .device = device,
                            .clock_domain = d->driver->clock_domain };
    if (trace_open(&info, err, sizeof err)) die("trace_open", err);
    double s = generate(j);
    *events = (double)trace_get_stats().events;
    double t0 = now_s();
    if (trace_close(err, sizeof err)) die("trace_close", err);
    *close_s = now_s() - t0;
    return s;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static double median(double *v, int n) {
    qsort(v, n, sizeof *v, by_value);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv) {
    cpu_threads_wait(argv);   /* OpenMP waits as in build/hipath */
    const char *dir = argc > 1 ? argv[1] : "models/tiny-hi", *device = argc > 2 ? argv[2] : "sim:w7900";
    job j = { .dir = dir, .tokens = argc > 3 ? atoi(argv[3]) : 32 };
    int pairs = argc > 4 ? atoi(argv[4]) : 100;
    char err[512];
    if (j.tokens < 1 || pairs < 2) die("usage", "trace_overhead [MODEL_DIR [DEVICE [TOKENS >= 1 [PAIRS >= 2]]]]");
    if (backend_open(device, err, sizeof err)) die(device, err);
    if (model_load(&j.m, dir, err, sizeof err)) die(dir, err);
    tokenizer *tok = j.m.tokenizer_path ? tokenizer_load(j.m.tokenizer_path, err, sizeof err) : NULL;
    if (tok) {
        chat_message msg = { "user", "What is a token?" };
        char *prompt = tokenizer_apply_chat(tok, &msg, 1);
        j.n_ids = tokenizer_encode(tok, prompt, strlen(prompt), j.ids, 512, err, sizeof err);
        free(prompt);
        if (j.n_ids < 1 || j.n_ids > 512) die("tokenize", err);
    } else {
        for (j.n_ids = 0; j.n_ids < 8; j.n_ids++) j.ids[j.n_ids] = j.n_ids + 1;
    }
    if (j.n_ids + j.tokens > j.m.cfg.max_seq_len) die("usage", "prompt + TOKENS exceeds the context length");
    model_free(&j.m);

    double ev = 0, cl = 0;
    for (int i = 0; i < 3; i++) { generate(&j); traced(&j, device, &ev, &cl); }   /* warm up */
    double *off = malloc(pairs * sizeof *off), *on = malloc(pairs * sizeof *on);
    double *ratio = malloc(pairs * sizeof *ratio), *wps = malloc(pairs * sizeof *wps), *cpu = malloc(pairs * sizeof *cpu);
    for (int i = 0; i < pairs; i++) {
        double c_on, c_off;
        if (i % 2) { on[i] = traced(&j, device, &ev, &cl); c_on = last_cpu_s; off[i] = generate(&j); c_off = last_cpu_s; }
        else       { off[i] = generate(&j); c_off = last_cpu_s; on[i] = traced(&j, device, &ev, &cl); c_on = last_cpu_s; }
        ratio[i] = on[i] / off[i];
        cpu[i] = c_on / c_off;
        wps[i] = ev / cl;
    }
    double mo = median(off, pairs), mn = median(on, pairs), mr = median(ratio, pairs);  /* sorts ratio */
    int k = (int)floor(pairs / 2.0 - 0.98 * sqrt(pairs));   /* ranks of the median's 95% interval */
    if (k < 0) k = 0;
    printf("%s on %s, %d tokens, %d pairs %.0f ms apart: generation untraced %.2f ms, traced %.2f ms (medians);"
           " overhead %+.1f%% (median of paired ratios; 95%% interval %+.1f%% to %+.1f%%);"
           " its thread's CPU time %+.1f%% (median of paired ratios);"
           " %.0f events per traced run, %.0f per ms of generation; written at close: %.0f events/s\n",
           dir, device, j.tokens, pairs, GAP_S * 1e3, mo * 1e3, mn * 1e3, 100 * (mr - 1),
           100 * (ratio[k] - 1), 100 * (ratio[pairs - 1 - k] - 1), 100 * (median(cpu, pairs) - 1), ev, ev / (mo * 1e3),
           median(wps, pairs));
    remove_files();
    free(off); free(on); free(ratio); free(wps); free(cpu);
    if (tok) tokenizer_free(tok);
    backend_close();
    return 0;
}
