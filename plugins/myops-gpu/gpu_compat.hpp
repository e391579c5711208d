// The few runtime names the GPU kernels use, for CUDA (nvcc) and HIP (hipcc) alike, so that one kernel source
// serves both packs. Included only by kernel sources (compiled by nvcc or hipcc), never by the pack's C++ code.
#pragma once

#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
using gpuStream_t = hipStream_t;
using gpuError_t = hipError_t;
#define gpuSuccess hipSuccess
#define gpuGetLastError hipGetLastError
#define gpuGetErrorString hipGetErrorString
#define gpuGetDevice hipGetDevice
#define gpuSetDevice hipSetDevice
#else
#include <cuda_runtime.h>
using gpuStream_t = cudaStream_t;
using gpuError_t = cudaError_t;
#define gpuSuccess cudaSuccess
#define gpuGetLastError cudaGetLastError
#define gpuGetErrorString cudaGetErrorString
#define gpuGetDevice cudaGetDevice
#define gpuSetDevice cudaSetDevice
#endif
