/*
 * validate.h -- the simulated GPU against real GPUs' published measurements
 * (hipath validate, docs/devices.md "How far to trust it"). Each row of a
 * table of published figures (tests/data/gpu_measurements.json) is run as
 * its shape on the analytic device of its GPU's profile: the same model
 * config, weight dtype, batch, prompt and generated lengths. What the wave
 * model gives from the datasheet (modeled) is set against what was
 * measured. Then what a datasheet cannot know, how much of its rate an
 * engine's kernels reach, is calibrated per profile and phase from the
 * rows marked `calibrate` (at most half), and the others are held out.
 *
 * The time of a row is split as the wave model made it: the launches
 * (each layer-1 slice's launch latency) and the waves (compute or memory),
 * and the waves per kernel class (sim.h: GEMMs bound by compute or by
 * memory, attention in prefill and in decode, the elementwise rest).
 * e = waves / (measured - launches) says how much of the modeled rate the
 * measured engine reached as a whole; validate_fit.h fits one efficiency
 * per kernel class and engine family to the calibrate rows, and again
 * without each source in turn (leave-one-source-out).
 *
 * A row may run on several GPUs (issue 46): tp and pp are modeled (the
 * analytic engine's tensor parallelism and pipeline stages, its
 * all-reduces and stage-to-stage hand-offs on the profile's interconnect,
 * timed apart from the kernels and not fitted; a row's batch goes through
 * the stages one after another, so its kernels are their sum); a row with
 * ep or dp above 1 is kept and printed, but not run ("not modeled yet"),
 * so it is in no fit and no error figure.
 */
#ifndef HIPATH_VALIDATE_H
#define HIPATH_VALIDATE_H

#include "layers/gpu/sim.h"
#include <cjson/cJSON.h>

/* One published figure, as run. Times are modeled device seconds for the
 * row's unit: a prefill of B prompts, a decode step of B sequences, or for
 * e2e the prefill and gen_len steps. */
typedef struct {
    const char *id, *gpu, *model, *config, *dtype, *kv_dtype, *phase, *engine, *source;   /* into the table's JSON (source: its url) */
    int batch, prompt_len, gen_len, calibrate;
    int tp, pp, ep, dp;           /* the GPUs it ran on: tensor, pipeline, expert and data parallel (1: none) */
    int concurrency;              /* a served run's stated concurrency C, run as a batch of C (0: a batch as stated) */
    int per_gpu;                  /* the figure is per GPU (TensorRT-LLM's "out tok/s/GPU"): tokens / GPUs */
    const char *unmodeled;        /* "ep" or "dp": what hipath does not model yet (NULL: it runs) */
    double measured;              /* tokens/s, published (or over a published latency: prompt_len over a first token's, batch x gen_len over a batch's) */
    double first_token_ms;        /* that first-token latency, when the row gives one (else NaN) */
    double latency_s;             /* a static batch's whole latency (vLLM's benchmark_latency), when given (else NaN) */
    double waves_s, launch_s;     /* the modeled time, split */
    double class_s[SIM_CLASSES];  /* the waves per kernel class (their launches not in them) */
    double copy_s;                /* and the copies' (the rest of waves_s) */
    double collective_s;          /* the all-reduces and gathers over tp GPUs (not in waves_s; not fitted) */
    double handoff_s;             /* the activations' sends from stage to stage over pp stages (idem) */
    double int8_over_fp16;        /* the profile's int8 peak over its fp16 one */
    double fp32_over_fp16;        /* and its fp32 peak over its fp16 one */
    double modeled;               /* tokens/s from the datasheet profile */
    double efficiency;            /* calibrate rows: waves / (measured time - launches) */
    double calibrated;            /* tokens/s with the kernel-class efficiencies fitted to the calibrate rows */
    double loso;                  /* ... fitted to every row but its source's (leave-one-source-out) */
    char why[200];                /* a row that could not be run, and why ("" when it ran) */
} validate_row;

/* The kernel-class fit (validate_fit.c): a time multiplier x = 1 / e per
 * column (a kernel class for one engine family or weight format), as
 * x = exp(mu[class] + delta[column]), mu shared by the class's columns. */
#define VALIDATE_CLASSES (SIM_CLASSES + 2)   /* sim's kernel classes, the launches, the requests */
#define VALIDATE_COLUMNS 20
/* What the fit's request class starts from: a millisecond of the engine's
 * own host work each timed request (typical, not measured), outside the
 * kernels, whatever their count (validate_fit.h). */
#define VALIDATE_REQUEST_S 1e-3
typedef struct {
    double mu[VALIDATE_CLASSES], delta[VALIDATE_COLUMNS];
    int rows, iterations;
    double rms;                   /* of the fitted rows' log(modeled / measured time) */
} validate_fit;

typedef struct {
    cJSON *doc;                   /* the table as read */
    validate_row *row;
    int n;
    validate_fit fit;             /* fitted to the calibrate rows */
} validate_table;

/* Read the table at path. 0, or -1 (the reason printed). */
int validate_load(const char *path, validate_table *t);
void validate_free(validate_table *t);

/* Run each row (only: the one with that id, or NULL for all) on its
 * analytic profile, traces into out/validate.db (full: every kernel a
 * slice; else a summary per step and kernel class, the same figures);
 * then fit and fill modeled, efficiency, calibrated, loso. 0, or -1 (the
 * reason printed). */
int validate_run(validate_table *t, const char *only, const char *out, int full);

/* The tokens a row's time is for: B prompts' (prefill), one step's (decode), B x gen_len (e2e);
 * per GPU when the figure is. */
double validate_tokens(const validate_row *r);
/* Fit the calibrate rows (t->fit, each row's calibrated), and each source
 * left out in turn (each row's loso): validate_fit.c. 0, or -1 (the reason printed). */
int validate_fit_all(validate_table *t);
/* The timed requests in a row's unit (a decode row's: 1 / gen_len). */
double validate_requests(const validate_row *r);
/* A row's tokens/s under fit f. */
double validate_predict(const validate_fit *f, const validate_row *r);

/* The median of v[0..n), which it sorts (NaN when n is 0). */
double validate_median(double *v, int n);

#endif
