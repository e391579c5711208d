// onnx-core: the float32 inner loops of RNN, GRU and LSTM (rnn.cpp): the recurrent matrix-vector product and the
// gate arithmetic of one time step with the default activations (Sigmoid, Tanh), vectorised with Highway and
// dispatched at run time to the best target the CPU offers (AVX-512, AVX2, SSE4, ...). The targets are capped at
// oneDNN's effective ISA, so ONEDNN_MAX_CPU_ISA=AVX2 caps these loops at AVX2 as it caps oneDNN's kernels.
// Sigmoid is 1 / (1 + exp(-x)) with Highway's Exp (1 ULP), Tanh Highway's (4 ULP).
#pragma once

#include <cstddef>

namespace onnx_core::rnn_simd {

// y[n] += dot(W[n, 0..K), x) for n in [0, rows); W is row-major with K columns.
void matvec_acc(const float* W, const float* x, float* y, size_t rows, size_t K);

// One LSTM step over H units in place, gate order i, o, f, c (ONNX): gx and gh are the input and recurrent
// projections with their biases ([4H] each), peep the peepholes [Pi, Po, Pf] ([3H]) or null, c and h the state.
// clip > 0 clips every gate's pre-activation to [-clip, clip]; input_forget couples f = 1 - i.
struct LstmStep {
  const float* gx;
  const float* gh;
  const float* peep;
  float* c;
  float* h;
  size_t H;
  float clip;
  bool input_forget;
};
void lstm_step(const LstmStep& s);

// One GRU step over H units in place, gate order z, r, h (ONNX). gh is [3H]: R h + Rb when linear_before_reset
// (the h gate is then gx_h + r * gh_h); otherwise its h rows already hold Rh (r * h) + Rbh (gru_reset_hidden).
void gru_step(const float* gx, const float* gh, float* h, size_t H, float clip, bool linear_before_reset);
// rh = sigmoid(gx_r + gh_r) * h: the reset hidden state the h gate's recurrent product reads (without
// linear_before_reset). gx_r and gh_r point at the r rows.
void gru_reset_hidden(const float* gx_r, const float* gh_r, const float* h, float* rh, size_t H, float clip);

// One RNN step: h = tanh(clip(gx + gh)).
void rnn_step(const float* gx, const float* gh, float* h, size_t H, float clip);

// The Highway target these functions run (e.g. "AVX3", "AVX2"), after the cap.
const char* target_name();

}  // namespace onnx_core::rnn_simd
