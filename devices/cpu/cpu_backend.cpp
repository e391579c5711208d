// The CPU device backend.
//
// One device ("cpu", OPH_DL_CPU, id 0): host memory from aligned_alloc (64-byte aligned, sizes rounded up),
// copies with memcpy (all three kinds are the same on the host), trivial streams (CPU work is synchronous)
// and events stamped with CLOCK_MONOTONIC so the profiler can time kernels on the CPU like on a GPU.
//
// Written against the C ABI only: the sole SDK header is <ophost/ophost_plugin.h>; the plugin never links
// libophost. Every entry point is noexcept and catches everything: no exception crosses the boundary, and
// every error is a status made by the host's status_create.
#include <ophost/ophost_plugin.h>

#include <sched.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#ifndef OPH_PLUGIN_NAME
#define OPH_PLUGIN_NAME "cpu"
#endif
#ifndef OPH_PLUGIN_VERSION
#define OPH_PLUGIN_VERSION "0.0.0"
#endif

namespace {

constexpr uint64_t kAlignment = 64;

// What the backend learns about the machine once, at entry. Strings live as long as the Backend (until the
// plugin's release), as the ABI requires of oph_device_properties' strings.
struct CpuInfo {
  std::string name;
  std::string vendor;
  std::string arch;
  std::string features;
  int32_t cores = 1;    // physical cores usable by this process
  int32_t threads = 1;  // hardware threads usable by this process
  bool fp16 = false;
  bool bf16 = false;
  bool int8 = false;
};

struct Backend {
  const oph_host_services* services = nullptr;
  CpuInfo info;
  oph_device_backend_def def{};
  const oph_device_backend_def* devices[1] = {nullptr};
  oph_plugin_info plugin{};
};

struct CpuStream {
  int unused = 0;  // CPU work is synchronous; a stream is only a distinct handle
};

struct CpuEvent {
  int64_t ns = 0;
  bool recorded = false;
};

// ---------------------------------------------------------------------------------------------------------
// Statuses

oph_status* make_error(const Backend* b, int32_t code, const char* fmt, ...) noexcept
    __attribute__((format(printf, 3, 4)));

oph_status* make_error(const Backend* b, int32_t code, const char* fmt, ...) noexcept {
  char buf[512];
  int n = std::snprintf(buf, sizeof buf, "%s: ", OPH_PLUGIN_NAME);
  if (n < 0) n = 0;
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf + n, sizeof buf - static_cast<size_t>(n), fmt, ap);
  va_end(ap);
  return b->services->status_create(code, buf);
}

oph_status* check_device(const Backend* b, int32_t device_id) noexcept {
  if (device_id == 0) return nullptr;
  return make_error(b, OPH_CODE_OUT_OF_RANGE, "no CPU device %d (the CPU backend has one device, id 0)",
                    static_cast<int>(device_id));
}

// ---------------------------------------------------------------------------------------------------------
// Machine discovery (Linux: /proc/cpuinfo, /proc/meminfo, sysinfo, cgroup v2 limits)

std::string trim(std::string s) {
  const char* ws = " \t\r\n";
  auto b = s.find_first_not_of(ws);
  if (b == std::string::npos) return {};
  auto e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

bool read_first_line(const std::string& path, std::string& out) {
  std::ifstream f(path);
  if (!f) return false;
  std::getline(f, out);
  out = trim(out);
  return true;
}

// The cgroup v2 folder of this process ("" when unknown).
std::string cgroup_dir() {
  std::ifstream f("/proc/self/cgroup");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("0::", 0) == 0) return "/sys/fs/cgroup" + trim(line.substr(3));
  }
  return {};
}

// CPUs this process may run on: the affinity mask, further capped by a cgroup v2 CPU quota.
std::set<int> usable_cpus(int32_t* out_quota_threads) {
  std::set<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int i = 0; i < CPU_SETSIZE; ++i)
      if (CPU_ISSET(i, &set)) cpus.insert(i);
  }
  *out_quota_threads = 0;
  std::string dir = cgroup_dir(), line;
  if (!dir.empty() && read_first_line(dir + "/cpu.max", line)) {
    std::istringstream in(line);
    std::string quota;
    long long period = 0;
    in >> quota >> period;
    if (quota != "max" && period > 0) {
      long long q = std::atoll(quota.c_str());
      if (q > 0) *out_quota_threads = static_cast<int32_t>(std::max(1LL, (q + period - 1) / period));
    }
  }
  return cpus;
}

