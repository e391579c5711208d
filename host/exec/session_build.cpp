// Session construction: graph passes -> resolve -> validate (arity, attributes, types) -> infer -> create kernels.
#include "exec/abi_calls.hpp"
#include "exec/parallel.hpp"
#include "exec/placement.hpp"
#include "exec/session_impl.hpp"
#include "exec/control_flow.hpp"
#include "isolation/proxy.hpp"
#include "passes/passes.hpp"
#include "registry/registry.hpp"

#include <ophost/services.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>

namespace ophost {

bool ValueMeta::fully_known() const noexcept {
  if (!rank_known || dtype == DType::kUndefined) return false;
  return std::all_of(shape.begin(), shape.end(), [](int64_t d) { return d >= 0; });
}

namespace {

std::string op_id(const Node& n) { return (n.domain.empty() ? std::string() : n.domain + "::") + n.op_type; }


// The C view of `items` handed to a pack: an array of pointers to its elements, kept in `ptrs`.
template <class Items, class P>
P* const* pointers_to(Items& items, std::vector<P*>& ptrs) {
  ptrs.clear();
  for (auto& item : items) ptrs.push_back(&item);
  return ptrs.data();
}

const char* attr_type_name(int32_t t) {
  switch (t) {
    case OPH_ATTR_FLOAT: return "float";
    case OPH_ATTR_INT: return "int";
    case OPH_ATTR_STRING: return "string";
    case OPH_ATTR_TENSOR: return "tensor";
    case OPH_ATTR_FLOATS: return "floats";
    case OPH_ATTR_INTS: return "ints";
    case OPH_ATTR_STRINGS: return "strings";
    default: return "undefined";
  }
}

std::string describe_attr_default(const oph_attr_def* d) {
  if (d->required) return "required";
  if (d->default_value == nullptr) return "optional";
  const oph_attr_value& v = *d->default_value;
  switch (v.type) {
    case OPH_ATTR_FLOAT: {
      std::ostringstream s;
      s << "default " << v.f;
      return s.str();
    }
    case OPH_ATTR_INT: return "default " + std::to_string(v.i);
    case OPH_ATTR_STRING: return "default '" + std::string(v.s ? v.s : "", v.count) + "'";
    case OPH_ATTR_UNDEFINED: return "optional";
    default: return "has default";
  }
}

std::string schema_attrs(const oph_op_def* op) {
  if (op->num_attributes == 0) return "none";
  std::string out;
  for (size_t i = 0; i < op->num_attributes; ++i) {
    const oph_attr_def* d = op->attributes[i];
    out += (i ? ", " : "") + std::string(d->name) + " (" + attr_type_name(d->type) + ", " +
           describe_attr_default(d) + ")";
  }
  return out;
}

// Maps the node's actual inputs onto the op's formal inputs; checks arity.
void check_arity(const PreparedNode& pn, bool outputs) {
  const oph_op_def* op = pn.op;
  const oph_io_def* const* formals = outputs ? op->outputs : op->inputs;
  size_t nformal = outputs ? op->num_outputs : op->num_inputs;
  const std::vector<std::string>& actual = outputs ? pn.node->outputs : pn.node->inputs;
  const char* what = outputs ? "output" : "input";
  size_t max_actual = nformal;
  bool variadic = nformal > 0 && formals[nformal - 1]->arity == OPH_ARITY_VARIADIC;
  if (variadic) max_actual = SIZE_MAX;
  if (actual.size() > max_actual) {
    throw Error(Code::kInvalidArgument,
                pn.label + ": has " + std::to_string(actual.size()) + " " + what + "s but the op takes at most " +
                    std::to_string(nformal) + "; remove the extra " + what + "s or check the op's version");
  }
  for (size_t f = 0; f < nformal; ++f) {
    const oph_io_def* d = formals[f];
    if (d->arity == OPH_ARITY_OPTIONAL) continue;
    if (d->arity == OPH_ARITY_VARIADIC) {
      size_t have = 0;
      for (size_t k = f; k < actual.size(); ++k) have += actual[k].empty() ? 0 : 1;
      if (have < static_cast<size_t>(std::max(1, d->min_arity))) {
        throw Error(Code::kInvalidArgument, pn.label + ": variadic " + what + " '" + d->name + "' needs at least " +
                                                std::to_string(std::max(1, d->min_arity)) + " values, got " +
                                                std::to_string(have));
      }
      continue;
    }
    if (outputs) continue;  // a model may leave a required output unnamed only if nobody reads it
    if (f >= actual.size() || actual[f].empty()) {
      throw Error(Code::kInvalidArgument, pn.label + ": required input " + std::to_string(f) + " '" + d->name +
                                              "' is missing; the model must provide it");
    }
  }
}

void resolve_attrs(PreparedNode& pn) {
  const oph_op_def* op = pn.op;
  const Node& n = *pn.node;
  ResolvedAttrs& ra = pn.attrs;
  ra.values.resize(op->num_attributes);
  ra.string_lists.resize(op->num_attributes);
  ra.tensors.resize(op->num_attributes);
  std::vector<bool> seen(op->num_attributes, false);
  for (const Attribute& a : n.attributes) {
    size_t idx = op->num_attributes;
    for (size_t i = 0; i < op->num_attributes; ++i)
      if (a.name == op->attributes[i]->name) idx = i;
    if (idx == op->num_attributes) {
      throw Error(Code::kInvalidArgument, pn.label + ": unknown attribute '" + a.name +
                                              "'; the op accepts: " + schema_attrs(op));
    }
    const oph_attr_def* d = op->attributes[idx];
    if (a.type != d->type) {
      std::string hint;
      if (d->type == OPH_ATTR_FLOAT && a.type == OPH_ATTR_INT) hint = " (write it as a float, e.g. 2.0 instead of 2)";
      throw Error(Code::kInvalidArgument, pn.label + ": attribute '" + a.name + "' is " + attr_type_name(a.type) +
                                              " but the op declares it " + attr_type_name(d->type) + hint);
    }
    seen[idx] = true;
    oph_attr_value& v = ra.values[idx];
    v = {};
    v.struct_size = OPH_ATTR_VALUE_STRUCT_SIZE;
    v.type = a.type;
    switch (a.type) {
      case OPH_ATTR_FLOAT: v.f = a.f; break;
      case OPH_ATTR_INT: v.i = a.i; break;
      case OPH_ATTR_STRING: v.s = a.s.c_str(); v.count = a.s.size(); break;
      case OPH_ATTR_FLOATS: v.floats = a.floats.data(); v.count = a.floats.size(); break;
      case OPH_ATTR_INTS: v.ints = a.ints.data(); v.count = a.ints.size(); break;
      case OPH_ATTR_STRINGS:
        for (const std::string& s : a.strings) ra.string_lists[idx].push_back(s.c_str());
        v.strings = ra.string_lists[idx].data();
        v.count = a.strings.size();
        break;
      case OPH_ATTR_TENSOR:
        ra.tensors[idx] = a.t.view();
        v.tensor = &ra.tensors[idx];
        break;
      default:
        throw Error(Code::kUnimplemented, pn.label + ": attribute '" + a.name + "' has an unsupported type");
    }
  }
  for (size_t i = 0; i < op->num_attributes; ++i) {
    if (seen[i]) continue;
    const oph_attr_def* d = op->attributes[i];
    if (d->required) {
      throw Error(Code::kInvalidArgument, pn.label + ": required attribute '" + std::string(d->name) + "' (" +
                                              attr_type_name(d->type) + ") is missing");
    }
    ra.values[i] = oph_attr_value{};  // no default: the kernel sees OPH_ATTR_UNDEFINED
    if (d->default_value != nullptr) {  // points into the pack's static data (valid while it is loaded)
      std::memcpy(&ra.values[i], d->default_value, std::min(d->default_value->struct_size, sizeof(oph_attr_value)));
    }
    ra.values[i].struct_size = OPH_ATTR_VALUE_STRUCT_SIZE;
  }
}

// The value of a standard-domain Constant node, or nothing when the node is not a plain Constant.
std::optional<Tensor> constant_node_value(const Node& n, const std::string& file) {
  if (!n.domain.empty() || n.op_type != "Constant" || !n.inputs.empty() || n.outputs.size() != 1 ||
      n.attributes.size() != 1) {
    return std::nullopt;
  }
  const Attribute& a = n.attributes[0];
  if (a.name == "value" && a.type == OPH_ATTR_TENSOR) return a.t.clone();
  if (a.name == "value_float" && a.type == OPH_ATTR_FLOAT) {
    Tensor t(DType::kFloat32, {});
    *t.data_as<float>() = a.f;
    return t;
  }
  if (a.name == "value_int" && a.type == OPH_ATTR_INT) {
    Tensor t(DType::kInt64, {});
    *t.data_as<int64_t>() = a.i;
    return t;
  }
  if (a.name == "value_floats" && a.type == OPH_ATTR_FLOATS) {
    Tensor t(DType::kFloat32, {static_cast<int64_t>(a.floats.size())});
    std::copy(a.floats.begin(), a.floats.end(), t.data_as<float>());
    return t;
  }
  if (a.name == "value_ints" && a.type == OPH_ATTR_INTS) {
    Tensor t(DType::kInt64, {static_cast<int64_t>(a.ints.size())});
    std::copy(a.ints.begin(), a.ints.end(), t.data_as<int64_t>());
    return t;
  }
  (void)file;
  return std::nullopt;  // other forms (strings, sparse) go through the op registry like any node
}

std::string dims_string(const ValueMeta& m) {
  if (!m.rank_known) return "[?]";
  return shape_to_string(m.shape);
}

}  // namespace

oph_value_info to_value_info(const ValueMeta& meta, const Tensor* constant, oph_tensor* constant_view) {
  oph_value_info v{};
  v.struct_size = OPH_VALUE_INFO_STRUCT_SIZE;
  v.present = true;
  v.dtype = to_dl(meta.dtype);
  v.ndim = meta.rank_known ? static_cast<int32_t>(meta.shape.size()) : -1;
  for (size_t k = 0; k < meta.shape.size() && k < OPH_MAX_NDIM; ++k) v.shape[k] = meta.shape[k];
  if (constant && constant_view) {
    *constant_view = constant->view();
    v.constant = constant_view;
  }
  return v;
}

std::vector<ValueMeta> Session::Impl::infer_all(const std::vector<ValueMeta>& graph_inputs) const {
  std::vector<ValueMeta> meta(values.size());
  for (size_t v = 0; v < values.size(); ++v) {
    const ValueSlot& slot = values[v];
    if (slot.constant) {
      meta[v].dtype = slot.constant->dtype();
      meta[v].rank_known = true;
      meta[v].shape.assign(slot.constant->shape().begin(), slot.constant->shape().end());
    } else if (slot.graph_input >= 0) {
      meta[v] = graph_inputs[slot.graph_input];
    }
  }
  std::vector<oph_value_info> in_infos, out_infos;
  std::vector<const oph_value_info*> in_ptrs;
  std::vector<oph_value_info*> out_ptrs;
  std::vector<const oph_attr_value*> attr_ptrs;
  std::vector<oph_tensor> const_views;
  for (const PreparedNode& pn : nodes) {
    if (pn.control) {  // If/Loop/Scan: shapes through the bodies
      std::vector<const ValueMeta*> ins;
      for (int v : pn.inputs) {
        if (v >= 0 && meta[v].dtype == DType::kUndefined) {
          throw Error(Code::kInvalidArgument, pn.label + ": the element type of input '" + values[v].name +
                                                  "' is unknown; declare it in the model's graph inputs");
        }
        ins.push_back(v < 0 ? nullptr : &meta[v]);
      }
      std::vector<ValueMeta> outs = pn.control->infer(ins);
      for (size_t o = 0; o < pn.outputs.size(); ++o) {
        int v = pn.outputs[o];
        if (v < 0) continue;
        meta[v] = std::move(outs[o]);
        check_tensor_size(meta[v].dtype, meta[v].shape, model.limits, pn.label + ": output '" + values[v].name + "'");
      }
      continue;
    }
    const oph_op_def* op = pn.op;
    in_infos.assign(pn.inputs.size(), oph_value_info{});
    const_views.assign(pn.inputs.size(), oph_tensor{});
    // Type constraints: every actual value must have an allowed dtype, one dtype per type variable.
    std::map<std::string, std::pair<DType, size_t>> bound;
    for (size_t i = 0; i < pn.inputs.size(); ++i) {
      int v = pn.inputs[i];
      if (v < 0) {
        in_infos[i].struct_size = OPH_VALUE_INFO_STRUCT_SIZE;
        in_infos[i].present = false;
        continue;
      }
      const ValueMeta& m = meta[v];
      if (m.dtype == DType::kUndefined) {
        throw Error(Code::kInvalidArgument, pn.label + ": the element type of input '" + values[v].name +
                                                "' is unknown; declare it in the model's graph inputs");
      }
      in_infos[i] = to_value_info(m, values[v].constant, &const_views[i]);
      size_t f = std::min(i, op->num_inputs ? op->num_inputs - 1 : 0);
      if (op->num_inputs == 0) continue;
      const oph_io_def* d = op->inputs[f];
      const oph_type_constraint* tc = nullptr;
      for (size_t c = 0; c < op->num_type_constraints; ++c) {
        const oph_type_constraint* t = op->type_constraints[c];
        if (d->type_var && std::string_view(t->type_var) == d->type_var) tc = t;
      }
      if (!tc) continue;
      oph_dtype dl = to_dl(m.dtype);
      bool ok = false;
      std::string allowed;
      for (size_t a = 0; a < tc->num_allowed; ++a) {
        const oph_dtype& x = tc->allowed[a];
        ok = ok || (x.code == dl.code && x.bits == dl.bits && x.lanes == dl.lanes);
        allowed += (a ? ", " : "") + std::string(dtype_name(from_dl(x)));
      }
      if (!ok) {
        throw Error(Code::kInvalidArgument, pn.label + ": input " + std::to_string(i) + " '" + values[v].name +
                                                "' is " + dtype_name(m.dtype) + " but the op accepts " + allowed +
                                                " for " + d->type_var);
      }
      auto [it, fresh] = bound.emplace(d->type_var, std::make_pair(m.dtype, i));
      if (!fresh && it->second.first != m.dtype) {
        throw Error(Code::kInvalidArgument,
                    pn.label + ": input " + std::to_string(i) + " '" + values[v].name + "' is " +
                        dtype_name(m.dtype) + " but type " + d->type_var + " is already " +
                        dtype_name(it->second.first) + " from input " + std::to_string(it->second.second) +
                        "; insert a Cast");
      }
    }
    out_infos.assign(pn.outputs.size(), oph_value_info{});
    for (size_t o = 0; o < pn.outputs.size(); ++o) {
      out_infos[o].struct_size = OPH_VALUE_INFO_STRUCT_SIZE;
      out_infos[o].present = pn.outputs[o] >= 0;
      out_infos[o].ndim = -2;  // sentinel: infer must set it
    }
    oph_infer_context ic{};
    ic.struct_size = OPH_INFER_CONTEXT_STRUCT_SIZE;
    ic.services = host_services();
    ic.op = op;
    ic.num_inputs = in_infos.size();
    ic.inputs = pointers_to(in_infos, in_ptrs);
    ic.num_outputs = out_infos.size();
    ic.outputs = pointers_to(out_infos, out_ptrs);
    ic.num_attrs = pn.attrs.values.size();
    ic.attrs = pointers_to(pn.attrs.values, attr_ptrs);
    ic.node_name = pn.node->name.c_str();
    throw_if_error(op->infer(&ic), pn.label + ": shape inference failed");
    for (size_t o = 0; o < pn.outputs.size(); ++o) {
      int v = pn.outputs[o];
      if (v < 0) continue;
      const oph_value_info& oi = out_infos[o];
      DType dt = from_dl(oi.dtype);
      if (oi.ndim == -2 || dt == DType::kUndefined) {
        throw Error(Code::kInternal, pn.label + ": the pack's infer() did not set output " + std::to_string(o) +
                                         " (dtype and shape); this is a bug in pack '" + pn.entry->source.plugin_name + "'");
      }
      if (oi.ndim > OPH_MAX_NDIM) {
        throw Error(Code::kInternal, pn.label + ": infer() returned rank " + std::to_string(oi.ndim) +
                                         " above OPH_MAX_NDIM");
      }
      ValueMeta& m = meta[v];
      m.dtype = dt;
      m.rank_known = oi.ndim >= 0;
      m.shape.assign(oi.shape, oi.shape + std::max(0, oi.ndim));
      for (int64_t& d : m.shape)
        if (d < 0) d = OPH_DIM_UNKNOWN;
      check_tensor_size(m.dtype, m.shape, model.limits, pn.label + ": output '" + values[v].name + "'");
      spdlog::trace("infer {}: output '{}' {} {}", pn.label, values[v].name, dtype_name(m.dtype), dims_string(m));
    }
  }
  return meta;
}

namespace {

// Nested sessions (constant folding runs single nodes through a session of their own) log at debug level.
thread_local bool g_quiet_build = false;

// Values (initializers, graph inputs, node outputs) and resolved nodes of s->model. Returns the number of
// Constant nodes turned into values.
size_t resolve_graph(Session::Impl* s, const OpRegistry& registry, const std::vector<std::string>& devices,
                     const SessionOptions& options, const UnloadedHint& unloaded_hint) {
  const Model& m = s->model;
  const std::string file = m.path.string();

  // Values: initializers, graph inputs, node outputs.
  std::map<std::string, int> index;
  auto add_value = [&](const std::string& name) {
    auto [it, fresh] = index.emplace(name, static_cast<int>(s->values.size()));
    if (fresh) s->values.push_back(ValueSlot{name});
    return it->second;
  };
  for (const auto& [name, tensor] : m.initializers) s->values[add_value(name)].constant = &tensor;
  s->initializer_inputs = m.initializer_inputs;
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    int v = add_value(m.inputs[i].name);
    s->values[v].graph_input = static_cast<int>(i);
    s->input_values.push_back(v);
    s->input_infos.push_back({m.inputs[i].name, m.inputs[i].dtype,
                              m.inputs[i].has_shape ? m.inputs[i].shape : std::vector<int64_t>{}});
  }

