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

// exp(t) for t in [-87, 88.72283935546875] (the callers clamp): Cephes' expf, a degree-7 polynomial on
// r = t - k ln 2 (ln 2 split in two), times 2^k built in the exponent bits; k = 128 (t above ~88.38) gives +inf.
// Cheaper than Highway's Exp (no special-case masks), ~1 ULP on its range. k comes from one FMA: adding
// 1.5 * 2^23 + 127 to t log2(e) rounds it to an integer (to nearest, as Round would) and leaves k + 127 in the
// low mantissa bits, which the shift moves into the exponent field; that replaced Round, the conversion to int
// and the bias add (AVX2, Gelu on 301056 floats: 278 -> 242 us; AVX-512 147 -> 128).
template <class D, class V>
HWY_INLINE V ExpClampedV(D d, V t) {
  const hn::RebindToSigned<D> di;
  const V magic = hn::Set(d, 12583039.0f);  // 0x4B40007F: 1.5 * 2^23 + 127
  const V kb = hn::MulAdd(t, hn::Set(d, 1.44269504088896341f), magic);
  const V k = hn::Sub(kb, magic);
  V r = hn::NegMulAdd(k, hn::Set(d, 0.693359375f), t);
  r = hn::NegMulAdd(k, hn::Set(d, -2.12194440e-4f), r);
  V p = hn::Set(d, 1.9875691500e-4f);
  p = hn::MulAdd(p, r, hn::Set(d, 1.3981999507e-3f));
  p = hn::MulAdd(p, r, hn::Set(d, 8.3334519073e-3f));
  p = hn::MulAdd(p, r, hn::Set(d, 4.1665795894e-2f));
  p = hn::MulAdd(p, r, hn::Set(d, 1.6666665459e-1f));
  p = hn::MulAdd(p, r, hn::Set(d, 5.0000001201e-1f));
  p = hn::MulAdd(p, hn::Mul(r, r), hn::Add(r, hn::Set(d, 1.0f)));
  const auto two_k = hn::ShiftLeft<23>(hn::BitCast(di, kb));
  return hn::Mul(p, hn::BitCast(d, two_k));
}

// erf: below |x| = 0.921875, x * P(x^2); above, 1 - exp(Q(|x|)) with |x| capped at 3.92 (erf rounds to 1 in
// float from there), sign restored. P and Q are least-squares fits (weighted relative for P) on Chebyshev nodes,
// made by tools/dev/fit_erf.py: max error 1.8e-7 relative below the split, 7.9e-8 absolute above. Q stays in
// [-17.4, 0.0004], so its exp is ExpClampedV's, without Highway Exp's special-case masks: Erf and Gelu on 1.2M
// floats (AVX-512, 1 thread) 0.75 -> 0.54 and 0.85 -> 0.62 ms (ONNX Runtime's Gelu: 0.59), still 2 ULP.
template <class D, class V>
HWY_INLINE V ErfCoreV(D d, V x) {  // ErfV without its NaN pass-through (erf(NaN) comes out +-1 here)
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
  const V large = hn::CopySignToAbs(hn::Sub(hn::Set(d, 1.0f), ExpClampedV(d, q)), x);  // q in [-17.4, 0.0004]
  return hn::IfThenElse(hn::Lt(a, hn::Set(d, 0.921875f)), small, large);
}

template <class D, class V>
HWY_INLINE V ErfV(D d, V x) {
  return KeepNaN(d, x, ErfCoreV(d, x));
}

