// onnx-core: Highway kernels of simd_math.hpp. This file is compiled once per Highway target (foreach_target.h
// re-includes it through HWY_TARGET_INCLUDE); the dispatchers at the end pick the best target at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd_math.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include "simd_math.hpp"

#include <cstring>
#include <limits>

HWY_BEFORE_NAMESPACE();
namespace onnx_core::simd_math {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// f(vector) over x[0, n) into y; the tail (fewer than one vector) goes through a zero-padded buffer.
template <class F>
HWY_INLINE void Apply(const float* x, float* y, size_t n, F f) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(f(d, hn::LoadU(d, x + i)), d, y + i);
  if (i < n) {
    HWY_ALIGN float buf[HWY_MAX_BYTES / sizeof(float)] = {};
    std::memcpy(buf, x + i, (n - i) * sizeof(float));
    hn::Store(f(d, hn::Load(d, buf)), d, buf);
    std::memcpy(y + i, buf, (n - i) * sizeof(float));
  }
}

// NaN lanes of x pass through (the approximations below would map them to numbers).
template <class D, class V>
HWY_INLINE V KeepNaN(D, V x, V r) {
  return hn::IfThenElse(hn::IsNaN(x), x, r);
}

// Highway's Exp is specified on [-FLT_MAX, 104] (0 below -104, NaN maps to 0): overflow (x > ln(FLT_MAX)) is
// made +inf here and NaN kept.
template <class D, class V>
HWY_INLINE V ExpV(D d, V x) {
  const V inf = hn::Set(d, std::numeric_limits<float>::infinity());
  const V big = hn::Set(d, 88.72283935546875f);  // the largest float whose exp is finite
  V r = hn::Exp(d, hn::Min(x, big));
  r = hn::IfThenElse(hn::Gt(x, big), inf, r);
  return KeepNaN(d, x, r);
}

// 1 / (1 + exp(-x)) without overflow: with e = exp(-|x|) in (0, 1], r = 1 / (1 + e) is sigmoid(|x|) and e * r
// sigmoid(-|x|).
template <class D, class V>
HWY_INLINE V SigmoidV(D d, V x) {
  const V one = hn::Set(d, 1.0f);
  const V e = hn::Exp(d, hn::Neg(hn::Abs(x)));
  const V r = hn::Div(one, hn::Add(one, e));
  return KeepNaN(d, x, hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Mul(e, r), r));
}

template <class D, class V>
HWY_INLINE V TanhV(D d, V x) {
  return KeepNaN(d, x, hn::Tanh(d, x));
}

// Highway's Log is specified on (0, FLT_MAX] (subnormals included): 0 -> -inf, negative -> NaN, +inf -> +inf.
template <class D, class V>
HWY_INLINE V LogV(D d, V x) {
  const V inf = hn::Set(d, std::numeric_limits<float>::infinity());
  const V zero = hn::Zero(d);
  V r = hn::Log(d, x);
  r = hn::IfThenElse(hn::Eq(x, zero), hn::Neg(inf), r);
  r = hn::IfThenElse(hn::Lt(x, zero), hn::Set(d, std::numeric_limits<float>::quiet_NaN()), r);
  r = hn::IfThenElse(hn::Eq(x, inf), inf, r);
  return KeepNaN(d, x, r);
}

// erf: below |x| = 0.921875, x * P(x^2); above, 1 - exp(Q(|x|)) with |x| capped at 3.92 (erf rounds to 1 in
// float from there), sign restored. P and Q are least-squares fits (weighted relative for P) on Chebyshev nodes,
// made by tools/dev/fit_erf.py: max error 1.8e-7 relative below the split, 7.9e-8 absolute above.
template <class D, class V>
HWY_INLINE V ErfV(D d, V x) {
  const V a = hn::Abs(x);
  const V t = hn::Mul(x, x);
  V p = hn::Set(d, -0.000602459185756743f);
  p = hn::MulAdd(p, t, hn::Set(d, 0.005000893957912922f));
  p = hn::MulAdd(p, t, hn::Set(d, -0.026772957295179367f));
  p = hn::MulAdd(p, t, hn::Set(d, 0.11282039433717728f));
  p = hn::MulAdd(p, t, hn::Set(d, -0.3761252462863922f));
  p = hn::MulAdd(p, t, hn::Set(d, 1.1283791065216064f));
  const V small = hn::Mul(x, p);
  const V c = hn::Min(a, hn::Set(d, 3.92f));
  V q = hn::Set(d, 1.6369006061722757e-06f);
  q = hn::MulAdd(q, c, hn::Set(d, -4.6017936256248504e-05f));
  q = hn::MulAdd(q, c, hn::Set(d, 0.0005961686256341636f));
  q = hn::MulAdd(q, c, hn::Set(d, -0.004755204077810049f));
  q = hn::MulAdd(q, c, hn::Set(d, 0.026404650881886482f));
  q = hn::MulAdd(q, c, hn::Set(d, -0.11004402488470078f));
  q = hn::MulAdd(q, c, hn::Set(d, -0.6318718194961548f));
  q = hn::MulAdd(q, c, hn::Set(d, -1.130202293395996f));
  q = hn::MulAdd(q, c, hn::Set(d, 0.00031141741783358157f));
  const V large = hn::CopySignToAbs(hn::Sub(hn::Set(d, 1.0f), hn::Exp(d, q)), x);
  return KeepNaN(d, x, hn::IfThenElse(hn::Lt(a, hn::Set(d, 0.921875f)), small, large));
}

