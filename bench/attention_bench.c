/* attention_bench.c -- decode's attention alone: one query row against a
 * sequence of len positions in the paged KV cache, SmolLM2's shapes (30
 * layers, 9 heads, 3 KV heads, head_dim 64), every layer once a call.
 * "warm": the cache's K and V stay in the CPU's caches between calls;
 * "cold": 64 MB are read between calls, as a forward pass's weights stream
 * through the caches before attention runs. Prints the microseconds a
 * layer, min and median of 200 calls (measured, this host). The cache is
 * 64-byte aligned, as the runtime allocates it. OpenMP splits the heads
 * when there is enough work (75 positions is): OMP_NUM_THREADS=1 for one
 * thread.
 *
 *   OMP_NUM_THREADS=1 build/bench/attention_bench [len] [warm|cold]   defaults: 75 cold
 */
#include "kernels/cpu/kernels.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

int main(int argc, char **argv) {
    enum { L = 30, H = 9, KVH = 3, HD = 64, RUNS = 200, MAX_LEN = 8192 };
    int len = argc > 1 ? atoi(argv[1]) : 75, cold = !(argc > 2 && !strcmp(argv[2], "warm"));
    if (len < 1 || len > MAX_LEN || (argc > 2 && strcmp(argv[2], "warm") && strcmp(argv[2], "cold"))) {
        fprintf(stderr, "usage: attention_bench [len 1..%d] [warm|cold]\n", MAX_LEN);
        return 1;
    }
    int n_blocks = (len + KV_BLOCK_SIZE - 1) / KV_BLOCK_SIZE;
    kv_cache c = { .block_size = KV_BLOCK_SIZE, .n_blocks = n_blocks, .n_layers = L, .kv_dim = KVH * HD, .elem_bytes = 4 };
    size_t n = (size_t)L * n_blocks * KV_BLOCK_SIZE * c.kv_dim, junk_bytes = 64u << 20;
    c.k = aligned_alloc(64, (n * sizeof *c.k + 63) / 64 * 64);
    c.v = aligned_alloc(64, (n * sizeof *c.v + 63) / 64 * 64);
    int *blocks = malloc(n_blocks * sizeof *blocks);
    float *q = malloc(H * HD * sizeof *q), *out = malloc(H * HD * sizeof *out);
    unsigned char *junk = malloc(junk_bytes);
    if (!c.k || !c.v || !blocks || !q || !out || !junk) { fprintf(stderr, "out of memory\n"); return 1; }
    srand(1);
    for (size_t i = 0; i < n; i++) c.k[i] = (float)rand() / RAND_MAX - 0.5f, c.v[i] = (float)rand() / RAND_MAX - 0.5f;
    for (int i = 0; i < H * HD; i++) q[i] = (float)rand() / RAND_MAX - 0.5f;
    for (int i = 0; i < n_blocks; i++) blocks[i] = n_blocks - 1 - i;   /* not in address order, as a pool hands them out */
    memset(junk, 1, junk_bytes);
    kv_seq s = { .blocks = blocks, .n_blocks = n_blocks, .cap = n_blocks, .len = len };
    const kv_seq *seq = &s;
    int row0[2] = { 0, 1 }, row_seq[1] = { 0 }, pos[1] = { len - 1 };
    kv_batch b = { .n_seqs = 1, .T = 1, .seq = &seq, .row0 = row0, .row_seq = row_seq, .pos = pos };
    double t[RUNS];
    unsigned sink = 0;
    for (int r = 0; r < RUNS; r++) {
        if (cold)
            for (size_t i = 0; i < junk_bytes; i += 64) sink += junk[i];
        double t0 = now();
        for (int l = 0; l < L; l++) k_attention(out, q, &c, &b, l, H, KVH, HD);
        t[r] = (now() - t0) / L;
    }
    qsort(t, RUNS, sizeof *t, cmp);
    printf("attention, 1 query, %d positions, %s: %.2f us a layer (min), %.2f (median of %d), measured%s\n",
           len, cold ? "cold" : "warm", t[0] * 1e6, t[RUNS / 2] * 1e6, RUNS, sink == 1 ? " " : "");
    free(c.k); free(c.v); free(blocks); free(q); free(out); free(junk);
    return 0;
}
