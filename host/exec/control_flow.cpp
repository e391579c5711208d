// If, Loop and Scan run by the host (see control_flow.hpp): attribute checks, shape inference through the
// bodies, and the runs themselves. Tensor and shape helpers are in control_flow_values.cpp.
#include "exec/control_flow.hpp"
#include "exec/control_flow_values.hpp"

#include "exec/run_hooks.hpp"
#include "registry/registry.hpp"

#include <ophost/services.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

namespace ophost {

using namespace cf;

namespace {

oph_status* cf_infer(const oph_infer_context*) {
  return make_status(Code::kInternal, "If/Loop/Scan shapes are inferred by the host, not through the C ABI");
}
oph_status* cf_compute(void* state, const oph_compute_context* ctx) {
  return static_cast<const ControlFlowKernel*>(state)->compute(ctx);
}
const char* cf_kernel_impl(void* state, bool* is_reference) {
  return static_cast<const ControlFlowKernel*>(state)->describe(is_reference);
}

oph_op_def make_def(const char* name, const char* doc) {
  oph_op_def d{};
  d.struct_size = OPH_OP_DEF_STRUCT_SIZE;
  d.domain = "";
  d.name = name;
  d.since_version = 1;
  d.end_version = OPH_OPSET_MAX;
  d.device = "cpu";
  d.infer = cf_infer;
  d.compute = cf_compute;
  d.doc = doc;
  d.kernel_impl = cf_kernel_impl;
  return d;
}

const oph_op_def kIfDef = make_def("If", "runs then_branch or else_branch (host control flow)");
const oph_op_def kLoopDef = make_def("Loop", "runs its body while the trip count and condition allow (host)");
const oph_op_def kScanDef = make_def("Scan", "runs its body once per slice of the scan inputs (host)");

const oph_op_def* def_of(const std::string& op_type) {
  if (op_type == "If") return &kIfDef;
  if (op_type == "Loop") return &kLoopDef;
  return &kScanDef;
}

const Attribute* find_attr(const Node& n, const std::string& name) {
  for (const Attribute& a : n.attributes)
    if (a.name == name) return &a;
  return nullptr;
}


}  // namespace

bool is_control_flow(const Node& node) {
  return node.domain.empty() && (node.op_type == "If" || node.op_type == "Loop" || node.op_type == "Scan");
}

const OpEntry& control_flow_entry(const std::string& op_type) {
  static const std::map<std::string, OpEntry> entries = [] {
    std::map<std::string, OpEntry> m;
    for (const char* name : {"If", "Loop", "Scan"}) {
      OpSource host;
      host.plugin_name = "ophost (host)";
      m.emplace(name, OpEntry{std::make_shared<const OpSchema>(OpSchema::from_def(*def_of(name))), host});
    }
    return m;
  }();
  return entries.at(op_type);
}

struct ControlFlowKernel::Body {
  std::string attr;                         // "then_branch", "body"
  std::shared_ptr<const Model> graph;
  std::vector<size_t> captured;             // per graph->outer_refs entry: the node input that feeds it
  std::unique_ptr<Session::Impl> session;   // built at the first infer
  std::vector<std::string> input_names;     // the session's graph inputs: the body's own, then the captured
  // Output metadata from the body's own input metadata and the node's inputs (for the captured values).
  std::vector<ValueMeta> infer(std::vector<ValueMeta> own, const std::vector<const ValueMeta*>& node_inputs) const {
    for (size_t c : captured) own.push_back(node_inputs[c] ? *node_inputs[c] : ValueMeta{});
    std::vector<ValueMeta> meta = session->infer_all(own);
    std::vector<ValueMeta> out;
    for (int v : session->output_values) out.push_back(meta[static_cast<size_t>(v)]);
    return out;
  }
  // Output metadata for these very tensors (used when a loop ran no iteration: its scan outputs still need the
  // shape of one step, with unknown dims as 0).
  std::vector<std::vector<int64_t>> step_shapes(const std::vector<Tensor>& own,
                                                const std::vector<Tensor>& captured_values) const {
    std::vector<ValueMeta> in;
    for (const auto* list : {&own, &captured_values})
      for (const Tensor& t : *list) {
        ValueMeta m;
        m.dtype = t.dtype();
        m.rank_known = true;
        m.shape.assign(t.shape().begin(), t.shape().end());
        in.push_back(std::move(m));
      }
    std::vector<ValueMeta> meta = session->infer_all(in);
    std::vector<std::vector<int64_t>> out;
    for (int v : session->output_values) {
      std::vector<int64_t> dims;
      for (int64_t d : meta[static_cast<size_t>(v)].shape) dims.push_back(std::max<int64_t>(d, 0));
      out.push_back(std::move(dims));
    }
    return out;
  }
  // Runs the body on its own inputs followed by the captured values.
  std::vector<NamedTensor> run(std::vector<Tensor> own, const std::vector<Tensor>& captured_values) const {
    std::vector<NamedTensor> in;
    in.reserve(input_names.size());
    for (size_t k = 0; k < own.size(); ++k) in.push_back({input_names[k], std::move(own[k])});
    for (size_t k = 0; k < captured_values.size(); ++k) in.push_back({input_names[own.size() + k], captured_values[k]});
    std::vector<NamedTensor> out;
    session->run(in, out);
    return out;
  }
};

ControlFlowKernel::ControlFlowKernel(const Node& node, int64_t opset, Env env, std::string label)
    : op_type_(node.op_type),
      opset_(opset),
      label_(std::move(label)),
      formal_inputs_(node.formal_inputs()),
      num_outputs_(node.outputs.size()),
      env_(std::move(env)) {
  auto fail = [&](const std::string& what) { throw Error(Code::kInvalidArgument, label_ + ": " + what); };
  // The implicit inputs, in the order the parser appended them (the union of the bodies' outer_refs).
  std::vector<std::string> implicit;
  for (const Attribute& a : node.attributes)
    if (a.g)
      for (const std::string& ref : a.g->outer_refs)
        if (std::find(implicit.begin(), implicit.end(), ref) == implicit.end()) implicit.push_back(ref);
  if (implicit.size() != node.implicit_inputs) fail("internal: implicit inputs do not match the subgraphs");
  auto body_attr = [&](const std::string& name) {
    const Attribute* a = find_attr(node, name);
    if (!a || !a->g) fail("attribute '" + name + "' (a graph) is required");
    auto b = std::make_unique<Body>();
    b->attr = name;
    b->graph = a->g;
    for (const std::string& ref : a->g->outer_refs) {
      size_t k = static_cast<size_t>(std::find(implicit.begin(), implicit.end(), ref) - implicit.begin());
      b->captured.push_back(formal_inputs_ + k);
    }
    bodies_.push_back(std::move(b));
  };
  for (const Attribute& a : node.attributes) {
    static const std::map<std::string, std::vector<std::string>> known = {
        {"If", {"then_branch", "else_branch"}},
        {"Loop", {"body"}},
        {"Scan", {"body", "num_scan_inputs", "scan_input_axes", "scan_input_directions", "scan_output_axes",
                  "scan_output_directions", "directions"}}};
    const auto& names = known.at(op_type_);
    if (std::find(names.begin(), names.end(), a.name) == names.end()) fail("unknown attribute '" + a.name + "'");
    if (a.type == kAttrGraph && !(a.name == "body" || a.name == "then_branch" || a.name == "else_branch"))
      fail("attribute '" + a.name + "' must not be a graph");
  }
  auto count = [](size_t n, const char* what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); };
  if (op_type_ == "If") {
    body_attr("then_branch");
    body_attr("else_branch");
    if (formal_inputs_ != 1) fail("takes 1 input (cond), not " + std::to_string(formal_inputs_));
    for (const auto& b : bodies_) {
      if (!b->graph->inputs.empty()) fail(b->attr + " must take no inputs, not " + count(b->graph->inputs.size(), "input"));
      if (b->graph->outputs.size() != num_outputs_)
        fail(b->attr + " gives " + count(b->graph->outputs.size(), "output") + " but the node has " +
             count(num_outputs_, "output"));
    }
  } else if (op_type_ == "Loop") {
    body_attr("body");
    if (formal_inputs_ < 2) fail("takes at least 2 inputs (M, cond; each may be \"\"), not " + std::to_string(formal_inputs_));
    const size_t n = formal_inputs_ - 2;
    if (num_outputs_ < n) fail("has " + count(n, "loop-carried value") + " but only " + count(num_outputs_, "output"));
    const Model& g = *bodies_[0]->graph;
    if (g.inputs.size() != 2 + n)
      fail("its body takes " + count(g.inputs.size(), "input") + "; it must take " + std::to_string(2 + n) +
           " (iteration number, condition and the " + count(n, "loop-carried value") + ")");
    if (g.outputs.size() != 1 + num_outputs_)
      fail("its body gives " + count(g.outputs.size(), "output") + "; it must give " +
           std::to_string(1 + num_outputs_) + " (condition, loop-carried values, scan outputs)");
  } else {
    body_attr("body");
    const Attribute* m = find_attr(node, "num_scan_inputs");
    if (!m || m->type != OPH_ATTR_INT || m->i < 1) fail("attribute 'num_scan_inputs' (an int >= 1) is required");
    num_scan_inputs_ = m->i;
    const size_t first = opset_ < 9 ? 1 : 0;  // opset 8 begins with sequence_lens
    if (formal_inputs_ < first + static_cast<size_t>(num_scan_inputs_))
      fail("has " + std::to_string(formal_inputs_) + " inputs, fewer than num_scan_inputs " +
           std::to_string(num_scan_inputs_));
    const size_t n = formal_inputs_ - first - static_cast<size_t>(num_scan_inputs_);
    const size_t k = num_outputs_ >= n ? num_outputs_ - n : 0;
    if (num_outputs_ < n) fail("has " + count(n, "state") + " but only " + count(num_outputs_, "output"));
    const Model& g = *bodies_[0]->graph;
    if (g.inputs.size() != n + static_cast<size_t>(num_scan_inputs_))
      fail("its body takes " + count(g.inputs.size(), "input") + "; it must take " +
           std::to_string(n + static_cast<size_t>(num_scan_inputs_)) + " (states, then one slice per scan input)");
    if (g.outputs.size() != num_outputs_)
      fail("its body gives " + count(g.outputs.size(), "output") + "; it must give " + std::to_string(num_outputs_));
    auto ints = [&](const char* name, size_t len, int64_t lo, int64_t hi) {
      std::vector<int64_t> v(len, 0);
      if (const Attribute* a = find_attr(node, name)) {
        if (a->type != OPH_ATTR_INTS || a->ints.size() != len)
          fail("attribute '" + std::string(name) + "' must list " + std::to_string(len) + " ints");
        v = a->ints;
      }
      for (int64_t x : v)
        if (x < lo || x > hi)
          fail("attribute '" + std::string(name) + "' holds " + std::to_string(x) + ", outside [" +
               std::to_string(lo) + ", " + std::to_string(hi) + "]");
      return v;
    };
    const size_t m_in = static_cast<size_t>(num_scan_inputs_);
    if (opset_ < 9) {
      scan_in_reverse_ = ints("directions", m_in, 0, 1);
      scan_in_axes_.assign(m_in, 0);
      scan_out_axes_.assign(k, 0);
      scan_out_reverse_.assign(k, 0);
    } else {
      // Axes may be negative from opset 11 (counted from the end of the input's rank, checked when running).
      scan_in_axes_ = ints("scan_input_axes", m_in, -OPH_MAX_NDIM, OPH_MAX_NDIM - 1);
      scan_in_reverse_ = ints("scan_input_directions", m_in, 0, 1);
      scan_out_axes_ = ints("scan_output_axes", k, -OPH_MAX_NDIM, OPH_MAX_NDIM);
      scan_out_reverse_ = ints("scan_output_directions", k, 0, 1);
    }
  }
}

