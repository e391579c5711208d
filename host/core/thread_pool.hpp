// The process-wide intra-op thread pool, offered to kernels as the SDK's parallel_for. The calling thread takes
// part in the work; a parallel_for issued from inside a pool task, or while another parallel_for holds the pool,
// runs inline on the caller (never nested, never oversubscribed).
#pragma once

#include <ophost/ophost_plugin.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

namespace ophost {

class MemoryPool;

class ThreadPool {
 public:
  // `threads` counts the caller: 1 means no worker threads.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const noexcept { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(user, begin, end) over [0, n) in chunks of at least `grain`; returns when all chunks are done.
  void parallel_for(size_t n, size_t grain, oph_parallel_fn fn, void* user);

  // The process-wide pool (created on first use with the default thread count: hardware concurrency).
  static ThreadPool& global();
  // Replaces the process-wide pool; call before sessions run (e.g. from --threads). threads <= 0: default.
  static void set_global_threads(int threads);

 private:
  struct Job {
    oph_parallel_fn fn = nullptr;
    void* user = nullptr;
    size_t n = 0;
    size_t chunk = 0;
    size_t chunks = 0;
    std::atomic<size_t> next{0};
    std::atomic<size_t> done{0};
    MemoryPool* scratch_pool = nullptr;  // the caller's current_scratch_pool(), set on the workers too
  };
  void worker_loop();
  static void run_chunks(Job& job);

  std::vector<std::thread> workers_;
  std::mutex submit_mutex_;  // one parallel_for at a time uses the workers
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable finished_;
  Job* job_ = nullptr;
  size_t generation_ = 0;
  size_t active_ = 0;  // workers currently inside the job
  bool stop_ = false;
};

}  // namespace ophost
