// The pass pipeline (levels, names, logging) and the two structural passes: Identity/Dropout elimination and
// dead-node elimination.
#include "passes/passes.hpp"
#include "passes/graph_util.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

namespace ophost {

using passes::find_attr;
using passes::find_initializer;
using passes::opset_of;
using passes::Uses;

const std::vector<PassInfo>& all_passes() {
  static const std::vector<PassInfo> kPasses = {
      {"float16-promotion", 1, "a float16/bfloat16 graph runs in float32: half-precision constants converted once, "
                               "graph inputs and outputs cast once at the edges"},
      {"identity-elimination", 1, "Identity and inference-mode Dropout removed, consumers rewired"},
      {"dead-node-elimination", 1, "nodes whose outputs reach no graph output removed, unread initializers dropped"},
      {"constant-folding", 1, "nodes with only constant inputs run once at load; their outputs become constants"},
      {"qdq-fusion", 2, "DequantizeLinear -> Conv/MatMul [-> Relu/Clip] -> QuantizeLinear (int8 QDQ models) rewritten "
                        "to QLinearConv / QLinearMatMul on the int8 weights"},
      {"conv-bn-folding", 2, "Conv followed by BatchNormalization folded into the Conv's weights and bias"},
      {"batchnorm-as-conv", 3, "BatchNormalization left over (no Conv before it) rewritten to a 1x1 depthwise Conv, "
                               "so activation fusion and the blocked layouts take it"},
      {"conv-affine-folding", 3, "Conv followed by per-channel constant Mul/Add folded into the Conv's weights and bias"},
      {"pad-conv-folding", 3, "zero Pad on spatial axes read only by a Conv (or AveragePool) folded into its pads; "
                             "Pad nodes with all-zero pads removed"},
      {"conv-add-fusion", 2, "Conv followed by Add of a same-shape tensor rewritten to com.ophost::FusedConv with input Z"},
      {"conv-activation-fusion", 2, "Conv followed by an activation (also HardSwish and SiLU written out) rewritten to com.ophost::FusedConv (oneDNN post-op)"},
      {"layer-norm-fusion", 2, "LayerNormalization written out as ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div[/Mul/Add] "
                               "over trailing axes rewritten to com.ophost::LayerNormalization"},
      {"matmul-bias-fusion", 2, "MatMul by constant 2-D weights followed by Add of a constant 1-D bias rewritten to "
                                "com.ophost::FusedMatMul"},
      {"gelu-fusion", 2, "GELU written out as Div/Erf/Add/Mul/Mul (or its tanh approximation with Pow/Tanh) "
                         "rewritten to com.ophost::Gelu"},
      {"nchwc-layout", 3, "activations between convolutions stay channel-blocked (nChw8c/16c), reordered at the edges"},
  };
  return kPasses;
}

namespace {

// The value of an initializer or of a standard Constant node's `value` tensor (this pass runs before
// constant-folding turns Constant nodes into initializers); nullptr for anything else. A scan, done only for
// Dropout nodes that name a training_mode.
const Tensor* constant_tensor(const Model& m, const std::string& name) {
  if (const Tensor* t = find_initializer(m, name)) return t;
  for (const Node& c : m.nodes) {
    if (c.op_type != "Constant" || !c.domain.empty() || c.outputs.size() != 1 || c.outputs[0] != name) continue;
    const Attribute* v = find_attr(c, "value");
    return v && v->type == OPH_ATTR_TENSOR ? &v->t : nullptr;
  }
  return nullptr;
}

// A constant scalar ratio of 0 (float, double or float16 zero bits).
bool is_zero_ratio(const Model& m, const std::string& name) {
  const Tensor* t = constant_tensor(m, name);
  if (!t || t->numel() != 1) return false;
  switch (t->dtype()) {
    case DType::kFloat32: return *static_cast<const float*>(t->data()) == 0.0f;
    case DType::kFloat64: return *static_cast<const double*>(t->data()) == 0.0;
    case DType::kFloat16: return (*static_cast<const uint16_t*>(t->data()) & 0x7fffu) == 0;
    default: return false;
  }
}

// Dropout that is the identity on its first output: opset >= 7 (no is_test attribute), mask output absent or
// unused, and training_mode absent or a constant false, or a constant true with a constant ratio of 0 (PyTorch
// exports F.dropout(x, p=0.0, training=True) so, e.g. torchvision's Swin attention; ONNX Runtime removes it too).
bool is_inference_dropout(const Model& m, const Node& n, const Uses& uses) {
  if (n.op_type != "Dropout" || !n.domain.empty() || opset_of(m, "") < 7) return false;
  if (n.inputs.empty() || n.inputs[0].empty() || n.outputs.empty()) return false;
  if (n.outputs.size() > 1 && !uses.unused(n.outputs[1])) return false;
  if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
    const Tensor* t = constant_tensor(m, n.inputs[2]);
    if (!t || t->dtype() != DType::kBool || t->numel() != 1) return false;
    const bool training = *static_cast<const uint8_t*>(t->data()) != 0;
    if (training && !(n.inputs.size() > 1 && !n.inputs[1].empty() && is_zero_ratio(m, n.inputs[1]))) return false;
  }
  return true;
}

bool is_identity(const Node& n) {
  return n.op_type == "Identity" && n.domain.empty() && n.inputs.size() == 1 && !n.inputs[0].empty() &&
         n.outputs.size() == 1;
}

}  // namespace

