// layer-norm-fusion: LayerNormalization as exporters before opset 17 write it out (PyTorch's nn.LayerNorm at
// opset < 17, ONNX Runtime's LayerNormFusion recognises the same chain):
//
//   mean = ReduceMean(X, axes)          d = Sub(X, mean)            p = Pow(d, 2)
//   var  = ReduceMean(p, axes)          s = Sqrt(Add(var, eps))     n = Div(d, s)
//   [g = Mul(n, gamma)]                 [y = Add(g, beta)]          (Mul/Add operands in either order)
//
// becomes one com.ophost::LayerNormalization(X, Scale, B) (ONNX LayerNormalization-17's attributes axis and
// epsilon, outputs Mean/InvStdDev absent). Conditions, each checked (anything else is left alone):
//   - both ReduceMeans have keepdims 1 and the same axes (attribute before opset 18, a constant input from 18),
//     which cover the trailing dims of X exactly (axis = the first of them); X is float32 of known rank with
//     those trailing dims known (PassHooks::infer_shapes);
//   - the exponent is a constant 2 and eps a constant, each a float32 scalar (one element, rank <= X's);
//   - gamma and beta are float32 constants with one element or X's trailing dims (leading 1s allowed, no more
//     dims than X), so they scale/shift along the normalized dims only; a Mul or Add after the Div with any
//     other operand leaves the whole chain alone; without a Mul, Scale is a constant 1;
//   - every intermediate (mean, d, p, var, var + eps, s, n, g) is read only inside the chain (d by Pow and Div)
//     and is no graph output;
//   - PassHooks::can_fuse_op: a pack serves com.ophost::LayerNormalization with OPH_OP_FLAG_ALLOW_FUSION on the
//     device the nodes resolve to, and the model does not import com.ophost at another version.
// The fused node takes the place of the chain's last node (X and the constants are defined before it).
#include "passes/graph_util.hpp"
#include "passes/passes.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

namespace ophost::passes {
namespace {

// The axes a ReduceMean with keepdims 1 reduces over, normalized to 0..rank-1 and sorted; nullopt when they are
// not constant, repeat, or are out of range.
std::optional<std::vector<int64_t>> reduce_axes(const Model& m, const Node& n, int64_t rank) {
  if (n.op_type != "ReduceMean" || !n.domain.empty() || n.inputs.empty() || n.outputs.size() != 1) return std::nullopt;
  if (const Attribute* k = find_attr(n, "keepdims"); k && k->i != 1) return std::nullopt;
  std::vector<int64_t> axes;
  if (opset_of(m, "") < 18) {
    const Attribute* a = find_attr(n, "axes");
    if (!a || n.inputs.size() != 1) return std::nullopt;
    axes = a->ints;
  } else {
    if (n.inputs.size() != 2) return std::nullopt;
    const Tensor* t = find_initializer(m, n.inputs[1]);
    if (!t || t->dtype() != DType::kInt64 || t->shape().size() != 1) return std::nullopt;
    axes.assign(t->data_as<int64_t>(), t->data_as<int64_t>() + t->numel());
  }
  if (axes.empty()) return std::nullopt;
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) return std::nullopt;
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) return std::nullopt;
  return axes;
}

// Whether constant `t` (gamma or beta) fits the fused op: one element, or X's trailing `norm_dims` (after
// leading 1s), never more dims than X.
bool fits_normalized_dims(const Tensor* t, const std::vector<int64_t>& x_dims, size_t norm_dims) {
  if (!t || t->dtype() != DType::kFloat32 || t->shape().size() > x_dims.size()) return false;
  if (t->numel() == 1) return true;
  std::vector<int64_t> s(t->shape().begin(), t->shape().end());
  while (!s.empty() && s.front() == 1 && s.size() > norm_dims) s.erase(s.begin());
  return s.size() == norm_dims && std::equal(s.begin(), s.end(), x_dims.end() - static_cast<std::ptrdiff_t>(norm_dims));
}

struct Chain {
  std::vector<size_t> nodes;  // indices, in graph order of the pattern: ReduceMean, Sub, Pow, ..., Div[, Mul][, Add]
  std::string x, scale, bias, y;
  int64_t axis = -1;
  float epsilon = 0;
};

class Matcher {
 public:
  Matcher(const Model& m, const Uses& uses, const std::map<std::string, InferredValue>& shapes)
      : m_(m), uses_(uses), shapes_(shapes) {}

