/*
 * lab10.c -- Lab 10, your model against a real GPU's run
 * (lab10-replay.md): vLLM 0.19 serving 300 ShareGPT requests of
 * Llama-3.1-8B on an RTX PRO 6000 Server Edition (tests/data/replay/,
 * LLMServingSim's run). (a) From the recorded run alone: the batch and
 * TPOT the bandwidth bound predicts (Little's law at the arrival rate),
 * the requests the KV pool holds against the most vLLM ran at once, and
 * TTFT as a queue for seats (max_num_seqs) or for the pool. (b) The whole
 * run replayed (hipath replay's code) against vLLM's own figures, then its
 * first 20 requests alone (traced into labN.db, every 100th step's kernels
 * too) against vLLM's times for
 * them. (c) One setting changed on that excerpt, predicted before it runs:
 * a budget of 512, a pool of 1024 blocks. Predictions are the bound, the step-time model or a
 * queue by hand; "measured" is vLLM's timestamps (real) or the replay's
 * modeled clock, and the row says which.
 */
#include "labs/lab.h"
#include "labs/replay.h"
#include "layers/common/kv.h"
#include <stdlib.h>
#include <string.h>

#define RUN_DIR "tests/data/replay/llama-3.1-8b"
#define CONFIG "tests/data/llama-3.1-8b.config.json"
#define PROFILE "rtx-pro-6000-server"
#define DEVICE "analytic:" PROFILE
enum { EXCERPT = 20, SMALL_BUDGET = 512, SMALL_POOL = 1024, BS = KV_BLOCK_SIZE, KERNEL_SAMPLE = 100 };

/* What the bound needs: a step's weights and a token's KV, in bytes; beta. */
typedef struct { double weights, kv_per_token, beta; } bound;

/* A decode step of B requests holding ctx tokens each, at the bandwidth:
 * the weights read once, every cached token's K and V read once. */
static double t_bound(const bound *b, double B, double ctx) { return (b->weights + B * ctx * b->kv_per_token) / b->beta; }

static double mean_tpot(const replay *r) { return r->stat[REPLAY_TPOT][0][REPLAY_MEAN] / 1e3; }

/* The batch a decoding token sees in the real run: B(t) = requests between
 * their first and last token, averaged over each one's decode time
 * (sum of pairwise overlaps / sum of decode times). */
static double batch_seen(const replay *r) {
    double both = 0, one = 0;
    for (int i = 0; i < r->n; i++) {
        const replay_request *p = &r->req[i];
        one += p->last - p->first;
        for (int j = 0; j < r->n; j++) {
            const replay_request *q = &r->req[j];
            both += fmax(0, fmin(p->last, q->last) - fmax(p->first, q->first));
        }
    }
    return one > 0 ? both / one : 0;
}

/* The most requests decoding at once in the real run (first..last token). */
static int most_at_once(const replay *r) {
    int most = 0;
    for (int i = 0; i < r->n; i++) {   /* B just after request i's first token */
        int k = 0;
        for (int j = 0; j < r->n; j++) k += r->req[j].first <= r->req[i].first && r->req[i].first < r->req[j].last;
        if (k > most) most = k;
    }
    return most;
}

/* Mean TTFT (s) of a first-come first-served queue for `seats` seats, each
 * held for output x t: a request takes the first seat free at or after its
 * arrival, its first token a step t later. */
static double queue_ttft(const replay *r, int seats, double t) {
    double *free_at = calloc(seats, sizeof *free_at), sum = 0;
    if (!free_at) return NA;
    for (int i = 0; i < r->n; i++) {
        const replay_request *q = &r->req[i];
        int s = 0;
        for (int k = 1; k < seats; k++) if (free_at[k] < free_at[s]) s = k;
        double admit = fmax(q->queued, free_at[s]);
        free_at[s] = admit + q->output * t;
        sum += admit - q->queued + t;
    }
    free(free_at);
    return sum / r->n;
}

/* ---- (a) the recorded run alone ---- */

