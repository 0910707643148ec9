/*
 * hip_compat_cuda.h -- the HIP calls hipath uses, mapped onto CUDA, so the
 * same .hip sources build with nvcc (HIP=nvidia) where no HIP-on-NVIDIA
 * headers work (Debian's HIP 5.2 ones do not compile under CUDA 13).
 */
#ifndef HIPATH_HIP_COMPAT_CUDA_H
#define HIPATH_HIP_COMPAT_CUDA_H

#include <cuda_runtime.h>
#include <cuda_fp16.h>

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

#endif
