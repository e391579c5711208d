#include "core/thread_pool.hpp"

#include "memory/pool.hpp"

#include <algorithm>
#include <memory>

namespace ophost {

namespace {
thread_local bool t_in_pool_task = false;

std::mutex g_pool_mutex;
std::unique_ptr<ThreadPool>& global_slot() {
  static std::unique_ptr<ThreadPool> pool;
  return pool;
}
int default_threads() { return std::max(1u, std::thread::hardware_concurrency()); }
}  // namespace

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::run_chunks(Job& job) {
  for (;;) {
    size_t c = job.next.fetch_add(1, std::memory_order_relaxed);
    if (c >= job.chunks) return;
    size_t b = c * job.chunk;
    size_t e = std::min(job.n, b + job.chunk);
    job.fn(job.user, b, e);
    job.done.fetch_add(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::worker_loop() {
  size_t seen = 0;
  for (;;) {
    Job* job = nullptr;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || (job_ && generation_ != seen); });
      if (stop_) return;
      seen = generation_;
      job = job_;
      ++active_;
    }
    t_in_pool_task = true;
    {
      ScratchPoolScope scratch(job->scratch_pool);
      run_chunks(*job);
    }
    t_in_pool_task = false;
    {
      std::lock_guard lock(mutex_);
      --active_;
    }
    finished_.notify_all();
  }
}

void ThreadPool::parallel_for(size_t n, size_t grain, oph_parallel_fn fn, void* user) {
  if (n == 0 || !fn) return;
  grain = std::max<size_t>(grain, 1);
  size_t max_chunks = (n + grain - 1) / grain;
  std::unique_lock submit(submit_mutex_, std::defer_lock);
  if (workers_.empty() || max_chunks <= 1 || t_in_pool_task || !submit.try_lock()) {
    fn(user, 0, n);  // inline: no workers, too little work, nested, or the pool is busy with another call
    return;
  }
  Job job;
  job.fn = fn;
  job.user = user;
  job.n = n;
  job.scratch_pool = current_scratch_pool();
  job.chunks = std::min(max_chunks, static_cast<size_t>(threads()) * 4);
  job.chunk = (n + job.chunks - 1) / job.chunks;
  job.chunks = (n + job.chunk - 1) / job.chunk;
  {
    std::lock_guard lock(mutex_);
    job_ = &job;
    ++generation_;
  }
  wake_.notify_all();
  t_in_pool_task = true;
  run_chunks(job);
  t_in_pool_task = false;
  std::unique_lock lock(mutex_);
  job_ = nullptr;  // late workers see no job
  finished_.wait(lock, [&] { return active_ == 0; });
}

ThreadPool& ThreadPool::global() {
  std::lock_guard lock(g_pool_mutex);
  auto& slot = global_slot();
  if (!slot) slot = std::make_unique<ThreadPool>(default_threads());
  return *slot;
}

void ThreadPool::set_global_threads(int threads) {
  std::lock_guard lock(g_pool_mutex);
  global_slot() = std::make_unique<ThreadPool>(threads > 0 ? threads : default_threads());
}

}  // namespace ophost