  // Resolve every node.
  s->nodes.reserve(m.nodes.size());
  size_t folded_constants = 0;
  for (size_t ni = 0; ni < m.nodes.size(); ++ni) {
    const Node& n = m.nodes[ni];
    if (auto value = constant_node_value(n, file); value && m.opset_imports.count("")) {
      // A Constant node is a value known at load: it becomes a constant input of its consumers (so their
      // infer() sees it) and never runs.
      int v = add_value(n.outputs[0]);
      s->values[v].constant = &s->constants.emplace_back(std::move(*value));
      ++folded_constants;
      continue;
    }
    PreparedNode pn;
    pn.node = &n;
    auto opset_it = m.opset_imports.find(n.domain);
    if (opset_it == m.opset_imports.end()) {
      std::string dom = n.domain.empty() ? "ai.onnx (\"\")" : "'" + n.domain + "'";
      throw Error(Code::kInvalidArgument,
                  file + ": node '" + n.name + "' (" + op_id(n) + ") uses domain " + dom +
                      " but the model has no opset_import for it; add opset_import {domain: \"" + n.domain +
                      "\", version: N} to the model (the exporter's custom_opsets option does this)");
    }
    int64_t opset = opset_it->second;
    if (is_control_flow(n)) {  // run by the host: its bodies are sessions of their own
      pn.label = file + ": node '" + n.name + "' (" + op_id(n) + ", opset " + std::to_string(opset) +
                 ") run by the host";
      ControlFlowKernel::Env env{s->plugins, &registry, options, m.path, m.limits};
      auto kernel = std::make_unique<ControlFlowKernel>(n, opset, std::move(env), pn.label);
      pn.op = kernel->op_def();
      pn.entry = &control_flow_entry(n.op_type);
      pn.device = "cpu";
      pn.state = pn.control = kernel.get();
      s->control_kernels.push_back(std::move(kernel));
    }
    const OpEntry* entry = pn.control ? pn.entry : nullptr;
    for (const std::string& dev : devices) {
      if (entry) break;
      entry = registry.resolve(n.domain, n.op_type, opset, dev);
    }
    if (!entry) {
      std::string hint = registry.hint(n.domain, n.op_type, opset, devices.front());
      if (unloaded_hint) {
        std::string why = unloaded_hint(n.domain, n.op_type, opset);
        if (!why.empty()) hint = hint.empty() ? why : why + "; " + hint;
      }
      throw Error(Code::kNotFound, file + ": node '" + n.name + "' (" + op_id(n) + ", opset " +
                                       std::to_string(opset) + "): no loaded pack provides this op" +
                                       (hint.empty() ? "; check `ophost plugins -v` for the ops that are loaded"
                                                     : "; " + hint));
    }
    if (!pn.control) {
      pn.op = entry->op;
      pn.entry = entry;
      pn.device = entry->device;
      std::string where = entry->source.plugin ? entry->source.plugin->library_path().string()
                                               : entry->source.manifest_path.string();
      pn.label = file + ": node '" + n.name + "' (" + op_id(n) + ", opset " + std::to_string(opset) +
                 ") from pack '" + entry->source.plugin_name + "' (" + where + ")";
      check_arity(pn, false);
      check_arity(pn, true);
      resolve_attrs(pn);
    }
    for (const std::string& in : n.inputs) {
      if (in.empty()) {
        pn.inputs.push_back(-1);
        continue;
      }
      auto it = index.find(in);
      if (it == index.end()) {
        throw Error(Code::kInvalidArgument, pn.label + ": input '" + in + "' is not defined before this node");
      }
      pn.inputs.push_back(it->second);
      s->values[it->second].consumers.push_back(static_cast<int>(s->nodes.size()));
      s->values[it->second].last_use = static_cast<int>(s->nodes.size());
    }
    for (const std::string& out : n.outputs) {
      if (out.empty()) {
        pn.outputs.push_back(-1);
        continue;
      }
      int v = add_value(out);
      s->values[v].producer = static_cast<int>(s->nodes.size());
      pn.outputs.push_back(v);
    }
    s->nodes.push_back(std::move(pn));
  }
  for (const ModelValueInfo& out : m.outputs) {
    auto it = index.find(out.name);
    if (it == index.end()) {
      throw Error(Code::kInvalidArgument, file + ": graph output '" + out.name + "' is never produced");
    }
    s->values[it->second].graph_output = true;
    s->output_values.push_back(it->second);
  }
  return folded_constants;
}

std::vector<ValueMeta> declared_inputs(const Model& m) {
  std::vector<ValueMeta> declared;
  for (const ModelValueInfo& in : m.inputs) {
    ValueMeta vm;
    vm.dtype = in.dtype;
    vm.rank_known = in.has_shape;
    vm.shape = in.shape;
    declared.push_back(vm);
  }
  return declared;
}

// The registry-backed hooks of the graph passes.
PassHooks make_pass_hooks(const std::shared_ptr<const PluginSet>& plugins, const OpRegistry& registry,
                          const std::vector<std::string>& devices, const SessionOptions& options) {
  PassHooks h;
  // One node on constant inputs: a one-node model run through a session of its own (level 0), so the node is
  // resolved, checked, inferred and computed exactly as it would be in the graph.
  h.evaluate = [plugins, &registry, devices, options](const Model& model, const Node& node,
                                                      const std::vector<const Tensor*>& inputs)
      -> std::optional<std::vector<Tensor>> {
    if (auto value = constant_node_value(node, model.path.string()); value && model.opset_imports.count(""))
      return std::vector<Tensor>{std::move(*value)};
    try {
      Model one;
      one.path = model.path;
      one.ir_version = model.ir_version;
      one.opset_imports = model.opset_imports;
      Node n = node;
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (!inputs[i]) continue;
        n.inputs[i] = "in" + std::to_string(i);
        if (std::none_of(one.initializers.begin(), one.initializers.end(),
                         [&](const auto& p) { return p.first == n.inputs[i]; }))
          one.initializers.emplace_back(n.inputs[i], *inputs[i]);
      }
      for (size_t o = 0; o < n.outputs.size(); ++o) {
        if (n.outputs[o].empty()) continue;
        n.outputs[o] = "out" + std::to_string(o);
        ModelValueInfo vi;
        vi.name = n.outputs[o];
        one.outputs.push_back(vi);
      }
      one.nodes.push_back(std::move(n));
      SessionOptions o = options;
      o.opt_level = 0;
      o.disabled_passes.clear();
      o.profile = false;
      std::unique_ptr<Session::Impl> s = build_nested_session(plugins, registry, std::move(one), o);
      std::vector<NamedTensor> outs;
      s->run({}, outs);
      std::vector<Tensor> result;
      size_t k = 0;
      for (const std::string& name : node.outputs) result.push_back(name.empty() ? Tensor() : std::move(outs[k++].tensor));
      return result;
    } catch (const std::exception& e) {
      spdlog::debug("constant-folding: {} not folded: {}", describe_node(node), e.what());
      return std::nullopt;
    }
  };
  h.infer_shapes = [plugins, &registry, devices, options](const Model& model) {
    std::map<std::string, InferredValue> shapes;
    try {
      auto s = std::make_unique<Session::Impl>();
      s->plugins = plugins;
      s->model = model;  // tensors are shared, not copied
      resolve_graph(s.get(), registry, devices, options, {});
      std::vector<ValueMeta> meta = s->infer_all(declared_inputs(s->model));
      for (size_t v = 0; v < s->values.size(); ++v)
        if (meta[v].rank_known) shapes[s->values[v].name] = {meta[v].shape, meta[v].dtype};
    } catch (const std::exception& e) {
      spdlog::debug("constant-folding: shapes of {} not inferred before folding: {}", model.path.string(), e.what());
      shapes.clear();
    }
    return shapes;
  };
  h.can_fuse_conv = [&registry, devices](const Model& model, const Node& conv, const Node& act) {
    const int64_t opset = model.opset_imports.count("") ? model.opset_imports.at("") : 0;
    const OpEntry* c = nullptr;
    for (const std::string& dev : devices)
      if ((c = registry.resolve(conv.domain, conv.op_type, opset, dev))) break;
    if (!c) return false;
    const OpEntry* fused = registry.resolve(kFusedDomain, kFusedConv, 1, c->device);
    if (!fused || !(fused->op->flags & OPH_OP_FLAG_ALLOW_FUSION)) return false;
    const OpEntry* a = nullptr;
    for (const std::string& dev : devices)
      if ((a = registry.resolve(act.domain, act.op_type, opset, dev))) break;
    if (!a || a->device != c->device) return false;
    // A kernel from another pack (an override) is replaced only when it allows fusion itself.
    auto allowed = [&](const OpEntry* e) {
      return (e->op->flags & OPH_OP_FLAG_ALLOW_FUSION) || e->source.plugin_name == fused->source.plugin_name;
    };
    return allowed(c) && allowed(a);
  };
  return h;
}

}  // namespace

