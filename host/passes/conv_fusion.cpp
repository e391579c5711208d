// Conv rewrites:
//  conv-bn-folding         Conv(X, W[, B]) -> BatchNormalization(scale, bias, mean, var), everything constant
//                          float32, BN in inference mode, the Conv's output read only by the BN:
//                            s = scale / sqrt(var + epsilon);  W' = W * s (per output channel);
//                            B' = (B - mean) * s + bias
//  conv-affine-folding     Conv -> Mul(c) and/or Add(d) with per-channel (or scalar) float32 constants, each
//                          intermediate read only by the next node:  W' = W * c,  B' = B * c + d
//  conv-add-fusion         Conv -> Add(Z), Z of the Conv output's shape and computed before the Conv runs,
//                          becomes com.ophost::FusedConv(X, W, B, Z) (no activation yet), where
//                          PassHooks::can_fuse_conv says a pack serves it
//  conv-activation-fusion  Conv (or such a FusedConv) -> activation becomes com.ophost::FusedConv(activation,
//                          activation_params) where PassHooks::can_fuse_conv says a pack serves it
//                          (OPH_OP_FLAG_ALLOW_FUSION); also HardSwish written out (x * Clip(x + 3, 0, 6) / 6)
//                          and SiLU written out (x * Sigmoid(x): activation Swish); scalar Mul/Div/Add/Sub after it fold into
//                          output_scale/output_shift, then scalar Max/Min into output_min/output_max.
// New weights are new initializers (fresh names); the old ones are dropped by dead-node-elimination when
// nothing else reads them.
#include "passes/conv_fusion.hpp"
#include "passes/graph_util.hpp"
#include "passes/passes.hpp"

