/*
 * lab9.c -- Lab 9, the scheduler under pressure (lab9-scheduler.md):
 * Llama-3-8B on an analytic H100, requests arriving open-loop on the
 * modeled clock (layers/scheduler/arrivals.h), through the scheduler vLLM
 * V1 runs: (a) the KV pool against how many run at once, worst-case
 * reservation against optimistic admission with preemption; (b) chunked
 * prefill: TTFT and TPOT percentiles of chats among long prompts for
 * budgets 512, 2048, 8192 and none; (c) prefix caching of a shared system
 * prompt; (d) goodput under an SLO as the rate rises. Every figure is the
 * model's (the clock is the device's modeled time, the host's left out),
 * the same on any machine; each request's times go into labN.json's
 * "runs" so that a reader can recompute every percentile.
 */
#include "labs/lab.h"
#include "layers/common/kv.h"
#include "layers/scheduler/arrivals.h"
#include "layers/runtime/runtime.h"
#include <stdlib.h>
#include <string.h>

#define LLAMA3_8B "tests/data/llama-3-8b.config.json"
#define H100 "analytic:h100"
enum { STOP_ID = 2, WORD = 5, BS = KV_BLOCK_SIZE };

/* One request of a workload: its prompt (ids), when it arrives, the reply
 * it will give (teacher-forced: WORD ids, then STOP_ID) and the cap a
 * client asked for. */
typedef struct { int *ids, *reply, n_prompt, n_reply, max_tokens; double t_arrive; } spec;

typedef struct {
    const char *name;   /* the run's label: the rows' reading */
    engine_opts o;
    spec *jobs;
    int n;
    int tokens_kept;    /* each token's time into the JSON (else first and last) */
} workload;

typedef struct {
    arrivals_stats s;
    arrival *a;
    request *r;
    double *times;
} result;

static uint64_t rng = 0x9e3779b97f4a7c15u;
static double uniform(void) {   /* xorshift64*: the same arrivals on any machine */
    rng ^= rng >> 12; rng ^= rng << 25; rng ^= rng >> 27;
    return ((rng * 2685821657736338717u) >> 11) * (1.0 / 9007199254740992.0);
}
/* Poisson arrivals at rate per second: exponential gaps. */
static double next_gap(double rate) { return -log(1 - uniform()) / rate; }

/* A prompt of n ids: the first `shared` the same for every request (a
 * system prompt), the rest the request's own. */
static int *prompt_ids(int n, int shared, int who) {
    int *p = malloc(n * sizeof *p);
    for (int k = 0; p && k < n; k++) p[k] = k < shared ? 1000 + k : 20000 + (int)((who * 7919u + k * 104729u) % 100000u);
    return p;
}

/* A request of P ids (the first `shared` common to all) arriving at t, a reply of n_reply. 0, or -1. */
static int spec_make(spec *j, int P, int shared, int who, int n_reply, int max_tokens, double t) {
    *j = (spec){ .ids = prompt_ids(P, shared, who), .reply = malloc(n_reply * sizeof(int)), .n_prompt = P, .n_reply = n_reply,
                .max_tokens = max_tokens, .t_arrive = t };
    for (int k = 0; j->reply && k < n_reply; k++) j->reply[k] = k == n_reply - 1 ? STOP_ID : WORD;
    return j->ids && j->reply ? 0 : stack_fail("out of memory");
}
static void jobs_free(spec *j, int n) { for (int i = 0; i < n; i++) { free(j[i].ids); free(j[i].reply); } }

static const int STOPS[] = { STOP_ID };

/* w through a fresh engine of md, open loop on the modeled clock. 0, or -1 (the reason printed). */
static int run(const model *md, const workload *w, result *res) {
    char err[512];
    engine e;
    *res = (result){ 0 };
    res->a = calloc(w->n, sizeof *res->a);
    res->r = calloc(w->n, sizeof *res->r);
    int total = 0;
    for (int i = 0; i < w->n; i++) total += w->jobs[i].max_tokens;
    res->times = calloc(total, sizeof *res->times);
    if (!res->a || !res->r || !res->times) return stack_fail("out of memory");
    for (int i = 0, at = 0; i < w->n; i++) {
        const spec *j = &w->jobs[i];
        res->r[i] = (request){ .id = i + 1, .prompt = j->ids, .n_prompt = j->n_prompt, .max_tokens = j->max_tokens,
                               .n_stop = 1, .stop_ids = STOPS, .forced = j->reply, .n_forced = j->n_reply };
        res->a[i] = (arrival){ .r = &res->r[i], .t_arrive = j->t_arrive, .t_token = res->times + at };
        at += j->max_tokens;
    }
    if (engine_init(&e, md, &w->o, err, sizeof err)) return stack_fail("lab 9: %s: %s", w->name, err);
    int rc = arrivals_run(&e, res->a, w->n, 0, &res->s, err, sizeof err) ? stack_fail("lab 9: %s: %s", w->name, err) : 0;
    engine_free(&e);
    return rc;
}