PassResult eliminate_identities(Model& m) {
  PassResult r{"identity-elimination"};
  size_t identities = 0, dropouts = 0, kept = 0;
  std::set<std::string> graph_inputs;
  for (const ModelValueInfo& v : m.inputs) graph_inputs.insert(v.name);
  // Built once and kept current below: rebuilding it for every Identity cost Swin-T (91 Identity nodes among
  // 6623) half a second of its load. Only existence (producer) and reader counts (consumers' sizes) are read
  // here, so the node indices the maps hold may go stale as nodes are erased.
  Uses uses(m);
  auto forget_node = [&uses](const Node& gone) {
    for (const std::string& in : gone.inputs)
      if (auto it = uses.consumers.find(in); !in.empty() && it != uses.consumers.end() && !it->second.empty())
        it->second.pop_back();
    for (const std::string& out : gone.outputs) uses.producer.erase(out);
  };
  // Readers of `from` now read `to`; `from`'s producer (if any) now writes `to`.
  auto rename_in_uses = [&uses](const std::string& from, const std::string& to) {
    if (auto it = uses.consumers.find(from); it != uses.consumers.end()) {
      std::vector<int>& dst = uses.consumers[to];
      dst.insert(dst.end(), it->second.begin(), it->second.end());
      uses.consumers.erase(from);
    }
    if (auto it = uses.producer.find(from); it != uses.producer.end()) {
      const int p = it->second;
      uses.producer.erase(it);
      uses.producer[to] = p;
    }
  };
  for (size_t i = 0; i < m.nodes.size();) {
    const Node& n = m.nodes[i];
    if ((n.op_type != "Identity" && n.op_type != "Dropout") || !n.domain.empty()) {
      ++i;
      continue;
    }
    const bool dropout = is_inference_dropout(m, n, uses);
    if (!dropout && !is_identity(n)) {
      ++i;
      continue;
    }
    const std::string x = n.inputs[0], y = n.outputs[0];
    if (y.empty() || !uses.is_output(y)) {
      // Consumers of Y read X instead (X is defined before this node, so the order stays valid).
      forget_node(n);
      m.nodes.erase(m.nodes.begin() + static_cast<std::ptrdiff_t>(i));
      if (!y.empty()) {
        passes::rename_value(m, y, x);
        rename_in_uses(y, x);
      }
    } else if (uses.producer.count(x) && !uses.is_output(x) && !graph_inputs.count(x) && !find_initializer(m, x)) {
      // Y is a graph output: its name must stay. X's producer writes Y directly and X's readers read Y.
      forget_node(n);
      m.nodes.erase(m.nodes.begin() + static_cast<std::ptrdiff_t>(i));
      passes::rename_value(m, x, y);
      rename_in_uses(x, y);
    } else {
      ++kept;  // graph input/initializer/graph output passed through to a graph output: the copy must stay
      ++i;
      continue;
    }
    (dropout ? dropouts : identities) += 1;
  }
  r.changed = identities + dropouts;
  r.message = std::to_string(identities) + " Identity and " + std::to_string(dropouts) + " Dropout nodes removed";
  if (kept) r.message += " (" + std::to_string(kept) + " kept: they copy a graph input, initializer or output to a graph output)";
  return r;
}

