/*
 * cmd_validate.c -- `hipath validate`: the simulated GPU against published
 * measurements (labs/validate.h): per row modeled against measured, then
 * the error per GPU and phase, and the calibrated model on the held-out rows.
 */
#include "cli/cli.h"
#include "labs/validate_fit.h"
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char USAGE[] =
    "usage: hipath validate [options]\n"
    "  --data FILE   the published measurements (default tests/data/gpu_measurements.json)\n"
    "  --only ID     run that row alone\n"
    "  --out DIR     where validate.db and the Perfetto traces go (default traces/validate/)\n"
    "  --json        one JSON object: rows, per GPU and phase, per split (one GPU, tp,\n"
    "                pp) and phase, the fit, calibration\n"
    "  --full-trace  every kernel a slice in validate.db (default: a summary per step\n"
    "                and kernel class, the same figures, several times faster)\n"
    "Each row's shape (model config, dtype, batch, prompt and generated lengths) runs on\n"
    "analytic:GPU; modeled / measured is the ratio of tokens/s (above 1: the model is\n"
    "faster than the GPU was). Calibrated: an efficiency per kernel class (GEMM bound by\n"
    "compute or memory, attention in prefill and decode, elementwise, launches) and\n"
    "engine family, and a fixed host time per request, fitted to the rows marked\n"
    "calibrate by least squares on log time, applied to the others (held out).\n"
    "Leave-one-source-out (loso): the same fit without each source's rows, predicting\n"
    "them. A row's tp, pp, ep, dp: the GPUs it ran on; tp and pp run on analytic:GPU\n"
    "x tp x pp (its all-reduces and stage hand-offs modeled on the profile's links, not\n"
    "fitted; one batch goes through the stages in turn), a row with ep or dp above 1\n"
    "is listed as not modeled yet, in no fit and no error figure.\n"
    "Every figure is modeled or copied from the\n"
    "table: the same on any machine. docs/devices.md.\n";

#define PHASES 3
static const char *const PHASE[PHASES] = { "prefill", "decode", "e2e" };

enum fig { MODELED, CALIBRATED, LOSO };   /* which figure a row is judged by */
static double figure(const validate_row *w, enum fig f) {
    return f == MODELED ? w->modeled : f == CALIBRATED ? (w->calibrate ? NAN : w->calibrated) : w->loso;
}

/* How a row was split: "pp" (its stages, with or without tp), "tp", or one GPU. */
#define SPLITS 3
static const char *const SPLIT[SPLITS] = { "one_gpu", "tp", "pp" };
static const char *split_of(const validate_row *w) { return w->pp > 1 ? "pp" : w->tp > 1 ? "tp" : "one_gpu"; }

/* The median |figure / measured - 1| of the rows of gpu (NULL: all),
 * phase (NULL: decode and e2e) and split (NULL: any) that have it
 * (calibrated: the held-out rows); *count of them, *within of them within tol. */
static double error(const validate_table *t, const char *gpu, const char *phase, const char *split, enum fig f, int *count,
                    int *within) {
    double *r = malloc(t->n * sizeof *r), m;
    int n = 0, k = 0;
    for (int i = 0; r && i < t->n; i++) {
        const validate_row *w = &t->row[i];
        double v = figure(w, f);
        if (w->why[0] || isnan(v) || (gpu && strcmp(gpu, w->gpu)) || (split && strcmp(split, split_of(w)))) continue;
        if (phase ? strcmp(phase, w->phase) : !strcmp(w->phase, "prefill")) continue;
        r[n++] = fabs(v / w->measured - 1);
        k += r[n - 1] <= 0.25;
    }
    m = validate_median(r, n);
    free(r);
    if (count) *count = n;
    if (within) *within = k;
    return m;
}

static void add(cJSON *o, const char *k, double v) {
    if (isnan(v)) cJSON_AddNullToObject(o, k); else cJSON_AddNumberToObject(o, k, v);
}

/* The GPUs in the table's order, each once. */
static int gpus(const validate_table *t, const char **g) {
    int n = 0;
    for (int i = 0; i < t->n; i++) {
        int k = 0;
        while (k < n && strcmp(g[k], t->row[i].gpu)) k++;
        if (k == n) g[n++] = t->row[i].gpu;
    }
    return n;
}

/* The errors of gpu's (NULL: every GPU's) rows of phase and split (NULL:
 * any), added to array a (when it has any): datasheet, held out, leave-one-source-out. */
