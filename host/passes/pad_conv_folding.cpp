// pad-conv-folding: Pad(mode constant, value 0, spatial axes only, constant pads) whose output only a Conv reads
// (as X, auto_pad NOTSET) becomes the Conv's own pads. TensorFlow exporters write "SAME" padding of strided
// convolutions this way (M-LSD: a Pad before every stride-2 depthwise Conv); the Pad cost a full copy of its
// input, and a Conv's padding costs nothing.
#include "passes/graph_util.hpp"
#include "passes/passes.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <vector>

namespace ophost {

using passes::find_attr;
using passes::find_initializer;
using passes::opset_of;
using passes::Uses;

namespace {

// The Pad's begin/end pads when it pads with zeros in constant mode (nullopt otherwise).
std::optional<std::vector<int64_t>> zero_pads(const Model& m, const Node& pad) {
  if (pad.op_type != "Pad" || !pad.domain.empty() || pad.inputs.empty() || pad.outputs.size() != 1) return std::nullopt;
  if (const Attribute* a = find_attr(pad, "mode"); a && a->s != "constant") return std::nullopt;
  if (opset_of(m, "") < 11) {
    const Attribute* p = find_attr(pad, "pads");
    if (!p) p = find_attr(pad, "paddings");  // opset 1
    const Attribute* v = find_attr(pad, "value");
    if (!p || (v && v->f != 0.0f)) return std::nullopt;
    return p->ints;
  }
  if (pad.inputs.size() < 2 || pad.inputs.size() > 3) return std::nullopt;  // opset 18's axes: not folded
  const Tensor* p = find_initializer(m, pad.inputs[1]);
  if (!p || p->dtype() != DType::kInt64 || p->shape().size() != 1) return std::nullopt;
  if (pad.inputs.size() == 3 && !pad.inputs[2].empty()) {
    const Tensor* v = find_initializer(m, pad.inputs[2]);
    if (!v || v->dtype() != DType::kFloat32 || v->numel() != 1 || v->data_as<float>()[0] != 0.0f) return std::nullopt;
  }
  const int64_t* d = p->data_as<int64_t>();
  return std::vector<int64_t>(d, d + p->numel());
}

}  // namespace

PassResult fold_pad_into_conv(Model& m) {
  PassResult r{"pad-conv-folding"};
  std::set<size_t> removed;
  Uses uses(m);
  for (size_t pi = 0; pi < m.nodes.size(); ++pi) {
    const Node& pad = m.nodes[pi];
    auto pads = zero_pads(m, pad);
    const std::string& y = pad.outputs.empty() ? std::string() : pad.outputs[0];
    if (!pads || y.empty() || uses.readers(y) != 1 || uses.is_output(y)) continue;
    Node& conv = m.nodes[static_cast<size_t>(uses.consumers.at(y)[0])];
    const bool is_conv = (conv.domain.empty() && conv.op_type == "Conv") ||
                         (conv.domain == kFusedDomain && conv.op_type == kFusedConv);
    if (!is_conv || conv.inputs.empty() || conv.inputs[0] != y) continue;
    if (std::count(conv.inputs.begin(), conv.inputs.end(), y) != 1) continue;
    if (const Attribute* a = find_attr(conv, "auto_pad"); a && a->s != "NOTSET") continue;
    const size_t rank = pads->size() / 2;
    if (pads->size() % 2 || rank < 3) continue;
    // Only the spatial axes (N and C unpadded), no cropping (negative pads).
    bool ok = (*pads)[0] == 0 && (*pads)[1] == 0 && (*pads)[rank] == 0 && (*pads)[rank + 1] == 0;
    for (int64_t v : *pads) ok = ok && v >= 0;
    if (!ok) continue;
    const size_t nsp = rank - 2;
    std::vector<int64_t> cp(2 * nsp, 0);
    Attribute* ca = nullptr;
    for (Attribute& a : conv.attributes)
      if (a.name == "pads") ca = &a;
    if (ca) {
      if (ca->ints.size() != 2 * nsp) continue;
      cp = ca->ints;
    }
    for (size_t i = 0; i < nsp; ++i) {
      cp[i] += (*pads)[2 + i];
      cp[nsp + i] += (*pads)[rank + 2 + i];
    }
    if (!ca) {
      Attribute a;
      a.name = "pads";
      a.type = OPH_ATTR_INTS;
      conv.attributes.push_back(a);
      ca = &conv.attributes.back();
    }
    ca->ints = cp;
    conv.inputs[0] = pad.inputs[0];
    removed.insert(pi);
    ++r.changed;
    uses = Uses(m);
  }
  passes::erase_nodes(m, removed);
  r.message = std::to_string(r.changed) + " Pad nodes folded into Conv pads";
  return r;
}

}  // namespace ophost