namespace {

// A standard opset from the future (newer than every released ONNX opset and every op version a loaded pack
// registers) would run with guessed semantics: refused unless the caller allows it. Opsets up to the newest
// released one load: packs register open-ended version ranges for ops that did not change since. Custom
// domains version their own ops: their packs' ranges decide.
void check_opset_imports(const Model& m, const OpRegistry& registry, bool allow_newer) {
  // ONNX 1.18 (the release of IR version 11, the newest the model loader reads).
  static const std::map<std::string, int64_t> kNewestReleased = {{"", 23}, {"ai.onnx.ml", 5}};
  for (const auto& [domain, version] : m.opset_imports) {
    auto released = kNewestReleased.find(domain);
    if (released == kNewestReleased.end()) continue;
    int64_t newest_op = 0;
    std::string pack;
    for (const OpEntry* e : registry.all()) {
      if (e->domain != domain || e->since_version <= newest_op) continue;
      newest_op = e->since_version;
      pack = e->source.plugin_name;
    }
    const int64_t newest = std::max(released->second, newest_op);
    if (version <= newest) continue;
    const std::string name = domain.empty() ? "ai.onnx" : domain;
    const std::string what = m.path.string() + ": imports " + name + " opset " + std::to_string(version) +
                             ", newer than the newest released " + name + " opset (" +
                             std::to_string(released->second) + ", ONNX 1.18)" +
                             (pack.empty() ? std::string()
                                           : " and any op version the loaded packs register (the newest is opset " +
                                                 std::to_string(newest_op) + ", in pack '" + pack + "')");
    if (!allow_newer) {
      throw Error(Code::kUnimplemented, what + "; export the model with opset " + std::to_string(newest) +
                                            " or lower, or pass --allow-newer-opset (SessionOptions::"
                                            "allow_newer_opset) to run it with the newest semantics the packs know");
    }
    spdlog::warn("{}; running it with the newest semantics the packs know (--allow-newer-opset): ops changed in "
                 "later opsets may behave differently", what);
  }
}

// A graph output's declared element type must be the one inference gives; a declared shape that disagrees is
// reported (exporters sometimes write stale shapes) but not refused.
void check_declared_outputs(const Session::Impl& s) {
  for (size_t o = 0; o < s.output_values.size(); ++o) {
    const ModelValueInfo& declared = s.model.outputs[o];
    const ValueMeta& got = s.static_plan.values[static_cast<size_t>(s.output_values[o])];
    const std::string produced = std::string(dtype_name(got.dtype)) + " " + dims_string(got);
    const std::string decl = std::string(dtype_name(declared.dtype)) + " " +
                             (declared.has_shape ? shape_to_string(declared.shape) : std::string("[?]"));
    const int producer = s.values[static_cast<size_t>(s.output_values[o])].producer;
    const std::string by = producer >= 0 ? " by " + s.nodes[static_cast<size_t>(producer)].label : std::string();
    if (declared.dtype != DType::kUndefined && got.dtype != DType::kUndefined && declared.dtype != got.dtype) {
      throw Error(Code::kInvalidArgument, s.model.path.string() + ": graph output '" + declared.name +
                                              "' is declared " + decl + " but is produced as " + produced + by +
                                              "; correct the output's declaration (or export the model again)");
    }
    bool shape_disagrees = declared.has_shape && got.rank_known && declared.shape.size() != got.shape.size();
    for (size_t k = 0; !shape_disagrees && declared.has_shape && got.rank_known && k < got.shape.size(); ++k)
      shape_disagrees = declared.shape[k] >= 0 && got.shape[k] >= 0 && declared.shape[k] != got.shape[k];
    if (shape_disagrees) {
      spdlog::log(g_quiet_build ? spdlog::level::debug : spdlog::level::warn,
                  "{}: graph output '{}' is declared {} but is produced as {}{}; the produced shape is used",
                  s.model.path.string(), declared.name, decl, produced, by);
    }
  }
}

}  // namespace

