// The HIP runtime calls used by devices/cuda/gpu_backend_impl.hpp, in namespace gpuapi. Host-only code:
// compiled by the C++ compiler against <hip/hip_runtime_api.h> (AMD platform) and linked with libamdhip64.
#pragma once

#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__
#endif
#include <hip/hip_runtime_api.h>
#include <ophost/ophost_plugin.h>

#include <string>

namespace gpu_backend {
struct DeviceInfo;
}

namespace gpuapi {

using error_t = hipError_t;
using stream_t = hipStream_t;
using event_t = hipEvent_t;
inline constexpr error_t kSuccess = hipSuccess;
inline constexpr const char* kDeviceType = "hip";
inline constexpr int32_t kDlDeviceType = OPH_DL_ROCM;
inline constexpr const char* kRuntimeLabel = "HIP";
inline constexpr const char* kCountCall = "hipGetDeviceCount";
inline constexpr const char* kSetDeviceCall = "hipSetDevice";
inline constexpr uint64_t kAlignment = 256;  // hipMalloc guarantees at least 256 bytes

inline const char* error_name(error_t e) { return hipGetErrorName(e); }
inline const char* error_string(error_t e) { return hipGetErrorString(e); }
inline void clear_error() { (void)hipGetLastError(); }
inline error_t get_device_count(int* n) { return hipGetDeviceCount(n); }
inline error_t driver_version(int* v) { return hipDriverGetVersion(v); }
inline error_t get_device(int* d) { return hipGetDevice(d); }
inline error_t set_device(int d) { return hipSetDevice(d); }
inline error_t mem_get_info(size_t* free_b, size_t* total_b) { return hipMemGetInfo(free_b, total_b); }
inline error_t malloc(void** p, size_t n) { return hipMalloc(p, n); }
inline error_t free(void* p) { return hipFree(p); }
inline error_t memcpy_async(void* dst, const void* src, size_t n, int32_t kind, stream_t s) {
  static const hipMemcpyKind kinds[] = {hipMemcpyHostToDevice, hipMemcpyDeviceToHost, hipMemcpyDeviceToDevice};
  return hipMemcpyAsync(dst, src, n, kinds[kind], s);
}
inline error_t stream_create(stream_t* s) { return hipStreamCreateWithFlags(s, hipStreamNonBlocking); }
inline error_t stream_destroy(stream_t s) { return hipStreamDestroy(s); }
inline error_t stream_synchronize(stream_t s) { return hipStreamSynchronize(s); }
inline error_t event_create(event_t* e) { return hipEventCreate(e); }
inline error_t event_destroy(event_t e) { return hipEventDestroy(e); }
inline error_t event_record(event_t e, stream_t s) { return hipEventRecord(e, s); }
inline error_t event_synchronize(event_t e) { return hipEventSynchronize(e); }
inline error_t event_elapsed_ms(float* ms, event_t a, event_t b) { return hipEventElapsedTime(ms, a, b); }

error_t describe_device(int device, gpu_backend::DeviceInfo& out);

}  // namespace gpuapi
