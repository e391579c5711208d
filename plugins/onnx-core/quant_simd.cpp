// onnx-core: Highway kernels of quant_simd.hpp, compiled once per target (foreach_target.h re-includes this file).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "quant_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

#include "quant_simd.hpp"
#include "simd_targets.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

HWY_BEFORE_NAMESPACE();
namespace onnx_core::quant_simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Stores int32 lanes v (already clamped to the 8-bit type's range) as `n` bytes of type T at y.
template <class T, class DI>
HWY_INLINE void StoreBytesAs(DI di, hn::VFromD<DI> v, void* y, size_t n) {
  const hn::Rebind<T, DI> d8;
  const auto b = hn::DemoteTo(d8, v);
  if (n == hn::Lanes(di)) return hn::StoreU(b, d8, static_cast<T*>(y));
  HWY_ALIGN T buf[HWY_MAX_BYTES / 4];
  hn::Store(b, d8, buf);
  std::memcpy(y, buf, n);
}
template <class DI>
HWY_INLINE void StoreBytes(DI di, hn::VFromD<DI> v, bool is_signed, void* y, size_t n) {
  if (is_signed) StoreBytesAs<int8_t>(di, v, y, n);
  else StoreBytesAs<uint8_t>(di, v, y, n);
}

// round-half-even(q) + zp, clamped to [lo, hi]; NaN gives lo. q is clamped in float first to [lo - zp, hi - zp]
// (the result is the same: rounding is monotonic and lo - zp, hi - zp are integers), so |q| <= 511 and adding
// 1.5 * 2^23 leaves round-half-even(q) in the low mantissa bits (the float addition itself rounds to nearest even,
// the spacing there being 1): one add and one integer subtract instead of a conversion with overflow fix-ups.
template <class DF, class DI>
HWY_INLINE hn::VFromD<DI> RoundAddClamp(DF df, DI di, hn::VFromD<DF> q, hn::VFromD<DI> zp, hn::VFromD<DF> qlo,
                                        hn::VFromD<DF> qhi) {
  q = hn::Min(hn::Max(hn::IfThenElse(hn::IsNaN(q), qlo, q), qlo), qhi);
  const auto shifted = hn::Add(q, hn::Set(df, 12582912.0f));  // 1.5 * 2^23 = 0x4B400000
  return hn::Add(hn::Sub(hn::BitCast(di, shifted), hn::Set(di, 0x4B400000)), zp);
}

// The first m (<= Lanes) elements at p, the other lanes 0: a whole vector when m is, else through a buffer (no read
// past p + m).
template <class D, class T>
HWY_INLINE hn::VFromD<D> LoadPartial(D d, const T* p, size_t m) {
  if (m == hn::Lanes(d)) return hn::LoadU(d, p);
  HWY_ALIGN T buf[HWY_MAX_BYTES / sizeof(T)] = {};
  std::memcpy(buf, p, m * sizeof(T));
  return hn::Load(d, buf);
}

void QuantizeImpl(const float* x, size_t n, float scale, int32_t zp, bool is_signed, void* y) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const size_t N = hn::Lanes(df);
  const auto s = hn::Set(df, scale);
  const auto z = hn::Set(di, zp);
  const auto lo = hn::Set(df, static_cast<float>((is_signed ? -128 : 0) - zp));
  const auto hi = hn::Set(df, static_cast<float>((is_signed ? 127 : 255) - zp));
  char* yb = static_cast<char*>(y);
  for (size_t i = 0; i < n; i += N) {
    const size_t m = std::min(N, n - i);
    StoreBytes(di, RoundAddClamp(df, di, hn::Div(LoadPartial(df, x + i, m), s), z, lo, hi), is_signed, yb + i, m);
  }
}

void DequantizeImpl(const void* x, bool is_signed, size_t n, float scale, int32_t zp, float* y) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<uint8_t, decltype(di)> du8;
  const hn::Rebind<int8_t, decltype(di)> di8;
  const size_t N = hn::Lanes(df);
  const auto s = hn::Set(df, scale);
  const auto z = hn::Set(di, zp);
  const char* xb = static_cast<const char*>(x);
  size_t i = 0;
  auto one = [&](const void* p) {
    const auto w = is_signed ? hn::PromoteTo(di, hn::LoadU(di8, static_cast<const int8_t*>(p)))
                             : hn::BitCast(di, hn::PromoteTo(hn::RebindToUnsigned<decltype(di)>(),
                                                             hn::LoadU(du8, static_cast<const uint8_t*>(p))));
    return hn::Mul(hn::ConvertTo(df, hn::Sub(w, z)), s);
  };
  for (; i + N <= n; i += N) hn::StoreU(one(xb + i), df, y + i);
  if (i < n) {
    HWY_ALIGN char in[HWY_MAX_BYTES / sizeof(float)] = {};
    HWY_ALIGN float out[HWY_MAX_BYTES / sizeof(float)];
    std::memcpy(in, xb + i, n - i);
    hn::Store(one(in), df, out);
    std::memcpy(y + i, out, (n - i) * sizeof(float));
  }
}

