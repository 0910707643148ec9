/*
 * pack.c -- the CPU's own copy of a weight matrix, in 2 MB pages: F32,
 * F16 and BF16 rows as they are, block-quantized rows interleaved 16 at a
 * time (what llama.cpp calls repacking; a GPU backend likewise makes its
 * own copy of the weights at load).
 *
 * In the file each row's blocks follow one another. quant_dot.c's AVX512
 * kernel instead wants one 64-byte load to hold 4 weights of each of 16
 * rows: one byte dot product (vpdpbusd, 16 lanes of 4 bytes) then works on
 * 16 rows at once, lane i holding row i's sum, so there are no horizontal
 * sums and a block's 16 scales are one vector. For rows 16g..16g+15 and
 * block b (weights 32b..32b+31 of each row):
 *   q  Q4_0, Q4_1: 4 chunks of 64 bytes; in chunk c, byte 4i+k holds row
 *      i's q[4c+k] in its low nibble and q[16+4c+k] in its high nibble.
 *      Q8_0: 8 chunks; byte 4i+k of chunk c holds row i's q[4c+k] + 128,
 *      unsigned as the byte multiply wants.
 *   d  the 16 rows' fp16 scales; Q4_1 also m, their 16 fp16 minimums.
 * A group of 16 rows keeps all its blocks' q, then all d, then all m: three
 * sequential streams. A copy has exactly the file's byte count. It
 * replaces the file's bytes rather than sitting beside them: the embedding,
 * when it is also the LM head (tied), reads its rows back out of the copy
 * (k_unpack_row), so the loader drops the file's pages (bind.c).
 *
 * The copies are kept here, found by the address of the file's bytes, for
 * the model bound last (model_bind starts with k_pack_reset). They live in
 * chunks of 2 MB pages: decode streams all of them every token, and with
 * 4 KB pages the loads wait on the TLB and the hardware prefetcher stops
 * at every page boundary (SmolLM2, one thread, all matmuls of a token:
 * 11-14 ms on 4 KB pages, 9.5-10 ms on 2 MB; a bf16 row stream, one
 * thread: 12.3 GB/s from the file's mapping, 14.4 from 2 MB pages). The
 * file's mapping gets 2 MB pages only where the page cache happens to
 * hold 2 MB folios: a third to three quarters of it, from run to run.
 */
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/simd.h"
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef struct { const void *src; dtype dt; int N, K; uint8_t *p; } packed;

static packed *table;   /* open addressing on src; cap a power of two */
static int n_packed, cap;

enum { PAGE = 1 << 21, CHUNK = 128 * PAGE };   /* a chunk's last page is part used: few chunks, little waste */
typedef struct { uint8_t *p; size_t used, size; } region;
static region *chunk;   /* the last one is filling */
static int n_chunks;

/* bytes from the current chunk, or from a new one; 64-byte aligned */
static uint8_t *take(size_t bytes) {
    bytes = (bytes + 63) / 64 * 64;
    if (!n_chunks || chunk[n_chunks - 1].used + bytes > chunk[n_chunks - 1].size) {
        size_t size = bytes > CHUNK ? (bytes + PAGE - 1) / PAGE * PAGE : CHUNK;
        void *c = realloc(chunk, (n_chunks + 1) * sizeof *chunk), *p = NULL;
        if (!c) return NULL;
        chunk = c;
        if (!(p = aligned_alloc(PAGE, size))) return NULL;
        madvise(p, size, MADV_HUGEPAGE);   /* a hint: without it, 4 KB pages */
        chunk[n_chunks++] = (region){ p, 0, size };
    }
    uint8_t *p = chunk[n_chunks - 1].p + chunk[n_chunks - 1].used;
    chunk[n_chunks - 1].used += bytes;
    return p;
}

static size_t slot(const void *src) { return ((uintptr_t)src >> 6) * 0x9e3779b97f4a7c15ull >> 32 & (size_t)(cap - 1); }

const uint8_t *k_packed(const tensor *W) {
    if (!n_packed) return NULL;
    for (size_t i = slot(W->data);; i = (i + 1) & (size_t)(cap - 1)) {
        const packed *e = &table[i];
        if (!e->src) return NULL;
        if (e->src == W->data && e->dt == W->dt && e->N == W->shape[0] && e->K == W->shape[1]) return e->p;
    }
}

void k_pack_reset(void) {
    for (int i = 0; i < n_chunks; i++) free(chunk[i].p);
    free(chunk); free(table);
    chunk = NULL; table = NULL; n_chunks = n_packed = cap = 0;
}

