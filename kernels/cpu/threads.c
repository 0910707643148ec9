/*
 * threads.c -- how the CPU kernels' OpenMP threads wait between kernels.
 *
 * libgomp's default is to spin a long time (about 300000 spins), which takes
 * the cores from the HTTP and client threads of a small machine (about ten
 * times lower serving throughput on 2 cores). Fully passive, each of a
 * decode step's ~150 parallel regions wakes a sleeping worker through a
 * futex: 30-100 us in a VM. So the workers spin for about SPIN_NS, then
 * sleep: long enough to span the serial work between a step's regions,
 * short enough to sleep between steps and requests. libgomp counts spins,
 * not time, and a spin is one PAUSE, whose cost differs tenfold between
 * CPUs (10 ns on this VM's, ~40 on Skylake-SP): 1000 spins, the count
 * hipath used, were 50 us on one host and under 10 on the next, where
 * SmolLM2's decode took 8.6 ms a token against 3.5 with 100 us of spin
 * (docs/gguf.md). So the count is measured here.
 */
#include "kernels/cpu/kernels.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SPIN_NS 100000.0

static void spin_once(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#else
    __asm__ volatile("" ::: "memory");
#endif
}

/* Nanoseconds of one spin: the fastest of four tries (a try that loses
 * its core, or runs before the core has reached its clock, reads long). */
static double spin_ns(void) {
    double best = 1e9;
    for (int k = 0; k < 4; k++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        for (int i = 0; i < 2000; i++) spin_once();
        clock_gettime(CLOCK_MONOTONIC, &b);
        double ns = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 2000;
        if (ns < best) best = ns;
    }
    return best;
}

/* The count of spins that last about SPIN_NS on this CPU. */
static long spin_count(void) {
    double ns = spin_ns();
    long n = ns > 0 ? (long)(SPIN_NS / ns) : 100000;
    return n < 1000 ? 1000 : n > 1000000 ? 1000000 : n;
}

/* /proc/self/exe is this program, not a loader running it (valgrind's
 * tool, ld.so called by hand), which would take argv as its own. */
static int exe_is(const char *argv0) {
    struct stat a, b;
    return argv0 && strchr(argv0, '/') && !stat("/proc/self/exe", &a) && !stat(argv0, &b) ?
           a.st_dev == b.st_dev && a.st_ino == b.st_ino : 1;
}

void cpu_threads_wait(char **argv) {
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT") || !exe_is(argv[0])) return;
    char count[32];
    snprintf(count, sizeof count, "%ld", spin_count());
    /* both set, or the program started again would calibrate and start again */
    if (setenv("OMP_WAIT_POLICY", "passive", 1) || setenv("GOMP_SPINCOUNT", count, 1)) return;
    execv("/proc/self/exe", argv);   /* returns only on failure: then carry on */
}
