// Launchers of the cuda-core kernels (cuda_core_kernels.cu), callable from plain C++ (cuda_core.cpp never
// includes a kernel header). All launches are asynchronous on `stream` (cudaStream_t; NULL = default stream)
// on the current device. Each returns "" on success, else the CUDA error text.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cuda_core {

inline constexpr int kMaxRank = 16;

// An output shape and, per operand, the element stride of each output dimension in that operand (0 where the
// operand is broadcast along the dimension).
struct Broadcast {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t a_strides[kMaxRank] = {};
  int64_t b_strides[kMaxRank] = {};
};

enum class UnaryOp : int { kRelu = 0, kSigmoid = 1 };
enum class BinaryOp : int { kAdd = 0, kMul = 1 };
enum class DType : int { kF32 = 0, kI32 = 1, kI64 = 2 };

// How the two operands of a binary op line up with the output.
enum class BinaryMode : int {
  kSameShape = 0,  // a, b and y all have n elements
  kScalarB = 1,    // b has one element
  kScalarA = 2,    // a has one element
  kGeneral = 3,    // strided broadcast described by a Broadcast
};

const char* unary(void* stream, UnaryOp op, const float* x, float* y, size_t n);
const char* binary(void* stream, BinaryOp op, DType t, BinaryMode mode, const void* a, const void* b, void* y, size_t n,
                   const Broadcast* bc);
// Softmax over the middle axis of a [outer, len, inner] float tensor.
const char* softmax(void* stream, const float* x, float* y, size_t outer, size_t len, size_t inner);
// y[i] = src at the broadcast position of output element i (uses bc->dims and bc->a_strides); n elements.
const char* broadcast_copy(void* stream, const float* src, float* y, size_t n, const Broadcast* bc);

}  // namespace cuda_core
