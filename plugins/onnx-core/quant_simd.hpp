// onnx-core: the elementwise loops of linear quantization (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear
// and the requantization of int32 accumulators after QLinearConv / QLinearMatMul), vectorised with Highway and
// dispatched at run time like simd_math.hpp (capped at oneDNN's effective ISA).
//
// Rounding is ONNX's: round half to even (the CPU's default rounding mode), then the zero point is added as an
// integer, then the result saturates to the 8-bit type. NaN quantizes to the type's lowest value.
// Each function reads its input [0, n) and writes [0, n) of y; no overlap.
#pragma once

#include <cstddef>
#include <cstdint>

namespace onnx_core::quant_simd {

// y = saturate(round(x / scale) + zp) into uint8 (is_signed false) or int8 (true).
void quantize(const float* x, size_t n, float scale, int32_t zp, bool is_signed, void* y);
// y = (x - zp) * scale for x uint8 (is_signed false) or int8 (true).
void dequantize(const void* x, bool is_signed, size_t n, float scale, int32_t zp, float* y);
// y = saturate(round(float(acc + bias) * scale) + zp) into uint8 / int8: ONNX's QLinearConv / QLinearMatMul
// requantization of one row (one output channel, or one run of a single scale).
void requantize(const int32_t* acc, size_t n, int32_t bias, float scale, int32_t zp, bool is_signed, void* y);
// y[i] = saturate(round(float(acc[i] + bias[i]) * scale[i]) + zp): one row of a matrix whose columns each have
// their own scale (and bias: null for none).
void requantize_cols(const int32_t* acc, size_t n, const int32_t* bias, const float* scale, int32_t zp,
                     bool is_signed, void* y);
// requantize() of `rows` rows of `len` values, row r at t + r * ld with bias[r] and scale[r], written to
// y + r * y_ld (one dispatch for a tile of a channels-first output).
void requantize_tile(const int32_t* t, size_t rows, size_t ld, size_t len, const int32_t* bias, const float* scale,
                     int32_t zp, bool is_signed, void* y, size_t y_ld);
// The least and greatest of x[0, n) (n >= 1); NaN is ignored unless every value is NaN.
void min_max(const float* x, size_t n, float* lo, float* hi);

}  // namespace onnx_core::quant_simd
