#include "memory/pool.hpp"

#include <ophost/error.hpp>

#include <algorithm>
#include <bit>
#include <cstdlib>

namespace ophost {

RawAllocator system_allocator() {
  RawAllocator r;
  r.device = "cpu";
  r.alloc = [](size_t bytes, size_t alignment) -> void* {
    size_t a = std::max<size_t>(alignment, 64);
    return std::aligned_alloc(a, std::max<size_t>(a, (bytes + a - 1) / a * a));
  };
  r.free = [](void* p) { std::free(p); };
  return r;
}

namespace {
thread_local MemoryPool* t_scratch_pool = nullptr;
}  // namespace

MemoryPool* current_scratch_pool() noexcept { return t_scratch_pool; }
ScratchPoolScope::ScratchPoolScope(MemoryPool* pool) noexcept : previous_(t_scratch_pool) { t_scratch_pool = pool; }
ScratchPoolScope::~ScratchPoolScope() { t_scratch_pool = previous_; }

MemoryPool::MemoryPool(RawAllocator raw, size_t bytes_limit) : raw_(std::move(raw)) {
  stats_.bytes_limit = static_cast<int64_t>(bytes_limit);
}

void MemoryPool::reserve_ahead(size_t bytes) {
  std::lock_guard lock(mutex_);
  if (ahead_ || bytes == 0) return;
  ahead_ = raw_alloc(bytes, "--mem-pool-size reservation");
  ahead_bytes_ = bytes;
  ++stats_.num_reserves;
}

MemoryPool::~MemoryPool() {
  if (ahead_) raw_.free(ahead_);
  for (auto& [cls, blocks] : cache_)
    for (void* p : blocks) raw_.free(p);
}

void* MemoryPool::raw_alloc(size_t bytes, const std::string& what) {
  if (stats_.bytes_limit > 0 &&
      stats_.total_allocated_bytes + static_cast<int64_t>(bytes) > stats_.bytes_limit) {
    throw Error(Code::kResourceExhausted,
                "out of memory on " + raw_.device + ": " + what + " needs " + std::to_string(bytes) +
                    " bytes, " + std::to_string(stats_.total_allocated_bytes) + " already allocated, limit " +
                    std::to_string(stats_.bytes_limit) + " (SessionOptions::mem_limit, ophost --mem-limit; the "
                    "default is half of physical memory, 0 = none)");
  }
  void* p = raw_.alloc(bytes, 64);
  if (!p) {
    throw Error(Code::kResourceExhausted, "out of memory on " + raw_.device + ": " + what + " needs " +
                                              std::to_string(bytes) + " bytes and the device refused");
  }
  stats_.total_allocated_bytes += static_cast<int64_t>(bytes);
  stats_.max_alloc_size = std::max(stats_.max_alloc_size, static_cast<int64_t>(bytes));
  return p;
}

void* MemoryPool::reserve(size_t bytes, const std::string& what) {
  std::lock_guard lock(mutex_);
  void* p = nullptr;
  if (ahead_ && !ahead_in_use_ && bytes <= ahead_bytes_) {
    ahead_in_use_ = true;
    p = ahead_;
    ++stats_.num_allocs;
    stats_.bytes_in_use += static_cast<int64_t>(bytes);
    stats_.max_bytes_in_use = std::max(stats_.max_bytes_in_use, stats_.bytes_in_use);
    return p;
  }
  p = raw_alloc(std::max<size_t>(bytes, 64), what);
  ++stats_.num_reserves;
  ++stats_.num_allocs;
  stats_.bytes_in_use += static_cast<int64_t>(bytes);
  stats_.max_bytes_in_use = std::max(stats_.max_bytes_in_use, stats_.bytes_in_use);
  return p;
}

void MemoryPool::unreserve(void* p, size_t bytes) {
  if (!p) return;
  std::lock_guard lock(mutex_);
  if (p == ahead_) {  // back to the block reserved ahead; it stays with the pool
    ahead_in_use_ = false;
    stats_.bytes_in_use -= static_cast<int64_t>(bytes);
    return;
  }
  raw_.free(p);
  stats_.bytes_in_use -= static_cast<int64_t>(bytes);
  stats_.total_allocated_bytes -= static_cast<int64_t>(std::max<size_t>(bytes, 64));
}

void* MemoryPool::allocate(size_t bytes, const std::string& what, bool* out_fresh) {
  size_t cls = std::bit_ceil(std::max<size_t>(bytes, 256));
  std::lock_guard lock(mutex_);
  void* p = nullptr;
  auto it = cache_.find(cls);
  if (it != cache_.end() && !it->second.empty()) {
    p = it->second.back();
    it->second.pop_back();
    cached_bytes_ -= cls;
    if (out_fresh) *out_fresh = false;
  } else {
    p = raw_alloc(cls, what);
    if (out_fresh) *out_fresh = true;
  }
  live_[p] = cls;
  ++stats_.num_allocs;
  stats_.bytes_in_use += static_cast<int64_t>(cls);
  stats_.max_bytes_in_use = std::max(stats_.max_bytes_in_use, stats_.bytes_in_use);
  return p;
}

void MemoryPool::deallocate(void* p) {
  if (!p) return;
  std::lock_guard lock(mutex_);
  auto it = live_.find(p);
  if (it == live_.end()) return;
  size_t cls = it->second;
  live_.erase(it);
  stats_.bytes_in_use -= static_cast<int64_t>(cls);
  cache_[cls].push_back(p);
  cached_bytes_ += cls;
}

MemoryStats MemoryPool::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void MemoryPool::set_limit(size_t bytes_limit) {
  std::lock_guard lock(mutex_);
  stats_.bytes_limit = static_cast<int64_t>(bytes_limit);
}

}  // namespace ophost
