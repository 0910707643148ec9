/*
 * cmd_lab.c -- `hipath lab N`: lab N's experiment (labs/labN-*.md, "What
 * `hipath lab N` does"). Each lab runs requests through an in-process
 * server into OUT/labN.db, predicts with the calculator (layers/gpu/bounds),
 * measures with SQL on the trace, and writes one row per (sweep point,
 * quantity): a table on stdout, OUT/labN.csv and OUT/labN.json.
 */
#include "cli/cli.h"
#include "layers/client/client.h"
#include "labs/bounds.h"
#include "layers/runtime/runtime.h"
#include "layers/scheduler/server.h"
#include "layers/tokenizer/tokenizer.h"
#include "trace/journey.h"
#include "trace/trace.h"
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char USAGE[] =
    "usage: hipath lab N [options]      N = 1..7 (labs/README.md)\n"
    "  --device D    auto (default: hip:0 if present, else sim:w7900), cpu, sim:PROFILE, hip:N\n"
    "  --model DIR   the real model (default models/tiny-hi)\n"
    "  --out DIR     where labN.db, .pftrace, .csv, .json go (default labs/out/labN/)\n";

#define NA NAN
#define QWEN7B "tests/data/qwen2.5-7b-instruct.config.json"
#define QWEN14B "tests/data/deepseek-r1-distill-qwen-14b.config.json"
#define QWEN3_8B "labs/configs/qwen3-8b.config.json"

/* The sweep point the next rows belong to (the CSV's leading columns). */
typedef struct { const char *model, *device, *dtype, *kv_dtype; int batch, prompt_len, context; } point;

typedef struct {
    int n;
    const char *out, *device, *model;
    char db[1024], profile[160];      /* profile: the GPU the device models */
    int sessions;
    int64_t run;
    server *srv;
    char served[256];
    point pt;
    FILE *csv;
    cJSON *rows;
    int printed, quiet;               /* quiet: rows go to the files only */
} lab;

/* ---- rows ---------------------------------------------------------- */

static void num(FILE *f, double v) { if (!isnan(v)) fprintf(f, "%.6g", v); }
static void str(FILE *f, const char *s) {
    fputc('"', f);
    for (; s && *s; s++) { if (*s == '"') fputc('"', f); fputc(*s, f); }
    fputc('"', f);
}
static cJSON *jnum(double v) { return isnan(v) ? cJSON_CreateNull() : cJSON_CreateNumber(v); }

/* A reading of the gap when the lab has none more specific. */
static const char *gap(double r) {
    if (isnan(r)) return "";
    if (r > 0.95 && r < 1.05) return "matches";
    if (r > 1) return "measured above the bound: terms the model leaves out, or overhead";
    return "measured below the prediction: the formula counts more than the run did";
}

static void row(lab *L, const char *q, const char *unit, double pred, double meas, const char *pfrom, const char *mfrom, const char *reading) {
    double ratio = !isnan(pred) && !isnan(meas) && pred != 0 ? meas / pred : NA;
    if (!reading) reading = gap(ratio);
    point *p = &L->pt;
    fprintf(L->csv, "%d,%lld,", L->n, (long long)L->run);
    str(L->csv, p->model); fputc(',', L->csv); str(L->csv, p->device); fputc(',', L->csv);
    str(L->csv, p->dtype); fputc(',', L->csv); str(L->csv, p->kv_dtype); fputc(',', L->csv);
    fprintf(L->csv, "%d,%d,%d,%s,%s,", p->batch, p->prompt_len, p->context, q, unit);
    num(L->csv, pred); fputc(',', L->csv); num(L->csv, meas); fputc(',', L->csv); num(L->csv, ratio); fputc(',', L->csv);
    str(L->csv, pfrom); fputc(',', L->csv); str(L->csv, mfrom); fputc(',', L->csv); str(L->csv, reading); fputc('\n', L->csv);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "lab", L->n);
    cJSON_AddNumberToObject(o, "run_id", (double)L->run);
    const char *sk[] = { "model", "device", "dtype", "kv_dtype" }, *sv[] = { p->model, p->device, p->dtype, p->kv_dtype };
    for (int i = 0; i < 4; i++) cJSON_AddStringToObject(o, sk[i], sv[i] ? sv[i] : "");
    cJSON_AddNumberToObject(o, "batch", p->batch);
    cJSON_AddNumberToObject(o, "prompt_len", p->prompt_len);
    cJSON_AddNumberToObject(o, "context", p->context);
    cJSON_AddStringToObject(o, "quantity", q);
    cJSON_AddStringToObject(o, "unit", unit);
    cJSON_AddItemToObject(o, "predicted", jnum(pred));
    cJSON_AddItemToObject(o, "measured", jnum(meas));
    cJSON_AddItemToObject(o, "ratio", jnum(ratio));
    cJSON_AddStringToObject(o, "predicted_from", pfrom);
    cJSON_AddStringToObject(o, "measured_from", mfrom);
    cJSON_AddStringToObject(o, "reading", reading);
    cJSON_AddItemToArray(L->rows, o);
    if (L->quiet) return;
    if (!L->printed++) printf("%-26s %-28s %5s %5s %12s %12s %8s  %s\n", "quantity", "model @ device", "B", "P", "predicted", "measured", "ratio", "reading");
    char who[64], pr[16] = "", me[16] = "", ra[16] = "";
    snprintf(who, sizeof who, "%.14s @ %.13s", p->model ? p->model : "", p->device ? p->device : "");
    if (!isnan(pred)) snprintf(pr, sizeof pr, "%.4g", pred);
    if (!isnan(meas)) snprintf(me, sizeof me, "%.4g", meas);
    if (!isnan(ratio)) snprintf(ra, sizeof ra, "%.3g", ratio);
    printf("%-26s %-28s %5d %5d %12s %12s %8s  %s\n", q, who, p->batch, p->prompt_len, pr, me, ra, reading);
}

/* ---- the calculator ------------------------------------------------ */

static int bounds(const char *config, const gpu_profile *g, const char *dtype, const char *kv, int B, int P, int ctx, bounds_result *b) {
    model_config c;
    char err[512];
    if (model_config_load(&c, config, err, sizeof err)) return cli_fail("%s", err);
    if (P > c.max_seq_len) P = c.max_seq_len;
    if (ctx > c.max_seq_len) ctx = c.max_seq_len;
    bounds_input in = { dtype, kv, B, P, ctx };
    return bounds_compute(&c, g, &in, b, err, sizeof err) ? cli_fail("%s: %s", config, err) : 0;
}

/* The short name of a config or model folder, for the model column. */
static const char *short_name(const char *path, char *buf, int cap) {
    const char *b = strrchr(path, '/');
    b = b && b[1] ? b + 1 : path;
    snprintf(buf, cap, "%s", b);
    char *e = strstr(buf, ".config.json");
    if (!e) e = strstr(buf, ".json");
    if (e) *e = 0;
    return buf;
}

/* ---- sessions: a device, a server, requests, a trace run ----------- */