#include <array>
#include <cfloat>
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace ophost {

using passes::become_fused_conv;
using passes::erase_nodes;
using passes::find_attr;
using passes::find_initializer;
using passes::fuse_decomposed_hardswish;
using passes::fuse_decomposed_swish;
using passes::fused_domain_clash;
using passes::is_bare_fused_conv;
using passes::opset_of;
using passes::other_input;
using passes::scalar_const;
using passes::standard_binary;
using passes::Uses;

namespace {

bool is_f32_const(const Tensor* t) { return t && t->dtype() == DType::kFloat32; }

// The constant float32 Conv weights (rank >= 3) and bias ([OC] or absent) of a standard Conv node.
struct ConvParams {
  const Tensor* w = nullptr;
  const Tensor* b = nullptr;
  int64_t oc = 0;
};

std::optional<ConvParams> conv_params(const Model& m, const Node& conv) {
  if (conv.op_type != "Conv" || !conv.domain.empty() || conv.inputs.size() < 2 || conv.outputs.size() != 1 ||
      conv.outputs[0].empty())
    return std::nullopt;
  ConvParams p;
  p.w = find_initializer(m, conv.inputs[1]);
  if (!is_f32_const(p.w) || p.w->shape().size() < 3) return std::nullopt;
  p.oc = p.w->shape()[0];
  if (conv.inputs.size() > 2 && !conv.inputs[2].empty()) {
    p.b = find_initializer(m, conv.inputs[2]);
    if (!is_f32_const(p.b) || p.b->shape().size() != 1 || p.b->shape()[0] != p.oc) return std::nullopt;
  }
  return p;
}

// Rewrites `conv` to use W * scale[oc] and B * scale[oc] + shift[oc] (new initializers).
void rewrite_conv(Model& m, Node& conv, const ConvParams& p, const std::vector<float>& scale,
                  const std::vector<float>& shift, const std::string& tag) {
  const size_t oc = static_cast<size_t>(p.oc);
  const size_t per = static_cast<size_t>(p.w->numel()) / std::max<size_t>(1, oc);
  Tensor w(DType::kFloat32, std::vector<int64_t>(p.w->shape().begin(), p.w->shape().end()));
  Tensor b(DType::kFloat32, {p.oc});
  const float* w0 = p.w->data_as<float>();
  float* w1 = w.data_as<float>();
  for (size_t c = 0; c < oc; ++c) {
    for (size_t k = 0; k < per; ++k) w1[c * per + k] = w0[c * per + k] * scale[c];
    const float b0 = p.b ? p.b->data_as<float>()[c] : 0.0f;
    b.data_as<float>()[c] = b0 * scale[c] + shift[c];
  }
  std::string wn = passes::fresh_name(m, conv.name + "/" + tag + "_W");
  m.initializers.emplace_back(wn, std::move(w));
  std::string bn = passes::fresh_name(m, conv.name + "/" + tag + "_B");
  m.initializers.emplace_back(bn, std::move(b));
  conv.inputs.resize(3);
  conv.inputs[1] = wn;
  conv.inputs[2] = bn;
}

// Per-output-channel values of a constant that broadcasts against the Conv output [N, OC, spatial...] without
// growing it: a scalar, or a shape whose only non-1 dim lines up with axis 1.
std::optional<std::vector<float>> per_channel(const Tensor* t, int64_t oc, size_t out_rank) {
  if (!is_f32_const(t)) return std::nullopt;
  auto s = t->shape();
  if (s.size() > out_rank) return std::nullopt;
  const float* d = t->data_as<float>();
  if (t->numel() == 1) return std::vector<float>(static_cast<size_t>(oc), d[0]);
  for (size_t k = 0; k < s.size(); ++k) {
    size_t axis = out_rank - s.size() + k;
    if (axis == 1 ? s[k] != oc : s[k] != 1) return std::nullopt;
  }
  return std::vector<float>(d, d + oc);
}

}  // namespace

PassResult fold_conv_batchnorm(Model& m) {
  PassResult r{"conv-bn-folding"};
  const int64_t opset = opset_of(m, "");
  std::set<size_t> removed;
  Uses uses(m);
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    const Node& bn = m.nodes[i];
    if (bn.op_type != "BatchNormalization" || !bn.domain.empty() || opset < 9 || bn.inputs.size() != 5 ||
        bn.outputs.empty() || bn.outputs[0].empty())
      continue;
    bool extra_used = false;
    for (size_t o = 1; o < bn.outputs.size(); ++o) extra_used = extra_used || !uses.unused(bn.outputs[o]);
    if (extra_used) continue;
    if (const Attribute* a = find_attr(bn, "training_mode"); a && a->i != 0) continue;
    if (const Attribute* a = find_attr(bn, "spatial"); a && a->i != 1) continue;
    const std::string& x = bn.inputs[0];
    auto pit = uses.producer.find(x);
    if (pit == uses.producer.end() || uses.readers(x) != 1 || uses.is_output(x)) continue;
    Node& conv = m.nodes[static_cast<size_t>(pit->second)];
    auto p = conv_params(m, conv);
    if (!p) continue;
    const Tensor* par[4];
    bool ok = true;
    for (int k = 0; k < 4; ++k) {
      par[k] = find_initializer(m, bn.inputs[1 + k]);
      ok = ok && is_f32_const(par[k]) && par[k]->shape().size() == 1 && par[k]->shape()[0] == p->oc;
    }
    if (!ok) continue;
    float eps = 1e-5f;
    if (const Attribute* a = find_attr(bn, "epsilon")) eps = a->f;
    const size_t oc = static_cast<size_t>(p->oc);
    std::vector<float> scale(oc), shift(oc);
    for (size_t c = 0; c < oc; ++c) {
      const float g = par[0]->data_as<float>()[c], beta = par[1]->data_as<float>()[c];
      const float mean = par[2]->data_as<float>()[c], var = par[3]->data_as<float>()[c];
      scale[c] = g / std::sqrt(var + eps);
      shift[c] = beta - mean * scale[c];
    }
    rewrite_conv(m, conv, *p, scale, shift, "bn_folded");
    conv.outputs[0] = bn.outputs[0];
    removed.insert(i);
    ++r.changed;
    uses = Uses(m);
  }
  std::vector<Node> kept;
  for (size_t i = 0; i < m.nodes.size(); ++i)
    if (!removed.count(i)) kept.push_back(std::move(m.nodes[i]));
  m.nodes = std::move(kept);
  r.message = std::to_string(r.changed) + " BatchNormalization nodes folded into Conv";
  return r;
}

