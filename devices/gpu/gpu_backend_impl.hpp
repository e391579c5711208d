// One implementation of the oph_device_backend_def for the two GPU runtimes (CUDA and HIP), which have the
// same programming model. Included once by devices/cuda/cuda_backend.cpp and once by devices/hip/
// hip_backend.cpp after gpu_api.hpp has defined namespace `gpuapi` with the runtime calls, the error type and
// the device constants of the API the backend's target selects (OPH_GPU_API_CUDA / OPH_GPU_API_HIP). Each
// backend is still its own shared library linking only its own runtime (libcudart / libamdhip64), never
// libophost.
//
// Contract (sdk/include/ophost/ophost_plugin.h, devices/null/README.md):
//  - enumerate asks the runtime for devices once (cached); with none, or without a driver, it returns OK,
//    count 0 and the runtime's reason ("no CUDA device: cudaGetDeviceCount returned 35 (cudaErrorInsufficient
//    Driver: ...)") — inactive is information, not a failure. Every other call on an inactive backend is a
//    FAILED_PRECONDITION naming that reason.
//  - every call selects the device it is given and restores the caller's current device afterwards;
//  - copies are queued on the stream when one is given and synchronous (completed on return) without one;
//  - no exception crosses the boundary; statuses come from the host's status_create, prefixed by the name.
#pragma once

#include <ophost/ophost_plugin.h>

#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#ifndef OPH_PLUGIN_NAME
#error "OPH_PLUGIN_NAME must be defined (ophost_add_plugin does it)"
#endif
#ifndef OPH_PLUGIN_VERSION
#define OPH_PLUGIN_VERSION "0.0.0"
#endif

namespace gpu_backend {

struct DeviceInfo {
  std::string name, vendor, arch, features;
  int32_t compute_major = 0, compute_minor = 0, multiprocessors = 0;
  uint64_t total_memory = 0;
  bool fp16 = false, bf16 = false, int8 = false;
};

struct Backend {
  const oph_host_services* services = nullptr;
  oph_device_backend_def def{};
  const oph_device_backend_def* devices[1] = {nullptr};
  oph_plugin_info plugin{};

  std::once_flag probed;
  int32_t count = 0;
  std::string inactive_reason;  // non-empty when count == 0
  std::vector<DeviceInfo> info;

  // Allocations whose requested alignment exceeded the runtime's: aligned pointer -> raw pointer.
  std::mutex over_aligned_mutex;
  std::unordered_map<void*, void*> over_aligned;
};

oph_status* make_error(const Backend* b, int32_t code, const char* fmt, ...) noexcept
    __attribute__((format(printf, 3, 4)));

oph_status* make_error(const Backend* b, int32_t code, const char* fmt, ...) noexcept {
  char buf[768];
  int n = std::snprintf(buf, sizeof buf, "%s: ", OPH_PLUGIN_NAME);
  if (n < 0) n = 0;
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf + n, sizeof buf - static_cast<size_t>(n), fmt, ap);
  va_end(ap);
  return b->services->status_create(code, buf);
}

// "cudaErrorMemoryAllocation (out of memory)"
std::string describe(gpuapi::error_t e) {
  std::string name = gpuapi::error_name(e), text = gpuapi::error_string(e);
  return text.empty() || text == name ? name : name + " (" + text + ")";
}

oph_status* runtime_error(const Backend* b, int32_t code, const char* what, gpuapi::error_t e) noexcept {
  return make_error(b, code, "%s failed: %s", what, describe(e).c_str());
}

void probe(Backend* b) {
  int n = 0;
  gpuapi::error_t e = gpuapi::get_device_count(&n);
  if (e != gpuapi::kSuccess) {
    b->count = 0;
    b->inactive_reason = std::string("no ") + gpuapi::kRuntimeLabel + " device: " + gpuapi::kCountCall +
                         " returned " + std::to_string(static_cast<int>(e)) + " (" + describe(e) + ")";
    int driver = 0;
    if (gpuapi::driver_version(&driver) == gpuapi::kSuccess && driver == 0) b->inactive_reason += "; no driver loaded";
    gpuapi::clear_error();
    return;
  }
  if (n <= 0) {
    b->count = 0;
    b->inactive_reason = std::string("no ") + gpuapi::kRuntimeLabel + " device: " + gpuapi::kCountCall +
                         " found 0 devices";
    return;
  }
  std::vector<DeviceInfo> info(static_cast<size_t>(n));
  for (int d = 0; d < n; ++d) {
    e = gpuapi::describe_device(d, info[static_cast<size_t>(d)]);
    if (e != gpuapi::kSuccess) {
      b->count = 0;
      b->inactive_reason = std::string(gpuapi::kRuntimeLabel) + " device " + std::to_string(d) +
                           ": reading its properties failed: " + describe(e);
      gpuapi::clear_error();
      return;
    }
  }
  b->info = std::move(info);
  b->count = n;
}