// gelu(x) = 0.5 x (1 + erf(x / sqrt(2))), Gelu-20's formula as written (what the unfused graph and ONNX Runtime
// compute), with ErfV: in one pass it costs about what Erf alone does. Like the formula it keeps relative accuracy
// only where 1 + erf is not a cancellation: below x = -1 the error is up to ~2 ULP of 1 times |x| / 2 in
// absolute terms (x = -3: ~200 ULP of the result; from -5.4 on the result is -0). An accurate tail (through
// Phi(-|x|) = erfc(|x| / sqrt(2)) / 2, commit b78d659 with its fit) took 1.34x Erf's time at AVX2 and 1.37x at
// AVX-512 (1.2M floats: 2.51 vs 1.87 ms at AVX2), which made the fused node slower than the five it replaces at
// AVX2; this form takes 1.65 ms there. The factor x is raised to -16 so
// that gelu(-inf) = -0 (the limit) rather than -inf * 0.
template <class D, class V>
HWY_INLINE V GeluV(D d, V x) {
  const V e = ErfCoreV(d, hn::Mul(x, hn::Set(d, 0.7071067811865476f)));  // NaN kept once, below
  const V xc = hn::Max(x, hn::Set(d, -16.0f));
  return KeepNaN(d, x, hn::Mul(hn::Mul(hn::Set(d, 0.5f), xc), hn::Add(hn::Set(d, 1.0f), e)));
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

// silu(x) = x * sigmoid(x) = x / (1 + exp(-x)), one division. exp's argument is clamped to [-87, 88.72]: above
// x = 87 the denominator rounds to 1 anyway; below x = -88.4 it is +inf and the result -0 (x itself raised to
// -FLT_MAX, so that silu(-inf) = -0, the limit, rather than -inf / inf).
template <class D, class V>
HWY_INLINE V SiluV(D d, V x) {
  const V t = hn::Min(hn::Max(hn::Neg(x), hn::Set(d, -87.0f)), hn::Set(d, 88.72283935546875f));
  const V den = hn::Add(hn::Set(d, 1.0f), ExpClampedV(d, t));
  const V num = hn::Max(x, hn::Set(d, -std::numeric_limits<float>::max()));
  return KeepNaN(d, x, hn::Div(num, den));
}

void SiluImpl(const float* x, float* y, size_t n) {
  Apply(x, y, n, [](auto d, auto v) { return SiluV(d, v); });
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
void AddBiasImpl(float* y, size_t n, float bias, bool relu) {
  if (relu) {
    Apply(y, y, n, [bias](auto d, auto v) { return hn::Max(hn::Add(v, hn::Set(d, bias)), hn::Zero(d)); });
  } else {
    Apply(y, y, n, [bias](auto d, auto v) { return hn::Add(v, hn::Set(d, bias)); });
  }
}

// exp(t) for Softmax's t = x - max(row) (<= 0, or NaN): ExpClampedV, with exactly 0 below t = -80 instead of a
// tiny or subnormal result. Subnormal values, and products that make them, take a slow path on x86: Swin-T's
// shifted-window attention adds -100 to masked scores, and its Softmax nodes ran 2.4x as long as the unmasked
// ones (one [4, 12, 49, 49] node at AVX2: 97 us unmasked, 253 with a quarter of the scores at -100) before this.
// exp(-80) = 1.8e-35, so a row's values this drops are below 1.8e-35 / sum of the row (>= 1): an absolute error
// no float computation downstream can see (values down to 1e-30 keep their relative accuracy, as
// check_simd_math.py asks), and every value kept stays normal after the scaling while the row's sum is below
// ~1500 (a longer, flat row may still scale tiny values into subnormals: slower, not wrong). NaN stays NaN (the
// comparison is false for it, and the polynomial carries it), so a NaN still makes the whole row NaN through the
// sum.
template <class D, class V>
HWY_INLINE V ExpSoftmaxV(D d, V t) {
  const V lo = hn::Set(d, -80.0f);
  const auto tiny = hn::Lt(t, lo);
  return hn::IfThenZeroElse(tiny, ExpClampedV(d, hn::IfThenElse(tiny, lo, t)));
}

// R consecutive rows (of at least one vector) of SoftmaxRowsImpl, their steps interleaved; full: the length
// covered by whole vectors, last = len - lanes: where the row's last (overlapping) vector starts.
template <size_t R, class D>
HWY_INLINE void SoftmaxRows(D d, const float* x, float* y, size_t len, size_t full, size_t last) {
  const size_t N = hn::Lanes(d);
  const auto fresh = hn::Not(hn::FirstN(d, full - last));  // lanes of the last vector no full one covered
  hn::Vec<D> m[R], e_last[R], acc[R];
  for (size_t r = 0; r < R; ++r) m[r] = hn::LoadU(d, x + r * len + last);
  for (size_t i = 0; i < full; i += N)
    for (size_t r = 0; r < R; ++r) m[r] = hn::Max(m[r], hn::LoadU(d, x + r * len + i));
  for (size_t r = 0; r < R; ++r) {
    m[r] = hn::Set(d, hn::GetLane(hn::MaxOfLanes(d, m[r])));  // now the shift
    e_last[r] = ExpSoftmaxV(d, hn::Sub(hn::LoadU(d, x + r * len + last), m[r]));
    acc[r] = full == len ? hn::Zero(d) : hn::IfThenElseZero(fresh, e_last[r]);
  }
  for (size_t i = 0; i < full; i += N)
    for (size_t r = 0; r < R; ++r) {
      const auto e = ExpSoftmaxV(d, hn::Sub(hn::LoadU(d, x + r * len + i), m[r]));
      hn::StoreU(e, d, y + r * len + i);
      acc[r] = hn::Add(acc[r], e);
    }
  for (size_t r = 0; r < R; ++r) acc[r] = hn::Set(d, 1.0f / hn::GetLane(hn::SumOfLanes(d, acc[r])));  // 1 / sum
  for (size_t i = 0; i < full; i += N)
    for (size_t r = 0; r < R; ++r) hn::StoreU(hn::Mul(hn::LoadU(d, y + r * len + i), acc[r]), d, y + r * len + i);
  for (size_t r = 0; r < R; ++r) hn::StoreU(hn::Mul(e_last[r], acc[r]), d, y + r * len + last);
}

// Softmax of each of `rows` contiguous rows of `len` values: max, exp(x - max) with its sum, scale by 1 / sum,
// all on vectors. A NaN anywhere in a row makes the whole row NaN (through the sum), as the scalar loops do.
// A row of at least one vector ends with a vector that overlaps the one before it (len - N): max does not mind
// seeing lanes twice; exp and the scaling read that vector before the loop writes the row (x may be y) and store
// it last, the same values again where it overlaps, and only its new lanes join the sum. Swin-T's 49-long rows
// took a scalar tail and a padded vector call per row before: 3.4 ms of Softmax per run against ORT's 1.9
// (AVX-512, 1 thread).
void SoftmaxRowsImpl(const float* x, float* y, size_t rows, size_t len) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  if (len < N) {
    for (size_t r = 0; r < rows; ++r) {
      const float* xr = x + r * len;
      float* yr = y + r * len;
      float m = -std::numeric_limits<float>::infinity();
      for (size_t i = 0; i < len; ++i) m = xr[i] > m ? xr[i] : m;
      Apply(xr, yr, len, [m](auto dd, auto v) { return ExpSoftmaxV(dd, hn::Sub(v, hn::Set(dd, m))); });
      float sum = 0.0f;
      for (size_t i = 0; i < len; ++i) sum += yr[i];
      const float inv = 1.0f / sum;
      for (size_t i = 0; i < len; ++i) yr[i] *= inv;
    }
    return;
  }
  const size_t full = len / N * N, last = len - N;  // vectors at 0, N, ..., full - N, then one at `last`
  // Two rows at a time: each row is a chain of dependent steps (max, its reduction, exp, the sum's reduction,
  // the division), so interleaving two rows' chains keeps the vector units busy (Swin-T's Softmax per node, per
  // run of 12: 166 -> 143 us at AVX-512, 245 -> 230 at AVX2; below the whole model's noise).
  size_t r = 0;
  for (; r + 2 <= rows; r += 2) SoftmaxRows<2>(d, x + r * len, y + r * len, len, full, last);
  if (r < rows) SoftmaxRows<1>(d, x + r * len, y + r * len, len, full, last);
}

// Channel blocks (see simd_math.hpp): the `block` per-channel values repeated over L = max(lanes, block) floats,
// so that each vector of a pixel run meets its own slice of them; k = L / lanes vectors per step (1, 2 or 4;
// more only on the scalar target, which loops element by element).
// The last n % L floats (less than one step: only when a vector holds more than one block) go scalar.
void MulChannelBlocksImpl(const float* x, const float* s, float* y, size_t pixels, size_t block) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d), L = N > block ? N : block, k = L / N, n = pixels * block;
  if (k > 4) {  // vectors of fewer than 4 floats (the scalar target): element by element
    for (size_t i = 0; i < n; ++i) y[i] = x[i] * s[i % block];
    return;
  }
  HWY_ALIGN float pat[64];
  for (size_t i = 0; i < L; ++i) pat[i] = s[i % block];
  const auto s0 = hn::Load(d, pat), s1 = hn::Load(d, pat + (k > 1 ? N : 0)),
             s2 = hn::Load(d, pat + (k > 2 ? 2 * N : 0)), s3 = hn::Load(d, pat + (k > 3 ? 3 * N : 0));
  size_t i = 0;
  for (; i + L <= n; i += L) {
    hn::StoreU(hn::Mul(hn::LoadU(d, x + i), s0), d, y + i);
    if (k > 1) hn::StoreU(hn::Mul(hn::LoadU(d, x + i + N), s1), d, y + i + N);
    if (k > 2) {
      hn::StoreU(hn::Mul(hn::LoadU(d, x + i + 2 * N), s2), d, y + i + 2 * N);
      hn::StoreU(hn::Mul(hn::LoadU(d, x + i + 3 * N), s3), d, y + i + 3 * N);
    }
  }
  for (; i < n; ++i) y[i] = x[i] * s[i % block];
}