static int part_a(lab *L, const replay *r, const bound *b) {
    double in = 0, out = 0, blocks = 0;
    for (int i = 0; i < r->n; i++) {
        in += r->req[i].input;
        out += r->req[i].output;
        blocks += ceil((double)(r->req[i].input + r->req[i].output) / BS);
    }
    in /= r->n, out /= r->n, blocks /= r->n;
    /* Little's law: B = rate x a reply's decode time, out x t(B), at most max_num_seqs */
    double rate = (r->n - 1) / (r->req[r->n - 1].queued - r->req[0].queued), ctx = in + out / 2, B = 1;
    for (int k = 0; k < 100; k++) B = fmin(r->o.max_num_seqs, rate * out * t_bound(b, B, ctx));
    double t = t_bound(b, B, ctx);
    L->pt = (lab_point){ "llama-3.1-8b", DEVICE, "bf16", "bf16", r->o.max_num_seqs, (int)round(in), (int)round(in + out) };
    lab_row(L, "batch", "requests", B, batch_seen(r), "min(max_num_seqs, rate x mean output x t_bound(B)): Little's law at the bound",
            "vLLM (real): requests decoding, averaged over each token's time", "300 requests, recorded");
    lab_row(L, "tpot_mean", "s", t, mean_tpot(r), "t_bound at that batch: (weights + B x (mean input + mean output / 2) x KV a token) / beta",
            "vLLM (real): TPOT mean from its timestamps", "the bound against vLLM");
    double fit = floor(r->kv_blocks / blocks);
    lab_row(L, "kv_requests", "requests", fit, most_at_once(r), "floor(KV blocks / mean ceil((input + output) / 16)): whole requests the pool holds",
            "vLLM (real): the most requests decoding at once", "300 requests, recorded");
    double real_ttft = r->stat[REPLAY_TTFT][0][REPLAY_MEAN] / 1e3;
    lab_row(L, "ttft_mean", "s", queue_ttft(r, r->o.max_num_seqs, t), real_ttft,
            "a queue for max_num_seqs seats, each held output x t_bound", "vLLM (real): TTFT mean", "128 seats");
    lab_row(L, "ttft_mean", "s", queue_ttft(r, r->o.max_num_seqs, mean_tpot(r)), real_ttft,
            "a queue for max_num_seqs seats, each held output x vLLM's TPOT mean", "vLLM (real): TTFT mean", "128 seats, vLLM's TPOT");
    lab_row(L, "ttft_mean", "s", queue_ttft(r, (int)fit, t), real_ttft,
            "a queue for as many seats as the pool holds requests, each held output x t_bound", "vLLM (real): TTFT mean", "the KV pool's seats");
    return 0;
}

/* ---- (b) and (c): the run, and its first 20, replayed ---- */

/* The first n requests through hipath's engine with o and kv_blocks
 * (traced into db when given); their times, real and modeled, and the
 * counters into labN.json's "runs". */
static int replay_first(lab *L, const replay *base, int n, const char *name, engine_opts o, int kv_blocks, const char *db, replay *r) {
    *r = *base;
    r->req = malloc(n * sizeof *r->req);
    if (!r->req) return stack_fail("out of memory");
    memcpy(r->req, base->req, n * sizeof *r->req);
    r->n = n;
    r->o = o;
    r->kv_blocks = kv_blocks;
    r->kernel_sample = KERNEL_SAMPLE;   /* traced: every 100th step's kernels too */
    if (replay_run(r, CONFIG, PROFILE, "bf16", db)) return -1;
    if (!L->runs) L->runs = cJSON_CreateArray();
    cJSON *j = cJSON_CreateObject(), *rs = cJSON_CreateArray();
    cJSON_AddStringToObject(j, "name", name);
    cJSON_AddStringToObject(j, "clock", "modeled");
    cJSON_AddNumberToObject(j, "max_num_batched_tokens", o.max_num_batched_tokens);
    cJSON_AddNumberToObject(j, "max_num_seqs", o.max_num_seqs);
    cJSON_AddNumberToObject(j, "kv_blocks", kv_blocks);
    cJSON_AddNumberToObject(j, "steps", (double)r->steps);
    cJSON_AddNumberToObject(j, "preemptions", (double)r->preemptions);
    cJSON_AddNumberToObject(j, "max_seqs", (double)r->max_seqs);
    for (int i = 0; i < r->n; i++) {
        const replay_request *q = &r->req[i];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "input_toks", q->input);
        cJSON_AddNumberToObject(x, "output_toks", q->output);
        cJSON_AddNumberToObject(x, "arrival_s", q->queued - r->req[0].queued);
        cJSON_AddNumberToObject(x, "first_s", q->m_first);   /* modeled, from its arrival */
        cJSON_AddNumberToObject(x, "last_s", q->m_last);
        cJSON_AddNumberToObject(x, "real_first_s", q->first - q->queued);   /* vLLM's, from its queued_ts */
        cJSON_AddNumberToObject(x, "real_last_s", q->last - q->queued);
        cJSON_AddNumberToObject(x, "preempted", q->preempted);
        cJSON_AddItemToArray(rs, x);
    }
    cJSON_AddItemToObject(j, "requests", rs);
    cJSON_AddItemToArray(L->runs, j);
    return 0;
}