static int session_begin(lab *L, const char *device, const char *model, const char *analytic_dtype, double kv_mb, int max_batch) {
    char err[512], pf[1100];
    if (L->sessions++) snprintf(pf, sizeof pf, "%s/lab%d-%d.pftrace", L->out, L->n, L->sessions);
    else snprintf(pf, sizeof pf, "%s/lab%d.pftrace", L->out, L->n);
    if (rt_select(device, err, sizeof err)) return cli_fail("%s", err);
    const char *pftrace = pf;
    char *argv[] = { "lab", (char *)device, (char *)model };
    if (cli_trace_open(3, argv, L->db, &pftrace, model)) return -1;
    L->run = trace_run_id();
    server_opts o = { .model_dir = model, .host = "127.0.0.1", .analytic_dtype = analytic_dtype, .kv_cache_mb = kv_mb, .max_batch = max_batch };
    if (!(L->srv = server_start(&o, err, sizeof err))) { trace_close(err, sizeof err); rt_close(); return cli_fail("%s", err); }
    snprintf(L->served, sizeof L->served, "%s", server_model_name(L->srv));
    fprintf(stderr, "hipath lab %d: run %lld: %s on %s\n", L->n, (long long)L->run, model, rt_device_now()->name);
    return 0;
}

static int session_end(lab *L) {
    char err[512];
    server_stop(L->srv);
    L->srv = NULL;
    rt_close();
    return trace_close(err, sizeof err) ? cli_fail("%s", err) : 0;
}

typedef struct { chat_request q; chat_result r; } call;
static void *call_main(void *p) { call *c = p; client_chat(&c->q, &c->r); return NULL; }

/* n requests of text, all sent at once, ids id0..id0+n-1; results in r[]
 * (or NULL). The trace is flushed once they are done, so the next requests
 * start with empty trace rings: a ring that fills mid-request stalls its
 * thread for a flush (0.3-0.5 s here). 0, or -1 when one failed. */
static int send_all(lab *L, const char *text, int max_tokens, int ignore_eos, int n, int64_t id0, chat_result *r) {
    char base[64];
    snprintf(base, sizeof base, "http://127.0.0.1:%d", server_port(L->srv));
    call *c = calloc(n, sizeof *c);
    pthread_t *t = calloc(n, sizeof *t);
    int rc = c && t ? 0 : -1;
    for (int i = 0; !rc && i < n; i++) {
        c[i].q = (chat_request){ .url = base, .model = L->served, .content = text, .max_tokens = max_tokens,
                                 .temperature = 0, .seed = -1, .ignore_eos = ignore_eos, .id = id0 + i };
        if (pthread_create(&t[i], NULL, call_main, &c[i])) { n = i; rc = -1; }
    }
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        if (c[i].r.status != 200 || c[i].r.error[0]) { rc = rc ? rc : cli_fail("lab %d: request %lld: %s", L->n, (long long)(id0 + i), c[i].r.error); }
        if (r) r[i] = c[i].r; else chat_result_free(&c[i].r);
    }
    free(c); free(t);
    char err[512];
    return trace_flush(err, sizeof err) ? cli_fail("%s", err) : rc;
}

/* One session: warm-up (id 1), then one measured request (id 2). */
static int one_request(lab *L, const char *device, const char *model, const char *adt, const char *text, int max_tokens, chat_result *r) {
    if (session_begin(L, device, model, adt, adt ? 4096 : 0, 0)) return -1;
    int rc = send_all(L, "Hi", max_tokens, 1, 1, 1, NULL) || send_all(L, text, max_tokens, 1, 1, 2, r);
    return session_end(L) || rc ? -1 : 0;
}

/* ---- SQL on the trace ---------------------------------------------- */

/* One number: ?1 = the run, ?2, ?3 = a, b. NaN when NULL or no row. */
static double sql1(lab *L, const char *sql, double a, double b) {
    sqlite3 *db;
    sqlite3_stmt *st;
    double v = NA;
    if (sqlite3_open_v2(L->db, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) { sqlite3_close(db); return NA; }
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, L->run);
        sqlite3_bind_double(st, 2, a);
        sqlite3_bind_double(st, 3, b);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) v = sqlite3_column_double(st, 0);
        sqlite3_finalize(st);
    } else fprintf(stderr, "hipath lab: SQL: %s\n", sqlite3_errmsg(db));
    sqlite3_close(db);
    return v;
}

/* The median of x over the rows of FROM (the middle row, or the mean of the
 * two middle rows): step times are skewed by rare host stalls (a trace ring
 * flushing mid-request), which a mean counts and a median does not. */
static double median(lab *L, const char *x, const char *from, double a, double b) {
    char sql[1024];
    snprintf(sql, sizeof sql, "WITH v AS (SELECT %s AS x FROM %s) SELECT avg(x) FROM (SELECT x FROM v ORDER BY x "
             "LIMIT 2 - (SELECT count(*) FROM v) %% 2 OFFSET (SELECT (count(*) - 1) / 2 FROM v))", x, from);
    return sql1(L, sql, a, b);
}

/* The decode steps of request ?2 (v_steps), as a FROM clause. */
#define STEPS_OF_REQ "v_steps WHERE run_id = ?1 AND slice_id IN (SELECT slice_id FROM v_step_requests WHERE run_id = ?1 AND request = ?2)"
#define DECODE_STEPS STEPS_OF_REQ " AND n_prefill = 0"
#define PREFILL_STEP STEPS_OF_REQ " AND n_prefill > 0"
#define REQ_WINDOW "(SELECT start_ns FROM v_request_latency WHERE run_id = ?1 AND request = ?2) AND " \
                   "(SELECT start_ns + e2e_ns FROM v_request_latency WHERE run_id = ?1 AND request = ?2)"
static const char *LAT = "SELECT %s FROM v_request_latency WHERE run_id = ?1 AND request = ?2";

static double latency(lab *L, const char *col, int64_t req) {
    char sql[256];
    snprintf(sql, sizeof sql, LAT, col);
    return sql1(L, sql, (double)req, 0);
}

/* Prompt text whose templated prompt has about P tokens: "Hi " x k. */
static char *prompt_of(const char *model_dir, const char *config, int P) {
    char err[512], path[1100];
    tokenizer *t = NULL;
    if (model_dir) { snprintf(path, sizeof path, "%s/tokenizer.json", model_dir); t = tokenizer_load(path, err, sizeof err); }
    else { model_config c; if (!model_config_load(&c, config, err, sizeof err)) t = tokenizer_placeholder(c.vocab_size, err, sizeof err); }
    if (!t) { cli_fail("%s", err); return NULL; }
    char *text = malloc(3 * (size_t)P + 4);
    int k = 0;
    for (;; k++) {
        for (int i = 0; i < k; i++) memcpy(text + 3 * i, "Hi ", 3);
        text[k ? 3 * k - 1 : 0] = 0;
        if (!k) strcpy(text, "Hi");
        chat_message m = { "user", text };
        char *s = tokenizer_apply_chat(t, &m, 1);
        int n = s ? tokenizer_encode(t, s, strlen(s), NULL, 0, err, sizeof err) : -1;
        free(s);
        if (n < 0 || n >= P || k >= P) break;
    }
    tokenizer_free(t);
    return text;
}

/* The profile the device models: sim:P and analytic:P name it; on cpu the
 * labs model the GPU rows on w7900. */
