// gelu-fusion: GELU as exporters before opset 20 write it out (PyTorch's nn.GELU at opset < 20, Hugging Face's
// hand-written gelu/gelu_new; ONNX Runtime's GeluFusion and FastGeluFusion recognise the same chains):
//
//   exact (erf):  d = Div(x, sqrt(2)) or Mul(x, 1/sqrt(2))            e = Erf(d)            a = Add(e, 1)
//   tanh:         p = Pow(x, 3) or Mul(x, Mul(x, x))     q = Mul(p, 0.044715)     s = Add(x, q)
//                 u = Mul(s, sqrt(2/pi))                 e = Tanh(u)              a = Add(e, 1)
//   then y = x * a * 0.5 in the orders exporters use:
//                 y = Mul(Mul(x, a), 0.5)      (PyTorch)         y = Mul(Mul(x, 0.5), a)      (x * 0.5 * (1 + erf))
//                 y = Mul(x, Mul(a, 0.5))
//   (Mul/Add operands in either order; Div(v, 2) wherever Mul(v, 0.5) stands)
//
// becomes one com.ophost::Gelu(x) -> y (ONNX Gelu-20's attribute approximate: "none", or "tanh" for the second
// form). Conditions, each checked (anything else is left alone):
//   - every node is of the standard domain with one output; the Div and the Pow take x as their first input;
//   - each constant (sqrt(2), 1/sqrt(2), 1, 0.5, 2, 3, 0.044715, sqrt(2/pi)) is a float32 initializer (Constant
//     nodes are folded into initializers before this pass) with one element, equal to the value within a relative
//     1e-6 (8 float32 ULPs: the float32 roundings of the irrational ones and of exporters' decimal literals), of
//     rank 0 or of a rank no larger than x's (PassHooks::infer_shapes; no broadcast that would grow y's rank);
//     a float32 constant in an arithmetic node makes x float32 too;
//   - the tanh form reads the same x in the cube (Pow, or both Muls), the Add and the product with a;
//   - every intermediate (d or p, x*x, q, s, u; e, a, and x*a, x*0.5 or a*0.5) is read only by the next node of
//     the chain and is no graph output;
//   - PassHooks::can_fuse_op: a pack serves com.ophost::Gelu with OPH_OP_FLAG_ALLOW_FUSION on the device the nodes
//     resolve to, and the model does not import com.ophost at another version.
// The fused node takes the place of the chain's last node (x is defined before the chain's first).
#include "passes/graph_util.hpp"
#include "passes/passes.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace ophost::passes {
namespace {

struct GeluChain {
  std::vector<size_t> nodes;  // indices: the head (up to Erf/Tanh), Add 1, then the x * a * 0.5 products
  std::string x, y;
  bool tanh = false;
};

class GeluMatcher {
 public:
  GeluMatcher(const Model& m, const Uses& uses, std::function<int64_t(const std::string&)> rank_of)
      : m_(m), uses_(uses), rank_of_(std::move(rank_of)) {}

  // The chain whose Erf or Tanh is node `i`, or nullopt.
  std::optional<GeluChain> match(size_t i) const {
    const Node& n = m_.nodes[i];
    if ((n.op_type != "Erf" && n.op_type != "Tanh") || !n.domain.empty() || n.inputs.size() != 1 ||
        n.outputs.size() != 1 || n.outputs[0].empty() || n.implicit_inputs)
      return std::nullopt;
    GeluChain c;
    c.tanh = n.op_type == "Tanh";
    if (!(c.tanh ? tanh_head(n.inputs[0], c) : erf_head(n.inputs[0], c))) return std::nullopt;
    c.nodes.push_back(i);
    if (!tail(n.outputs[0], c)) return std::nullopt;
    return c;
  }

 private:
  size_t index(const Node& n) const { return static_cast<size_t>(&n - m_.nodes.data()); }

  // The standard single-output node that produces `v` when it is of type `op`, `v` has one reader and is no
  // graph output.
  const Node* only_reader_of_producer(const std::string& v, const char* op) const {
    if (uses_.readers(v) != 1 || uses_.is_output(v)) return nullptr;
    auto it = uses_.producer.find(v);
    if (it == uses_.producer.end()) return nullptr;
    const Node& n = m_.nodes[static_cast<size_t>(it->second)];
    return standard_binary(n, op) && !n.implicit_inputs ? &n : nullptr;
  }
  // The only reader of `v` (no graph output) when it is a standard two-input `op`.
  const Node* next(const std::string& v, const char* op) const {
    if (uses_.readers(v) != 1 || uses_.is_output(v)) return nullptr;
    const Node& n = m_.nodes[static_cast<size_t>(uses_.consumers.at(v)[0])];
    return standard_binary(n, op) && !n.implicit_inputs ? &n : nullptr;
  }