void SumChannelBlocksImpl(const float* x, size_t pixels, size_t block, float* sum) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d), L = N > block ? N : block, k = L / N, n = pixels * block;
  if (k > 4) {  // vectors of fewer than 4 floats (the scalar target): element by element
    for (size_t c = 0; c < block; ++c) sum[c] = 0.0f;
    for (size_t i = 0; i < n; ++i) sum[i % block] += x[i];
    return;
  }
  auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  size_t i = 0;
  for (; i + L <= n; i += L) {
    a0 = hn::Add(a0, hn::LoadU(d, x + i));
    if (k > 1) a1 = hn::Add(a1, hn::LoadU(d, x + i + N));
    if (k > 2) {
      a2 = hn::Add(a2, hn::LoadU(d, x + i + 2 * N));
      a3 = hn::Add(a3, hn::LoadU(d, x + i + 3 * N));
    }
  }
  HWY_ALIGN float acc[64];
  hn::Store(a0, d, acc);
  if (k > 1) hn::Store(a1, d, acc + N);
  if (k > 2) {
    hn::Store(a2, d, acc + 2 * N);
    hn::Store(a3, d, acc + 3 * N);
  }
  for (size_t c = 0; c < block; ++c) sum[c] = 0.0f;
  for (size_t j = 0; j < L; ++j) sum[j % block] += acc[j];
  for (; i < n; ++i) sum[i % block] += x[i];
}