static const char *gpu_of(const char *device) {
    const rt_device *d = rt_device_now();
    (void)device;
    return d->kind == RT_SIM ? strchr(d->name, ':') + 1 : "w7900";
}

static int load_profile(const char *name, gpu_profile *g) {
    char err[512];
    return gpu_profile_load(g, name, err, sizeof err) ? cli_fail("%s", err) : 0;
}

static int model_dtype(const char *model_dir) {   /* 1 if the model is stored in bf16 */
    char path[1100], err[256];
    snprintf(path, sizeof path, "%s/config.json", model_dir);
    FILE *f = fopen(path, "r");
    char buf[8192] = "";
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = 0;
    (void)err;
    return strstr(buf, "bfloat16") != NULL;
}


/* ---- the labs ------------------------------------------------------ */

static int ops_per_pass(const model_config *c) { return 3 + 16 * c->n_layers + (c->qk_norm ? 2 * c->n_layers : 0); }

static int config_of(const char *model_dir, model_config *c, char *cfg, int cap) {
    char err[512];
    snprintf(cfg, cap, "%s/config.json", model_dir);
    return model_config_load(c, cfg, err, sizeof err) ? cli_fail("%s", err) : 0;
}

/* Lab 1: one "Hi" down and back; counts predicted, layers measured. */
static int lab1(lab *L) {
    model_config c;
    char cfg[1100], nm[128];
    gpu_profile g;
    chat_result r;
    if (config_of(L->model, &c, cfg, sizeof cfg) || load_profile(L->profile, &g)) return -1;
    if (one_request(L, L->device, L->model, NULL, "Hi", 16, &r)) return -1;
    const char *dt = model_dtype(L->model) ? "bf16" : "fp16";
    L->pt = (point){ short_name(L->model, nm, sizeof nm), L->device, dt, "fp32", 1, r.prompt_tokens, r.prompt_tokens + 1 };
    bounds_result b;
    if (bounds(cfg, &g, dt, "fp32", 1, r.prompt_tokens, r.prompt_tokens + 1, &b)) return -1;
    double passes = sql1(L, "SELECT count(*) FROM " DECODE_STEPS, 2, 0) + sql1(L, "SELECT count(*) FROM " PREFILL_STEP, 2, 0);
    row(L, "prompt_tokens", "tokens", r.prompt_tokens, sql1(L, "SELECT a.value FROM args a JOIN slices s ON s.id = a.slice_id WHERE s.run_id = ?1 AND s.layer = 7 "
        "AND s.name = 'tokenize' AND s.request = ?2 AND a.key = 'tokens'", 2, 0), "client usage.prompt_tokens", "layer-7 tokenize args", NULL);
    row(L, "forward_passes", "passes", r.completion_tokens, passes, "completion tokens", "v_steps with the request", NULL);
    row(L, "ops_per_pass", "ops", ops_per_pass(&c), sql1(L, "SELECT avg(n_ops) FROM " DECODE_STEPS, 2, 0), "3 + 16 n_L (+2 n_L qk_norm)", "v_steps.n_ops, decode", NULL);
    row(L, "d2h_bytes_per_token", "B", 4.0 * c.vocab_size, sql1(L, "SELECT sum(a.value) / ?3 FROM slices s JOIN args a ON a.slice_id = s.id AND a.key = 'bytes' "
        "WHERE s.run_id = ?1 AND s.layer = 2 AND s.direction = 'up' AND s.kind = 'slice' AND s.ts_ns BETWEEN " REQ_WINDOW, 2, passes),
        "4 V (f32 logits)", "layer-2 D2H bytes in the request / passes", NULL);
    row(L, "decode_t_lower_s", "s", b.decode.t_lower, median(L, "gpu_ns / 1e9", DECODE_STEPS, 2, 0), "bounds decode.t_lower_s", "v_steps.gpu_ns, decode median",
        "device time per step against the bound: launch latency and idle CUs of tiny grids");
    for (int l = 8; l >= 1; l--) {
        char q[32];
        snprintf(q, sizeof q, "layer_ms_%d", l);
        row(L, q, "ms", NA, sql1(L, "SELECT sum(dur_ns) / 1e6 FROM slices WHERE run_id = ?1 AND layer = ?3 AND depth = 0 AND kind = 'slice' AND ts_ns BETWEEN " REQ_WINDOW, 2, l),
            "", "top-level slices of the layer in the request window", trace_layer_name(l));
    }
    row(L, "ttft_ms", "ms", NA, latency(L, "ttft_ns / 1e6", 2), "", "v_request_latency.ttft_ns", "");
    row(L, "e2e_ms", "ms", NA, latency(L, "e2e_ns / 1e6", 2), "", "v_request_latency.e2e_ns", "");
    journey_row jr[16];
    int nj;
    double total, self[9] = { 0 }, best = -1;
    char err[256], why[64] = "";
    if (!trace_journey(L->db, L->run, jr, &nj, &total, err, sizeof err)) {
        for (int i = 0; i < nj; i++) self[jr[i].layer] += jr[i].self_s;
        for (int l = 1; l <= 8; l++) if (self[l] > (best < 0 ? -1 : self[(int)best])) best = l;
        snprintf(why, sizeof why, "%s: %.0f%% of the run's time", trace_layer_name((int)best), 100 * self[(int)best] / total);
    }
    row(L, "dominant_layer", "layer", NA, best, "", "journey self time (whole run)", why);
    chat_result_free(&r);
    return 0;
}

