/*
 * op_cost.h -- layer 4's own: an op's cost and its slice in the trace,
 * for ops.c and moe.c.
 */
#ifndef HIPATH_OP_COST_H
#define HIPATH_OP_COST_H

#include "layers/ops/ops.h"
#include "kernels/backend.h"
#include "trace/trace.h"

/* The op's cost, which goes down to the kernel, and its start. The clock
 * is read only when something uses it: the trace, or a launch (on a
 * simulated GPU the launch starts here); untraced on the CPU, nothing does. */
static inline kcost begin(op_plan p, const char *name, double flops, double bytes) {
    int timed = trace_enabled() || backend_now()->launches;
    return (kcost){ name, flops, bytes, DT_F32, p.step, timed ? trace_now_ns() : 0, p.n > 1 ? p.n : 1, p.along == SPLIT_IN,
                    p.along == SPLIT_EXPERTS };
}

/* The op as one slice, recorded when it returns: from its start to when the
 * backend handed the work off (t1), or to now when it did not say. Inlined,
 * so that the recording sees the caller's args as they are built
 * (trace_fast.h): then they are stored straight into the trace. */
static inline __attribute__((always_inline))
void end(const kcost *c, uint64_t t1, int nargs, const trace_arg *a) {
    if (!trace_enabled() || !c->t0) return;
    if (!t1) t1 = trace_now_ns();
    trace_slice(trace_at(L_OPS, DIR_DOWN, NO_REQ, c->step), c->name, c->t0, t1 - c->t0, nargs, a);
}
static inline void end_tokens(const kcost *c, uint64_t t1, int T) {
    end(c, t1, TRACE_ARGS(TA_DBL("flops", c->flops), TA_DBL("bytes", c->bytes), TA_INT("tokens", T)));
}

#endif
