/*
 * validate.c -- published measurements run as their shapes on the analytic
 * device, and the profiles calibrated from half of them (validate.h).
 */
#include "labs/validate.h"
#include "labs/lab.h"
#include "stack/stack.h"
#include "layers/common/file.h"
#include "layers/runtime/runtime.h"
#include "trace/trace.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The analytic weight dtype a published one is run as: fp8 as int8 (a byte
 * a weight and its scales; on Hopper and MI300X the fp8 and int8 peaks are
 * the same), llama.cpp's q8_0 is int8's blocks. */
static const char *analytic_dtype(const char *d) {
    static const char *const AS[][2] = { { "fp16", "fp16" }, { "bf16", "bf16" }, { "fp8", "int8" }, { "int8", "int8" },
                                         { "q8_0", "int8" }, { "q4_0", "q4_0" }, { "q4_1", "q4_1" } };
    for (size_t i = 0; i < sizeof AS / sizeof *AS; i++) if (!strcmp(d, AS[i][0])) return AS[i][1];
    return NULL;
}

static const char *str(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}
static double num(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}
/* A parallel degree: 1 when absent, else a whole 1 to 64 (0: not one). */
static int degree(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!v) return 1;
    double d = cJSON_IsNumber(v) ? v->valuedouble : 0;
    return d >= 1 && d <= 64 && d == floor(d) ? (int)d : 0;
}

int validate_load(const char *path, validate_table *t) {
    char err[512];
    memset(t, 0, sizeof *t);
    if (!(t->doc = json_read(path, FILE_SMALL, err, sizeof err))) return stack_fail("%s", err);
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(t->doc, "rows"), *o;
    if (!cJSON_IsArray(rows) || !cJSON_GetArraySize(rows)) { validate_free(t); return stack_fail("%s: no \"rows\" array", path); }
    t->row = calloc(cJSON_GetArraySize(rows), sizeof *t->row);
    if (!t->row) { validate_free(t); return stack_fail("out of memory"); }
    cJSON_ArrayForEach(o, rows) {
        validate_row *r = &t->row[t->n];
        /* a served run at concurrency C (C requests in flight, each replaced as it ends) is
         * run as a batch of C: the same prefills and the same decode steps of C, in one wave */
        double c = num(o, "concurrency"), b = isnan(c) ? num(o, "batch") : c, p = num(o, "prompt_len"), g = num(o, "gen_len"),
               ms = num(o, "measured_first_token_ms"), ls = num(o, "measured_latency_s");
        int whole = b >= 1 && b <= 4096 && b == floor(b) && p >= 0 && p <= STEP_TOKENS && g >= 0 && g <= 1 << 20 && p == floor(p) && g == floor(g);
        if (!whole) b = p = g = 0;   /* not cast: the row is refused below */
        *r = (validate_row){ .id = str(o, "id"), .gpu = str(o, "gpu"), .model = str(o, "model"), .config = str(o, "config"),
                             .dtype = str(o, "dtype"), .kv_dtype = str(o, "kv_dtype"), .phase = str(o, "phase"),
                             .engine = str(o, "engine"), .source = str(cJSON_GetObjectItemCaseSensitive(o, "source"), "url"),
                             .batch = (int)b, .prompt_len = (int)p, .gen_len = (int)g, .concurrency = isnan(c) ? 0 : (int)b,
                             .calibrate = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "calibrate")),
                             .tp = degree(o, "tp"), .pp = degree(o, "pp"), .ep = degree(o, "ep"), .dp = degree(o, "dp"),
                             .per_gpu = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "measured_per_gpu")),
                             .first_token_ms = ms, .latency_s = ls, .measured = num(o, "measured_tokens_per_s"), .modeled = NAN, .efficiency = NAN, .calibrated = NAN,
                             .loso = NAN };
        r->unmodeled = r->ep > 1 ? "ep" : r->dp > 1 ? "dp" : NULL;
        const cJSON *pg = cJSON_GetObjectItemCaseSensitive(o, "measured_per_gpu");
        const char *bad = !r->id ? "no id" : !r->gpu || !r->config || !r->model || !r->engine ? "gpu, model, config and engine are text"
                        : !r->source ? "source.url: the address the figure was copied from (its source)"
                        : !r->dtype || !analytic_dtype(r->dtype) ? "dtype: fp16, bf16, fp8, int8, q8_0, q4_0 or q4_1"
                        : !r->kv_dtype || (strcmp(r->kv_dtype, "fp16") && strcmp(r->kv_dtype, "bf16") && strcmp(r->kv_dtype, "fp8") &&
                                           strcmp(r->kv_dtype, "fp32")) ? "kv_dtype (the engine's KV cache): fp16, bf16, fp8 or fp32"
                        : !r->phase || (strcmp(r->phase, "prefill") && strcmp(r->phase, "decode") && strcmp(r->phase, "e2e"))
                          ? "phase: prefill, decode or e2e"
                        : !isnan(c) && cJSON_GetObjectItemCaseSensitive(o, "batch") ? "batch or concurrency (a served run's), not both"
                        : !isnan(c) && strcmp(r->phase, "e2e") ? "concurrency: an e2e row's (a served run of prompt_len in, gen_len out)"
                        : !whole ? "batch (or concurrency) 1 to 4096, prompt_len 0 to 8192 and gen_len 0 to 2^20: whole numbers"
                        : b + p + g / 2 > STEP_TOKENS ? "batch + prompt_len + gen_len / 2 past a step's budget of 8192 tokens"
                        : !strcmp(r->phase, "prefill") && (p < 1 || b != 1) ? "a prefill row is one prompt (batch 1) of prompt_len >= 1"
                        : strcmp(r->phase, "prefill") && g < 1 ? "a decode or e2e row generates (gen_len >= 1)"
                        : !strcmp(r->phase, "decode") && b != 1 ? "a decode row is one sequence (batch 1); a batch is e2e"
                        : !isnan(ms) && (strcmp(r->phase, "prefill") || !isnan(r->measured) || !(ms > 0))
                          ? "measured_first_token_ms: a prefill row's published latency (ms > 0), instead of measured_tokens_per_s"
                        : !isnan(ls) && (strcmp(r->phase, "e2e") || !isnan(c) || !isnan(ms) || !isnan(r->measured) || !(ls > 0))
                          ? "measured_latency_s: a static batch's published time (s > 0, an e2e row with batch), instead of measured_tokens_per_s"
                        : isnan(ms) && isnan(ls) && !(r->measured > 0) ? "measured_tokens_per_s: a positive number"
                        : !r->tp || !r->pp || !r->ep || !r->dp ? "tp, pp, ep and dp (the GPUs it ran on): whole numbers 1 to 64"
                        : pg && !cJSON_IsBool(pg) ? "measured_per_gpu: true or false"
                        : r->per_gpu && (!isnan(ms) || !isnan(ls)) ? "measured_per_gpu: a published latency is not per GPU" : NULL;
        if (!bad && !isnan(ms)) r->measured = p / (ms * 1e-3);   /* a latency published: the prompt's tokens over it */
        if (!bad && !isnan(ls)) r->measured = b * g / ls;        /* a batch's: its generated tokens over it */
        if (bad) {
            stack_fail("%s: row %d%s%s: %s", path, t->n + 1, r->id ? " " : "", r->id ? r->id : "", bad);
            validate_free(t);
            return -1;
        }
        t->n++;
    }
    return 0;
}

