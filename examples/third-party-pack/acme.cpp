// acme: a third-party operator pack built out of tree against the installed ophost SDK.
//
// acme::swish   y = x * sigmoid(beta * x)   (float32, CPU; attribute beta, float, default 1.0)
#include <ophost/ophost_plugin.hpp>

#include <cmath>

namespace oph = ophost::sdk;

namespace {

// Inputs, outputs and their types come from the signature; `beta` binds to the .attr("beta", ...) below.
// May run in place (y and x the same buffer): each element is read before it is written.
void swish(const oph::KernelContext& ctx, oph::In<float> x, oph::Out<float> y, float beta) {
  const float* in = x.data();
  float* out = y.data();
  ctx.parallel_for(x.size(), 16384, [=](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      float v = in[i];
      out[i] = v / (1.0f + std::exp(-beta * v));
    }
  });
}

}  // namespace

OPH_PACK(pack) {
  pack.op("acme", "swish")
      .doc("y = x * sigmoid(beta * x)")
      .attr("beta", 1.0f)
      .infer(oph::same_as_input(0))
      .fn<swish>()
      .input_names({"X"})
      .output_names({"Y"})
      .may_inplace(0, 0);
}