/* Lab 2: capacity by the calculator; the KV pool of a small server measured. */
static int lab2(lab *L) {
    static const char *CONFIGS[] = { QWEN7B, QWEN14B, "labs/configs/smollm2-135m.config.json", QWEN3_8B, "labs/configs/deepseek-r1-distill-llama-70b.config.json" };
    static const char *DT[] = { "bf16", "int8", "q4_1" };
    char names[1024], nm[128], cfg[1100];
    L->quiet = 1;
    for (size_t i = 0; i < sizeof CONFIGS / sizeof *CONFIGS; i++) {
        gpu_profile_list(names, sizeof names);   /* afresh for each config: strtok_r cuts the list up */
        for (char *save, *p = strtok_r(names, ", ", &save); p; p = strtok_r(NULL, ", ", &save))
            for (int d = 0; d < 3; d++) {
                gpu_profile g;
                model_config c;
                bounds_result b, full;
                if (load_profile(p, &g) || model_config_load(&c, CONFIGS[i], cfg, sizeof cfg)) return -1;
                int P = c.max_seq_len < 4096 ? c.max_seq_len : 4096;
                if (bounds(CONFIGS[i], &g, DT[d], "bf16", 1, P, P, &b) || bounds(CONFIGS[i], &g, DT[d], "bf16", 1, P, c.max_seq_len, &full)) return -1;
                L->pt = (point){ short_name(CONFIGS[i], nm, sizeof nm), p, DT[d], "bf16", 1, P, c.max_seq_len };
                double free1 = b.capacity.device_bytes - b.weights_bytes - b.capacity.workspace_bytes;
                row(L, "weights_bytes", "B", b.weights_bytes, NA, "bounds weights_bytes", "", "");
                row(L, "kv_bytes_per_token", "B", b.kv_bytes_per_token, NA, "bounds kv_bytes_per_token", "", "");
                row(L, "fits_P", "1/0", b.capacity.fits, NA, "bounds capacity.fits at P", "", "");
                row(L, "fits_full_context", "1/0", full.capacity.fits, NA, "bounds capacity.fits at max_position_embeddings", "", "");
                row(L, "max_kv_tokens", "tokens", floor(free1 / b.kv_bytes_per_token), NA, "(M_cap - M_W - M_work) / kv_bytes_per_token", "", "");
                row(L, "max_kv_tokens_2cards", "tokens", floor((free1 + b.capacity.device_bytes - b.capacity.workspace_bytes) / b.kv_bytes_per_token), NA,
                    "(2 M_cap - M_W - 2 M_work) / kv_bytes_per_token", "", "");
            }
    }
    printf("(%d calculator rows: every config x profile x bf16/int8/q4_1, in the CSV)\n", cJSON_GetArraySize(L->rows));
    L->quiet = 0;
    /* (b): 1 MB of KV, 16 requests of up to 128 tokens each */
    model_config c;
    gpu_profile g;
    bounds_result b;
    if (config_of(L->model, &c, cfg, sizeof cfg) || load_profile(L->profile, &g)) return -1;
    if (session_begin(L, L->device, L->model, NULL, 1, 64)) return -1;
    int rc = send_all(L, "Hi", 119, 1, 1, 1, NULL) || send_all(L, "Hi", 119, 1, 16, 2, NULL);
    if (session_end(L) || rc) return -1;
    const char *dt = model_dtype(L->model) ? "bf16" : "fp16";
    if (bounds(cfg, &g, dt, "fp32", 1, 9, 128, &b)) return -1;
    L->pt = (point){ short_name(L->model, nm, sizeof nm), L->device, dt, "fp32", 16, 9, 128 };
    double pool = floor(1048576 / (16 * b.kv_bytes_per_token));
    double pool_m = sql1(L, "SELECT max(CASE a.key WHEN 'free_blocks' THEN a.value END) + max(CASE a.key WHEN 'seq_blocks' THEN a.value END) FROM args a "
                            "WHERE a.slice_id = (SELECT min(id) FROM slices WHERE run_id = ?1 AND name = 'kv_alloc')", 0, 0);
    double kv_pool = sql1(L, "SELECT max(value) FROM counters WHERE run_id = ?1 AND name = 'mem_kv_bytes'", 0, 0);
    row(L, "weights_bytes", "B", b.weights_bytes, sql1(L, "SELECT max(value) FROM counters WHERE run_id = ?1 AND name = 'mem_weights_bytes'", 0, 0),
        "bounds weights_bytes", "counter mem_weights_bytes", "norms and biases are resident as f32, the calculator counts them at b_W");
    row(L, "kv_bytes_per_token", "B", b.kv_bytes_per_token, kv_pool / (16 * pool_m), "bounds kv_bytes_per_token", "mem_kv_bytes / (16 pool blocks)", NULL);
    row(L, "pool_blocks", "blocks", pool, pool_m, "floor(1 MiB / (16 kv_bytes_per_token))", "first kv_alloc: free + seq blocks", "the engine rounds the pool up to whole blocks");
    row(L, "max_running", "requests", fmin(64, floor(pool / 8)), sql1(L, "SELECT max(value) FROM counters WHERE run_id = ?1 AND name = 'running'", 0, 0),
        "min(max_batch, pool_blocks / ceil(128/16))", "counter running, max", "admission promises every request its worst case (prompt + max_tokens)");
    return 0;
}

/* Lab 3: one decode step against its bound, on three devices. */
static int lab3(lab *L) {
    char cfg[1100], nm[128];
    model_config c;
    if (config_of(L->model, &c, cfg, sizeof cfg)) return -1;
    char analytic[200];
    snprintf(analytic, sizeof analytic, "analytic:%s", L->profile);
    const struct { const char *device, *model, *adt, *config; } RUNS[] = {
        { L->device, L->model, NULL, cfg }, { "cpu", L->model, NULL, cfg }, { analytic, QWEN7B, "fp16", QWEN7B } };
    for (int i = 0; i < 3; i++) {
        chat_result r;
        gpu_profile g;
        bounds_result b;
        char err[512];
        if (one_request(L, RUNS[i].device, RUNS[i].model, RUNS[i].adt, "Hi", 32, &r)) return -1;
        if (model_config_load(&c, RUNS[i].config, err, sizeof err)) return cli_fail("%s", err);
        const rt_device *d = rt_device_now();
        int on_gpu = d->kind != RT_CPU;
        if (load_profile(on_gpu ? strchr(d->name, ':') + 1 : "w7900", &g)) return -1;
        const char *dt = RUNS[i].adt ? RUNS[i].adt : model_dtype(L->model) ? "bf16" : "fp16";
        int P = r.prompt_tokens, ctx = P + r.completion_tokens / 2;
        if (bounds(RUNS[i].config, &g, dt, "fp32", 1, P, ctx, &b)) return -1;
        L->pt = (point){ short_name(RUNS[i].model, nm, sizeof nm), d->name, dt, "fp32", 1, P, ctx };
        double k = sql1(L, "SELECT avg(n_launches) FROM " DECODE_STEPS, 2, 0), gpu = median(L, "gpu_ns / 1e9", DECODE_STEPS, 2, 0);
        double step = median(L, "dur_ns / 1e9", DECODE_STEPS, 2, 0);
        double F = sql1(L, "SELECT avg(op_flops) FROM " DECODE_STEPS, 2, 0), R = sql1(L, "SELECT avg(op_bytes) FROM " DECODE_STEPS, 2, 0);
        const char *host = on_gpu ? "" : "on cpu the bound is the w7900's: the ratio shows how far the CPU is from that GPU";
        row(L, "F", "FLOP", b.decode.flops, F, "bounds decode.flops", "v_steps.op_flops, decode mean", "the trace also counts norms, RoPE, attention scores");
        row(L, "R", "B", b.decode.bytes, R, "bounds decode.bytes", "v_steps.op_bytes, decode mean", "the trace counts activations in and out of every op");
        row(L, "t_compute", "s", b.decode.t_compute, NA, "F / Pi", "", "");
        row(L, "t_memory", "s", b.decode.t_memory, NA, "R / beta", "", "");
        row(L, "launch_total", "s", ops_per_pass(&c) * g.launch_latency_s, NA, "kernels_per_step x launch_latency_s", "", "");
        row(L, "kernels_per_step", "kernels", ops_per_pass(&c), k, "ops_per_pass", "v_steps.n_launches", "");
        row(L, "gpu_s", "s", b.decode.t_lower, on_gpu ? gpu : NA, "decode.t_lower_s", "v_steps.gpu_ns, decode median (modeled)",
            on_gpu ? "ratio = 1/MBU of the device: launch latency and small grids" : "no device time on cpu");
        row(L, "step_s", "s", b.decode.t_lower, step, "decode.t_lower_s", "v_steps.dur_ns, decode median (host clock)", on_gpu ? "ratio = 1/MBU of the step: device time plus the host's launches" : host);
        row(L, "MBU_device", "", NA, on_gpu ? R / (g.bandwidth * gpu) : NA, "", "R / (beta gpu_s)", "");
        row(L, "MBU_step", "", NA, R / (g.bandwidth * step), "", "R / (beta step_s)", host);
        row(L, "MFU_step", "", NA, F / (g.peak.fp32 * step), "", "F / (Pi step_s)", "");
        /* least squares of op time against op bytes, one point per op name (its median
         * time over the decode steps, its mean bytes): a stalled op does not tip the line */
        const char *fit = "WITH d AS (SELECT s.name, s.dur_ns * 1e-9 AS y, a.value AS x FROM slices s JOIN args a ON a.slice_id = s.id AND a.key = 'bytes' "
                          "WHERE s.run_id = ?1 AND s.layer = 4 AND s.direction = 'down' AND s.step IN (SELECT step FROM " DECODE_STEPS ")), "
                          "r AS (SELECT *, row_number() OVER (PARTITION BY name ORDER BY y) AS i, count(*) OVER (PARTITION BY name) AS n FROM d), "
                          "o AS (SELECT name, avg(x) AS x, avg(CASE WHEN 2 * i - n BETWEEN 0 AND 2 THEN y END) AS y FROM r GROUP BY name) ";
        char sql[1600];
        snprintf(sql, sizeof sql, "%s SELECT (count(*) * sum(x*y) - sum(x) * sum(y)) / (count(*) * sum(x*x) - sum(x) * sum(x)) FROM o", fit);
        double slope = sql1(L, sql, 2, 0);
        snprintf(sql, sizeof sql, "%s SELECT (sum(y) - ?3 * sum(x)) / count(*) FROM o", fit);
        row(L, "op_overhead_s", "s", NA, sql1(L, sql, 2, slope), "", "intercept of op median dur_ns against bytes", "host time per op that no byte explains");
        row(L, "beta_eff", "B/s", g.bandwidth, 1 / slope, "profile beta", "1 / slope of that fit", on_gpu ? "layer-4 op time is host time: what the host achieves per byte" : host);
        chat_result_free(&r);
    }
    return 0;
}