ControlFlowKernel::~ControlFlowKernel() = default;


void ControlFlowKernel::seal() noexcept {
  std::lock_guard lock(build_mutex_);
  env_.registry = nullptr;
}

void ControlFlowKernel::build_bodies(const std::vector<const ValueMeta*>& inputs) const {
  std::lock_guard lock(build_mutex_);
  if (bodies_.empty() || bodies_.front()->session) return;
  if (!env_.registry) throw Error(Code::kInternal, label_ + ": bodies were not built while the session was");
  // Element types of the body's own inputs the body leaves open: from the node's inputs.
  auto own_input_dtype = [&](size_t k) -> DType {
    if (op_type_ == "Loop") {
      if (k == 0) return DType::kInt64;
      if (k == 1) return DType::kBool;
      return inputs[k] ? inputs[k]->dtype : DType::kUndefined;
    }
    const size_t first = op_type_ == "Scan" && opset_ < 9 ? 1 : 0;
    return inputs[first + k] ? inputs[first + k]->dtype : DType::kUndefined;
  };
  SessionOptions o = env_.options;
  o.profile = false;
  o.execution_mode = SessionOptions::ExecutionMode::kSequential;
  o.mem_pool_size = 0;
  for (const auto& b : bodies_) {
    Model m = *b->graph;
    m.path = env_.file;
    m.limits = env_.limits;
    for (size_t k = 0; k < m.inputs.size(); ++k)
      if (m.inputs[k].dtype == DType::kUndefined) m.inputs[k].dtype = own_input_dtype(k);
    for (size_t j = 0; j < b->graph->outer_refs.size(); ++j) {
      ModelValueInfo vi;
      vi.name = b->graph->outer_refs[j];
      const ValueMeta* meta = inputs[b->captured[j]];
      vi.dtype = meta ? meta->dtype : DType::kUndefined;
      m.inputs.push_back(std::move(vi));
    }
    for (const ModelValueInfo& in : m.inputs) b->input_names.push_back(in.name);
    m.outer_refs.clear();
    try {
      b->session = build_nested_session(env_.plugins, *env_.registry, std::move(m), o);
    } catch (const Error& e) {
      b->input_names.clear();
      throw Error(e.code(), label_ + ": " + b->attr + ": " + e.what());
    }
  }
}

