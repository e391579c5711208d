#include "instance_pool.hpp"

#include "batching.hpp"

#include <pthread.h>

#include <algorithm>

namespace ophost::serve {

InstancePool::InstancePool(std::vector<std::unique_ptr<Session>> sessions, size_t max_queue, const Work& warmup,
                           BatchPolicy batch)
    : sessions_(std::move(sessions)), max_queue_(max_queue), batch_(batch) {
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
    Job* first = queue_.front();
    queue_.pop_front();
    first->started = true;
    first->started_at = Clock::now();
    std::vector<Job*> jobs = batch_.enabled() ? gather(first, lock) : std::vector<Job*>{first};
    auto now = Clock::now();  // a batched request's queue time includes the wait for the batch to fill
    for (Job* job : jobs) job->started_at = now;
    lock.unlock();
    execute(session, jobs);
    lock.lock();
    for (Job* job : jobs) {
      job->done = true;
      job->cv.notify_one();  // under the lock: the job (on the caller's stack) outlives this call
    }
  }
}

std::vector<InstancePool::Job*> InstancePool::gather(Job* first, std::unique_lock<std::mutex>& lock) {
  std::vector<Job*> jobs{first};
  int64_t rows = batch_rows(*first->feeds);
  if (rows == 0 || rows >= batch_.max_batch) return jobs;
  auto until = Clock::now() + batch_.delay;
  for (;;) {
    for (auto it = queue_.begin(); it != queue_.end() && rows < batch_.max_batch;) {
      int64_t r = batch_rows(*(*it)->feeds);
      if (rows + r <= batch_.max_batch && batch_compatible(*first->feeds, *(*it)->feeds)) {
        rows += r;
        (*it)->started = true;
        jobs.push_back(*it);
        it = queue_.erase(it);
      } else {
        ++it;
      }
    }
    if (rows >= batch_.max_batch || stop_) break;
    size_t seen = queue_.size();
    if (!work_cv_.wait_until(lock, until, [&] { return stop_ || queue_.size() > seen; })) break;
  }
  return jobs;
}

void InstancePool::execute(Session& session, const std::vector<Job*>& jobs) {
  auto t0 = Clock::now();
  try {
    if (jobs.size() == 1) {
      *jobs.front()->outputs = session.run(*jobs.front()->feeds);
    } else {
      std::vector<const std::vector<NamedTensor>*> parts;
      std::vector<int64_t> rows;
      for (Job* job : jobs) {
        parts.push_back(job->feeds);
        rows.push_back(batch_rows(*job->feeds));
      }
      std::vector<std::vector<NamedTensor>> split = split_batch(session.run(stack_batch(parts)), rows);
      for (size_t i = 0; i < jobs.size(); ++i) *jobs[i]->outputs = std::move(split[i]);
    }
  } catch (...) {
    for (Job* job : jobs) job->error = std::current_exception();
  }
  auto computed = Clock::now() - t0;
  runs_.fetch_add(1, std::memory_order_relaxed);
  for (Job* job : jobs) {
    job->timing.computed = computed;
    job->timing.batch = jobs.size();
  }
}

InstancePool::Wait InstancePool::run(Clock::time_point deadline, const std::vector<NamedTensor>& feeds,
                                     std::vector<NamedTensor>& outputs, Timing& timing) {
  Job job;
  job.feeds = &feeds;
  job.outputs = &outputs;
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
  timing = job.timing;
  timing.queued = job.started_at - t0;
  if (job.error) std::rethrow_exception(job.error);
  return Wait::kRan;
}

size_t InstancePool::waiting() const {
  std::lock_guard lock(mutex_);
  return queue_.size();
}

}  // namespace ophost::serve
