// Parallel execution of a static plan: inter-op workers, atomic readiness counts, dependency edges.
#pragma once

#include "exec/session_impl.hpp"

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ophost {

// Fills plan.successors / plan.predecessors from data edges and arena reuse.
void compute_dependencies(const Session::Impl& session, ExecPlan& plan);

// Workers that execute ready nodes of parallel runs; the calling thread of a run works too.
class InterOpPool {
 public:
  struct Run;  // one run in flight
  explicit InterOpPool(int threads);  // threads including the caller; workers = threads - 1
  ~InterOpPool();
  InterOpPool(const InterOpPool&) = delete;
  InterOpPool& operator=(const InterOpPool&) = delete;

  // Calls run_node(ni) for every node of `plan` in dependency order (the executor's node loop: the node with its
  // hooks); returns when all have finished. Rethrows the first error (nodes not yet started are skipped after
  // an error).
  void run(Session::Impl& session, const ExecPlan& plan, const std::function<void(size_t)>& run_node);

 private:
  struct Task {
    Run* run;
    int node;
  };
  void worker();
  void execute(Task t);
  void push(Task t);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Task> queue_;
  bool stop_ = false;
};

}  // namespace ophost
