// onnx-core: Highway kernels of rnn_simd.hpp. This file is compiled once per Highway target (foreach_target.h
// re-includes it through HWY_TARGET_INCLUDE); the dispatchers at the end pick the best target at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "rnn_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include "rnn_simd.hpp"

HWY_BEFORE_NAMESPACE();
namespace onnx_core::rnn_simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class D>
HWY_INLINE hn::Vec<D> Clipped(D d, hn::Vec<D> x, float clip) {
  if (clip <= 0.0f) return x;
  return hn::Min(hn::Max(x, hn::Set(d, -clip)), hn::Set(d, clip));
}

// 1 / (1 + exp(-x)); exp's argument is kept below 88 (exp overflows float above 88.7, and Highway's Exp is
// specified up to 104 only): the result there is 1 / (1 + 1.6e38), 0 in float as it should be. The bound is
// Min's first operand: x86's min returns the second when one is NaN, so a NaN stays NaN (as std::exp's would).
template <class D>
HWY_INLINE hn::Vec<D> Sigmoid(D d, hn::Vec<D> x) {
  const auto one = hn::Set(d, 1.0f);
  return hn::Div(one, hn::Add(one, hn::Exp(d, hn::Min(hn::Set(d, 88.0f), hn::Neg(x)))));
}

// The per-unit steps below take the tag D, a full vector in the main loop and one lane (CappedTag<float, 1>) for
// the units past the last whole vector.
template <class D>
HWY_INLINE void LstmAt(D d, size_t i, const LstmStep& s) {
  const size_t H = s.H;
  const auto pre = [&](size_t g) { return hn::Add(hn::LoadU(d, s.gx + g * H + i), hn::LoadU(d, s.gh + g * H + i)); };
  const auto cs = hn::LoadU(d, s.c + i);
  auto ig = pre(0), og = pre(1), fg = pre(2);
  if (s.peep) {
    ig = hn::MulAdd(hn::LoadU(d, s.peep + i), cs, ig);
    fg = hn::MulAdd(hn::LoadU(d, s.peep + 2 * H + i), cs, fg);
  }
  ig = Sigmoid(d, Clipped(d, ig, s.clip));
  fg = s.input_forget ? hn::Sub(hn::Set(d, 1.0f), ig) : Sigmoid(d, Clipped(d, fg, s.clip));
  const auto cg = hn::Tanh(d, Clipped(d, pre(3), s.clip));
  const auto c = hn::MulAdd(fg, cs, hn::Mul(ig, cg));
  if (s.peep) og = hn::MulAdd(hn::LoadU(d, s.peep + H + i), c, og);
  og = Sigmoid(d, Clipped(d, og, s.clip));
  hn::StoreU(c, d, s.c + i);
  hn::StoreU(hn::Mul(og, hn::Tanh(d, c)), d, s.h + i);
}

template <class D>
HWY_INLINE void GruAt(D d, size_t i, const float* gx, const float* gh, float* h, size_t H, float clip, bool lbr) {
  const auto one = hn::Set(d, 1.0f);
  const auto z = Sigmoid(d, Clipped(d, hn::Add(hn::LoadU(d, gx + i), hn::LoadU(d, gh + i)), clip));
  auto pre = hn::LoadU(d, gh + 2 * H + i);
  if (lbr) pre = hn::Mul(Sigmoid(d, Clipped(d, hn::Add(hn::LoadU(d, gx + H + i), hn::LoadU(d, gh + H + i)), clip)), pre);
  const auto hh = hn::Tanh(d, Clipped(d, hn::Add(hn::LoadU(d, gx + 2 * H + i), pre), clip));
  const auto hp = hn::LoadU(d, h + i);
  hn::StoreU(hn::Add(hn::Mul(hn::Sub(one, z), hh), hn::Mul(z, hp)), d, h + i);
}

template <class D>
HWY_INLINE void ResetAt(D d, size_t i, const float* gx_r, const float* gh_r, const float* h, float* rh, float clip) {
  const auto r = Sigmoid(d, Clipped(d, hn::Add(hn::LoadU(d, gx_r + i), hn::LoadU(d, gh_r + i)), clip));
  hn::StoreU(hn::Mul(r, hn::LoadU(d, h + i)), d, rh + i);
}

template <class D>
HWY_INLINE void RnnAt(D d, size_t i, const float* gx, const float* gh, float* h, float clip) {
  hn::StoreU(hn::Tanh(d, Clipped(d, hn::Add(hn::LoadU(d, gx + i), hn::LoadU(d, gh + i)), clip)), d, h + i);
}

// Calls at(d, i) for every whole vector of [0, n), then at(d1, i) for each remaining unit.
template <class F>
HWY_INLINE void ForUnits(size_t n, const F& at) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  size_t i = 0;
  for (; i + N <= n; i += N) at(d, i);
  const hn::CappedTag<float, 1> d1;
  for (; i < n; ++i) at(d1, i);
}

