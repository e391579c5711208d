// Execution of a prepared session through the C ABI: one node loop (execute_nodes below) that every run path
// goes through, with the per-node hooks of run_hooks.hpp (profiling, lifecycle checks, numerics).
//  - frames say where a node's tensors are:
//    planned (every shape known): one arena per concurrent run, laid out by the static memory plan, and a flat
//    array of prepared calls; a steady-state run allocates nothing.
//    generic (shapes only known while running): each value's buffer comes from the session pool's size classes
//    when it is produced and goes back to the pool's cache as soon as its last consumer has finished, so a
//    steady state of repeating shapes asks the system for nothing but the graph outputs the caller keeps.
//  - scheduling: in file order on the calling thread, or (parallel mode, planned frames) on the inter-op pool in
//    dependency order. If/Loop/Scan bodies are sessions of their own and run through the same loop.
// Over 600 lines on purpose: the frames, the node loop templated over them and the run entry points share
// file-local types (RunState, PlannedFrame, GenericFrame) that would otherwise need a header of their own.
#include "exec/abi_calls.hpp"
#include "exec/memory_plan.hpp"
#include "exec/parallel.hpp"
#include "exec/run_hooks.hpp"
#include "exec/session_impl.hpp"

#include <ophost/services.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <optional>

namespace ophost {

namespace {

struct RunState {
  const ModelLimits* limits = nullptr;  // the session's (max_tensor_bytes applies to shapes known only now)
  std::vector<Tensor> values;
  std::vector<oph_tensor> out_views;
  const std::vector<ValueMeta>* meta = nullptr;
  const std::vector<int>* out_values = nullptr;  // value index of each output of the running node
  const std::vector<ValueSlot>* slots = nullptr;  // the session's values (names, graph_output)
  MemoryPool* pool = nullptr;                     // buffers of intermediate values
  int64_t system_allocs = 0;                      // allocations that reached the system or the device
};

// The tensor of value v produced while running: a graph output is the caller's to keep (its own buffer); an
// intermediate takes a zeroed block of the pool, which returns to the pool's cache when the value is released.
Tensor new_value(RunState& st, int v, DType dtype, std::vector<int64_t> dims) {
  const ValueSlot& slot = (*st.slots)[static_cast<size_t>(v)];
  if (dtype == DType::kString || slot.graph_output || !st.pool) {
    ++st.system_allocs;
    return Tensor(dtype, std::move(dims));
  }
  size_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<size_t>(shape_numel(dims)), dtype_size(dtype), &bytes))
    throw Error(Code::kOutOfRange, "value '" + slot.name + "' of shape " + shape_to_string(dims) + " is too large");
  bool fresh = false;
  void* p = st.pool->allocate(bytes, "value '" + slot.name + "'", &fresh);
  if (fresh) ++st.system_allocs;
  std::memset(p, 0, bytes);
  MemoryPool* pool = st.pool;
  return Tensor::wrap(dtype, std::move(dims),
                      std::shared_ptr<std::byte>(static_cast<std::byte*>(p), [pool](std::byte* b) { pool->deallocate(b); }));
}