// dst[j * dst_ld + i] = src[i * src_ld + j] for i < rows, j < cols (32-bit elements, copied as bits): 4 x 4
// blocks in 128-bit vectors (two rounds of interleaves, as MLAS's transpose), the edges element by element.
void Transpose32Impl(const uint32_t* src, size_t src_ld, uint32_t* dst, size_t dst_ld, size_t rows, size_t cols) {
  size_t i = 0;
#if HWY_TARGET != HWY_SCALAR  // (the scalar target has no 4-lane vectors: all of it element by element)
  const hn::FixedTag<uint32_t, 4> d;
  for (; i + 4 <= rows; i += 4) {
    const uint32_t* s = src + i * src_ld;
    size_t j = 0;
    for (; j + 4 <= cols; j += 4) {
      const auto r0 = hn::LoadU(d, s + j), r1 = hn::LoadU(d, s + src_ld + j), r2 = hn::LoadU(d, s + 2 * src_ld + j),
                 r3 = hn::LoadU(d, s + 3 * src_ld + j);
      const auto t0 = hn::InterleaveLower(d, r0, r1), t1 = hn::InterleaveLower(d, r2, r3);  // a0 b0 a1 b1, c0 d0 ..
      const auto t2 = hn::InterleaveUpper(d, r0, r1), t3 = hn::InterleaveUpper(d, r2, r3);  // a2 b2 a3 b3, c2 d2 ..
      uint32_t* o = dst + j * dst_ld + i;
      hn::StoreU(hn::ConcatLowerLower(d, t1, t0), d, o);
      hn::StoreU(hn::ConcatUpperUpper(d, t1, t0), d, o + dst_ld);
      hn::StoreU(hn::ConcatLowerLower(d, t3, t2), d, o + 2 * dst_ld);
      hn::StoreU(hn::ConcatUpperUpper(d, t3, t2), d, o + 3 * dst_ld);
    }
    for (; j < cols; ++j)
      for (size_t k = 0; k < 4; ++k) dst[j * dst_ld + i + k] = src[(i + k) * src_ld + j];
  }
#endif
  for (; i < rows; ++i)
    for (size_t j = 0; j < cols; ++j) dst[j * dst_ld + i] = src[i * src_ld + j];
}

}  // namespace HWY_NAMESPACE
}  // namespace onnx_core::simd_math
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "simd_targets.hpp"

