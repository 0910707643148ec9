/*
 * quant.c -- which build of quant_dot.c computes the block formats (Q8_0,
 * Q4_0, Q4_1), picked at run time, so that one binary runs its best on
 * any x86-64 CPU: the Makefile compiles quant_dot.c once per instruction
 * set, and this takes the widest the CPU has (cpuid, and the OS saving
 * its registers, as __builtin_cpu_supports asks), or the one named.
 * The first is the same as avx512vnni at batch 1; AMX's tile multiply
 * takes over from 8 tokens (prefill, batched decode).
 */
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/simd.h"
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(QUANT_NONE)   /* QUANT_NONE: the HIP twins' plain loops */
#include <cpuid.h>
typedef void quant_fn(float *y, const float *x, const tensor *W, const uint8_t *p, const float *bias, int T, int N, int K);
quant_fn quant_dot_amx, quant_dot_avx512vnni, quant_dot_avxvnni, quant_dot_avx2;

/* __builtin_cpu_supports takes a literal, hence a function each (every
 * AVX2 CPU also has F16C). clang 14 does not know "avxvnni": cpuid leaf 7
 * subleaf 1, EAX bit 4. */
static int has_avx2(void) { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
static int has_avx512vnni(void) {
    return has_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
}
/* AMX-TILE and AMX-BF16 (leaf 7, EDX bits 24 and 22), and Linux's leave
 * to use the tiles' 8 KB of state (asked once: arch_prctl, Linux 5.16+) */
static int has_amx(void) {
    static int ok = -1;
    unsigned a, b, c, d;
    if (ok < 0)
        ok = has_avx512vnni() && __get_cpuid_count(7, 0, &a, &b, &c, &d) && (d >> 24 & 1) && (d >> 22 & 1) &&
             syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XFEATURE_XTILEDATA */) == 0;
    return ok;
}
static int has_avxvnni(void) {
    unsigned a, b, c, d;
    return has_avx2() && __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a >> 4 & 1);
}

static const struct {
    const char *name;
    int (*has)(void);
    quant_fn *dot;
    int interleaved;   /* reads pack.c's interleaved copy */
} KERNELS[] = {
    { "amx", has_amx, quant_dot_amx, 1 },   /* avx512vnni, and AMX tiles for 8 tokens or more */
    { "avx512vnni", has_avx512vnni, quant_dot_avx512vnni, 1 },
    { "avxvnni", has_avxvnni, quant_dot_avxvnni, 0 },
    { "avx2", has_avx2, quant_dot_avx2, 0 },
};
enum { N_KERNELS = sizeof KERNELS / sizeof *KERNELS };
#else
static const struct { const char *name; int (*has)(void); void (*dot)(); int interleaved; } KERNELS[1];
enum { N_KERNELS = 0 };
#endif

static int chosen = -2;   /* an index of KERNELS; -1: none; -2: not yet chosen */

static int widest(void) {
    for (int i = 0; i < N_KERNELS; i++)
        if (KERNELS[i].has()) return i;
    return -1;
}

static int current(void) {
    if (chosen == -2) chosen = widest();   /* a race here picks the same */
    return chosen;
}

int k_quant_use(const char *name) {
    for (int i = 0; i < N_KERNELS; i++)
        if (!strcmp(name, KERNELS[i].name)) {
            if (!KERNELS[i].has()) return -1;
            chosen = i;
            return 0;
        }
    return -1;
}

const char *k_quant_kernel(void) { return current() < 0 ? "none" : KERNELS[current()].name; }

const char *k_quant_kernels(void) {
    static char list[64];
    list[0] = 0;
    for (int i = 0; i < N_KERNELS; i++)
        if (KERNELS[i].has()) snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", list[0] ? ", " : "", KERNELS[i].name);
    return list[0] ? list : "none";
}

int k_quant_interleaved(void) { return current() >= 0 && KERNELS[current()].interleaved; }

int quant_matmul(float *y, const float *x, const tensor *W, const uint8_t *packed, const float *bias, int T, int N, int K) {
    int k = current();
    if (k < 0) return -1;
    KERNELS[k].dot(y, x, W, KERNELS[k].interleaved ? packed : NULL, bias, T, N, K);
    return 0;
}