std::vector<ValueMeta> ControlFlowKernel::infer(const std::vector<const ValueMeta*>& inputs) const {
  build_bodies(inputs);
  if (op_type_ == "If") return infer_if(inputs);
  if (op_type_ == "Loop") return infer_loop(inputs);
  return infer_scan(inputs);
}

std::vector<ValueMeta> ControlFlowKernel::infer_if(const std::vector<const ValueMeta*>& inputs) const {
  if (inputs[0] && inputs[0]->dtype != DType::kBool)
    throw Error(Code::kInvalidArgument, label_ + ": cond is " + std::string(dtype_name(inputs[0]->dtype)) +
                                            "; it must be bool");
  std::vector<ValueMeta> then_out = bodies_[0]->infer({}, inputs), else_out = bodies_[1]->infer({}, inputs);
  std::vector<ValueMeta> out;
  for (size_t k = 0; k < num_outputs_; ++k)
    out.push_back(merge(then_out[k], else_out[k], label_ + ": output " + std::to_string(k)));
  return out;
}

std::vector<ValueMeta> ControlFlowKernel::infer_loop(const std::vector<const ValueMeta*>& inputs) const {
  const size_t n = formal_inputs_ - 2;
  std::vector<ValueMeta> own = {scalar_meta(DType::kInt64), scalar_meta(DType::kBool)};
  for (size_t k = 0; k < n; ++k) own.push_back(inputs[2 + k] ? *inputs[2 + k] : ValueMeta{});
  std::vector<ValueMeta> body_out = bodies_[0]->infer(own, inputs);
  std::vector<ValueMeta> out;
  for (size_t k = 0; k < n; ++k)
    out.push_back(merge(own[2 + k], body_out[1 + k], label_ + ": loop-carried value " + std::to_string(k)));
  for (size_t k = n; k < num_outputs_; ++k) out.push_back(insert_dim(body_out[1 + k], 0, OPH_DIM_UNKNOWN));
  return out;
}