  // Whether `v` is a one-element float32 constant equal to `want` (relative 1e-6), of rank 0 or no more than x's.
  bool is_const(const std::string& v, double want, const std::string& x) const {
    const Tensor* t = find_initializer(m_, v);
    std::optional<float> f = scalar_const(m_, v);
    if (!t || !f || std::fabs(static_cast<double>(*f) - want) > 1e-6 * std::fabs(want)) return false;
    return t->shape().empty() || static_cast<int64_t>(t->shape().size()) <= rank_of_(x);
  }
  // The operand of binary `n` other than a constant equal to `want` (either order); empty when there is none.
  std::string operand_beside(const Node& n, double want) const {
    for (size_t k = 0; k < 2; ++k)
      if (n.inputs[1 - k] != n.inputs[k] && is_const(n.inputs[1 - k], want, n.inputs[k])) return n.inputs[k];
    return {};
  }
  // Whether `n` computes v * 0.5: Mul(v, 0.5) in either order, or Div(v, 2).
  bool halves(const Node& n, const std::string& v, const std::string& x) const {
    if (n.op_type == "Mul") return other_input(n, v).size() && is_const(other_input(n, v), 0.5, x);
    return n.op_type == "Div" && n.inputs[0] == v && n.inputs[1] != v && is_const(n.inputs[1], 2.0, x);
  }
  // The node that halves `v` when it is v's only reader (no graph output).
  const Node* next_half(const std::string& v, const std::string& x) const {
    for (const char* op : {"Mul", "Div"})
      if (const Node* n = next(v, op); n && halves(*n, v, x)) return n;
    return nullptr;
  }

  // d = Div(x, sqrt(2)) or Mul(x, 1/sqrt(2)).
  bool erf_head(const std::string& d, GeluChain& c) const {
    if (const Node* div = only_reader_of_producer(d, "Div")) {
      if (div->inputs[0] == div->inputs[1] || !is_const(div->inputs[1], std::sqrt(2.0), div->inputs[0])) return false;
      c.x = div->inputs[0];
      c.nodes.push_back(index(*div));
      return true;
    }
    const Node* mul = only_reader_of_producer(d, "Mul");
    if (!mul) return false;
    c.x = operand_beside(*mul, std::sqrt(0.5));
    c.nodes.push_back(index(*mul));
    return !c.x.empty();
  }

  // u = Mul(Add(x, Mul(x^3, 0.044715)), sqrt(2/pi)), x^3 = Pow(x, 3) or Mul(x, Mul(x, x)).
  bool tanh_head(const std::string& u, GeluChain& c) const {
    const Node* scale = only_reader_of_producer(u, "Mul");
    const std::string s = scale ? operand_beside(*scale, std::sqrt(2.0 / M_PI)) : std::string();
    const Node* add = s.empty() ? nullptr : only_reader_of_producer(s, "Add");
    if (!add) return false;
    for (size_t k = 0; k < 2; ++k) {
      const std::string& x = add->inputs[1 - k];
      const Node* coef = only_reader_of_producer(add->inputs[k], "Mul");
      const std::string p = coef ? operand_beside(*coef, 0.044715) : std::string();
      if (p.empty() || x == add->inputs[k]) continue;
      std::vector<size_t> cube;
      if (const Node* pow = only_reader_of_producer(p, "Pow")) {
        if (pow->inputs[0] != x || !is_const(pow->inputs[1], 3.0, x)) continue;
        cube = {index(*pow)};
      } else if (const Node* mul = only_reader_of_producer(p, "Mul")) {
        const std::string xx = other_input(*mul, x);
        const Node* sq = xx.empty() ? nullptr : only_reader_of_producer(xx, "Mul");
        if (!sq || sq->inputs[0] != x || sq->inputs[1] != x) continue;
        cube = {index(*sq), index(*mul)};
      } else {
        continue;
      }
      c.x = x;
      c.nodes = cube;
      c.nodes.insert(c.nodes.end(), {index(*coef), index(*add), index(*scale)});
      return true;
    }
    return false;
  }

