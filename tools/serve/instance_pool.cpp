#include "instance_pool.hpp"

#include <pthread.h>

#include <algorithm>

namespace ophost::serve {

InstancePool::InstancePool(std::vector<std::unique_ptr<Session>> sessions, size_t max_queue, const Work& warmup)
    : sessions_(std::move(sessions)), max_queue_(max_queue) {
  for (size_t i = 0; i < sessions_.size(); ++i) threads_.emplace_back([this, i, &warmup] { worker(i, warmup); });
  std::unique_lock lock(mutex_);
  warm_cv_.wait(lock, [&] { return warmed_ == sessions_.size(); });
  if (warmup_error_) {
    lock.unlock();
    stop_threads();
    std::rethrow_exception(warmup_error_);
  }
}

InstancePool::~InstancePool() { stop_threads(); }

void InstancePool::stop_threads() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : threads_)
    if (t.joinable()) t.join();
}

void InstancePool::worker(size_t index, const Work& warmup) {
  pthread_setname_np(pthread_self(), "ophost-instance");
  Session& session = *sessions_[index];
  std::exception_ptr error;
  try {
    warmup(session);
  } catch (...) {
    error = std::current_exception();
  }
  std::unique_lock lock(mutex_);
  if (error && !warmup_error_) warmup_error_ = error;
  ++warmed_;
  warm_cv_.notify_all();
  for (;;) {
    ++idle_;
    work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    --idle_;
    if (queue_.empty()) return;  // stopping, nothing left to run
    Job* job = queue_.front();
    queue_.pop_front();
    job->started = true;
    job->started_at = Clock::now();
    lock.unlock();
    try {
      (*job->work)(session);
    } catch (...) {
      job->error = std::current_exception();
    }
    lock.lock();
    job->done = true;
    job->cv.notify_one();  // under the lock: the job (on the caller's stack) outlives this call
  }
}

InstancePool::Wait InstancePool::run(Clock::time_point deadline, const Work& work, Clock::duration& queued) {
  Job job;
  job.work = &work;
  auto t0 = Clock::now();
  std::unique_lock lock(mutex_);
  if (queue_.size() >= max_queue_ + idle_) return Wait::kQueueFull;
  queue_.push_back(&job);
  work_cv_.notify_one();
  auto started = [&] { return job.started; };
  if (deadline == Clock::time_point::max()) {
    job.cv.wait(lock, started);
  } else if (!job.cv.wait_until(lock, deadline, started)) {
    queue_.erase(std::find(queue_.begin(), queue_.end(), &job));  // still queued: it never runs
    return Wait::kTimedOut;
  }
  job.cv.wait(lock, [&] { return job.done; });
  queued = job.started_at - t0;
  if (job.error) std::rethrow_exception(job.error);
  return Wait::kRan;
}

size_t InstancePool::waiting() const {
  std::lock_guard lock(mutex_);
  return queue_.size();
}

}  // namespace ophost::serve
