// Launchers of the myops GPU kernels (myops_kernels.cu), callable from plain C++: the pack's C++ code
// (myops_gpu.cpp) never sees a runtime header. Each returns "" on success, else the runtime's error text.
// Launches are asynchronous on `stream` (a cudaStream_t / hipStream_t; NULL = the default stream) on
// `device`, which is made current first.
#pragma once

#include <cstddef>

namespace myops_gpu {

const char* relu6_scale(int device, void* stream, const float* x, float* y, size_t n, float scale, float max_val);
const char* gelu(int device, void* stream, const float* x, float* y, size_t n);

}  // namespace myops_gpu
