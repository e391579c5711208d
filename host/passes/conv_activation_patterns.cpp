// conv-activation-fusion's matchers for activations that exporters write out as several nodes after a Conv
// (PaddlePaddle's and TF's HardSwish before opset 14, PyTorch's SiLU), each rewritten to one
// com.ophost::FusedConv with the activation as a oneDNN post-op.
#include "passes/conv_fusion.hpp"
#include "passes/graph_util.hpp"

#include <cfloat>
#include <cmath>

namespace ophost::passes {

namespace {

// Clip bounds of a standard Clip node when both are constant (attributes before opset 11, inputs from 11).
std::optional<std::pair<float, float>> clip_bounds(const Model& m, const Node& clip) {
  if (clip.op_type != "Clip" || !clip.domain.empty() || clip.inputs.empty() || clip.outputs.size() != 1)
    return std::nullopt;
  float lo = -FLT_MAX, hi = FLT_MAX;
  if (opset_of(m, "") < 11) {
    for (const Attribute& a : clip.attributes) {
      if (a.name == "min") lo = a.f;
      else if (a.name == "max") hi = a.f;
    }
    return std::make_pair(lo, hi);
  }
  if (clip.inputs.size() > 3) return std::nullopt;
  for (size_t k = 1; k < clip.inputs.size(); ++k) {
    if (clip.inputs[k].empty()) continue;
    auto v = scalar_const(m, clip.inputs[k]);
    if (!v) return std::nullopt;
    (k == 1 ? lo : hi) = *v;
  }
  return std::make_pair(lo, hi);
}

}  // namespace

// SiLU/Swish as PyTorch exports it (EfficientNet, most recent CNNs): c = Conv(...); y = Mul(c, Sigmoid(c)) (the
// Mul's operands in either order), c read by exactly the Sigmoid and the Mul, Sigmoid's output by the Mul only,
// neither a graph output. The Conv (or a FusedConv without an activation, from conv-add-fusion) becomes
// FusedConv(activation Swish), oneDNN's eltwise_swish with alpha 1. Returns the number fused.
size_t fuse_decomposed_swish(Model& m, const PassHooks& hooks, std::set<size_t>& removed) {
  size_t fused = 0;
  Uses uses(m);
  for (size_t mi = 0; mi < m.nodes.size(); ++mi) {
    const Node& mul = m.nodes[mi];
    if (removed.count(mi) || !standard_binary(mul, "Mul") || mul.inputs[0] == mul.inputs[1]) continue;
    for (size_t k = 0; k < 2; ++k) {
      const std::string& c = mul.inputs[k];
      const std::string& s = mul.inputs[1 - k];
      auto sp = uses.producer.find(s), cp = uses.producer.find(c);
      if (sp == uses.producer.end() || cp == uses.producer.end() || uses.readers(s) != 1 || uses.is_output(s) ||
          uses.readers(c) != 2 || uses.is_output(c))
        continue;
      const size_t si = static_cast<size_t>(sp->second);
      const Node& sig = m.nodes[si];
      if (sig.op_type != "Sigmoid" || !sig.domain.empty() || sig.inputs.size() != 1 || sig.inputs[0] != c ||
          sig.outputs.size() != 1 || removed.count(si))
        continue;
      Node& conv = m.nodes[static_cast<size_t>(cp->second)];
      if (!((conv.op_type == "Conv" && conv.domain.empty()) || is_bare_fused_conv(conv)) || conv.outputs.size() != 1)
        continue;
      if (!hooks.can_fuse_conv || !hooks.can_fuse_conv(m, conv, sig) || !hooks.can_fuse_conv(m, conv, mul)) continue;
      become_fused_conv(m, conv, "Swish", {}, mul.outputs[0]);
      removed.insert(si);
      removed.insert(mi);
      ++fused;
      uses = Uses(m);
      break;
    }
  }
  return fused;
}

// Exporters that predate ONNX's HardSwish (opset 14) write it out: x * Clip(x + 3, 0, 6) / 6 (PaddlePaddle,
// TF), or with Mul by 1/6. Where x is a Conv's output read by nothing else, the five nodes become one
// FusedConv(activation HardSwish). Returns the number of chains fused.
size_t fuse_decomposed_hardswish(Model& m, const PassHooks& hooks, std::set<size_t>& removed) {
  size_t fused = 0;
  Uses uses(m);
  auto single_reader = [&](const std::string& v) { return uses.readers(v) == 1 && !uses.is_output(v); };
  auto node_of = [&](const std::string& v) -> Node* {
    auto it = uses.producer.find(v);
    return it == uses.producer.end() ? nullptr : &m.nodes[static_cast<size_t>(it->second)];
  };
  for (size_t di = 0; di < m.nodes.size(); ++di) {
    if (removed.count(di)) continue;
    const Node& last = m.nodes[di];
    // ... / 6  or  ... * (1/6)
    const bool is_div = standard_binary(last, "Div"), is_mul = standard_binary(last, "Mul");
    if (!is_div && !is_mul) continue;
    std::string prod_v;
    for (int k = 0; k < 2 && prod_v.empty(); ++k) {
      auto c = scalar_const(m, last.inputs[1 - k]);
      if (!c) continue;
      if ((is_div && k == 0 && std::fabs(*c - 6.0f) < 1e-6f) || (is_mul && std::fabs(*c - 1.0f / 6.0f) < 1e-7f))
        prod_v = last.inputs[k];
    }
    if (prod_v.empty() || !single_reader(prod_v)) continue;
    Node* mul = node_of(prod_v);
    if (!mul || !standard_binary(*mul, "Mul")) continue;
    // Mul(x, Clip(Add(x, 3), 0, 6)) in either order.
    for (int k = 0; k < 2; ++k) {
      const std::string& clip_v = mul->inputs[static_cast<size_t>(k)];
      const std::string& x = mul->inputs[static_cast<size_t>(1 - k)];
      Node* clip = node_of(clip_v);
      if (!clip || !single_reader(clip_v)) continue;
      auto b = clip_bounds(m, *clip);
      if (!b || b->first != 0.0f || b->second != 6.0f) continue;
      const std::string& add_v = clip->inputs[0];
      Node* add = node_of(add_v);
      if (!add || !single_reader(add_v) || !standard_binary(*add, "Add")) continue;
      if (other_input(*add, x).empty()) continue;
      auto three = scalar_const(m, other_input(*add, x));
      if (!three || *three != 3.0f) continue;
      // x: a Conv's output, read by exactly the Add and the Mul.
      Node* conv = node_of(x);
      if (!conv || conv->op_type != "Conv" || !conv->domain.empty() || conv->outputs.size() != 1 ||
          uses.readers(x) != 2 || uses.is_output(x))
        continue;
      bool ok = hooks.can_fuse_conv != nullptr;
      for (const Node* n : std::initializer_list<const Node*>{add, clip, mul, &last})
        ok = ok && hooks.can_fuse_conv(m, *conv, *n);
      if (!ok) continue;
      become_fused_conv(m, *conv, "HardSwish", {}, last.outputs[0]);
      removed.insert(static_cast<size_t>(uses.producer.at(add_v)));
      removed.insert(static_cast<size_t>(uses.producer.at(clip_v)));
      removed.insert(static_cast<size_t>(uses.producer.at(prod_v)));
      removed.insert(di);
      ++fused;
      uses = Uses(m);
      break;
    }
  }
  return fused;
}


}  // namespace ophost::passes
