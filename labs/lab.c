/*
 * lab.c -- what the labs share (lab.h): rows to a table, CSV and JSON;
 * the model and the calculator; sessions (a stack, stack/) and requests;
 * the SQL of labs/sql/. run.c runs one lab with them.
 */
#define LAB_SQL_TEXT        /* lab_sql.h: the texts of labs/sql/ too */
#include "labs/lab.h"
#include "kernels/backend.h"
#include "layers/common/kv.h"
#include "layers/scheduler/scheduler.h"
#include "layers/tokenizer/tokenizer.h"
#include "trace/db_error.h"
#include "trace/trace.h"
#include "trace/trace_sink.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

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

void lab_row(lab *L, const char *q, const char *unit, double pred, double meas, const char *pfrom, const char *mfrom, const char *reading) {
    double ratio = !isnan(pred) && !isnan(meas) && pred != 0 ? meas / pred : NA;
    if (!reading) reading = gap(ratio);
    lab_point *p = &L->pt;
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
    if (L->quiet || L->json) return;
    if (!L->printed++) printf("%-26s %-54s %5s %5s %12s %12s %8s  %s\n", "quantity", "model @ device", "B", "P", "predicted", "measured", "ratio", "reading");
    char who[55], pr[16] = "", me[16] = "", ra[16] = "";
    snprintf(who, sizeof who, "%s @ %s", p->model ? p->model : "", p->device ? p->device : "");
    if (!isnan(pred)) snprintf(pr, sizeof pr, "%.4g", pred);
    if (!isnan(meas)) snprintf(me, sizeof me, "%.4g", meas);
    if (!isnan(ratio)) snprintf(ra, sizeof ra, "%.3g", ratio);
    printf("%-26s %-54s %5d %5d %12s %12s %8s  %s\n", q, who, p->batch, p->prompt_len, pr, me, ra, reading);
}

/* ---- the model and the calculator ---------------------------------- */

int lab_config(const char *model_dir, model_config *c, char *cfg, int cap) {
    char err[512];
    snprintf(cfg, cap, "%s/config.json", model_dir);
    return model_config_load(c, cfg, err, sizeof err) ? stack_fail("%s", err) : 0;
}

const char *lab_dtype(const model_config *c) {
    return c->torch_dtype == DT_BF16 ? "bf16" : c->torch_dtype == DT_F16 ? "fp16" : "fp32";
}

int lab_profile(const char *name, gpu_profile *g) {
    char err[512];
    return gpu_profile_load(g, name, err, sizeof err) ? stack_fail("%s", err) : 0;
}

void lab_profile_rows(lab *L, const gpu_profile *g, const char *name) {
    L->pt = (lab_point){ "profile", name, "", "", 0, 0, 0 };
    lab_row(L, "memory_gb", "GB", g->memory_bytes / 1073741824.0, NA, "memory_bytes / 2^30: the profile stores the datasheet's GB as GiB", "", "");
    lab_row(L, "bandwidth", "B/s", g->bandwidth, NA, "memory_bandwidth_bytes_per_s", "", "");
    lab_row(L, "peak_fp32", "FLOP/s", g->peak.fp32, NA, "peak_flops.fp32", "", "");
    lab_row(L, "peak_fp16", "FLOP/s", g->peak.fp16, NA, "peak_flops.fp16", "", "");
    lab_row(L, "peak_bf16", "FLOP/s", g->peak.bf16, NA, "peak_flops.bf16", "", "");
    lab_row(L, "compute_units", "CUs", g->compute_units, NA, "compute_units", "", "");
    lab_row(L, "read_1gb_s", "s", 1e9 / g->bandwidth, NA, "1 GB / beta", "", "");
}

int lab_bounds_with(const char *config, const gpu_profile *g, const char *dtype, const char *kv, int B, int P, int ctx,
                    const bounds_options *opt, bounds_result *b) {
    model_config c;
    char err[512];
    if (model_config_load(&c, config, err, sizeof err)) return stack_fail("%s", err);
    if (P > c.max_seq_len) P = c.max_seq_len;
    if (ctx > c.max_seq_len) ctx = c.max_seq_len;
    bounds_input in = { dtype, kv, B, P, ctx };
    return bounds_compute_with(&c, g, &in, opt, b, err, sizeof err) ? stack_fail("%s: %s", config, err) : 0;
}

