// onnx-core: Conv/ConvTranspose attributes and output geometry (pads, auto_pad, output_padding/output_shape),
// shared by the convolution kernels (conv.cpp) and their shape inference.
#pragma once

#include "common.hpp"

#include <algorithm>
#include <cfloat>
#include <string>
#include <vector>

namespace onnx_core::conv_detail {

// ----- attributes and geometry -----

struct ConvAttrs {
  bool transpose = false;
  std::string op;
  std::string auto_pad;
  int64_t group = 1;
  std::vector<int64_t> dilations, kernel_shape, pads, strides, output_padding, output_shape;
  // com.ophost::FusedConv (graph pass conv-activation-fusion): the activation run as a oneDNN post-op.
  std::string activation;
  std::vector<float> activation_params;
  // FusedConv: y = act(conv(x)) * output_scale + output_shift (a scalar affine the pass folded in).
  float output_scale = 1.0f, output_shift = 0.0f;
  // FusedConv: then clamped to [output_min, output_max] (scalar Max/Min the pass folded in).
  float output_min = -FLT_MAX, output_max = FLT_MAX;
  // FusedConv: y = act(conv(x) + z) (input Z, conv-add-fusion); X, Y, Z stored channel-blocked (nchwc-layout).
  bool sum = false, x_blocked = false, y_blocked = false, z_blocked = false;
  // FusedConv with activation Swish as its last step (no output_* after it): SiLU runs after the primitive, on
  // simd_math::silu, instead of as oneDNN's eltwise_swish post-op (which added 0.27-0.33 ns per output float to
  // EfficientNet-B0's convolutions on Zen 5; silu takes 0.21).
  bool host_silu = false;
  // No output_scale/shift/min/max after the activation.
  bool output_untouched() const {
    return output_scale == 1.0f && output_shift == 0.0f && output_min == -FLT_MAX && output_max == FLT_MAX;
  }
};

inline ConvAttrs read_conv_attrs(const oph::Attrs& at, bool transpose) {
  ConvAttrs a;
  a.transpose = transpose;
  a.op = transpose ? "ConvTranspose" : "Conv";
  a.auto_pad = at.get<std::string>("auto_pad");
  if (a.auto_pad != "NOTSET" && a.auto_pad != "SAME_UPPER" && a.auto_pad != "SAME_LOWER" && a.auto_pad != "VALID")
    fail(a.op + ": auto_pad '" + a.auto_pad + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  a.group = at.get<int64_t>("group");
  if (a.group < 1) fail(a.op + ": group must be >= 1, got " + std::to_string(a.group));
  auto ints = [&](const char* n) {
    return at.has(n) ? at.get<std::vector<int64_t>>(n) : std::vector<int64_t>{};
  };
  a.dilations = ints("dilations");
  a.kernel_shape = ints("kernel_shape");
  a.pads = ints("pads");
  a.strides = ints("strides");
  if (transpose) {
    a.output_padding = ints("output_padding");
    a.output_shape = ints("output_shape");
  }
  for (int64_t d : a.dilations)
    if (d < 1) fail(a.op + ": dilations must be >= 1");
  for (int64_t s : a.strides)
    if (s < 1) fail(a.op + ": strides must be >= 1");
  for (int64_t p : a.pads)
    if (p < 0) fail(a.op + ": pads must be >= 0");
  if (!a.pads.empty() && a.auto_pad != "NOTSET")
    fail(a.op + ": pads and auto_pad=" + a.auto_pad + " must not both be given");
  return a;
}

struct ConvGeom {
  size_t nsp = 0;
  int64_t N = 0, C = 0, OC = 0, G = 1;
  std::vector<int64_t> k, s, d, pb, pe, in, out, outpad;
  std::vector<int64_t> out_shape;  // full NC... output shape (dims may be unknown at infer)
};

// Geometry from the input and weight shapes; unknown dims (-1) give unknown output dims.
inline ConvGeom conv_geom(const ConvAttrs& a, std::span<const int64_t> x, std::span<const int64_t> w) {
  const std::string& op = a.op;
  if (x.size() < 3 || x.size() > 5) fail(op + ": X must have rank 3 to 5 (N, C, 1-3 spatial dims), got " + shape_str(x));
  if (w.size() != x.size()) fail(op + ": W " + shape_str(w) + " must have the rank of X " + shape_str(x));
  ConvGeom g;
  g.nsp = x.size() - 2;
  const size_t n = g.nsp;
  auto check_len = [&](const std::vector<int64_t>& v, size_t want, const char* what) {
    if (!v.empty() && v.size() != want)
      fail(op + ": " + what + " has " + std::to_string(v.size()) + " values, expected " + std::to_string(want));
  };
  check_len(a.dilations, n, "dilations");
  check_len(a.kernel_shape, n, "kernel_shape");
  check_len(a.pads, 2 * n, "pads");
  check_len(a.strides, n, "strides");
  check_len(a.output_padding, n, "output_padding");
  check_len(a.output_shape, n, "output_shape");
  g.G = a.group;
  g.N = x[0];
  g.C = x[1];
  if (!a.transpose) {
    g.OC = w[0];
    if (g.C >= 0 && w[1] >= 0 && w[1] * g.G != g.C)
      fail(op + ": X has " + std::to_string(g.C) + " channels but W " + shape_str(w) + " with group " +
           std::to_string(g.G) + " expects " + std::to_string(w[1] * g.G));
    if (g.OC >= 0 && g.OC % g.G != 0) fail(op + ": output channels " + std::to_string(g.OC) + " not divisible by group");
  } else {
    if (g.C >= 0 && w[0] >= 0 && w[0] != g.C)
      fail(op + ": X has " + std::to_string(g.C) + " channels but W " + shape_str(w) + " expects " + std::to_string(w[0]));
    if (g.C >= 0 && g.C % g.G != 0) fail(op + ": input channels not divisible by group");
    g.OC = w[1] < 0 ? -1 : w[1] * g.G;
  }
  for (size_t i = 0; i < n; ++i) {
    int64_t k = w[2 + i];
    if (!a.kernel_shape.empty()) {
      if (k >= 0 && a.kernel_shape[i] != k) fail(op + ": kernel_shape does not match W " + shape_str(w));
      k = a.kernel_shape[i];
    }
    if (k < 0) fail(op + ": the kernel's spatial size must be known (W " + shape_str(w) + ")");
    g.k.push_back(k);
    g.s.push_back(a.strides.empty() ? 1 : a.strides[i]);
    g.d.push_back(a.dilations.empty() ? 1 : a.dilations[i]);
    g.in.push_back(x[2 + i]);
    g.outpad.push_back(a.output_padding.empty() ? 0 : a.output_padding[i]);
    g.pb.push_back(a.pads.empty() ? 0 : a.pads[i]);
    g.pe.push_back(a.pads.empty() ? 0 : a.pads[n + i]);
  }
  g.out.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t in = g.in[i], ek = (g.k[i] - 1) * g.d[i] + 1, s = g.s[i];
    if (!a.transpose) {
      if (in < 0) { g.out[i] = -1; continue; }
      if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
        int64_t out = (in + s - 1) / s;
        int64_t total = std::max<int64_t>(0, (out - 1) * s + ek - in);
        int64_t small = total / 2, big = total - small;
        g.pb[i] = a.auto_pad == "SAME_UPPER" ? small : big;
        g.pe[i] = a.auto_pad == "SAME_UPPER" ? big : small;
      }
      int64_t span = in + g.pb[i] + g.pe[i] - ek;
      if (span < 0)
        fail(op + ": kernel (extent " + std::to_string(ek) + ") is larger than the padded input " + shape_str(x));
      g.out[i] = span / s + 1;
    } else {
      if (g.outpad[i] < 0 || (g.outpad[i] >= s && g.outpad[i] >= g.d[i]))
        fail(op + ": output_padding must be smaller than the stride or the dilation");
      if (in < 0) { g.out[i] = -1; continue; }
      const int64_t full = s * (in - 1) + g.outpad[i] + ek;
      if (!a.output_shape.empty() || a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
        int64_t target = !a.output_shape.empty() ? a.output_shape[i] : in * s;
        int64_t total = full - target;
        if (total < 0) fail(op + ": output_shape is larger than the transposed convolution can produce");
        int64_t small = total / 2, big = total - small;
        // ONNX: SAME_UPPER puts the smaller half at the start; SAME_LOWER and output_shape the larger.
        bool upper = a.auto_pad == "SAME_UPPER";
        g.pb[i] = upper ? small : big;
        g.pe[i] = upper ? big : small;
        g.out[i] = target;
      } else {
        g.out[i] = full - g.pb[i] - g.pe[i];
        if (g.out[i] < 1) fail(op + ": the pads leave an empty output");
      }
    }
  }
  g.out_shape = {g.N, g.OC};
  g.out_shape.insert(g.out_shape.end(), g.out.begin(), g.out.end());
  return g;
}

}  // namespace onnx_core::conv_detail
