/*
 * validate_fit.h -- the kernel-class efficiencies of hipath validate: how
 * far each class of kernel gets, for each engine family and weight format,
 * fitted to published measurements (labs/validate.h) by least squares on
 * log time. A row's time under the fit is
 *   T = copies + collectives + sum_c waves_c * x[col(row, c)] + launches * x[col(row, launch)]
 *       + requests * 1 ms * x[col(row, request)]
 * x = 1 / e = exp(mu[class] + delta[col]): mu is the class's share of the
 * slowdown, delta its engine family's or format's own. The fit minimises
 *   sum_rows rho(log T - log measured) + LAMBDA_MU |mu|^2 + LAMBDA_DELTA |delta|^2
 * (Levenberg-Marquardt), rho the pseudo-Huber loss: a square within
 * HUBER (25%), growing as |z| past it, so that one engine build far off
 * its datasheet (llama.cpp on MI300X: 1-2% of the peak) does not set the
 * others' efficiency. The ridge keeps a column no row informs at its
 * class's mu, and a class no row informs near the datasheet (x = 1).
 * The three constants were chosen once, among 24 settings, on the
 * leave-one-source-out figures of the 30 rows (docs/devices.md).
 */
#ifndef HIPATH_VALIDATE_FIT_H
#define HIPATH_VALIDATE_FIT_H

#include "labs/validate.h"

#define VALIDATE_LAMBDA_MU 1.0
#define VALIDATE_LAMBDA_DELTA 0.3
#define VALIDATE_HUBER 0.25

typedef struct {
    const char *name;             /* "gemm_compute/llama.cpp-quant" */
    int cls;                      /* sim's class, SIM_CLASSES for the launches, + 1 the requests */
    const char *meaning;
} validate_column;
extern const validate_column VALIDATE_COLUMN[VALIDATE_COLUMNS];
extern const char *const VALIDATE_CLASS_NAME[VALIDATE_CLASSES];   /* sim's, then "launch", "request" */

/* Row r's column for class c (0 .. VALIDATE_CLASSES - 1). */
int validate_column_of(const validate_row *r, int c);
/* Fit f to the rows with use[i] set. */
void validate_fit_rows(const validate_table *t, const int *use, validate_fit *f);

#endif
