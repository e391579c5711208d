// The instances of one model version (each a Session with its own planned arena) and the bounded queue of
// requests waiting for one. A request that finds every instance busy waits while fewer than `max_queue` others
// do; one more is refused at once (the front ends answer 503 with Retry-After), so overload never turns into
// unbounded waiting.
#pragma once

#include <ophost/runtime.hpp>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace ophost::serve {

class InstancePool {
 public:
  using Clock = std::chrono::steady_clock;

  InstancePool(std::vector<std::unique_ptr<Session>> sessions, size_t max_queue);

  // Only the pool makes leases (the key's type is private to it).
  class Key {
    friend class InstancePool;
    Key() = default;
  };

  // An instance held by one request; given back when destroyed.
  class Lease {
   public:
    Lease(Key, InstancePool* pool, size_t index) : pool_(pool), index_(index) {}
    Lease(Lease&& other) noexcept : pool_(other.pool_), index_(other.index_) { other.pool_ = nullptr; }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    Session& session() const { return *pool_->sessions_[index_]; }

   private:
    InstancePool* pool_;
    size_t index_;
  };

  enum class Wait { kGranted, kQueueFull, kTimedOut };
  // Takes a free instance, waiting until `deadline` in the queue when none is free. `lease` is set only for
  // kGranted.
  Wait acquire(Clock::time_point deadline, std::optional<Lease>& lease);

  size_t size() const noexcept { return sessions_.size(); }
  size_t max_queue() const noexcept { return max_queue_; }
  size_t waiting() const;
  size_t busy() const;
  // For warm-up and metrics (memory_stats is safe during runs).
  Session& instance(size_t i) const { return *sessions_[i]; }

 private:
  void release(size_t index);

  std::vector<std::unique_ptr<Session>> sessions_;
  size_t max_queue_;
  mutable std::mutex mutex_;
  std::condition_variable freed_;
  std::vector<size_t> free_;
  size_t waiting_ = 0;
};

}  // namespace ophost::serve