  // The chain whose Div is node `di`, or nullopt; `why` says what kept a chain of the right nodes from fusing.
  std::optional<Chain> match(size_t di, std::string& why) const {
    const Node& div = m_.nodes[di];
    if (!standard_binary(div, "Div") || div.implicit_inputs) return std::nullopt;
    const std::string& d = div.inputs[0];
    const Node* sqrt = only_reader_of_producer(div.inputs[1], "Sqrt", 1);
    const Node* add_eps = sqrt ? only_reader_of_producer(sqrt->inputs[0], "Add", 2) : nullptr;
    if (!add_eps) return std::nullopt;
    // var + eps: var the ReduceMean's output, eps the constant.
    for (size_t k = 0; k < 2; ++k) {
      const Node* rm2 = only_reader_of_producer(add_eps->inputs[k], "ReduceMean", 0);
      if (!rm2 || add_eps->inputs[1 - k] == add_eps->inputs[k]) continue;
      const Node* pow = only_reader_of_producer(rm2->inputs[0], "Pow", 2);
      if (!pow || pow->inputs[0] != d) continue;
      const Node* sub = producer(d, "Sub", 2);
      if (!sub || uses_.readers(d) != 2 || uses_.is_output(d)) continue;
      const Node* rm1 = only_reader_of_producer(sub->inputs[1], "ReduceMean", 0);
      if (!rm1 || rm1->inputs[0] != sub->inputs[0]) continue;
      Chain c;
      c.x = sub->inputs[0];
      auto shape = shapes_.find(c.x);
      if (shape == shapes_.end() || shape->second.dtype != DType::kFloat32) {
        why = "the rank or element type of " + c.x + " is not known at load (or it is not float32)";
        continue;
      }
      const std::vector<int64_t>& dims = shape->second.dims;
      const int64_t rank = static_cast<int64_t>(dims.size());
      auto axes1 = reduce_axes(m_, *rm1, rank), axes2 = reduce_axes(m_, *rm2, rank);
      if (!axes1 || !axes2 || *axes1 != *axes2 || axes1->back() != rank - 1 ||
          axes1->front() != rank - static_cast<int64_t>(axes1->size())) {
        why = "the ReduceMean axes differ, are not constant, or are not the trailing axes of " + c.x;
        continue;
      }
      const size_t norm_dims = axes1->size();
      if (std::any_of(dims.end() - static_cast<std::ptrdiff_t>(norm_dims), dims.end(), [](int64_t v) { return v < 0; })) {
        why = "the normalized dims of " + c.x + " are not known at load";
        continue;
      }
      // Scalars of rank <= X's (no broadcast growing the rank).
      auto scalar = [&](const std::string& v) {
        const Tensor* t = find_initializer(m_, v);
        return t && t->shape().size() <= dims.size() ? scalar_const(m_, v) : std::nullopt;
      };
      auto two = scalar(pow->inputs[1]), eps = scalar(add_eps->inputs[1 - k]);
      if (!two || *two != 2.0f || !eps) {
        why = "the exponent is not a constant 2 or eps not a float32 constant";
        continue;
      }
      c.axis = -static_cast<int64_t>(norm_dims);
      c.epsilon = *eps;
      c.nodes = {index(*rm1), index(*sub), index(*pow), index(*rm2), index(*add_eps), index(*sqrt), di};
      c.y = div.outputs[0];
      if (!affine(c, dims, norm_dims)) {
        why = "the Mul/Add after the Div has an operand that is not a float32 constant over the normalized dims";
        continue;
      }
      return c;
    }
    return std::nullopt;
  }

 private:
  size_t index(const Node& n) const { return static_cast<size_t>(&n - m_.nodes.data()); }

  // The standard node of type `op` (with `inputs` inputs; 0: any number) that produces `v`.
  const Node* producer(const std::string& v, const char* op, size_t inputs) const {
    auto it = uses_.producer.find(v);
    if (it == uses_.producer.end()) return nullptr;
    const Node& n = m_.nodes[static_cast<size_t>(it->second)];
    if (n.op_type != op || !n.domain.empty() || (inputs && n.inputs.size() != inputs) || n.outputs.size() != 1 ||
        n.implicit_inputs)
      return nullptr;
    return &n;
  }
  // The same, when `v` has one reader and is no graph output.
  const Node* only_reader_of_producer(const std::string& v, const char* op, size_t inputs) const {
    if (uses_.readers(v) != 1 || uses_.is_output(v)) return nullptr;
    return producer(v, op, inputs);
  }
  // The only reader of `v` (no graph output) when it is a standard two-input `op`, else nullptr.
  const Node* next(const std::string& v, const char* op) const {
    if (uses_.readers(v) != 1 || uses_.is_output(v)) return nullptr;
    const Node& n = m_.nodes[static_cast<size_t>(uses_.consumers.at(v)[0])];
    return standard_binary(n, op) && !n.implicit_inputs ? &n : nullptr;
  }