oph_status* allocate_output_cb(const oph_compute_context* ctx, size_t index, int32_t ndim, const int64_t* shape) {
  auto* st = static_cast<RunState*>(ctx->host_data);
  if (index >= st->out_values->size() || (*st->out_values)[index] < 0) {
    return make_status(Code::kOutOfRange, "allocate_output: output " + std::to_string(index) + " does not exist");
  }
  if (ndim < 0 || ndim > OPH_MAX_NDIM || (ndim > 0 && !shape)) {
    return make_status(Code::kInvalidArgument, "allocate_output: bad rank " + std::to_string(ndim));
  }
  try {
    int v = (*st->out_values)[index];
    std::vector<int64_t> dims(shape, shape + ndim);
    const ValueMeta& m = (*st->meta)[v];
    if (m.rank_known && m.shape.size() != dims.size()) {
      return make_status(Code::kInvalidArgument, "allocate_output: output " + std::to_string(index) + " has rank " +
                                                     std::to_string(ndim) + " but infer() said " +
                                                     std::to_string(m.shape.size()));
    }
    for (size_t k = 0; m.rank_known && k < dims.size(); ++k) {
      if (dims[k] < 0 || (m.shape[k] >= 0 && m.shape[k] != dims[k])) {
        return make_status(Code::kInvalidArgument, "allocate_output: output " + std::to_string(index) + " asked for " +
                                                       "shape " + shape_to_string(dims) + " but infer() said " +
                                                       shape_to_string(m.shape));
      }
    }
    for (int64_t d : dims)
      if (d < 0) return make_status(Code::kInvalidArgument, "allocate_output: output " + std::to_string(index) +
                                                                " asked for shape " + shape_to_string(dims));
    if (st->limits) {
      try {
        check_tensor_size(m.dtype, dims, *st->limits, "output " + std::to_string(index) + " '" +
                                                          (*st->slots)[static_cast<size_t>(v)].name + "'");
      } catch (const Error& e) {
        return make_status(e.code(), std::string("allocate_output: ") + e.what());
      }
    }
    st->values[v] = new_value(*st, v, m.dtype, std::move(dims));
    st->out_views[index] = st->values[v].view();
    return nullptr;
  } catch (const std::exception& e) {
    return make_status(Code::kResourceExhausted, std::string("allocate_output: ") + e.what());
  }
}

// Planned runs preallocate every output with its inferred shape; a kernel that still asks for an output gets it
// only when the shape is the same, else an error saying so.
oph_status* planned_allocate_output_cb(const oph_compute_context* ctx, size_t index, int32_t ndim,
                                       const int64_t* shape) {
  if (index >= ctx->num_outputs || ctx->outputs[index] == nullptr) {
    return make_status(Code::kOutOfRange, "allocate_output: output " + std::to_string(index) + " does not exist");
  }
  const oph_tensor& t = *ctx->outputs[index];
  bool same = ndim == t.ndim && (ndim == 0 || shape != nullptr);
  for (int32_t k = 0; same && k < ndim; ++k) same = shape[k] == t.shape[k];
  if (same) return nullptr;
  std::vector<int64_t> want(t.shape, t.shape + std::max(0, t.ndim));
  std::vector<int64_t> got;
  if (shape && ndim > 0 && ndim <= OPH_MAX_NDIM) got.assign(shape, shape + ndim);
  return make_status(Code::kInvalidArgument, "allocate_output: output " + std::to_string(index) + " asked for shape " +
                                                 (ndim < 0 || ndim > OPH_MAX_NDIM ? "of rank " + std::to_string(ndim)
                                                                                  : shape_to_string(got)) +
                                                 " but infer() said " + shape_to_string(want) +
                                                 " (the output is preallocated with that shape)");
}

void check_input(const ModelValueInfo& info, const Tensor& t) {
  if (info.dtype != DType::kUndefined && t.dtype() != info.dtype) {
    throw Error(Code::kInvalidArgument, "input '" + info.name + "' is " + dtype_name(t.dtype()) +
                                            " but the model expects " + dtype_name(info.dtype));
  }
  if (!info.has_shape) return;  // rank not declared: anything goes
  if (info.shape.size() != t.shape().size()) {
    throw Error(Code::kInvalidArgument, "input '" + info.name + "' has rank " + std::to_string(t.shape().size()) +
                                            " (shape " + shape_to_string(t.shape()) + ") but the model expects " +
                                            shape_to_string(info.shape));
  }
  for (size_t k = 0; k < info.shape.size(); ++k) {
    if (info.shape[k] >= 0 && info.shape[k] != t.shape()[k]) {
      throw Error(Code::kInvalidArgument, "input '" + info.name + "' has shape " + shape_to_string(t.shape()) +
                                              " but the model expects " + shape_to_string(info.shape) +
                                              " (dimension " + std::to_string(k) + ")");
    }
  }
}

}  // namespace


