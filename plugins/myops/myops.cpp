// myops: the example custom-domain pack (as exported from PyTorch): relu6_scale and gelu, float32, CPU.
#include <ophost/ophost_plugin.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace oph = ophost::sdk;

namespace {

constexpr size_t kGrain = 16384;  // elements per parallel chunk

// y = clamp(x * scale, 0, max_val); NaN in, NaN out (as ONNX Clip and numpy's clip: every comparison with NaN is
// false, so it passes through). Branch-free so the compiler vectorizes it (-O3).
void relu6_scale_range(const float* __restrict in, float* __restrict out, size_t n, float scale, float max_val) {
  for (size_t i = 0; i < n; ++i) {
    float v = in[i] * scale;
    v = v < 0.0f ? 0.0f : v;
    out[i] = v > max_val ? max_val : v;
  }
}

void relu6_scale(const oph::KernelContext& ctx, oph::In<float> x, oph::Out<float> y, float scale, float max_val) {
  const float* in = x.data();
  float* out = y.data();
  ctx.parallel_for(x.size(), kGrain, [=](size_t b, size_t e) { relu6_scale_range(in + b, out + b, e - b, scale, max_val); });
}

// exp(x) for x in [-88, 88] with ~2 ulp error, written with plain arithmetic and bit operations so loops over it
// vectorize (libm's expf does not without -ffast-math): x = n ln2 + r, exp(r) by a degree-6 polynomial.
inline float exp_approx(float x) {
  x = x < 88.0f ? x : 88.0f;
  x = x > -88.0f ? x : -88.0f;
  const float t = x * 1.44269504088896341f;
  const int32_t ni = static_cast<int32_t>(t + (t >= 0.0f ? 0.5f : -0.5f));  // round to nearest (SSE2 vectorizable)
  const float n = static_cast<float>(ni);
  float r = x - n * 0.693359375f;  // ln2 split in two for precision (Cephes)
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t bits = (ni + 127) << 23;  // 2^n
  float scale;
  __builtin_memcpy(&scale, &bits, sizeof(scale));
  return p * scale;
}

// Tanh approximation of GELU: y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), with tanh(u) computed as
// 1 - 2 / (exp(2u) + 1). May run in place (y == x): each element is read before it is written.
void gelu_range(const float* in, float* out, size_t n) {
  constexpr float kC = 0.7978845608028654f;  // sqrt(2/pi)
  for (size_t i = 0; i < n; ++i) {
    const float v = in[i];
    const float u = kC * (v + 0.044715f * v * v * v);
    const float t = 1.0f - 2.0f / (exp_approx(2.0f * u) + 1.0f);
    out[i] = 0.5f * v * (1.0f + t);
  }
}

void gelu(const oph::KernelContext& ctx, oph::In<float> x, oph::Out<float> y) {
  const float* in = x.data();
  float* out = y.data();
  ctx.parallel_for(x.size(), kGrain, [=](size_t b, size_t e) { gelu_range(in + b, out + b, e - b); });
}

}  // namespace

OPH_PACK(pack) {
  pack.op("myops", "relu6_scale")
      .doc("y = clamp(x * scale, 0, max_val)")
      .attr("scale", 1.0f)
      .attr("max_val", 6.0f)
      .infer(oph::same_as_input(0))
      .fn<relu6_scale>()
      .input_names({"X"})
      .output_names({"Y"});
  pack.op("myops", "gelu")
      .doc("GELU, tanh approximation")
      .infer(oph::same_as_input(0))
      .fn<gelu>()
      .input_names({"X"})
      .output_names({"Y"})
      .may_inplace(0, 0);
}
