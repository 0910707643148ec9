/*
 * sample.hip -- the next token on the device: greedy (argmax), or
 * softmax(logits / temperature) cut to the top-p nucleus and drawn with a
 * uniform u from the host's seeded generator. One workgroup of 1024 walks
 * the vocabulary; the nucleus threshold is found by bisection on the
 * probability (no sort): the largest t whose tokens with p >= t still hold
 * top_p of the mass. Compiled and callable (hip_sample); the engine still
 * samples on the host after the D2H copy of the logits, as in the story.
 */
#include "kernels/hip/hip_common.h"

enum { SAMPLE_THREADS = 1024, BISECT_STEPS = 24 };

__device__ inline void block_argmax(float *v, int *id, float *sv, int *si) {
    sv[threadIdx.x] = *v; si[threadIdx.x] = *id;
    __syncthreads();
    for (int o = blockDim.x / 2; o > 0; o >>= 1) {
        if (threadIdx.x < (unsigned)o && (sv[threadIdx.x + o] > sv[threadIdx.x] ||
            (sv[threadIdx.x + o] == sv[threadIdx.x] && si[threadIdx.x + o] < si[threadIdx.x]))) {
            sv[threadIdx.x] = sv[threadIdx.x + o]; si[threadIdx.x] = si[threadIdx.x + o];
        }
        __syncthreads();
    }
    *v = sv[0]; *id = si[0];
    __syncthreads();
}

__global__ void sample_kernel(const float *logits, int vocab, float temperature, float top_p, float u, int *out) {
    __shared__ float sv[SAMPLE_THREADS], part[32];
    __shared__ int si[SAMPLE_THREADS];
    float m = -INFINITY;
    int id = 0;
    for (int i = threadIdx.x; i < vocab; i += blockDim.x) if (logits[i] > m) { m = logits[i]; id = i; }
    block_argmax(&m, &id, sv, si);
    if (temperature <= 0) { if (threadIdx.x == 0) *out = id; return; }
    float z = 0;                                    /* p_i = exp((l_i - m) / T) / z */
    for (int i = threadIdx.x; i < vocab; i += blockDim.x) z += expf((logits[i] - m) / temperature);
    z = block_sum(z, part);
    float lo = 0, hi = 1.0f / z;                    /* the top token's p is 1/z */
    for (int it = 0; it < BISECT_STEPS && top_p < 1; it++) {
        float t = 0.5f * (lo + hi), mass = 0;
        for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
            float p = expf((logits[i] - m) / temperature) / z;
            mass += p >= t ? p : 0.0f;
        }
        if (block_sum(mass, part) >= top_p) lo = t; else hi = t;
    }
    float kept = 0;                                 /* mass of the nucleus, p >= lo */
    for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
        float p = expf((logits[i] - m) / temperature) / z;
        kept += p >= lo ? p : 0.0f;
    }
    kept = block_sum(kept, part);
    /* Draw: thread 0 walks the nucleus in id order with the cumulative sum. */
    if (threadIdx.x == 0) {
        float target = u * kept, acc = 0;
        int pick = id;
        for (int i = 0; i < vocab; i++) {
            float p = expf((logits[i] - m) / temperature) / z;
            if (p < lo) continue;
            acc += p; pick = i;
            if (acc > target) break;
        }
        *out = pick;
    }
}

void hip_sample(const float *logits, int vocab, float temperature, float top_p, float u, int *out) {
    kcost c = { "sample", 0, 4.0 * vocab, -1 };
    kdims d = kd(1, SAMPLE_THREADS);
    hip_launch_begin(&c, "sample", (const void *)sample_kernel, d);
    sample_kernel<<<d.grid, d.block, 0, hip_stream()>>>(logits, vocab, temperature, top_p, u, out);
    hip_launch_end(&c, "sample");
}
