// onnx-core: Highway kernels of norm_simd.hpp. This file is compiled once per Highway target (foreach_target.h
// re-includes it through HWY_TARGET_INCLUDE); the dispatchers at the end pick the best target at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "norm_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

#include "norm_simd.hpp"

#include <cmath>

HWY_BEFORE_NAMESPACE();
namespace onnx_core::norm_simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Sum of f(x[i]) over one row: two vector accumulators in the main loop, the columns past the last whole vector
// one by one (MaskedLoad below AVX2 is a full aligned load, past the end of the row).
template <class D, class F, class G>
HWY_INLINE float RowSum(D d, const float* x, size_t n, const F& f, const G& scalar_f) {
  const size_t N = hn::Lanes(d);
  auto a0 = hn::Zero(d), a1 = hn::Zero(d);
  size_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    a0 = hn::Add(a0, f(hn::LoadU(d, x + i)));
    a1 = hn::Add(a1, f(hn::LoadU(d, x + i + N)));
  }
  for (; i + N <= n; i += N) a0 = hn::Add(a0, f(hn::LoadU(d, x + i)));
  float s = hn::GetLane(hn::SumOfLanes(d, hn::Add(a0, a1)));
  for (; i < n; ++i) s += scalar_f(x[i]);
  return s;
}

void LayerNormRowsImpl(const LayerNormRows& a) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d), n = a.inner;
  const float inv_n = n ? 1.0f / static_cast<float>(n) : 0.0f;
  for (size_t r = 0; r < a.rows; ++r) {
    const float* x = a.x + r * n;
    const float mean = RowSum(d, x, n, [](auto v) { return v; }, [](float v) { return v; }) * inv_n;
    const auto vm = hn::Set(d, mean);
    const float var = RowSum(
                          d, x, n,
                          [&](auto v) {
                            const auto c = hn::Sub(v, vm);
                            return hn::Mul(c, c);
                          },
                          [&](float v) { return (v - mean) * (v - mean); }) *
                      inv_n;
    const float inv = 1.0f / std::sqrt(var + a.epsilon);
    if (a.mean) a.mean[r] = mean;
    if (a.inv_std) a.inv_std[r] = inv;
    if (!a.y) continue;
    float* y = a.y + r * n;
    // y = (x - mean) * (inv * scale) + bias
    const auto vi = hn::Set(d, inv);
    const auto s1 = hn::Set(d, a.scale_one ? a.scale[0] * inv : 0.0f);
    const auto b1 = hn::Set(d, a.bias ? a.bias[0] : 0.0f);
    size_t i = 0;
    for (; i + N <= n; i += N) {
      const auto c = hn::Sub(hn::LoadU(d, x + i), vm);
      const auto s = a.scale_one ? s1 : hn::Mul(hn::LoadU(d, a.scale + i), vi);
      const auto b = !a.bias || a.bias_one ? b1 : hn::LoadU(d, a.bias + i);
      hn::StoreU(hn::MulAdd(c, s, b), d, y + i);
    }
    for (; i < n; ++i) {
      const float s = (a.scale_one ? a.scale[0] : a.scale[i]) * inv;
      const float b = a.bias ? a.bias[a.bias_one ? 0 : i] : 0.0f;
      y[i] = (x[i] - mean) * s + b;
    }
  }
}

int64_t TargetImpl() { return HWY_TARGET; }

}  // namespace HWY_NAMESPACE
}  // namespace onnx_core::norm_simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "simd_targets.hpp"

namespace onnx_core::norm_simd {

HWY_EXPORT(LayerNormRowsImpl);
HWY_EXPORT(TargetImpl);

void layer_norm_rows(const LayerNormRows& a) {
  cap_simd_targets();
  HWY_DYNAMIC_DISPATCH(LayerNormRowsImpl)(a);
}
const char* target_name() {
  cap_simd_targets();
  return hwy::TargetName(HWY_DYNAMIC_DISPATCH(TargetImpl)());
}

}  // namespace onnx_core::norm_simd
#endif  // HWY_ONCE