namespace {
// Zero-element values still get a non-NULL pointer (NULL tells a kernel its output is unallocated).
alignas(64) unsigned char g_empty_buffer[64];

// Planned runs: every node's call was prepared when the run was bound (BoundRun::calls); nothing to do around a
// node, and nodes may run on several threads at once.
struct PlannedFrame {
  static constexpr bool kConcurrent = true;
  BoundRun& r;
  oph_compute_context* prepare(size_t ni) noexcept { return &r.calls[ni]; }
  void finish(size_t) noexcept {}
  void release(size_t) noexcept {}
};

// Generic runs: a node's input views are made when it is about to run, its outputs allocated with the shapes
// inference could give (the others by the kernel through allocate_output), and values released when their last
// reader finishes. Sequential only.
struct GenericFrame {
  static constexpr bool kConcurrent = false;
  const Session::Impl& s;
  const std::vector<const Tensor*>& bound;
  RunState st;
  std::vector<int> remaining;  // per value: readers still to run
  std::vector<oph_tensor> in_views;
  std::vector<const oph_tensor*> in_ptrs;
  std::vector<oph_tensor*> out_ptrs;
  oph_compute_context ctx{};

  GenericFrame(const Session::Impl& session, const ExecPlan& plan, const std::vector<const Tensor*>& b)
      : s(session), bound(b) {
    st.values.resize(s.values.size());
    st.limits = &s.model.limits;
    st.meta = &plan.meta;
    st.slots = &s.values;
    st.pool = s.pool.get();
    remaining.resize(s.values.size());
    for (size_t v = 0; v < s.values.size(); ++v) remaining[v] = static_cast<int>(s.values[v].consumers.size());
  }

  oph_compute_context* prepare(size_t ni) {
    const PreparedNode& pn = s.nodes[ni];
    spdlog::trace("node {} Ready -> Running: {}", ni, pn.label);
    in_views.assign(pn.inputs.size(), oph_tensor{});
    in_ptrs.assign(pn.inputs.size(), nullptr);
    for (size_t i = 0; i < pn.inputs.size(); ++i) {
      int v = pn.inputs[i];
      if (v < 0) continue;
      const ValueSlot& slot = s.values[v];
      const Tensor* t = slot.constant ? slot.constant : slot.graph_input >= 0 ? bound[slot.graph_input] : &st.values[v];
      if (t->empty()) {
        throw Error(Code::kInternal, pn.label + ": input '" + slot.name + "' was released or never produced");
      }
      in_views[i] = t->view();
      in_ptrs[i] = &in_views[i];
    }
    st.out_views.assign(pn.outputs.size(), oph_tensor{});
    out_ptrs.assign(pn.outputs.size(), nullptr);
    for (size_t o = 0; o < pn.outputs.size(); ++o) {
      int v = pn.outputs[o];
      if (v < 0) continue;
      const ValueMeta& m = (*st.meta)[v];
      if (m.fully_known()) {
        st.values[v] = new_value(st, v, m.dtype, m.shape);
        st.out_views[o] = st.values[v].view();
      } else {
        st.out_views[o] = oph_tensor{};
        st.out_views[o].dtype = to_dl(m.dtype);
        st.out_views[o].device = {OPH_DL_CPU, 0};
      }
      out_ptrs[o] = &st.out_views[o];
    }
    st.out_values = &pn.outputs;
    ctx = cpu_compute_context(in_ptrs, out_ptrs, &allocate_output_cb, &st);
    return &ctx;
  }

  void finish(size_t ni) const {
    const PreparedNode& pn = s.nodes[ni];
    for (size_t o = 0; o < pn.outputs.size(); ++o) {
      int v = pn.outputs[o];
      if (v >= 0 && st.values[v].empty()) {
        throw Error(Code::kInternal, pn.label + ": the kernel did not produce output " + std::to_string(o) + " '" +
                                         s.values[v].name + "' (call allocate_output for data-dependent shapes)");
      }
    }
    spdlog::trace("node {} Running -> Finished", ni);
  }