void validate_free(validate_table *t) {
    cJSON_Delete(t->doc);
    free(t->row);
    memset(t, 0, sizeof *t);
}

/* A wave's modeled device time, split as validate_row's (waves per class,
 * copies, launches). */
typedef struct { double class_s[SIM_CLASSES], copy_s, collective_s, handoff_s, launch_s; } wave_split;

/* The modeled device time of a wave of B sequences, each P prompt ids and
 * tok tokens (a session of its own, over the row's pp stages of tp GPUs):
 * its prefill steps (decode 0) or its step in which all B decode (decode
 * 1). A row's wave is one batch, so its stages run one after another
 * (docs/parallel.md, the bubble): the step is their sum and the hand-offs. */
static int wave_time(lab *L, const validate_row *r, const char *device, int P, int tok, int decode, wave_split *w) {
    int64_t first;
    lab_query q;
    L->analytic_kv = r->kv_dtype;   /* the engine's KV cache, as the row ran it: what a step reads */
    rt_gpus(r->tp);
    rt_stages(r->pp);
    int rc = lab_engine_waves(L, device, r->config, analytic_dtype(r->dtype), P, tok, &r->batch, 1, &first);
    rt_gpus(1);
    rt_stages(1);
    L->analytic_kv = NULL;
    if (rc) return -1;
    lab_args a = { .first = first, .last = first + r->batch - 1, .batch = decode ? r->batch : 0, .gpus = r->tp };
    if (lab_sql_open(L, &q, SQL_VALIDATE_CLASSES, a)) return -1;
    lab_sql_next(&q);
    double lat = L->gpu.launch_latency_s, n = lab_col(&q, "copy_n"), steps = lab_col(&q, "steps");
    char col[40];
    w->copy_s = lab_col(&q, "copy_s") - n * lat;
    w->collective_s = lab_col(&q, "collective_s");
    w->handoff_s = lab_col(&q, "handoff_s");
    w->launch_s = n * lat;
    for (int c = 0; c < SIM_CLASSES; c++) {
        snprintf(col, sizeof col, "%s_n", SIM_CLASS_NAME[c]);
        n = lab_col(&q, col);
        snprintf(col, sizeof col, "%s_s", SIM_CLASS_NAME[c]);
        w->class_s[c] = lab_col(&q, col) - n * lat;
        w->launch_s += n * lat;
    }
    if (lab_sql_close(&q)) return -1;
    return isnan(steps) || !(steps > 0) ? stack_fail("%s: no %s step in the trace", r->id, decode ? "decode" : "prefill") : 0;
}