/* Lab 4: B requests at once; the step time and throughput against B. */
static int lab4(lab *L) {
    static const int BS[] = { 1, 2, 4, 8, 16 };
    enum { NB = sizeof BS / sizeof *BS, TOK = 32 };
    char cfg[1100], nm[128];
    model_config c;
    gpu_profile g;
    if (config_of(L->model, &c, cfg, sizeof cfg) || load_profile(L->profile, &g)) return -1;
    if (session_begin(L, L->device, L->model, NULL, 64, 64)) return -1;
    int64_t id0[NB], id = 2, P = 0;
    int rc = send_all(L, "Hi", TOK, 1, 1, 1, NULL), ntok[NB] = { 0 };
    for (int i = 0; i < NB && !rc; i++) {
        chat_result r[16];
        id0[i] = id;
        rc = send_all(L, "Hi", TOK, 1, BS[i], id, r);
        for (int k = 0; k < BS[i]; k++) { P = r[k].prompt_tokens; ntok[i] += r[k].completion_tokens; chat_result_free(&r[k]); }
        id += BS[i];
    }
    if (session_end(L) || rc) return -1;
    const char *dt = model_dtype(L->model) ? "bf16" : "fp16";
    double thr[NB];
    for (int i = 0; i < NB; i++) {
        bounds_result b;
        int B = BS[i];
        if (bounds(cfg, &g, dt, "fp32", B, (int)P, (int)P + TOK / 2, &b)) return -1;
        L->pt = (point){ short_name(L->model, nm, sizeof nm), L->device, dt, "fp32", B, (int)P, (int)P + TOK / 2 };
        /* the decode steps of the B requests (named by their first request), and those with all B in */
        char grp[300], full[340];
        snprintf(grp, sizeof grp, "v_steps WHERE run_id = ?1 AND n_prefill = 0 AND slice_id IN "
                 "(SELECT slice_id FROM v_step_requests WHERE run_id = ?1 AND request BETWEEN ?2 AND ?3)");
        snprintf(full, sizeof full, "%s AND n_decode = %d", grp, B);
        double a = id0[i], z = id0[i] + B - 1, step = median(L, "dur_ns / 1e9", full, a, z), tpot = median(L, "dur_ns / 1e9", grp, a, z);
        char sql[600];
        snprintf(sql, sizeof sql, "SELECT avg(n_device) FROM %s", full);
        double kps = sql1(L, sql, a, z);
        thr[i] = B / step;
        double ttft = median(L, "ttft_ns / 1e9", "v_request_latency WHERE run_id = ?1 AND request BETWEEN ?2 AND ?3", a, z);
        double e2e = ntok[i] / sql1(L, "SELECT (max(start_ns + e2e_ns) - min(start_ns)) / 1e9 FROM v_request_latency WHERE run_id = ?1 AND request BETWEEN ?2 AND ?3", a, z);
        row(L, "t_step", "s", b.decode.t_lower, step, "decode.t_lower_s", "v_steps.dur_ns, median of the steps with n_decode = B", NULL);
        row(L, "throughput", "tok/s", B / b.decode.t_lower, thr[i], "B / t_step", "B / step_s", bounds_compute_bound(&b.decode) ? "compute-bound" : "memory-bound: the bound rises with B");
        row(L, "tpot", "s", b.decode.t_lower, tpot, "t_step", "v_steps.dur_ns, median of every decode step of the B requests", NULL);
        row(L, "ttft", "s", NA, ttft, "", "median v_request_latency.ttft_ns", "");
        row(L, "throughput_e2e", "tok/s", NA, e2e, "", "completion tokens / (last end - first start)", "");
        row(L, "kernels_per_step", "kernels", ops_per_pass(&c) + (B - 1) * 2 * c.n_layers, kps, "ops_per_pass + 2 n_L (B-1): attention per sequence", "v_steps.n_device", NULL);
        if (i == NB - 1) {
            double knee = NA;
            for (int k = 0; k + 1 < NB && isnan(knee); k++) if (thr[k + 1] / thr[k] < 1.5) knee = BS[k];
            row(L, "b_star", "B", b.b_star, NA, "b_W Pi / (2 beta)", "", "");
            row(L, "knee_B", "B", b.b_star, knee, "b_star", "smallest B with throughput(2B)/throughput(B) < 1.5", "the knee comes where host time per step stops being shared");
        }
    }
    gpu_profile g2;
    if (load_profile("rtx-pro-6000", &g2)) return -1;
    for (int i = 0; i < NB; i++) {
        bounds_result b;
        if (bounds(QWEN3_8B, &g2, "bf16", "bf16", BS[i], 2048, 2048, &b)) return -1;
        L->pt = (point){ "qwen3-8b", "rtx-pro-6000", "bf16", "bf16", BS[i], 2048, 2048 };
        row(L, "t_step", "s", b.decode.t_lower, NA, "decode.t_lower_s (calculator only)", "", "");
        row(L, "throughput", "tok/s", BS[i] / b.decode.t_lower, NA, "B / t_step", "", bounds_compute_bound(&b.decode) ? "compute-bound" : "memory-bound");
        if (i == NB - 1) row(L, "b_star", "B", b.b_star, NA, "b_W Pi / (2 beta)", "", "");
    }
    return 0;
}