void RequantizeImpl(const int32_t* acc, size_t n, int32_t bias, float scale, int32_t zp, bool is_signed, void* y) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const size_t N = hn::Lanes(df);
  const auto s = hn::Set(df, scale);
  const auto b = hn::Set(di, bias), z = hn::Set(di, zp);
  const auto lo = hn::Set(df, static_cast<float>((is_signed ? -128 : 0) - zp));
  const auto hi = hn::Set(df, static_cast<float>((is_signed ? 127 : 255) - zp));
  char* yb = static_cast<char*>(y);
  for (size_t i = 0; i < n; i += N) {
    const size_t m = std::min(N, n - i);
    const auto q = hn::Mul(hn::ConvertTo(df, hn::Add(LoadPartial(di, acc + i, m), b)), s);
    StoreBytes(di, RoundAddClamp(df, di, q, z, lo, hi), is_signed, yb + i, m);
  }
}

void RequantizeColsImpl(const int32_t* acc, size_t n, const int32_t* bias, const float* scale, int32_t zp,
                        bool is_signed, void* y) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const size_t N = hn::Lanes(df);
  const auto z = hn::Set(di, zp);
  const auto lo = hn::Set(df, static_cast<float>((is_signed ? -128 : 0) - zp));
  const auto hi = hn::Set(df, static_cast<float>((is_signed ? 127 : 255) - zp));
  char* yb = static_cast<char*>(y);
  for (size_t i = 0; i < n; i += N) {
    const size_t m = std::min(N, n - i);
    const auto a = LoadPartial(di, acc + i, m);
    const auto bv = bias ? LoadPartial(di, bias + i, m) : hn::Zero(di);
    const auto s = LoadPartial(df, scale + i, m);
    const auto q = hn::Mul(hn::ConvertTo(df, hn::Add(a, bv)), s);
    StoreBytes(di, RoundAddClamp(df, di, q, z, lo, hi), is_signed, yb + i, m);
  }
}

void RequantizeTileImpl(const int32_t* t, size_t rows, size_t ld, size_t len, const int32_t* bias,
                        const float* scale, int32_t zp, bool is_signed, char* y, size_t y_ld) {
  for (size_t r = 0; r < rows; ++r)
    RequantizeImpl(t + r * ld, len, bias[r], scale[r], zp, is_signed, y + r * y_ld);
}

void MinMaxImpl(const float* x, size_t n, float* lo, float* hi) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  // NaN lanes are replaced by the first value that is not NaN (or NaN when there is none).
  size_t first = 0;
  while (first < n && std::isnan(x[first])) ++first;
  const float fill = first < n ? x[first] : std::numeric_limits<float>::quiet_NaN();
  auto vlo = hn::Set(df, fill), vhi = vlo;
  size_t i = 0;
  for (; i + N <= n; i += N) {
    auto v = hn::LoadU(df, x + i);
    v = hn::IfThenElse(hn::IsNaN(v), hn::Set(df, fill), v);
    vlo = hn::Min(vlo, v);
    vhi = hn::Max(vhi, v);
  }
  float l = hn::GetLane(hn::MinOfLanes(df, vlo)), h = hn::GetLane(hn::MaxOfLanes(df, vhi));
  for (; i < n; ++i) {
    if (std::isnan(x[i])) continue;
    l = std::min(l, x[i]);
    h = std::max(h, x[i]);
  }
  *lo = l;
  *hi = h;
}

}  // namespace HWY_NAMESPACE
}  // namespace onnx_core::quant_simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace onnx_core::quant_simd {

HWY_EXPORT(QuantizeImpl);
HWY_EXPORT(DequantizeImpl);
HWY_EXPORT(RequantizeImpl);
HWY_EXPORT(RequantizeColsImpl);
HWY_EXPORT(MinMaxImpl);
HWY_EXPORT(RequantizeTileImpl);

void quantize(const float* x, size_t n, float scale, int32_t zp, bool is_signed, void* y) {
  cap_simd_targets();
  HWY_DYNAMIC_DISPATCH(QuantizeImpl)(x, n, scale, zp, is_signed, y);
}
void dequantize(const void* x, bool is_signed, size_t n, float scale, int32_t zp, float* y) {
  cap_simd_targets();
  HWY_DYNAMIC_DISPATCH(DequantizeImpl)(x, is_signed, n, scale, zp, y);
}
void requantize(const int32_t* acc, size_t n, int32_t bias, float scale, int32_t zp, bool is_signed, void* y) {
  cap_simd_targets();
  HWY_DYNAMIC_DISPATCH(RequantizeImpl)(acc, n, bias, scale, zp, is_signed, y);
}
void requantize_cols(const int32_t* acc, size_t n, const int32_t* bias, const float* scale, int32_t zp,
                     bool is_signed, void* y) {
  cap_simd_targets();
  HWY_DYNAMIC_DISPATCH(RequantizeColsImpl)(acc, n, bias, scale, zp, is_signed, y);
}
void requantize_tile(const int32_t* t, size_t rows, size_t ld, size_t len, const int32_t* bias, const float* scale,
                     int32_t zp, bool is_signed, void* y, size_t y_ld) {
  cap_simd_targets();
  HWY_DYNAMIC_DISPATCH(RequantizeTileImpl)(t, rows, ld, len, bias, scale, zp, is_signed, static_cast<char*>(y), y_ld);
}
void min_max(const float* x, size_t n, float* lo, float* hi) {
  cap_simd_targets();
  HWY_DYNAMIC_DISPATCH(MinMaxImpl)(x, n, lo, hi);
}

}  // namespace onnx_core::quant_simd
#endif  // HWY_ONCE