// Features worth reporting, in the order they are printed; names as /proc/cpuinfo spells them (so they can be
// compared with a manifest's requires.cpu_features).
const char* const kInterestingFeatures[] = {
    // x86
    "sse4_1", "sse4_2", "avx", "f16c", "fma", "avx2", "avx_vnni", "avx512f", "avx512dq", "avx512cd",
    "avx512bw", "avx512vl", "avx512ifma", "avx512vbmi", "avx512_vnni", "avx512_bf16", "avx512_fp16",
    "amx_tile", "amx_bf16", "amx_int8",
    // aarch64
    "asimd", "asimdhp", "asimddp", "fphp", "bf16", "i8mm", "sve", "sve2", "sme",
};

CpuInfo discover() {
  CpuInfo info;

  struct utsname u;
  if (uname(&u) == 0) info.arch = u.machine;

  std::string model, vendor, implementer, hardware, flags;
  std::set<std::pair<int, int>> cores;  // (physical id, core id) of usable CPUs
  int32_t quota_threads = 0;
  std::set<int> usable = usable_cpus(&quota_threads);
  {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    int processor = -1, physical = 0, core = -1;
    auto end_block = [&] {
      if (processor >= 0 && core >= 0 && (usable.empty() || usable.count(processor)))
        cores.insert({physical, core});
      processor = -1;
      physical = 0;
      core = -1;
    };
    while (std::getline(f, line)) {
      auto colon = line.find(':');
      if (colon == std::string::npos) {
        if (trim(line).empty()) end_block();
        continue;
      }
      std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
      if (key == "processor") {
        if (processor >= 0) end_block();
        processor = std::atoi(value.c_str());
      } else if (key == "physical id") {
        physical = std::atoi(value.c_str());
      } else if (key == "core id") {
        core = std::atoi(value.c_str());
      } else if (key == "model name" && model.empty()) {
        model = value;
      } else if (key == "vendor_id" && vendor.empty()) {
        vendor = value;
      } else if (key == "CPU implementer" && implementer.empty()) {
        implementer = value;
      } else if (key == "Hardware" && hardware.empty()) {
        hardware = value;
      } else if ((key == "flags" || key == "Features") && flags.empty()) {
        flags = value;
      }
    }
    end_block();
  }

  if (vendor == "GenuineIntel") vendor = "Intel";
  else if (vendor == "AuthenticAMD") vendor = "AMD";
  else if (vendor.empty() && implementer == "0x41") vendor = "ARM";
  else if (vendor.empty() && !implementer.empty()) vendor = "implementer " + implementer;
  info.vendor = vendor.empty() ? "unknown" : vendor;
  if (model.empty()) model = hardware;
  if (model.empty()) model = info.arch.empty() ? "CPU" : info.arch + " CPU";
  info.name = model;

  std::set<std::string> have;
  {
    std::istringstream in(flags);
    std::string w;
    while (in >> w) have.insert(w);
  }
  for (const char* feat : kInterestingFeatures) {
    if (!have.count(feat)) continue;
    if (!info.features.empty()) info.features += ' ';
    info.features += feat;
  }
  info.fp16 = have.count("avx512_fp16") || have.count("asimdhp");
  info.bf16 = have.count("avx512_bf16") || have.count("amx_bf16") || have.count("bf16");
  info.int8 = have.count("avx512_vnni") || have.count("avx_vnni") || have.count("amx_int8") ||
              have.count("asimddp") || have.count("i8mm");

  long online = sysconf(_SC_NPROCESSORS_ONLN);
  int32_t threads = usable.empty() ? static_cast<int32_t>(online > 0 ? online : 1)
                                   : static_cast<int32_t>(usable.size());
  if (quota_threads > 0) threads = std::min(threads, quota_threads);
  info.threads = std::max<int32_t>(1, threads);
  int32_t physical = cores.empty() ? info.threads : static_cast<int32_t>(cores.size());
  info.cores = std::max<int32_t>(1, std::min(physical, info.threads));
  return info;
}