/* Lab 5: TTFT and the prefill step against the prompt length. */
static int lab5(lab *L) {
    static const int PS[] = { 16, 64, 128, 256 };
    enum { NP = sizeof PS / sizeof *PS };
    char cfg[1100], nm[128], analytic[200];
    model_config c;
    if (config_of(L->model, &c, cfg, sizeof cfg)) return -1;
    snprintf(analytic, sizeof analytic, "analytic:%s", L->profile);
    const struct { const char *device, *model, *adt, *config, *tokdir; } RUNS[] = {
        { L->device, L->model, NULL, cfg, L->model }, { analytic, QWEN7B, "fp16", QWEN7B, NULL } };
    for (int i = 0; i < 2; i++) {
        if (session_begin(L, RUNS[i].device, RUNS[i].model, RUNS[i].adt, RUNS[i].adt ? 1024 : 0, 0)) return -1;
        const rt_device *d = rt_device_now();
        gpu_profile g = d->prof;
        int rc = send_all(L, "Hi", 8, 1, 1, 1, NULL), np = 0;
        int plen[NP];
        for (int k = 0; k < NP && !rc; k++) {
            if (PS[k] > c.max_seq_len - 8 && !RUNS[i].adt) break;
            char *text = prompt_of(RUNS[i].tokdir, RUNS[i].config, PS[k]);
            chat_result r;
            rc = !text || send_all(L, text, 8, 1, 1, 2 + k, &r);
            if (!rc) { plen[np++] = r.prompt_tokens; chat_result_free(&r); }
            free(text);
        }
        char dev[160];
        snprintf(dev, sizeof dev, "%s", d->name);
        if (session_end(L) || rc) return -1;
        const char *dt = RUNS[i].adt ? RUNS[i].adt : model_dtype(L->model) ? "bf16" : "fp16";
        double prev = NA, knee = NA, cross = NA;
        for (int k = 0; k < np; k++) {
            bounds_result b;
            int P = plen[k];
            if (bounds(RUNS[i].config, &g, dt, "fp32", 1, P, P, &b)) return -1;
            L->pt = (point){ short_name(RUNS[i].model, nm, sizeof nm), dev, dt, "fp32", 1, P, P };
            double pstep = sql1(L, "SELECT dur_ns / 1e9 FROM " PREFILL_STEP, 2 + k, 0);
            if (!isnan(prev) && isnan(knee) && pstep / prev > 1.6) knee = plen[k - 1];
            if (isnan(cross) && bounds_compute_bound(&b.prefill)) cross = P;
            prev = pstep;
            row(L, "prefill_flops", "FLOP", b.prefill.flops, sql1(L, "SELECT op_flops FROM " PREFILL_STEP, 2 + k, 0), "prefill.flops", "v_steps.op_flops, prefill", NULL);
            row(L, "prefill_bytes", "B", b.prefill.bytes, sql1(L, "SELECT op_bytes FROM " PREFILL_STEP, 2 + k, 0), "prefill.bytes", "v_steps.op_bytes, prefill", NULL);
            row(L, "prefill_intensity", "FLOP/B", b.prefill.intensity, NA, "prefill.arithmetic_intensity", "", bounds_compute_bound(&b.prefill) ? "compute-bound" : "memory-bound");
            row(L, "prefill_t_device", "s", b.prefill.t_lower, sql1(L, "SELECT gpu_ns / 1e9 FROM " PREFILL_STEP, 2 + k, 0), "prefill.t_lower_s", "v_steps.gpu_ns, prefill", NULL);
            row(L, "prefill_step", "s", b.prefill.t_lower, pstep, "prefill.t_lower_s", "v_steps.dur_ns, prefill", NULL);
            row(L, "ttft", "s", b.prefill.t_lower, latency(L, "ttft_ns / 1e9", 2 + k), "prefill.t_lower_s", "v_request_latency.ttft_ns", "TTFT adds HTTP, tokenizer, queue and the first sample");
            if (bounds(RUNS[i].config, &g, dt, "fp32", 1, P, P + 4, &b)) return -1;
            row(L, "decode_step", "s", b.decode.t_lower, median(L, "dur_ns / 1e9", DECODE_STEPS, 2 + k, 0), "decode.t_lower_s", "v_steps.dur_ns, decode median", NULL);
        }
        row(L, "P_cross", "tokens", cross, NA, "smallest swept P with prefill compute-bound", "", isnan(cross) ? "no swept P is compute-bound" : "");
        row(L, "P_knee", "tokens", cross, knee, "P_cross", "smallest P with prefill_step(2P)/prefill_step(P) > 1.6", "");
        /* each kernel on the roofline (every P together) */
        sqlite3 *db;
        sqlite3_stmt *st;
        if (sqlite3_open_v2(L->db, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
            sqlite3_prepare_v2(db, "SELECT name, flops / bytes, gflop_per_s, gbyte_per_s FROM v_kernel_time WHERE run_id = ?1 AND layer = 1 AND bytes > 0", -1, &st, NULL) == SQLITE_OK) {
            sqlite3_bind_int64(st, 1, L->run);
            while (sqlite3_step(st) == SQLITE_ROW) {
                char why[96];
                double I = sqlite3_column_double(st, 1), gf = sqlite3_column_double(st, 2);
                snprintf(why, sizeof why, "kernel %s", (const char *)sqlite3_column_text(st, 0));
                row(L, "kernel_intensity", "FLOP/B", NA, I, "", "v_kernel_time flops / bytes", why);
                row(L, "kernel_roof_fraction", "", 1, gf * 1e9 / fmin(g.peak.fp32, I * g.bandwidth), "the roof", "gflop_per_s / min(Pi, I beta)", why);
            }
            sqlite3_finalize(st);
        }
        sqlite3_close(db);
    }
    return 0;
}

/* Lab 6: the context grows; KV bytes against weight bytes; paged blocks. */
static int lab6(lab *L) {
    static const int PS[] = { 64, 128, 256 };
    enum { NP = sizeof PS / sizeof *PS, TOK = 40 };
    char cfg[1100], nm[128];
    model_config c;
    gpu_profile g;
    if (config_of(L->model, &c, cfg, sizeof cfg) || load_profile(L->profile, &g)) return -1;
    if (session_begin(L, L->device, L->model, NULL, 0, 0)) return -1;
    int rc = send_all(L, "Hi", TOK, 1, 1, 1, NULL), plen[NP], np = 0;
    for (int k = 0; k < NP && !rc && PS[k] <= c.max_seq_len - 64; k++) {
        char *text = prompt_of(L->model, NULL, PS[k]);
        chat_result r;
        rc = !text || send_all(L, text, TOK, 1, 1, 2 + k, &r);
        if (!rc) { plen[np++] = r.prompt_tokens; chat_result_free(&r); }
        free(text);
    }
    if (session_end(L) || rc) return -1;
    const char *dt = model_dtype(L->model) ? "bf16" : "fp16";
    for (int k = 0; k < np; k++) {
        bounds_result b;
        int P = plen[k];
        if (bounds(cfg, &g, dt, "fp32", 1, P, P + TOK / 2, &b)) return -1;
        L->pt = (point){ short_name(L->model, nm, sizeof nm), L->device, dt, "fp32", 1, P, P + TOK / 2 };
        row(L, "kv_bytes_per_token", "B", b.kv_bytes_per_token, NA, "bounds kv_bytes_per_token", "", "");
        row(L, "weight_bytes_per_step", "B", b.decode.weight_bytes, sql1(L, "SELECT avg(weight_bytes) FROM " DECODE_STEPS, 2 + k, 0), "decode.weight_bytes", "v_steps.weight_bytes (matmuls)", NULL);
        row(L, "kv_bytes_per_step", "B", b.decode.kv_bytes, sql1(L, "SELECT avg(attention_bytes) FROM " DECODE_STEPS, 2 + k, 0), "decode.kv_bytes at the mean context", "v_steps.attention_bytes", NULL);
        row(L, "L_x", "tokens", b.decode.weight_bytes / b.kv_bytes_per_token, NA, "weight_bytes / kv_bytes_per_token", "", "the context where KV reads equal weight reads");
        row(L, "t_lower", "s", b.decode.t_lower, median(L, "gpu_ns / 1e9", DECODE_STEPS, 2 + k, 0), "decode.t_lower_s", "v_steps.gpu_ns, decode median", NULL);
        row(L, "step_s", "s", b.decode.t_lower, median(L, "dur_ns / 1e9", DECODE_STEPS, 2 + k, 0), "decode.t_lower_s", "v_steps.dur_ns, decode median", NULL);
        const char *fit = "WITH o AS (SELECT dur_ns * 1e-9 AS y, step AS x FROM " DECODE_STEPS ") "
                          "SELECT (count(*) * sum(x*y) - sum(x) * sum(y)) / (count(*) * sum(x*x) - sum(x) * sum(x)) FROM o";
        row(L, "slope_s_per_token", "s/token", b.kv_bytes_per_token / g.bandwidth, sql1(L, fit, 2 + k, 0), "kv_bytes_per_token / beta", "least squares of step dur_ns against the step", NULL);
        double blocks = ceil((P + TOK) / 16.0);
        row(L, "kv_alloc_events", "events", 1 + blocks - ceil(P / 16.0), sql1(L, "SELECT count(*) FROM slices WHERE run_id = ?1 AND name = 'kv_alloc' AND request = ?2", 2 + k, 0),
            "1 + ceil((P + 40) / 16) - ceil(P / 16)", "kv_alloc instants of the request", "the prompt's blocks come in one kv_alloc, then one per new block");
        row(L, "kv_blocks_end", "blocks", blocks, sql1(L, "SELECT a.value FROM slices s JOIN args a ON a.slice_id = s.id AND a.key = 'blocks' "
            "WHERE s.run_id = ?1 AND s.name = 'kv_free' AND s.request = ?2", 2 + k, 0), "ceil((P + 40) / 16)", "kv_free blocks", NULL);
    }
    gpu_profile g2;
    if (load_profile("rtx-pro-6000", &g2)) return -1;
    static const int LS[] = { 2048, 8192, 32768, 40960 }, BS[] = { 1, 8, 64 };
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++) {
            bounds_result b;
            if (bounds(QWEN3_8B, &g2, "bf16", "bf16", BS[j], LS[i], LS[i], &b)) return -1;
            L->pt = (point){ "qwen3-8b", "rtx-pro-6000", "bf16", "bf16", BS[j], LS[i], LS[i] };
            row(L, "kv_bytes_per_step", "B", b.decode.kv_bytes, NA, "decode.kv_bytes (calculator only)", "", "");
            row(L, "L_x", "tokens", b.decode.weight_bytes / (BS[j] * b.kv_bytes_per_token), NA, "weight_bytes / (B kv_bytes_per_token)", "", "");
            row(L, "t_lower", "s", b.decode.t_lower, NA, "decode.t_lower_s", "", "");
            row(L, "kv_capacity_fits", "1/0", b.capacity.fits, NA, "capacity.fits", "", "");
        }
    return 0;
}

