// batchnorm-as-conv: an inference BatchNormalization that conv-bn-folding could not fold (its input is no Conv's
// output: DenseNet's BN -> ReLU -> Conv after each Concat) becomes a 1x1 depthwise Conv with the same per-channel
// affine, y = x * s + t with s = scale / sqrt(var + eps), t = B - mean * s, as ONNX Runtime's NCHWc transformer
// does. The following passes then treat it as any Conv: conv-activation-fusion takes the ReLU into it and
// nchwc-layout keeps its input and output channel-blocked, where BatchNormalization and Relu were two plain passes
// with a LayoutReorder on each side (DenseNet-121: 3.3 + 2.7 + 2.7 ms of 68 at AVX-512).
// Conditions, each checked (anything else is left alone):
//   - standard BatchNormalization at opset >= 9, training_mode 0, spatial 1, five inputs, only Y used;
//   - scale, B, mean and var float32 initializers of shape [C];
//   - X float32 of rank 4 with C a multiple of 8 (the blocked layouts' condition; PassHooks::infer_shapes);
//   - PassHooks::can_block_conv for the new Conv: the pack that serves FusedConv runs it on blocked layouts.
#include "passes/graph_util.hpp"
#include "passes/passes.hpp"

#include <algorithm>
#include <cmath>
#include <set>

namespace ophost {

using passes::find_attr;
using passes::find_initializer;

PassResult convert_batchnorm_to_conv(Model& m, const PassHooks& hooks) {
  PassResult r{"batchnorm-as-conv"};
  auto is_bn = [](const Node& n) { return n.op_type == "BatchNormalization" && n.domain.empty(); };
  if (!hooks.can_block_conv || !hooks.infer_shapes || passes::opset_of(m, "") < 9 ||
      std::none_of(m.nodes.begin(), m.nodes.end(), is_bn)) {
    r.message = "0 BatchNormalization nodes rewritten";
    return r;
  }
  const std::map<std::string, InferredValue> shapes = hooks.infer_shapes(m);
  const passes::Uses uses(m);
  std::set<std::string> names = passes::used_names(m);
  for (Node& bn : m.nodes) {
    if (!is_bn(bn) || bn.inputs.size() != 5 || bn.outputs.empty() || bn.outputs[0].empty() || bn.implicit_inputs)
      continue;
    if (std::any_of(bn.outputs.begin() + 1, bn.outputs.end(), [&](const std::string& o) { return !uses.unused(o); }))
      continue;
    if (const Attribute* a = find_attr(bn, "training_mode"); a && a->i != 0) continue;
    if (const Attribute* a = find_attr(bn, "spatial"); a && a->i != 1) continue;
    auto xs = shapes.find(bn.inputs[0]);
    if (xs == shapes.end() || xs->second.dtype != DType::kFloat32 || xs->second.dims.size() != 4) continue;
    const int64_t c = xs->second.dims[1];
    if (c <= 0 || c % 8 != 0) continue;
    const Tensor* par[4];
    bool ok = true;
    for (int k = 0; k < 4; ++k) {
      par[k] = find_initializer(m, bn.inputs[1 + k]);
      ok = ok && par[k] && par[k]->dtype() == DType::kFloat32 && par[k]->shape().size() == 1 && par[k]->shape()[0] == c;
    }
    if (!ok) continue;
    Node conv;
    conv.name = bn.name;
    conv.op_type = "Conv";
    conv.inputs = {bn.inputs[0], bn.name + "/dw_weight", bn.name + "/dw_bias"};  // named below
    conv.outputs = {bn.outputs[0]};
    Attribute group;
    group.name = "group";
    group.type = OPH_ATTR_INT;
    group.i = c;
    Attribute kernel;
    kernel.name = "kernel_shape";
    kernel.type = OPH_ATTR_INTS;
    kernel.ints = {1, 1};
    conv.attributes = {group, kernel};
    if (!hooks.can_block_conv(m, conv)) continue;  // no pack runs it blocked: leave the BatchNormalization
    float eps = 1e-5f;
    if (const Attribute* a = find_attr(bn, "epsilon")) eps = a->f;
    Tensor w(DType::kFloat32, {c, 1, 1, 1}), b(DType::kFloat32, {c});
    for (int64_t k = 0; k < c; ++k) {
      const float s = par[0]->data_as<float>()[k] / std::sqrt(par[3]->data_as<float>()[k] + eps);
      w.data_as<float>()[k] = s;
      b.data_as<float>()[k] = par[1]->data_as<float>()[k] - par[2]->data_as<float>()[k] * s;
    }
    conv.inputs[1] = passes::fresh_name(names, conv.inputs[1]);
    conv.inputs[2] = passes::fresh_name(names, conv.inputs[2]);
    m.initializers.emplace_back(conv.inputs[1], std::move(w));
    m.initializers.emplace_back(conv.inputs[2], std::move(b));
    bn = std::move(conv);
    ++r.changed;
  }
  r.message = std::to_string(r.changed) + " BatchNormalization nodes rewritten to 1x1 depthwise Conv";
  return r;
}

}  // namespace ophost
