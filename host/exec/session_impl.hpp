// Session internals: a loaded model resolved against the registry, with shapes inferred by each op's own
// infer(), kernels created once per node, and a flat array of prepared calls executed in order.
#pragma once

#include "model/model.hpp"
#include "plugins/plugin_set.hpp"

#include <ophost/ophost_plugin.h>
#include <ophost/runtime.hpp>

#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ophost {

class OpRegistry;
struct OpEntry;

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
  const oph_op_def* op = nullptr;
  const OpEntry* entry = nullptr;  // registry entry (op and its pack)
  std::vector<int> inputs;   // value index, -1 for absent optional inputs
  std::vector<int> outputs;  // value index, -1 for absent optional outputs
  ResolvedAttrs attrs;
  void* state = nullptr;
  std::string label;         // "node 'n' (domain::op, opset 13) from pack 'p' (path)"
};

// Value metadata inferred for one set of graph-input shapes.
struct ShapePlan {
  std::vector<std::vector<int64_t>> input_shapes;  // key: actual graph input shapes
  std::vector<ValueMeta> values;
};

struct Session::Impl {
  std::shared_ptr<const PluginSet> plugins;  // keeps the libraries loaded while the session lives
  Model model;
  std::deque<Tensor> constants;  // values computed at load (Constant nodes); ValueSlot::constant points here
  std::vector<ValueSlot> values;
  std::vector<PreparedNode> nodes;
  std::vector<ValueInfo> input_infos, output_infos;
  std::vector<int> output_values;  // value index of each graph output
  std::vector<int> input_values;   // value index of each graph input
  ShapePlan static_plan;           // from the model's declared shapes
  bool static_plan_complete = false;
  std::mutex plan_mutex;
  std::shared_ptr<const ShapePlan> last_dynamic_plan;

  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl();

  // Runs every node's infer over the graph, given graph input metadata.
  std::vector<ValueMeta> infer_all(const std::vector<ValueMeta>& graph_inputs) const;
  std::vector<NamedTensor> run(const std::vector<NamedTensor>& inputs);
};

// Builds a session: resolve every node, validate attributes and arity, infer shapes, create kernels.
// Explains, for an op no loaded pack serves, which plugin that was not loaded would serve it and why it was
// not loaded ("" when none).
using UnloadedHint = std::function<std::string(const std::string& domain, const std::string& op, int64_t opset)>;

std::unique_ptr<Session::Impl> build_session(std::shared_ptr<const PluginSet> plugins, const OpRegistry& registry,
                                             Model model, const SessionOptions& options,
                                             const UnloadedHint& unloaded_hint = {});

// Converts a ValueMeta to an oph_value_info (constant may be NULL).
oph_value_info to_value_info(const ValueMeta& meta, const Tensor* constant, oph_tensor* constant_view);

}  // namespace ophost