static const char *const WHAT[REPLAY_METRICS] = { "ttft_mean", "tpot_mean", "latency_mean" };
static const char *const WHAT99[REPLAY_METRICS] = { "ttft_p99", "tpot_p99", "latency_p99" };

static int part_b(lab *L, const replay *base, const bound *b, replay *r) {
    replay all;
    int rc = replay_first(L, base, base->n, "the whole run, recorded settings", base->o, base->kv_blocks, NULL, &all);
    L->pt = (lab_point){ "llama-3.1-8b", DEVICE, "bf16", "bf16", base->n, L->pt.prompt_len, L->pt.context };
    for (int m = 0; !rc && m < REPLAY_METRICS; m++) {
        lab_row(L, WHAT[m], "s", all.stat[m][1][REPLAY_MEAN] / 1e3, all.stat[m][0][REPLAY_MEAN] / 1e3, "hipath replay (modeled), all 300",
                "vLLM (real): its timestamps", "whole run replayed");
        lab_row(L, WHAT99[m], "s", all.stat[m][1][REPLAY_P99] / 1e3, all.stat[m][0][REPLAY_P99] / 1e3, "hipath replay (modeled), all 300",
                "vLLM (real): its timestamps", "whole run replayed");
    }
    replay_free(&all);
    if (rc || replay_first(L, base, EXCERPT, "the first 20, recorded settings", base->o, base->kv_blocks, L->db, r)) return -1;
    double in = 0, out = 0;
    for (int i = 0; i < r->n; i++) in += r->req[i].input, out += r->req[i].output;
    in /= r->n, out /= r->n;
    L->pt = (lab_point){ "llama-3.1-8b", DEVICE, "bf16", "bf16", EXCERPT, (int)round(in), (int)round(in + out) };
    for (int m = 0; m < REPLAY_METRICS; m++)
        lab_row(L, WHAT[m], "s", r->stat[m][1][REPLAY_MEAN] / 1e3, r->stat[m][0][REPLAY_MEAN] / 1e3, "hipath replay (modeled), the 20 alone",
                "vLLM (real): the same 20, among the run's 300", "excerpt replayed alone");
    lab_row(L, "tpot_mean", "s", t_bound(b, EXCERPT, in + out / 2), r->stat[REPLAY_TPOT][1][REPLAY_MEAN] / 1e3,
            "t_bound at B = 20 (all 20 decode together)", "hipath replay (modeled): TPOT mean", "the bound against the replay");
    return 0;
}