// gelu(x) = x * Phi(x) (Phi the standard normal CDF = 0.5 * (1 + erf(x / sqrt(2)))), through c = Phi(-|x|) =
// 0.5 * erfc(|x| / sqrt(2)) with its relative accuracy kept down to the underflow (1 + erf(x / sqrt(2)), as the
// written-out graph computes it, loses it all below x = -3): c = t * exp(-a^2 / 2 + G(t - TC)), t = 1 / (1 + a / 2),
// a = min(|x|, 14.5) (x * c underflows to -0 from 14.37 on; so gelu(-inf) = -0). G is a least-squares fit made by
// tools/dev/fit_gelu.py; -a^2 / 2 is exact (a split into two halves of 12 significant bits) and the rounding of
// its sum with G is carried into exp's result (TwoSum), so that the large exponent does not amplify it.
template <class D, class V>
HWY_INLINE V GeluV(D d, V x) {
  const hn::RebindToUnsigned<D> du;
  const V one = hn::Set(d, 1.0f);
  const V half = hn::Set(d, -0.5f);
  const V a = hn::Min(hn::Abs(x), hn::Set(d, 14.5f));
  const V ah = hn::BitCast(d, hn::And(hn::BitCast(du, a), hn::Set(du, 0xFFFFF000u)));
  const V al = hn::Sub(a, ah);
  const V t = hn::Div(one, hn::MulAdd(hn::Set(d, 0.5f), a, one));
  const V w = hn::Sub(t, hn::Set(d, 0.560606062412262f));
  // G by Estrin's scheme (a shorter dependency chain than Horner's: the kernel is latency-bound otherwise).
  const V w2 = hn::Mul(w, w);
  const V w4 = hn::Mul(w2, w2);
  const V p0 = hn::MulAdd(hn::Set(d, 0.944743275642395f), w, hn::Set(d, -1.0315107107162476f));
  const V p1 = hn::MulAdd(hn::Set(d, -0.2054920494556427f), w, hn::Set(d, -0.3592144846916199f));
  const V p2 = hn::MulAdd(hn::Set(d, -0.07760954648256302f), w, hn::Set(d, 0.3274137079715729f));
  const V p3 = hn::MulAdd(hn::Set(d, 0.31586605310440063f), w, hn::Set(d, -0.2401755005121231f));
  const V p4 = hn::MulAdd(hn::Set(d, -0.34482505917549133f), w, hn::Set(d, -0.019386695697903633f));
  const V p5 = hn::MulAdd(hn::Set(d, 0.12425112724304199f), w, hn::Set(d, 0.19851678609848022f));
  const V q01 = hn::MulAdd(p1, w2, p0);
  const V q23 = hn::MulAdd(p3, w2, p2);
  const V q45 = hn::MulAdd(p5, w2, p4);
  const V q = hn::MulAdd(hn::MulAdd(q45, w4, q23), w4, q01);
  const V hi = hn::Mul(hn::Mul(half, ah), ah);  // exact
  const V lo = hn::MulAdd(hn::Mul(half, al), hn::Add(a, ah), q);
  const V s = hn::Add(hi, lo);
  const V bb = hn::Sub(s, hi);
  const V err = hn::Add(hn::Sub(hi, hn::Sub(s, bb)), hn::Sub(lo, bb));
  const V e = hn::Exp(d, s);  // s in [-106, -0.69]: 0 below -104
  const V c = hn::Mul(t, hn::MulAdd(e, err, e));
  const V neg = hn::Neg(hn::Mul(a, c));
  const V pos = hn::Mul(x, hn::Sub(one, c));
  return KeepNaN(d, x, hn::IfThenElse(hn::Lt(x, hn::Zero(d)), neg, pos));
}

// The tanh approximation 0.5 x (1 + tanh(u)), u = sqrt(2 / pi) (x + 0.044715 x^3), as x * sigmoid(2u) (the same
// function without the cancellation of 1 + tanh(u) for x < 0). x is raised to -12 inside the sigmoid's argument
// and as the factor (the result underflows to -0 from -10.9 on), so that gelu(-inf) = -0 rather than -inf * 0.
template <class D, class V>
HWY_INLINE V GeluTanhV(D d, V x) {
  const V xc = hn::Max(x, hn::Set(d, -12.0f));
  const V x2 = hn::Mul(xc, xc);
  const V u2 = hn::Mul(hn::Mul(xc, hn::Set(d, 1.5957691216057308f)),  // 2 sqrt(2 / pi)
                       hn::MulAdd(x2, hn::Set(d, 0.044715f), hn::Set(d, 1.0f)));
  return KeepNaN(d, x, hn::Mul(xc, SigmoidV(d, u2)));
}

