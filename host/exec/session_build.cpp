// Session construction: graph passes -> resolve -> validate (arity, attributes, types) -> infer -> create kernels.
// The node checks against op schemas are in node_schema.cpp, shape inference in shape_infer.cpp.
#include "exec/abi_calls.hpp"
#include "exec/session_build.hpp"
#include "exec/parallel.hpp"
#include "exec/placement.hpp"
#include "exec/session_impl.hpp"
#include "exec/control_flow.hpp"
#include "exec/isolation_proxy.hpp"
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
    if (fresh) {
      s->values.push_back(ValueSlot{name});
      s->values.back().blocked_layout = m.blocked_values.count(name) != 0;
    }
    return it->second;
  };
  for (const auto& [name, tensor] : m.initializers) s->values[add_value(name)].constant = &tensor;
  s->initializer_inputs = m.initializer_inputs;
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    int v = add_value(m.inputs[i].name);
    s->values[v].graph_input = static_cast<int>(i);
    s->input_values.push_back(v);
    ValueInfo info{m.inputs[i].name, m.inputs[i].dtype,
                   m.inputs[i].has_shape ? m.inputs[i].shape : std::vector<int64_t>{}};
    (i < m.required_inputs() ? s->input_infos : s->overridable_infos).push_back(std::move(info));
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
      pn.entry = &control_flow_entry(n.op_type);
      pn.schema = pn.entry->schema.get();
      pn.calls = &pn.schema->calls;
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
      pn.entry = entry;
      pn.schema = entry->schema.get();
      pn.calls = &pn.schema->calls;
      pn.device = pn.schema->device;
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