void ensure_probed(Backend* b) noexcept {
  try {
    std::call_once(b->probed, [b] { probe(b); });
  } catch (...) {
    b->count = 0;
    if (b->inactive_reason.empty()) b->inactive_reason = "probing devices failed";
  }
}

oph_status* check_device(Backend* b, int32_t device_id) noexcept {
  ensure_probed(b);
  if (b->count == 0)
    return make_error(b, OPH_CODE_FAILED_PRECONDITION, "backend is inactive: %s", b->inactive_reason.c_str());
  if (device_id < 0 || device_id >= b->count)
    return make_error(b, OPH_CODE_OUT_OF_RANGE, "no device %d (%d device%s)", static_cast<int>(device_id),
                      static_cast<int>(b->count), b->count == 1 ? "" : "s");
  return nullptr;
}

// Makes `device` current for the scope and restores the caller's device afterwards.
class DeviceGuard {
 public:
  explicit DeviceGuard(int32_t device) {
    if (gpuapi::get_device(&previous_) != gpuapi::kSuccess) previous_ = -1;
    if (previous_ != device) {
      error_ = gpuapi::set_device(device);
      restore_ = error_ == gpuapi::kSuccess && previous_ >= 0;
    }
  }
  ~DeviceGuard() {
    if (restore_) (void)gpuapi::set_device(previous_);
  }
  gpuapi::error_t error() const noexcept { return error_; }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
  bool restore_ = false;
  gpuapi::error_t error_ = gpuapi::kSuccess;
};

#define GPU_SELECT(b, device_id)                                                       \
  if (oph_status* s_ = check_device(b, device_id)) return s_;                          \
  DeviceGuard guard_(device_id);                                                       \
  if (guard_.error() != gpuapi::kSuccess)                                              \
    return runtime_error(b, OPH_CODE_INTERNAL, gpuapi::kSetDeviceCall, guard_.error())

// ---------------------------------------------------------------------------------------------------------
// oph_device_backend_def functions

oph_status* gpu_enumerate(void* backend, int32_t* out_count, const char** out_inactive_reason) noexcept {
  auto* b = static_cast<Backend*>(backend);
  if (!out_count) return make_error(b, OPH_CODE_INVALID_ARGUMENT, "enumerate: out_count is NULL");
  ensure_probed(b);
  *out_count = b->count;
  if (out_inactive_reason) *out_inactive_reason = b->count == 0 ? b->inactive_reason.c_str() : nullptr;
  return nullptr;
}

oph_status* gpu_get_properties(void* backend, int32_t device_id, oph_device_properties* out_props) noexcept {
  auto* b = static_cast<Backend*>(backend);
  if (!out_props) return make_error(b, OPH_CODE_INVALID_ARGUMENT, "get_properties: out_props is NULL");
  if (out_props->struct_size < sizeof(size_t))
    return make_error(b, OPH_CODE_INVALID_ARGUMENT, "get_properties: out_props->struct_size is %zu",
                      out_props->struct_size);
  GPU_SELECT(b, device_id);
  const DeviceInfo& d = b->info[static_cast<size_t>(device_id)];
  oph_device_properties p{};
  p.struct_size = OPH_DEVICE_PROPERTIES_STRUCT_SIZE;
  p.name = d.name.c_str();
  p.vendor = d.vendor.c_str();
  p.arch = d.arch.c_str();
  p.features = d.features.c_str();
  p.total_memory = d.total_memory;
  size_t free_b = 0, total_b = 0;
  if (gpuapi::mem_get_info(&free_b, &total_b) == gpuapi::kSuccess) {
    p.free_memory = free_b;
    if (total_b) p.total_memory = total_b;
  } else {
    gpuapi::clear_error();
  }
  p.compute_major = d.compute_major;
  p.compute_minor = d.compute_minor;
  p.multiprocessors = d.multiprocessors;
  p.threads = 0;
  p.fp16 = d.fp16;
  p.bf16 = d.bf16;
  p.int8 = d.int8;
  p.alignment = gpuapi::kAlignment;
  p.max_allocation = p.total_memory;
  // Fill only what the caller's (possibly older, smaller) struct holds; keep its struct_size.
  size_t n = std::min(out_props->struct_size, OPH_DEVICE_PROPERTIES_STRUCT_SIZE);
  std::memcpy(reinterpret_cast<char*>(out_props) + sizeof(size_t), reinterpret_cast<const char*>(&p) + sizeof(size_t),
              n - sizeof(size_t));
  return nullptr;
}

