// The few runtime names the GPU kernels use, for CUDA (nvcc) and HIP (hipcc) alike, so that one kernel source
// serves both packs. Included only by kernel sources (compiled by nvcc or hipcc), never by the pack's C++ code.
// The two runtimes spell these the same after their prefix (cudaGetDevice / hipGetDevice, ...).
#pragma once

#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#define OPH_GPU_NAME(name) hip##name
#else
#include <cuda_runtime.h>
#define OPH_GPU_NAME(name) cuda##name
#endif

using gpuStream_t = OPH_GPU_NAME(Stream_t);
using gpuError_t = OPH_GPU_NAME(Error_t);
#define gpuSuccess OPH_GPU_NAME(Success)
#define gpuGetLastError OPH_GPU_NAME(GetLastError)
#define gpuGetErrorString OPH_GPU_NAME(GetErrorString)
#define gpuGetDevice OPH_GPU_NAME(GetDevice)
#define gpuSetDevice OPH_GPU_NAME(SetDevice)