PassResult eliminate_dead_nodes(Model& m) {
  PassResult r{"dead-node-elimination"};
  std::set<std::string> needed;
  for (const ModelValueInfo& o : m.outputs) needed.insert(o.name);
  std::vector<bool> live(m.nodes.size(), false);
  for (size_t i = m.nodes.size(); i-- > 0;) {
    const Node& n = m.nodes[i];
    for (const std::string& out : n.outputs)
      if (!out.empty() && needed.count(out)) live[i] = true;
    if (!live[i]) continue;
    for (const std::string& in : n.inputs)
      if (!in.empty()) needed.insert(in);
  }
  std::vector<Node> kept;
  kept.reserve(m.nodes.size());
  size_t removed = 0;
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    if (live[i]) kept.push_back(std::move(m.nodes[i]));
    else ++removed;
  }
  m.nodes = std::move(kept);
  size_t before = m.initializers.size();
  std::erase_if(m.initializers, [&](const auto& init) { return !needed.count(init.first); });
  size_t dropped = before - m.initializers.size();
  r.changed = removed + dropped;
  r.message = std::to_string(removed) + " nodes removed, " + std::to_string(dropped) + " unread initializers dropped";
  return r;
}

std::vector<PassResult> run_passes(Model& model, const PassOptions& options, const PassHooks& hooks) {
  if (options.level < 0 || options.level > 3) {
    throw Error(Code::kInvalidArgument,
                "optimisation level " + std::to_string(options.level) + " is out of range; use 0, 1, 2 or 3");
  }
  const auto& passes = all_passes();
  for (const std::string& d : options.disabled) {
    if (std::none_of(passes.begin(), passes.end(), [&](const PassInfo& p) { return d == p.name; })) {
      std::string names;
      for (const PassInfo& p : passes) names += (names.empty() ? "" : ", ") + std::string(p.name);
      throw Error(Code::kInvalidArgument, "unknown pass '" + d + "' in --disable-pass; the passes are: " + names);
    }
  }
  auto enabled = [&](const char* name) {
    for (const PassInfo& p : passes)
      if (name == std::string_view(p.name))
        return p.level <= options.level &&
               std::find(options.disabled.begin(), options.disabled.end(), name) == options.disabled.end();
    return false;
  };
  std::vector<PassResult> results;
  auto record = [&](PassResult r) {
    spdlog::info("{}: {}", r.name, r.message);
    results.push_back(std::move(r));
  };
  const std::string file = model.path.string();
  if (options.level == 0) return results;
  spdlog::info("passes: optimisation level {} on {} ({} nodes)", options.level, file, model.nodes.size());
  if (enabled("float16-promotion")) record(promote_float16(model));
  if (enabled("identity-elimination")) record(eliminate_identities(model));
  if (enabled("dead-node-elimination")) record(eliminate_dead_nodes(model));
  const bool qdq = enabled("qdq-fusion");
  if (enabled("constant-folding"))
    record(fold_constants(model, hooks, options.fold_size_cap, options.fold_extra_budget, /*keep_8bit_dequantize=*/qdq));
  if (qdq) {
    PassResult fused = fuse_qdq(model);
    record(fused);
    if (fused.changed) {  // the DequantizeLinear nodes the fused ones no longer read: gone before folding
      PassResult dead = eliminate_dead_nodes(model);
      if (dead.changed) record(std::move(dead));
    }
    if (enabled("constant-folding")) {  // the DequantizeLinear of weights qdq-fusion did not take
      PassResult again = fold_constants(model, hooks, options.fold_size_cap, options.fold_extra_budget);
      if (again.changed) record(std::move(again));
    }
  }
  if (enabled("conv-bn-folding")) record(fold_conv_batchnorm(model));
  if (enabled("batchnorm-as-conv")) record(convert_batchnorm_to_conv(model, hooks));
  if (enabled("conv-affine-folding")) record(fold_conv_affine(model));
  if (enabled("pad-conv-folding")) record(fold_pad_into_conv(model));
  if (enabled("conv-add-fusion")) record(fuse_conv_add(model, hooks));
  if (enabled("conv-activation-fusion")) record(fuse_conv_activation(model, hooks));
  if (enabled("layer-norm-fusion")) record(fuse_layer_norm(model, hooks));
  if (enabled("matmul-bias-fusion")) record(fuse_matmul_bias(model, hooks));
  if (enabled("gelu-fusion")) record(fuse_gelu(model, hooks));
  if (enabled("nchwc-layout")) record(assign_nchwc_layout(model, hooks));
  // What the rewrites left unread (BatchNormalization parameters, inputs of folded nodes).
  if (enabled("dead-node-elimination")) {
    PassResult again = eliminate_dead_nodes(model);
    if (again.changed) record(std::move(again));
  }
  spdlog::info("passes: {} nodes after optimisation", model.nodes.size());
  return results;
}

}  // namespace ophost
