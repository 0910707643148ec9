/*
 * attention.hip -- the launchers of attention_kernels.h, and the sequence's
 * block table on the device.
 */
#include "kernels/hip/hip_common.h"
#include "kernels/hip/attention_kernels.h"

/* The sequence's block table on the device, uploaded once per step. */
static struct { int *dev; int cap; const int *host; int n; int64_t step; } bt;

static const int *block_table(const kv_seq *s, int64_t step) {
    if (bt.host == s->blocks && bt.n == s->n_blocks && bt.step == step) return bt.dev;
    if (s->n_blocks > bt.cap) {
        rt_free(bt.dev);
        bt.cap = 2 * s->n_blocks;
        if (!(bt.dev = (int *)rt_alloc(bt.cap * sizeof(int), RT_WORKSPACE, "block_table")))
            rt_hip_fail(2, "rt_alloc(block_table)", "out of device memory", __FILE__, __LINE__);
    }
    rt_copy_async(bt.dev, s->blocks, s->n_blocks * sizeof(int), COPY_H2D, step);
    bt.host = s->blocks; bt.n = s->n_blocks; bt.step = step;
    return bt.dev;
}

uint64_t hip_kv_append(const kcost *c, kv_cache *kv, const kv_seq *s, int l, int pos0, const float *k, const float *v, int n) {
    const int *blocks = block_table(s, c->step);
    return launch(c, "kv_append", kv_append_kernel, geo_kv_append(n), 0,
                  kv->k, kv->v, blocks, l, pos0, k, v, kv->n_blocks, kv->block_size, kv->kv_dim);
}

uint64_t hip_attention(const kcost *c, float *out, const float *q, const kv_cache *kv, const kv_seq *s, int l,
                       int pos0, int n, int n_heads, int n_kv_heads, int head_dim) {
    if (head_dim > MAX_PER_LANE * hip_wave())
        rt_hip_fail(3, "attention", "head_dim larger than the kernel's registers hold", __FILE__, __LINE__);
    const int *blocks = block_table(s, c->step);
    kdims d = geo_attention(n, n_heads, hip_wave());
    size_t lds = 2 * (size_t)kv->block_size * head_dim * sizeof(float);
    const char *name = n == 1 ? "attention_decode" : "attention_prefill";
    return launch(c, name, attention_kernel, d, lds, out, q, kv->k, kv->v, blocks, l, pos0, n, n_heads,
                  n_heads / n_kv_heads, head_dim, kv->n_blocks, kv->block_size, kv->kv_dim, att_rows(n));
}

JIT_SOURCE(jit_attention, "kernels/hip/attention_kernels.h", ATTENTION_KERNELS)
