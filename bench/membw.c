/*
 * membw.c -- this machine's memory bandwidth, the bound batch-1 decode is
 * held to: read_GBps is the fastest any of these loops reads an array far
 * larger than the caches, so a kernel that streams its weights once can
 * reach it but not pass it. Each thread reads its own contiguous part, in
 * 2 MB pages (as pack.c's copies of the weights):
 *   sum64   a sum of 64-bit words, as the compiler vectorizes it (this
 *           file's only loop before; it understated the bound: decode read
 *           faster than it)
 *   vec     aligned vector loads (AVX512, else AVX2) into four XOR chains,
 *           asking for each line 4 KB ahead (past the hardware prefetcher's
 *           4 KB page boundary)
 *   nt      the same with non-temporal loads (MOVNTDQA)
 * at 1 thread and up to OpenMP's count, best of 7. copy_GBps counts bytes
 * read + written (STREAM's convention), at OpenMP's count.
 * usage: membw [MiB per array, default 1024]   (JSON on stdout)
 */
#include <immintrin.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#ifdef __AVX512F__
typedef __m512i vec;
#define VLOAD(p) _mm512_load_si512(p)
#define VNT(p) _mm512_stream_load_si512((void *)(p))
#define VXOR(a, b) _mm512_xor_si512(a, b)
#define VZERO() _mm512_setzero_si512()
static uint64_t fold(vec v) { return (uint64_t)_mm512_reduce_add_epi64(v); }
#else
typedef __m256i vec;
#define VLOAD(p) _mm256_load_si256((const __m256i *)(p))
#define VNT(p) _mm256_stream_load_si256((const __m256i *)(p))
#define VXOR(a, b) _mm256_xor_si256(a, b)
#define VZERO() _mm256_setzero_si256()
static uint64_t fold(vec v) { uint64_t u[4]; memcpy(u, &v, 32); return u[0] + u[1] + u[2] + u[3]; }
#endif
enum { W = sizeof(vec), AHEAD = 4096, PAGE = 1 << 21 };

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

static void *pages(size_t n) {
    void *p = aligned_alloc(PAGE, (n + PAGE - 1) / PAGE * PAGE);
    if (p) madvise(p, n, MADV_HUGEPAGE);   /* a hint: without it, 4 KB pages */
    return p;
}

enum { SUM64, VEC, NT, WAYS };
static const char *NAME[WAYS] = { "sum64", "vec", "nt" };

/* bytes [lo, hi) of a, one way; the result keeps the loads alive */
static uint64_t read_part(const char *a, size_t lo, size_t hi, int way) {
    if (way == SUM64) {
        uint64_t s = 0;
        for (const uint64_t *q = (const uint64_t *)(a + lo); q < (const uint64_t *)(a + hi); q++) s += *q;
        return s;
    }
    vec c0 = VZERO(), c1 = c0, c2 = c0, c3 = c0;
    for (const char *p = a + lo; p < a + hi; p += 4 * W) {
        for (int l = 0; l < 4 * W; l += 64) _mm_prefetch(p + AHEAD + l, _MM_HINT_T0);
        if (way == NT) {
            c0 = VXOR(c0, VNT(p)); c1 = VXOR(c1, VNT(p + W)); c2 = VXOR(c2, VNT(p + 2 * W)); c3 = VXOR(c3, VNT(p + 3 * W));
        } else {
            c0 = VXOR(c0, VLOAD(p)); c1 = VXOR(c1, VLOAD(p + W)); c2 = VXOR(c2, VLOAD(p + 2 * W)); c3 = VXOR(c3, VLOAD(p + 3 * W));
        }
    }
    return fold(VXOR(VXOR(c0, c1), VXOR(c2, c3)));
}

/* GB/s of the best of 7 reads of n bytes by p threads */
static double read_GBps(const char *a, size_t n, int p, int way, uint64_t *sink) {
    double best = 1e9;
    for (int r = 0; r < 7; r++) {
        uint64_t s = 0;
        double t = now();
        #pragma omp parallel num_threads(p) reduction(^:s)
        {
            size_t k = (size_t)omp_get_thread_num(), per = n / (size_t)p / (4 * W) * (4 * W);
            s ^= read_part(a, k * per, k == (size_t)p - 1 ? n : (k + 1) * per, way);
        }
        t = now() - t;
        if (t < best) best = t;
        *sink ^= s;
    }
    return n / best / 1e9;
}

int main(int argc, char **argv) {
    size_t n = (argc > 1 ? (size_t)atol(argv[1]) : 1024) << 20;   /* bytes per array */
    char *a = pages(n), *b = pages(n);
    if (!a || !b || n < (size_t)(4 * W) * 64) { fprintf(stderr, "membw: cannot allocate 2 x %zu bytes\n", n); return 1; }
    int most = omp_get_max_threads();
    #pragma omp parallel for
    for (size_t i = 0; i < n; i += 4096) { memset(a + i, (int)(i >> 12), 4096); memset(b + i, 0, 4096); }
    uint64_t sink = 0;
    double best_copy = 1e9, bound = 0;
    for (int r = 0; r < 7; r++) {
        double t = now();
        #pragma omp parallel
        {
            size_t k = (size_t)omp_get_thread_num(), p = (size_t)omp_get_num_threads(), per = n / p;
            memcpy(b + k * per, a + k * per, k == p - 1 ? n - k * per : per);
        }
        t = now() - t;
        if (t < best_copy) best_copy = t;
    }
    printf("{\"threads\": %d, \"bytes\": %zu, \"copy_GBps\": %.2f, \"by_threads\": [", most, n, 2.0 * n / best_copy / 1e9);
    for (int p = 1; p <= most; p++) {
        printf("%s{\"threads\": %d", p > 1 ? ", " : "", p);
        double top = 0;
        for (int way = 0; way < WAYS; way++) {
            double g = read_GBps(a, n, p, way, &sink);
            printf(", \"%s\": %.2f", NAME[way], g);
            if (g > top) top = g;
        }
        printf(", \"best\": %.2f}", top);
        if (p == most) bound = top;
    }
    printf("], \"read_GBps\": %.2f, \"sink\": %llu}\n", bound, (unsigned long long)(sink & 1));
    free(a); free(b);
    return 0;
}
