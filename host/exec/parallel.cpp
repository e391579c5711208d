#include "exec/parallel.hpp"

#include <ophost/services.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <memory>

namespace ophost {

void compute_dependencies(const Session::Impl& s, ExecPlan& plan) {
  const size_t n = s.nodes.size();
  std::vector<std::vector<int>> succ(n);
  auto add = [&](int from, int to) {
    if (from < 0 || to < 0 || from == to) return;
    succ[from].push_back(to);
  };
  // Data edges.
  for (size_t ni = 0; ni < n; ++ni)
    for (int v : s.nodes[ni].inputs)
      if (v >= 0) add(s.values[v].producer, static_cast<int>(ni));
  // Memory edges: when two arena values overlap in memory, the later one's producer waits for every reader (and
  // the producer) of the earlier one. The sequential plan guarantees their step ranges do not overlap (except
  // an in-place output, whose producer is its input's last reader).
  constexpr size_t kNone = std::numeric_limits<size_t>::max();
  struct Placed {
    int v;
    size_t lo, hi;
    int first, last;
  };
  std::vector<Placed> placed;
  for (size_t v = 0; v < s.values.size(); ++v) {
    if (plan.offset[v] == kNone || s.values[v].producer < 0) continue;
    size_t bytes = static_cast<size_t>(shape_numel(plan.meta[v].shape)) * dtype_size(plan.meta[v].dtype);
    bytes = std::max<size_t>((bytes + 63) / 64 * 64, 64);
    placed.push_back({static_cast<int>(v), plan.offset[v], plan.offset[v] + bytes, s.values[v].producer,
                      std::max(s.values[v].last_use, s.values[v].producer)});
  }
  // Sweep in step order, keeping the latest occupant of every byte range: a new value depends only on the
  // occupants it replaces (earlier occupants are ordered before those through the same rule, transitively).
  std::sort(placed.begin(), placed.end(), [](const Placed& a, const Placed& b) {
    return a.first != b.first ? a.first < b.first : a.v < b.v;
  });
  struct Occupant {
    size_t lo, hi;
    int v;
  };
  std::vector<Occupant> occupants, next;
  for (const Placed& b : placed) {
    next.clear();
    for (const Occupant& o : occupants) {
      if (o.hi <= b.lo || b.hi <= o.lo) {
        next.push_back(o);
        continue;
      }
      const ValueSlot& va = s.values[o.v];
      add(va.producer, b.first);
      for (int c : va.consumers) add(c, b.first);
      if (o.lo < b.lo) next.push_back({o.lo, b.lo, o.v});  // the parts b does not cover keep their occupant
      if (b.hi < o.hi) next.push_back({b.hi, o.hi, o.v});
    }
    next.push_back({b.lo, b.hi, b.v});
    occupants.swap(next);
  }
  plan.predecessors.assign(n, 0);
  for (auto& list : succ) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
    for (int t : list) ++plan.predecessors[t];
  }
  plan.successors = std::move(succ);
}

struct InterOpPool::Run {
  Session::Impl* session;
  const ExecPlan* plan;
  const std::function<void(size_t)>* run_node;
  std::unique_ptr<std::atomic<int>[]> pending;
  std::atomic<int> remaining{0};
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  std::exception_ptr error;
  std::mutex done_mutex;
  std::condition_variable done_cv;
  bool done = false;  // guarded by done_mutex; set by whoever finishes the last node
};

InterOpPool::InterOpPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker(); });
}

InterOpPool::~InterOpPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void InterOpPool::push(Task t) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(t);
  }
  cv_.notify_one();
}

void InterOpPool::worker() {
  for (;;) {
    Task t;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_ && queue_.empty()) return;
      t = queue_.back();
      queue_.pop_back();
    }
    execute(t);
  }
}

// Runs node t.node, then keeps going with its first successor that became ready (inline), handing the others to
// the queue.
void InterOpPool::execute(Task t) {
  Run& run = *t.run;
  int node = t.node;
  while (node >= 0) {
    ScratchPoolScope scratch(run.session->pool.get());
    if (!run.failed.load(std::memory_order_acquire)) {
      try {
        (*run.run_node)(static_cast<size_t>(node));
      } catch (...) {
        std::lock_guard lock(run.error_mutex);
        if (!run.error) run.error = std::current_exception();
        run.failed.store(true, std::memory_order_release);
      }
    }
    int next = -1;
    for (int succ : run.plan->successors[node]) {
      if (run.pending[succ].fetch_sub(1, std::memory_order_acq_rel) == 1) {
        if (next < 0) next = succ;
        else push({&run, succ});
      }
    }
    if (run.remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // Last node: after this unlock nobody touches `run` again, so the caller may return and destroy it.
      std::lock_guard lock(run.done_mutex);
      run.done = true;
      run.done_cv.notify_all();
      return;
    }
    node = next;
  }
}

void InterOpPool::run(Session::Impl& session, const ExecPlan& plan, const std::function<void(size_t)>& run_node) {
  const size_t n = session.nodes.size();
  if (n == 0) return;
  Run run;
  run.session = &session;
  run.plan = &plan;
  run.run_node = &run_node;
  run.pending = std::make_unique<std::atomic<int>[]>(n);
  for (size_t i = 0; i < n; ++i) run.pending[i].store(plan.predecessors[i], std::memory_order_relaxed);
  run.remaining.store(static_cast<int>(n), std::memory_order_relaxed);
  int first = -1;
  for (size_t i = 0; i < n; ++i) {
    if (plan.predecessors[i] != 0) continue;
    if (first < 0) first = static_cast<int>(i);
    else push({&run, static_cast<int>(i)});
  }
  execute({&run, first});
  // The caller helps with queued nodes of any run until this run is complete.
  for (;;) {
    {
      std::lock_guard lock(run.done_mutex);
      if (run.done) break;
    }
    Task t{nullptr, -1};
    {
      std::lock_guard lock(mutex_);
      if (!queue_.empty()) {
        t = queue_.back();
        queue_.pop_back();
      }
    }
    if (t.run) {
      execute(t);
      continue;
    }
    std::unique_lock lock(run.done_mutex);
    run.done_cv.wait_for(lock, std::chrono::microseconds(200), [&] { return run.done; });
  }
  if (run.error) std::rethrow_exception(run.error);
}

}  // namespace ophost
