// onnx-core: float32 matrix multiply with a constant right-hand side packed once, at kernel creation, into
// panels for the Highway target chosen at run time (capped at oneDNN's ISA, see simd_targets.hpp). MatMul and
// Gemm use it when B is a constant 2-D initializer (a Linear layer's weights); everything else keeps oneDNN's
// sgemm.
//
// Why not sgemm for these: oneDNN 2.6's sgemm re-packs B on every call (or, below AVX-512 and whenever M or N
// is under ~263, runs its no-copy kernel, which is ~2x slower when B is 32-byte aligned: 5.1 vs 2.9 ms for
// 49x768 by 768x3072). Packing once removes both the per-call copy and that dependence on B's address, as
// ONNX Runtime's MLAS does with its pre-packed weights.
//
// Layout: B (K x N) is cut into panels of NR = 2 vectors of columns (16 at AVX2, 32 at AVX-512); panel p holds
// B[k][p*NR + j] at k*NR + j, zero past column N. The micro-kernel keeps MR x NR sums in registers (MR 6 with 16
// vector registers, 12 with 32) and streams a KC-deep slice of one panel against MR rows of A.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace onnx_core::gemm_packed {

// B packed for the current Highway target. Immutable after pack(): multiply() may run on it from several
// threads at once.
class PackedB {
 public:
  size_t rows() const { return k_; }        // K
  size_t cols() const { return n_; }        // N
  size_t panel_width() const { return nr_; }
  size_t panels() const { return nr_ ? (n_ + nr_ - 1) / nr_ : 0; }
  const float* data() const { return data_; }
  bool empty() const { return data_ == nullptr; }

 private:
  friend PackedB pack(const float* b, size_t K, size_t N, bool transposed, float scale);
  struct Free {
    void operator()(float* p) const noexcept;
  };
  // 64-byte aligned, every float written by pack() (no zero-fill first); from 4 MiB on 2 MiB aligned and
  // advised MADV_HUGEPAGE: on the 2-vCPU VM a page-faulting pass over fresh 4 KiB pages cost more than the
  // packing (ConvNeXt-T's 110 MB of MatMul weights: a vector's zero-fill was 29% of the model's load).
  std::unique_ptr<float, Free> store_;
  const float* data_ = nullptr;  // store_
  size_t k_ = 0, n_ = 0, nr_ = 0;
};

// Packs scale * B, where B[k][n] = b[k * N + n] (transposed: b[n * K + k]). Copies: b may go after the call.
PackedB pack(const float* b, size_t K, size_t N, bool transposed = false, float scale = 1.0f);

// C[m][n] = bias[n] (0 when bias is null) + sum_k A[m][k] * B[k][n], for the rows
// m < M and the columns of panels [panel_lo, panel_hi) (column n of panel p is p * panel_width() + j, up to N).
// A is row-major with row stride lda (>= K), C with row stride ldc (>= N); A and C must not overlap. Disjoint
// panel ranges write disjoint columns: split them across threads.
void multiply(const PackedB& b, const float* a, size_t M, size_t lda, float* c, size_t ldc, const float* bias,
              size_t panel_lo, size_t panel_hi);

// Highway target the kernels run on, e.g. "AVX2", "AVX3" (AVX-512).
const char* target_name();

}  // namespace onnx_core::gemm_packed