  // Releases every value whose last consumer just finished (and outputs nobody reads).
  void release(size_t ni) {
    const PreparedNode& pn = s.nodes[ni];
    for (int v : pn.inputs) {
      if (v < 0) continue;
      if (--remaining[v] == 0 && !s.values[v].graph_output && s.values[v].producer >= 0) {
        st.values[v] = Tensor();
        spdlog::trace("value '{}' Released after node {}", s.values[v].name, ni);
      }
    }
    for (int v : pn.outputs) {
      if (v >= 0 && remaining[v] == 0 && !s.values[v].graph_output) st.values[v] = Tensor();
    }
  }
};

// One node with hooks: out of line, so that the bare path below stays the compute call alone.
template <class Frame>
[[gnu::noinline]] void run_node_hooked(const Session::Impl& s, Frame& f, size_t ni, RunHooks* hooks,
                                       oph_compute_context* ctx) {
  const PreparedNode& pn = s.nodes[ni];
  RunHooks::NodeCall call;
  hooks->before(ni, *ctx, call);
  const DeadlineScope deadline(hooks->deadline());  // for a body run by this node on an inter-op worker
  const auto t0 = RunHooks::Clock::now();
  oph_status* st = compute_node(pn, ctx);
  const auto t1 = RunHooks::Clock::now();
  if (st) throw_if_error(st, pn.label);
  f.finish(ni);
  hooks->after(ni, *ctx, t0, t1, call);
  f.release(ni);
}

// One node: its call from the frame, the hooks around the compute, the frame's checks and releases after it.
template <class Frame>
inline void run_node(const Session::Impl& s, Frame& f, size_t ni, RunHooks* hooks) {
  const PreparedNode& pn = s.nodes[ni];
  oph_compute_context* ctx = f.prepare(ni);
  if (!hooks) {
    if (oph_status* st = compute_node(pn, ctx)) throw_if_error(st, pn.label);
    f.finish(ni);
    f.release(ni);
    return;
  }
  run_node_hooked(s, f, ni, hooks, ctx);
}

// The node loop every run goes through: the session's hooks (when any is on) around every node, nodes in file
// order, or on the inter-op pool in dependency order when the session runs in parallel mode and the frame allows
// it. `observer`: the run's node observer (null: none), given to this run's hooks only.
template <class Frame>
void execute_nodes(Session::Impl& s, const ExecPlan& plan, Frame& f, InterOpPool* inter_op,
                   const NodeObserver* observer) {
  const bool parallel = inter_op != nullptr && Frame::kConcurrent;
  std::optional<RunHooks> hooks;
  if (RunHooks::wanted(s, observer)) hooks.emplace(s, plan, parallel, observer);
  RunHooks* h = hooks ? &*hooks : nullptr;
  if (parallel) {
    inter_op->run(s, plan, [&](size_t ni) { run_node(s, f, ni, h); });
  } else {
    const size_t n = s.nodes.size();
    for (size_t ni = 0; ni < n; ++ni) run_node(s, f, ni, h);
  }
  if (h) h->finish();
}

}  // namespace


BoundRun::~BoundRun() {
  if (pool && arena) pool->unreserve(arena, arena_bytes);
  for (auto& [dev, a] : device_arenas)
    if (a.base) a.pool->unreserve(a.base, a.bytes);
}

