/*
 * rings.c -- the state the trace's files share (tracer, trace_internal.h) and
 * the rings' pages, mapped ahead of their recorders.
 */
#include "trace/trace_internal.h"
#include <sys/mman.h>

struct trace_state tracer = { .enroll_lock = PTHREAD_MUTEX_INITIALIZER, .sink_lock = PTHREAD_MUTEX_INITIALIZER,
                         .room = TRACE_RING_BYTES };
struct trace_live trace_live;
_Thread_local struct trace_mine trace_mine;

/* Ring pages are mapped ahead of the recorder, so that it does not stop at
 * a page fault the first time round its ring: a fault costs microseconds
 * (more in a virtual machine), and a tiny model's generation took 40-230
 * of them, 5-10% of its time. The flusher maps them (MADV_POPULATE_WRITE:
 * FIRST_PAGES when a thread enrolls; then POPULATE bytes past the head
 * of a recorder within HEADROOM of the end of its pages, which asks for
 * them when it gets there), so the zeroed pages pass through the flusher's
 * core's cache, not the recorder's; but the thread that opens the trace
 * maps its OPENER_PAGES itself, in trace_open (see there). Zeroing memory
 * during the run costs the run even on another core; before it, nothing
 * the bench sees: with 2 MiB mapped at open, tiny-hi's traced generation
 * cost +4.4% at 32 tokens (1.3 MB of events), +10.5% at 128 (5.2 MB) and
 * +15.1% at 256, the rest mapped as it went; with 8 MiB at open, +3.8-5.3%
 * at 128 and +4.4% at 256 (runs back to back, where the longer open also
 * cost about a point at 32 tokens; spaced 20 ms apart, mapping 8 MiB at
 * open costs the run nothing measurable: docs/trace-schema.md). The
 * flusher runs at idle priority, and while a model keeps every core busy
 * it may not run for a while: a recorder that reaches the end of its pages
 * maps the next RECORDER_PAGES itself, one call instead of a fault per
 * page. Both may map the same range at once; the kernel sorts that out.
 * Older kernels refuse MADV_POPULATE_WRITE and the recorder takes its
 * faults. */
void trace_populate(trace_thread *t, size_t upto) {
    if (upto > TRACE_RING_BYTES) upto = TRACE_RING_BYTES;
    size_t from = atomic_load_explicit(&t->populated, memory_order_acquire);
    if (from >= upto) return;
    madvise(t->w.ring + from, upto - from, MADV_POPULATE_WRITE);
    while (from < upto && !atomic_compare_exchange_weak(&t->populated, &from, upto)) {}
}
