/*
 * amdahl.c -- Amdahl's law (amdahl.h).
 */
#include "labs/amdahl.h"
#include <stdio.h>

int amdahl(double f, double s, amdahl_result *r, char *err, int errlen) {
    if (!(f >= 0 && f <= 1)) { snprintf(err, errlen, "fraction %g: a share of the time is 0 to 1", f); return -1; }
    if (!(s > 0)) { snprintf(err, errlen, "speed-up %g: it must be above 0 (inf: the part vanishes)", s); return -1; }
    r->fraction = f;
    r->speedup = s;
    /* The new time per unit of the old: the untouched (1 - f), and f in 1/s
     * of its time (1/inf = 0). A part that was all of it leaves no limit. */
    double time = (1 - f) + f / s;
    r->overall = 1 / time;
    r->limit = 1 / (1 - f);
    r->saved_share = 1 - time;
    return 0;
}