std::shared_ptr<ExecPlan> Session::Impl::make_plan(std::vector<std::vector<int64_t>> input_shapes,
                                                   std::vector<ValueMeta> meta) const {
  auto plan = std::make_shared<ExecPlan>();
  plan->input_shapes = std::move(input_shapes);
  plan->meta = std::move(meta);
  constexpr size_t kNone = std::numeric_limits<size_t>::max();
  plan->offset.assign(values.size(), kNone);
  // A static plan needs every produced value's size; string tensors live outside arenas.
  for (size_t v = 0; v < values.size(); ++v) {
    if (values[v].producer < 0) continue;
    const ValueMeta& m = plan->meta[v];
    if (!m.fully_known() || dtype_size(m.dtype) == 0) return plan;
  }
  // Buffers: every produced value that is not a graph output (those go straight into the caller's tensors).
  std::vector<int> root(values.size(), -1);
  std::vector<PlanBuffer> buffers;
  std::vector<int> buffer_of(values.size(), -1);
  std::vector<std::string> buffer_device;  // per buffer
  auto bytes_of = [&](int v) { return static_cast<size_t>(shape_numel(plan->meta[v].shape)) * dtype_size(plan->meta[v].dtype); };
  // Kernel debug mode: a guard zone after every buffer, poisoned before and checked after each compute.
  const size_t guard = debug_kernels ? kDebugGuardBytes : 0;
  for (size_t ni = 0; ni < nodes.size(); ++ni) {
    const PreparedNode& pn = nodes[ni];
    for (size_t o = 0; o < pn.outputs.size(); ++o) {
      int v = pn.outputs[o];
      if (v < 0 || values[v].graph_output) continue;
      int last = std::max(values[v].last_use, static_cast<int>(ni));
      // MAY_INPLACE: reuse the input's buffer when this node is the input's last reader and sizes match.
      int shared = -1, shared_input = -1;
      for (const AliasSchema& al : pn.schema->aliases) {
        if (al.kind != OPH_ALIAS_MAY_INPLACE || al.output != o) continue;
        if (al.input >= pn.inputs.size()) continue;
        int in = pn.inputs[al.input];
        if (in < 0 || buffer_of[in] < 0 || values[in].last_use != static_cast<int>(ni)) continue;
        if (bytes_of(in) != bytes_of(v)) continue;
        // The input must not be read again by this node through another slot.
        if (std::count(pn.inputs.begin(), pn.inputs.end(), in) != 1) continue;
        shared = buffer_of[in];
        shared_input = in;
      }
      if (shared >= 0 && buffer_device[shared] == values[v].device) {
        buffer_of[v] = shared;
        buffers[shared].last = std::max(buffers[shared].last, last);
        ++plan->inplace;
        plan->inplace_values.emplace_back(v, shared_input);
      } else {
        buffer_of[v] = static_cast<int>(buffers.size());
        buffers.push_back({bytes_of(v) + guard, static_cast<int>(ni), last});
        buffer_device.push_back(values[v].device);
      }
    }
  }
  // One arena per device: plan each device's buffers on their own.
  std::map<std::string, std::vector<size_t>> by_device;
  for (size_t b = 0; b < buffers.size(); ++b) by_device[buffer_device[b]].push_back(b);
  std::vector<size_t> buffer_offset(buffers.size(), 0);
  for (const auto& [dev, ids] : by_device) {
    std::vector<PlanBuffer> sub;
    for (size_t b : ids) sub.push_back(buffers[b]);
    MemoryPlan mp = plan_memory(sub);
    for (size_t k = 0; k < ids.size(); ++k) buffer_offset[ids[k]] = mp.offsets[k];
    if (dev == "cpu") {
      plan->arena_bytes = mp.peak;
      plan->lower_bound = mp.lower_bound;
    } else {
      plan->device_arena_bytes[dev] = mp.peak;
    }
  }
  for (size_t v = 0; v < values.size(); ++v)
    if (buffer_of[v] >= 0) plan->offset[v] = buffer_offset[buffer_of[v]];
  plan->placed = static_cast<size_t>(std::count_if(buffer_of.begin(), buffer_of.end(), [](int b) { return b >= 0; }));
  plan->planned = true;
  if (inter_op) compute_dependencies(*this, *plan);
  return plan;
}

