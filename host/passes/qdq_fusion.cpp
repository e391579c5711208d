// qdq-fusion: the QDQ form of int8 models (PyTorch's quantized export, ONNX Runtime's QuantFormat.QDQ,
// TensorRT-style graphs) rewritten to the standard integer ops, as ONNX Runtime's QDQ transformers do, so that
// convolutions and matrix products run on int8 kernels instead of dequantize -> float32 op -> quantize:
//
//   DequantizeLinear(x_q) -> Conv(., DequantizeLinear(W_q), B) [-> Relu | Clip] -> QuantizeLinear -> y_q
//       becomes QLinearConv(x_q, x_scale, x_zp, W_q, w_scale, w_zp, y_scale, y_zp, B_int32) -> y_q
//   DequantizeLinear(a_q) -> MatMul(., DequantizeLinear(B_q)) -> QuantizeLinear -> y_q
//       becomes QLinearMatMul(a_q, ...) -> y_q
//
// Conditions (anything else stays as it is and runs correctly in float32):
//  - activation scales and zero points are constant scalars (the input's zero point present: it gives the
//    quantized type); the weights are an int8/uint8 initializer whose
//    scale is a scalar or per output channel (Conv: axis 0; MatMul: per column, axis 1 of a 2-D B);
//  - Conv's bias is a float constant (PyTorch and ONNX Runtime write it as DequantizeLinear of int32 with scale
//    x_scale * w_scale, which constant-folding has turned into float): it becomes int32 again as
//    round(B / (x_scale * w_scale[m])), refused when a value does not fit int32;
//  - the float output feeds only the activation or the QuantizeLinear; Relu is dropped only when y's zero point
//    is its type's lowest value (saturation then does Relu's work), Clip only when the quantized range already
//    lies within [min, max];
//  - a Cast of a QuantizeLinear's output to the type it already has (PyTorch writes Q -> Cast(uint8) -> DQ) is
//    removed first.
// constant-folding leaves DequantizeLinear of 8-bit constants alone before this pass (the weights stay int8,
// a quarter of their float size); what this pass does not fuse is folded after it.
#include "passes/graph_util.hpp"
#include "passes/passes.hpp"

#include <spdlog/spdlog.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <set>

namespace ophost {

using passes::find_attr;
using passes::find_initializer;
using passes::opset_of;
using passes::Uses;

namespace {

bool is_op(const Node& n, const char* op) { return n.op_type == op && n.domain.empty(); }

bool is_8bit(DType d) { return d == DType::kInt8 || d == DType::kUint8; }

// A constant float32 scale: its values (one, or one per channel).
std::optional<std::vector<float>> const_floats(const Model& m, const std::string& name) {
  const Tensor* t = find_initializer(m, name);
  if (!t || t->dtype() != DType::kFloat32 || t->numel() == 0) return std::nullopt;
  return std::vector<float>(t->data_as<float>(), t->data_as<float>() + t->numel());
}

int32_t int_value(const Tensor& t, size_t i) {
  if (t.dtype() == DType::kUint8) return t.data_as<uint8_t>()[i];
  if (t.dtype() == DType::kInt8) return t.data_as<int8_t>()[i];
  return t.data_as<int32_t>()[i];
}

// A (De)QuantizeLinear's quantization parameters when they are constants: scale values, and the zero point's
// tensor (null when absent: uint8 zero).
struct QParams {
  std::vector<float> scale;
  const Tensor* zp = nullptr;
  DType type = DType::kUint8;  // the quantized type (the zero point's)
  int64_t axis = 1;
  bool scalar() const { return scale.size() == 1 && (!zp || zp->numel() == 1); }
  int32_t zero(size_t i = 0) const { return zp ? int_value(*zp, zp->numel() == 1 ? 0 : i) : 0; }
};

std::optional<QParams> qparams(const Model& m, const Node& n) {
  if (n.inputs.size() < 2 || n.outputs.size() != 1) return std::nullopt;
  QParams q;
  auto s = const_floats(m, n.inputs[1]);
  if (!s) return std::nullopt;
  for (float v : *s)
    if (!(v > 0) || !std::isfinite(v)) return std::nullopt;  // the kernels' own checks give the message
  q.scale = *s;
  if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
    q.zp = find_initializer(m, n.inputs[2]);
    if (!q.zp || !is_8bit(q.zp->dtype()) || q.zp->numel() != q.scale.size()) return std::nullopt;
    q.type = q.zp->dtype();
  }
  if (const Attribute* a = find_attr(n, "axis")) q.axis = a->i;
  return q;
}

// Removes Cast nodes that convert a QuantizeLinear's output to the type it already has.
size_t remove_noop_casts(Model& m) {
  Uses uses(m);
  std::map<std::string, std::string> rename;  // Cast output -> its input
  std::set<size_t> removed;
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    const Node& c = m.nodes[i];
    if (!is_op(c, "Cast") || c.inputs.size() != 1 || c.outputs.size() != 1 || uses.is_output(c.outputs[0])) continue;
    auto p = uses.producer.find(c.inputs[0]);
    if (p == uses.producer.end()) continue;
    const Node& q = m.nodes[p->second];
    if (!is_op(q, "QuantizeLinear")) continue;
    DType qt = DType::kUint8;
    if (q.inputs.size() > 2 && !q.inputs[2].empty()) {
      const Tensor* zp = find_initializer(m, q.inputs[2]);
      if (!zp) continue;
      qt = zp->dtype();
    }
    const Attribute* to = find_attr(c, "to");
    if (!to || to->i != static_cast<int64_t>(qt)) continue;
    rename[c.outputs[0]] = c.inputs[0];
    removed.insert(i);
  }
  for (Node& n : m.nodes)
    for (std::string& in : n.inputs)
      if (auto it = rename.find(in); it != rename.end()) in = it->second;
  const size_t count = removed.size();
  passes::erase_nodes(m, removed);
  return count;
}