std::vector<ValueMeta> ControlFlowKernel::infer_scan(const std::vector<const ValueMeta*>& inputs) const {
  const bool batched = opset_ < 9;
  const size_t first = batched ? 1 : 0;
  const size_t m_in = static_cast<size_t>(num_scan_inputs_);
  const size_t n = formal_inputs_ - first - m_in;
  std::vector<ValueMeta> own;
  for (size_t k = 0; k < n; ++k) {
    ValueMeta s = inputs[first + k] ? *inputs[first + k] : ValueMeta{};
    own.push_back(batched ? remove_dim(s, 0) : s);
  }
  int64_t length = OPH_DIM_UNKNOWN;
  for (size_t j = 0; j < m_in; ++j) {
    ValueMeta x = inputs[first + n + j] ? *inputs[first + n + j] : ValueMeta{};
    if (batched) x = remove_dim(x, 0);
    int64_t axis = scan_in_axes_[j];
    if (x.rank_known && axis < 0) axis += static_cast<int64_t>(x.shape.size());
    if (x.rank_known && (axis < 0 || static_cast<size_t>(axis) >= x.shape.size()))
      throw Error(Code::kInvalidArgument, label_ + ": scan input " + std::to_string(j) + " has rank " +
                                              std::to_string(x.shape.size()) + ", too small for its scan axis");
    if (j == 0 && x.rank_known) length = x.shape[static_cast<size_t>(axis)];
    own.push_back(x.rank_known ? remove_dim(x, static_cast<size_t>(axis)) : x);
  }
  std::vector<ValueMeta> body_out = bodies_[0]->infer(own, inputs);
  std::vector<ValueMeta> out;
  int64_t batch = OPH_DIM_UNKNOWN;
  if (batched && inputs[first + n] && inputs[first + n]->rank_known && !inputs[first + n]->shape.empty())
    batch = inputs[first + n]->shape[0];
  for (size_t k = 0; k < n; ++k) {
    ValueMeta s = merge(own[k], body_out[k], label_ + ": state " + std::to_string(k));
    out.push_back(batched ? insert_dim(s, 0, batch) : s);
  }
  for (size_t k = n; k < num_outputs_; ++k) {
    const ValueMeta& y = body_out[k];
    int64_t axis = scan_out_axes_[k - n];
    if (y.rank_known && axis < 0) axis += static_cast<int64_t>(y.shape.size()) + 1;
    ValueMeta r = y;
    if (y.rank_known) {
      if (axis < 0 || static_cast<size_t>(axis) > y.shape.size())
        throw Error(Code::kInvalidArgument, label_ + ": scan_output_axes[" + std::to_string(k - n) +
                                                "] is out of range for the body's output of rank " +
                                                std::to_string(y.shape.size()));
      r = insert_dim(y, static_cast<size_t>(axis), length);
    }
    out.push_back(batched ? insert_dim(r, 0, batch) : r);
  }
  return out;
}

