// The HIP (ROCm) device backend: hipMalloc'd memory, hipMemcpyAsync copies on non-blocking streams, HIP
// events. Without an AMD GPU (or the amdgpu/KFD driver) it loads and reports itself inactive with the
// runtime's reason. Shares its implementation with the CUDA backend (devices/gpu/: gpu_api.hpp,
// gpu_backend_impl.hpp); this file holds what only HIP knows (device properties).
#include "gpu_api.hpp"

#include "gpu_backend_impl.hpp"

namespace gpuapi {

error_t describe_device(int device, gpu_backend::DeviceInfo& out) {
  hipDeviceProp_t prop{};
  if (error_t e = hipGetDeviceProperties(&prop, device); e != hipSuccess) return e;
  out.name = prop.name;
  out.vendor = "AMD";
  out.arch = prop.gcnArchName;  // e.g. "gfx90a:sramecc+:xnack-"
  out.compute_major = prop.major;
  out.compute_minor = prop.minor;
  out.multiprocessors = prop.multiProcessorCount;
  out.total_memory = prop.totalGlobalMem;
  const std::string arch = out.arch.substr(0, out.arch.find(':'));
  auto starts = [&](const char* p) { return arch.rfind(p, 0) == 0; };
  out.fp16 = true;  // every GCN/CDNA/RDNA generation HIP supports has packed fp16
  // bf16 arithmetic (MFMA/WMMA): CDNA2+ (gfx90a, gfx94x, gfx95x) and RDNA3+ (gfx11, gfx12).
  out.bf16 = starts("gfx90a") || starts("gfx94") || starts("gfx95") || starts("gfx11") || starts("gfx12");
  // int8 dot products: gfx906/gfx908/gfx90a/gfx94x and RDNA2+ (gfx103x, gfx11, gfx12).
  out.int8 = starts("gfx906") || starts("gfx908") || starts("gfx90a") || starts("gfx94") || starts("gfx95") ||
             starts("gfx103") || starts("gfx11") || starts("gfx12");
  std::string f = "fp32 fp16";
  if (out.bf16) f += " bf16";
  if (out.int8) f += " int8";
  if (starts("gfx908") || starts("gfx90a") || starts("gfx94") || starts("gfx95")) f += " mfma";
  if (starts("gfx11") || starts("gfx12")) f += " wmma";
  out.features = f;
  return hipSuccess;
}

}  // namespace gpuapi

OPH_DEFINE_PLUGIN_ENTRY(gpu_backend::gpu_entry)