  // Mul(gamma) and Add(beta) after the Div, when their operands fit; false when a Mul/Add follows with an
  // operand that does not (the chain is left alone).
  bool affine(Chain& c, const std::vector<int64_t>& dims, size_t norm_dims) const {
    for (auto [op, param] : {std::pair{"Mul", &c.scale}, std::pair{"Add", &c.bias}}) {
      const Node* n = next(c.y, op);
      if (!n) continue;
      *param = other_input(*n, c.y);
      if (param->empty() || !fits_normalized_dims(find_initializer(m_, *param), dims, norm_dims)) return false;
      c.y = n->outputs[0];
      c.nodes.push_back(index(*n));
    }
    return true;
  }

  const Model& m_;
  const Uses& uses_;
  const std::map<std::string, InferredValue>& shapes_;
};

}  // namespace
}  // namespace ophost::passes

namespace ophost {

PassResult fuse_layer_norm(Model& m, const PassHooks& hooks) {
  using passes::Matcher;
  PassResult r{"layer-norm-fusion"};
  if (int64_t v = passes::fused_domain_clash(m)) {
    r.message = "0 LayerNormalization chains fused (the model imports domain com.ophost at version " +
                std::to_string(v) + ")";
    return r;
  }
  if (!hooks.can_fuse_op || !hooks.infer_shapes ||
      std::none_of(m.nodes.begin(), m.nodes.end(), [](const Node& n) { return n.op_type == "ReduceMean"; })) {
    r.message = "0 LayerNormalization chains fused";
    return r;
  }
  const std::map<std::string, InferredValue> shapes = hooks.infer_shapes(m);
  std::set<size_t> removed;
  size_t not_served = 0, not_matched = 0;
  // One index for the whole pass: a rewrite replaces its chain's last node at the same index (same output) and
  // marks the others removed; no other chain's conditions read those values (a chain sharing a node with a fused
  // one is skipped by the removed check below), so the index never needs rebuilding.
  const passes::Uses uses(m);
  for (size_t di = 0; di < m.nodes.size(); ++di) {
    if (removed.count(di)) continue;
    std::string why;
    std::optional<passes::Chain> c = Matcher(m, uses, shapes).match(di, why);
    if (!c && !why.empty()) {
      spdlog::debug("layer-norm-fusion: chain ending in node '{}' not fused: {}", m.nodes[di].name, why);
      ++not_matched;
    }
    if (!c || std::any_of(c->nodes.begin(), c->nodes.end(), [&](size_t i) { return removed.count(i) != 0; })) continue;
    std::vector<const Node*> nodes;
    for (size_t i : c->nodes) nodes.push_back(&m.nodes[i]);
    if (!hooks.can_fuse_op(m, kLayerNormalization, nodes)) {
      ++not_served;
      continue;
    }
    // gamma and beta as they are (the kernel reads their values in order: one, or one per normalized element);
    // Scale a constant 1 when there is no Mul.
    std::string scale = c->scale;
    if (scale.empty()) {
      scale = passes::fresh_name(m, m.nodes[c->nodes[0]].name + "/ln_scale_one");
      m.initializers.emplace_back(scale, Tensor(DType::kFloat32, {1}));
      m.initializers.back().second.data_as<float>()[0] = 1.0f;
    }
    Node fused;
    fused.name = passes::fused_node_name(m.nodes[c->nodes[0]].name, kLayerNormalization);
    fused.domain = kFusedDomain;
    fused.op_type = kLayerNormalization;
    fused.inputs = {c->x, scale};
    if (!c->bias.empty()) fused.inputs.push_back(c->bias);
    fused.outputs = {c->y};
    Attribute axis;
    axis.name = "axis";
    axis.type = OPH_ATTR_INT;
    axis.i = c->axis;
    Attribute eps;
    eps.name = "epsilon";
    eps.type = OPH_ATTR_FLOAT;
    eps.f = c->epsilon;
    fused.attributes = {axis, eps};
    const size_t last = c->nodes.back();
    m.nodes[last] = std::move(fused);
    removed.insert(c->nodes.begin(), c->nodes.end() - 1);
    m.opset_imports[kFusedDomain] = 1;
    ++r.changed;
  }
  passes::erase_nodes(m, removed);
  r.message = std::to_string(r.changed) + " LayerNormalization chains fused";
  if (not_served)
    r.message += "; " + std::to_string(not_served) + " left: no pack serves com.ophost::LayerNormalization for them";
  if (not_matched)
    r.message += "; " + std::to_string(not_matched) + " left: not a LayerNormalization over known trailing dims "
                 "(--log-level debug says why)";
  return r;
}

}  // namespace ophost