struct Fuser {
  Model& m;
  Uses uses;
  std::set<std::string> names;
  std::set<size_t> removed;
  std::vector<Node> added;
  size_t convs = 0, matmuls = 0, activations = 0;

  explicit Fuser(Model& model) : m(model), uses(model), names(passes::used_names(model)) {}

  const Node* producer(const std::string& v) const {
    auto it = uses.producer.find(v);
    return it == uses.producer.end() ? nullptr : &m.nodes[it->second];
  }
  // The only reader of v (and v is no graph output), else null.
  int sole_reader(const std::string& v) const {
    if (uses.is_output(v) || uses.readers(v) != 1) return -1;
    return uses.consumers.at(v)[0];
  }

  // The zero point input for a quantized value: the node's own, or a new zero initializer of `type`.
  std::string zero_point(const Node& n, DType type, size_t count) {
    if (n.inputs.size() > 2 && !n.inputs[2].empty()) return n.inputs[2];
    const std::string name = passes::fresh_name(names, n.outputs[0] + "_zero_point");
    Tensor t(type, count == 1 ? std::vector<int64_t>{} : std::vector<int64_t>{static_cast<int64_t>(count)});
    std::memset(t.data(), 0, t.nbytes());
    m.initializers.emplace_back(name, std::move(t));
    return name;
  }