oph_status* ControlFlowKernel::compute(const oph_compute_context* ctx) const noexcept {
  try {
    if (bodies_.empty() || !bodies_.front()->session)
      return make_status(Code::kInternal, "the bodies of this node were never built");
    if (op_type_ == "If") run_if(ctx);
    else if (op_type_ == "Loop") run_loop(ctx);
    else run_scan(ctx);
    return nullptr;
  } catch (const Error& e) {
    return make_status(e.code(), e.what());
  } catch (const std::exception& e) {
    return make_status(Code::kInternal, e.what());
  }
}

namespace {
std::vector<Tensor> borrow_captured(const ControlFlowKernel::Body& b, const oph_compute_context* ctx,
                                    const std::vector<std::string>& names) {
  std::vector<Tensor> out;
  for (size_t j = 0; j < b.captured.size(); ++j)
    out.push_back(borrow(*ctx->inputs[b.captured[j]], "outer value '" + names[j] + "'"));
  return out;
}
}  // namespace

void ControlFlowKernel::run_if(const oph_compute_context* ctx) const {
  if (!ctx->inputs[0]) throw Error(Code::kInvalidArgument, "cond is required");
  const Body& b = *bodies_[scalar_bool(ctx->inputs[0], "cond") ? 0 : 1];
  std::vector<NamedTensor> out = b.run({}, borrow_captured(b, ctx, b.graph->outer_refs));
  for (size_t k = 0; k < num_outputs_; ++k) emit(ctx, k, out[k].tensor, b.attr + " output '" + out[k].name + "'");
}

