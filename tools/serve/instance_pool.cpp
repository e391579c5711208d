#include "instance_pool.hpp"

namespace ophost::serve {

InstancePool::InstancePool(std::vector<std::unique_ptr<Session>> sessions, size_t max_queue)
    : sessions_(std::move(sessions)), max_queue_(max_queue) {
  for (size_t i = sessions_.size(); i-- > 0;) free_.push_back(i);
}

InstancePool::Lease::~Lease() {
  if (pool_) pool_->release(index_);
}

InstancePool::Wait InstancePool::acquire(Clock::time_point deadline, std::optional<Lease>& lease) {
  std::unique_lock lock(mutex_);
  if (free_.empty() || waiting_ > 0) {
    if (waiting_ >= max_queue_) return Wait::kQueueFull;
    ++waiting_;
    bool got = freed_.wait_until(lock, deadline, [&] { return !free_.empty(); });
    --waiting_;
    if (!got) return Wait::kTimedOut;
  }
  size_t index = free_.back();
  free_.pop_back();
  lease.emplace(Key{}, this, index);
  return Wait::kGranted;
}

void InstancePool::release(size_t index) {
  {
    std::lock_guard lock(mutex_);
    free_.push_back(index);
  }
  freed_.notify_one();
}

size_t InstancePool::waiting() const {
  std::lock_guard lock(mutex_);
  return waiting_;
}

size_t InstancePool::busy() const {
  std::lock_guard lock(mutex_);
  return sessions_.size() - free_.size();
}

}  // namespace ophost::serve