PassResult fold_conv_affine(Model& m) {
  PassResult r{"conv-affine-folding"};
  std::set<size_t> removed;
  Uses uses(m);
  for (size_t ci = 0; ci < m.nodes.size(); ++ci) {
    if (removed.count(ci)) continue;
    Node& conv = m.nodes[ci];
    auto p = conv_params(m, conv);
    if (!p) continue;
    // Conv output rank: the weights' rank.
    const size_t rank = p->w->shape().size();
    for (;;) {
      const std::string& y = conv.outputs[0];
      if (uses.readers(y) != 1 || uses.is_output(y)) break;
      const size_t ni = static_cast<size_t>(uses.consumers.at(y)[0]);
      const Node& next = m.nodes[ni];
      if (!next.domain.empty() || (next.op_type != "Mul" && next.op_type != "Add") || next.inputs.size() != 2 ||
          next.outputs.size() != 1 || next.outputs[0].empty())
        break;
      const std::string& other = next.inputs[0] == y ? next.inputs[1] : next.inputs[0];
      if (other == y) break;
      auto c = per_channel(find_initializer(m, other), p->oc, rank);
      if (!c) break;
      const size_t oc = static_cast<size_t>(p->oc);
      std::vector<float> scale(oc, 1.0f), shift(oc, 0.0f);
      if (next.op_type == "Mul") scale = *c;
      else shift = *c;
      rewrite_conv(m, conv, *p, scale, shift, next.op_type == "Mul" ? "mul_folded" : "add_folded");
      conv.outputs[0] = next.outputs[0];
      removed.insert(ni);
      ++r.changed;
      uses = Uses(m);
      p = conv_params(m, conv);
      if (!p) break;
    }
  }
  std::vector<Node> kept;
  for (size_t i = 0; i < m.nodes.size(); ++i)
    if (!removed.count(i)) kept.push_back(std::move(m.nodes[i]));
  m.nodes = std::move(kept);
  r.message = std::to_string(r.changed) + " Mul/Add nodes folded into Conv";
  return r;
}

namespace {

// The chain of nodes after each FusedConv that fold into a pair of its float attributes: while the FusedConv's
// output has one reader (not a graph output), `step(next, c, pair)` is asked about that reader `next`, a
// standard two-input node whose other input is the scalar float32 constant `c` (rank <= 4); it updates the pair
// and returns true to fold the node in. The pair starts from the attributes (or `init`) and is written back
// when anything folded. Returns the number of nodes folded.
template <class Step>
size_t fold_fused_output_chain(Model& m, const PassHooks& hooks, std::set<size_t>& removed,
                               const std::array<const char*, 2>& names, const std::array<float, 2>& init,
                               const Step& step) {
  size_t folded = 0;
  Uses uses(m);
  for (size_t ci = 0; ci < m.nodes.size(); ++ci) {
    if (removed.count(ci)) continue;
    Node& conv = m.nodes[ci];
    if (conv.domain != kFusedDomain || conv.op_type != kFusedConv || conv.outputs.size() != 1) continue;
    std::array<float, 2> pair = init;
    for (size_t k = 0; k < 2; ++k)
      if (const Attribute* a = find_attr(conv, names[k])) pair[k] = a->f;
    size_t here = 0;
    for (;;) {
      const std::string y = conv.outputs[0];
      if (uses.readers(y) != 1 || uses.is_output(y)) break;
      const size_t ni = static_cast<size_t>(uses.consumers.at(y)[0]);
      if (removed.count(ni)) break;
      const Node& next = m.nodes[ni];
      if (!next.domain.empty() || next.inputs.size() != 2 || next.outputs.size() != 1) break;
      const std::string c_name = other_input(next, y);
      auto c = c_name.empty() ? std::nullopt : scalar_const(m, c_name);
      if (!c || find_initializer(m, c_name)->shape().size() > 4) break;
      std::array<float, 2> updated = pair;
      if (!step(next, y, *c, updated)) break;
      if (!hooks.can_fuse_conv || !hooks.can_fuse_conv(m, conv, next)) break;
      pair = updated;
      conv.outputs[0] = next.outputs[0];
      removed.insert(ni);
      ++here;
      uses = Uses(m);
    }
    if (!here) continue;
    std::erase_if(conv.attributes, [&](const Attribute& a) { return a.name == names[0] || a.name == names[1]; });
    for (size_t k = 0; k < 2; ++k) {
      Attribute a;
      a.name = names[k];
      a.type = OPH_ATTR_FLOAT;
      a.f = pair[k];
      conv.attributes.push_back(a);
    }
    folded += here;
  }
  return folded;
}

// A FusedConv's output scaled and shifted by scalar constants (Mul, Div, Add, Sub; PaddlePaddle's learnable
// affine after an activation): folded into the FusedConv as output_scale / output_shift, y = act(conv) * s + b
// (a oneDNN linear post-op). Returns the number of nodes folded.
size_t fold_fused_output_affine(Model& m, const PassHooks& hooks, std::set<size_t>& removed) {
  return fold_fused_output_chain(
      m, hooks, removed, {"output_scale", "output_shift"}, {1.0f, 0.0f},
      [](const Node& next, const std::string& y, float c, std::array<float, 2>& p) {
        auto& [scale, shift] = p;
        if (standard_binary(next, "Mul")) scale *= c, shift *= c;
        else if (standard_binary(next, "Add")) shift += c;
        else if (standard_binary(next, "Div") && next.inputs[0] == y && c != 0.0f) scale /= c, shift /= c;
        else if (standard_binary(next, "Sub") && next.inputs[0] == y) shift -= c;
        else return false;
        return true;
      });
}

// A FusedConv's output clamped by scalar constants, Max(y, lo) and/or Min(y, hi) (TensorFlow exports write a
// lower bound after LeakyRelu this way): folded into the FusedConv as output_min / output_max, applied last,
// y = clamp(act(conv) * s + b, lo, hi) (a oneDNN clip post-op), so the Conv's output stays in its layout
// (nchwc-layout keeps the blocked region going through it). The affine is folded first, so a Mul/Add after a
// Max stays a node. Stops where the bounds would cross (Max after Min with lo > hi is no clamp). Returns the
// number of nodes folded.
size_t fold_fused_output_clamp(Model& m, const PassHooks& hooks, std::set<size_t>& removed) {
  return fold_fused_output_chain(
      m, hooks, removed, {"output_min", "output_max"}, {-FLT_MAX, FLT_MAX},
      [](const Node& next, const std::string&, float c, std::array<float, 2>& p) {
        auto& [lo, hi] = p;
        const bool is_max = standard_binary(next, "Max"), is_min = standard_binary(next, "Min");
        if ((!is_max && !is_min) || std::isnan(c)) return false;
        if (is_max) lo = std::max(lo, c);
        else hi = std::min(hi, c);
        return lo <= hi;
      });
}

}  // namespace

