// Session internals: a loaded model resolved against the registry, with shapes inferred by each op's own
// infer(), kernels created once per node, and a flat array of prepared calls executed in order.
#pragma once

#include "memory/pool.hpp"
#include "model/model.hpp"
#include "plugins/plugin_set.hpp"

#include <ophost/op_schema.hpp>
#include <ophost/ophost_plugin.h>
#include <ophost/services.hpp>
#include <ophost/runtime.hpp>

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ophost {

class OpRegistry;
struct OpEntry;
class ControlFlowKernel;
namespace isolation {
class IsolatedPacks;
}

// What is known about one value before running: its dtype and (possibly partial) shape.
struct ValueMeta {
  DType dtype = DType::kUndefined;
  bool rank_known = false;
  std::vector<int64_t> shape;  // OPH_DIM_UNKNOWN for unknown dims
  bool fully_known() const noexcept;
};

struct ValueSlot {
  std::string name;
  const Tensor* constant = nullptr;  // initializer (owned by the model)
  int producer = -1;                 // node index, -1 for graph inputs and initializers
  int graph_input = -1;              // index in Model::inputs
  bool graph_output = false;
  int last_use = -1;                 // index of the last node that reads it
  std::vector<int> consumers;
  // Where the value lives: "cpu" (host memory) or a device type; dl_type is its DLPack device type.
  std::string device = "cpu";
  int32_t dl_type = OPH_DL_CPU;
  // A constant uploaded to a device at load (`constant` still points to its host copy, for infer()).
  void* device_constant = nullptr;
  // Kept channel-blocked by nchwc-layout (Model::blocked_values): its bytes are not in NCHW order.
  bool blocked_layout = false;
};

// Resolved attribute values of one node, in the op's schema order (points into the Model and into this
// struct; valid as long as the session).
struct ResolvedAttrs {
  std::vector<oph_attr_value> values;
  std::vector<std::vector<const char*>> string_lists;
  std::vector<oph_tensor> tensors;
};

struct PreparedNode {
  const Node* node = nullptr;
  const OpEntry* entry = nullptr;    // registry entry (schema and pack)
  const OpSchema* schema = nullptr;  // entry->schema: what the host reads about the op
  const OpCalls* calls = nullptr;    // the functions its kernel is called through: &schema->calls, or a layer's
                                     // in their place (pack isolation's proxy)
  std::vector<int> inputs;   // value index, -1 for absent optional inputs
  std::vector<int> outputs;  // value index, -1 for absent optional outputs
  ResolvedAttrs attrs;
  void* state = nullptr;
  std::string label;         // "node 'n' (domain::op, opset 13) from pack 'p' (path)"
  std::unique_ptr<std::mutex> serialize;  // set when the op asks for OPH_OP_FLAG_SERIALIZE_COMPUTE
  std::string device = "cpu";              // where the kernel runs (placement)
  int32_t dl_type = OPH_DL_CPU;
  bool is_copy = false;                    // a Copy node inserted at a device boundary
  ControlFlowKernel* control = nullptr;    // If/Loop/Scan run by the host (also `state`); owned by the session
};

struct ExecPlan;

// Everything one run needs for a static plan: the arena and the prepared calls with pointers resolved. Reused
// run after run (one per concurrent caller), so a steady-state run allocates nothing.
struct BoundRun {
  MemoryPool* pool = nullptr;
  void* arena = nullptr;
  size_t arena_bytes = 0;
  std::vector<oph_tensor> tensors;             // per value
  std::vector<const oph_tensor*> input_ptrs;   // all nodes' inputs, flat
  std::vector<oph_tensor*> output_ptrs;        // all nodes' outputs, flat
  std::vector<oph_compute_context> calls;      // per node
  std::vector<const Tensor*> bound;            // graph inputs of the current run
  struct DeviceArena {
    MemoryPool* pool;
    void* base;
    size_t bytes;
  };
  std::map<std::string, DeviceArena> device_arenas;  // non-cpu devices
  BoundRun() = default;
  BoundRun(const BoundRun&) = delete;
  BoundRun& operator=(const BoundRun&) = delete;
  ~BoundRun();
};

// Shapes for one set of graph-input shapes, and (when every shape is known) the static memory plan.
struct ExecPlan {
  std::vector<std::vector<int64_t>> input_shapes;
  std::vector<ValueMeta> meta;  // per value
  bool planned = false;         // static plan available (all shapes known, no string tensors)
  std::vector<size_t> offset;   // per value: arena offset, SIZE_MAX when the value is not in the arena
  size_t arena_bytes = 0;
  size_t lower_bound = 0;
  size_t placed = 0;
  size_t inplace = 0;
  std::vector<std::pair<int, int>> inplace_values;   // {output value, input value whose buffer it shares}
  std::map<std::string, size_t> device_arena_bytes;  // non-cpu devices: arena size (offsets are per device)
  std::mutex free_mutex;
  std::vector<std::unique_ptr<BoundRun>> free_runs;
  // Parallel mode: data edges plus the edges that keep shared arena memory safe (a value's buffer is reused only
  // after every reader of the previous occupant has finished).
  std::vector<std::vector<int>> successors;  // per node
  std::vector<int> predecessors;             // per node: count
};

class InterOpPool;

// Value metadata inferred for one set of graph-input shapes.
struct ShapePlan {
  std::vector<std::vector<int64_t>> input_shapes;  // key: actual graph input shapes
  std::vector<ValueMeta> values;
};

struct OPHOST_LOCAL Session::Impl {
  std::shared_ptr<const PluginSet> plugins;  // keeps the libraries loaded while the session lives
  Model model;
  std::deque<Tensor> constants;  // values computed at load (Constant nodes); ValueSlot::constant points here
  // Placement: Copy nodes (their Node records and states), device pools, and what frees uploaded constants.
  std::deque<Node> synthetic_nodes;
  std::vector<std::shared_ptr<void>> copy_states;
  size_t copy_count = 0;
  std::map<std::string, std::unique_ptr<MemoryPool>> device_pools;  // per non-cpu device
  std::function<void()> release_device_memory;
  std::vector<ValueSlot> values;
  std::vector<PreparedNode> nodes;
  std::vector<std::unique_ptr<ControlFlowKernel>> control_kernels;  // PreparedNode::control points here
  std::vector<ValueInfo> input_infos, output_infos;
  // Model::inputs[required_inputs..]: overridable initializers, bound to Model::input_defaults when not fed.
  std::vector<ValueInfo> overridable_infos;
  std::vector<std::string> initializer_inputs;  // Model::initializer_inputs
  std::vector<int> output_values;  // value index of each graph output
  std::vector<int> input_values;   // value index of each graph input
  ShapePlan static_plan;           // from the model's declared shapes
  bool static_plan_complete = false;
  std::unique_ptr<MemoryPool> pool;
  std::mutex plan_mutex;
  std::shared_ptr<ExecPlan> static_exec;   // plan of the declared shapes (when complete)
  std::shared_ptr<ExecPlan> last_exec;     // plan of the most recent other input shapes
  std::atomic<int64_t> last_run_allocs{0};
  bool check_numerics = false;  // SessionOptions::check_numerics (run_hooks.hpp; graph inputs in runtime.cpp)
  int64_t run_timeout_ms = 0;   // SessionOptions::run_timeout_ms (run_hooks.hpp)
  std::string dump_dir;         // SessionOptions::dump_dir (run_hooks.hpp; set for the outermost session only)
  bool debug_kernels = false;   // SessionOptions::debug_kernels (run_hooks.hpp)
  std::unique_ptr<InterOpPool> inter_op;  // parallel mode only
  std::unique_ptr<isolation::IsolatedPacks> isolation;  // SessionOptions::isolate_packs (isolation/proxy.hpp)

  // Profiling: one event per node run (appended after each run).
  struct ProfileEvent {
    int node;
    double ts_us;
    double dur_us;
    const ExecPlan* plan;  // shapes of that run (plans are kept alive in profile_plans)
  };
  bool profiling = false;
  std::chrono::steady_clock::time_point profile_start;
  mutable std::mutex profile_mutex;
  std::vector<ProfileEvent> profile_events;
  std::vector<std::shared_ptr<ExecPlan>> profile_plans;

  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl();

  // Runs every node's infer over the graph, given graph input metadata.
  std::vector<ValueMeta> infer_all(const std::vector<ValueMeta>& graph_inputs) const;
  // `observer`: Session::run's node observer (null: none); an If/Loop/Scan body's run is given none.
  void run(const std::vector<NamedTensor>& inputs, std::vector<NamedTensor>& outputs,
           const NodeObserver* observer = nullptr);
  std::shared_ptr<ExecPlan> make_plan(std::vector<std::vector<int64_t>> input_shapes,
                                      std::vector<ValueMeta> meta) const;
  std::unique_ptr<BoundRun> bind(const ExecPlan& plan);
  void run_planned(ExecPlan& plan, std::vector<NamedTensor>& outputs, const std::vector<const Tensor*>& bound,
                   const NodeObserver* observer);
  // Reserves the arena of the declared shapes' static plan now (session start) instead of at the first run.
  void reserve_static_arena();
  // Node lifecycle checks (run_hooks.hpp): always in debug builds, else at debug log level.
  bool lifecycle_checks() const noexcept;
  void run_generic(const ExecPlan& plan, const std::vector<const Tensor*>& bound, std::vector<NamedTensor>& outputs,
                   const NodeObserver* observer);
};

// A pack's compute / create_kernel called so that a C++ exception escaping it (which breaks the C ABI's rule 4)
// becomes an error status instead of unwinding through the host; callers add the node label as for any status.
inline oph_status* guarded_compute(const PreparedNode& pn, const oph_compute_context* ctx) noexcept {
  try {
    return pn.calls->compute(pn.state, ctx);
  } catch (const std::exception& e) {
    return make_status(Code::kInternal, std::string("compute threw a C++ exception across the C ABI: ") + e.what() +
                                            " (the pack must catch it and return a status)");
  } catch (...) {
    return make_status(Code::kInternal, "compute threw a C++ exception across the C ABI (the pack must catch it "
                                        "and return a status)");
  }
}
// One node's compute, under the node's lock when its op is not thread-safe (PreparedNode::serialize).
inline oph_status* compute_node(const PreparedNode& pn, const oph_compute_context* ctx) {
  if (pn.serialize) {
    std::lock_guard lock(*pn.serialize);
    return guarded_compute(pn, ctx);
  }
  return guarded_compute(pn, ctx);
}

inline oph_status* guarded_create_kernel(const PreparedNode& pn, const oph_kernel_create_args* args,
                                         void** state) noexcept {
  try {
    return pn.calls->create_kernel(args, state);
  } catch (const std::exception& e) {
    return make_status(Code::kInternal, std::string("create_kernel threw a C++ exception across the C ABI: ") +
                                            e.what() + " (the pack must catch it and return a status)");
  } catch (...) {
    return make_status(Code::kInternal, "create_kernel threw a C++ exception across the C ABI (the pack must catch "
                                        "it and return a status)");
  }
}

// Builds a session: resolve every node, validate attributes and arity, infer shapes, create kernels.
// Explains, for an op no loaded pack serves, which plugin that was not loaded would serve it and why it was
// not loaded ("" when none).
using UnloadedHint = std::function<std::string(const std::string& domain, const std::string& op, int64_t opset)>;

std::unique_ptr<Session::Impl> build_session(std::shared_ptr<const PluginSet> plugins, const OpRegistry& registry,
                                             Model model, const SessionOptions& options,
                                             const UnloadedHint& unloaded_hint = {});
// A session inside another one's build (a node evaluated by constant folding, an If/Loop/Scan body): built
// like any session, but its start-up lines log at debug level.
std::unique_ptr<Session::Impl> build_nested_session(std::shared_ptr<const PluginSet> plugins,
                                                    const OpRegistry& registry, Model model,
                                                    const SessionOptions& options);

// Every node's kernel and the implementation it reports (host/exec/kernel_info.cpp); must not run during a run.
std::vector<KernelInfo> kernel_infos(const Session::Impl& s);
// Logs a warning for every node whose kernel reports a reference implementation.
void warn_reference_kernels(const Session::Impl& s, const std::string& file);

// Converts a ValueMeta to an oph_value_info (constant may be NULL).
oph_value_info to_value_info(const ValueMeta& meta, const Tensor* constant, oph_tensor* constant_view);

}  // namespace ophost