  // a = Add(e, 1), then y = x * a * 0.5 in one of the three orders.
  bool tail(const std::string& e, GeluChain& c) const {
    const Node* add = next(e, "Add");
    if (!add || !is_const(other_input(*add, e), 1.0, c.x)) return false;
    c.nodes.push_back(index(*add));
    const std::string& a = add->outputs[0];
    if (const Node* mul = next(a, "Mul")) {
      const std::string other = other_input(*mul, a);
      if (other == c.x) {  // Mul(Mul(x, a), 0.5)
        const Node* half = next_half(mul->outputs[0], c.x);
        if (!half) return false;
        c.nodes.insert(c.nodes.end(), {index(*mul), index(*half)});
        c.y = half->outputs[0];
        return true;
      }
      if (halves(*mul, a, c.x)) {  // Mul(x, Mul(a, 0.5))
        const Node* last = next(mul->outputs[0], "Mul");
        if (!last || other_input(*last, mul->outputs[0]) != c.x) return false;
        c.nodes.insert(c.nodes.end(), {index(*mul), index(*last)});
        c.y = last->outputs[0];
        return true;
      }
      // Mul(Mul(x, 0.5), a)
      auto h = uses_.producer.find(other);
      if (other.empty() || h == uses_.producer.end() || uses_.readers(other) != 1 || uses_.is_output(other))
        return false;
      const Node& half = m_.nodes[static_cast<size_t>(h->second)];
      if (!half.domain.empty() || half.outputs.size() != 1 || half.inputs.size() != 2 || half.implicit_inputs ||
          !halves(half, c.x, c.x))
        return false;
      c.nodes.insert(c.nodes.end(), {index(half), index(*mul)});
      c.y = mul->outputs[0];
      return true;
    }
    if (const Node* half = next_half(a, c.x)) {  // Mul(x, Div(a, 2))
      const Node* last = next(half->outputs[0], "Mul");
      if (!last || other_input(*last, half->outputs[0]) != c.x) return false;
      c.nodes.insert(c.nodes.end(), {index(*half), index(*last)});
      c.y = last->outputs[0];
      return true;
    }
    return false;
  }

  const Model& m_;
  const Uses& uses_;
  std::function<int64_t(const std::string&)> rank_of_;
};

}  // namespace
}  // namespace ophost::passes

namespace ophost {

PassResult fuse_gelu(Model& m, const PassHooks& hooks) {
  PassResult r{"gelu-fusion"};
  if (int64_t v = passes::fused_domain_clash(m)) {
    r.message = "0 Gelu chains fused (the model imports domain com.ophost at version " + std::to_string(v) + ")";
    return r;
  }
  if (!hooks.can_fuse_op || std::none_of(m.nodes.begin(), m.nodes.end(), [](const Node& n) {
        return n.domain.empty() && (n.op_type == "Erf" || n.op_type == "Tanh");
      })) {
    r.message = "0 Gelu chains fused";
    return r;
  }
  // x's rank, asked only for a constant of rank > 0 (PyTorch's are scalars): -1 when unknown.
  std::optional<std::map<std::string, InferredValue>> shapes;
  auto rank_of = [&](const std::string& x) -> int64_t {
    if (!shapes) shapes = hooks.infer_shapes ? hooks.infer_shapes(m) : std::map<std::string, InferredValue>{};
    auto it = shapes->find(x);
    return it == shapes->end() ? -1 : static_cast<int64_t>(it->second.dims.size());
  };
  std::set<size_t> removed;
  size_t not_served = 0, tanh = 0;
  // One index for the whole pass: a rewrite replaces its chain's last node at the same index (same output) and
  // marks the others removed; no other chain's conditions read those values (a chain sharing a node with a fused
  // one is skipped by the removed check below), so the index never needs rebuilding.
  const passes::Uses uses(m);
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    if (removed.count(i)) continue;
    std::optional<passes::GeluChain> c = passes::GeluMatcher(m, uses, rank_of).match(i);
    if (!c || std::any_of(c->nodes.begin(), c->nodes.end(), [&](size_t k) { return removed.count(k) != 0; })) continue;
    std::vector<const Node*> nodes;
    for (size_t k : c->nodes) nodes.push_back(&m.nodes[k]);
    if (!hooks.can_fuse_op(m, kGelu, nodes)) {
      ++not_served;
      continue;
    }
    Node fused;
    fused.name = passes::fused_node_name(m.nodes[i].name, kGelu);
    fused.domain = kFusedDomain;
    fused.op_type = kGelu;
    fused.inputs = {c->x};
    fused.outputs = {c->y};
    Attribute approximate;
    approximate.name = "approximate";
    approximate.type = OPH_ATTR_STRING;
    approximate.s = c->tanh ? "tanh" : "none";
    fused.attributes = {approximate};
    const size_t last = static_cast<size_t>(uses.producer.at(c->y));  // after every other node of the chain
    m.nodes[last] = std::move(fused);
    for (size_t k : c->nodes)
      if (k != last) removed.insert(k);
    m.opset_imports[kFusedDomain] = 1;
    ++r.changed;
    tanh += c->tanh;
  }
  passes::erase_nodes(m, removed);
  r.message = std::to_string(r.changed) + " Gelu chains fused";
  if (tanh) r.message += " (" + std::to_string(tanh) + " of them the tanh approximation)";
  if (not_served) r.message += "; " + std::to_string(not_served) + " left: no pack serves com.ophost::Gelu for them";
  return r;
}

}  // namespace ophost