/* Lab 7: how much of a request a 2x GPU speeds up. Profiles with doubled
 * numbers are written to OUT as P-2x.json and P-2xflops.json. */
static int write_profile(lab *L, const char *suffix, double bw, double flops, char *path, int cap) {
    char src[1100];
    snprintf(src, sizeof src, "layers/gpu/profiles/%s.json", L->profile);
    FILE *f = fopen(src, "r");
    if (!f) return cli_fail("lab 7: %s: cannot read (run from the repository root)", src);
    char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    cJSON *j = cJSON_Parse(buf), *p = j ? cJSON_GetObjectItem(j, "peak_flops") : NULL, *e;
    if (!j) return cli_fail("lab 7: %s: not valid JSON", src);
    cJSON *b = cJSON_GetObjectItem(j, "memory_bandwidth_bytes_per_s");
    if (cJSON_IsNumber(b)) cJSON_SetNumberValue(b, b->valuedouble * bw);
    cJSON_ArrayForEach(e, p) if (cJSON_IsNumber(e)) cJSON_SetNumberValue(e, e->valuedouble * flops);
    snprintf(path, cap, "%s/%s-%s.json", L->out, L->profile, suffix);
    char *s = cJSON_Print(j);
    f = fopen(path, "w");
    int rc = f && s && fputs(s, f) >= 0 ? 0 : cli_fail("%s: cannot write", path);
    if (f) fclose(f);
    free(s);
    cJSON_Delete(j);
    return rc;
}