static void errors(const validate_table *t, const char *gpu, const char *phase, const char *split, cJSON *a) {
    int n, nh, kh, nl, kl;
    double e = error(t, gpu, phase, split, MODELED, &n, NULL), eh = error(t, gpu, phase, split, CALIBRATED, &nh, &kh),
           el = error(t, gpu, phase, split, LOSO, &nl, &kl);
    if (!n) return;
    cJSON *o = cJSON_CreateObject();
    if (gpu) cJSON_AddStringToObject(o, "gpu", gpu);
    if (split) cJSON_AddStringToObject(o, "split", split);
    cJSON_AddStringToObject(o, "phase", phase);
    cJSON_AddNumberToObject(o, "rows", n);
    add(o, "median_abs_error", e);
    cJSON_AddNumberToObject(o, "held_out_rows", nh);
    cJSON_AddNumberToObject(o, "held_out_within_25_percent", kh);
    add(o, "held_out_median_abs_error_calibrated", eh);
    cJSON_AddNumberToObject(o, "loso_rows", nl);
    cJSON_AddNumberToObject(o, "loso_within_25_percent", kl);
    add(o, "loso_median_abs_error", el);
    cJSON_AddItemToArray(a, o);
}

static void print_json(const validate_table *t, const char **g, int ng) {
    cJSON *j = cJSON_CreateObject(), *rows = cJSON_AddArrayToObject(j, "rows"), *per = cJSON_AddArrayToObject(j, "per_gpu_phase");
    for (int i = 0; i < t->n; i++) {
        const validate_row *r = &t->row[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", r->id);
        cJSON_AddStringToObject(o, "gpu", r->gpu);
        cJSON_AddStringToObject(o, "model", r->model);
        cJSON_AddStringToObject(o, "dtype", r->dtype);
        cJSON_AddStringToObject(o, "kv_dtype", r->kv_dtype);
        cJSON_AddStringToObject(o, "phase", r->phase);
        cJSON_AddNumberToObject(o, "batch", r->batch);
        if (r->concurrency) cJSON_AddNumberToObject(o, "concurrency", r->concurrency);
        cJSON_AddNumberToObject(o, "prompt_len", r->prompt_len);
        cJSON_AddNumberToObject(o, "gen_len", r->gen_len);
        cJSON_AddNumberToObject(o, "tp", r->tp);
        cJSON_AddNumberToObject(o, "pp", r->pp);
        cJSON_AddNumberToObject(o, "ep", r->ep);
        cJSON_AddNumberToObject(o, "dp", r->dp);
        cJSON_AddBoolToObject(o, "measured_per_gpu", r->per_gpu);
        cJSON_AddStringToObject(o, "role", r->calibrate ? "calibrate" : "held_out");
        add(o, "measured_tokens_per_s", r->measured);
        if (!isnan(r->first_token_ms)) cJSON_AddNumberToObject(o, "measured_first_token_ms", r->first_token_ms);
        if (!isnan(r->latency_s)) cJSON_AddNumberToObject(o, "measured_latency_s", r->latency_s);
        add(o, "modeled_tokens_per_s", r->modeled);
        add(o, "ratio", r->modeled / r->measured);
        add(o, "modeled_waves_s", r->waves_s);
        add(o, "modeled_launch_s", r->launch_s);
        add(o, "modeled_collective_s", r->collective_s);
        add(o, "modeled_handoff_s", r->handoff_s);
        add(o, "efficiency", r->efficiency);
        add(o, "calibrated_tokens_per_s", r->calibrated);
        add(o, "calibrated_ratio", r->calibrated / r->measured);
        cJSON_AddStringToObject(o, "calibrated_from", "kernel-class fit to the calibrate rows");
        add(o, "loso_tokens_per_s", r->loso);
        add(o, "loso_ratio", r->loso / r->measured);
        cJSON_AddStringToObject(o, "source", r->source);
        cJSON *cl = cJSON_AddObjectToObject(o, "modeled_class_s");
        for (int c = 0; c < SIM_CLASSES; c++) add(cl, SIM_CLASS_NAME[c], r->class_s[c]);
        add(cl, "copy", r->copy_s);
        if (r->why[0]) cJSON_AddStringToObject(o, "not_run", r->why);
        if (r->unmodeled) cJSON_AddStringToObject(o, "not_modeled_yet", r->unmodeled);
        cJSON_AddItemToArray(rows, o);
    }
    for (int k = 0; k < ng; k++)
        for (int p = 0; p < PHASES; p++) errors(t, g[k], PHASE[p], NULL, per);
    int of, ok, n;
    double eh = error(t, NULL, NULL, NULL, CALIBRATED, &of, &ok);
    cJSON *h = cJSON_AddObjectToObject(j, "held_out_decode");
    cJSON_AddNumberToObject(h, "rows", of);
    cJSON_AddNumberToObject(h, "within_25_percent", ok);
    add(h, "median_abs_error_datasheet", error(t, NULL, NULL, NULL, MODELED, &n, NULL));
    add(h, "median_abs_error_calibrated", eh);
    cJSON *ph = cJSON_AddArrayToObject(j, "per_phase");
    for (int p = 0; p < PHASES; p++) errors(t, NULL, PHASE[p], NULL, ph);
    cJSON *sp = cJSON_AddArrayToObject(j, "per_split_phase");
    for (int k = 0; k < SPLITS; k++)
        for (int p = 0; p < PHASES; p++) errors(t, NULL, PHASE[p], SPLIT[k], sp);
    cJSON *fit = cJSON_AddObjectToObject(j, "fit"), *cls = cJSON_AddArrayToObject(fit, "classes"),
          *cols = cJSON_AddArrayToObject(fit, "columns");
    cJSON_AddNumberToObject(fit, "rows", t->fit.rows);
    cJSON_AddNumberToObject(fit, "iterations", t->fit.iterations);
    add(fit, "rms_log_error", t->fit.rms);
    cJSON_AddNumberToObject(fit, "lambda_mu", VALIDATE_LAMBDA_MU);
    cJSON_AddNumberToObject(fit, "lambda_delta", VALIDATE_LAMBDA_DELTA);
    for (int c = 0; c < VALIDATE_CLASSES; c++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "class", VALIDATE_CLASS_NAME[c]);
        add(o, "mu", t->fit.mu[c]);
        cJSON_AddItemToArray(cls, o);
    }
    for (int c = 0; c < VALIDATE_COLUMNS; c++) {
        const validate_column *v = &VALIDATE_COLUMN[c];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "column", v->name);
        cJSON_AddStringToObject(o, "class", VALIDATE_CLASS_NAME[v->cls]);
        add(o, "delta", t->fit.delta[c]);
        add(o, "efficiency", exp(-(t->fit.mu[v->cls] + t->fit.delta[c])));
        if (v->cls == VALIDATE_CLASSES - 1) add(o, "seconds_per_request", VALIDATE_REQUEST_S * exp(t->fit.mu[v->cls] + t->fit.delta[c]));
        cJSON_AddStringToObject(o, "meaning", v->meaning);
        cJSON_AddItemToArray(cols, o);
    }
    char *s = cJSON_Print(j);
    puts(s);
    free(s);
    cJSON_Delete(j);
}