int lab_bounds(const char *config, const gpu_profile *g, const char *dtype, const char *kv, int B, int P, int ctx, bounds_result *b) {
    return lab_bounds_with(config, g, dtype, kv, B, P, ctx, &(bounds_options){ 0 }, b);
}

int lab_step_model(const char *config, const gpu_profile *g, lab_step *m) {
    bounds_result b;
    model_config c;
    char err[512];
    if (lab_bounds(config, g, "bf16", "bf16", 1, 1, 1, &b)) return -1;
    if (model_config_load(&c, config, err, sizeof err)) return stack_fail("%s", err);
    double attn = 0, head = 0;
    for (int i = 0; i < b.nops; i++) {
        if (!strcmp(b.op[i].name, "attn")) attn = b.op[i].phase[BOUNDS_PREFILL].flops;   /* P = 1: one pair */
        if (!strcmp(b.op[i].name, "lm_head")) head = b.op[i].phase[BOUNDS_DECODE].flops;
    }
    *m = (lab_step){ .weights_s = b.decode.weight_bytes / b.bandwidth, .launches_s = (3 + 16 * c.n_layers + 4) * g->launch_latency_s,
                     .per_id = (b.decode.flops - attn - head) / b.peak, .per_pair = attn / g->peak.fp32,
                     .per_position = b.kv_bytes_per_token / b.bandwidth, .per_sample = head / b.peak + 4.0 * c.vocab_size / g->host_link };
    return 0;
}

double lab_t_step(const lab_step *m, double n, double pairs, double positions, double sampled) {
    return fmax(m->weights_s, n * m->per_id) + m->launches_s + pairs * m->per_pair + positions * m->per_position + sampled * m->per_sample;
}

double lab_pairs(double from, double to) { return (to - from) * from + (to - from) * (to - from + 1) / 2; }

/* ---- sessions: a device, a server, requests, a trace run ----------- */

int lab_trace_begin(lab *L, const char *device, const char *model) {
    char err[512], pf[1100], cmd[1400];
    const char *pfp = pf;
    if (L->sessions++) snprintf(pf, sizeof pf, "%s/%s-%d.pftrace", L->out, L->tag, L->sessions);
    else snprintf(pf, sizeof pf, "%s/%s.pftrace", L->out, L->tag);
    L->st = (stack){ .run = -1 };
    if (stack_device(&L->st, device, err, sizeof err)) return stack_fail("%s", err);
    const rt_device *d = rt_device_now();
    snprintf(L->session_device, sizeof L->session_device, "%s", d->name);
    L->session_on_cpu = d->driver == &rt_host;   /* the host itself: no GPU to predict */
    L->session_modeled = d->driver->modeled;
    L->gpu = d->prof;
    if (L->session_on_cpu && lab_profile(L->profile, &L->gpu)) { stack_close(&L->st, err, sizeof err); return -1; }
    snprintf(cmd, sizeof cmd, "hipath %s %s %s", L->tag, device, model);
    if (d->gpus > 1) snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), " --tp %d", d->gpus);   /* which run is which N */
    if (stack_trace(&L->st, L->db, &pfp, cmd, model, err, sizeof err)) {
        stack_fail("%s", err);
        stack_close(&L->st, err, sizeof err);
        return -1;
    }
    L->run = L->st.run;
    if (!L->quiet_runs) fprintf(stderr, "hipath lab %d: run %lld: %s on %s\n", L->n, (long long)L->run, model, L->session_device);
    return 0;
}

int lab_trace_end(lab *L) {
    char err[512];
    return stack_close(&L->st, err, sizeof err) ? stack_fail("%s", err) : 0;
}

