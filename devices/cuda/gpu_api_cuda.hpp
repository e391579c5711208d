// The CUDA runtime calls used by gpu_backend_impl.hpp, in namespace gpuapi. Host-only code: compiled by the
// C++ compiler against <cuda_runtime_api.h> and linked with the shared libcudart (no nvcc needed).
#pragma once

#include <cuda_runtime_api.h>
#include <ophost/ophost_plugin.h>

#include <string>

namespace gpu_backend {
struct DeviceInfo;
}

namespace gpuapi {

using error_t = cudaError_t;
using stream_t = cudaStream_t;
using event_t = cudaEvent_t;
inline constexpr error_t kSuccess = cudaSuccess;
inline constexpr const char* kDeviceType = "cuda";
inline constexpr int32_t kDlDeviceType = OPH_DL_CUDA;
inline constexpr const char* kRuntimeLabel = "CUDA";
inline constexpr const char* kCountCall = "cudaGetDeviceCount";
inline constexpr const char* kSetDeviceCall = "cudaSetDevice";
inline constexpr uint64_t kAlignment = 256;  // cudaMalloc guarantees at least 256 bytes

inline const char* error_name(error_t e) { return cudaGetErrorName(e); }
inline const char* error_string(error_t e) { return cudaGetErrorString(e); }
inline void clear_error() { (void)cudaGetLastError(); }
inline error_t get_device_count(int* n) { return cudaGetDeviceCount(n); }
inline error_t driver_version(int* v) { return cudaDriverGetVersion(v); }
inline error_t get_device(int* d) { return cudaGetDevice(d); }
inline error_t set_device(int d) { return cudaSetDevice(d); }
inline error_t mem_get_info(size_t* free_b, size_t* total_b) { return cudaMemGetInfo(free_b, total_b); }
inline error_t malloc(void** p, size_t n) { return cudaMalloc(p, n); }
inline error_t free(void* p) { return cudaFree(p); }
inline error_t memcpy_async(void* dst, const void* src, size_t n, int32_t kind, stream_t s) {
  static const cudaMemcpyKind kinds[] = {cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice};
  return cudaMemcpyAsync(dst, src, n, kinds[kind], s);
}
inline error_t stream_create(stream_t* s) { return cudaStreamCreateWithFlags(s, cudaStreamNonBlocking); }
inline error_t stream_destroy(stream_t s) { return cudaStreamDestroy(s); }
inline error_t stream_synchronize(stream_t s) { return cudaStreamSynchronize(s); }
inline error_t event_create(event_t* e) { return cudaEventCreate(e); }
inline error_t event_destroy(event_t e) { return cudaEventDestroy(e); }
inline error_t event_record(event_t e, stream_t s) { return cudaEventRecord(e, s); }
inline error_t event_synchronize(event_t e) { return cudaEventSynchronize(e); }
inline error_t event_elapsed_ms(float* ms, event_t a, event_t b) { return cudaEventElapsedTime(ms, a, b); }

error_t describe_device(int device, gpu_backend::DeviceInfo& out);

}  // namespace gpuapi
