/*
 * attention.hip -- the launchers of attention_kernels.h, and the step's
 * sequences on the device: one upload a step of what the kernels index by
 * (the block tables back to back, each row's sequence and position, the
 * attention workgroups' work), then one launch a layer for all of them.
 */
#include "kernels/hip/hip_common.h"
#include "kernels/hip/attention_kernels.h"

/* The step's index arrays, on the device: [n_seqs] table offsets, the
 * tables, [T] row -> sequence, [T] positions, [5 x workgroups] work. */
static struct { int *dev, *host; size_t cap; unsigned long long id; hip_kv_step s; } U;
static hip_kv_step &S = U.s;

const hip_kv_step *hip_kv_upload(const kv_batch *b, int64_t step) {
    if (U.id == b->id) return &S;   /* uploaded for this step's first layer */
    int n_tables = 0, rows = att_rows(b), wgs = att_workgroups(b, rows);
    for (int i = 0; i < b->n_seqs; i++) n_tables += b->seq[i]->n_blocks;
    size_t n = (size_t)b->n_seqs + n_tables + 2 * (size_t)b->T + (size_t)WORK_INTS * wgs;
    if (n > U.cap) {
        rt_free(U.dev);
        free(U.host);
        U.cap = 2 * n;
        if (!(U.host = (int *)malloc(U.cap * sizeof(int))) || !(U.dev = (int *)rt_alloc(U.cap * sizeof(int), RT_WORKSPACE, "kv_batch")))
            rt_hip_fail(2, "rt_alloc(kv_batch)", "out of memory", __FILE__, __LINE__);
    }
    int *h = U.host, at = 0;
    for (int i = 0; i < b->n_seqs; i++) {
        h[i] = at;
        memcpy(h + b->n_seqs + at, b->seq[i]->blocks, b->seq[i]->n_blocks * sizeof(int));
        at += b->seq[i]->n_blocks;
    }
    int *row_seq = h + b->n_seqs + n_tables, *pos = row_seq + b->T, *work = pos + b->T;
    memcpy(row_seq, b->row_seq, b->T * sizeof(int));
    memcpy(pos, b->pos, b->T * sizeof(int));
    for (int i = 0, w = 0; i < b->n_seqs; i++)
        for (int i0 = 0, rn = b->row0[i + 1] - b->row0[i]; i0 < rn; i0 += rows, w++) {
            int *wk = work + (size_t)w * WORK_INTS;
            wk[WORK_TABLE] = h[i]; wk[WORK_ROW0] = b->row0[i]; wk[WORK_POS0] = b->pos[b->row0[i]];
            wk[WORK_N] = rn; wk[WORK_I0] = i0;
        }
    rt_copy_async(U.dev, h, n * sizeof(int), COPY_H2D, step);
    S.table_off = U.dev; S.tables = U.dev + b->n_seqs; S.row_seq = S.tables + n_tables; S.pos = S.row_seq + b->T;
    S.work = S.pos + b->T;
    U.id = b->id; S.rows = rows; S.workgroups = wgs;
    return &S;
}

uint64_t hip_kv_append(const kcost *c, kv_cache *kv, const kv_batch *b, int l, const float *k, const float *v) {
    hip_kv_upload(b, c->step);
    return launch(c, "kv_append", kv_append_kernel, geo_kv_append(b->T), 0, kv->k, kv->v, (const int *)S.tables,
                  (const int *)S.table_off, (const int *)S.row_seq, (const int *)S.pos, l, k, v, kv->n_blocks,
                  kv->block_size, kv->kv_dim);
}

uint64_t hip_attention(const kcost *c, float *out, const float *q, const kv_cache *kv, const kv_batch *b, int l,
                       int n_heads, int n_kv_heads, int head_dim) {
    if (head_dim > MAX_PER_LANE * hip_wave())
        rt_hip_fail(3, "attention", "head_dim larger than the kernel's registers hold", __FILE__, __LINE__);
    hip_kv_upload(b, c->step);
    kdims d = geo_attention(S.workgroups, S.rows, n_heads, hip_wave());
    size_t lds = 2 * (size_t)kv->block_size * head_dim * sizeof(float);
    return launch(c, S.rows == 1 ? "attention_decode" : "attention_prefill", attention_kernel, d, lds, out, q,
                  (const float *)kv->k, (const float *)kv->v, (const int *)S.tables, (const int *)S.work, l, n_heads,
                  n_heads / n_kv_heads, head_dim, kv->n_blocks, kv->block_size, kv->kv_dim, S.rows);
}

JIT_SOURCE(jit_attention, "kernels/hip/attention_kernels.h", ATTENTION_KERNELS)
