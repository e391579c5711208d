// onnx-core: the float32 rows of LayerNormalization (norm.cpp), vectorised with Highway and dispatched at run
// time to the best target the CPU offers, capped at oneDNN's effective ISA (simd_targets.hpp). Mean and variance
// are summed in float32 vector lanes (each lane a short partial sum), the variance from x - mean (two passes).
#pragma once

#include <cstddef>

namespace onnx_core::norm_simd {

// Rows [0, rows) of `inner` floats: y = (x - mean) / sqrt(var + eps) * scale + bias. scale and bias hold `inner`
// values, or one when scale_one / bias_one (bias may be null: none). mean and inv_std (the per-row mean and
// 1 / sqrt(var + eps)) may be null; y may be null (only the statistics are wanted).
struct LayerNormRows {
  const float* x;
  float* y;
  size_t rows;
  size_t inner;
  const float* scale;
  bool scale_one;
  const float* bias;
  bool bias_one;
  float epsilon;
  float* mean;
  float* inv_std;
};
void layer_norm_rows(const LayerNormRows& a);

// The Highway target layer_norm_rows runs (e.g. "AVX3", "AVX2"), after the cap.
const char* target_name();

}  // namespace onnx_core::norm_simd