void SigmoidImpl(const float* x, float* y, size_t n) {
  Apply(x, y, n, [](auto d, auto v) { return SigmoidV(d, v); });
}
void TanhImpl(const float* x, float* y, size_t n) {
  Apply(x, y, n, [](auto d, auto v) { return TanhV(d, v); });
}
void ExpImpl(const float* x, float* y, size_t n) {
  Apply(x, y, n, [](auto d, auto v) { return ExpV(d, v); });
}
void LogImpl(const float* x, float* y, size_t n) {
  Apply(x, y, n, [](auto d, auto v) { return LogV(d, v); });
}
void ErfImpl(const float* x, float* y, size_t n) {
  Apply(x, y, n, [](auto d, auto v) { return ErfV(d, v); });
}
void GeluImpl(const float* x, float* y, size_t n) {
  Apply(x, y, n, [](auto d, auto v) { return GeluV(d, v); });
}
void GeluTanhImpl(const float* x, float* y, size_t n) {
  Apply(x, y, n, [](auto d, auto v) { return GeluTanhV(d, v); });
}

float ExpShiftedSumImpl(const float* x, float* y, size_t n, float shift) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const auto s = hn::Set(d, shift);
  auto acc = hn::Zero(d);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    const auto e = ExpV(d, hn::Sub(hn::LoadU(d, x + i), s));
    hn::StoreU(e, d, y + i);
    acc = hn::Add(acc, e);
  }
  float sum = hn::GetLane(hn::SumOfLanes(d, acc));
  if (i < n) {
    const size_t tail = n - i;
    Apply(x + i, y + i, tail, [shift](auto dd, auto v) { return ExpV(dd, hn::Sub(v, hn::Set(dd, shift))); });
    for (size_t k = i; k < n; ++k) sum += y[k];
  }
  return sum;
}

// Softmax of each of `rows` contiguous rows of `len` values: max, exp(x - max) with its sum, scale by 1 / sum,
// all on vectors. A NaN anywhere in a row makes the whole row NaN (through the sum), as the scalar loops do.
void SoftmaxRowsImpl(const float* x, float* y, size_t rows, size_t len) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * len;
    float* yr = y + r * len;
    size_t i = 0;
    float m = -std::numeric_limits<float>::infinity();
    if (len >= N) {
      auto vm = hn::LoadU(d, xr);
      for (i = N; i + N <= len; i += N) vm = hn::Max(vm, hn::LoadU(d, xr + i));
      m = hn::GetLane(hn::MaxOfLanes(d, vm));
    }
    for (; i < len; ++i) m = xr[i] > m ? xr[i] : m;
    const float inv = 1.0f / ExpShiftedSumImpl(xr, yr, len, m);
    const auto vi = hn::Set(d, inv);
    for (i = 0; i + N <= len; i += N) hn::StoreU(hn::Mul(hn::LoadU(d, yr + i), vi), d, yr + i);
    for (; i < len; ++i) yr[i] *= inv;
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace onnx_core::simd_math
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "simd_targets.hpp"

namespace onnx_core::simd_math {

HWY_EXPORT(SigmoidImpl);
HWY_EXPORT(TanhImpl);
HWY_EXPORT(ExpImpl);
HWY_EXPORT(LogImpl);
HWY_EXPORT(ErfImpl);
HWY_EXPORT(GeluImpl);
HWY_EXPORT(GeluTanhImpl);
HWY_EXPORT(ExpShiftedSumImpl);

// The unary entry points: cap the targets (once), then call the best compiled target.
#define ONNX_CORE_SIMD_UNARY(name, impl)          \
  void name(const float* x, float* y, size_t n) { \
    cap_simd_targets();                           \
    HWY_DYNAMIC_DISPATCH(impl)(x, y, n);          \
  }
ONNX_CORE_SIMD_UNARY(sigmoid, SigmoidImpl)
ONNX_CORE_SIMD_UNARY(tanh, TanhImpl)
ONNX_CORE_SIMD_UNARY(exp, ExpImpl)
ONNX_CORE_SIMD_UNARY(log, LogImpl)
ONNX_CORE_SIMD_UNARY(erf, ErfImpl)
ONNX_CORE_SIMD_UNARY(gelu, GeluImpl)
ONNX_CORE_SIMD_UNARY(gelu_tanh, GeluTanhImpl)
#undef ONNX_CORE_SIMD_UNARY

float exp_shifted_sum(const float* x, float* y, size_t n, float shift) {
  cap_simd_targets();
  return HWY_DYNAMIC_DISPATCH(ExpShiftedSumImpl)(x, y, n, shift);
}

HWY_EXPORT(SoftmaxRowsImpl);

void softmax_rows(const float* x, float* y, size_t rows, size_t len) {
  cap_simd_targets();
  HWY_DYNAMIC_DISPATCH(SoftmaxRowsImpl)(x, y, rows, len);
}

}  // namespace onnx_core::simd_math
#endif  // HWY_ONCE