static void print_table(const validate_table *t, const char **g, int ng, const char *only) {
    printf("%-53s %-6s %-7s %5s %5s %5s %10s %10s %7s %6s %10s %7s %7s\n", "row (modeled on analytic:GPU)", "dtype", "phase", "B", "P",
           "G", "measured", "modeled", "ratio", "eff", "calibrated", "ratio", "loso");
    for (int i = 0; i < t->n; i++) {
        const validate_row *r = &t->row[i];
        if (r->why[0]) { printf("%-53s %s\n", r->id, r->why); continue; }
        if (r->unmodeled && (!only || !strcmp(only, r->id))) { printf("%-53s not modeled yet (%s)\n", r->id, r->unmodeled); continue; }
        if (isnan(r->modeled)) continue;   /* not asked for (--only) */
        char cal[16] = "-", cr[16] = "-", ef[16] = "-", lo[16] = "-";
        if (!isnan(r->efficiency)) snprintf(ef, sizeof ef, "%.2f", r->efficiency);
        if (!r->calibrate && !isnan(r->calibrated)) {
            snprintf(cal, sizeof cal, "%.4g", r->calibrated);
            snprintf(cr, sizeof cr, "%.2f", r->calibrated / r->measured);
        }
        if (!isnan(r->loso)) snprintf(lo, sizeof lo, "%.2f", r->loso / r->measured);
        printf("%-53s %-6s %-7s %5d %5d %5d %10.4g %10.4g %7.2f %6s %10s %7s %7s%s\n", r->id, r->dtype, r->phase, r->batch,
               r->prompt_len, r->gen_len, r->measured, r->modeled, r->modeled / r->measured, ef, cal, cr, lo,
               r->calibrate ? "  (calibrates)" : "");
    }
    printf("\nkernel-class efficiencies fitted to %d calibrate rows (least squares on log time, rms %.2f):\n", t->fit.rows,
           t->fit.rms);
    for (int c = 0; c < VALIDATE_COLUMNS; c++) {
        const validate_column *v = &VALIDATE_COLUMN[c];
        double x = exp(t->fit.mu[v->cls] + t->fit.delta[c]);
        if (v->cls == VALIDATE_CLASSES - 1) printf("  %-30s %6.3f ms a request  %s\n", v->name, 1e3 * VALIDATE_REQUEST_S * x, v->meaning);
        else printf("  %-30s %6.3f  %s\n", v->name, 1 / x, v->meaning);
    }
    printf("\nmedian |modeled / measured - 1|, tokens/s (datasheet; calibrated on the held-out rows; leave-one-source-out):\n");
    for (int k = 0; k < ng; k++)
        for (int p = 0; p < PHASES; p++) {
            int n, nh, nl;
            double e = error(t, g[k], PHASE[p], NULL, MODELED, &n, NULL), eh = error(t, g[k], PHASE[p], NULL, CALIBRATED, &nh, NULL),
                   el = error(t, g[k], PHASE[p], NULL, LOSO, &nl, NULL);
            if (!n) continue;
            printf("  %-13s %-8s %2d rows: %5.0f%%", g[k], PHASE[p], n, 100 * e);
            if (nh) printf("   held out %2d: %5.0f%%", nh, 100 * eh); else printf("   %19s", "");
            if (nl) printf("   loso %2d: %5.0f%%", nl, 100 * el);
            printf("\n");
        }
    for (int k = -1; k < SPLITS; k++)   /* every row, then by split: one GPU, tp, pp */
        for (int p = 0; p < PHASES; p++) {
            const char *sp = k < 0 ? NULL : SPLIT[k];
            int n, nh, kh, nl, kl;
            double e = error(t, NULL, PHASE[p], sp, MODELED, &n, NULL), eh = error(t, NULL, PHASE[p], sp, CALIBRATED, &nh, &kh),
                   el = error(t, NULL, PHASE[p], sp, LOSO, &nl, &kl);
            if (n) printf("  %-13s %-8s %3d rows: %5.0f%%   held out %3d: %5.0f%% (%d within 25%%)   loso %3d: %5.0f%% (%d within 25%%)\n",
                          sp ? sp : "all", PHASE[p], n, 100 * e, nh, 100 * eh, kh, nl, 100 * el, kl);
        }
    int of, ok, n;
    double eh = error(t, NULL, NULL, NULL, CALIBRATED, &of, &ok);
    printf("held-out decode and e2e rows within 25%% after calibration: %d of %d (median error %.0f%% from the datasheet, %.0f%% calibrated)\n",
           ok, of, 100 * error(t, NULL, NULL, NULL, MODELED, &n, NULL), 100 * eh);
    printf("every figure modeled (analytic) or published: the same on any machine\n");
}