PassResult fuse_conv_activation(Model& m, const PassHooks& hooks) {
  PassResult r{"conv-activation-fusion"};
  if (int64_t v = fused_domain_clash(m)) {
    r.message = "0 activations fused (the model imports domain com.ophost at version " + std::to_string(v) + ")";
    return r;
  }
  const int64_t opset = opset_of(m, "");
  std::set<size_t> removed;
  std::map<std::string, size_t> by_kind;
  if (size_t n = fuse_decomposed_hardswish(m, hooks, removed)) {
    by_kind["HardSwish written out as Add/Clip/Mul/Div"] = n;
    r.changed += n;
  }
  erase_nodes(m, removed);
  if (size_t n = fuse_decomposed_swish(m, hooks, removed)) {
    by_kind["SiLU written out as Mul(x, Sigmoid(x))"] = n;
    r.changed += n;
  }
  erase_nodes(m, removed);
  Uses uses(m);
  for (size_t ai = 0; ai < m.nodes.size(); ++ai) {
    if (removed.count(ai)) continue;
    const Node& act = m.nodes[ai];
    if (!act.domain.empty() || act.inputs.empty() || act.inputs[0].empty() || act.outputs.size() != 1 ||
        act.outputs[0].empty())
      continue;
    auto fattr = [&](const char* name, float def) {
      const Attribute* a = find_attr(act, name);
      return a ? a->f : def;
    };
    std::vector<float> params;
    const std::string& kind = act.op_type;
    if (kind == "Relu" || kind == "Sigmoid" || kind == "Tanh" || kind == "HardSwish") {
      if (act.inputs.size() != 1 || !act.attributes.empty()) continue;
    } else if (kind == "LeakyRelu") {
      params = {fattr("alpha", 0.01f)};
    } else if (kind == "Elu") {
      params = {fattr("alpha", 1.0f)};
    } else if (kind == "HardSigmoid") {
      params = {fattr("alpha", 0.2f), fattr("beta", 0.5f)};
    } else if (kind == "Clip") {
      float lo = -FLT_MAX, hi = FLT_MAX;
      if (opset < 11) {
        lo = fattr("min", -FLT_MAX);
        hi = fattr("max", FLT_MAX);
      } else {
        bool ok = true;
        for (size_t k = 1; k < act.inputs.size() && k < 3; ++k) {
          if (act.inputs[k].empty()) continue;
          const Tensor* t = find_initializer(m, act.inputs[k]);
          if (!is_f32_const(t) || t->numel() != 1) {
            ok = false;
            break;
          }
          (k == 1 ? lo : hi) = t->data_as<float>()[0];
        }
        if (!ok || act.inputs.size() > 3) continue;
      }
      params = {lo, hi};
    } else {
      continue;
    }
    const std::string& x = act.inputs[0];
    auto pit = uses.producer.find(x);
    if (pit == uses.producer.end() || uses.readers(x) != 1 || uses.is_output(x)) continue;
    Node& conv = m.nodes[static_cast<size_t>(pit->second)];
    const bool plain_conv = conv.op_type == "Conv" && conv.domain.empty();
    if ((!plain_conv && !is_bare_fused_conv(conv)) || conv.outputs.size() != 1) continue;
    if (!hooks.can_fuse_conv || !hooks.can_fuse_conv(m, conv, act)) continue;
    become_fused_conv(m, conv, kind, params, act.outputs[0]);
    removed.insert(ai);
    ++by_kind[kind];
    ++r.changed;
    uses = Uses(m);
  }
  erase_nodes(m, removed);
  const size_t affine = fold_fused_output_affine(m, hooks, removed);
  erase_nodes(m, removed);
  const size_t clamp = fold_fused_output_clamp(m, hooks, removed);
  erase_nodes(m, removed);
  r.message = std::to_string(r.changed) + " activations fused into Conv";

  std::string detail;
  for (const auto& [k, n] : by_kind) detail += (detail.empty() ? "" : ", ") + k + " " + std::to_string(n);
  if (!detail.empty()) r.message += " (" + detail + ")";
  if (affine) {
    r.changed += affine;
    r.message += "; " + std::to_string(affine) + " scalar Mul/Div/Add/Sub after them folded into the output scale/shift";
  }
  if (clamp) {
    r.changed += clamp;
    r.message += "; " + std::to_string(clamp) + " scalar Max/Min after them folded into the output bounds";
  }
  return r;
}

