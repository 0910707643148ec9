/*
 * replay.c -- a real engine's serving run replayed on the analytic device
 * (replay.h).
 */
#include "labs/replay.h"
#include "labs/bounds.h"
#include "layers/runtime/runtime.h"
#include "layers/common/kv.h"
#include "layers/scheduler/arrivals.h"
#include "stack/stack.h"
#include "trace/trace.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const REPLAY_METRIC[REPLAY_METRICS] = { "ttft_ms", "tpot_ms", "latency_ms" };
const char *const REPLAY_STAT[REPLAY_STATS] = { "mean", "median", "p90", "p95", "p99" };

/* vLLM's default share of a GPU's memory for weights, activations and KV. */
static const double GPU_MEMORY_UTILIZATION = 0.9;
enum { WORD = 5 };   /* the id every forced reply token is: what is computed, not which */

static int number(const cJSON *o, const char *key, double *v) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(x)) return -1;
    *v = x->valuedouble;
    return 0;
}

int replay_load(replay *r, const char *path) {
    static const char *const NEED[] = { "input_toks", "output_toks", "queued_ts", "first_token_ts", "last_token_ts" };
    *r = (replay){ 0 };
    FILE *f = fopen(path, "r");
    if (!f) return stack_fail("replay: %s: cannot open", path);
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0, rc = 0, room = 0;
    while (!rc && getline(&line, &cap, f) > 0) {
        lineno++;
        if (strspn(line, " \t\r\n") == strlen(line)) continue;
        cJSON *o = cJSON_Parse(line);
        double v[5];
        int k = 0;
        while (o && cJSON_IsObject(o) && k < 5 && !number(o, NEED[k], &v[k])) k++;
        if (!o || !cJSON_IsObject(o)) rc = stack_fail("replay: %s:%d: not a JSON object", path, lineno);
        else if (k < 5) rc = stack_fail("replay: %s:%d: no number '%s'", path, lineno, NEED[k]);
        else if (v[0] < 1 || v[1] < 1 || v[0] != floor(v[0]) || v[1] != floor(v[1]) || v[0] > 1e7 || v[1] > 1e7)
            rc = stack_fail("replay: %s:%d: input_toks and output_toks must be whole numbers from 1", path, lineno);
        else if (!(v[2] <= v[3] && v[3] <= v[4]))
            rc = stack_fail("replay: %s:%d: needs queued_ts <= first_token_ts <= last_token_ts", path, lineno);
        else if (r->n && v[2] < r->req[r->n - 1].queued)
            rc = stack_fail("replay: %s:%d: queued_ts before the line above's (requests in the order they came)", path, lineno);
        else {
            if (r->n == room) {
                room = room ? 2 * room : 256;
                replay_request *q = realloc(r->req, room * sizeof *q);
                if (!q) rc = stack_fail("replay: out of memory");
                else r->req = q;
            }
            if (!rc) r->req[r->n++] = (replay_request){ .input = (int)v[0], .output = (int)v[1], .queued = v[2], .first = v[3], .last = v[4] };
        }
        cJSON_Delete(o);
    }
    free(line);
    fclose(f);
    if (!rc && !r->n) rc = stack_fail("replay: %s: no requests", path);
    if (rc) replay_free(r);
    return rc;
}

int replay_meta(const char *path, engine_opts *o, int *tp, char *dtype, int cap) {
    FILE *f = fopen(path, "r");
    if (!f) return stack_fail("replay: %s: cannot open", path);
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    for (int c; m && (c = fgetc(f)) != EOF;) fputc(c, m);
    fclose(f);
    if (m) fclose(m);
    cJSON *j = text ? cJSON_Parse(text) : NULL, *kw = cJSON_GetObjectItemCaseSensitive(j, "engine_kwargs");
    free(text);
    int rc = 0;
    double v;
    if (!cJSON_IsObject(kw)) rc = stack_fail("replay: %s: no engine_kwargs object", path);
    if (!rc && !number(kw, "max_num_seqs", &v)) o->max_num_seqs = (int)v;
    if (!rc && !number(kw, "max_num_batched_tokens", &v)) o->max_num_batched_tokens = (int)v;
    if (!rc && !number(kw, "tensor_parallel_size", &v)) *tp = (int)v;
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(kw, "dtype");
    if (!rc && cJSON_IsString(d)) snprintf(dtype, cap, "%s", !strcmp(d->valuestring, "bfloat16") ? "bf16" : !strcmp(d->valuestring, "float16") ? "fp16" : d->valuestring);
    cJSON_Delete(j);
    return rc;
}

