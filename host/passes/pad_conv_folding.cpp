// pad-conv-folding: Pad(mode constant, value 0, spatial axes only, constant pads) whose output only a Conv reads
// (as X, auto_pad NOTSET) becomes the Conv's own pads. TensorFlow exporters write "SAME" padding of strided
// convolutions this way (M-LSD: a Pad before every stride-2 depthwise Conv); the Pad cost a full copy of its
// input, and a Conv's padding costs nothing. The same for an AveragePool (opset >= 7, auto_pad NOTSET, no pads of
// its own, ceil_mode 0) as the only reader: it gets the pads with count_include_pad=1, which divides every window
// by the kernel's size as the padded input did (PyTorch exports avg_pool2d(padding=p) as Pad + AveragePool). A
// Pad whose pads are all zero is a copy: removed whatever reads it (PyTorch 1.13 writes one before every
// avg_pool2d; DenseNet-121's transitions).
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

// The attribute `name` of n, added (with only its name) when absent.
Attribute& attr_slot(Node& n, const char* name) {
  for (Attribute& a : n.attributes)
    if (a.name == name) return a;
  Attribute a;
  a.name = name;
  n.attributes.push_back(std::move(a));
  return n.attributes.back();
}

// The reader takes the pads: a Conv/FusedConv reading the Pad as X, or an AveragePool whose windows the pads can
// widen without changing a divisor.
bool takes_pads(const Model& m, const Node& n, const std::string& y) {
  if (n.inputs.empty() || n.inputs[0] != y || std::count(n.inputs.begin(), n.inputs.end(), y) != 1) return false;
  if (const Attribute* a = find_attr(n, "auto_pad"); a && a->s != "NOTSET") return false;
  if ((n.domain.empty() && n.op_type == "Conv") || (n.domain == kFusedDomain && n.op_type == kFusedConv)) return true;
  if (!n.domain.empty() || n.op_type != "AveragePool" || opset_of(m, "") < 7) return false;
  if (const Attribute* c = find_attr(n, "ceil_mode"); c && c->i != 0) return false;
  if (const Attribute* p = find_attr(n, "pads"); p && std::any_of(p->ints.begin(), p->ints.end(), [](int64_t v) {
        return v != 0;
      }))
    return false;
  return true;
}

}  // namespace

PassResult fold_pad_into_conv(Model& m) {
  PassResult r{"pad-conv-folding"};
  std::set<size_t> removed;
  size_t convs = 0, pools = 0, noops = 0;
  Uses uses(m);
  for (size_t pi = 0; pi < m.nodes.size(); ++pi) {
    const Node& pad = m.nodes[pi];
    auto pads = zero_pads(m, pad);
    const std::string& y = pad.outputs.empty() ? std::string() : pad.outputs[0];
    if (!pads || y.empty() || uses.is_output(y)) continue;
    if (std::all_of(pads->begin(), pads->end(), [](int64_t v) { return v == 0; })) {
      // A copy: its readers read X (defined before the Pad, so the order stays valid).
      const std::string x = pad.inputs[0];
      removed.insert(pi);
      passes::rename_value(m, y, x);
      m.nodes[pi].outputs[0] = y;  // the Pad itself (erased below) keeps its name out of the renaming
      ++noops;
      uses = Uses(m);
      continue;
    }
    if (uses.readers(y) != 1) continue;
    Node& conv = m.nodes[static_cast<size_t>(uses.consumers.at(y)[0])];
    if (!takes_pads(m, conv, y)) continue;
    const bool pool = conv.op_type == "AveragePool";
    const size_t rank = pads->size() / 2;
    if (pads->size() % 2 || rank < 3) continue;
    // Only the spatial axes (N and C unpadded), no cropping (negative pads).
    bool ok = (*pads)[0] == 0 && (*pads)[1] == 0 && (*pads)[rank] == 0 && (*pads)[rank + 1] == 0;
    for (int64_t v : *pads) ok = ok && v >= 0;
    if (!ok) continue;
    const size_t nsp = rank - 2;
    std::vector<int64_t> cp(2 * nsp, 0);
    if (const Attribute* ca = find_attr(conv, "pads")) {
      if (ca->ints.size() != 2 * nsp) continue;
      cp = ca->ints;
    }
    for (size_t i = 0; i < nsp; ++i) {
      cp[i] += (*pads)[2 + i];
      cp[nsp + i] += (*pads)[rank + 2 + i];
    }
    Attribute& pa = attr_slot(conv, "pads");
    pa.type = OPH_ATTR_INTS;
    pa.ints = std::move(cp);
    if (pool) {
      Attribute& ca = attr_slot(conv, "count_include_pad");
      ca.type = OPH_ATTR_INT;
      ca.i = 1;
    }
    conv.inputs[0] = pad.inputs[0];
    removed.insert(pi);
    ++(pool ? pools : convs);
    uses = Uses(m);
  }
  passes::erase_nodes(m, removed);
  r.changed = convs + pools + noops;
  r.message = std::to_string(convs) + " Pad nodes folded into Conv pads, " + std::to_string(pools) +
              " into AveragePool pads, " + std::to_string(noops) + " Pad nodes with zero pads removed";
  return r;
}

}  // namespace ophost