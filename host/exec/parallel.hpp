// Parallel execution of a static plan: inter-op workers, atomic readiness counts, dependency edges.
#pragma once

#include "exec/session_impl.hpp"

#include <condition_variable>
#include <exception>
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

  // Runs every node of `plan` with the prepared calls of `r`; returns when all have finished. Rethrows the first
  // kernel error (nodes not yet started are skipped after an error).
  void run(Session::Impl& session, ExecPlan& plan, BoundRun& r);

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