// Total and available memory in bytes, capped by this process's cgroup v2 memory limit.
void memory(uint64_t* total, uint64_t* avail) {
  *total = 0;
  *avail = 0;
  struct sysinfo si;
  if (sysinfo(&si) == 0) {
    *total = static_cast<uint64_t>(si.totalram) * si.mem_unit;
    *avail = static_cast<uint64_t>(si.freeram + si.bufferram) * si.mem_unit;
  }
  {
    std::ifstream f("/proc/meminfo");
    std::string key;
    uint64_t kb = 0;
    std::string unit;
    while (f >> key >> kb) {
      std::getline(f, unit);
      if (key == "MemAvailable:") {
        *avail = kb * 1024;
        break;
      }
    }
  }
  std::string dir = cgroup_dir(), line;
  if (!dir.empty() && read_first_line(dir + "/memory.max", line) && line != "max" && !line.empty()) {
    uint64_t limit = std::strtoull(line.c_str(), nullptr, 10);
    if (limit > 0 && (*total == 0 || limit < *total)) *total = limit;
    std::string cur;
    if (read_first_line(dir + "/memory.current", cur)) {
      uint64_t used = std::strtoull(cur.c_str(), nullptr, 10);
      uint64_t left = used < limit ? limit - used : 0;
      *avail = std::min(*avail, left);
    }
  }
  if (*avail > *total) *avail = *total;
}