/* One row's modeled time and tokens/s. A decode step is timed at the
 * middle of the generation (context P + G/2, what a mean over its steps
 * sees): a prompt of that many ids, then one step. E2e: the prefill gives
 * the first token, gen_len - 1 steps the rest. */
/* Its modeled figures from its split: tokens over the modeled time, and e. */
static void finish_row(validate_row *r) {
    r->modeled = validate_tokens(r) / (r->waves_s + r->launch_s + r->collective_s + r->handoff_s);
    /* e: the waves over what the measured time leaves them after the launches, collectives and hand-offs */
    double measured_s = validate_tokens(r) / r->measured, rest = measured_s - r->launch_s - r->collective_s - r->handoff_s;
    if (rest > 0) r->efficiency = r->waves_s / rest;
}

static int run_row(lab *L, validate_row *r) {
    char device[64];
    wave_split p = { 0 }, d = { 0 };
    int prefill = strcmp(r->phase, "decode"), decode = strcmp(r->phase, "prefill");
    snprintf(device, sizeof device, "analytic:%s", r->gpu);
    if (prefill && wave_time(L, r, device, r->prompt_len, 1, 0, &p)) return -1;
    int mid = r->prompt_len + r->gen_len / 2 > 0 ? r->prompt_len + r->gen_len / 2 : 1;
    if (decode && wave_time(L, r, device, mid, 2, 1, &d)) return -1;
    double steps = !decode ? 0 : !prefill ? 1 : r->gen_len - 1;
    r->int8_over_fp16 = L->gpu.peak.int8 / L->gpu.peak.fp16;
    r->fp32_over_fp16 = L->gpu.peak.fp32 / L->gpu.peak.fp16;
    r->copy_s = p.copy_s + steps * d.copy_s;
    r->collective_s = p.collective_s + steps * d.collective_s;
    r->handoff_s = p.handoff_s + steps * d.handoff_s;
    r->launch_s = p.launch_s + steps * d.launch_s;
    r->waves_s = r->copy_s;
    for (int c = 0; c < SIM_CLASSES; c++) {
        r->class_s[c] = p.class_s[c] + steps * d.class_s[c];
        r->waves_s += r->class_s[c];
    }
    finish_row(r);
    return 0;
}

/* Rows a and b run the same waves: the same GPUs, model, formats and shape
 * (the engine, source and figure do not enter the model). */
static int same_shape(const validate_row *a, const validate_row *b) {
    return !strcmp(a->gpu, b->gpu) && !strcmp(a->config, b->config) && !strcmp(a->dtype, b->dtype) &&
           !strcmp(a->kv_dtype, b->kv_dtype) && !strcmp(a->phase, b->phase) && a->batch == b->batch &&
           a->prompt_len == b->prompt_len && a->gen_len == b->gen_len && a->tp == b->tp && a->pp == b->pp;
}

/* An earlier row of r's shape that ran, whose modeled split r takes (the
 * model is deterministic: a row alone gives its figures in a whole run). */
static const validate_row *modeled_before(const validate_table *t, const validate_row *r) {
    for (const validate_row *q = t->row; q < r; q++)
        if (!q->unmodeled && !q->why[0] && !isnan(q->modeled) && same_shape(q, r)) return q;
    return NULL;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
double validate_median(double *v, int n) {
    if (!n) return NAN;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int validate_run(validate_table *t, const char *only, const char *out, int full) {
    lab L = { .n = 0, .tag = "validate", .quiet_runs = 1, .out = out, .quiet = 1 };
    int ran = 0;
    if (snprintf(L.db, sizeof L.db, "%s/validate.db", out) >= (int)sizeof L.db || stack_make_parent(L.db))
        return stack_fail("--out %s: cannot create the folder", out);
    unlink(L.db);   /* each validation starts a fresh database */
    if (!full) sim_summarize(1), trace_mute(1u << L_RUNTIME | 1u << L_KERNELS | 1u << L_OPS);
    for (int i = 0; i < t->n; i++) {
        validate_row *r = &t->row[i];
        if (only && strcmp(only, r->id)) continue;
        ran++;
        if (r->unmodeled) continue;   /* kept in the table, run once its model is in */
        const validate_row *q = modeled_before(t, r);
        if (q) {   /* its split, then its own figures */
            memcpy(r->class_s, q->class_s, sizeof r->class_s);
            r->copy_s = q->copy_s, r->collective_s = q->collective_s, r->handoff_s = q->handoff_s, r->launch_s = q->launch_s;
            r->waves_s = q->waves_s;
            r->int8_over_fp16 = q->int8_over_fp16, r->fp32_over_fp16 = q->fp32_over_fp16;
            finish_row(r);
        } else if (run_row(&L, r))
            snprintf(r->why, sizeof r->why, "could not be run on analytic:%s (the line above says why)", r->gpu);
    }
    sim_summarize(0);
    trace_mute(0);
    if (!ran) return stack_fail("validate: no row %s", only ? only : "");
    return validate_fit_all(t);
}
