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
 * (each layer-1 slice's launch latency) and the waves (compute or memory).
 * Calibration divides the waves by an efficiency e = waves / (measured -
 * launches): the fraction of the modeled rate the measured engine reached
 * (of the bandwidth in decode, of the peak in prefill, a mix in e2e).
 */
#ifndef HIPATH_VALIDATE_H
#define HIPATH_VALIDATE_H

#include <cjson/cJSON.h>

/* One published figure, as run. Times are modeled device seconds for the
 * row's unit: a prefill of B prompts, a decode step of B sequences, or for
 * e2e the prefill and gen_len steps. */
typedef struct {
    const char *id, *gpu, *model, *config, *dtype, *kv_dtype, *phase, *engine;   /* into the table's JSON */
    int batch, prompt_len, gen_len, calibrate;
    double measured;              /* tokens/s, published */
    double waves_s, launch_s;     /* the modeled time, split */
    double modeled;               /* tokens/s from the datasheet profile */
    double efficiency;            /* calibrate rows: waves / (measured time - launches) */
    double calibrated;            /* tokens/s with the profile's calibrated efficiency (held-out rows) */
    const char *calibrated_from;  /* "this gpu" or "other gpus" (none calibrate this gpu and phase) */
    char why[200];                /* a row that could not be run, and why ("" when it ran) */
} validate_row;

typedef struct {
    cJSON *doc;                   /* the table as read */
    validate_row *row;
    int n;
} validate_table;

/* Read the table at path. 0, or -1 (the reason printed). */
int validate_load(const char *path, validate_table *t);
void validate_free(validate_table *t);

/* Run each row (only: the one with that id, or NULL for all) on its
 * analytic profile, traces into out/validate.db; then calibrate and fill
 * modeled, efficiency, calibrated. 0, or -1 (the reason printed). */
int validate_run(validate_table *t, const char *only, const char *out);

/* The median of v[0..n), which it sorts (NaN when n is 0). */
double validate_median(double *v, int n);

#endif