  // Follows op's output through an optional Relu/Clip to a QuantizeLinear; returns the QuantizeLinear's index
  // (and the activation's in *act, -1 for none), or -1 when the chain does not end so or the activation does
  // not vanish under the output's quantization.
  int output_chain(const Node& op, int* act) {
    *act = -1;
    int r = sole_reader(op.outputs[0]);
    if (r < 0) return -1;
    const Node* next = &m.nodes[r];
    if ((is_op(*next, "Relu") || is_op(*next, "Clip")) && next->outputs.size() == 1 && !next->inputs.empty() &&
        next->inputs[0] == op.outputs[0]) {
      *act = r;
      r = sole_reader(next->outputs[0]);
      if (r < 0) return -1;
    }
    const Node& q = m.nodes[r];
    if (!is_op(q, "QuantizeLinear")) return -1;
    auto qp = qparams(m, q);
    if (!qp || !qp->scalar()) return -1;
    if (*act >= 0) {
      const Node& a = m.nodes[*act];
      const int32_t lo = qp->type == DType::kInt8 ? -128 : 0, hi = qp->type == DType::kInt8 ? 127 : 255;
      const float s = qp->scale[0];
      const float qlo = static_cast<float>(lo - qp->zero()) * s, qhi = static_cast<float>(hi - qp->zero()) * s;
      if (is_op(a, "Relu")) {
        if (qp->zero() != lo) return -1;
      } else {  // Clip: bounds from inputs (opset >= 11) or attributes
        float cmin = -std::numeric_limits<float>::infinity(), cmax = std::numeric_limits<float>::infinity();
        if (opset_of(m, "") >= 11) {
          for (size_t k = 1; k < 3 && k < a.inputs.size(); ++k) {
            if (a.inputs[k].empty()) continue;
            auto v = const_floats(m, a.inputs[k]);
            if (!v || v->size() != 1) return -1;
            (k == 1 ? cmin : cmax) = (*v)[0];
          }
        } else {
          if (const Attribute* x = find_attr(a, "min")) cmin = x->f;
          if (const Attribute* x = find_attr(a, "max")) cmax = x->f;
        }
        // The quantized range within [min, max] (a half step of slack: values there round to the ends).
        if (qlo < cmin - s / 2 || qhi > cmax + s / 2) return -1;
      }
    }
    return r;
  }

  // The two DequantizeLinear inputs of a Conv or MatMul: the activation's (a constant per-tensor scale and its
  // own zero point: without one the value may be int8 or uint8, which only its type would tell) and the weights'
  // (an 8-bit initializer of rank `rank` (Conv: at least 3), per tensor or per channel along `channel_axis`).
  struct Operands {
    const Node* xdq;
    const Node* wdq;
    QParams xq, wq;
    DType wtype;
    int64_t channels;  // the weights' dim along channel_axis
  };
  std::optional<Operands> operands(const Node& op, size_t rank, bool at_least, size_t channel_axis) const {
    if (op.inputs.size() < 2 || op.outputs.size() != 1) return std::nullopt;
    const Node* xdq = producer(op.inputs[0]);
    const Node* wdq = producer(op.inputs[1]);
    if (!xdq || !wdq || !is_op(*xdq, "DequantizeLinear") || !is_op(*wdq, "DequantizeLinear")) return std::nullopt;
    auto xq = qparams(m, *xdq), wq = qparams(m, *wdq);
    if (!xq || !wq || !xq->scalar() || !xq->zp) return std::nullopt;
    const Tensor* w = find_initializer(m, wdq->inputs[0]);
    if (!w || !is_8bit(w->dtype())) return std::nullopt;
    const size_t wr = w->shape().size();
    if (at_least ? wr < rank : wr != rank) return std::nullopt;
    const int64_t channels = w->shape()[channel_axis];
    const bool axis_ok = wq->axis == static_cast<int64_t>(channel_axis) ||
                         wq->axis == static_cast<int64_t>(channel_axis) - static_cast<int64_t>(wr);
    if (wq->scale.size() != 1 && (static_cast<int64_t>(wq->scale.size()) != channels || !axis_ok)) return std::nullopt;
    if (wq->zp && wq->zp->dtype() != w->dtype()) return std::nullopt;
    // (w points into m.initializers, which grows below: only its dtype and the channel count are kept)
    return Operands{xdq, wdq, *xq, *wq, w->dtype(), channels};
  }

