// The executor loop's per-node hooks (run_hooks.hpp).
#include "exec/run_hooks.hpp"

#include <ophost/error.hpp>

#include <spdlog/spdlog.h>

#include <cmath>
#include <cstring>

namespace ophost {

namespace {

// Index of the first element of `p[0..n)` that is not finite (`to_float` converts one element), or -1.
template <class T, class F>
int64_t first_non_finite(const T* p, int64_t n, F to_float, double& value) {
  for (int64_t i = 0; i < n; ++i) {
    double v = to_float(p[i]);
    if (!std::isfinite(v)) {
      value = v;
      return i;
    }
  }
  return -1;
}
double half_to_double(uint16_t h) {  // only finiteness matters here
  if (((h >> 10) & 0x1f) != 0x1f) return 0.0;
  return (h & 0x3ff) ? NAN : ((h & 0x8000) ? -INFINITY : INFINITY);
}
double bf16_to_double(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

}  // namespace

void check_finite(const oph_tensor& t, const std::string& what) {
  if (t.device.device_type != OPH_DL_CPU || t.data == nullptr || t.ndim < 0) return;
  std::vector<int64_t> shape(t.shape, t.shape + t.ndim);
  const int64_t n = shape_numel(shape);
  if (n == 0) return;
  const void* data = static_cast<const char*>(t.data) + t.byte_offset;
  const DType dtype = from_dl(t.dtype);
  int64_t bad = -1;
  double value = 0;
  auto same = [](auto x) { return static_cast<double>(x); };
  switch (dtype) {
    case DType::kFloat32: bad = first_non_finite(static_cast<const float*>(data), n, same, value); break;
    case DType::kFloat64: bad = first_non_finite(static_cast<const double*>(data), n, same, value); break;
    case DType::kFloat16: bad = first_non_finite(static_cast<const uint16_t*>(data), n, half_to_double, value); break;
    case DType::kBFloat16: bad = first_non_finite(static_cast<const uint16_t*>(data), n, bf16_to_double, value); break;
    default: return;
  }
  if (bad < 0) return;
  std::vector<int64_t> idx(shape.size(), 0);
  int64_t rest = bad;
  for (size_t k = shape.size(); k-- > 0;) {
    if (shape[k] > 0) {
      idx[k] = rest % shape[k];
      rest /= shape[k];
    }
  }
  std::string index;
  for (size_t k = 0; k < idx.size(); ++k) index += (k ? "," : "") + std::to_string(idx[k]);
  throw Error(Code::kInvalidArgument, "check-numerics: " + what + " holds " +
                                          (std::isnan(value) ? std::string("NaN") : value > 0 ? "+inf" : "-inf") +
                                          " at [" + index + "] (element " + std::to_string(bad) + " of " +
                                          std::to_string(n) + ", " + dtype_name(dtype) + " " +
                                          shape_to_string(shape) + ")");
}

namespace {
thread_local Deadline t_deadline;
}  // namespace

const Deadline& current_deadline() noexcept { return t_deadline; }
DeadlineScope::DeadlineScope(const Deadline& d) noexcept : previous_(t_deadline) { t_deadline = d; }
DeadlineScope::~DeadlineScope() { t_deadline = previous_; }

void check_deadline(const std::string& what) {
  const Deadline& d = t_deadline;
  if (!d.set()) return;
  const auto now = std::chrono::steady_clock::now();
  if (now < d.at) return;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - d.start).count();
  throw Error(Code::kDeadlineExceeded,
              what + ": not started: the run passed its deadline of " + std::to_string(d.timeout_ms) + " ms (" +
                  std::to_string(ms) + " ms elapsed; SessionOptions::run_timeout_ms, ophost --run-timeout); a "
                  "kernel already running is not interrupted");
}

bool RunHooks::wanted(const Session::Impl& s, const NodeObserver* observer) noexcept {
  return observer != nullptr || s.profiling || s.check_numerics || s.lifecycle_checks() || t_deadline.set() ||
         s.debug_kernels || !s.dump_dir.empty();
}

RunHooks::RunHooks(Session::Impl& s, const ExecPlan& plan, bool concurrent, const NodeObserver* observer)
    : s_(s),
      plan_(plan),
      concurrent_(concurrent),
      profile_(s.profiling),
      lifecycle_(s.lifecycle_checks()),
      numerics_(s.check_numerics),
      debug_kernels_(s.debug_kernels),
      observer_(observer),
      deadline_(t_deadline) {
  if (profile_) events_.reserve(s.nodes.size());
  if (!s.dump_dir.empty()) dump_ = std::make_unique<ValueDump>(s, s.dump_dir);
  if (!lifecycle_) return;
  state_.assign(s.values.size(), V::kPending);
  readers_left_.resize(s.values.size());
  for (size_t v = 0; v < s.values.size(); ++v) {
    readers_left_[v] = static_cast<int>(s.values[v].consumers.size());
    if (s.values[v].producer < 0) state_[v] = V::kLive;  // graph inputs and constants
  }
}

RunHooks::~RunHooks() {
  if (dump_ && !finished_) {
    try {
      dump_->write_index(false);
    } catch (const std::exception& e) {
      spdlog::warn("{}", e.what());
    }
  }
  if (events_.empty()) return;
  std::lock_guard lock(s_.profile_mutex);
  s_.profile_events.insert(s_.profile_events.end(), events_.begin(), events_.end());
}

std::unique_lock<std::mutex> RunHooks::lock_if_concurrent() {
  return concurrent_ ? std::unique_lock<std::mutex>(mutex_) : std::unique_lock<std::mutex>();
}

void RunHooks::finish() {
  finished_ = true;
  if (dump_) dump_->write_index(true);
}

void RunHooks::before(size_t ni, const oph_compute_context& ctx, NodeCall& call) {
  const PreparedNode& pn = s_.nodes[ni];
  if (deadline_.set()) check_deadline(pn.label);
  if (debug_kernels_) call.check.before(s_, plan_, ni, ctx);
  if (!lifecycle_) return;
  auto lock = lock_if_concurrent();
  for (int v : pn.inputs) {
    if (v < 0) continue;
    if (state_[v] == V::kReleased)
      throw Error(Code::kInternal, pn.label + ": reads '" + s_.values[v].name + "', which was already Released");
    if (state_[v] != V::kLive)
      throw Error(Code::kInternal, pn.label + ": reads '" + s_.values[v].name + "' before it was produced");
  }
  spdlog::debug("node {} '{}': Pending -> Ready -> Running", ni, pn.node->name);
}

void RunHooks::after(size_t ni, const oph_compute_context& ctx, Clock::time_point t0, Clock::time_point t1,
                     const NodeCall& call) {
  const PreparedNode& pn = s_.nodes[ni];
  if (debug_kernels_) call.check.after(s_, plan_, ni, ctx);
  if (numerics_) {
    for (size_t o = 0; o < ctx.num_outputs && o < pn.outputs.size(); ++o) {
      if (ctx.outputs[o] && pn.outputs[o] >= 0)
        check_finite(*ctx.outputs[o], pn.label + ": output '" + s_.values[pn.outputs[o]].name + "'");
    }
  }
  if (dump_) dump_->node_done(ni, ctx);
  {
    auto lock = lock_if_concurrent();
    if (profile_) {
      events_.push_back({static_cast<int>(ni),
                         std::chrono::duration<double, std::micro>(t0 - s_.profile_start).count(),
                         std::chrono::duration<double, std::micro>(t1 - t0).count(), &plan_});
    }
    if (lifecycle_) lifecycle_after(ni);
  }
  if (observer_) observe(ni, ctx);
}

void RunHooks::observe(size_t ni, const oph_compute_context& ctx) {
  const PreparedNode& pn = s_.nodes[ni];
  NodeOutputs info;
  info.index = ni;
  info.node = pn.node->name;
  info.op = node_op_name(pn);
  info.pack = node_pack_name(pn);
  info.device = pn.device;
  for (size_t o = 0; o < ctx.num_outputs && o < pn.outputs.size(); ++o) {
    const int v = pn.outputs[o];
    if (v < 0 || !ctx.outputs[o]) continue;
    Tensor copy;
    if (std::string why = host_copy(s_, v, *ctx.outputs[o], copy); why.empty())
      info.outputs.push_back({s_.values[v].name, std::move(copy)});
    else
      info.skipped.push_back(s_.values[v].name + ": " + why);
  }
  auto lock = lock_if_concurrent();
  if (observer_failed_) return;
  try {
    (*observer_)(info);
  } catch (const Error&) {
    observer_failed_ = true;
    throw;
  } catch (const std::exception& e) {
    observer_failed_ = true;
    throw Error(Code::kAborted, pn.label + ": the node observer threw: " + e.what());
  } catch (...) {
    observer_failed_ = true;
    throw Error(Code::kAborted, pn.label + ": the node observer threw an exception that is not a std::exception");
  }
}

void RunHooks::lifecycle_after(size_t ni) {
  const PreparedNode& pn = s_.nodes[ni];
  for (int v : pn.outputs)
    if (v >= 0) state_[v] = V::kLive;
  spdlog::debug("node {} '{}': Running -> Finished", ni, pn.node->name);
  for (int v : pn.inputs) {
    if (v < 0 || s_.values[v].producer < 0) continue;
    if (--readers_left_[v] == 0 && !s_.values[v].graph_output) {
      state_[v] = V::kReleased;
      const ValueMeta& m = plan_.meta[v];
      spdlog::debug("value '{}': Released after node {}{}", s_.values[v].name, ni,
                    m.fully_known() ? " (" + std::to_string(static_cast<size_t>(shape_numel(m.shape)) *
                                                          dtype_size(m.dtype)) + " bytes)"
                                    : std::string());
    }
  }
}

}  // namespace ophost