// A model of `node` alone (the evaluate and infer_node hooks): input i renamed "in<i>" and given by `input(i, name,
// one)` (which adds it as an initializer or a graph input; false: the node cannot be taken alone), outputs renamed
// "out<o>" and declared as graph outputs. nullopt when an input cannot be given.
template <class InputFn>
std::optional<Model> one_node_model(const Model& model, const Node& node, InputFn input) {
  Model one;
  one.path = model.path;
  one.ir_version = model.ir_version;
  one.opset_imports = model.opset_imports;
  one.limits = model.limits;
  Node n = node;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (n.inputs[i].empty()) continue;
    const std::string name = "in" + std::to_string(i);
    if (!input(i, name, one)) return std::nullopt;
    n.inputs[i] = name;
  }
  for (size_t o = 0; o < n.outputs.size(); ++o) {
    if (n.outputs[o].empty()) continue;
    n.outputs[o] = "out" + std::to_string(o);
    ModelValueInfo vi;
    vi.name = n.outputs[o];
    one.outputs.push_back(vi);
  }
  one.nodes.push_back(std::move(n));
  return one;
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
      // inputs[i] null: an absent optional input (the node's own input name is empty then too).
      std::optional<Model> one = one_node_model(model, node, [&](size_t i, const std::string& name, Model& m) {
        if (i >= inputs.size() || !inputs[i]) return false;
        m.initializers.emplace_back(name, *inputs[i]);
        return true;
      });
      if (!one) return std::nullopt;
      // A node run for folding allocates within the session's caps and, below those, the per-node folding cap:
      // an output over it would not be folded anyway (its shape may be known only now, from constant inputs:
      // a fuzzer's ConstantOfShape of 2 GiB was allocated before being kept as a node).
      one->limits.max_tensor_bytes = std::min<uint64_t>(model.limits.max_tensor_bytes, PassOptions{}.fold_size_cap);
      SessionOptions o = options;
      o.opt_level = 0;
      o.disabled_passes.clear();
      o.profile = false;
      std::unique_ptr<Session::Impl> s = build_nested_session(plugins, registry, std::move(*one), o);
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
  h.infer_node = [plugins, &registry, devices, options](const Model& model, const Node& node,
                                                        const std::vector<const Tensor*>& constants,
                                                        const std::vector<const InferredValue*>& shapes)
      -> std::optional<std::vector<InferredValue>> {
    try {
      std::optional<Model> one = one_node_model(model, node, [&](size_t i, const std::string& name, Model& m) {
        if (i < constants.size() && constants[i]) {
          m.initializers.emplace_back(name, *constants[i]);
          return true;
        }
        if (i >= shapes.size() || !shapes[i]) return false;
        ModelValueInfo vi;
        vi.name = name;
        vi.dtype = shapes[i]->dtype;
        vi.has_shape = true;
        vi.shape = shapes[i]->dims;
        vi.dim_params.assign(vi.shape.size(), "");
        m.inputs.push_back(vi);
        return true;
      });
      if (!one) return std::nullopt;
      auto s = std::make_unique<Session::Impl>();
      s->plugins = plugins;
      s->model = std::move(*one);
      resolve_graph(s.get(), registry, devices, options, {});
      std::vector<ValueMeta> meta = s->infer_all(declared_inputs(s->model));
      std::vector<InferredValue> result(node.outputs.size());
      for (size_t o = 0, k = 0; o < node.outputs.size(); ++o) {
        if (node.outputs[o].empty()) continue;
        const ValueMeta& vm = meta[static_cast<size_t>(s->output_values[k++])];
        if (vm.rank_known) result[o] = {vm.shape, vm.dtype};
      }
      return result;
    } catch (const std::exception& e) {
      spdlog::debug("constant-folding: shapes of {} not inferred: {}", describe_node(node), e.what());
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
  // The entry a node resolves to on the first device that serves it (nullptr: none).
  auto resolve_node = [&registry, devices](const Model& model, const Node& n) -> const OpEntry* {
    const int64_t opset = model.opset_imports.count("") ? model.opset_imports.at("") : 0;
    for (const std::string& dev : devices)
      if (const OpEntry* e = registry.resolve(n.domain, n.op_type, opset, dev)) return e;
    return nullptr;
  };
  // A kernel from another pack than the fused op's (an override) is replaced only when it allows fusion itself.
  auto replaceable = [](const OpEntry* e, const OpEntry* fused) {
    return e->schema->allow_fusion || e->source.plugin_name == fused->source.plugin_name;
  };
  // com.ophost::FusedConv on the device of `conv`, when a pack serves it with OPH_OP_FLAG_ALLOW_FUSION.
  auto fused_conv_on = [&registry](const OpEntry* conv) -> const OpEntry* {
    const OpEntry* fused = registry.resolve(kFusedDomain, kFusedConv, 1, conv->schema->device);
    return fused && fused->schema->allow_fusion ? fused : nullptr;
  };
  h.can_fuse_conv = [=](const Model& model, const Node& conv, const Node& act) {
    const OpEntry* c = resolve_node(model, conv);
    const OpEntry* fused = c ? fused_conv_on(c) : nullptr;
    const OpEntry* a = fused ? resolve_node(model, act) : nullptr;
    return a && a->schema->device == c->schema->device && replaceable(c, fused) && replaceable(a, fused);
  };
  h.can_block_conv = [=, &registry](const Model& model, const Node& conv) {
    const OpEntry* c = resolve_node(model, conv);
    const OpEntry* fused = c ? fused_conv_on(c) : nullptr;
    if (!fused) return false;
    // The pack that serves FusedConv and LayoutReorder both implements the blocked-layout attributes.
    const OpEntry* reorder = registry.resolve(kFusedDomain, kLayoutReorder, 1, c->schema->device);
    return reorder && reorder->source.plugin_name == fused->source.plugin_name && replaceable(c, fused);
  };
  h.can_block_op = [=, &registry](const Model& model, const Node& n, const char* blocked_op) {
    const OpEntry* e = resolve_node(model, n);
    if (!e) return false;
    const OpEntry* reorder = registry.resolve(kFusedDomain, kLayoutReorder, 1, e->schema->device);
    const OpEntry* blocked = registry.resolve(kFusedDomain, blocked_op, 1, e->schema->device);
    return reorder && blocked && blocked->source.plugin_name == reorder->source.plugin_name && replaceable(e, blocked);
  };
  h.can_fuse_op = [=, &registry](const Model& model, const char* fused_op, const std::vector<const Node*>& nodes) {
    const OpEntry* first = nodes.empty() ? nullptr : resolve_node(model, *nodes[0]);
    if (!first) return false;
    const OpEntry* fused = registry.resolve(kFusedDomain, fused_op, 1, first->schema->device);
    if (!fused || !fused->schema->allow_fusion) return false;
    return std::all_of(nodes.begin(), nodes.end(), [&](const Node* n) {
      const OpEntry* e = resolve_node(model, *n);
      return e && e->schema->device == first->schema->device && replaceable(e, fused);
    });
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
      if (e->schema->domain != domain || e->schema->since_version <= newest_op) continue;
      newest_op = e->schema->since_version;
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
  // Dumped values (--dump, and ophost diff, which reads them) must be in ONNX's plain layout: no blocked regions.
  if (!options.dump_dir.empty() && options.opt_level >= 3 &&
      std::find(popts.disabled.begin(), popts.disabled.end(), "nchwc-layout") == popts.disabled.end()) {
    popts.disabled.push_back("nchwc-layout");
    spdlog::info("passes: nchwc-layout is off while values are dumped (dumps show every value in plain NCHW)");
  }
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
    if (pn.schema->serialize_compute) pn.serialize = std::make_unique<std::mutex>();
    if (!pn.calls->create_kernel) continue;
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
        kernel_create_args(pn.calls->def, in_ptrs, out_ptrs, attr_ptrs, pn.node->name.c_str(), {pn.dl_type, 0});
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
    if (pn.state && pn.calls->destroy_kernel) pn.calls->destroy_kernel(pn.state);
    pn.state = nullptr;
  }
  // Bound runs hold device arenas from the pools: drop them before the pools and uploaded constants go.
  static_exec.reset();
  last_exec.reset();
  if (release_device_memory) release_device_memory();
}

}  // namespace ophost
