/*
 * hip_common.h -- what every HIP kernel file includes: the HIP runtime (or
 * its CUDA mapping), hipath's C headers, error checks, weight loads (GGUF
 * blocks: quant.h) and wavefront reductions. Wavefront size is warpSize,
 * never a constant.
 */
#ifndef HIPATH_HIP_COMMON_H
#define HIPATH_HIP_COMMON_H

#ifdef HIPATH_CUDA
#include "kernels/hip/hip_compat_cuda.h"
#else
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#endif
#include <stdint.h>

extern "C" {
#include "kernels/backend.h"
#include "kernels/hip/geometry.h"
#include "layers/runtime/runtime.h"
}
#include "kernels/hip/quant.h"

/* Every HIP call and every launch is checked, and a failure names its layer. */
#define HIP_CHECK(layer, call) do { hipError_t e_ = (call); \
    if (e_ != hipSuccess) rt_hip_fail((layer), #call, hipGetErrorString(e_), __FILE__, __LINE__); } while (0)
#define LAUNCH_CHECK(name) HIP_CHECK(3, hipGetLastError())

/* One weight as f32: the stored dtype is a template argument. */
template <int DT> __device__ inline float wload(const void *w, int64_t i);
template <> __device__ inline float wload<DT_F32>(const void *w, int64_t i) { return ((const float *)w)[i]; }
template <> __device__ inline float wload<DT_BF16>(const void *w, int64_t i) {
    return __uint_as_float((uint32_t)((const uint16_t *)w)[i] << 16);
}
template <> __device__ inline float wload<DT_F16>(const void *w, int64_t i) {
    return __half2float(__ushort_as_half(((const uint16_t *)w)[i]));
}
template <> __device__ inline float wload<DT_Q8_0>(const void *w, int64_t i) { return qweight<DT_Q8_0>(w, i); }
template <> __device__ inline float wload<DT_Q4_0>(const void *w, int64_t i) { return qweight<DT_Q4_0>(w, i); }
template <> __device__ inline float wload<DT_Q4_1>(const void *w, int64_t i) { return qweight<DT_Q4_1>(w, i); }

/* Lane i gets lane i ^ mask's v (CUDA needs the mask of lanes taking part). */
__device__ inline float lane_xor(float v, int mask) {
#ifdef HIPATH_CUDA
    return __shfl_xor_sync(0xffffffffu, v, mask);
#else
    return __shfl_xor(v, mask);
#endif
}
/* Sum over the lanes of one wavefront (butterfly: every lane gets it). */
__device__ inline float wave_sum(float v) {
    for (int o = warpSize / 2; o > 0; o >>= 1) v += lane_xor(v, o);
    return v;
}
/* Sum over a workgroup; `part` is LDS for one float per wavefront. */
__device__ inline float block_sum(float v, float *part) {
    int lane = threadIdx.x % warpSize, w = threadIdx.x / warpSize, nw = (blockDim.x + warpSize - 1) / warpSize;
    v = wave_sum(v);
    if (lane == 0) part[w] = v;
    __syncthreads();
    v = threadIdx.x < (unsigned)nw ? part[threadIdx.x] : 0.0f;
    if (w == 0) v = wave_sum(v);
    if (threadIdx.x == 0) part[0] = v;
    __syncthreads();
    v = part[0];
    __syncthreads();
    return v;
}

/* backend_hip.hip: timing events around each launch, and the wave size. */
void hip_launch_begin(const kcost *c, const char *kernel, const void *fn, kdims d);
void hip_launch_end(const kcost *c, const char *kernel);
int  hip_wave(void);
hipStream_t hip_stream(void);
void hip_backend_open(hipStream_t s, int wave);
void hip_drain(void);   /* read the pending kernels' events (the host has waited) */

/* The launchers, one per kernel file; backend_hip.hip puts them in the table. */
void hip_embedding(const kcost *c, float *x, const tensor *E, const int *ids, int T);
void hip_rmsnorm(const kcost *c, float *o, const float *x, const float *w, int T, int n, float eps);
void hip_matmul(const kcost *c, float *y, const float *x, const tensor *W, const float *b, int T, int N, int K);
void hip_rope(const kcost *c, float *x, int T, int n_heads, int head_dim, const int *pos, float theta, int adjacent);
void hip_kv_append(const kcost *c, kv_cache *kv, const kv_seq *s, int l, int pos0, const float *k, const float *v, int n);
void hip_attention(const kcost *c, float *out, const float *q, const kv_cache *kv, const kv_seq *s, int l,
                   int pos0, int n, int n_heads, int n_kv_heads, int head_dim);
void hip_silu_mul(const kcost *c, float *g, const float *u, int n);
void hip_add(const kcost *c, float *x, const float *y, int n);
#endif