static int lab7(lab *L) {
    char cfg[1100], nm[128], p2x[1200], pfl[1200], dev[5][1300];
    model_config c;
    if (config_of(L->model, &c, cfg, sizeof cfg) || write_profile(L, "2x", 2, 2, p2x, sizeof p2x) || write_profile(L, "2xflops", 1, 2, pfl, sizeof pfl)) return -1;
    snprintf(dev[0], sizeof dev[0], "sim:%s", L->profile);
    snprintf(dev[1], sizeof dev[1], "sim:%s", p2x);
    snprintf(dev[2], sizeof dev[2], "analytic:%s", L->profile);
    snprintf(dev[3], sizeof dev[3], "analytic:%s", p2x);
    snprintf(dev[4], sizeof dev[4], "analytic:%s", pfl);
    double e2e_base = NA, tpot_base = NA;
    for (int i = 0; i < 5; i++) {
        int an = i >= 2;
        const char *model = an ? QWEN14B : L->model, *config = an ? QWEN14B : cfg, *dt = an ? "fp16" : model_dtype(L->model) ? "bf16" : "fp16";
        chat_result r;
        if (one_request(L, dev[i], model, an ? "fp16" : NULL, "Hi", 32, &r)) return -1;
        gpu_profile g = rt_device_now()->prof;
        model_config mc;
        char err[256];
        if (model_config_load(&mc, config, err, sizeof err)) return cli_fail("%s", err);
        bounds_result b, pre;
        int P = r.prompt_tokens, n = r.completion_tokens;
        if (bounds(config, &g, dt, "fp32", 1, P, P + n / 2, &b) || bounds(config, &g, dt, "fp32", 1, P, P, &pre)) return -1;
        L->pt = (point){ short_name(model, nm, sizeof nm), dev[i], dt, "fp32", 1, P, P + n / 2 };
        double e2e = latency(L, "e2e_ns / 1e9", 2), tpot = median(L, "dur_ns / 1e9", DECODE_STEPS, 2, 0);
        double device = sql1(L, "SELECT sum(dur_ns) / 1e9 FROM slices WHERE run_id = ?1 AND layer = 1 AND kind = 'slice' AND ts_ns BETWEEN " REQ_WINDOW, 2, 0);
        double pred = (n - 1) * b.decode.t_lower + pre.prefill.t_lower + n * ops_per_pass(&mc) * g.launch_latency_s;
        row(L, "e2e_s", "s", NA, e2e, "", "v_request_latency.e2e_ns", "");
        row(L, "ttft_s", "s", NA, latency(L, "ttft_ns / 1e9", 2), "", "v_request_latency.ttft_ns", "");
        row(L, "tpot_s", "s", b.decode.t_lower, tpot, "decode.t_lower_s", "v_steps.dur_ns, decode median", NULL);
        row(L, "device_s", "s", pred, device, "steps x t_lower + prefill t_lower + kernels x launch latency", "layer-1 dur_ns in the request window", NULL);
        for (int l = 8; l >= 2; l--) {
            char q[32];
            snprintf(q, sizeof q, "host_layer_s_%d", l);
            row(L, q, "s", NA, sql1(L, "SELECT sum(dur_ns) / 1e9 FROM slices WHERE run_id = ?1 AND layer = ?3 AND depth = 0 AND kind = 'slice' AND clock = 'measured' "
                "AND ts_ns BETWEEN " REQ_WINDOW, 2, l), "", "top-level measured slices of the layer in the request window", trace_layer_name(l));
        }
        row(L, "launch_s", "s", NA, sql1(L, "SELECT sum(dur_ns) / 1e9 FROM slices WHERE run_id = ?1 AND layer = 3 AND ts_ns BETWEEN " REQ_WINDOW, 2, 0),
            "", "layer-3 launches in the request window", "");
        double f = device / e2e;
        if (i == 0 || i == 2) {
            e2e_base = e2e; tpot_base = tpot;
            char why[96];
            snprintf(why, sizeof why, "the device is %.0f%% of the request", 100 * f);
            row(L, "f", "", NA, f, "", "device_s / e2e_s", why);
            row(L, "speedup_amdahl", "x", 1 / ((1 - f) + f / 2), NA, "1 / ((1 - f) + f / 2)", "", "");
            row(L, "speedup_flops_only", "x", bounds_compute_bound(&b.decode) ? 1 / ((1 - f) + f / 2) : 1, NA, "decode at B = 1 is memory-bound: 1", "", "");
        } else {
            row(L, "speedup_measured", "x", NA, e2e_base / e2e, "", "e2e base / e2e here", i == 4 ? "only FLOP/s doubled: decode does not care" : "");
            row(L, "tpot_speedup_measured", "x", NA, tpot_base / tpot, "", "tpot base / tpot here", "");
        }
        chat_result_free(&r);
    }
    return 0;
}

typedef int (*lab_fn)(lab *);
static const lab_fn LABS[] = { lab1, lab2, lab3, lab4, lab5, lab6, lab7 };
#define NLABS (int)(sizeof LABS / sizeof *LABS)

int cmd_lab(int argc, char **argv) {
    static const struct option OPTS[] = { { "device", 1, 0, 'D' }, { "model", 1, 0, 'm' }, { "out", 1, 0, 'o' }, { "help", 0, 0, 'h' }, { 0, 0, 0, 0 } };
    lab L = { .device = "auto", .model = "models/tiny-hi" };
    char out[1024];
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", OPTS, NULL)) != -1) {
        switch (c) {
        case 'D': L.device = optarg; break;
        case 'm': L.model = optarg; break;
        case 'o': L.out = optarg; break;
        case 'h': fputs(USAGE, stdout); return 0;
        default: return cli_fail("lab: unknown or incomplete option '%s' (see --help)", argv[optind - 1]);
        }
    }
    long n;
    if (optind != argc - 1 || parse_int(argv[optind], 1, NLABS, &n)) return cli_fail("lab: give the lab's number, 1 to %d (hipath lab --help)", NLABS);
    L.n = (int)n;
    if (!L.out) { snprintf(out, sizeof out, "labs/out/lab%d", L.n); L.out = out; }
    char path[1100];
    if (snprintf(L.db, sizeof L.db, "%s/lab%d.db", L.out, L.n) >= (int)sizeof L.db || cli_make_parent(L.db)) return cli_fail("--out %s: cannot create the folder", L.out);
    unlink(L.db);   /* each lab run starts a fresh database */
    snprintf(path, sizeof path, "%s/lab%d.csv", L.out, L.n);
    if (!(L.csv = fopen(path, "w"))) return cli_fail("%s: cannot write", path);
    fprintf(L.csv, "lab,run_id,model,device,dtype,kv_dtype,batch,prompt_len,context,quantity,unit,predicted,measured,ratio,predicted_from,measured_from,reading\n");
    L.rows = cJSON_CreateArray();
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    char err[512];
    if (rt_select(L.device, err, sizeof err)) { fclose(L.csv); cJSON_Delete(L.rows); return cli_fail("%s", err); }
    snprintf(L.profile, sizeof L.profile, "%s", gpu_of(L.device));
    if (!strcmp(L.device, "auto")) L.device = rt_device_now()->name[0] == 'h' ? "hip:0" : "sim:w7900";
    double t0 = host_seconds();
    int rc = LABS[L.n - 1](&L);
    double seconds = host_seconds() - t0;
    fclose(L.csv);
    cJSON *j = cJSON_CreateObject();
    gpu_profile g;
    cJSON_AddNumberToObject(j, "lab", L.n);
    cJSON_AddStringToObject(j, "device", L.device);
    if (!gpu_profile_load(&g, L.profile, err, sizeof err)) {
        cJSON *p = cJSON_AddObjectToObject(j, "profile");
        cJSON_AddStringToObject(p, "name", g.name);
        cJSON_AddNumberToObject(p, "memory_bytes", g.memory_bytes);
        cJSON_AddNumberToObject(p, "memory_bandwidth_bytes_per_s", g.bandwidth);
        cJSON_AddNumberToObject(p, "peak_flops_fp32", g.peak.fp32);
        cJSON_AddNumberToObject(p, "peak_flops_fp16", g.peak.fp16);
        cJSON_AddNumberToObject(p, "launch_latency_s", g.launch_latency_s);
    }
    cJSON_AddItemToObject(j, "rows", L.rows);
    snprintf(path, sizeof path, "%s/lab%d.json", L.out, L.n);
    char *s = cJSON_Print(j);
    FILE *f = fopen(path, "w");
    if (f && s) fputs(s, f);
    if (f) fclose(f);
    free(s);
    cJSON_Delete(j);
    curl_global_cleanup();
    fprintf(stderr, "\nlab %d: %s in %.1f s; %s/lab%d.{csv,json,db,pftrace}\n", L.n, rc ? "FAILED" : "done",
            seconds, L.out, L.n);
    return rc ? 1 : 0;
}