std::unique_ptr<BoundRun> Session::Impl::bind(const ExecPlan& plan) {
  auto r = std::make_unique<BoundRun>();
  r->pool = pool.get();
  r->arena_bytes = plan.arena_bytes;
  std::string what = "arena for " + model.path.string() + " (" + std::to_string(plan.arena_bytes) + " bytes planned)";
  if (plan.arena_bytes) {
    // Name the node whose output is the largest planned value, so an out-of-memory error points somewhere.
    int biggest = -1;
    size_t biggest_bytes = 0;
    for (size_t v = 0; v < values.size(); ++v) {
      if (plan.offset[v] == std::numeric_limits<size_t>::max()) continue;
      size_t b = static_cast<size_t>(shape_numel(plan.meta[v].shape)) * dtype_size(plan.meta[v].dtype);
      if (b > biggest_bytes) {
        biggest_bytes = b;
        biggest = static_cast<int>(v);
      }
    }
    if (biggest >= 0) {
      what += "; largest value '" + values[biggest].name + "' (" + std::to_string(biggest_bytes) +
              " bytes) written by node '" + nodes[values[biggest].producer].node->name + "'";
    }
    r->arena = pool->reserve(plan.arena_bytes, what);
  }
  for (const auto& [dev, bytes] : plan.device_arena_bytes) {
    MemoryPool* dp = device_pools.at(dev).get();
    r->device_arenas[dev] = {dp, bytes ? dp->reserve(bytes, "arena on " + dev + " for " + model.path.string()) : nullptr,
                             bytes};
  }
  r->tensors.resize(values.size());
  for (size_t v = 0; v < values.size(); ++v) {
    oph_tensor& t = r->tensors[v];
    const ValueMeta& m = plan.meta[v];
    if (values[v].constant) {
      t = values[v].constant->view();
      if (values[v].device_constant) {  // uploaded to a device at load
        t.data = values[v].device_constant;
        t.device = {values[v].dl_type, 0};
      }
      continue;
    }
    t = oph_tensor{};
    t.device = {values[v].dl_type, 0};
    t.dtype = to_dl(m.dtype);
    t.ndim = static_cast<int32_t>(m.shape.size());
    t.shape = const_cast<int64_t*>(m.shape.data());  // the plan outlives its bound runs; nobody writes shapes
    char* base = static_cast<char*>(values[v].device == "cpu" ? r->arena : r->device_arenas.at(values[v].device).base);
    if (plan.offset[v] != std::numeric_limits<size_t>::max()) t.data = base + plan.offset[v];
    if (!t.data && shape_numel(m.shape) == 0) t.data = g_empty_buffer;
  }
  size_t nin = 0, nout = 0;
  for (const PreparedNode& pn : nodes) {
    nin += pn.inputs.size();
    nout += pn.outputs.size();
  }
  r->input_ptrs.reserve(nin);
  r->output_ptrs.reserve(nout);
  r->calls.resize(nodes.size());
  for (size_t ni = 0; ni < nodes.size(); ++ni) {
    const PreparedNode& pn = nodes[ni];
    oph_compute_context& c = r->calls[ni];
    c = oph_compute_context{};
    c.struct_size = OPH_COMPUTE_CONTEXT_STRUCT_SIZE;
    c.services = host_services();
    c.num_inputs = pn.inputs.size();
    c.inputs = r->input_ptrs.data() + r->input_ptrs.size();
    for (int v : pn.inputs) r->input_ptrs.push_back(v < 0 ? nullptr : &r->tensors[v]);
    c.num_outputs = pn.outputs.size();
    c.outputs = r->output_ptrs.data() + r->output_ptrs.size();
    for (int v : pn.outputs) r->output_ptrs.push_back(v < 0 ? nullptr : &r->tensors[v]);
    c.device = {pn.dl_type, 0};
    c.allocate_output = &planned_allocate_output_cb;  // every shape is planned: only checks the request
  }
  r->bound.resize(input_values.size());
  return r;
}

