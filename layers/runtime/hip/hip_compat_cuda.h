/*
 * hip_compat_cuda.h -- the HIP calls hipath uses, mapped onto CUDA, so the
 * same .hip sources build with nvcc (HIP=nvidia) where no HIP-on-NVIDIA
 * headers work (Debian's HIP 5.2 ones do not compile under CUDA 13).
 */
#ifndef HIPATH_HIP_COMPAT_CUDA_H
#define HIPATH_HIP_COMPAT_CUDA_H

#include <cuda_runtime.h>

typedef cudaError_t hipError_t;
typedef cudaStream_t hipStream_t;
typedef cudaEvent_t hipEvent_t;
typedef cudaDeviceProp hipDeviceProp_t;
typedef cudaFuncAttributes hipFuncAttributes;
typedef cudaMemcpyKind hipMemcpyKind;

#define hipSuccess               cudaSuccess
#define hipMemcpyHostToDevice    cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost    cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice  cudaMemcpyDeviceToDevice
#define hipGetErrorString        cudaGetErrorString
#define hipGetLastError          cudaGetLastError
#define hipGetDeviceCount        cudaGetDeviceCount
#define hipSetDevice             cudaSetDevice
#define hipGetDeviceProperties   cudaGetDeviceProperties
#define hipDeviceGetAttribute    cudaDeviceGetAttribute
#define hipDeviceAttributeMemoryClockRate       cudaDevAttrMemoryClockRate
#define hipDeviceAttributeMemoryBusWidth        cudaDevAttrGlobalMemoryBusWidth
#define hipDeviceAttributeClockRate             cudaDevAttrClockRate
#define hipMalloc                cudaMalloc
#define hipFree                  cudaFree
#define hipMemcpy                cudaMemcpy
#define hipMemcpyAsync           cudaMemcpyAsync
#define hipStreamCreate          cudaStreamCreate
#define hipStreamDestroy         cudaStreamDestroy
#define hipStreamSynchronize     cudaStreamSynchronize
#define hipEventCreate           cudaEventCreate
#define hipEventDestroy          cudaEventDestroy
#define hipEventRecord           cudaEventRecord
#define hipEventSynchronize      cudaEventSynchronize
#define hipEventElapsedTime      cudaEventElapsedTime
#define hipFuncGetAttributes     cudaFuncGetAttributes
#define hipLaunchKernel          cudaLaunchKernel

/* Modules (--jit): the runtime's libraries, which take PTX and finish it
 * for the device; a library's kernel handle launches as a function would. */
typedef cudaLibrary_t hipModule_t;
typedef cudaKernel_t hipFunction_t;
#define hipModuleGetFunction     cudaLibraryGetKernel
#define hipModuleUnload          cudaLibraryUnload
static inline cudaError_t hipModuleLoadData(cudaLibrary_t *m, const void *image) {
    return cudaLibraryLoadData(m, image, NULL, NULL, 0, NULL, NULL, 0);
}
static inline cudaError_t hipModuleLaunchKernel(cudaKernel_t f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                                unsigned by, unsigned bz, unsigned lds, cudaStream_t s, void **args,
                                                void **extra) {
    (void)extra;
    return cudaLaunchKernel((const void *)f, dim3(gx, gy, gz), dim3(bx, by, bz), args, lds, s);
}

#endif
