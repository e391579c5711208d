// Per-node hooks of the executor loop (executor.cpp): profiling, lifecycle checks, numerics checks, value dumps,
// kernel debug mode (node_debug.hpp) and a run's node observer (Session::run with a NodeObserver). The loop
// calls before() and after() around every node's compute when any hook is on, and nothing when all are off,
// so the hot path stays the bare compute calls. Every run path (sequential or parallel scheduling, static or
// dynamic shapes, If/Loop/Scan bodies) goes through the same loop and so through the same hooks.
#pragma once

#include "exec/node_debug.hpp"
#include "exec/session_impl.hpp"

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ophost {

// Throws Error(kInvalidArgument) "check-numerics: <what> holds NaN at [i,j] (element k of n, float32 [..])"
// when a floating-point tensor in host memory holds a NaN or an infinity; other dtypes pass.
void check_finite(const oph_tensor& t, const std::string& what);

// The wall-clock deadline of the run in progress on this thread: set by Session::Impl::run from
// SessionOptions::run_timeout_ms (the earlier of its own and an enclosing run's), and around every node the loop
// runs with hooks, so an If/Loop/Scan body run on an inter-op worker inherits it.
struct Deadline {
  std::chrono::steady_clock::time_point at = std::chrono::steady_clock::time_point::max();  // max(): none
  std::chrono::steady_clock::time_point start{};  // when the run that set it began
  int64_t timeout_ms = 0;                          // the SessionOptions::run_timeout_ms that set it
  bool set() const noexcept { return at != std::chrono::steady_clock::time_point::max(); }
};
const Deadline& current_deadline() noexcept;
class DeadlineScope {
 public:
  explicit DeadlineScope(const Deadline& d) noexcept;
  ~DeadlineScope();
  DeadlineScope(const DeadlineScope&) = delete;
  DeadlineScope& operator=(const DeadlineScope&) = delete;

 private:
  Deadline previous_;
};
// Throws Error(kDeadlineExceeded) when this thread's deadline has passed; `what` names what was about to start.
void check_deadline(const std::string& what);

class RunHooks {
 public:
  using Clock = std::chrono::steady_clock;
  // Which hooks the session's options (profiling, lifecycle checks, numerics, dump, kernel debug mode, deadline)
  // and the run (`observer`: the caller's node observer, or null) turn on; none: the loop runs bare.
  static bool wanted(const Session::Impl& s, const NodeObserver* observer) noexcept;
  // What before() leaves for after() of the same node call (kernel debug mode's poison and input copies).
  struct NodeCall {
    KernelCheck check;
  };
  // `concurrent`: nodes may finish on several threads at once (parallel scheduling). `observer`: called after
  // every node (null: none); it must outlive the hooks. Only the run given it calls it: an If/Loop/Scan body's
  // run has hooks of its own without one.
  RunHooks(Session::Impl& s, const ExecPlan& plan, bool concurrent, const NodeObserver* observer);
  RunHooks(const RunHooks&) = delete;
  RunHooks& operator=(const RunHooks&) = delete;
  // Flushes the run's profile events into the session; a dump of a run that failed writes its index.json
  // ("complete": false).
  ~RunHooks();

  // Lifecycle: Pending -> Ready (every input Finished and not yet Released) -> Running; kernel debug mode:
  // outputs poisoned, inputs copied.
  void before(size_t ni, const oph_compute_context& ctx, NodeCall& call);
  // After a successful compute, before the node's inputs are released: kernel debug mode's checks, numerics of
  // every output in host memory, the dump, the profile event, Running -> Finished and the Released transitions
  // of values whose last reader finished, then the node observer (one call at a time; after one has thrown, no
  // more). What the observer throws propagates (an Error as it is, anything else as Error(kAborted) naming the
  // node).
  void after(size_t ni, const oph_compute_context& ctx, Clock::time_point t0, Clock::time_point t1,
             const NodeCall& call);
  // After the last node of a successful run: the dump's index.json.
  void finish();
  // The run's deadline, for the thread that runs a node (see DeadlineScope).
  const Deadline& deadline() const noexcept { return deadline_; }

 private:
  enum class V : uint8_t { kPending, kLive, kReleased };
  std::unique_lock<std::mutex> lock_if_concurrent();
  void lifecycle_after(size_t ni);  // under the lock
  void observe(size_t ni, const oph_compute_context& ctx);

  Session::Impl& s_;
  const ExecPlan& plan_;
  const bool concurrent_;
  const bool profile_, lifecycle_, numerics_, debug_kernels_;
  std::unique_ptr<ValueDump> dump_;  // SessionOptions::dump_dir
  const NodeObserver* observer_;     // the run's, or null
  bool finished_ = false;
  const Deadline deadline_;
  std::mutex mutex_;  // concurrent runs: guards everything below
  std::vector<Session::Impl::ProfileEvent> events_;
  std::vector<V> state_;
  std::vector<int> readers_left_;
  bool observer_failed_ = false;  // the observer threw: not called again
};

}  // namespace ophost