namespace onnx_core::simd_math {

HWY_EXPORT(SigmoidImpl);
HWY_EXPORT(SiluImpl);
HWY_EXPORT(TanhImpl);
HWY_EXPORT(ExpImpl);
HWY_EXPORT(LogImpl);
HWY_EXPORT(ErfImpl);
HWY_EXPORT(GeluImpl);
HWY_EXPORT(GeluTanhImpl);

// The unary entry points: cap the targets (once), then call the best compiled target.
#define ONNX_CORE_SIMD_UNARY(name, impl)          \
  void name(const float* x, float* y, size_t n) { \
    cap_simd_targets();                           \
    HWY_DYNAMIC_DISPATCH(impl)(x, y, n);          \
  }
ONNX_CORE_SIMD_UNARY(sigmoid, SigmoidImpl)
ONNX_CORE_SIMD_UNARY(silu, SiluImpl)
ONNX_CORE_SIMD_UNARY(tanh, TanhImpl)
ONNX_CORE_SIMD_UNARY(exp, ExpImpl)
ONNX_CORE_SIMD_UNARY(log, LogImpl)
ONNX_CORE_SIMD_UNARY(erf, ErfImpl)
ONNX_CORE_SIMD_UNARY(gelu, GeluImpl)
ONNX_CORE_SIMD_UNARY(gelu_tanh, GeluTanhImpl)
#undef ONNX_CORE_SIMD_UNARY

HWY_EXPORT(AddBiasImpl);

void add_bias(float* y, size_t n, float bias, bool relu) {
  cap_simd_targets();
  HWY_DYNAMIC_DISPATCH(AddBiasImpl)(y, n, bias, relu);
}

HWY_EXPORT(SoftmaxRowsImpl);

void softmax_rows(const float* x, float* y, size_t rows, size_t len) {
  cap_simd_targets();
  HWY_DYNAMIC_DISPATCH(SoftmaxRowsImpl)(x, y, rows, len);
}

HWY_EXPORT(MulChannelBlocksImpl);
HWY_EXPORT(SumChannelBlocksImpl);

void mul_channel_blocks(const float* x, const float* s, float* y, size_t pixels, size_t block) {
  cap_simd_targets();
  HWY_DYNAMIC_DISPATCH(MulChannelBlocksImpl)(x, s, y, pixels, block);
}

void sum_channel_blocks(const float* x, size_t pixels, size_t block, float* sum) {
  cap_simd_targets();
  HWY_DYNAMIC_DISPATCH(SumChannelBlocksImpl)(x, pixels, block, sum);
}

HWY_EXPORT(Transpose32Impl);

void transpose32(const uint32_t* src, size_t src_ld, uint32_t* dst, size_t dst_ld, size_t rows, size_t cols) {
  cap_simd_targets();
  HWY_DYNAMIC_DISPATCH(Transpose32Impl)(src, src_ld, dst, dst_ld, rows, cols);
}

}  // namespace onnx_core::simd_math
#endif  // HWY_ONCE