int64_t now_ns() noexcept {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

// ---------------------------------------------------------------------------------------------------------
// oph_device_backend_def functions

oph_status* cpu_enumerate(void* backend, int32_t* out_count, const char** out_inactive_reason) noexcept {
  auto* b = static_cast<Backend*>(backend);
  if (!out_count) return make_error(b, OPH_CODE_INVALID_ARGUMENT, "enumerate: out_count is NULL");
  *out_count = 1;
  if (out_inactive_reason) *out_inactive_reason = nullptr;
  return nullptr;
}

oph_status* cpu_get_properties(void* backend, int32_t device_id, oph_device_properties* out_props) noexcept {
  auto* b = static_cast<Backend*>(backend);
  if (oph_status* s = check_device(b, device_id)) return s;
  if (!out_props) return make_error(b, OPH_CODE_INVALID_ARGUMENT, "get_properties: out_props is NULL");
  if (out_props->struct_size < sizeof(size_t))
    return make_error(b, OPH_CODE_INVALID_ARGUMENT, "get_properties: out_props->struct_size is %zu",
                      out_props->struct_size);
  try {
    oph_device_properties p{};
    p.struct_size = OPH_DEVICE_PROPERTIES_STRUCT_SIZE;
    p.name = b->info.name.c_str();
    p.vendor = b->info.vendor.c_str();
    p.arch = b->info.arch.c_str();
    p.features = b->info.features.c_str();
    memory(&p.total_memory, &p.free_memory);
    p.compute_major = 0;
    p.compute_minor = 0;
    p.multiprocessors = b->info.cores;
    p.threads = b->info.threads;
    p.fp16 = b->info.fp16;
    p.bf16 = b->info.bf16;
    p.int8 = b->info.int8;
    p.alignment = kAlignment;
    p.max_allocation = p.total_memory;
    // Fill only what the caller's struct holds (it may be an older, smaller layout); keep its struct_size.
    size_t n = std::min(out_props->struct_size, OPH_DEVICE_PROPERTIES_STRUCT_SIZE);
    std::memcpy(reinterpret_cast<char*>(out_props) + sizeof(size_t), reinterpret_cast<const char*>(&p) + sizeof(size_t),
                n - sizeof(size_t));
    return nullptr;
  } catch (const std::exception& e) {
    return make_error(b, OPH_CODE_INTERNAL, "get_properties: %s", e.what());
  } catch (...) {
    return make_error(b, OPH_CODE_INTERNAL, "get_properties: unknown error");
  }
}

oph_status* cpu_alloc(void* backend, int32_t device_id, size_t bytes, size_t alignment, void** out_ptr) noexcept {
  auto* b = static_cast<Backend*>(backend);
  if (!out_ptr) return make_error(b, OPH_CODE_INVALID_ARGUMENT, "alloc: out_ptr is NULL");
  *out_ptr = nullptr;
  if (oph_status* s = check_device(b, device_id)) return s;
  if (alignment != 0 && (alignment & (alignment - 1)) != 0)
    return make_error(b, OPH_CODE_INVALID_ARGUMENT, "alloc: alignment %zu is not a power of two", alignment);
  const size_t align = std::max<size_t>(kAlignment, alignment);
  // aligned_alloc wants a multiple of the alignment; 0 bytes still gets a distinct, freeable block.
  if (bytes > SIZE_MAX - align)
    return make_error(b, OPH_CODE_RESOURCE_EXHAUSTED, "alloc: %zu bytes is too large", bytes);
  const size_t rounded = bytes == 0 ? align : (bytes + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
  if (!p)
    return make_error(b, OPH_CODE_RESOURCE_EXHAUSTED, "out of host memory allocating %zu bytes (aligned to %zu)",
                      bytes, align);
  *out_ptr = p;
  return nullptr;
}

void cpu_free(void*, int32_t, void* ptr) noexcept { std::free(ptr); }

oph_status* cpu_copy(void* backend, int32_t device_id, int32_t kind, void* dst, const void* src, size_t bytes,
                     void* /*stream: CPU copies are synchronous*/) noexcept {
  auto* b = static_cast<Backend*>(backend);
  if (oph_status* s = check_device(b, device_id)) return s;
  if (kind != OPH_COPY_HOST_TO_DEVICE && kind != OPH_COPY_DEVICE_TO_HOST && kind != OPH_COPY_DEVICE_TO_DEVICE)
    return make_error(b, OPH_CODE_INVALID_ARGUMENT, "copy: unknown copy kind %d", static_cast<int>(kind));
  if (bytes == 0) return nullptr;
  if (!dst || !src)
    return make_error(b, OPH_CODE_INVALID_ARGUMENT, "copy: %s pointer is NULL for a %zu-byte copy",
                      dst ? "source" : "destination", bytes);
  auto d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src);
  if (d < s + bytes && s < d + bytes)
    std::memmove(dst, src, bytes);  // overlapping ranges (possible only device-to-device)
  else
    std::memcpy(dst, src, bytes);
  return nullptr;
}

oph_status* cpu_stream_create(void* backend, int32_t device_id, void** out_stream) noexcept {
  auto* b = static_cast<Backend*>(backend);
  if (oph_status* s = check_device(b, device_id)) return s;
  if (!out_stream) return make_error(b, OPH_CODE_INVALID_ARGUMENT, "stream_create: out_stream is NULL");
  *out_stream = new (std::nothrow) CpuStream();
  if (!*out_stream) return make_error(b, OPH_CODE_RESOURCE_EXHAUSTED, "stream_create: out of memory");
  return nullptr;
}

void cpu_stream_destroy(void*, int32_t, void* stream) noexcept { delete static_cast<CpuStream*>(stream); }

oph_status* cpu_stream_synchronize(void* backend, int32_t device_id, void*) noexcept {
  return check_device(static_cast<Backend*>(backend), device_id);  // all CPU work is already done
}

oph_status* cpu_event_create(void* backend, int32_t device_id, void** out_event) noexcept {
  auto* b = static_cast<Backend*>(backend);
  if (oph_status* s = check_device(b, device_id)) return s;
  if (!out_event) return make_error(b, OPH_CODE_INVALID_ARGUMENT, "event_create: out_event is NULL");
  *out_event = new (std::nothrow) CpuEvent();
  if (!*out_event) return make_error(b, OPH_CODE_RESOURCE_EXHAUSTED, "event_create: out of memory");
  return nullptr;
}

void cpu_event_destroy(void*, int32_t, void* event) noexcept { delete static_cast<CpuEvent*>(event); }

oph_status* cpu_event_record(void* backend, int32_t device_id, void* event, void*) noexcept {
  auto* b = static_cast<Backend*>(backend);
  if (oph_status* s = check_device(b, device_id)) return s;
  if (!event) return make_error(b, OPH_CODE_INVALID_ARGUMENT, "event_record: event is NULL");
  auto* e = static_cast<CpuEvent*>(event);
  e->ns = now_ns();
  e->recorded = true;
  return nullptr;
}

oph_status* cpu_event_synchronize(void* backend, int32_t device_id, void* event) noexcept {
  auto* b = static_cast<Backend*>(backend);
  if (oph_status* s = check_device(b, device_id)) return s;
  if (!event) return make_error(b, OPH_CODE_INVALID_ARGUMENT, "event_synchronize: event is NULL");
  return nullptr;
}

oph_status* cpu_event_elapsed_ms(void* backend, int32_t device_id, void* start, void* end, float* out_ms) noexcept {
  auto* b = static_cast<Backend*>(backend);
  if (oph_status* s = check_device(b, device_id)) return s;
  if (!start || !end || !out_ms)
    return make_error(b, OPH_CODE_INVALID_ARGUMENT, "event_elapsed_ms: NULL %s",
                      !start ? "start event" : !end ? "end event" : "out_ms");
  const auto* s = static_cast<const CpuEvent*>(start);
  const auto* e = static_cast<const CpuEvent*>(end);
  if (!s->recorded || !e->recorded)
    return make_error(b, OPH_CODE_FAILED_PRECONDITION, "event_elapsed_ms: the %s event was never recorded",
                      !s->recorded ? "start" : "end");
  *out_ms = static_cast<float>(static_cast<double>(e->ns - s->ns) / 1e6);
  return nullptr;
}

// ---------------------------------------------------------------------------------------------------------
// Handshake

void cpu_release(void* plugin_state) noexcept { delete static_cast<Backend*>(plugin_state); }

oph_status* cpu_entry(const oph_host_info* host, const oph_plugin_info** out_info) noexcept {
  oph_status* refused = nullptr;
  if (!oph_entry_check(host, out_info, OPH_PLUGIN_NAME, &refused)) return refused;
  const oph_host_services* services = host->services;
  try {
    auto* b = new Backend();
    b->services = services;
    try {
      b->info = discover();
    } catch (...) {
      delete b;
      throw;
    }

    oph_device_backend_def& d = b->def;
    d.struct_size = OPH_DEVICE_BACKEND_DEF_STRUCT_SIZE;
    d.device_type = "cpu";
    d.dl_device_type = OPH_DL_CPU;
    d.backend = b;
    d.enumerate = cpu_enumerate;
    d.get_properties = cpu_get_properties;
    d.alloc = cpu_alloc;
    d.free = cpu_free;
    d.copy = cpu_copy;
    d.stream_create = cpu_stream_create;
    d.stream_destroy = cpu_stream_destroy;
    d.stream_synchronize = cpu_stream_synchronize;
    d.event_create = cpu_event_create;
    d.event_destroy = cpu_event_destroy;
    d.event_record = cpu_event_record;
    d.event_synchronize = cpu_event_synchronize;
    d.event_elapsed_ms = cpu_event_elapsed_ms;
    b->devices[0] = &b->def;

    oph_plugin_info& p = b->plugin;
    p.struct_size = OPH_PLUGIN_INFO_STRUCT_SIZE;
    p.abi_major = OPH_ABI_MAJOR;
    p.minor_built = OPH_ABI_MINOR;
    p.minor_required = 0;
    p.name = OPH_PLUGIN_NAME;
    p.version = OPH_PLUGIN_VERSION;
    p.kind = OPH_PLUGIN_KIND_DEVICE_BACKEND;
    p.ops = nullptr;
    p.num_ops = 0;
    p.devices = b->devices;
    p.num_devices = 1;
    p.plugin_state = b;
    p.release = cpu_release;

    if (OPH_HAS_FIELD(oph_host_services, services, log) && services->log) {
      std::string line = b->info.name + " (" + b->info.vendor + ", " + b->info.arch + "), " +
                         std::to_string(b->info.cores) + " cores / " + std::to_string(b->info.threads) +
                         " threads, features: " + (b->info.features.empty() ? "none" : b->info.features);
      services->log(services->host, OPH_LOG_DEBUG, OPH_PLUGIN_NAME, line.c_str());
    }
    *out_info = &b->plugin;
    return nullptr;
  } catch (const std::exception& e) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "%s: initialisation failed: %s", OPH_PLUGIN_NAME, e.what());
    return services->status_create(OPH_CODE_INTERNAL, buf);
  } catch (...) {
    return services->status_create(OPH_CODE_INTERNAL, OPH_PLUGIN_NAME ": initialisation failed");
  }
}

}  // namespace

OPH_DEFINE_PLUGIN_ENTRY(cpu_entry)
