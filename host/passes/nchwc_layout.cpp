// nchwc-layout: keeps 4-D activations channel-blocked (nChw8c/16c) between convolutions, as ONNX Runtime's
// NCHWc transformer does. oneDNN's fast convolution kernels take blocked activations; on plain NCHW every Conv
// paid a reorder in and a reorder out (22-34% of the oneDNN time of BlazeFace and M-LSD).
//
// A blocked value keeps its [N, C, H, W] shape and size (C a multiple of 8, so the blocked layout needs no
// padding): the host plans, allocates and passes it like any other value, and only the kernels that read or
// write it know the byte order. Which values are blocked, in node order:
//   - a Conv/FusedConv output, when the Conv may use blocked layouts (PassHooks::can_block_conv: 4-D constant
//     weights, the serving pack implements the layout attributes), its output channels are a multiple of 8, the
//     output is no graph output, and at least one reader takes it blocked;
//   - the outputs of a layout-oblivious op whose tensor inputs include a blocked one: unary activations and
//     Add/Sub/Mul/Div of two tensors of the same known shape or of a tensor and a scalar (the same elements in
//     any order), and Concat on the channel axis of batch-1 tensors whose channel counts are all multiples of 16
//     (so every input and the output have the same block, 8 or 16, and the blocked concatenation is the
//     plain one: the inputs' bytes one after the other). A plain operand of such an op is reordered first.
// Readers that take blocked values: such elementwise ops, convolutions (X, and FusedConv's Z), MaxPool (without
// Indices) and AveragePool (PassHooks::can_block_op), and an SE block's two ends: GlobalAveragePool (->
// com.ophost::BlockedGlobalAveragePool, its [N, C, 1, 1] output plain, which is the same bytes as blocked) and Mul
// of a blocked [N, C, H, W] by a known [N or 1, C, 1, 1] (-> com.ophost::BlockedMul, blocked output; the scale is
// read as it is, plain or blocked being the same bytes at 1x1). The Conv becomes com.ophost::FusedConv with
// x_blocked/y_blocked/z_blocked, a MaxPool or AveragePool on a blocked value com.ophost::BlockedMaxPool or
// BlockedAveragePool (blocked output). Every other reader (and a graph output) gets a plain copy from
// com.ophost::LayoutReorder(to=plain), one per value; the pack picks the block (8 or 16) from the channel count
// alone, so producer and readers always agree. Values read by subgraphs are node inputs too (implicit inputs), so
// they get plain copies the same way.
// Intermediate values are in the blocked byte order inside regions: the pass lists them in Model::blocked_values,
// so a run's node observer reports them as skipped, and it is off while values are dumped (session_build.cpp).
#include "passes/graph_util.hpp"
#include "passes/passes.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace ophost {

using passes::find_attr;
using passes::find_initializer;
using passes::Uses;

namespace {

bool is_oblivious_unary(const Node& n) {
  static const std::set<std::string> kOps = {"Relu", "LeakyRelu", "Elu", "Clip", "Sigmoid", "Tanh", "HardSigmoid",
                                             "HardSwish"};
  return n.domain.empty() && kOps.count(n.op_type) && !n.inputs.empty() && n.outputs.size() == 1 &&
         n.implicit_inputs == 0;
}

// Concat on axis 1 of 4-D values (the shapes are checked by Layout::oblivious).
bool is_channel_concat(const Node& n) {
  if (!n.domain.empty() || n.op_type != "Concat" || n.inputs.empty() || n.outputs.size() != 1 || n.implicit_inputs)
    return false;
  const Attribute* a = find_attr(n, "axis");
  return a && (a->i == 1 || a->i == -3);
}

bool is_oblivious_binary(const Node& n) {
  static const std::set<std::string> kOps = {"Add", "Sub", "Mul", "Div"};
  return n.domain.empty() && kOps.count(n.op_type) && n.inputs.size() == 2 && n.outputs.size() == 1 &&
         n.implicit_inputs == 0;
}

struct Layout {
  Model& m;
  const PassHooks& hooks;
  std::map<std::string, InferredValue> shapes;
  Uses uses;
  std::set<std::string> names;  // every value name in use (fresh names for the reorders' outputs)
  std::set<std::string> blocked;
  std::map<std::string, std::string> plain_copy, blocked_copy;  // value -> its reordered copy
  std::vector<Node> out;
  size_t reorders = 0, convs = 0, pools = 0, se_ops = 0;