int replay_kv_blocks(replay *r, const char *config, const char *profile, const char *dtype) {
    char err[512];
    model_config c;
    gpu_profile g;
    bounds_result b;
    if (model_config_load(&c, config, err, sizeof err) || gpu_profile_load(&g, profile, err, sizeof err)) return stack_fail("replay: %s", err);
    bounds_input in = { dtype, dtype, 1, r->o.max_num_batched_tokens, r->o.max_num_batched_tokens };
    bounds_options opt = { .tp = r->tp };
    if (bounds_compute_with(&c, &g, &in, &opt, &b, err, sizeof err)) return stack_fail("replay: %s", err);
    const bounds_capacity *cap = &b.parallel.per_gpu;
    double left = GPU_MEMORY_UTILIZATION * g.memory_bytes - cap->weights_bytes - cap->workspace_bytes;
    r->weights_gib = cap->weights_bytes / (1 << 30);
    r->workspace_gib = cap->workspace_bytes / (1 << 30);
    r->kv_blocks = (int)fmin(floor(left / b.parallel.kv_bytes_per_token / KV_BLOCK_SIZE), 1 << 30);
    r->kv_derived = 1;
    if (r->kv_blocks < 1) return stack_fail("replay: the weights and activations leave no KV pool on %s", profile);
    return 0;
}