std::unique_ptr<Session::Impl> build_session(std::shared_ptr<const PluginSet> plugins, const OpRegistry& registry,
                                             Model model, const SessionOptions& options,
                                             const UnloadedHint& unloaded_hint) {
  // Devices: the preference list (default cpu); a requested device without a usable backend is an error.
  const std::map<std::string, DeviceTarget> targets = device_targets(plugins.get());
  const std::vector<std::string> devices = placement_order(options.devices, targets);

  // Nested sessions (a node evaluated by constant folding, an If/Loop/Scan body) share the imports of the model
  // that was checked when its own build began.
  if (!g_quiet_build) check_opset_imports(model, registry, options.allow_newer_opset);

  // Graph passes on the IR, before anything is resolved against it.
  PassOptions popts;
  popts.level = options.opt_level;
  popts.disabled = options.disabled_passes;
  popts.fold_extra_budget = options.max_fold_bytes;
  run_passes(model, popts, make_pass_hooks(plugins, registry, devices, options));

  auto s = std::make_unique<Session::Impl>();
  s->plugins = std::move(plugins);
  s->model = std::move(model);
  const Model& m = s->model;
  const std::string file = m.path.string();
  const size_t folded_constants = resolve_graph(s.get(), registry, devices, options, unloaded_hint);
  for (PreparedNode& pn : s->nodes) pn.dl_type = targets.at(pn.device).dl_type;
  s->release_device_memory = [impl = s.get(), targets] { free_device_constants(*impl, targets); };
  insert_copies(*s, targets);
  for (const auto& target : targets) {  // no structured binding: clang 14 cannot capture one in a lambda
    const auto& type = target.first;
    const auto& t = target.second;
    if (type == "cpu" || !t.usable) continue;
    bool used = std::any_of(s->values.begin(), s->values.end(), [&](const ValueSlot& v) { return v.device == type; });
    if (!used) continue;
    RawAllocator dev_raw;
    dev_raw.device = type;
    const oph_device_backend_def* d = t.backend;
    dev_raw.alloc = [d, type](size_t bytes, size_t alignment) -> void* {
      void* p = nullptr;
      oph_status* st = d->alloc(d->backend, 0, bytes, alignment, &p);
      if (st) {
        spdlog::error("{} backend alloc of {} bytes failed: {}", type, bytes, consume_status(st));
        return nullptr;
      }
      return p;
    };
    dev_raw.free = [d](void* p) { d->free(d->backend, 0, p); };
    s->device_pools[type] = std::make_unique<MemoryPool>(std::move(dev_raw), options.mem_limit);
  }

  // Shapes from the declared graph inputs.
  std::vector<ValueMeta> declared = declared_inputs(m);
  s->static_plan.values = s->infer_all(declared);
  s->static_plan_complete = std::all_of(declared.begin(), declared.end(),
                                        [](const ValueMeta& v) { return v.fully_known(); });
  for (const ValueMeta& d : declared) s->static_plan.input_shapes.push_back(d.shape);
  for (size_t o = 0; o < s->output_values.size(); ++o) {
    const ValueMeta& vm = s->static_plan.values[s->output_values[o]];
    s->output_infos.push_back({m.outputs[o].name, vm.dtype, vm.rank_known ? vm.shape : std::vector<int64_t>{}});
  }
  check_declared_outputs(*s);

  // The pool: on top of the CPU backend's raw allocation when one is loaded, else the system allocator.
  RawAllocator raw = system_allocator();
  static const std::vector<std::unique_ptr<LoadedPlugin>> kNoPlugins;
  for (const auto& plugin : s->plugins ? s->plugins->loaded() : kNoPlugins) {
    for (const oph_device_backend_def* d : plugin->devices()) {
      if (std::string_view(d->device_type) != "cpu" || !d->alloc || !d->free) continue;
      raw.device = "cpu";
      raw.alloc = [d](size_t bytes, size_t alignment) -> void* {
        void* p = nullptr;
        oph_status* st = d->alloc(d->backend, 0, bytes, alignment, &p);
        if (st) {
          spdlog::error("cpu backend alloc of {} bytes failed: {}", bytes, consume_status(st));
          return nullptr;
        }
        return p;
      };
      raw.free = [d](void* p) { d->free(d->backend, 0, p); };
    }
  }
  s->pool = std::make_unique<MemoryPool>(std::move(raw), options.mem_limit);
  s->pool->reserve_ahead(options.mem_pool_size);
  s->profiling = options.profile;
  s->check_numerics = options.check_numerics;
  s->debug_kernels = options.debug_kernels;
  s->run_timeout_ms = options.run_timeout_ms;
  if (options.execution_mode == SessionOptions::ExecutionMode::kParallel)
    s->inter_op = std::make_unique<InterOpPool>(options.inter_op_threads > 0 ? options.inter_op_threads : 2);
  s->profile_start = std::chrono::steady_clock::now();
  if (s->static_plan_complete) {
    s->static_exec = s->make_plan(s->static_plan.input_shapes, s->static_plan.values);
    if (s->static_exec->planned) {
      spdlog::log(g_quiet_build ? spdlog::level::debug : spdlog::level::info, "memory plan: arena {} bytes for {} values ({} in place), lower bound {} bytes ({:.3f}x)",
                   s->static_exec->arena_bytes, s->static_exec->placed, s->static_exec->inplace,
                   s->static_exec->lower_bound,
                   s->static_exec->lower_bound
                       ? double(s->static_exec->arena_bytes) / double(s->static_exec->lower_bound)
                       : 1.0);
    }
  }

  // Kernels, created once per node (those of isolated packs in their worker process, through proxies).
  if (s->plugins) s->isolation = isolation::install_isolation(*s->plugins, s->nodes, options);
  for (PreparedNode& pn : s->nodes) {
    if (pn.op->flags & OPH_OP_FLAG_SERIALIZE_COMPUTE) pn.serialize = std::make_unique<std::mutex>();
    if (!pn.op->create_kernel) continue;
    std::vector<oph_value_info> ins, outs;
    std::vector<oph_tensor> views(pn.inputs.size());
    for (size_t i = 0; i < pn.inputs.size(); ++i) {
      int v = pn.inputs[i];
      if (v < 0) {
        oph_value_info absent{};
        absent.struct_size = OPH_VALUE_INFO_STRUCT_SIZE;
        ins.push_back(absent);
      } else {
        ins.push_back(to_value_info(s->static_plan.values[v], s->values[v].constant, &views[i]));
      }
    }
    for (int v : pn.outputs) {
      if (v < 0) {
        oph_value_info absent{};
        absent.struct_size = OPH_VALUE_INFO_STRUCT_SIZE;
        outs.push_back(absent);
      } else {
        outs.push_back(to_value_info(s->static_plan.values[v], nullptr, nullptr));
      }
    }
    std::vector<const oph_value_info*> in_ptrs, out_ptrs;
    std::vector<const oph_attr_value*> attr_ptrs;
    pointers_to(ins, in_ptrs);
    pointers_to(outs, out_ptrs);
    pointers_to(pn.attrs.values, attr_ptrs);
    const oph_kernel_create_args a =
        kernel_create_args(pn.op, in_ptrs, out_ptrs, attr_ptrs, pn.node->name.c_str(), {pn.dl_type, 0});
    throw_if_error(guarded_create_kernel(pn, &a, &pn.state), pn.label + ": create_kernel failed");
  }
  // Bodies were built by the static shape inference above; the registry is not theirs to keep.
  for (const auto& k : s->control_kernels) k->seal();
  warn_reference_kernels(*s, file);
  spdlog::log(g_quiet_build ? spdlog::level::debug : spdlog::level::info, "session: {} nodes resolved, {} Constant nodes turned into values, {} values, {} inputs, {} outputs ({})",
               s->nodes.size(), folded_constants, s->values.size(), s->input_values.size(), s->output_values.size(),
               file);
  return s;
}

std::unique_ptr<Session::Impl> build_nested_session(std::shared_ptr<const PluginSet> plugins,
                                                    const OpRegistry& registry, Model model,
                                                    const SessionOptions& options) {
  struct Quiet {
    bool was = g_quiet_build;
    Quiet() { g_quiet_build = true; }
    ~Quiet() { g_quiet_build = was; }
  } quiet;
  return build_session(std::move(plugins), registry, std::move(model), options);
}

Session::Impl::~Impl() {
  for (PreparedNode& pn : nodes) {
    if (pn.state && pn.op->destroy_kernel) pn.op->destroy_kernel(pn.state);
    pn.state = nullptr;
  }
  // Bound runs hold device arenas from the pools: drop them before the pools and uploaded constants go.
  static_exec.reset();
  last_exec.reset();
  if (release_device_memory) release_device_memory();
}

}  // namespace ophost
