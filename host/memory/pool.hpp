// Per-device memory pool on top of a backend's raw allocation: arenas reserved for static memory plans, and a
// caching size-class pool for dynamic shapes and scratch. Statistics use ONNX Runtime's names.
#pragma once

#include <ophost/memory_stats.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace ophost {

// Raw allocation of one device (the device backend's alloc/free, or the system allocator).
struct RawAllocator {
  std::string device = "cpu";
  std::function<void*(size_t bytes, size_t alignment)> alloc;
  std::function<void(void*)> free;
};

// The system allocator, 64-byte aligned.
RawAllocator system_allocator();

class MemoryPool;
// The pool the host services' scratch_alloc serves from on this thread: the running session's CPU pool, or
// null outside a run (scratch then comes from a process-wide pool).
MemoryPool* current_scratch_pool() noexcept;
// Sets current_scratch_pool() for the life of the scope (the executor around a run, the intra-op pool's
// workers around the chunks of a caller's parallel_for, the inter-op workers around a node).
class ScratchPoolScope {
 public:
  explicit ScratchPoolScope(MemoryPool* pool) noexcept;
  ~ScratchPoolScope();
  ScratchPoolScope(const ScratchPoolScope&) = delete;
  ScratchPoolScope& operator=(const ScratchPoolScope&) = delete;

 private:
  MemoryPool* previous_;
};

class MemoryPool {
 public:
  explicit MemoryPool(RawAllocator raw, size_t bytes_limit = 0);
  ~MemoryPool();
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;

  // An arena of `bytes` for a static plan (counted in num_reserves). `what` names the user in errors.
  // Throws Error(kResourceExhausted) past bytes_limit, naming `what` and the sizes.
  void* reserve(size_t bytes, const std::string& what);
  // Takes `bytes` from the device now (--mem-pool-size): later arena reservations that fit are served from this
  // block while it is free, without going back to the device.
  void reserve_ahead(size_t bytes);
  void unreserve(void* p, size_t bytes);
  // Size-class cached allocation (rounded up to a power of two >= 256 bytes, 64-byte aligned); cached blocks are
  // reused. *out_fresh (when given) tells whether the block had to come from the device (a cache miss).
  // Throws Error(kResourceExhausted) past bytes_limit, naming `what` and the sizes.
  void* allocate(size_t bytes, const std::string& what, bool* out_fresh = nullptr);
  void deallocate(void* p);

  MemoryStats stats() const;
  void set_limit(size_t bytes_limit);
  const std::string& device() const noexcept { return raw_.device; }

 private:
  void* raw_alloc(size_t bytes, const std::string& what);
  RawAllocator raw_;
  mutable std::mutex mutex_;
  MemoryStats stats_{};
  std::map<size_t, std::vector<void*>> cache_;  // size class -> free blocks
  std::map<void*, size_t> live_;                // block -> size class
  size_t cached_bytes_ = 0;
  void* ahead_ = nullptr;  // block reserved ahead
  size_t ahead_bytes_ = 0;
  bool ahead_in_use_ = false;
};

}  // namespace ophost
