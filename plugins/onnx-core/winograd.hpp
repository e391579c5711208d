// onnx-core: Winograd F(4x4, 3x3) convolution (and F(4, 3) for 3x1 / 1x3 kernels) on 8-channel-blocked float32
// activations (nChw8c in and out), for the ISAs where oneDNN 2.6 has none (it ships Winograd for AVX-512 only,
// 3x3 only; conv.cpp uses that one there).
//
// Dense 3x3 convolutions (stride 1, dilation 1, group 1) at AVX2 ran oneDNN's direct jit:avx2 kernel at the
// FMA peak (ResNet-18's 64 -> 64 at 56x56: 2.1 ms); F(4x4, 3x3) does a quarter of the multiplies. Per group of
// output tiles (4x4 outputs, 6x6 inputs each):
//   1. input transform:  V[xi][t][c] = (B^T d B)[xi] for every tile t and input channel c (8 channels a vector);
//   2. 36 matrix products M[xi] (tiles x K) = V[xi] (tiles x C) * U[xi] (C x K), U the transformed weights,
//      packed once for gemm_packed.hpp at creation;
//   3. output transform: Y = A^T m A per tile and 8 output channels, plus bias, Z, activation and the affine
//      clamp of FusedConv, stored where the output exists (the last tiles of a row or column may be partial).
// 3x1 and 1x3 kernels (speech models: openWakeWord's embedding_model is 16 of them on 8-channel blocks) take the
// same steps along their 3-tap side only: tiles of 4 outputs in a column or row, 6 points, 6 products, half the
// direct multiplies (its 72 -> 72 3x1 at 32x8, AVX2: oneDNN jit:avx2 95 us, F(4, 3) 47, ONNX Runtime 77).
// Transforms with the points 0, +-1, +-2 (Lavin & Gray 2016, as oneDNN's jit_wino_4x3), computed in float32; the
// weight transform in float64. Error against the direct convolution: a few float32 roundings of the largest
// products (tests/data/onnx_core: conv_winograd_* cases at AVX2).
// Highway kernels on CappedTag<float, 8> (one AVX2 vector per channel block), dispatched at run time and capped at
// oneDNN's ISA like the rest of the pack (simd_targets.hpp). conv.cpp runs it at AVX2 only: without FMA (SSE4.1,
// AVX) every multiply-add rounds twice and the error grew past the conformance bound.
#pragma once

#include "gemm_packed.hpp"

#include <cfloat>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace onnx_core::winograd {

// What follows the convolution, in oneDNN's post-op order: y = clamp(act(conv + bias + z) * scale + shift, lo, hi).
struct Epilogue {
  enum class Act { kNone, kRelu, kLeakyRelu, kClip };
  Act act = Act::kNone;
  float alpha = 0.0f;             // LeakyRelu's slope
  float act_lo = 0.0f, act_hi = 0.0f;  // Clip's bounds
  float scale = 1.0f, shift = 0.0f;
  float lo = -FLT_MAX, hi = FLT_MAX;
};

// Geometry of one run: X [N, C, H, W] and Y [N, K, OH, OW], both nChw8c; pt/pl: the top and left padding (the
// bottom and right ones follow from OH/OW: OH = H + pt + pb - 2 on a 3-tap side, OH = H on a 1-tap one).
struct Shape {
  int64_t N, H, W, OH, OW, pt, pl;
};

// The kernel's taps: 3x3 (F(4x4, 3x3), 36 points per tile of 4x4 outputs) or 3x1 / 1x3 (F(4, 3) along the
// 3-tap side, 6 points per tile of 4 outputs in a column / row, half the direct convolution's multiplies).
enum class Taps { k3x3, k3x1, k1x3 };

// A convolution's transformed, packed weights. Immutable after construction: run() may be called from several
// threads at once (each with its own scratch).
class Conv43 {
 public:
  // w: ONNX weights [K, C, KH, KW] for `taps` (read during the call only); C and K multiples of 8. For 3x1 and
  // 1x3 the 1-tap side must have no padding (Shape's pt / pl on it 0, OH = H or OW = W there).
  Conv43(const float* w, int64_t K, int64_t C, Taps taps = Taps::k3x3);

  int64_t in_channels() const { return C_; }
  int64_t out_channels() const { return K_; }
  // Floats of scratch run() needs for this shape.
  size_t scratch_floats(const Shape& s) const;
  // Y from X (and Z, in Y's layout, when not null; Z may be Y). bias: K floats or null. scratch: at least
  // scratch_floats(s), 64-byte aligned. Runs its loops on the pack's team (parallel_for).
  void run(const Shape& s, const float* x, const float* bias, const float* z, float* y, const Epilogue& e,
           float* scratch) const;

  // Highway target the kernels run on ("AVX2", "SSE4", ...).
  static const char* target_name();

 private:
  int points_h() const { return taps_ == Taps::k1x3 ? 1 : 6; }
  int points_w() const { return taps_ == Taps::k3x1 ? 1 : 6; }
  int64_t tiles_h(const Shape& s) const { return taps_ == Taps::k1x3 ? s.OH : (s.OH + 3) / 4; }
  int64_t tiles_w(const Shape& s) const { return taps_ == Taps::k3x1 ? s.OW : (s.OW + 3) / 4; }
  size_t tiles_per_group(const Shape& s) const;
  int64_t K_ = 0, C_ = 0;
  Taps taps_ = Taps::k3x3;
  std::vector<gemm_packed::PackedB> u_;  // points_h() * points_w(): U[xi] (C x K)
};

}  // namespace onnx_core::winograd