void Session::Impl::run_planned(ExecPlan& plan, std::vector<NamedTensor>& outputs,
                                const std::vector<const Tensor*>& bound, const NodeObserver* observer) {
  std::unique_ptr<BoundRun> r;
  {
    std::lock_guard lock(plan.free_mutex);
    if (!plan.free_runs.empty()) {
      r = std::move(plan.free_runs.back());
      plan.free_runs.pop_back();
    }
  }
  int64_t allocs = 0;
  if (!r) {
    r = bind(plan);
    ++allocs;
  }
  for (size_t i = 0; i < input_values.size(); ++i)
    r->tensors[input_values[i]].data = const_cast<void*>(bound[i]->data());  // kernels only read inputs
  // Graph outputs produced by nodes are written straight into the caller's tensors.
  for (size_t o = 0; o < output_values.size(); ++o) {
    int v = output_values[o];
    if (values[v].producer < 0) continue;
    const ValueMeta& m = plan.meta[v];
    NamedTensor& out = outputs[o];
    bool reuse = out.tensor.dtype() == m.dtype && out.tensor.shape().size() == m.shape.size() &&
                 std::equal(m.shape.begin(), m.shape.end(), out.tensor.shape().begin()) &&
                 (out.tensor.data() != nullptr || out.tensor.numel() == 0) && out.tensor.data_use_count() == 1;
    if (!reuse) {
      out.tensor = Tensor(m.dtype, m.shape);
      ++allocs;
    }
    r->tensors[v].data = out.tensor.data() ? out.tensor.data() : g_empty_buffer;
  }
  struct Return {
    ExecPlan& plan;
    std::unique_ptr<BoundRun>& r;
    ~Return() {
      std::lock_guard lock(plan.free_mutex);
      plan.free_runs.push_back(std::move(r));
    }
  } give_back{plan, r};
  PlannedFrame frame{*r};
  execute_nodes(*this, plan, frame, inter_op.get(), observer);
  for (size_t o = 0; o < output_values.size(); ++o) {
    const ValueSlot& slot = values[output_values[o]];
    if (slot.producer >= 0) continue;
    outputs[o].tensor = slot.constant ? slot.constant->clone() : bound[slot.graph_input]->clone();
    ++allocs;
  }
  last_run_allocs.store(allocs, std::memory_order_relaxed);
}

void Session::Impl::reserve_static_arena() {
  if (!static_exec || !static_exec->planned) return;
  auto r = bind(*static_exec);
  std::lock_guard lock(static_exec->free_mutex);
  static_exec->free_runs.push_back(std::move(r));
}

bool Session::Impl::lifecycle_checks() const noexcept {
#ifndef NDEBUG
  return true;  // debug builds always assert the node lifecycle
#else
  return spdlog::should_log(spdlog::level::debug);
#endif
}

