// onnx-core: what the integer ops share: ONNX's rounding and saturation, integer/scale element access, the
// shape rules of MatMulInteger / QLinearMatMul (numpy matmul) and ConvInteger / QLinearConv (Conv's geometry),
// and the direct reference loops the int8 kernels (qconv.cpp, qmatmul.cpp) fall back to for the rare forms
// oneDNN cannot run exactly (a weight zero point other than 0 for int8 or 128 for uint8, per-row zero points,
// weights that change between runs). The fallbacks are reported as reference implementations.
#pragma once

#include "common.hpp"

#include <cmath>
#include <limits>
#include <span>
#include <string>
#include <vector>

namespace onnx_core::quant {

// ONNX: round half to even (the default rounding mode), then saturate to Q.
template <class Q>
Q saturate_round(float v) {
  float r = std::nearbyint(v);
  r = std::max<float>(r, static_cast<float>(std::numeric_limits<Q>::lowest()));
  r = std::min<float>(r, static_cast<float>(std::numeric_limits<Q>::max()));
  return static_cast<Q>(r);
}

// Calls f(std::type_identity<Q>{}) for Q = uint8_t or int8_t, as d says; fails for any other dtype.
template <class F>
void dispatch_q8(oph_dtype d, const std::string& op, F&& f) {
  if (d == u8) f(std::type_identity<uint8_t>{});
  else if (d == i8) f(std::type_identity<int8_t>{});
  else fail(op + ": dtype " + oph::dtype_name(d) + " is not supported (uint8 and int8 are)", OPH_CODE_UNIMPLEMENTED);
}

// Integer value of element i of a uint8/int8/int32 tensor.
int32_t int_at(const oph::TensorRef& t, size_t i);
// Float value of element i of a float32 scale.
float float_at(const oph::TensorRef& t, size_t i);

// numpy matmul shape for A [.., M, K] x B [.., K, N] (1-D operands promoted and the added dim removed).
struct MatMulPlan {
  std::vector<int64_t> out;
  std::vector<int64_t> batch;  // broadcast batch dims
  int64_t M = 1, K = 1, N = 1;
  bool a1d = false, b1d = false;
};
MatMulPlan matmul_plan(std::span<const int64_t> as, std::span<const int64_t> bs, const std::string& op);
void matmul_infer(oph::InferContext& c, size_t a, size_t b, oph_dtype out);

// Conv geometry of ConvInteger / QLinearConv (NOTSET/VALID/SAME_* padding resolved).
struct QConvGeom {
  std::vector<int64_t> kernel, strides, dilations, pads, out;  // pads: begins then ends
  int64_t group = 1;
};
QConvGeom conv_geom(const oph::Attrs& at, std::span<const int64_t> xs, std::span<const int64_t> ws,
                    const std::string& op);
void conv_infer(oph::InferContext& c, size_t x, size_t w, oph_dtype out);
void conv_attrs(oph::OpBuilder& b);

// The reference computations (direct loops, int32 accumulation), exact to ONNX's definition.
void matmul_integer_ref(oph::KernelContext& ctx);
void qlinear_matmul_ref(oph::KernelContext& ctx);
void conv_integer_ref(oph::KernelContext& ctx);
void qlinear_conv_ref(oph::KernelContext& ctx);

}  // namespace onnx_core::quant
