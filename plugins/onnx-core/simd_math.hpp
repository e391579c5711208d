// onnx-core: float32 elementwise math vectorised with Highway and dispatched at run time to the best target the
// CPU offers (AVX-512, AVX2, SSE4, ...), capped at oneDNN's effective ISA like rnn_simd.hpp (so
// ONEDNN_MAX_CPU_ISA=AVX2 caps these loops too). Used by the float32 paths of Sigmoid, Tanh, Exp, Log, Erf, Gelu
// (and com.ophost::Gelu, what the gelu-fusion pass writes) and Softmax; other dtypes keep the scalar loops.
// tests/data/onnx_core/check_simd_math.py checks the bounds below (and the special values) at every ISA level,
// through `ophost run`.
//
// Accuracy against the correctly rounded result (float32): exp 1 ULP (Highway), log and tanh 4 ULP (Highway),
// sigmoid 4 ULP (built on exp), silu 3.1 ULP from x = -87 on (below, where |silu(x)| < 1.5e-36, within 4e-37 of
// it), erf 3 ULP (x * P(x^2) below 0.921875, 1 - exp(Q(|x|)) above, fitted here
// (tools/dev/fit_erf.py); +-1 from 3.92 on, where erf rounds to 1), gelu 2 units of max(ULP(result), ULP(1) * |x| / 2)
// (Gelu-20's formula 0.5 x (1 + erf(x / sqrt(2))) as written, as ONNX Runtime computes it: 1 + erf cancels below
// x = -1, see GeluV), gelu_tanh 160 ULP (2 for x >= 0, 14 on [-3, 0]: the
// rounding of its argument u, amplified |2u| times in the tail). Special values are those of std::exp and
// friends: NaN stays NaN, exp(+inf) = inf, exp(-inf) = 0, log(0) = -inf, log(x < 0) = NaN, sigmoid(+-inf) = 1, 0,
// gelu(+inf) = +inf, gelu(-inf) = -0 (the limits; the written-out formula would give -inf * 0 = NaN).
//
// Each function reads x[0, n) and writes y[0, n); x == y is allowed (in place), partial overlap is not.
#pragma once

#include <cstddef>
#include <cstdint>

namespace onnx_core::simd_math {

void sigmoid(const float* x, float* y, size_t n);
// y = x * sigmoid(x) (SiLU, FusedConv's Swish): x / (1 + exp(-x)) with a cheaper exp than sigmoid's, 0.21 vs
// 0.33 ns per float at AVX-512 (Zen 5), less than oneDNN's swish post-op adds to a convolution.
void silu(const float* x, float* y, size_t n);
void tanh(const float* x, float* y, size_t n);
void exp(const float* x, float* y, size_t n);
void log(const float* x, float* y, size_t n);
void erf(const float* x, float* y, size_t n);
// y = x * Phi(x) = 0.5 x (1 + erf(x / sqrt(2))) (ONNX Gelu, approximate "none").
void gelu(const float* x, float* y, size_t n);
// y = 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) (ONNX Gelu, approximate "tanh").
void gelu_tanh(const float* x, float* y, size_t n);
// y = y + bias, then max(y, 0) when relu; in place (the NCHW sgemm convolution's epilogue, one output channel's
// row at a time: the scalar loop the compiler made of it ran at SSE width, ~4% of ShuffleNet v2's run).
void add_bias(float* y, size_t n, float bias, bool relu);
// Softmax over each of `rows` contiguous rows of `len` values (x == y allowed).
void softmax_rows(const float* x, float* y, size_t rows, size_t len);

// One channel block of a channel-blocked (nChw8c/16c) tensor: `pixels` runs of `block` floats (block 8 or 16),
// float k of each run belonging to channel k of the block.
// y = x * s[channel] (an SE block's scale; s holds `block` values; x == y allowed).
void mul_channel_blocks(const float* x, const float* s, float* y, size_t pixels, size_t block);
// sum[k] = the sum of float k over the runs (sum holds `block` values): lanes summed per vector, then folded.
void sum_channel_blocks(const float* x, size_t pixels, size_t block, float* sum);

// dst[j * dst_ld + i] = src[i * src_ld + j] for i < rows, j < cols: a 2-D transpose of 32-bit elements (copied
// as bits, any 4-byte dtype), in 4 x 4 vector blocks (Transpose's NCHW <-> NHWC permutes, common.hpp strided_copy).
void transpose32(const uint32_t* src, size_t src_ld, uint32_t* dst, size_t dst_ld, size_t rows, size_t cols);

}  // namespace onnx_core::simd_math