static int part_c(lab *L, const replay *base, const replay *r0) {
    lab_step m;
    if (lab_step_model(CONFIG, &L->gpu, &m)) return -1;
    /* a budget of 512: request 0 (alone until request 1 arrives) prefills in ceil(P / budget) chunks */
    replay r;
    engine_opts o = base->o;
    o.max_num_batched_tokens = SMALL_BUDGET;
    int rc = replay_first(L, base, EXCERPT, "the first 20, max_num_batched_tokens 512", o, base->kv_blocks, NULL, &r);
    const replay_request *q = &r0->req[0];
    for (int k = 0; !rc && k < 2; k++) {
        int budget = k ? SMALL_BUDGET : base->o.max_num_batched_tokens;
        double ttft = 0;
        for (int from = 0; from < q->input; from += budget) {
            int to = from + budget < q->input ? from + budget : q->input;
            ttft += lab_t_step(&m, to - from, lab_pairs(from, to), 0, to == q->input);
        }
        L->pt = (lab_point){ "llama-3.1-8b", DEVICE, "bf16", "bf16", budget, q->input, q->input };
        lab_row(L, "ttft_first", "s", ttft, k ? r.req[0].m_first : q->m_first, "its chunks' steps, summed: t_step each (lab 9)",
                "hipath replay (modeled): request 0's TTFT", k ? "max_num_batched_tokens 512" : "max_num_batched_tokens 2048");
    }
    if (!rc) {
        L->pt = (lab_point){ "llama-3.1-8b", DEVICE, "bf16", "bf16", SMALL_BUDGET, 0, 0 };
        lab_row(L, "tpot_mean", "s", r0->stat[REPLAY_TPOT][1][REPLAY_MEAN] / 1e3, r.stat[REPLAY_TPOT][1][REPLAY_MEAN] / 1e3,
                "the excerpt's TPOT at 2048 (modeled): a smaller budget changes only the prefills", "hipath replay (modeled): TPOT mean", "max_num_batched_tokens 512");
    }
    replay_free(&r);
    if (rc) return rc;

    /* a pool of 1024 blocks: admitted in arrival order while their prompts'
     * blocks fit; the rest wait until requests finishing (at the recorded
     * settings' times, in their order) have freed their prompts' blocks */
    int admitted = 0, whole = 0, n = r0->n;
    double used = 0, full = 0;
    for (int i = 0; i < n; i++) {
        const replay_request *p = &r0->req[i];
        if (admitted == i && (used += ceil((double)p->input / BS)) <= SMALL_POOL) admitted++;
        if (whole == i && (full += ceil((double)(p->input + p->output) / BS)) <= SMALL_POOL) whole++;
    }
    double wait = 0, freed = 0, need = 0;
    int *done = calloc(EXCERPT, sizeof *done);
    if (!done) return stack_fail("out of memory");
    for (int i = admitted, k = -1; i < n; i++) {
        const replay_request *p = &r0->req[i];
        double at = p->queued - r0->req[0].queued;
        need += ceil((double)p->input / BS);
        while (freed < need) {   /* the next request to finish of those admitted */
            k = -1;
            for (int j = 0; j < admitted; j++)
                if (!done[j] && (k < 0 || r0->req[j].queued + r0->req[j].m_last < r0->req[k].queued + r0->req[k].m_last)) k = j;
            if (k < 0) break;
            done[k] = 1;
            freed += ceil((double)(r0->req[k].input + r0->req[k].output) / BS);
        }
        wait += k < 0 ? NA : r0->req[k].queued - r0->req[0].queued + r0->req[k].m_last - at;
    }
    free(done);
    if ((rc = replay_first(L, base, EXCERPT, "the first 20, a pool of 1024 blocks", base->o, SMALL_POOL, NULL, &r))) { replay_free(&r); return rc; }
    double got = 0;
    for (int i = admitted; i < r.n; i++) got += r.req[i].m_first;
    L->pt = (lab_point){ "llama-3.1-8b", DEVICE, "bf16", "bf16", SMALL_POOL, 0, 0 };
    const char *name = "a pool of 1024 blocks";
    lab_row(L, "running_max", "requests", admitted, (double)r.max_seqs, "requests in arrival order while their prompts' blocks fit: ceil(input / 16)",
            "the most requests in one step (modeled run)", name);
    lab_row(L, "preemptions", "preemptions", admitted - whole, (double)r.preemptions,
            "running_max - those whose whole request, ceil((input + output) / 16), fits in arrival order", "preemptions over the run (modeled)", name);
    lab_row(L, "ttft_waiting", "s", admitted < r.n ? wait / (r.n - admitted) : NA, admitted < r.n ? got / (r.n - admitted) : NA,
            "the rest: when finishes (the recorded settings' times, in order) have freed their prompts' blocks, less their arrival", "their TTFT, mean (modeled)", name);
    replay_free(&r);
    return 0;
}

int lab10(lab *L) {
    char err[512];
    replay r, r0 = { 0 };
    fprintf(stderr, "hipath lab 10: vLLM's run of Llama-3.1-8B on an RTX PRO 6000 Server Edition against %s (not --device %s, not --model)\n", DEVICE,
            L->device);
    snprintf(L->device, sizeof L->device, "%s", DEVICE);
    snprintf(L->profile, sizeof L->profile, "%s", PROFILE);
    if (gpu_profile_load(&L->gpu, PROFILE, err, sizeof err)) return stack_fail("%s", err);
    if (replay_load(&r, RUN_DIR "/requests.jsonl")) return -1;
    int tp = 1;
    char dtype[32] = "bf16";
    r.o = (engine_opts){ 0 };
    bounds_result br;
    int rc = replay_meta(RUN_DIR "/meta.json", &r.o, &tp, dtype, sizeof dtype) || replay_kv_blocks(&r, CONFIG, PROFILE, dtype) ||
             lab_bounds(CONFIG, &L->gpu, dtype, dtype, 1, 1, 1, &br);
    if (!rc) {
        bound b = { br.decode.weight_bytes, br.kv_bytes_per_token, br.bandwidth };
        replay_stats(&r);
        rc = part_a(L, &r, &b) || part_b(L, &r, &b, &r0) || part_c(L, &r, &r0);
    }
    replay_free(&r0);
    replay_free(&r);
    return rc;
}
