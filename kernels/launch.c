/* launch.c -- a kernel launch as layer 3 records it (sim's and hip's launches alike). */
#include "kernels/backend.h"
#include "trace/trace.h"

uint64_t launch_record(const kcost *c, const char *kernel, kdims d, int wavefronts, uint64_t t0) {
    uint64_t t = trace_now_ns();
    trace_slice(trace_at(L_KERNELS, DIR_DOWN, NO_REQ, c->step), kernel, t0, t - t0,
                TRACE_ARGS(TA_LIT("op", c->name), TA_INT("grid", d.grid), TA_INT("block", d.block),
                           TA_INT("wavefronts", wavefronts)));
    return t;
}