  Layout(Model& model, const PassHooks& h) : m(model), hooks(h), uses(model), names(passes::used_names(model)) {
    if (hooks.infer_shapes) shapes = hooks.infer_shapes(m);
  }

  const std::vector<int64_t>* known_shape(const std::string& v) const {
    auto it = shapes.find(v);
    if (it == shapes.end() || it->second.dtype != DType::kFloat32) return nullptr;
    const auto& d = it->second.dims;
    if (std::any_of(d.begin(), d.end(), [](int64_t x) { return x < 0; })) return nullptr;
    return &d;
  }
  // A float32 4-D value whose channel count is known and allows the blocked layout. The batch and spatial
  // dimensions may be unknown (a model exported with a dynamic batch): the kernels take the layout from the
  // channel count alone and the rest from the shapes they run on.
  bool blockable(const std::string& v) const {
    auto it = shapes.find(v);
    if (it == shapes.end() || it->second.dtype != DType::kFloat32) return false;
    const auto& d = it->second.dims;
    return d.size() == 4 && d[1] > 0 && d[1] % 8 == 0;
  }
  // A value of one element (broadcasts to any shape without reordering).
  bool scalar(const std::string& v) const {
    if (const Tensor* t = find_initializer(m, v)) return t->numel() == 1 && t->shape().size() <= 4;
    auto it = shapes.find(v);
    if (it == shapes.end() || it->second.dims.size() > 4) return false;
    const auto& d = it->second.dims;
    return std::all_of(d.begin(), d.end(), [](int64_t x) { return x == 1; });
  }
  bool same_shape(const std::string& a, const std::string& b) const {
    const auto *x = known_shape(a), *y = known_shape(b);
    return x && y && *x == *y;
  }

