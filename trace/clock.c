/*
 * clock.c -- the trace's timeline (docs/timing.md).
 *
 * On cpu and hip it is the host's monotonic clock since trace_open: what a
 * stopwatch would read.
 *
 * Under sim and analytic (trace_clock_virtual) it is virtual, and each
 * thread keeps its own: a thread's time advances with the CPU time it
 * spends (host work, measured as this host's CPU time, so that waiting for
 * a core on a busy machine is not counted), jumps forward when it waits for
 * the simulated device (trace_clock_wait: modeled), goes back when the CPU
 * stood in for the device (trace_clock_rewind), and never runs behind what
 * it was handed: a thread that learns of an event at t (a request queued,
 * a token ready, bytes on a socket) moves to t if it was behind
 * (trace_clock_receive). Time a thread spends blocked is therefore never
 * counted by itself, only what it waited for. A thread's time is its
 * causal history: the host work and device time that led to it.
 */
#include "trace/trace_internal.h"
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static struct {
    _Atomic int virt;
    _Atomic unsigned gen;          /* a new timeline: every thread starts again */
    _Atomic uint64_t floor;        /* the latest time handed on: where a new thread starts */
    _Atomic uint64_t t0;           /* wall: the origin */
} C = { .gen = 1 };

/* This thread's virtual clock: v at its CPU time cpu; modeled: the device
 * time in its causal history, for slices that contain some (trace_fast.h). */
static _Thread_local struct { uint64_t v, cpu, modeled; unsigned gen; } me;

double trace_host_seconds(void) { return clock_of(CLOCK_MONOTONIC) * 1e-9; }

/* This thread's CPU time, read from the kernel at most every CPU_READ_NS
 * of wall time and interpolated with the monotonic clock in between. The
 * kernel's answer is a system call (~450 ns in a VM, against ~25 ns for
 * the monotonic clock from the vDSO), and a simulated op reads the clock
 * two or three times in a few microseconds: at every read it was a fifth
 * of a tiny model's generation, and tracing's own reads cost it 10%. The
 * price: a thread descheduled or blocked inside the window is charged up
 * to CPU_READ_NS of that wait, once; the next kernel read catches up (the
 * estimate never goes back). A wait longer than the window is never
 * counted: the read after it is the kernel's. */
#define CPU_READ_NS 20000
static _Thread_local struct { uint64_t cpu, mono, last; } cpu_read;

static uint64_t thread_cpu(void) {
    uint64_t m = clock_of(CLOCK_MONOTONIC), c;
    if (cpu_read.mono && m - cpu_read.mono < CPU_READ_NS) c = cpu_read.cpu + (m - cpu_read.mono);
    else {
        c = cpu_read.cpu = clock_of(CLOCK_THREAD_CPUTIME_ID);
        cpu_read.mono = m;
    }
    if (c < cpu_read.last) c = cpu_read.last;
    return cpu_read.last = c;
}

static uint64_t mine(uint64_t *cpu) {
    *cpu = thread_cpu();
    unsigned gen = atomic_load_explicit(&C.gen, memory_order_relaxed);
    if (me.gen != gen) {   /* first read on this timeline */
        me.v = atomic_load_explicit(&C.floor, memory_order_relaxed);
        me.cpu = *cpu;
        me.modeled = 0;
        me.gen = gen;
    }
    return me.v + (*cpu - me.cpu);
}

static void set_mine(uint64_t v, uint64_t cpu) { me.v = v; me.cpu = cpu; }

static void raise_floor(uint64_t t) {
    uint64_t f = atomic_load_explicit(&C.floor, memory_order_relaxed);
    while (f < t && !atomic_compare_exchange_weak(&C.floor, &f, t)) {}
}

void trace_clock_restart(void) {
    atomic_store(&C.t0, clock_of(CLOCK_MONOTONIC));
    atomic_store(&C.floor, 0);
    atomic_fetch_add(&C.gen, 1);
}

void trace_clock_virtual(int on) {
    atomic_store(&C.virt, on);
    trace_clock_restart();
}

int trace_clock_is_virtual(void) { return atomic_load_explicit(&C.virt, memory_order_relaxed); }

uint64_t trace_now_ns(void) {
    uint64_t cpu;
    if (!trace_clock_is_virtual()) return clock_of(CLOCK_MONOTONIC) - atomic_load_explicit(&C.t0, memory_order_relaxed);
    return mine(&cpu);
}

uint64_t trace_clock_modeled(void) {
    return trace_clock_is_virtual() && me.gen == atomic_load_explicit(&C.gen, memory_order_relaxed) ? me.modeled : 0;
}

void trace_clock_rewind(uint64_t t) {
    uint64_t cpu;
    if (!trace_clock_is_virtual()) return;
    mine(&cpu);
    set_mine(t, cpu);
}

void trace_clock_wait(uint64_t t) {
    uint64_t cpu, now;
    if (!trace_clock_is_virtual() || t <= (now = mine(&cpu))) return;
    set_mine(t, cpu);
    me.modeled += t - now;
    raise_floor(t);
}

void trace_clock_blocked(uint64_t t, uint64_t end) {
    uint64_t cpu;
    if (!trace_clock_is_virtual()) return;
    mine(&cpu);
    if (end < t) end = t;
    set_mine(end, cpu);
    me.modeled += end - t;
    raise_floor(end);
}

trace_stamp trace_clock_stamp(void) {
    uint64_t cpu;
    if (!trace_clock_is_virtual()) return (trace_stamp){ trace_now_ns(), 0 };
    uint64_t now = mine(&cpu);
    raise_floor(now);
    return (trace_stamp){ now, me.modeled };
}

void trace_clock_receive(trace_stamp s) {
    uint64_t cpu;
    if (!trace_clock_is_virtual()) return;
    uint64_t now = mine(&cpu);
    if (s.t > now) set_mine(s.t, cpu);
    if (s.modeled > me.modeled) me.modeled = s.modeled;
}

/* On the wire between a client and a server of one process (an HTTP
 * header, an SSE comment): "pid:t:modeled". Bytes on a loopback socket
 * carry no time; this is the time they left. */
int trace_stamp_write(char *buf, int cap) {
    if (!trace_clock_is_virtual()) return -1;
    trace_stamp s = trace_clock_stamp();
    return snprintf(buf, cap, "%ld:%llu:%llu", (long)getpid(), (unsigned long long)s.t, (unsigned long long)s.modeled)
           < cap ? 0 : -1;
}

int trace_stamp_read(const char *s, trace_stamp *out) {
    long pid;
    unsigned long long t, m;
    if (!trace_clock_is_virtual() || sscanf(s, "%ld:%llu:%llu", &pid, &t, &m) != 3 || pid != (long)getpid()) return -1;
    *out = (trace_stamp){ t, m };
    return 0;
}
