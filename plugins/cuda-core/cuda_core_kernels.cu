// cuda-core kernels: elementwise unary (Relu, Sigmoid), binary with numpy broadcasting (Add, Mul on float,
// int32, int64: a contiguous fast path for same shape and for a scalar operand, a strided kernel for the
// general case), Softmax over one axis, and a broadcast copy (Gemm's C). Few kernels on purpose: nvcc time
// in CI grows with every instantiation and architecture.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_core_kernels.hpp"

namespace cuda_core {
namespace {

constexpr int kBlock = 256;

unsigned grid_for(size_t items) {
  size_t blocks = (items + kBlock - 1) / kBlock;
  return static_cast<unsigned>(blocks < 65535 ? (blocks ? blocks : 1) : 65535);
}

const char* last_error() {
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? "" : cudaGetErrorString(e);
}

#define GRID_STRIDE(i, n) \
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < (n); i += size_t(gridDim.x) * blockDim.x)

__global__ void unary_kernel(int op, const float* x, float* y, size_t n) {
  GRID_STRIDE(i, n) {
    float v = x[i];
    y[i] = op == 0 ? fmaxf(v, 0.0f) : 1.0f / (1.0f + expf(-v));
  }
}

template <class T>
__device__ T apply(int op, T a, T b) {
  return op == 0 ? a + b : a * b;
}

// mode 0: same shape; 1: b scalar; 2: a scalar.
template <class T>
__global__ void binary_flat(int op, int mode, const T* a, const T* b, T* y, size_t n) {
  GRID_STRIDE(i, n) {
    T va = mode == 2 ? a[0] : a[i];
    T vb = mode == 1 ? b[0] : b[i];
    y[i] = apply(op, va, vb);
  }
}

template <class T>
__global__ void binary_strided(int op, const T* a, const T* b, T* y, size_t n, Broadcast bc) {
  GRID_STRIDE(i, n) {
    size_t rest = i;
    int64_t oa = 0, ob = 0;
    for (int d = bc.rank - 1; d >= 0; --d) {
      size_t dim = static_cast<size_t>(bc.dims[d]);
      size_t c = rest % dim;
      rest /= dim;
      oa += static_cast<int64_t>(c) * bc.a_strides[d];
      ob += static_cast<int64_t>(c) * bc.b_strides[d];
    }
    y[i] = apply(op, a[oa], b[ob]);
  }
}

__global__ void broadcast_copy_kernel(const float* src, float* y, size_t n, Broadcast bc) {
  GRID_STRIDE(i, n) {
    size_t rest = i;
    int64_t o = 0;
    for (int d = bc.rank - 1; d >= 0; --d) {
      size_t dim = static_cast<size_t>(bc.dims[d]);
      o += static_cast<int64_t>(rest % dim) * bc.a_strides[d];
      rest /= dim;
    }
    y[i] = src[o];
  }
}

// inner == 1: one block per row; max and sum reduced in shared memory.
__global__ void softmax_rows(const float* x, float* y, size_t rows, size_t len) {
  __shared__ float red[kBlock];
  for (size_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * len;
    float* yr = y + r * len;
    float m = -INFINITY;
    for (size_t l = threadIdx.x; l < len; l += blockDim.x) m = fmaxf(m, xr[l]);
    red[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
      __syncthreads();
    }
    m = red[0];
    __syncthreads();
    float sum = 0.0f;
    for (size_t l = threadIdx.x; l < len; l += blockDim.x) {
      float e = expf(xr[l] - m);
      yr[l] = e;
      sum += e;
    }
    red[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
      __syncthreads();
    }
    const float inv = 1.0f / red[0];
    __syncthreads();
    for (size_t l = threadIdx.x; l < len; l += blockDim.x) yr[l] *= inv;
  }
}

// inner > 1: one thread per (outer, inner) column; consecutive threads read consecutive addresses.
__global__ void softmax_columns(const float* x, float* y, size_t outer, size_t len, size_t inner) {
  GRID_STRIDE(t, outer * inner) {
    size_t o = t / inner, j = t % inner;
    const float* xc = x + o * len * inner + j;
    float* yc = y + o * len * inner + j;
    float m = -INFINITY;
    for (size_t l = 0; l < len; ++l) m = fmaxf(m, xc[l * inner]);
    float sum = 0.0f;
    for (size_t l = 0; l < len; ++l) {
      float e = expf(xc[l * inner] - m);
      yc[l * inner] = e;
      sum += e;
    }
    const float inv = 1.0f / sum;
    for (size_t l = 0; l < len; ++l) yc[l * inner] *= inv;
  }
}

template <class T>
void launch_binary(cudaStream_t s, int op, BinaryMode mode, const void* a, const void* b, void* y, size_t n,
                   const Broadcast* bc) {
  const T* ta = static_cast<const T*>(a);
  const T* tb = static_cast<const T*>(b);
  T* ty = static_cast<T*>(y);
  if (mode == BinaryMode::kGeneral)
    binary_strided<T><<<grid_for(n), kBlock, 0, s>>>(op, ta, tb, ty, n, *bc);
  else
    binary_flat<T><<<grid_for(n), kBlock, 0, s>>>(op, static_cast<int>(mode), ta, tb, ty, n);
}

}  // namespace

const char* unary(void* stream, UnaryOp op, const float* x, float* y, size_t n) {
  if (n == 0) return "";
  unary_kernel<<<grid_for(n), kBlock, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<int>(op), x, y, n);
  return last_error();
}

const char* binary(void* stream, BinaryOp op, DType t, BinaryMode mode, const void* a, const void* b, void* y, size_t n,
                   const Broadcast* bc) {
  if (n == 0) return "";
  auto s = static_cast<cudaStream_t>(stream);
  switch (t) {
    case DType::kF32: launch_binary<float>(s, static_cast<int>(op), mode, a, b, y, n, bc); break;
    case DType::kI32: launch_binary<int32_t>(s, static_cast<int>(op), mode, a, b, y, n, bc); break;
    case DType::kI64: launch_binary<int64_t>(s, static_cast<int>(op), mode, a, b, y, n, bc); break;
  }
  return last_error();
}

const char* softmax(void* stream, const float* x, float* y, size_t outer, size_t len, size_t inner) {
  if (outer == 0 || len == 0 || inner == 0) return "";
  auto s = static_cast<cudaStream_t>(stream);
  if (inner == 1) {
    unsigned grid = static_cast<unsigned>(outer < 65535 ? outer : 65535);
    softmax_rows<<<grid, kBlock, 0, s>>>(x, y, outer, len);
  } else {
    softmax_columns<<<grid_for(outer * inner), kBlock, 0, s>>>(x, y, outer, len, inner);
  }
  return last_error();
}

const char* broadcast_copy(void* stream, const float* src, float* y, size_t n, const Broadcast* bc) {
  if (n == 0) return "";
  broadcast_copy_kernel<<<grid_for(n), kBlock, 0, static_cast<cudaStream_t>(stream)>>>(src, y, n, *bc);
  return last_error();
}

}  // namespace cuda_core
