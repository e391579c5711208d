// myops kernels, one source for CUDA (nvcc, the myops-cuda pack) and HIP (hipcc -x hip, the myops-hip pack).
// Same semantics as the CPU pack (plugins/myops/myops.cpp):
//   relu6_scale: y = clamp(x * scale, 0, max_val), NaN kept
//   gelu:        y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))   (may run in place)
// Memory-bound: a grid-stride loop over float4 (16-byte loads and stores) for the aligned bulk, then a scalar
// tail, so any n (1, 7, 4097, ...) and any 4-byte-aligned pointer work.
#include "gpu_compat.hpp"
#include "myops_gpu.hpp"

#include <cstdint>

namespace {

struct Relu6Scale {
  float scale, max_val;
  // NaN in, NaN out (as ONNX Clip and numpy's clip): comparisons, not fminf/fmaxf, which drop a NaN operand.
  __device__ float operator()(float v) const {
    v *= scale;
    v = v < 0.0f ? 0.0f : v;
    return v > max_val ? max_val : v;
  }
};

struct Gelu {
  __device__ float operator()(float v) const {
    const float kC = 0.7978845608028654f;  // sqrt(2/pi)
    return 0.5f * v * (1.0f + tanhf(kC * (v + 0.044715f * v * v * v)));
  }
};

template <class F>
__global__ void map_vec4(const float4* x, float4* y, size_t n4, F f) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n4; i += size_t(gridDim.x) * blockDim.x) {
    float4 v = x[i];
    v.x = f(v.x);
    v.y = f(v.y);
    v.z = f(v.z);
    v.w = f(v.w);
    y[i] = v;
  }
}

template <class F>
__global__ void map_scalar(const float* x, float* y, size_t n, F f) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    y[i] = f(x[i]);
}

constexpr int kBlock = 256;

unsigned grid_for(size_t items) {
  // Enough blocks to fill any current GPU several times over; the grid-stride loop covers the rest.
  size_t blocks = (items + kBlock - 1) / kBlock;
  return static_cast<unsigned>(blocks < 65535 ? (blocks ? blocks : 1) : 65535);
}

template <class F>
const char* launch(int device, void* stream, const float* x, float* y, size_t n, F f) {
  int current = -1;
  if (gpuGetDevice(&current) != gpuSuccess || current != device) {
    gpuError_t e = gpuSetDevice(device);
    if (e != gpuSuccess) return gpuGetErrorString(e);
  }
  if (n == 0) return "";
  auto s = static_cast<gpuStream_t>(stream);
  size_t bulk = 0;
  const bool aligned = (reinterpret_cast<uintptr_t>(x) % 16 == 0) && (reinterpret_cast<uintptr_t>(y) % 16 == 0);
  if (aligned && n >= 4) {
    size_t n4 = n / 4;
    map_vec4<<<grid_for(n4), kBlock, 0, s>>>(reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n4, f);
    bulk = n4 * 4;
  }
  if (bulk < n) map_scalar<<<grid_for(n - bulk), kBlock, 0, s>>>(x + bulk, y + bulk, n - bulk, f);
  gpuError_t e = gpuGetLastError();
  return e == gpuSuccess ? "" : gpuGetErrorString(e);
}

}  // namespace

namespace myops_gpu {

const char* relu6_scale(int device, void* stream, const float* x, float* y, size_t n, float scale, float max_val) {
  return launch(device, stream, x, y, n, Relu6Scale{scale, max_val});
}

const char* gelu(int device, void* stream, const float* x, float* y, size_t n) {
  return launch(device, stream, x, y, n, Gelu{});
}

}  // namespace myops_gpu