static int insert(packed e) {
    if (2 * (n_packed + 1) > cap) {   /* at most half full */
        packed *old = table;
        int old_cap = cap;
        cap = cap ? 2 * cap : 512;
        if (!(table = calloc((size_t)cap, sizeof *table))) { table = old; cap = old_cap; return -1; }
        n_packed = 0;
        for (int i = 0; i < old_cap; i++) if (old[i].src) insert(old[i]);
        free(old);
    }
    size_t i = slot(e.src);
    while (table[i].src) i = (i + 1) & (size_t)(cap - 1);
    table[i] = e;
    n_packed++;
    return 0;
}

/* 4 bytes between the copy and the file, whichever way: flip is Q8_0's
 * +128 (each byte's sign bit), its own inverse. */
static inline void move(uint8_t *copy, uint8_t *file, int pack, uint32_t flip) {
    uint32_t v;
    if (pack) { memcpy(&v, file, 4); v ^= flip; memcpy(copy, &v, 4); }
    else { memcpy(&v, copy, 4); v ^= flip; memcpy(file, &v, 4); }
}

/* Row r's block between the file's bytes blk and its places in a group's
 * streams q, d, m: into them (pack), or back out. A chunk holds 4 bytes
 * of each row, so the block's q moves 4 bytes at a time. */
static void move_block(uint8_t *q, uint8_t *d, uint8_t *m, uint8_t *blk, dtype dt, int r, int pack) {
    int chunks = dt == DT_Q8_0 ? 8 : 4, at = dt == DT_Q4_1 ? 4 : 2;   /* Q4: byte j, q[j] low and q[j+16] high, as here */
    if (pack) { memcpy(d + 2 * r, blk, 2); if (dt == DT_Q4_1) memcpy(m + 2 * r, blk + 2, 2); }
    else { memcpy(blk, d + 2 * r, 2); if (dt == DT_Q4_1) memcpy(blk + 2, m + 2 * r, 2); }
    for (int c = 0; c < chunks; c++) move(q + 64 * c + 4 * r, blk + at + 4 * c, pack, dt == DT_Q8_0 ? 0x80808080u : 0);
}

/* Row n's block b: where its q, d and m lie in the copy p of W. */
static void block_at(uint8_t *p, const tensor *W, int64_t n, int b, uint8_t **q, uint8_t **d, uint8_t **m) {
    int nb = (int)W->shape[1] / 32;
    uint8_t *g = p + n / PACK_ROWS * PACK_ROWS * dtype_row_bytes(W->dt, W->shape[1]);
    *q = g + b * pack_q_bytes(W->dt);
    *d = g + nb * pack_q_bytes(W->dt) + b * 2 * PACK_ROWS;
    *m = *d + nb * 2 * PACK_ROWS;
}

void k_unpack_row(float *dst, const uint8_t *p, const tensor *W, int64_t n) {
    uint8_t blk[34], *q, *d, *m;
    if (dtype_block(W->dt) == 1) { row_to_f32(dst, p + n * dtype_row_bytes(W->dt, W->shape[1]), W->dt, W->shape[1]); return; }
    for (int b = 0; b < W->shape[1] / 32; b++) {
        block_at((uint8_t *)p, W, n, b, &q, &d, &m);
        move_block(q, d, m, blk, W->dt, (int)(n % PACK_ROWS), 0);
        row_to_f32(dst + 32 * b, blk, W->dt, 32);
    }
}

int k_pack(const tensor *W) {
    dtype dt = W->dt;
    int N = (int)W->shape[0], K = (int)W->shape[1], block = dtype_block(dt) == 32;
    if (k_packed(W)) return 1;
    if (!W->data || W->ndim != 2 || dt == DT_I32 || (block && (!k_quant_interleaved() || N % PACK_ROWS || K % 32))) return 0;
    size_t row = dtype_row_bytes(dt, K);
    uint8_t *p = take(row * N), *q, *d, *m;
    if (!p || insert((packed){ W->data, dt, N, K, p })) return -1;
    if (!block) memcpy(p, W->data, row * N);
    else
        for (int n = 0; n < N; n++) {
            uint8_t *blk = (uint8_t *)W->data + n * row;   /* the file's bytes are only read: pack never writes them */
            for (int b = 0; b < K / 32; b++, blk += row / (K / 32)) {
                block_at(p, W, n, b, &q, &d, &m);
                move_block(q, d, m, blk, dt, n % PACK_ROWS, 1);
            }
        }
    return 1;
}