void LstmStepImpl(const LstmStep& s) {
  ForUnits(s.H, [&](auto d, size_t i) { LstmAt(d, i, s); });
}
void GruStepImpl(const float* gx, const float* gh, float* h, size_t H, float clip, bool lbr) {
  ForUnits(H, [&](auto d, size_t i) { GruAt(d, i, gx, gh, h, H, clip, lbr); });
}
void GruResetImpl(const float* gx_r, const float* gh_r, const float* h, float* rh, size_t H, float clip) {
  ForUnits(H, [&](auto d, size_t i) { ResetAt(d, i, gx_r, gh_r, h, rh, clip); });
}
void RnnStepImpl(const float* gx, const float* gh, float* h, size_t H, float clip) {
  ForUnits(H, [&](auto d, size_t i) { RnnAt(d, i, gx, gh, h, clip); });
}

// Four rows at a time share each load of x. The columns past the last whole vector are summed one by one:
// MaskedLoad would do, but below AVX2 Highway implements it as a full aligned load (past the end of the row).
HWY_INLINE float TailDot(const float* w, const float* x, size_t n) {
  float s = 0.0f;
  for (size_t k = 0; k < n; ++k) s += w[k] * x[k];
  return s;
}

void MatVecAccImpl(const float* W, const float* x, float* y, size_t rows, size_t K) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const size_t kv = K / N * N, tail = K - kv;
  size_t n = 0;
  for (; n + 4 <= rows; n += 4) {
    const float* w0 = W + n * K;
    const float* w1 = w0 + K;
    const float* w2 = w1 + K;
    const float* w3 = w2 + K;
    auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
    for (size_t k = 0; k < kv; k += N) {
      const auto xv = hn::LoadU(d, x + k);
      a0 = hn::MulAdd(hn::LoadU(d, w0 + k), xv, a0);
      a1 = hn::MulAdd(hn::LoadU(d, w1 + k), xv, a1);
      a2 = hn::MulAdd(hn::LoadU(d, w2 + k), xv, a2);
      a3 = hn::MulAdd(hn::LoadU(d, w3 + k), xv, a3);
    }
    y[n] += hn::GetLane(hn::SumOfLanes(d, a0)) + TailDot(w0 + kv, x + kv, tail);
    y[n + 1] += hn::GetLane(hn::SumOfLanes(d, a1)) + TailDot(w1 + kv, x + kv, tail);
    y[n + 2] += hn::GetLane(hn::SumOfLanes(d, a2)) + TailDot(w2 + kv, x + kv, tail);
    y[n + 3] += hn::GetLane(hn::SumOfLanes(d, a3)) + TailDot(w3 + kv, x + kv, tail);
  }
  for (; n < rows; ++n) {
    const float* w = W + n * K;
    auto a = hn::Zero(d);
    for (size_t k = 0; k < kv; k += N) a = hn::MulAdd(hn::LoadU(d, w + k), hn::LoadU(d, x + k), a);
    y[n] += hn::GetLane(hn::SumOfLanes(d, a)) + TailDot(w + kv, x + kv, tail);
  }
}

int64_t TargetImpl() { return HWY_TARGET; }

}  // namespace HWY_NAMESPACE
}  // namespace onnx_core::rnn_simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "hwy_targets.hpp"

namespace onnx_core::rnn_simd {

HWY_EXPORT(MatVecAccImpl);
HWY_EXPORT(LstmStepImpl);
HWY_EXPORT(GruStepImpl);
HWY_EXPORT(GruResetImpl);
HWY_EXPORT(RnnStepImpl);
HWY_EXPORT(TargetImpl);

void matvec_acc(const float* W, const float* x, float* y, size_t rows, size_t K) {
  cap_hwy_targets();
  HWY_DYNAMIC_DISPATCH(MatVecAccImpl)(W, x, y, rows, K);
}
void lstm_step(const LstmStep& s) {
  cap_hwy_targets();
  HWY_DYNAMIC_DISPATCH(LstmStepImpl)(s);
}
void gru_step(const float* gx, const float* gh, float* h, size_t H, float clip, bool linear_before_reset) {
  cap_hwy_targets();
  HWY_DYNAMIC_DISPATCH(GruStepImpl)(gx, gh, h, H, clip, linear_before_reset);
}
void gru_reset_hidden(const float* gx_r, const float* gh_r, const float* h, float* rh, size_t H, float clip) {
  cap_hwy_targets();
  HWY_DYNAMIC_DISPATCH(GruResetImpl)(gx_r, gh_r, h, rh, H, clip);
}
void rnn_step(const float* gx, const float* gh, float* h, size_t H, float clip) {
  cap_hwy_targets();
  HWY_DYNAMIC_DISPATCH(RnnStepImpl)(gx, gh, h, H, clip);
}
const char* target_name() {
  cap_hwy_targets();
  return hwy::TargetName(HWY_DYNAMIC_DISPATCH(TargetImpl)());
}

}  // namespace onnx_core::rnn_simd
#endif  // HWY_ONCE