void Session::Impl::run(const std::vector<NamedTensor>& inputs, std::vector<NamedTensor>& outputs,
                        const NodeObserver* observer) {
  ScratchPoolScope scratch(pool.get());  // kernels' scratch_alloc serves from this session's pool
  std::optional<DeadlineScope> deadline;  // SessionOptions::run_timeout_ms, unless an enclosing run ends earlier
  if (run_timeout_ms > 0) {
    Deadline d;
    d.start = std::chrono::steady_clock::now();
    d.at = d.start + std::chrono::milliseconds(run_timeout_ms);
    d.timeout_ms = run_timeout_ms;
    if (d.at < current_deadline().at) deadline.emplace(d);
  }
  // Bind inputs by name: each graph input exactly once, nothing extra. The outermost run on a thread reuses one
  // vector; a run nested in it (an If/Loop/Scan body) has its own.
  thread_local std::vector<const Tensor*> outer_bound;
  thread_local int depth = 0;
  std::vector<const Tensor*> nested_bound;
  std::vector<const Tensor*>& bound = depth == 0 ? outer_bound : nested_bound;
  struct Depth {
    int& d;
    explicit Depth(int& x) : d(x) { ++d; }
    ~Depth() { --d; }
  } nesting(depth);
  bound.assign(input_values.size(), nullptr);
  const size_t required = input_infos.size();
  for (const NamedTensor& nt : inputs) {
    auto named = [&](const ValueInfo& v) { return v.name == nt.name; };
    size_t i = static_cast<size_t>(std::find_if(input_infos.begin(), input_infos.end(), named) - input_infos.begin());
    if (i == required) {
      i = required + static_cast<size_t>(std::find_if(overridable_infos.begin(), overridable_infos.end(), named) -
                                         overridable_infos.begin());
    }
    if (i == bound.size()) {
      std::string names;
      for (const ValueInfo& v : input_infos) names += (names.empty() ? "" : ", ") + v.name;
      for (const ValueInfo& v : overridable_infos)
        names += (names.empty() ? "" : ", ") + v.name + " (overridable initializer)";
      if (std::find(initializer_inputs.begin(), initializer_inputs.end(), nt.name) != initializer_inputs.end()) {
        throw Error(Code::kInvalidArgument,
                    "input '" + nt.name + "' is an initializer the model also lists as a graph input; with IR version " +
                        std::to_string(model.ir_version) +
                        " (before 4, every initializer had to be listed so) it is a constant, not an overridable "
                        "default: leave it out, or re-export the model with IR >= 4. The model's inputs are: " +
                        (names.empty() ? "(none)" : names));
      }
      throw Error(Code::kInvalidArgument, "unknown input '" + nt.name + "'; the model's inputs are: " +
                                              (names.empty() ? std::string("(none)") : names));
    }
    if (bound[i]) throw Error(Code::kInvalidArgument, "input '" + nt.name + "' given more than once");
    check_input(model.inputs[i], nt.tensor);
    bound[i] = &nt.tensor;
  }
  for (size_t i = 0; i < bound.size(); ++i) {
    if (bound[i]) continue;
    if (i >= required) bound[i] = &model.input_defaults[i - required];  // an overridable initializer not fed
    else throw Error(Code::kInvalidArgument, "missing input '" + input_infos[i].name + "'");
  }
  if (outputs.size() != output_values.size()) {
    outputs.clear();
    for (const ValueInfo& info : output_infos) outputs.push_back({info.name, Tensor()});
  } else {
    for (size_t o = 0; o < outputs.size(); ++o)
      if (outputs[o].name != output_infos[o].name) outputs[o].name = output_infos[o].name;
  }

  // The plan for these input shapes: the declared one, the last one used, or a new one.
  std::shared_ptr<ExecPlan> plan;
  {
    std::lock_guard lock(plan_mutex);
    auto matches = [&](const std::shared_ptr<ExecPlan>& p) {
      if (!p) return false;
      for (size_t i = 0; i < bound.size(); ++i) {
        auto s = bound[i]->shape();
        if (p->input_shapes[i].size() != s.size() || !std::equal(s.begin(), s.end(), p->input_shapes[i].begin()))
          return false;
      }
      return true;
    };
    if (matches(static_exec)) plan = static_exec;
    else if (matches(last_exec)) plan = last_exec;
  }
  if (!plan) {
    std::vector<std::vector<int64_t>> key;
    std::vector<ValueMeta> in_meta;
    for (const Tensor* t : bound) {
      key.emplace_back(t->shape().begin(), t->shape().end());
      ValueMeta vm;
      vm.dtype = t->dtype();
      vm.rank_known = true;
      vm.shape = key.back();
      in_meta.push_back(std::move(vm));
    }
    plan = make_plan(std::move(key), infer_all(in_meta));
    spdlog::debug("plan for input shapes of {}: {}", model.path.string(),
                  plan->planned ? "static (arena " + std::to_string(plan->arena_bytes) + " bytes)"
                                : std::string("dynamic (shapes known only while running)"));
    std::lock_guard lock(plan_mutex);
    last_exec = plan;
  }
  if (profiling) {
    std::lock_guard lock(profile_mutex);
    if (std::find(profile_plans.begin(), profile_plans.end(), plan) == profile_plans.end())
      profile_plans.push_back(plan);
  }
  if (plan->planned) run_planned(*plan, outputs, bound, observer);
  else run_generic(*plan, bound, outputs, observer);
}

void Session::Impl::run_generic(const ExecPlan& plan, const std::vector<const Tensor*>& bound,
                                std::vector<NamedTensor>& outputs, const NodeObserver* observer) {
  if (copy_count || !device_pools.empty()) {
    throw Error(Code::kUnimplemented, model.path.string() + ": some shapes are only known while running, and device "
                                      "placement needs a static memory plan; give the inputs fixed shapes or run on "
                                      "cpu only");
  }
  GenericFrame frame(*this, plan, bound);
  execute_nodes(*this, plan, frame, inter_op.get(), observer);
  int64_t allocs = 0;
  for (size_t o = 0; o < output_values.size(); ++o) {
    int v = output_values[o];
    const ValueSlot& slot = values[v];
    if (slot.constant || slot.graph_input >= 0) ++allocs;
    outputs[o].tensor = slot.constant ? slot.constant->clone()
                        : slot.graph_input >= 0 ? bound[slot.graph_input]->clone()
                                                : frame.st.values[v];
  }
  last_run_allocs.store(allocs + frame.st.system_allocs, std::memory_order_relaxed);
}

}  // namespace ophost