void ControlFlowKernel::run_loop(const oph_compute_context* ctx) const {
  const Body& b = *bodies_[0];
  const size_t n = formal_inputs_ - 2, k_scan = num_outputs_ - n;
  std::optional<int64_t> trip;
  if (ctx->inputs[0]) trip = scalar_int64(ctx->inputs[0], "M (the trip count)");
  bool cond = ctx->inputs[1] ? scalar_bool(ctx->inputs[1], "cond") : true;
  std::vector<Tensor> carried;
  for (size_t k = 0; k < n; ++k) carried.push_back(borrow(*ctx->inputs[2 + k], "v_initial " + std::to_string(k)));
  const std::vector<Tensor> captured = borrow_captured(b, ctx, b.graph->outer_refs);
  std::vector<std::vector<Tensor>> scans(k_scan);
  const int64_t limit = env_.limits.max_loop_iterations;
  for (int64_t i = 0;; ++i) {
    if ((trip && i >= *trip) || !cond) break;
    if (i >= limit) {
      throw Error(Code::kResourceExhausted,
                  "the loop reached " + std::to_string(limit) + " iterations " +
                      (trip ? "of its trip count " + std::to_string(*trip) : std::string("with no trip count")) +
                      " and its condition still true; the limit is SessionOptions::max_loop_iterations (ophost "
                      "--max-loop-iterations)");
    }
    check_deadline("loop iteration " + std::to_string(i));
    std::vector<Tensor> own = {scalar_tensor(DType::kInt64, i), scalar_tensor(DType::kBool, 1)};
    for (Tensor& t : carried) own.push_back(t);
    std::vector<NamedTensor> out = b.run(std::move(own), captured);
    const oph_tensor cond_view = out[0].tensor.view();
    cond = scalar_bool(&cond_view, "the body's condition output");
    for (size_t k = 0; k < n; ++k) carried[k] = std::move(out[1 + k].tensor);
    for (size_t k = 0; k < k_scan; ++k) scans[k].push_back(std::move(out[1 + n + k].tensor));
  }
  for (size_t k = 0; k < n; ++k) emit(ctx, k, carried[k], "loop-carried value " + std::to_string(k));
  std::vector<std::vector<int64_t>> step;  // with no iteration: one step's shape, inferred from these inputs
  if (k_scan && scans[0].empty()) {
    std::vector<Tensor> own = {scalar_tensor(DType::kInt64, 0), scalar_tensor(DType::kBool, 1)};
    for (const Tensor& t : carried) own.push_back(t);
    step = b.step_shapes(own, captured);
  }
  for (size_t k = 0; k < k_scan; ++k) {
    const DType dt = from_dl(ctx->outputs[n + k] ? ctx->outputs[n + k]->dtype : oph_dtype{});
    emit(ctx, n + k, stack_axis(scans[k], 0, dt, step.empty() ? std::vector<int64_t>{} : step[1 + n + k],
                                "scan output " + std::to_string(k)),
         "scan output " + std::to_string(k));
  }
}