int lab_session_begin(lab *L, const char *device, const char *model, const char *analytic_dtype, double kv_mb, int max_batch) {
    char err[512];
    if (lab_trace_begin(L, device, model)) return -1;
    /* Labs 1-8 time whole prompts, each computed in full, on a scheduler
     * that never preempts; lab 9 turns each of those on (lab9.c). */
    server_opts o = { .model_dir = model, .host = "127.0.0.1", .analytic_dtype = analytic_dtype, .kv_cache_mb = kv_mb, .max_batch = max_batch,
                      .no_chunked_prefill = 1, .no_prefix_caching = 1, .reserve_worst_case = 1, .open_text = tokenizer_open_text };
    if (stack_serve(&L->st, &o, NULL, NULL, err, sizeof err)) { stack_fail("%s", err); lab_trace_end(L); return -1; }
    snprintf(L->served, sizeof L->served, "%s", server_model_name(L->st.srv));
    return 0;
}

int lab_session_end(lab *L) { return lab_trace_end(L); }

/* B requests of a prompt of P ids into the engine, stepped here until every
 * one is done, tok tokens each. A step's new requests each leave an arrow
 * pending on this thread until its first op, which adds its own, and the
 * trace keeps TRACE_MAX_FLOWS of them; and a step prefills no more than its
 * budget: so B is queued in parts (part_of), a step between them, each part
 * asking one token more than the next. Then
 * all B finish together, after tok - 1 steps in which all of them decode.
 * A request is zeroed as engine_submit wants it. */
enum { PART = TRACE_MAX_FLOWS / 2 };
/* The requests a part of B holds: PART, or as many prompts as a step's
 * budget takes (beside the B that may be decoding, when there are parts). */
static int part_of(int budget, int B, int P) {
    int fit = budget / P;
    if (fit < B) fit = (budget - B) / P;
    return fit < 1 ? 1 : fit < PART ? fit : PART;
}
static int wave(lab *L, engine *e, const int *prompt, int P, int tok, int B, int64_t id0) {
    char err[512];
    request *r = calloc(B, sizeof *r);
    if (!r) return stack_fail("out of memory");
    int part = part_of(e->o.max_num_batched_tokens, B, P), parts = (B + part - 1) / part, rc = 0;
    for (int i = 0; i < B && !rc; i++) {
        if (i && i % part == 0) engine_step(e);
        r[i].id = id0 + i;
        r[i].prompt = prompt;
        r[i].n_prompt = P;
        r[i].max_tokens = tok + parts - 1 - i / part;   /* no stop ids: ignore_eos; temperature 0: greedy */
        if (engine_submit(e, &r[i], err, sizeof err) != SUBMIT_OK) rc = stack_fail("lab %d: request %lld: %s", L->n, (long long)r[i].id, err);
    }
    while (engine_step(e)) {}
    free(r);
    if (rc) return -1;
    return trace_flush(err, sizeof err) ? stack_fail("%s", err) : 0;
}

int lab_engine_waves(lab *L, const char *device, const char *path, const char *analytic_dtype, int P, int tok, const int *Bs, int n,
                     int64_t *first) {
    char err[512];
    int most = 1;
    for (int i = 0; i < n; i++) if (Bs[i] > most) most = Bs[i];
    int budget = most * P < STEP_TOKENS ? most * P : P > STEP_TOKENS ? P : STEP_TOKENS;
    int part = part_of(budget, most, P), longest = P + tok + (most + part - 1) / part;
    int kv_tokens = most * KV_BLOCK_SIZE * ((longest + KV_BLOCK_SIZE - 1) / KV_BLOCK_SIZE);
    int *prompt = calloc(P, sizeof *prompt);   /* ids 0: what a sweep times is the step, not the text */
    int64_t id = 1;
    model md;
    engine e;
    if (!prompt || lab_trace_begin(L, device, path)) { free(prompt); return -1; }
    int rc = (analytic_dtype ? model_load_analytic(&md, path, analytic_dtype, L->analytic_kv, err, sizeof err) : model_load(&md, path, err, sizeof err)) ? stack_fail("%s", err) : 0;
    /* every prompt whole, its blocks promised: the step is what the sweep times */
    engine_opts eo = { .max_num_batched_tokens = budget, .max_num_seqs = most, .kv_tokens = kv_tokens, .no_chunked_prefill = 1,
                       .no_prefix_caching = 1, .reserve_worst_case = 1 };
    if (!rc && engine_init(&e, &md, &eo, err, sizeof err)) { model_free(&md); rc = stack_fail("%s", err); }
    if (!rc) {
        rc = wave(L, &e, prompt, P, tok, 1, id++);
        for (int i = 0; i < n && !rc; id += Bs[i++]) {
            first[i] = id;
            rc = wave(L, &e, prompt, P, tok, Bs[i], id);
        }
        engine_free(&e);
        model_free(&md);
    }
    free(prompt);
    return lab_trace_end(L) || rc ? -1 : 0;
}

