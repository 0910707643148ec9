/*
 * matmul.hip -- the launcher of y = x W^T (+ b): GEMM for prefill, GEMV
 * for decode, a kernel per weight dtype (matmul_kernels.h).
 */
#include "kernels/hip/hip_common.h"
#include "kernels/hip/matmul_kernels.h"

template <int DT>
static uint64_t matmul_dt(const kcost *c, float *y, const float *x, const void *w, const float *b, int T, int N, int K, size_t row) {
    int cus = rt_device_now()->prof.compute_units, kslice = gemm_slice_k(T, N, K, cus);
    kdims d = geo_matmul(T, N, K, hip_wave(), cus);
    if (T > 1 && kslice < K) {   /* split-K: y starts as the bias, the slices add into it */
        kcost z = *c;
        z.flops = 0, z.bytes = 4.0 * T * N, z.split = 1;   /* this launch's own: y written once */
        launch(&z, "gemm_init", gemm_init_kernel, geo_elementwise(T * N), 0, y, b, T, N);
    }
    if (T > 1) return launch(c, "gemm", gemm_kernel<DT>, d, 0, y, x, w, b, T, N, K, row, kslice);
    else if constexpr (DT == DT_Q8_0 || DT == DT_Q4_0 || DT == DT_Q4_1)
        return launch(c, "gemv", qgemv_kernel<DT>, d, 0, y, x, w, b, N, K / 32, row);
    else if ((uintptr_t)w % 16 == 0 && row % 16 == 0 && K % vec16<DT>::n == 0)
        return launch(c, "gemv", gemv_kernel<DT, true>, d, 0, y, x, w, b, N, K, row);
    else return launch(c, "gemv", gemv_kernel<DT, false>, d, 0, y, x, w, b, N, K, row);
}

uint64_t hip_matmul(const kcost *c, float *y, const float *x, const tensor *W, const float *b, int T, int N, int K) {
    const void *w = rt_dev(W->data);
    const float *bd = (const float *)rt_dev(b);
    size_t row = dtype_row_bytes(W->dt, K);
    switch (W->dt) {
    case DT_F32:  return matmul_dt<DT_F32>(c, y, x, w, bd, T, N, K, row);
    case DT_F16:  return matmul_dt<DT_F16>(c, y, x, w, bd, T, N, K, row);
    case DT_BF16: return matmul_dt<DT_BF16>(c, y, x, w, bd, T, N, K, row);
    case DT_Q8_0: return matmul_dt<DT_Q8_0>(c, y, x, w, bd, T, N, K, row);
    case DT_Q4_0: return matmul_dt<DT_Q4_0>(c, y, x, w, bd, T, N, K, row);
    case DT_Q4_1: return matmul_dt<DT_Q4_1>(c, y, x, w, bd, T, N, K, row);
    default: rt_hip_fail(3, "matmul", "no HIP kernel for this weight dtype", __FILE__, __LINE__);
    }
    return 0;
}

JIT_SOURCE(jit_matmul, "kernels/hip/matmul_kernels.h", MATMUL_KERNELS)
