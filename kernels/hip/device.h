/*
 * device.h -- what every kernel needs and nothing more: sized integers,
 * the weight dtypes, launch geometry, GGUF blocks (quant.h), weight loads
 * and wavefront reductions. No C library and no runtime header, so the
 * same text compiles ahead of time (hipcc, nvcc: hip_common.h includes it)
 * and at run time (hiprtc, nvrtc: --jit, layers/runtime/hip/jit.hip).
 * Wavefront size is warpSize, never a constant.
 */
#ifndef HIPATH_HIP_DEVICE_H
#define HIPATH_HIP_DEVICE_H

#ifdef HIPATH_RTC
/* The run-time compilers have no C library: nvrtc knows only size_t,
 * hiprtc's built-in runtime header typedefs some sized integers (the 32-
 * and 64-bit ones, 64 as long long), and a typedef may repeat only the
 * same type. The dtypes (DT_*) come from the JIT's prelude, which prints
 * layers/common/dtype.h's values. */
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
#else
#include <stddef.h>
#include <stdint.h>
extern "C" {
#include "layers/common/dtype.h"
}
#endif
#include "kernels/hip/geometry.h"

#define HD __host__ __device__

/* Dynamic LDS, sized by the launch: HIP's headers define this macro, and
 * the CPU runtime (hip_cpu.h) its own; nvcc, nvrtc and hiprtc get this. */
#ifndef HIP_DYNAMIC_SHARED
#define HIP_DYNAMIC_SHARED(type, var) extern __shared__ type var[];
#endif

/* An fp16 bit pattern as f32 (exact): the device's conversion instruction,
 * and on the host (tests/check_hip_quant.sh) the same by hand. */
HD inline float half_to_float(uint16_t h) {
#if defined(__CUDA_ARCH__)
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
#elif defined(__HIP_DEVICE_COMPILE__)
    return (float)__builtin_bit_cast(_Float16, h);
#else
    uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, m = h & 1023, u;
    if (e == 0) {   /* zero or subnormal: m * 2^-24 */
        float f = (float)m * (1.0f / 16777216.0f);
        return s ? -f : f;
    }
    u = s | (e == 31 ? 0xffu : e + 112) << 23 | m << 13;   /* rebias 15 -> 127; inf/nan keep all ones */
    float f;
    __builtin_memcpy(&f, &u, 4);
    return f;
#endif
}

#include "kernels/hip/quant.h"

/* One weight as f32: the stored dtype is a template argument. */
template <int DT> __device__ inline float wload(const void *w, int64_t i);
template <> __device__ inline float wload<DT_F32>(const void *w, int64_t i) { return ((const float *)w)[i]; }
template <> __device__ inline float wload<DT_BF16>(const void *w, int64_t i) {
    return __uint_as_float((uint32_t)((const uint16_t *)w)[i] << 16);
}
template <> __device__ inline float wload<DT_F16>(const void *w, int64_t i) { return half_to_float(((const uint16_t *)w)[i]); }
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

#undef HD
#endif