typedef struct { chat_request q; chat_result r; } call;
static void *call_main(void *p) {
    call *c = p;
    char name[40];
    snprintf(name, sizeof name, "client (request %lld)", (long long)c->q.id);
    trace_thread_name(name);   /* its own track under layer 8 */
    client_chat(&c->q, &c->r);
    return NULL;
}

/* The trace is flushed once the requests are done, so the next ones start
 * with empty trace rings: a ring that fills mid-request stalls its thread
 * for a flush (0.3-0.5 s here). */
int lab_send(lab *L, const char *text, int max_tokens, int n, int64_t id0, chat_result *r) {
    char base[64];
    snprintf(base, sizeof base, "http://127.0.0.1:%d", server_port(L->st.srv));
    call *c = calloc(n, sizeof *c);
    pthread_t *t = calloc(n, sizeof *t);
    int rc = c && t ? 0 : -1;
    for (int i = 0; !rc && i < n; i++) {
        c[i].q = (chat_request){ .url = base, .model = L->served, .content = text, .max_tokens = max_tokens,
                                 .temperature = 0, .seed = -1, .ignore_eos = 1, .id = id0 + i };
        if (pthread_create(&t[i], NULL, call_main, &c[i])) { n = i; rc = -1; }
    }
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        if (c[i].r.status != 200 || c[i].r.error[0]) { rc = rc ? rc : stack_fail("lab %d: request %lld: %s", L->n, (long long)(id0 + i), c[i].r.error); }
    }
    for (int i = 0; i < n; i++) if (r && !rc) r[i] = c[i].r; else chat_result_free(&c[i].r);
    free(c); free(t);
    char err[512];
    return trace_flush(err, sizeof err) ? stack_fail("%s", err) : rc;
}

int lab_one_request(lab *L, const char *device, const char *model, const char *adt, int max_tokens, chat_result *r) {
    if (lab_session_begin(L, device, model, adt, adt ? 4096 : 0, 0)) return -1;
    int rc = lab_send(L, "Hi", max_tokens, 1, 1, NULL) || lab_send(L, "Hi", max_tokens, 1, 2, r);
    return lab_session_end(L) || rc ? -1 : 0;
}