  // Conv/FusedConv with constant 4-D weights that may use blocked layouts.
  bool conv_ok(const Node& n) const {
    const bool conv = (n.domain.empty() && n.op_type == "Conv") || (n.domain == kFusedDomain && n.op_type == kFusedConv);
    if (!conv || n.inputs.size() < 2 || n.outputs.size() != 1 || n.outputs[0].empty()) return false;
    const Tensor* w = find_initializer(m, n.inputs[1]);
    if (!w || w->dtype() != DType::kFloat32 || w->shape().size() != 4) return false;
    return hooks.can_block_conv && hooks.can_block_conv(m, n);
  }
  // MaxPool without Indices, or AveragePool, on 4-D values (C a multiple of 8) that the pack runs blocked: the
  // blocked op's name, or null. Not AveragePool with count_include_pad and ceil_mode both set: a last window
  // past the padding divides by its clipped size in ONNX, by the kernel's size in oneDNN.
  const char* blocked_pool(const Node& n) const {
    const bool max = n.op_type == "MaxPool";
    if (!n.domain.empty() || (!max && n.op_type != "AveragePool") || n.inputs.size() != 1 || n.outputs.empty() ||
        n.outputs[0].empty() || (n.outputs.size() > 1 && !n.outputs[1].empty()) || n.outputs.size() > 2)
      return nullptr;
    if (const Attribute* so = find_attr(n, "storage_order"); so && so->i != 0) return nullptr;
    const Attribute* cip = find_attr(n, "count_include_pad");
    const Attribute* ceil = find_attr(n, "ceil_mode");
    if (!max && cip && cip->i != 0 && ceil && ceil->i != 0) return nullptr;
    if (!blockable(n.inputs[0]) || !blockable(n.outputs[0]) || uses.is_output(n.outputs[0])) return nullptr;
    const char* op = max ? kBlockedMaxPool : kBlockedAveragePool;
    return hooks.can_block_op && hooks.can_block_op(m, n, op) ? op : nullptr;
  }
  // GlobalAveragePool of a blockable 4-D value that the pack runs on blocked input.
  bool gap_ok(const Node& n) const {
    if (!n.domain.empty() || n.op_type != "GlobalAveragePool" || n.inputs.size() != 1 || n.outputs.size() != 1 ||
        n.outputs[0].empty() || n.implicit_inputs || !blockable(n.inputs[0]))
      return false;
    return hooks.can_block_op && hooks.can_block_op(m, n, kBlockedGlobalAveragePool);
  }
  // Mul(x, s) / Mul(s, x) with x a blockable 4-D value and s of known shape [N or 1, C, 1, 1] (an SE block's
  // scale): the index of x, or -1.
  int channel_mul_x(const Node& n) const {
    if (!is_oblivious_binary(n) || n.op_type != "Mul" || uses.is_output(n.outputs[0])) return -1;
    for (int k = 0; k < 2; ++k) {
      const std::string &x = n.inputs[static_cast<size_t>(k)], &sc = n.inputs[static_cast<size_t>(1 - k)];
      const auto *xs = known_shape(x), *ss = known_shape(sc);
      if (!blockable(x) || !xs || !ss || ss->size() != 4 || !same_shape(x, n.outputs[0])) continue;
      if ((*ss)[1] != (*xs)[1] || (*ss)[2] != 1 || (*ss)[3] != 1 || ((*ss)[0] != 1 && (*ss)[0] != (*xs)[0])) continue;
      if ((*xs)[2] == 1 && (*xs)[3] == 1) continue;  // x itself 1x1: plain Mul
      if (hooks.can_block_op && hooks.can_block_op(m, n, kBlockedMul)) return k;
    }
    return -1;
  }
  // Whether the op computes the same elements when its tensor inputs are blocked (and its output then is).
  bool oblivious(const Node& n) const {
    if (std::any_of(n.outputs.begin(), n.outputs.end(), [&](const std::string& o) { return uses.is_output(o); }))
      return false;
    if (is_oblivious_unary(n)) {
      for (size_t k = 1; k < n.inputs.size(); ++k)  // Clip's min/max
        if (!n.inputs[k].empty() && !scalar(n.inputs[k])) return false;
      return blockable(n.inputs[0]);  // an elementwise unary op: the output has the input's shape
    }
    if (is_channel_concat(n)) {
      auto fits = [&](const std::string& v) {
        const auto* s = known_shape(v);
        return s && s->size() == 4 && (*s)[0] == 1 && (*s)[1] > 0 && (*s)[1] % 16 == 0;
      };
      return fits(n.outputs[0]) && std::all_of(n.inputs.begin(), n.inputs.end(), fits);
    }
    if (!is_oblivious_binary(n)) return false;
    const std::string &a = n.inputs[0], &b = n.inputs[1];
    // With a scalar operand (at most rank 4, one element) the output has the tensor operand's shape; two
    // tensors must have the same fully known shape (no broadcasting).
    if (blockable(a) && (scalar(b) || (same_shape(a, b) && same_shape(a, n.outputs[0])))) return true;
    return blockable(b) && scalar(a);
  }
  // Whether `reader` takes value v (its input k) blocked.
  bool takes_blocked(const Node& reader, size_t k) const {
    if (conv_ok(reader)) return k == 0 || k == 3;
    if (blocked_pool(reader)) return k == 0;
    if (gap_ok(reader)) return k == 0;
    if (channel_mul_x(reader) >= 0) return true;  // x blocked; s [.., C, 1, 1] is the same bytes either way
    return oblivious(reader);
  }

  std::string reorder(const std::string& v, bool to_blocked) {
    auto& cache = to_blocked ? blocked_copy : plain_copy;
    if (auto it = cache.find(v); it != cache.end()) return it->second;
    const std::string name = passes::fresh_name(names, v + (to_blocked ? "/nchwc" : "/plain"));
    Node r;
    r.name = name;
    r.domain = kFusedDomain;
    r.op_type = kLayoutReorder;
    r.inputs = {v};
    r.outputs = {name};
    Attribute to;
    to.name = "to";
    to.type = OPH_ATTR_STRING;
    to.s = to_blocked ? "blocked" : "plain";
    r.attributes.push_back(to);
    out.push_back(std::move(r));
    ++reorders;
    return cache[v] = name;
  }

  static void set_flag(Node& n, const char* name) {
    Attribute a;
    a.name = name;
    a.type = OPH_ATTR_INT;
    a.i = 1;
    n.attributes.push_back(a);
  }

