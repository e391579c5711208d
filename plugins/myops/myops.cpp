// myops: the example custom-domain pack (as exported from PyTorch): relu6_scale and gelu, float32, CPU.
#include <ophost/ophost_plugin.hpp>

#include <algorithm>
#include <cmath>

namespace oph = ophost::sdk;

namespace {

constexpr size_t kGrain = 16384;  // elements per parallel chunk

// y = clamp(x * scale, 0, max_val)
void relu6_scale(const oph::KernelContext& ctx, oph::In<float> x, oph::Out<float> y, float scale, float max_val) {
  const float* in = x.data();
  float* out = y.data();
  ctx.parallel_for(x.size(), kGrain, [=](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) out[i] = std::min(std::max(in[i] * scale, 0.0f), max_val);
  });
}

// Tanh approximation: y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). May run in place (y == x).
void gelu(const oph::KernelContext& ctx, oph::In<float> x, oph::Out<float> y) {
  const float* in = x.data();
  float* out = y.data();
  ctx.parallel_for(x.size(), kGrain, [=](size_t b, size_t e) {
    constexpr float kC = 0.7978845608028654f;  // sqrt(2/pi)
    for (size_t i = b; i < e; ++i) {
      float v = in[i];
      out[i] = 0.5f * v * (1.0f + std::tanh(kC * (v + 0.044715f * v * v * v)));
    }
  });
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