char *lab_prompt(const char *model_dir, const char *config, int P) {
    char err[512], path[1100];
    tokenizer *t = NULL;
    if (model_dir) { snprintf(path, sizeof path, "%s/tokenizer.json", model_dir); t = tokenizer_load(path, err, sizeof err); }
    else { model_config c; if (!model_config_load(&c, config, err, sizeof err)) t = tokenizer_placeholder(c.vocab_size, err, sizeof err); }
    if (!t) { stack_fail("%s", err); return NULL; }
    char *text = malloc(3 * (size_t)P + 4);
    for (int k = 0; text; k++) {
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

/* ---- SQL on the trace ---------------------------------------------- */

int lab_sql_open(const lab *L, lab_query *q, enum lab_sql which, lab_args a) {
    *q = (lab_query){ .file = LAB_SQL[which].file };
    if (sqlite3_open_v2(L->db, &q->db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(q->db, LAB_SQL[which].text, -1, &q->st, NULL) != SQLITE_OK) {
        char why[256];
        stack_fail("%s: %s", q->file, trace_db_why(q->db, why, sizeof why));
        sqlite3_close(q->db);
        return -1;
    }
    const struct { const char *name; int64_t value; } ARGS[] = {
        { ":run", L->run }, { ":req", a.req }, { ":first", a.first }, { ":last", a.last }, { ":batch", a.batch },
        { ":layer", a.layer } };
    for (int i = 1; i <= sqlite3_bind_parameter_count(q->st); i++) {
        const char *name = sqlite3_bind_parameter_name(q->st, i);
        size_t k = 0;
        while (k < sizeof ARGS / sizeof *ARGS && strcmp(name ? name : "", ARGS[k].name)) k++;
        if (k == sizeof ARGS / sizeof *ARGS) { stack_fail("%s: unknown parameter %s", q->file, name ? name : "?"); q->failed = 1; break; }
        sqlite3_bind_int64(q->st, i, ARGS[k].value);
    }
    return q->failed ? lab_sql_close(q) : 0;
}

int lab_sql_next(lab_query *q) {
    if (q->failed) return 0;
    int rc = sqlite3_step(q->st);
    char why[256];
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) { stack_fail("%s: %s", q->file, trace_db_why(q->db, why, sizeof why)); q->failed = 1; }
    return q->has_row = rc == SQLITE_ROW;
}

static int column(lab_query *q, const char *name) {
    for (int i = 0; i < sqlite3_column_count(q->st); i++)
        if (!strcmp(sqlite3_column_name(q->st, i), name)) return q->has_row && sqlite3_column_type(q->st, i) != SQLITE_NULL ? i : -1;
    if (!q->failed) stack_fail("%s: no column %s", q->file, name);
    q->failed = 1;
    return -1;
}

double lab_col(lab_query *q, const char *name) {
    int i = column(q, name);
    return i < 0 ? NA : sqlite3_column_double(q->st, i);
}

const char *lab_text(lab_query *q, const char *name) {
    int i = column(q, name);
    return i < 0 ? "" : (const char *)sqlite3_column_text(q->st, i);
}

int lab_sql_close(lab_query *q) {
    sqlite3_finalize(q->st);
    sqlite3_close(q->db);
    return q->failed ? -1 : 0;
}

int lab_measure_request(const lab *L, int64_t req, lab_request *m) {
    lab_query q;
    if (lab_sql_open(L, &q, SQL_REQUEST, (lab_args){ .req = req })) return -1;
    lab_sql_next(&q);
    *m = (lab_request){
        .prompt_tokens = lab_col(&q, "prompt_tokens"), .ttft_s = lab_col(&q, "ttft_s"), .e2e_s = lab_col(&q, "e2e_s"),
        .passes = lab_col(&q, "passes"),
        .prefill_flops = lab_col(&q, "prefill_flops"), .prefill_bytes = lab_col(&q, "prefill_bytes"),
        .prefill_gpu_s = lab_col(&q, "prefill_gpu_s"), .prefill_s = lab_col(&q, "prefill_s"),
        .ops_per_step = lab_col(&q, "ops_per_step"), .flops_per_step = lab_col(&q, "flops_per_step"),
        .bytes_per_step = lab_col(&q, "bytes_per_step"), .weight_bytes_per_step = lab_col(&q, "weight_bytes_per_step"),
        .kv_bytes_per_step = lab_col(&q, "kv_bytes_per_step"), .launches_per_step = lab_col(&q, "launches_per_step"),
        .gpu_s = lab_col(&q, "gpu_s"), .step_s = lab_col(&q, "step_s"), .gpu_s_slope = lab_col(&q, "gpu_s_slope"),
        .kv_allocs = lab_col(&q, "kv_allocs"), .kv_blocks_end = lab_col(&q, "kv_blocks_end") };
    return lab_sql_close(&q);
}

int lab_measure_layers(const lab *L, int64_t req, lab_layer layer[9]) {
    lab_query q;
    for (int l = 0; l <= 8; l++) layer[l] = (lab_layer){ NA, NA, NA, NA, NA };
    if (lab_sql_open(L, &q, SQL_REQUEST_LAYERS, (lab_args){ .req = req })) return -1;
    while (lab_sql_next(&q)) {
        int l = (int)lab_col(&q, "layer");
        if (l >= 1 && l <= 8)
            layer[l] = (lab_layer){ lab_col(&q, "top_s"), lab_col(&q, "top_measured_s"), lab_col(&q, "all_s"), lab_col(&q, "up_bytes"),
                                    lab_col(&q, "scaled_s") };
    }
    return lab_sql_close(&q);
}