void ControlFlowKernel::run_scan(const oph_compute_context* ctx) const {
  const Body& b = *bodies_[0];
  const bool batched = opset_ < 9;
  const size_t first = batched ? 1 : 0;
  const size_t m_in = static_cast<size_t>(num_scan_inputs_);
  const size_t n = formal_inputs_ - first - m_in, k_scan = num_outputs_ - n;
  const std::vector<Tensor> captured = borrow_captured(b, ctx, b.graph->outer_refs);
  std::vector<Tensor> states, scan_in;
  for (size_t k = 0; k < n; ++k) states.push_back(borrow(*ctx->inputs[first + k], "initial state " + std::to_string(k)));
  for (size_t j = 0; j < m_in; ++j) scan_in.push_back(borrow(*ctx->inputs[first + n + j], "scan input " + std::to_string(j)));
  std::vector<DType> body_dtypes;  // element type of each body output
  for (int v : b.session->output_values) body_dtypes.push_back(b.session->static_plan.values[static_cast<size_t>(v)].dtype);

  // One scan over `length` steps of states `st` and scan inputs `xs` (axes already normalised).
  auto scan = [&](std::vector<Tensor> st, const std::vector<Tensor>& xs, const std::vector<size_t>& axes,
                  int64_t length, std::vector<Tensor>& scan_out) {
    std::vector<std::vector<Tensor>> parts(k_scan);
    for (int64_t t = 0; t < length; ++t) {
      check_deadline("scan step " + std::to_string(t));
      std::vector<Tensor> own = st;
      for (size_t j = 0; j < m_in; ++j)
        own.push_back(slice_axis(xs[j], axes[j], scan_in_reverse_[j] ? length - 1 - t : t));
      std::vector<NamedTensor> out = b.run(std::move(own), captured);
      for (size_t k = 0; k < n; ++k) st[k] = std::move(out[k].tensor);
      for (size_t k = 0; k < k_scan; ++k) parts[k].push_back(std::move(out[n + k].tensor));
    }
    scan_out.clear();
    std::vector<std::vector<int64_t>> step;  // with no step: one step's shape, inferred from these inputs
    if (k_scan && length == 0) {
      std::vector<Tensor> own = st;
      for (size_t j = 0; j < m_in; ++j) {
        std::vector<int64_t> d(xs[j].shape().begin(), xs[j].shape().end());
        d.erase(d.begin() + static_cast<std::ptrdiff_t>(axes[j]));
        own.emplace_back(xs[j].dtype(), std::move(d));
      }
      step = b.step_shapes(own, captured);
    }
    for (size_t k = 0; k < k_scan; ++k) {
      if (scan_out_reverse_[k]) std::reverse(parts[k].begin(), parts[k].end());
      const std::vector<int64_t> part = step.empty() ? std::vector<int64_t>{} : step[n + k];
      const size_t rank = parts[k].empty() ? part.size() : parts[k][0].shape().size();
      int64_t axis = scan_out_axes_[k] < 0 ? scan_out_axes_[k] + static_cast<int64_t>(rank) + 1 : scan_out_axes_[k];
      if (axis < 0 || static_cast<size_t>(axis) > rank)
        throw Error(Code::kInvalidArgument, "scan_output_axes[" + std::to_string(k) + "] is out of range");
      const DType dt = parts[k].empty() ? body_dtypes[n + k] : parts[k][0].dtype();
      scan_out.push_back(stack_axis(parts[k], static_cast<size_t>(axis), dt, part, "scan output " + std::to_string(k)));
    }
    return st;
  };
  auto axes_and_length = [&](const std::vector<Tensor>& xs, std::vector<size_t>& axes) {
    int64_t length = -1;
    axes.clear();
    for (size_t j = 0; j < m_in; ++j) {
      const int64_t rank = static_cast<int64_t>(xs[j].shape().size());
      int64_t axis = scan_in_axes_[j] < 0 ? scan_in_axes_[j] + rank : scan_in_axes_[j];
      if (axis < 0 || axis >= rank)
        throw Error(Code::kInvalidArgument, "scan input " + std::to_string(j) + " " + shape_to_string(xs[j].shape()) +
                                                " has no axis " + std::to_string(scan_in_axes_[j]));
      const int64_t len = xs[j].shape()[static_cast<size_t>(axis)];
      if (length >= 0 && len != length)
        throw Error(Code::kInvalidArgument, "scan input " + std::to_string(j) + " has " + std::to_string(len) +
                                                " steps but scan input 0 has " + std::to_string(length));
      length = len;
      axes.push_back(static_cast<size_t>(axis));
    }
    return length;
  };

  std::vector<size_t> axes;
  if (!batched) {
    std::vector<Tensor> scan_out;
    const int64_t length = axes_and_length(scan_in, axes);
    states = scan(std::move(states), scan_in, axes, length, scan_out);
    for (size_t k = 0; k < n; ++k) emit(ctx, k, states[k], "state " + std::to_string(k));
    for (size_t k = 0; k < k_scan; ++k) emit(ctx, n + k, scan_out[k], "scan output " + std::to_string(k));
    return;
  }
  // Opset 8: every state and scan input has a batch dimension first; each batch entry is scanned on its own
  // (over its sequence_lens entry when given; the scan outputs beyond it are zeros).
  const int64_t batch = scan_in[0].shape().empty() ? 0 : scan_in[0].shape()[0];
  std::optional<Tensor> lens;
  if (ctx->inputs[0]) lens = borrow(*ctx->inputs[0], "sequence_lens");
  std::vector<std::vector<Tensor>> st_parts(n), out_parts(k_scan);
  for (int64_t bi = 0; bi < batch; ++bi) {
    std::vector<Tensor> st, xs, scan_out;
    for (size_t k = 0; k < n; ++k) st.push_back(slice_axis(states[k], 0, bi));
    for (size_t j = 0; j < m_in; ++j) {
      if (scan_in[j].shape().empty() || scan_in[j].shape()[0] != batch)
        throw Error(Code::kInvalidArgument, "scan input " + std::to_string(j) + " has a batch size other than " +
                                                std::to_string(batch));
      xs.push_back(slice_axis(scan_in[j], 0, bi));
    }
    const int64_t full = axes_and_length(xs, axes);
    int64_t length = full;
    if (lens) {
      if (lens->dtype() != DType::kInt32 || lens->numel() != batch)
        throw Error(Code::kInvalidArgument, "sequence_lens must be int32 with one entry per batch item");
      length = lens->data_as<int32_t>()[bi];
      if (length < 0 || length > full)
        throw Error(Code::kInvalidArgument, "sequence_lens[" + std::to_string(bi) + "] = " + std::to_string(length) +
                                                " is outside [0, " + std::to_string(full) + "]");
    }
    st = scan(std::move(st), xs, axes, length, scan_out);
    for (size_t k = 0; k < n; ++k) st_parts[k].push_back(std::move(st[k]));
    for (size_t k = 0; k < k_scan; ++k) {
      Tensor y = std::move(scan_out[k]);
      if (length < full) {  // pad the scan axis (0 in opset 8) to the full length with zeros
        std::vector<int64_t> dims(y.shape().begin(), y.shape().end());
        dims[0] = full;
        Tensor padded(y.dtype(), dims);
        if (y.nbytes()) std::memcpy(padded.data(), y.data(), y.nbytes());
        y = std::move(padded);
      }
      out_parts[k].push_back(std::move(y));
    }
  }
  for (size_t k = 0; k < n; ++k)
    emit(ctx, k, stack_axis(st_parts[k], 0, states[k].dtype(), {}, "state " + std::to_string(k)),
         "state " + std::to_string(k));
  for (size_t k = 0; k < k_scan; ++k) {
    const DType dt = out_parts[k].empty() ? from_dl(ctx->outputs[n + k] ? ctx->outputs[n + k]->dtype : oph_dtype{})
                                          : out_parts[k][0].dtype();
    emit(ctx, n + k, stack_axis(out_parts[k], 0, dt, {}, "scan output " + std::to_string(k)),
         "scan output " + std::to_string(k));
  }
}

const char* ControlFlowKernel::describe(bool* reference) const {
  std::lock_guard lock(build_mutex_);
  description_ = "host " + op_type_;
  bool ref = false;
  for (size_t k = 0; k < bodies_.size(); ++k) {
    const Body& b = *bodies_[k];
    description_ += (k ? ", " : ": ") + b.attr;
    if (!b.session) {
      description_ += " not built";
      continue;
    }
    const size_t nodes = b.session->nodes.size();
    description_ += " " + std::to_string(nodes) + (nodes == 1 ? " node" : " nodes");
    std::vector<std::string> refs;
    for (const KernelInfo& ki : kernel_infos(*b.session))
      if (ki.reference) refs.push_back(ki.node + " (" + ki.implementation + ")");
    if (!refs.empty()) {
      ref = true;
      description_ += " (reference code in";
      for (const std::string& r : refs) description_ += " " + r;
      description_ += ")";
    }
  }
  if (reference) *reference = ref;
  return description_.c_str();
}

}  // namespace ophost