oph_status* gpu_alloc(void* backend, int32_t device_id, size_t bytes, size_t alignment, void** out_ptr) noexcept {
  auto* b = static_cast<Backend*>(backend);
  if (!out_ptr) return make_error(b, OPH_CODE_INVALID_ARGUMENT, "alloc: out_ptr is NULL");
  *out_ptr = nullptr;
  if (alignment != 0 && (alignment & (alignment - 1)) != 0)
    return make_error(b, OPH_CODE_INVALID_ARGUMENT, "alloc: alignment %zu is not a power of two", alignment);
  GPU_SELECT(b, device_id);
  const bool over = alignment > gpuapi::kAlignment;
  size_t request = bytes == 0 ? 1 : bytes;  // 0 bytes still gets a distinct, freeable block
  if (over) {
    if (request > SIZE_MAX - alignment)
      return make_error(b, OPH_CODE_RESOURCE_EXHAUSTED, "alloc: %zu bytes is too large", bytes);
    request += alignment;
  }
  void* raw = nullptr;
  gpuapi::error_t e = gpuapi::malloc(&raw, request);
  if (e != gpuapi::kSuccess || !raw) {
    gpuapi::clear_error();
    size_t free_b = 0, total_b = 0;
    (void)gpuapi::mem_get_info(&free_b, &total_b);
    gpuapi::clear_error();
    return make_error(b, OPH_CODE_RESOURCE_EXHAUSTED,
                      "out of device memory on device %d allocating %zu bytes (%zu of %zu bytes free): %s",
                      static_cast<int>(device_id), bytes, free_b, total_b, describe(e).c_str());
  }
  if (!over) {
    *out_ptr = raw;
    return nullptr;
  }
  auto addr = reinterpret_cast<uintptr_t>(raw);
  void* aligned = reinterpret_cast<void*>((addr + alignment - 1) / alignment * alignment);
  try {
    std::lock_guard<std::mutex> lock(b->over_aligned_mutex);
    b->over_aligned[aligned] = raw;
  } catch (...) {
    (void)gpuapi::free(raw);
    return make_error(b, OPH_CODE_RESOURCE_EXHAUSTED, "alloc: out of host memory");
  }
  *out_ptr = aligned;
  return nullptr;
}

void gpu_free(void* backend, int32_t device_id, void* ptr) noexcept {
  auto* b = static_cast<Backend*>(backend);
  if (!ptr) return;
  {
    std::lock_guard<std::mutex> lock(b->over_aligned_mutex);
    auto it = b->over_aligned.find(ptr);
    if (it != b->over_aligned.end()) {
      ptr = it->second;
      b->over_aligned.erase(it);
    }
  }
  if (oph_status* s = check_device(b, device_id)) {
    b->services->status_destroy(s);
    return;
  }
  DeviceGuard guard(device_id);
  if (gpuapi::free(ptr) != gpuapi::kSuccess) gpuapi::clear_error();
}

