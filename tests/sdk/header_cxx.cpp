// Compiles the SDK's C header as C++ and the C++ layer with a minimal pack, with warnings as errors.
#include <ophost/ophost_plugin.h>
#include <ophost/ophost_plugin.hpp>

#include <algorithm>

namespace oph = ophost::sdk;

namespace {
void clampf(oph::In<float> x, oph::Out<float> y, float lo, float hi) {
  for (size_t i = 0; i < x.size(); ++i) y[i] = std::clamp(x[i], lo, hi);
}
}  // namespace

OPH_PACK(pack) {
  pack.op("sdktest", "clamp").attr("lo", 0.0f).attr("hi", 1.0f).infer(oph::same_as_input(0)).fn<clampf>();
}
