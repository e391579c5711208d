// Test pack: Add and Relu on the "fakedev" device of tests/fake_plugin (host memory behind a device type), so
// placement and Copy insertion are exercised without a GPU. Every kernel checks that the host handed it
// tensors and a context of its device.
#include <ophost/ophost_plugin.hpp>

namespace oph = ophost::sdk;

namespace {

void check_device(const oph::KernelContext& ctx, std::initializer_list<oph::TensorRef> ts) {
  if (ctx.device().device_type != OPH_DL_EXT_DEV)
    throw oph::Error(OPH_CODE_FAILED_PRECONDITION, "fakedev kernel called with a non-fakedev context");
  for (const oph::TensorRef& t : ts)
    if (t.present() && t.raw()->device.device_type != OPH_DL_EXT_DEV)
      throw oph::Error(OPH_CODE_FAILED_PRECONDITION, "fakedev kernel got a tensor that is not on fakedev");
}

void relu(const oph::KernelContext& ctx, oph::In<float> x, oph::Out<float> y) {
  check_device(ctx, {ctx.input(0), ctx.output(0)});
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] > 0 ? x[i] : 0;
}

// Same shapes, or B a single element.
void add(const oph::KernelContext& ctx, oph::In<float> a, oph::In<float> b, oph::Out<float> y) {
  check_device(ctx, {ctx.input(0), ctx.input(1), ctx.output(0)});
  if (b.size() != 1 && b.size() != a.size())
    throw oph::Error(OPH_CODE_INVALID_ARGUMENT, "fakedev Add: B must have A's shape or one element");
  for (size_t i = 0; i < a.size(); ++i) y[i] = a[i] + b[b.size() == 1 ? 0 : i];
}

}  // namespace

OPH_PACK(pack) {
  pack.op("", "Relu").versions(14, OPH_OPSET_MAX).device("fakedev").infer(oph::same_as_input(0)).fn<relu>();
  pack.op("", "Add").versions(14, OPH_OPSET_MAX).device("fakedev").infer(oph::broadcast_inputs()).fn<add>();
}