oph_status* gpu_copy(void* backend, int32_t device_id, int32_t kind, void* dst, const void* src, size_t bytes,
                     void* stream) noexcept {
  auto* b = static_cast<Backend*>(backend);
  if (kind != OPH_COPY_HOST_TO_DEVICE && kind != OPH_COPY_DEVICE_TO_HOST && kind != OPH_COPY_DEVICE_TO_DEVICE)
    return make_error(b, OPH_CODE_INVALID_ARGUMENT, "copy: unknown copy kind %d", static_cast<int>(kind));
  if (bytes == 0) return nullptr;
  if (!dst || !src)
    return make_error(b, OPH_CODE_INVALID_ARGUMENT, "copy: %s pointer is NULL for a %zu-byte copy",
                      dst ? "source" : "destination", bytes);
  GPU_SELECT(b, device_id);
  static const char* const kKind[] = {"host-to-device", "device-to-host", "device-to-device"};
  auto s = static_cast<gpuapi::stream_t>(stream);
  gpuapi::error_t e = gpuapi::memcpy_async(dst, src, bytes, kind, s);
  if (e == gpuapi::kSuccess && !stream) e = gpuapi::stream_synchronize(s);
  if (e != gpuapi::kSuccess) {
    gpuapi::clear_error();
    return make_error(b, OPH_CODE_INTERNAL, "%s copy of %zu bytes failed: %s", kKind[kind], bytes,
                      describe(e).c_str());
  }
  return nullptr;
}

oph_status* gpu_stream_create(void* backend, int32_t device_id, void** out_stream) noexcept {
  auto* b = static_cast<Backend*>(backend);
  if (!out_stream) return make_error(b, OPH_CODE_INVALID_ARGUMENT, "stream_create: out_stream is NULL");
  *out_stream = nullptr;
  GPU_SELECT(b, device_id);
  gpuapi::stream_t s = nullptr;
  if (gpuapi::error_t e = gpuapi::stream_create(&s); e != gpuapi::kSuccess)
    return runtime_error(b, OPH_CODE_RESOURCE_EXHAUSTED, "stream_create", e);
  *out_stream = s;
  return nullptr;
}

void gpu_stream_destroy(void* backend, int32_t device_id, void* stream) noexcept {
  auto* b = static_cast<Backend*>(backend);
  if (!stream) return;
  if (oph_status* s = check_device(b, device_id)) {
    b->services->status_destroy(s);
    return;
  }
  DeviceGuard guard(device_id);
  (void)gpuapi::stream_destroy(static_cast<gpuapi::stream_t>(stream));
}

oph_status* gpu_stream_synchronize(void* backend, int32_t device_id, void* stream) noexcept {
  auto* b = static_cast<Backend*>(backend);
  GPU_SELECT(b, device_id);
  if (gpuapi::error_t e = gpuapi::stream_synchronize(static_cast<gpuapi::stream_t>(stream)); e != gpuapi::kSuccess) {
    gpuapi::clear_error();
    return runtime_error(b, OPH_CODE_INTERNAL, "stream_synchronize", e);
  }
  return nullptr;
}

oph_status* gpu_event_create(void* backend, int32_t device_id, void** out_event) noexcept {
  auto* b = static_cast<Backend*>(backend);
  if (!out_event) return make_error(b, OPH_CODE_INVALID_ARGUMENT, "event_create: out_event is NULL");
  *out_event = nullptr;
  GPU_SELECT(b, device_id);
  gpuapi::event_t ev = nullptr;
  if (gpuapi::error_t e = gpuapi::event_create(&ev); e != gpuapi::kSuccess)
    return runtime_error(b, OPH_CODE_RESOURCE_EXHAUSTED, "event_create", e);
  *out_event = ev;
  return nullptr;
}

void gpu_event_destroy(void* backend, int32_t device_id, void* event) noexcept {
  auto* b = static_cast<Backend*>(backend);
  if (!event) return;
  if (oph_status* s = check_device(b, device_id)) {
    b->services->status_destroy(s);
    return;
  }
  DeviceGuard guard(device_id);
  (void)gpuapi::event_destroy(static_cast<gpuapi::event_t>(event));
}

oph_status* gpu_event_record(void* backend, int32_t device_id, void* event, void* stream) noexcept {
  auto* b = static_cast<Backend*>(backend);
  if (!event) return make_error(b, OPH_CODE_INVALID_ARGUMENT, "event_record: event is NULL");
  GPU_SELECT(b, device_id);
  if (gpuapi::error_t e = gpuapi::event_record(static_cast<gpuapi::event_t>(event), static_cast<gpuapi::stream_t>(stream));
      e != gpuapi::kSuccess) {
    gpuapi::clear_error();
    return runtime_error(b, OPH_CODE_INTERNAL, "event_record", e);
  }
  return nullptr;
}

