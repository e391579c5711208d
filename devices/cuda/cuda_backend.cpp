// The CUDA device backend: cudaMalloc'd memory (the host pool sits on top), cudaMemcpyAsync copies on
// non-blocking streams, CUDA events for the profiler. Without a driver or a device it loads and reports
// itself inactive with the runtime's reason (`ophost plugins -v`). The implementation shared with the HIP
// backend is in devices/gpu/ (gpu_api.hpp, gpu_backend_impl.hpp); this file holds what only CUDA knows
// (device properties).
#include "gpu_api.hpp"

#include "gpu_backend_impl.hpp"

namespace gpuapi {

error_t describe_device(int device, gpu_backend::DeviceInfo& out) {
  cudaDeviceProp prop{};
  if (error_t e = cudaGetDeviceProperties(&prop, device); e != cudaSuccess) return e;
  int major = 0, minor = 0, sms = 0;
  if (error_t e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device); e != cudaSuccess) return e;
  if (error_t e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device); e != cudaSuccess) return e;
  if (error_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device); e != cudaSuccess) return e;
  out.name = prop.name;
  out.vendor = "NVIDIA";
  out.arch = "sm_" + std::to_string(major) + std::to_string(minor);
  out.compute_major = major;
  out.compute_minor = minor;
  out.multiprocessors = sms;
  out.total_memory = prop.totalGlobalMem;
  const int cc = major * 10 + minor;
  out.fp16 = cc >= 53;  // native half arithmetic
  out.bf16 = cc >= 80;  // Ampere and later
  out.int8 = cc >= 61;  // dp4a
  std::string f = "fp32";
  if (out.fp16) f += " fp16";
  if (out.bf16) f += " bf16";
  if (out.int8) f += " int8";
  if (cc >= 70) f += " tensor-cores";
  if (cc >= 80) f += " tf32";
  if (cc >= 89) f += " fp8";
  out.features = f;
  return cudaSuccess;
}

}  // namespace gpuapi

OPH_DEFINE_PLUGIN_ENTRY(gpu_backend::gpu_entry)