PassResult fuse_conv_add(Model& m, const PassHooks& hooks) {
  PassResult r{"conv-add-fusion"};
  if (int64_t v = fused_domain_clash(m)) {
    r.message = "0 Add nodes fused (the model imports domain com.ophost at version " + std::to_string(v) + ")";
    return r;
  }
  std::map<std::string, InferredValue> shapes;
  if (hooks.can_fuse_conv && hooks.infer_shapes) shapes = hooks.infer_shapes(m);
  // Same fully known shape and float32: Z adds element by element, no broadcasting.
  auto same_shape = [&](const std::string& a, const std::string& b) {
    auto x = shapes.find(a), y = shapes.find(b);
    if (x == shapes.end() || y == shapes.end() || x->second.dtype != DType::kFloat32 ||
        y->second.dtype != DType::kFloat32 || x->second.dims != y->second.dims)
      return false;
    return std::none_of(x->second.dims.begin(), x->second.dims.end(), [](int64_t d) { return d < 0; });
  };
  std::set<size_t> removed;
  Uses uses(m);
  for (size_t ai = 0; ai < m.nodes.size() && !shapes.empty(); ++ai) {
    const Node& add = m.nodes[ai];
    if (!standard_binary(add, "Add")) continue;
    // Either input may be the Conv's; the fused node runs where the Conv ran, so Z must be computed before it
    // (a graph input, an initializer, or an earlier node's output). Of two candidates the later Conv wins.
    int best = -1;
    size_t best_k = 0;
    for (size_t k = 0; k < 2; ++k) {
      const std::string& y = add.inputs[k];
      const std::string& z = add.inputs[1 - k];
      auto pit = uses.producer.find(y);
      if (y == z || pit == uses.producer.end() || uses.readers(y) != 1 || uses.is_output(y)) continue;
      const Node& conv = m.nodes[static_cast<size_t>(pit->second)];
      if (conv.op_type != "Conv" || !conv.domain.empty() || conv.outputs.size() != 1 || conv.inputs.size() > 3) continue;
      if (auto zp = uses.producer.find(z); zp != uses.producer.end() && zp->second >= pit->second) continue;
      if (!same_shape(y, z) || !hooks.can_fuse_conv(m, conv, add)) continue;
      if (pit->second > best) best = pit->second, best_k = k;
    }
    if (best < 0) continue;
    Node& conv = m.nodes[static_cast<size_t>(best)];
    conv.domain = kFusedDomain;
    conv.op_type = kFusedConv;
    conv.inputs.resize(4);  // B stays "" when absent
    conv.inputs[3] = add.inputs[1 - best_k];
    conv.outputs[0] = add.outputs[0];
    removed.insert(ai);
    ++r.changed;
    m.opset_imports[kFusedDomain] = 1;
    uses = Uses(m);
  }
  erase_nodes(m, removed);
  r.message = std::to_string(r.changed) + " Add nodes fused into Conv as its input Z";
  return r;
}

}  // namespace ophost