oph_status* gpu_event_synchronize(void* backend, int32_t device_id, void* event) noexcept {
  auto* b = static_cast<Backend*>(backend);
  if (!event) return make_error(b, OPH_CODE_INVALID_ARGUMENT, "event_synchronize: event is NULL");
  GPU_SELECT(b, device_id);
  if (gpuapi::error_t e = gpuapi::event_synchronize(static_cast<gpuapi::event_t>(event)); e != gpuapi::kSuccess) {
    gpuapi::clear_error();
    return runtime_error(b, OPH_CODE_INTERNAL, "event_synchronize", e);
  }
  return nullptr;
}

oph_status* gpu_event_elapsed_ms(void* backend, int32_t device_id, void* start, void* end, float* out_ms) noexcept {
  auto* b = static_cast<Backend*>(backend);
  if (!start || !end || !out_ms)
    return make_error(b, OPH_CODE_INVALID_ARGUMENT, "event_elapsed_ms: NULL %s",
                      !start ? "start event" : !end ? "end event" : "out_ms");
  GPU_SELECT(b, device_id);
  float ms = 0;
  gpuapi::error_t e = gpuapi::event_elapsed_ms(&ms, static_cast<gpuapi::event_t>(start), static_cast<gpuapi::event_t>(end));
  if (e != gpuapi::kSuccess) {
    gpuapi::clear_error();
    return runtime_error(b, OPH_CODE_FAILED_PRECONDITION, "event_elapsed_ms (were both events recorded?)", e);
  }
  *out_ms = ms;
  return nullptr;
}

#undef GPU_SELECT

// ---------------------------------------------------------------------------------------------------------
// Handshake

void gpu_release(void* plugin_state) noexcept { delete static_cast<Backend*>(plugin_state); }

oph_status* gpu_entry(const oph_host_info* host, const oph_plugin_info** out_info) noexcept {
  oph_status* refused = nullptr;
  if (!oph_entry_check(host, out_info, OPH_PLUGIN_NAME, &refused)) return refused;
  const oph_host_services* services = host->services;
  auto* b = new (std::nothrow) Backend();
  if (!b) return services->status_create(OPH_CODE_RESOURCE_EXHAUSTED, OPH_PLUGIN_NAME ": out of memory");
  b->services = services;

  oph_device_backend_def& d = b->def;
  d.struct_size = OPH_DEVICE_BACKEND_DEF_STRUCT_SIZE;
  d.device_type = gpuapi::kDeviceType;
  d.dl_device_type = gpuapi::kDlDeviceType;
  d.backend = b;
  d.enumerate = gpu_enumerate;
  d.get_properties = gpu_get_properties;
  d.alloc = gpu_alloc;
  d.free = gpu_free;
  d.copy = gpu_copy;
  d.stream_create = gpu_stream_create;
  d.stream_destroy = gpu_stream_destroy;
  d.stream_synchronize = gpu_stream_synchronize;
  d.event_create = gpu_event_create;
  d.event_destroy = gpu_event_destroy;
  d.event_record = gpu_event_record;
  d.event_synchronize = gpu_event_synchronize;
  d.event_elapsed_ms = gpu_event_elapsed_ms;
  b->devices[0] = &b->def;

  oph_plugin_info& p = b->plugin;
  p.struct_size = OPH_PLUGIN_INFO_STRUCT_SIZE;
  p.abi_major = OPH_ABI_MAJOR;
  p.minor_built = OPH_ABI_MINOR;
  p.minor_required = 0;
  p.name = OPH_PLUGIN_NAME;
  p.version = OPH_PLUGIN_VERSION;
  p.kind = OPH_PLUGIN_KIND_DEVICE_BACKEND;
  p.devices = b->devices;
  p.num_devices = 1;
  p.plugin_state = b;
  p.release = gpu_release;
  *out_info = &b->plugin;
  return nullptr;
}

}  // namespace gpu_backend