  void visit(Node n) {
    if (conv_ok(n)) {
      const std::string& y = n.outputs[0];
      bool yb = blockable(y) && !uses.is_output(y);
      if (yb) {
        yb = false;
        if (auto it = uses.consumers.find(y); it != uses.consumers.end())
          for (int ci : it->second) {
            const Node& r = m.nodes[static_cast<size_t>(ci)];
            for (size_t k = 0; k < r.inputs.size(); ++k) yb = yb || (r.inputs[k] == y && takes_blocked(r, k));
          }
      }
      const bool xb = blocked.count(n.inputs[0]) != 0;
      const bool zb = n.inputs.size() > 3 && blocked.count(n.inputs[3]) != 0;
      for (size_t k = 1; k < n.inputs.size(); ++k)  // W and B are constants; Z blocked or plain (z_blocked)
        if (k != 3 && blocked.count(n.inputs[k])) n.inputs[k] = reorder(n.inputs[k], false);
      if (xb || yb || zb) {
        n.domain = kFusedDomain;
        n.op_type = kFusedConv;
        if (xb) set_flag(n, "x_blocked");
        if (yb) set_flag(n, "y_blocked");
        if (zb) set_flag(n, "z_blocked");
        if (yb) blocked.insert(y);
        ++convs;
      }
      out.push_back(std::move(n));
      return;
    }
    if (const char* op = blocked_pool(n); op && blocked.count(n.inputs[0])) {
      n.domain = kFusedDomain;
      n.op_type = op;
      n.outputs.resize(1);
      blocked.insert(n.outputs[0]);
      ++pools;
      out.push_back(std::move(n));
      return;
    }
    if (gap_ok(n) && blocked.count(n.inputs[0])) {
      n.domain = kFusedDomain;
      n.op_type = kBlockedGlobalAveragePool;
      ++se_ops;
      out.push_back(std::move(n));  // output [N, C, 1, 1]: plain (the same bytes as blocked)
      return;
    }
    if (int xk = channel_mul_x(n); xk >= 0 && blocked.count(n.inputs[static_cast<size_t>(xk)])) {
      const std::string x = n.inputs[static_cast<size_t>(xk)], sc = n.inputs[static_cast<size_t>(1 - xk)];
      n.domain = kFusedDomain;
      n.op_type = kBlockedMul;
      n.inputs = {x, sc};
      blocked.insert(n.outputs[0]);
      ++se_ops;
      out.push_back(std::move(n));
      return;
    }
    const bool any_blocked =
        std::any_of(n.inputs.begin(), n.inputs.end(), [&](const std::string& v) { return blocked.count(v) != 0; });
    if (any_blocked && oblivious(n)) {
      const size_t tensors = is_oblivious_unary(n) ? 1 : n.inputs.size();
      for (size_t k = 0; k < tensors; ++k)
        if (!blocked.count(n.inputs[k]) && !scalar(n.inputs[k])) n.inputs[k] = reorder(n.inputs[k], true);
      blocked.insert(n.outputs[0]);
      out.push_back(std::move(n));
      return;
    }
    for (std::string& v : n.inputs)
      if (blocked.count(v)) v = reorder(v, false);
    out.push_back(std::move(n));
  }
};

}  // namespace

PassResult assign_nchwc_layout(Model& m, const PassHooks& hooks) {
  PassResult r{"nchwc-layout"};
  if (int64_t v = passes::fused_domain_clash(m)) {
    r.message = "nothing changed (the model imports domain com.ophost at version " + std::to_string(v) + ")";
    return r;
  }
  if (!hooks.can_block_conv ||
      std::none_of(m.nodes.begin(), m.nodes.end(), [&](const Node& n) { return n.op_type == "Conv" || n.op_type == kFusedConv; })) {
    r.message = "nothing changed (no convolution)";
    return r;
  }
  Layout pass(m, hooks);
  if (pass.shapes.empty()) {
    r.message = "nothing changed (shapes could not be inferred)";
    return r;
  }
  for (const Node& n : m.nodes) pass.visit(n);  // copies: the look-ahead at readers reads m.nodes as it was
  // Readers are visited after their producers (node order is topological), so every blocked value's readers
  // took it blocked or read a plain copy; graph outputs are never blocked.
  m.nodes = std::move(pass.out);
  m.blocked_values.insert(pass.blocked.begin(), pass.blocked.end());
  if (pass.convs || pass.pools || pass.se_ops) m.opset_imports[kFusedDomain] = 1;
  r.changed = pass.convs + pass.pools + pass.se_ops + pass.reorders;
  r.message = std::to_string(pass.blocked.size()) + " values kept channel-blocked, " + std::to_string(pass.convs) +
              " convolutions, " + std::to_string(pass.pools) + " MaxPool/AveragePool and " +
              std::to_string(pass.se_ops) + " SE pool/scale ops on blocked layouts, " + std::to_string(pass.reorders) +
              " LayoutReorder nodes";
  return r;
}

}  // namespace ophost