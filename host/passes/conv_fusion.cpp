// Conv rewrites:
//  conv-bn-folding         Conv(X, W[, B]) -> BatchNormalization(scale, bias, mean, var), everything constant
//                          float32, BN in inference mode, the Conv's output read only by the BN:
//                            s = scale / sqrt(var + epsilon);  W' = W * s (per output channel);
//                            B' = (B - mean) * s + bias
//  conv-affine-folding     Conv -> Mul(c) and/or Add(d) with per-channel (or scalar) float32 constants, each
//                          intermediate read only by the next node:  W' = W * c,  B' = B * c + d
//  conv-activation-fusion  Conv -> activation becomes com.ophost::FusedConv(activation, activation_params)
//                          where PassHooks::can_fuse_conv says a pack serves it (OPH_OP_FLAG_ALLOW_FUSION).
// New weights are new initializers (fresh names); the old ones are dropped by dead-node-elimination when
// nothing else reads them.
#include "passes/graph_util.hpp"
#include "passes/passes.hpp"

#include <cfloat>
#include <cmath>
#include <set>

namespace ophost {

using passes::find_attr;
using passes::find_initializer;
using passes::opset_of;
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

PassResult fuse_conv_activation(Model& m, const PassHooks& hooks) {
  PassResult r{"conv-activation-fusion"};
  if (auto it = m.opset_imports.find(kFusedDomain); it != m.opset_imports.end() && it->second != 1) {
    r.message = "0 activations fused (the model imports domain com.ophost at version " + std::to_string(it->second) + ")";
    return r;
  }
  const int64_t opset = opset_of(m, "");
  std::set<size_t> removed;
  std::map<std::string, size_t> by_kind;
  Uses uses(m);
  for (size_t ai = 0; ai < m.nodes.size(); ++ai) {
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
    if (conv.op_type != "Conv" || !conv.domain.empty() || conv.outputs.size() != 1) continue;
    if (!hooks.can_fuse_conv || !hooks.can_fuse_conv(m, conv, act)) continue;
    conv.domain = kFusedDomain;
    conv.op_type = kFusedConv;
    Attribute a;
    a.name = "activation";
    a.type = OPH_ATTR_STRING;
    a.s = kind;
    conv.attributes.push_back(a);
    if (!params.empty()) {
      Attribute p;
      p.name = "activation_params";
      p.type = OPH_ATTR_FLOATS;
      p.floats = params;
      conv.attributes.push_back(p);
    }
    conv.outputs[0] = act.outputs[0];
    removed.insert(ai);
    ++by_kind[kind];
    ++r.changed;
    m.opset_imports[kFusedDomain] = 1;
    uses = Uses(m);
  }
  std::vector<Node> kept;
  for (size_t i = 0; i < m.nodes.size(); ++i)
    if (!removed.count(i)) kept.push_back(std::move(m.nodes[i]));
  m.nodes = std::move(kept);
  r.message = std::to_string(r.changed) + " activations fused into Conv";
  std::string detail;
  for (const auto& [k, n] : by_kind) detail += (detail.empty() ? "" : ", ") + k + " " + std::to_string(n);
  if (!detail.empty()) r.message += " (" + detail + ")";
  return r;
}

}  // namespace ophost