int cmd_validate(int argc, char **argv) {
    static const struct option OPTS[] = { { "data", 1, 0, 'd' }, { "only", 1, 0, 'o' }, { "out", 1, 0, 'O' }, { "json", 0, 0, 'j' }, { "full-trace", 0, 0, 'f' },
                                          { "help", 0, 0, 'h' }, { 0, 0, 0, 0 } };
    const char *data = "tests/data/gpu_measurements.json", *only = NULL, *out = "traces/validate";
    int c, json = 0, full = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", OPTS, NULL)) != -1) {
        switch (c) {
        case 'd': data = optarg; break;
        case 'o': only = optarg; break;
        case 'O': out = optarg; break;
        case 'j': json = 1; break;
        case 'f': full = 1; break;
        case 'h': fputs(USAGE, stdout); return 0;
        default: return stack_fail("validate: unknown or incomplete option '%s' (see --help)", argv[optind - 1]);
        }
    }
    if (optind != argc) return stack_fail("validate: unexpected argument '%s' (see --help)", argv[optind]);
    validate_table t;
    if (validate_load(data, &t)) return 1;
    if (validate_run(&t, only, out, full)) { validate_free(&t); return 1; }
    const char **g = calloc(t.n, sizeof *g);
    if (!g) { validate_free(&t); return stack_fail("out of memory"); }
    int ng = gpus(&t, g);
    if (json) print_json(&t, g, ng); else print_table(&t, g, ng, only);
    int failed = 0;
    for (int i = 0; i < t.n; i++) failed |= t.row[i].why[0] != 0;
    free(g);
    validate_free(&t);
    return failed;
}