  // Writes `type` (QLinearConv / QLinearMatMul) for the op at `oi`, its activation at `act` (-1: none) and the
  // QuantizeLinear at `qi`, with `extra` inputs after the standard eight and the op's attributes.
  void fuse(const char* type, size_t oi, int act, int qi, const Operands& o, std::vector<std::string> extra) {
    const Node& op = m.nodes[oi];
    const Node& q = m.nodes[static_cast<size_t>(qi)];
    const DType ytype = qparams(m, q)->type;
    Node f;
    f.name = passes::fused_node_name(op.name, type);
    f.op_type = type;
    f.inputs = {o.xdq->inputs[0], o.xdq->inputs[1], zero_point(*o.xdq, o.xq.type, 1), o.wdq->inputs[0],
                o.wdq->inputs[1], zero_point(*o.wdq, o.wtype, o.wq.scale.size()), q.inputs[1],
                zero_point(q, ytype, 1)};
    f.inputs.insert(f.inputs.end(), extra.begin(), extra.end());
    f.outputs = {q.outputs[0]};
    f.attributes = op.attributes;
    removed.insert(oi);
    removed.insert(static_cast<size_t>(qi));
    if (act >= 0) {
      removed.insert(static_cast<size_t>(act));
      ++activations;
    }
    added.push_back(std::move(f));
  }

  void fuse_conv(size_t ci) {
    const auto o = operands(m.nodes[ci], 3, /*at_least=*/true, 0);
    if (!o) return;
    int act = -1;
    const int qi = output_chain(m.nodes[ci], &act);
    if (qi < 0) return;
    // Bias to int32 in the accumulator's units.
    std::vector<std::string> extra;
    const Node& conv = m.nodes[ci];
    if (conv.inputs.size() > 2 && !conv.inputs[2].empty()) {
      auto b = const_floats(m, conv.inputs[2]);
      if (!b || static_cast<int64_t>(b->size()) != o->channels) return;
      Tensor bi(DType::kInt32, {o->channels});
      for (int64_t k = 0; k < o->channels; ++k) {
        const double unit = static_cast<double>(o->xq.scale[0]) * o->wq.scale[o->wq.scale.size() == 1 ? 0 : k];
        const double v = std::nearbyint(static_cast<double>((*b)[k]) / unit);
        if (!(std::fabs(v) < 2147483647.0)) return;
        bi.data_as<int32_t>()[k] = static_cast<int32_t>(v);
      }
      extra.push_back(passes::fresh_name(names, conv.inputs[2] + "_int32"));
      m.initializers.emplace_back(extra.back(), std::move(bi));
    }
    fuse("QLinearConv", ci, act, qi, *o, std::move(extra));
    ++convs;
  }

  void fuse_matmul(size_t mi) {
    if (m.nodes[mi].inputs.size() != 2) return;
    const auto o = operands(m.nodes[mi], 2, /*at_least=*/false, 1);
    if (!o) return;
    int act = -1;
    const int qi = output_chain(m.nodes[mi], &act);
    if (qi < 0) return;
    fuse("QLinearMatMul", mi, act, qi, *o, {});
    ++matmuls;
  }
};

}  // namespace

PassResult fuse_qdq(Model& m) {
  PassResult r{"qdq-fusion"};
  if (opset_of(m, "") < 10) {
    r.message = "opset below 10: nothing to do";
    return r;
  }
  const size_t casts = remove_noop_casts(m);
  Fuser f(m);
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    if (f.removed.count(i)) continue;
    if (is_op(m.nodes[i], "Conv")) f.fuse_conv(i);
    else if (is_op(m.nodes[i], "MatMul")) f.fuse_matmul(i);
  }
  // Each fused node takes the place of its op (the order stays topological: its inputs come before the op, its
  // output's readers after the QuantizeLinear, which came after the op).
  std::vector<Node> nodes;
  nodes.reserve(m.nodes.size());
  size_t next = 0;
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    if (!f.removed.count(i)) {
      nodes.push_back(std::move(m.nodes[i]));
      continue;
    }
    const std::string& op = m.nodes[i].op_type;
    if ((op == "Conv" || op == "MatMul") && m.nodes[i].domain.empty() && next < f.added.size())
      nodes.push_back(std::move(f.added[next++]));
  }
  m.nodes = std::move(nodes);
  r.changed = casts + f.convs + f.matmuls;
  r.message = std::to_string(f.convs) + " Conv -> QLinearConv, " + std::to_string(f.matmuls) +
              " MatMul -> QLinearMatMul (" + std::to_string(f.activations) + " activations absorbed), " +
              std::to_string(casts) + " no-op Casts after QuantizeLinear removed";
  return r;
}

}  // namespace ophost
