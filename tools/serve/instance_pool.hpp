// The instances of one model version (each a Session with its own planned arena), one thread per instance
// running it, and the bounded queue of requests waiting for one. A request that finds every instance busy waits
// while fewer than `max_queue` others do; one more is refused at once (the front ends answer 503 with
// Retry-After), so overload never turns into unbounded waiting.
//
// With a batch policy (config max_batch and max_queue_delay_us), an instance thread that picks a request waits up
// to the delay for more compatible ones (batching.hpp) and runs them as one batch of at most max_batch rows.
//
// Runs happen on the instance's own thread, never on the HTTP or gRPC thread that received the request: kernel
// libraries keep per-thread state (oneDNN's scratchpad, tens of MB for an image model), so running on whichever
// of the many front-end threads served a request grew RSS by that much per thread (PP-OCRv4 det: +34 MB per new
// thread, 1 GiB after 24 requests over fresh connections).
#pragma once

#include <ophost/runtime.hpp>

#include <atomic>
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

struct BatchPolicy {
  int64_t max_batch = 0;  // rows (dim 0) of a batch at most; 0: no batching
  std::chrono::microseconds delay{0};  // how long the first request of a batch waits for others; 0: no batching
  bool enabled() const noexcept { return max_batch > 0 && delay.count() > 0; }
};

class InstancePool {
 public:
  using Clock = std::chrono::steady_clock;
  using Work = std::function<void(Session&)>;

  // Starts one thread per session; each first runs `warmup` on its session. Throws the first warm-up error
  // (after stopping the threads).
  InstancePool(std::vector<std::unique_ptr<Session>> sessions, size_t max_queue, const Work& warmup,
               BatchPolicy batch = {});
  ~InstancePool();
  InstancePool(const InstancePool&) = delete;
  InstancePool& operator=(const InstancePool&) = delete;

  enum class Wait { kRan, kQueueFull, kTimedOut };
  struct Timing {
    Clock::duration queued{};    // waiting for an instance (and, batched, for the batch to fill)
    Clock::duration computed{};  // the run (batched: the whole batch's run)
    size_t batch = 1;            // requests in the run
  };
  // Runs the session on `feeds` on a free instance's thread and returns once it finished (kRan; the run's
  // exception is rethrown here), waiting until `deadline` in the queue when every instance is busy.
  Wait run(Clock::time_point deadline, const std::vector<NamedTensor>& feeds, std::vector<NamedTensor>& outputs,
           Timing& timing);
  // Runs so far (fewer than requests when batches formed).
  uint64_t runs() const noexcept { return runs_.load(std::memory_order_relaxed); }

  size_t size() const noexcept { return sessions_.size(); }
  size_t max_queue() const noexcept { return max_queue_; }
  size_t waiting() const;
  // For metrics (memory_stats is safe during runs).
  const Session& instance(size_t i) const { return *sessions_[i]; }

 private:
  struct Job {
    const std::vector<NamedTensor>* feeds;
    std::vector<NamedTensor>* outputs;
    std::condition_variable cv;
    bool started = false, done = false;
    Clock::time_point started_at;
    Timing timing;
    std::exception_ptr error;
  };
  void worker(size_t index, const Work& warmup);
  // The first job's batch: more compatible queued jobs, waiting up to the policy's delay (lock held).
  std::vector<Job*> gather(Job* first, std::unique_lock<std::mutex>& lock);
  void execute(Session& session, const std::vector<Job*>& jobs);
  void stop_threads();

  std::vector<std::unique_ptr<Session>> sessions_;
  size_t max_queue_;
  BatchPolicy batch_;
  std::atomic<uint64_t> runs_{0};
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
