/* begin.h -- layer 4's own: an op's start, for ops.c and mla.c. */
#ifndef HIPATH_OPS_BEGIN_H
#define HIPATH_OPS_BEGIN_H

#include "layers/ops/ops.h"
#include "kernels/backend.h"
#include "trace/trace.h"

/* The op's cost, which goes down to the kernel, and its start. The clock
 * is read only when something uses it: the trace, or a launch (on a
 * simulated GPU the launch starts here); untraced on the CPU, nothing does. */
static inline kcost begin(op_plan p, const char *name, double flops, double bytes) {
    int timed = trace_enabled() || backend_now()->launches;
    return (kcost){ name, flops, bytes, DT_F32, p.step, timed ? trace_now_ns() : 0, p.n > 1 ? p.n : 1, p.along == SPLIT_IN };
}

#endif
