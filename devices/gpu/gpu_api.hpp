// The GPU runtime calls used by gpu_backend_impl.hpp, in namespace gpuapi, for CUDA or HIP: the backend's
// target defines OPH_GPU_API_CUDA or OPH_GPU_API_HIP (devices/gpu/CMakeLists.txt). The two runtimes spell
// every call, type and constant used here the same after their prefix (cudaMalloc / hipMalloc,
// cudaStream_t / hipStream_t, ...), so OPH_GPU_NAME(Malloc) selects the name. Host-only code: compiled by the
// C++ compiler against <cuda_runtime_api.h> or <hip/hip_runtime_api.h> (AMD platform) and linked with the
// shared libcudart or libamdhip64 (no nvcc or hipcc needed).
#pragma once

#if defined(OPH_GPU_API_CUDA) == defined(OPH_GPU_API_HIP)
#error "define exactly one of OPH_GPU_API_CUDA, OPH_GPU_API_HIP (link the backend with ophost_gpu_backend_<api>)"
#endif

#if defined(OPH_GPU_API_HIP)
#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__
#endif
#include <hip/hip_runtime_api.h>
#define OPH_GPU_NAME(name) hip##name
#define OPH_GPU_PREFIX "hip"
#else
#include <cuda_runtime_api.h>
#define OPH_GPU_NAME(name) cuda##name
#define OPH_GPU_PREFIX "cuda"
#endif

#include <ophost/ophost_plugin.h>

#include <string>

namespace gpu_backend {
struct DeviceInfo;
}

namespace gpuapi {

#if defined(OPH_GPU_API_HIP)
inline constexpr const char* kDeviceType = "hip";
inline constexpr int32_t kDlDeviceType = OPH_DL_ROCM;
inline constexpr const char* kRuntimeLabel = "HIP";
#else
inline constexpr const char* kDeviceType = "cuda";
inline constexpr int32_t kDlDeviceType = OPH_DL_CUDA;
inline constexpr const char* kRuntimeLabel = "CUDA";
#endif
inline constexpr const char* kCountCall = OPH_GPU_PREFIX "GetDeviceCount";
inline constexpr const char* kSetDeviceCall = OPH_GPU_PREFIX "SetDevice";
inline constexpr uint64_t kAlignment = 256;  // cudaMalloc and hipMalloc guarantee at least 256 bytes

using error_t = OPH_GPU_NAME(Error_t);
using stream_t = OPH_GPU_NAME(Stream_t);
using event_t = OPH_GPU_NAME(Event_t);
inline constexpr error_t kSuccess = OPH_GPU_NAME(Success);

inline const char* error_name(error_t e) { return OPH_GPU_NAME(GetErrorName)(e); }
inline const char* error_string(error_t e) { return OPH_GPU_NAME(GetErrorString)(e); }
inline void clear_error() { (void)OPH_GPU_NAME(GetLastError)(); }
inline error_t get_device_count(int* n) { return OPH_GPU_NAME(GetDeviceCount)(n); }
inline error_t driver_version(int* v) { return OPH_GPU_NAME(DriverGetVersion)(v); }
inline error_t get_device(int* d) { return OPH_GPU_NAME(GetDevice)(d); }
inline error_t set_device(int d) { return OPH_GPU_NAME(SetDevice)(d); }
inline error_t mem_get_info(size_t* free_b, size_t* total_b) { return OPH_GPU_NAME(MemGetInfo)(free_b, total_b); }
inline error_t malloc(void** p, size_t n) { return OPH_GPU_NAME(Malloc)(p, n); }
inline error_t free(void* p) { return OPH_GPU_NAME(Free)(p); }
// kind: OPH_COPY_HOST_TO_DEVICE, OPH_COPY_DEVICE_TO_HOST, OPH_COPY_DEVICE_TO_DEVICE (0, 1, 2).
inline error_t memcpy_async(void* dst, const void* src, size_t n, int32_t kind, stream_t s) {
  static const OPH_GPU_NAME(MemcpyKind) kinds[] = {OPH_GPU_NAME(MemcpyHostToDevice), OPH_GPU_NAME(MemcpyDeviceToHost),
                                                   OPH_GPU_NAME(MemcpyDeviceToDevice)};
  return OPH_GPU_NAME(MemcpyAsync)(dst, src, n, kinds[kind], s);
}
inline error_t stream_create(stream_t* s) {
  return OPH_GPU_NAME(StreamCreateWithFlags)(s, OPH_GPU_NAME(StreamNonBlocking));
}
inline error_t stream_destroy(stream_t s) { return OPH_GPU_NAME(StreamDestroy)(s); }
inline error_t stream_synchronize(stream_t s) { return OPH_GPU_NAME(StreamSynchronize)(s); }
inline error_t event_create(event_t* e) { return OPH_GPU_NAME(EventCreate)(e); }
inline error_t event_destroy(event_t e) { return OPH_GPU_NAME(EventDestroy)(e); }
inline error_t event_record(event_t e, stream_t s) { return OPH_GPU_NAME(EventRecord)(e, s); }
inline error_t event_synchronize(event_t e) { return OPH_GPU_NAME(EventSynchronize)(e); }
inline error_t event_elapsed_ms(float* ms, event_t a, event_t b) { return OPH_GPU_NAME(EventElapsedTime)(ms, a, b); }

// What only the backend knows (device properties): defined in devices/cuda/cuda_backend.cpp and
// devices/hip/hip_backend.cpp.
error_t describe_device(int device, gpu_backend::DeviceInfo& out);

}  // namespace gpuapi
