/*
 * amdahl.h -- Amdahl's law, the labs' second calculator (chapter 1.2.1,
 * lab 7): a share f of a task's time runs s times faster, the rest and the
 * order of the work stay as they were. `hipath amdahl` prints it.
 */
#ifndef HIPATH_LABS_AMDAHL_H
#define HIPATH_LABS_AMDAHL_H

typedef struct {
    double fraction;     /* f, the share of the original time sped up, 0..1 */
    double speedup;      /* s, how many times faster that share runs (INFINITY: it vanishes) */
    double overall;      /* 1 / ((1 - f) + f / s) */
    double limit;        /* 1 / (1 - f): the overall speed-up as s grows without end */
    double saved_share;  /* f (1 - 1/s): the share of the original time saved */
} amdahl_result;

/* 0, or -1 with a one-line reason (f outside 0..1, s not above 0). */
int amdahl(double fraction, double speedup, amdahl_result *r, char *err, int errlen);

#endif