static void result_free(result *r) { free(r->a); free(r->r); free(r->times); }


/* ---- what a run measures: every figure from the arrivals' times ---- */

static int by_value(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
/* The p-th percentile of v[0..n) by nearest rank: the ceil(p n / 100)-th
 * smallest (p 50 of 4 values is the 2nd; p 99 of 44 the 44th). Sorts v. */
static double percentile(double *v, int n, double p) {
    if (n < 1) return NA;
    qsort(v, n, sizeof *v, by_value);
    int k = (int)ceil(p / 100 * n);
    return v[k < 1 ? 0 : k - 1];
}

/* TTFT: arrival to the first token. TPOT: (last token - first) / (tokens - 1),
 * of each request of more than one token (vLLM's benchmark_serving). ITL:
 * the gap between two tokens of a request; the longest is the worst stall. */
typedef struct { double ttft[3], tpot[3], itl_max, end, tokens, good; } figures;
static const double PCT[3] = { 50, 90, 99 };

/* Of a[0..n) (only those whose prompt has `only` ids when only > 0); good:
 * those within TTFT <= slo_ttft and TPOT <= slo_tpot. */
static figures figures_of(const arrival *a, int n, int only, double slo_ttft, double slo_tpot) {
    double *ttft = malloc(n * sizeof *ttft), *tpot = malloc(n * sizeof *tpot);
    figures f = { .itl_max = 0 };
    int nt = 0, np = 0;
    for (int i = 0; ttft && tpot && i < n; i++) {
        const arrival *x = &a[i];
        if (x->t_finish > f.end) f.end = x->t_finish;
        f.tokens += x->n_token;
        if (only && x->r->n_prompt != only) continue;
        double t1 = x->t_token[0] - x->t_arrive, t2 = x->n_token > 1 ? (x->t_token[x->n_token - 1] - x->t_token[0]) / (x->n_token - 1) : 0;
        ttft[nt++] = t1;
        if (x->n_token > 1) tpot[np++] = t2;
        for (int k = 1; k < x->n_token; k++) f.itl_max = fmax(f.itl_max, x->t_token[k] - x->t_token[k - 1]);
        f.good += t1 <= slo_ttft && t2 <= slo_tpot;
    }
    for (int k = 0; k < 3; k++) { f.ttft[k] = ttft ? percentile(ttft, nt, PCT[k]) : NA; f.tpot[k] = tpot ? percentile(tpot, np, PCT[k]) : NA; }
    free(ttft); free(tpot);
    return f;
}

/* The run into labN.json's "runs": its engine options, counters and each
 * request's times (every token's where the workload keeps them). */
static cJSON *run_json(lab *L, const char *part, const workload *w, const result *res) {
    if (!L->runs) L->runs = cJSON_CreateArray();
    cJSON *o = cJSON_CreateObject(), *rs = cJSON_CreateArray();
    cJSON_AddStringToObject(o, "part", part);
    cJSON_AddStringToObject(o, "name", w->name);
    cJSON_AddStringToObject(o, "clock", res->s.modeled ? "modeled" : "measured");
    cJSON_AddNumberToObject(o, "max_num_batched_tokens", w->o.max_num_batched_tokens);
    cJSON_AddNumberToObject(o, "max_num_seqs", w->o.max_num_seqs);
    cJSON_AddNumberToObject(o, "kv_blocks", (w->o.kv_tokens + BS - 1) / BS);
    cJSON_AddNumberToObject(o, "block_size", BS);
    cJSON_AddBoolToObject(o, "chunked_prefill", !w->o.no_chunked_prefill);
    cJSON_AddBoolToObject(o, "prefix_caching", !w->o.no_prefix_caching);
    cJSON_AddBoolToObject(o, "reserve_worst_case", w->o.reserve_worst_case);
    const arrivals_stats *s = &res->s;
    cJSON_AddNumberToObject(o, "steps", (double)s->steps);
    cJSON_AddNumberToObject(o, "seqs", (double)s->seqs);
    cJSON_AddNumberToObject(o, "max_seqs", s->max_seqs);
    cJSON_AddNumberToObject(o, "busy_s", s->busy_s);
    cJSON_AddNumberToObject(o, "preemptions", (double)s->preemptions);
    cJSON_AddNumberToObject(o, "computed_tokens", (double)s->computed_tokens);
    cJSON_AddNumberToObject(o, "prefix_queries", (double)s->prefix_queries);
    cJSON_AddNumberToObject(o, "prefix_hits", (double)s->prefix_hits);
    for (int i = 0; i < w->n; i++) {
        const arrival *x = &res->a[i];
        cJSON *q = cJSON_CreateObject();
        cJSON_AddNumberToObject(q, "prompt", x->r->n_prompt);
        cJSON_AddNumberToObject(q, "max_tokens", x->r->max_tokens);
        cJSON_AddNumberToObject(q, "cached", x->r->n_cached);
        cJSON_AddNumberToObject(q, "preempted", x->r->n_preempted);
        cJSON_AddNumberToObject(q, "arrive", x->t_arrive);
        cJSON_AddNumberToObject(q, "finish", x->t_finish);
        cJSON_AddNumberToObject(q, "tokens", x->n_token);
        cJSON_AddNumberToObject(q, "first", x->t_token[0]);
        cJSON_AddNumberToObject(q, "last", x->t_token[x->n_token - 1]);
        if (w->tokens_kept) cJSON_AddItemToObject(q, "t", cJSON_CreateDoubleArray(x->t_token, x->n_token));
        cJSON_AddItemToArray(rs, q);
    }
    cJSON_AddItemToObject(o, "requests", rs);
    cJSON_AddItemToArray(L->runs, o);
    return o;
}

static engine_opts vllm_opts(int kv_tokens) {
    return (engine_opts){ .max_num_batched_tokens = 8192, .max_num_seqs = 256, .kv_tokens = kv_tokens };
}

/* ---- (a) the KV pool against concurrency ---- */

enum { A_N = 48, A_P = 512, A_REPLY = 128, A_CAP = 1024, A_POOL = 16384 };

static int part_a(lab *L, const model *md, const lab_step *m) {
    spec jobs[A_N];
    for (int i = 0; i < A_N; i++) if (spec_make(&jobs[i], A_P, 0, i, A_REPLY, A_CAP, 0)) return -1;
    int blocks = A_POOL / BS, rc = 0;
    for (int optimistic = 0; optimistic < 2 && !rc; optimistic++) {
        workload w = { optimistic ? "optimistic + preemption" : "reserve worst case", vllm_opts(A_POOL), jobs, A_N, 0 };
        w.o.reserve_worst_case = !optimistic;
        w.o.no_prefix_caching = 1;   /* a preempted request computes all it had again */
        result res;
        if ((rc = run(md, &w, &res))) { result_free(&res); break; }
        run_json(L, "a", &w, &res);
        figures f = figures_of(res.a, A_N, 0, INFINITY, INFINITY);
        const arrivals_stats *s = &res.s;
        L->pt = (lab_point){ "llama-3-8b", H100, "bf16", "bf16", A_N, A_P, A_P + A_REPLY };
        double at_admit = blocks / ceil((double)A_P / BS), at_end = blocks / ceil((double)(A_P + A_REPLY) / BS),
               worst = floor(blocks / ceil((double)(A_P + A_CAP) / BS));
        double pred_max = optimistic ? fmin(floor(at_admit), A_N) : worst, pred_mean = optimistic ? floor(at_end) : worst;
        lab_row(L, "running_max", "requests", pred_max, s->max_seqs, optimistic ? "floor(blocks / ceil(P / 16)): prompts' blocks" : "floor(blocks / ceil((P + max_tokens) / 16))",
                "the most requests in one step (modeled run)", w.name);
        lab_row(L, "running_mean", "requests", pred_mean, (double)s->seqs / s->steps, optimistic ? "floor(blocks / ceil((P + reply) / 16)): replies at their longest" : "floor(blocks / ceil((P + max_tokens) / 16))",
                "requests per step, mean over the steps", w.name);
        lab_row(L, "preemptions", "preemptions", optimistic ? pred_max - floor(at_end) : 0, s->preemptions,
                optimistic ? "running_max - floor(blocks / ceil((P + reply) / 16)): the first wave shrinking to what fits" : "none: every admitted request's worst case is reserved",
                "hipath_num_preemptions_total over the run", w.name);
        double useful = 0;
        for (int i = 0; i < A_N; i++) useful += res.r[i].n_prompt + res.a[i].n_token - 1;
        lab_row(L, "recomputed_tokens", "tokens", optimistic ? (pred_max - floor(at_end)) * (A_P + A_REPLY / 2.0) : 0, s->computed_tokens - useful,
                "predicted preemptions x (P + reply / 2): a victim has computed its prompt and half its reply",
                "ids computed - sum(prompt + tokens - 1)", w.name);
        /* waves of R at once: each a prefill of R prompts in budget-sized steps, then reply - 1 decode steps */
        double R = pred_mean, waves = ceil(A_N / R), ctx = A_P + A_REPLY / 2.0,
               wave = ceil(R * A_P / w.o.max_num_batched_tokens) * lab_t_step(m, w.o.max_num_batched_tokens, R * lab_pairs(0, A_P) / ceil(R * A_P / w.o.max_num_batched_tokens), 0, R)
                    + (A_REPLY - 1) * lab_t_step(m, R, 0, R * ctx, R);
        lab_row(L, "makespan", "s", waves * wave, f.end, "ceil(N / running_mean) waves x (prefill steps + (reply - 1) decode steps): t_step",
                "the last request's finish (modeled)", w.name);
        lab_row(L, "throughput", "tok/s", A_N * A_REPLY / (waves * wave), f.tokens / f.end, "N x reply / makespan", "tokens / makespan (modeled)", w.name);
        result_free(&res);
    }
    jobs_free(jobs, A_N);
    return rc;
}

/* ---- (b) chunked prefill ---- */

enum { B_N = 48, B_P = 256, B_REPLY = 64, B_LONG = 7000, B_LONG_REPLY = 16, B_EVERY = 12, B_POOL = 262144 };
static const double B_RATE = 16;
static const int BUDGETS[] = { 512, 2048, 8192, 0 };

/* The chats decoding at once, by Little's law: chat rate x reply x the
 * decode step at that batch (a few rounds to its fixed point). */
static double chats_decoding(const lab_step *m, double rate) {
    double B = 1;
    for (int i = 0; i < 20; i++) B = rate * B_REPLY * lab_t_step(m, B, 0, B * (B_P + B_REPLY / 2.0), B);
    return B;
}

/* The quantile q (0..1) of a time that is `base` for the share 1 - s of
 * requests, and base + U(0, 1) x extra for the share s that meet a long
 * prompt's prefill (to a degree uniform between none and all of it). */
static double exposed(double q, double s, double base, double extra) {
    return base + extra * fmax(0, (q - (1 - s)) / s);
}

static int part_b(lab *L, const model *md, const lab_step *m) {
    spec jobs[B_N];
    double t = 0;
    rng = 0x9e3779b97f4a7c15u;
    for (int i = 0; i < B_N; i++) {
        t += next_gap(B_RATE);
        int lng = i % B_EVERY == B_EVERY / 2;
        if (spec_make(&jobs[i], lng ? B_LONG : B_P, 0, i, lng ? B_LONG_REPLY : B_REPLY, lng ? B_LONG_REPLY : B_REPLY, t)) return -1;
    }
    double span = t, n_long = B_N / B_EVERY, chat_rate = (B_N - n_long) / span, B = chats_decoding(m, chat_rate),
           t_dec = lab_t_step(m, B, 0, B * (B_P + B_REPLY / 2.0), B), t_own = lab_t_step(m, B_P + B, lab_pairs(0, B_P), B * (B_P + B_REPLY / 2.0), B + 1);
    int rc = 0;
    for (size_t k = 0; k < sizeof BUDGETS / sizeof *BUDGETS && !rc; k++) {
        char name[64];
        int budget = BUDGETS[k];
        if (budget) snprintf(name, sizeof name, "chunked prefill, max_num_batched_tokens %d", budget);
        else snprintf(name, sizeof name, "no chunked prefill");
        workload w = { name, vllm_opts(B_POOL), jobs, B_N, 1 };
        w.o.max_num_batched_tokens = budget ? budget : 8192;
        w.o.no_chunked_prefill = !budget;
        result res;
        if ((rc = run(md, &w, &res))) { result_free(&res); break; }
        run_json(L, "b", &w, &res);
        figures f = figures_of(res.a, B_N, B_P, INFINITY, INFINITY), g = figures_of(res.a, B_N, B_LONG, INFINITY, INFINITY);
        /* the long prompt's prefill: chunks of what the budget leaves after the decodes (decodes first) */
        int chunk = budget ? budget - (int)ceil(B) : B_LONG, steps = 0;
        double t_long = 0, stall = 0;
        for (int from = 0; from < B_LONG; from += chunk, steps++) {
            int to = from + chunk < B_LONG ? from + chunk : B_LONG;
            double ts = lab_t_step(m, to - from + B, lab_pairs(from, to), B * (B_P + B_REPLY / 2.0), B + (to == B_LONG));
            t_long += ts;
            stall = fmax(stall, ts);
        }
        /* the share of chats that arrive during a long prefill (TTFT), or whose reply overlaps one (TPOT) */
        double s = fmin(1, n_long * t_long / span), s_reply = fmin(1, n_long * (t_long + (B_REPLY - 1) * t_dec) / span),
               tpot_max = (fmin(B_REPLY - 1, steps) * t_long / steps + fmax(0, B_REPLY - 1 - steps) * t_dec) / (B_REPLY - 1);
        L->pt = (lab_point){ "llama-3-8b", H100, "bf16", "bf16", budget, B_P, B_P + B_REPLY };
        lab_row(L, "stall_max", "s", stall, f.itl_max, "the step holding the long prompt's last chunk (its whole prompt unchunked): t_step",
                "the longest gap between two tokens of a chat (modeled)", name);
        lab_row(L, "long_ttft_p50", "s", t_long, g.ttft[0], "its chunks' steps, summed: t_step each", "the long prompts' TTFT, median (modeled)", name);
        for (int p = 0; p < 3; p++) {
            char q[32];
            snprintf(q, sizeof q, "ttft_p%.0f", PCT[p]);
            lab_row(L, q, "s", exposed(PCT[p] / 100, s, t_own, t_long), f.ttft[p],
                    "its own prefill step; a share s = longs x their prefill / span waits up to a long prefill", "chats' TTFT, nearest rank (modeled)", name);
            snprintf(q, sizeof q, "tpot_p%.0f", PCT[p]);
            lab_row(L, q, "s", exposed(PCT[p] / 100, s_reply, t_dec, tpot_max - t_dec), f.tpot[p],
                    "the decode step; a share s' = longs x (their prefill + a reply's decode steps) / span shares up to every step of a long prefill",
                    "chats' TPOT, nearest rank (modeled)", name);
        }
        result_free(&res);
    }
    jobs_free(jobs, B_N);
    return rc;
}

/* ---- (c) prefix caching ---- */

enum { C_N = 16, C_SYSTEM = 1000, C_USER = 200, C_REPLY = 32 };
static const double C_RATE = 2;

static int part_c(lab *L, const model *md, const lab_step *m) {
    spec jobs[C_N];
    double t = 0;
    rng = 0x2545f4914f6cdd1du;
    for (int i = 0; i < C_N; i++) { t += next_gap(C_RATE); if (spec_make(&jobs[i], C_SYSTEM + C_USER, C_SYSTEM, i, C_REPLY, C_REPLY, t)) return -1; }
    int rc = 0, P = C_SYSTEM + C_USER, hit = C_SYSTEM / BS * BS;
    for (int on = 0; on < 2 && !rc; on++) {
        workload w = { on ? "prefix caching on" : "prefix caching off", vllm_opts(B_POOL), jobs, C_N, 0 };
        w.o.no_prefix_caching = !on;
        result res;
        if ((rc = run(md, &w, &res))) { result_free(&res); break; }
        run_json(L, "c", &w, &res);
        figures f = figures_of(res.a, C_N, 0, INFINITY, INFINITY);
        L->pt = (lab_point){ "llama-3-8b", H100, "bf16", "bf16", on, P, P };
        int from = on ? hit : 0;
        lab_row(L, "hit_rate", "", on ? (double)(C_N - 1) * hit / (C_N * P) : 0, res.s.prefix_queries ? (double)res.s.prefix_hits / res.s.prefix_queries : 0,
                on ? "(N - 1) x 16 floor(system / 16) / (N x prompt): all but the first find the system prompt's whole blocks" : "off: nothing looked up",
                "prefix_cache_hits / prefix_cache_queries, in tokens", w.name);
        lab_row(L, "ttft_p50", "s", lab_t_step(m, P - from, lab_pairs(from, P), 0, 1), f.ttft[0],
                on ? "t_step of the prompt less its cached blocks (attending to them)" : "t_step of the whole prompt", "TTFT, median (modeled)", w.name);
        result_free(&res);
    }
    jobs_free(jobs, C_N);
    return rc;
}

/* ---- (d) goodput under an SLO ---- */

/* The SLO of MLPerf Inference's interactive scenario (v5.0, Llama-2-70B:
 * p99 TTFT 450 ms, TPOT 40 ms), counted per request as DistServe and
 * vLLM's benchmark_serving --goodput count it. */
enum { D_P = 512, D_REPLY = 32, D_POOL = 467000 };
static const double D_WINDOW = 2, SLO_TTFT = 0.45, SLO_TPOT = 0.040, RATES[] = { 20, 40, 60, 80, 100, 120 };

/* The steady step at rate r: each step holds r t of each kind of work, so
 * t = max((W/beta + launches) / (1 - r a), launches / (1 - r (w_c + a)))
 * (the weights' read or the ids' compute binding); a: a request's
 * attention, KV reads and samples, w_c its ids' compute. INFINITY past
 * saturation. */
static double steady_step(const lab_step *m, double r) {
    double a = lab_pairs(0, D_P) * m->per_pair + D_REPLY * (D_P + D_REPLY / 2.0) * m->per_position + D_REPLY * m->per_sample,
           wc = (D_P + D_REPLY) * m->per_id, mem = 1 - r * a, cmp = 1 - r * (wc + a);
    return mem <= 0 || cmp <= 0 ? INFINITY : fmax((m->weights_s + m->launches_s) / mem, m->launches_s / cmp);
}

static int part_d(lab *L, const model *md, const lab_step *m) {
    int rc = 0;
    double lo = 0, hi = 1000, best = 0;
    for (int i = 0; i < 60; i++) { double mid = (lo + hi) / 2; if (steady_step(m, mid) <= SLO_TPOT) lo = mid; else hi = mid; }
    for (size_t k = 0; k < sizeof RATES / sizeof *RATES && !rc; k++) {
        double rate = RATES[k], t = 0;
        int n = (int)(rate * D_WINDOW);
        spec *jobs = calloc(n, sizeof *jobs);
        if (!jobs) return stack_fail("out of memory");
        rng = 0xd1b54a32d192ed03u + k;
        for (int i = 0; i < n && !rc; i++) { t += next_gap(rate); rc = spec_make(&jobs[i], D_P, 0, i, D_REPLY, D_REPLY, t); }
        char name[64];
        snprintf(name, sizeof name, "%.0f requests/s", rate);
        workload w = { name, vllm_opts(D_POOL), jobs, n, 0 };
        result res = { 0 };
        if (!rc && !(rc = run(md, &w, &res))) {
            cJSON *o = run_json(L, "d", &w, &res);
            cJSON_AddNumberToObject(o, "rate", rate);
            cJSON_AddNumberToObject(o, "slo_ttft_s", SLO_TTFT);
            cJSON_AddNumberToObject(o, "slo_tpot_s", SLO_TPOT);
            figures f = figures_of(res.a, n, 0, SLO_TTFT, SLO_TPOT);
            double ts = steady_step(m, rate), good = f.good / n * rate;
            if (good >= 0.9 * rate) best = rate;
            L->pt = (lab_point){ "llama-3-8b", H100, "bf16", "bf16", (int)rate, D_P, D_P + D_REPLY };
            lab_row(L, "goodput", "req/s", ts <= SLO_TPOT ? rate : 0, good, "the rate while the steady step is within the TPOT SLO, else 0",
                    "rate x the share of requests within both SLOs (modeled)", name);
            lab_row(L, "tpot_p50", "s", isinf(ts) ? NA : ts, f.tpot[0], "the steady step at this rate", "TPOT, nearest rank (modeled)", name);
            lab_row(L, "tpot_p99", "s", isinf(ts) ? NA : ts, f.tpot[2], "the steady step at this rate", "TPOT, nearest rank (modeled)", name);
            lab_row(L, "ttft_p99", "s", isinf(ts) ? NA : 2 * ts, f.ttft[2], "a step's wait and its own prefill step: 2 steady steps", "TTFT, nearest rank (modeled)", name);
            lab_row(L, "running_mean", "requests", isinf(ts) ? NA : rate * D_REPLY * ts, (double)res.s.seqs / res.s.steps, "Little: rate x reply x the steady step",
                    "requests per step, mean", name);
        }
        result_free(&res);
        jobs_free(jobs, n);
        free(jobs);
    }
    L->pt = (lab_point){ "llama-3-8b", H100, "bf16", "bf16", 0, D_P, D_P + D_REPLY };
    lab_row(L, "slo_rate", "req/s", lo, best, "the rate whose steady step is the TPOT SLO (bisection)",
            "the largest swept rate with 90% of its requests within both SLOs (DistServe's attainment)", "");
    return rc;
}

/* ---- the traced sample: every feature in a few dozen steps ---- */

/* Into OUT/lab9.db and .pftrace, for the sheet's SQL and the timeline: a
 * long prompt in chunks of a 512 budget among chats sharing a system
 * prompt, in a pool small enough that one is preempted. The parts run
 * untraced (a trace of thousands of steps takes longer than the lab). */
enum { S_N = 7, S_SYSTEM = 256, S_USER = 64, S_REPLY = 16, S_LONG = 1500, S_POOL = 2048 };

static int sample(lab *L) {
    char err[512];
    model md;
    spec jobs[S_N];
    if (lab_trace_begin(L, H100, LLAMA3_8B)) return -1;
    int loaded = !model_load_analytic(&md, LLAMA3_8B, "bf16", "bf16", err, sizeof err), rc = loaded ? 0 : stack_fail("%s", err), made = 0;
    for (; made < S_N && !rc; made++)   /* request 2 the long prompt, the others chats of one system prompt, 5 ms apart */
        rc = made == 1 ? spec_make(&jobs[made], S_LONG, 0, made, S_REPLY, S_REPLY, 0.005 * made)
                       : spec_make(&jobs[made], S_SYSTEM + S_USER, S_SYSTEM, made, S_REPLY, S_REPLY, 0.005 * made);
    if (!rc) {
        workload w = { "traced sample", vllm_opts(S_POOL), jobs, S_N, 0 };
        w.o.max_num_batched_tokens = 512;
        result res;
        rc = run(&md, &w, &res);
        result_free(&res);
    }
    jobs_free(jobs, made);
    if (loaded) model_free(&md);
    return lab_trace_end(L) || rc ? -1 : 0;
}

int lab9(lab *L) {
    char err[512];
    model md;
    fprintf(stderr, "hipath lab 9: Llama-3-8B on %s, modeled throughout (not --device %s, not --model)\n", H100, L->device);
    snprintf(L->device, sizeof L->device, "%s", H100);   /* labN.json's device and profile: the one every figure is of */
    snprintf(L->profile, sizeof L->profile, "%s", strchr(H100, ':') + 1);
    if (sample(L) || stack_device(&L->st, H100, err, sizeof err)) return -1;
    L->gpu = rt_device_now()->prof;
    int rc = model_load_analytic(&md, LLAMA3_8B, "bf16", "bf16", err, sizeof err) ? stack_fail("%s", err) : 0;
    lab_step m;
    if (!rc) {
        rc = lab_step_model(LLAMA3_8B, &L->gpu, &m) || part_a(L, &md, &m) || part_b(L, &md, &m) || part_c(L, &md, &m) || part_d(L, &md, &m);
        model_free(&md);
    }
    stack_close(&L->st, err, sizeof err);
    return rc;
}
