// myops on a GPU: relu6_scale and gelu, float32, with the semantics of the CPU pack (plugins/myops). The same
// source builds the CUDA pack (myops-cuda, OPH_GPU_DEVICE "cuda") and the HIP pack (myops-hip, "hip"); the
// kernels are in myops_kernels.cu. Kernels run asynchronously on the host's stream (ctx.stream()) on the
// node's device; nothing here synchronizes.
#include <ophost/ophost_plugin.hpp>

#include <string>

#include "myops_gpu.hpp"

#ifndef OPH_GPU_DEVICE
#error "OPH_GPU_DEVICE must name the device type (\"cuda\" or \"hip\")"
#endif

namespace oph = ophost::sdk;

namespace {

void check(const char* err, const char* op) {
  if (err && *err)
    throw oph::Error(OPH_CODE_INTERNAL, std::string("myops::") + op + " on " + OPH_GPU_DEVICE + ": kernel launch failed: " + err);
}

void relu6_scale(const oph::KernelContext& ctx, oph::In<float> x, oph::Out<float> y, float scale, float max_val) {
  check(myops_gpu::relu6_scale(ctx.device().device_id, ctx.stream(), x.data(), y.data(), x.size(), scale, max_val),
        "relu6_scale");
}

void gelu(const oph::KernelContext& ctx, oph::In<float> x, oph::Out<float> y) {
  check(myops_gpu::gelu(ctx.device().device_id, ctx.stream(), x.data(), y.data(), x.size()), "gelu");
}

}  // namespace

OPH_PACK(pack) {
  pack.op("myops", "relu6_scale")
      .device(OPH_GPU_DEVICE)
      .doc("y = clamp(x * scale, 0, max_val)")
      .attr("scale", 1.0f)
      .attr("max_val", 6.0f)
      .infer(oph::same_as_input(0))
      .fn<relu6_scale>()
      .input_names({"X"})
      .output_names({"Y"})
      .may_inplace(0, 0);
  pack.op("myops", "gelu")
      .device(OPH_GPU_DEVICE)
      .doc("GELU, tanh approximation")
      .infer(oph::same_as_input(0))
      .fn<gelu>()
      .input_names({"X"})
      .output_names({"Y"})
      .may_inplace(0, 0);
}
