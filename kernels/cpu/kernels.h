/*
 * kernels.h -- layer 3, CPU twins: the loops that compute each operator.
 * The HIP kernels in kernels/hip/ compute the same things on a GPU. All
 * activations are f32; weights keep their stored dtype and are converted
 * on the fly, row by row, never expanded whole.
 */
#ifndef HIPATH_KERNELS_CPU_H
#define HIPATH_KERNELS_CPU_H

#include "layers/common/tensor.h"
#include "layers/common/kv.h"
#include "layers/common/moe.h"
#include <stdio.h>
#include <stdlib.h>

/* How the kernels' OpenMP workers wait between parallel regions
 * (threads.c): passive, after a spin of about 100 us. libgomp reads this
 * when it loads, so a program calls cpu_threads_wait(argv) first in main:
 * it sets OMP_WAIT_POLICY and GOMP_SPINCOUNT (a count calibrated to this
 * CPU) and starts the program again, once; a user's own setting of either
 * wins. */
void cpu_threads_wait(char **argv);

/* A kernel's scratch for one call, aligned to align bytes (0: malloc's;
 * else bytes a multiple of it). A kernel has no error path, so running
 * out of memory here ends the process with a one-line reason, not a NULL
 * dereference. */
static inline void *k_scratch(size_t bytes, size_t align) {
    void *p = align ? aligned_alloc(align, bytes) : malloc(bytes);
    if (!p && bytes) { fprintf(stderr, "hipath: out of memory (%zu bytes of kernel scratch)\n", bytes); abort(); }
    return p;
}

/* Below this many multiply-adds a kernel runs on one thread: waking a
 * second costs more than it saves (the tiny model's layers are this small). */
#define PARALLEL_MIN (1 << 18)

/* Make the CPU's copy of a weight matrix W in 2 MB pages (pack.c), once
 * at load (the backends' prepare_weight): F32 / F16 / BF16 rows as they
 * are, Q8_0 / Q4_0 / Q4_1 rows interleaved for the AVX512-VNNI and AMX kernels.
 * k_matmul and k_embedding then read it instead of W's bytes. A W that
 * does not fit (no data as in analytic mode; a block format when the
 * kernel chosen reads the file's layout, or with rows not a multiple of
 * 16) is left as it is.
 * 1: copied; 0: left; -1: out of memory. */
int  k_pack(const tensor *W);
/* Free every packed copy (release_weights: the model is freed). */
void k_pack_reset(void);

/* The block formats' kernel (quant.c): which build of quant_dot.c runs,
 * "amx", "avx512vnni", "avxvnni" or "avx2" ("none": not x86-64, or no AVX2).
 * The widest this CPU has, unless k_quant_use names another (the CLI: the
 * environment's HIPATH_CPU_KERNEL; the tests: each in turn); -1 if the
 * name is unknown or this CPU lacks it. Call it before the model loads:
 * pack.c interleaves the copies only for the kernel that reads them.
 * k_quant_kernels: those this CPU has, as "a, b, c". */
const char *k_quant_kernel(void);
const char *k_quant_kernels(void);
int k_quant_use(const char *name);

/* x[t] = E[ids[t]] */
void k_embedding(float *x, const tensor *E, const int *ids, int T);
/* o[t] = x[t] / sqrt(mean(x[t]^2) + eps) * w, rows of n */
void k_rmsnorm(float *o, const float *x, const float *w, int T, int n, float eps);
/* y[T,N] = x[T,K] W[N,K]^T (+ b[N]); fp32 accumulate (matmul.c) */
void k_matmul(float *y, const float *x, const tensor *W, const float *b, int T, int N, int K);
/* The same, plainly: the dozen lines k_matmul makes fast (matmul_ref.c), the tests' oracle. */
void k_matmul_ref(float *y, const float *x, const tensor *W, const float *b, int T, int N, int K);
/* Rotate each head of x[T, n_heads*head_dim] by its position. */
void k_rope(float *x, int T, int n_heads, int head_dim, const int *pos, float theta, int adjacent);
/* Store each row's k and v [T, kv_dim] at its sequence's slot for its
 * position, layer l. */
void k_kv_append(kv_cache *c, const kv_batch *b, int l, const float *k, const float *v);
/* Causal attention of each query row over its sequence's cached K/V (keys
 * 0..its position), online softmax block by block (FlashAttention's idea:
 * the score matrix is never stored). out, q: [T, n_heads*head_dim]. */
void k_attention(float *out, const float *q, const kv_cache *c, const kv_batch *b, int l,
                 int n_heads, int n_kv_heads, int head_dim);
/* A mixture of experts (moe.c). Each token t's k experts ids[t*k + j] and
 * weights w[t*k + j] from its router logits [T, n_experts], as g says. */
void k_moe_route(int *ids, float *w, const float *logits, int T, const moe_gate *g);
/* The grouped matmul: for each expert e, y[s] = x[row] W[e]^T for its slots
 * s (g), row = s / k when per_token (the token's input), else s. */
void k_moe_matmul(float *y, const float *x, const tensor *const *W, const moe_groups *g, int per_token, int N, int K);
/* out[t] = sum_j w[t*k + j] y[t*k + j], rows of n. */
void k_moe_combine(float *out, const float *y, const float *w, int T, int k, int n);
/* g = silu(g) * u */
void k_silu_mul(float *g, const float *u, int n);
/* x += y */
void k_add(float *x, const float *y, int n);
/* k_logsumexp and k_exp_scaled, the sampler's host kernels, are declared
 * in the seam (kernels/backend.h) and defined in elementwise.c. */

#endif