static int by_value(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

double replay_percentile(double *v, int n, double p) {
    if (n < 1) return NAN;
    qsort(v, n, sizeof *v, by_value);
    double h = p / 100 * (n - 1);
    int lo = (int)floor(h);
    return lo + 1 < n ? v[lo] + (h - lo) * (v[lo + 1] - v[lo]) : v[n - 1];
}

/* Each metric of each request, real (which 0) or modeled (1), in ms; NaN
 * where it has none (TPOT of a one-token reply). */
static double metric(const replay_request *q, int m, int which) {
    double first = which ? q->m_first : q->first - q->queued, last = which ? q->m_last : q->last - q->queued;
    if (m == REPLAY_TTFT) return 1e3 * first;
    if (m == REPLAY_LATENCY) return 1e3 * last;
    return q->output > 1 ? 1e3 * (last - first) / (q->output - 1) : NAN;
}

void replay_stats(replay *r) {
    double *v = malloc(r->n * sizeof *v);
    for (int m = 0; v && m < REPLAY_METRICS; m++)
        for (int w = 0; w < 2; w++) {
            int k = 0;
            double sum = 0;
            for (int i = 0; i < r->n; i++) { double x = metric(&r->req[i], m, w); if (!isnan(x)) { v[k++] = x; sum += x; } }
            double *s = r->stat[m][w];
            s[REPLAY_MEAN] = k ? sum / k : NAN;
            s[REPLAY_MEDIAN] = replay_percentile(v, k, 50);
            s[REPLAY_P90] = replay_percentile(v, k, 90);
            s[REPLAY_P95] = replay_percentile(v, k, 95);
            s[REPLAY_P99] = replay_percentile(v, k, 99);
        }
    free(v);
}

int replay_run(replay *r, const char *config, const char *profile, const char *dtype, const char *db) {
    char err[512] = "", device[256];
    model md;
    stack st = { .run = -1 };
    snprintf(device, sizeof device, "analytic:%s", profile);
    int total = 0;
    for (int i = 0; i < r->n; i++) total += r->req[i].output;
    request *rq = calloc(r->n, sizeof *rq);
    arrival *a = calloc(r->n, sizeof *a);
    double *times = calloc(total, sizeof *times);
    int **prompts = calloc(r->n, sizeof *prompts);
    if (!rq || !a || !times || !prompts) { free(rq); free(a); free(times); free(prompts); return stack_fail("replay: out of memory"); }
    int longest_out = 0;
    for (int i = 0; i < r->n; i++) if (r->req[i].output > longest_out) longest_out = r->req[i].output;
    int *reply = malloc(longest_out * sizeof *reply);
    for (int k = 0; reply && k < longest_out; k++) reply[k] = WORD;
    int rc = reply ? 0 : stack_fail("replay: out of memory");
    for (int i = 0, at = 0; !rc && i < r->n; i++) {
        const replay_request *q = &r->req[i];
        /* a prompt of its own ids: the recorded run's token ids are not published, so no prefix is shared */
        if (!(prompts[i] = malloc(q->input * sizeof(int)))) { rc = stack_fail("replay: out of memory"); break; }
        for (int k = 0; k < q->input; k++) prompts[i][k] = 20000 + (int)((i * 7919u + k * 104729u) % 100000u);
        rq[i] = (request){ .id = i + 1, .prompt = prompts[i], .n_prompt = q->input, .max_tokens = q->output,
                           .forced = reply, .n_forced = q->output, .unsampled = 1 };
        a[i] = (arrival){ .r = &rq[i], .t_arrive = q->queued - r->req[0].queued, .t_token = times + at };
        at += q->output;
    }
    r->o.kv_tokens = r->kv_blocks * KV_BLOCK_SIZE;
    double t0 = trace_host_seconds();
    rt_gpus(r->tp);
    int opened = !rc && !stack_device(&st, device, err, sizeof err), loaded = 0;
    rt_gpus(1);
    if (!rc && !opened) rc = -1;
    if (!rc && db) {   /* layers 6 and 5 in full; 4-1 muted (500 kernels a step: 600 MB a run) but in the sampled steps */
        char cmd[600];
        snprintf(cmd, sizeof cmd, "hipath replay %s %s x %d --kernel-sample %d", config, device, r->tp, r->kernel_sample);
        if (stack_make_parent(db) || stack_trace(&st, db, NULL, cmd, config, err, sizeof err)) rc = -1;
        trace_mute(1u << L_GPU | 1u << L_RUNTIME | 1u << L_KERNELS | 1u << L_OPS);
    }
    if (!rc) rc = model_load_analytic(&md, config, dtype, dtype, err, sizeof err), loaded = !rc;
    arrivals_stats s = { 0 };
    if (!rc) {
        engine e;
        if (!(rc = engine_init(&e, &md, &r->o, err, sizeof err))) {
            rc = arrivals_run(&e, a, r->n, db ? r->kernel_sample : 0, &s, err, sizeof err);
            engine_free(&e);
        }
    }
    if (rc && err[0]) stack_fail("replay: %s", err);   /* out of memory: said already */
    r->steps = s.steps;
    r->preemptions = (int64_t)s.preemptions;
    r->max_seqs = s.max_seqs;
    for (int i = 0; !rc && i < r->n; i++) {
        replay_request *q = &r->req[i];
        q->m_first = a[i].t_token[0] - a[i].t_arrive;
        q->m_last = a[i].t_token[a[i].n_token - 1] - a[i].t_arrive;
        q->cached = rq[i].n_cached;
        q->preempted = rq[i].n_preempted;
    }
    if (loaded) model_free(&md);
    trace_mute(0);
    char e2[256];
    if (opened && stack_close(&st, e2, sizeof e2) && !rc) rc = stack_fail("replay: %s", e2);
    r->wall_s = trace_host_seconds() - t0;
    for (int i = 0; i < r->n; i++) free(prompts[i]);
    free(prompts); free(rq); free(a); free(times); free(reply);
    if (!rc) replay_stats(r);
    return rc;
}

void replay_free(replay *r) { free(r->req); *r = (replay){ 0 }; }
