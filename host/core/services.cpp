#include <ophost/services.hpp>

#include "core/thread_pool.hpp"
#include "memory/pool.hpp"

#include <spdlog/spdlog.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <new>

struct oph_status {
  int32_t code;
  std::string message;
};

namespace ophost {

const char* code_name(Code code) noexcept {
  switch (code) {
    case Code::kOk: return "OK";
    case Code::kCancelled: return "CANCELLED";
    case Code::kUnknown: return "UNKNOWN";
    case Code::kInvalidArgument: return "INVALID_ARGUMENT";
    case Code::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
    case Code::kNotFound: return "NOT_FOUND";
    case Code::kAlreadyExists: return "ALREADY_EXISTS";
    case Code::kPermissionDenied: return "PERMISSION_DENIED";
    case Code::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case Code::kFailedPrecondition: return "FAILED_PRECONDITION";
    case Code::kAborted: return "ABORTED";
    case Code::kOutOfRange: return "OUT_OF_RANGE";
    case Code::kUnimplemented: return "UNIMPLEMENTED";
    case Code::kInternal: return "INTERNAL";
    case Code::kUnavailable: return "UNAVAILABLE";
    case Code::kDataLoss: return "DATA_LOSS";
  }
  return "UNKNOWN";
}

namespace {

oph_status* status_create(int32_t code, const char* message) {
  if (code == OPH_CODE_OK) return nullptr;
  try {
    // The one place the host allocates a status; its receiver frees it with status_destroy.
    return std::make_unique<oph_status>(oph_status{code, message ? message : ""}).release();
  } catch (...) {
    return nullptr;  // out of memory while reporting an error: nothing better can be done
  }
}
int32_t status_code(const oph_status* s) { return s ? s->code : OPH_CODE_OK; }
const char* status_message(const oph_status* s) { return s ? s->message.c_str() : ""; }
void status_destroy(oph_status* s) { std::unique_ptr<oph_status> owned(s); }

void log_line(void*, int32_t level, const char* plugin, const char* message) {
  auto lvl = spdlog::level::info;
  switch (level) {
    case OPH_LOG_TRACE: lvl = spdlog::level::trace; break;
    case OPH_LOG_DEBUG: lvl = spdlog::level::debug; break;
    case OPH_LOG_INFO: lvl = spdlog::level::info; break;
    case OPH_LOG_WARN: lvl = spdlog::level::warn; break;
    default: lvl = spdlog::level::err; break;
  }
  spdlog::log(lvl, "[{}] {}", plugin ? plugin : "plugin", message ? message : "");
}

void parallel_for(void*, size_t n, size_t grain, oph_parallel_fn fn, void* user) {
  ThreadPool::global().parallel_for(n, grain, fn, user);
}

// Scratch: a block of the running session's CPU pool (size classes, cached), else of a process-wide pool. The
// 64 bytes in front of the pointer handed out record the owning pool, so the block goes back to it from any
// thread. Only host (CPU) memory: for another device scratch_alloc returns NULL.
constexpr size_t kScratchHeader = 64;
MemoryPool& process_scratch_pool() {
  static MemoryPool pool(system_allocator());
  return pool;
}
void* scratch_alloc(void*, oph_device device, size_t bytes) {
  if (device.device_type != OPH_DL_CPU || bytes > SIZE_MAX / 2) return nullptr;
  MemoryPool* pool = current_scratch_pool();
  if (!pool) pool = &process_scratch_pool();
  try {
    auto* block = static_cast<std::byte*>(pool->allocate(bytes + kScratchHeader, "scratch"));
    std::memcpy(block, &pool, sizeof pool);
    return block + kScratchHeader;
  } catch (const std::exception& e) {
    spdlog::warn("scratch_alloc of {} bytes failed: {}", bytes, e.what());
    return nullptr;
  }
}
void scratch_free(void*, oph_device, void* p) {
  if (!p) return;
  std::byte* block = static_cast<std::byte*>(p) - kScratchHeader;
  MemoryPool* pool = nullptr;
  std::memcpy(&pool, block, sizeof pool);
  pool->deallocate(block);
}

// Values the host itself provides to every pack: "threads" = the intra-op pool's thread count (packs with their
// own threading runtime, such as oneDNN's OpenMP, size it to match instead of oversubscribing).
// The header promises a returned string stays valid until the plugin's release: every value ever returned is
// interned here and never freed or overwritten (a std::set's nodes never move), so a later call, for any
// plugin or key, cannot change a string a pack still holds. The set grows only by distinct values.
const char* config_get(void*, const char*, const char* key) {
  if (!key || std::string_view(key) != "threads") return nullptr;
  static std::mutex m;
  static std::set<std::string, std::less<>> interned;
  std::string value = std::to_string(ThreadPool::global().threads());
  std::lock_guard lock(m);
  return interned.insert(std::move(value)).first->c_str();
}

}  // namespace

// The services every plugin receives: parallel_for runs on the process-wide intra-op pool.
oph_host_services g_services = {
    OPH_HOST_SERVICES_STRUCT_SIZE, nullptr, status_create, status_code, status_message, status_destroy, log_line,
    parallel_for,       scratch_alloc, scratch_free, config_get,
};

const oph_host_services* host_services() noexcept { return &g_services; }

oph_status* make_status(Code code, const std::string& message) noexcept {
  return status_create(static_cast<int32_t>(code), message.c_str());
}

std::string consume_status(oph_status* status, Code* out_code) {
  std::unique_ptr<oph_status> owned(status);
  if (out_code) *out_code = status ? static_cast<Code>(status->code) : Code::kOk;
  return status ? status->message : std::string();
}

void throw_if_error(oph_status* status, const std::string& context) {
  if (!status) return;
  Code code = Code::kOk;
  std::string msg = consume_status(status, &code);
  throw Error(code == Code::kOk ? Code::kUnknown : code, context.empty() ? msg : context + ": " + msg);
}

}  // namespace ophost
