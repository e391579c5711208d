// The instances of one model version (each a Session with its own planned arena), one thread per instance
// running it, and the bounded queue of requests waiting for one. A request that finds every instance busy waits
// while fewer than `max_queue` others do; one more is refused at once (the front ends answer 503 with
// Retry-After), so overload never turns into unbounded waiting.
//
// Runs happen on the instance's own thread, never on the HTTP or gRPC thread that received the request: kernel
// libraries keep per-thread state (oneDNN's scratchpad, tens of MB for an image model), so running on whichever
// of the many front-end threads served a request grew RSS by that much per thread (PP-OCRv4 det: +34 MB per new
// thread, 1 GiB after 24 requests over fresh connections).
#pragma once

#include <ophost/runtime.hpp>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace ophost::serve {

class InstancePool {
 public:
  using Clock = std::chrono::steady_clock;
  using Work = std::function<void(Session&)>;

  // Starts one thread per session; each first runs `warmup` on its session. Throws the first warm-up error
  // (after stopping the threads).
  InstancePool(std::vector<std::unique_ptr<Session>> sessions, size_t max_queue, const Work& warmup);
  ~InstancePool();
  InstancePool(const InstancePool&) = delete;
  InstancePool& operator=(const InstancePool&) = delete;

  enum class Wait { kRan, kQueueFull, kTimedOut };
  // Runs `work` on a free instance's thread and returns once it finished (kRan; an exception `work` threw is
  // rethrown here), waiting until `deadline` in the queue when every instance is busy. `queued` is set to the
  // time spent waiting for an instance.
  Wait run(Clock::time_point deadline, const Work& work, Clock::duration& queued);

  size_t size() const noexcept { return sessions_.size(); }
  size_t max_queue() const noexcept { return max_queue_; }
  size_t waiting() const;
  // For metrics (memory_stats is safe during runs).
  const Session& instance(size_t i) const { return *sessions_[i]; }

 private:
  struct Job {
    const Work* work;
    std::condition_variable cv;
    bool started = false, done = false;
    Clock::time_point started_at;
    std::exception_ptr error;
  };
  void worker(size_t index, const Work& warmup);
  void stop_threads();

  std::vector<std::unique_ptr<Session>> sessions_;
  size_t max_queue_;
  mutable std::mutex mutex_;
  std::condition_variable work_cv_;
  std::condition_variable warm_cv_;
  std::deque<Job*> queue_;
  size_t idle_ = 0;
  size_t warmed_ = 0;
  std::exception_ptr warmup_error_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace ophost::serve
