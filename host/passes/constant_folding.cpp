// constant-folding: a node whose inputs are all constants (initializers, or outputs of nodes folded before it)
// runs once at load through its own kernel (PassHooks::evaluate) and its outputs become initializers.
//  - standard domain only (a custom op may keep state or have side effects), and never the ops whose result is
//    random (Random*, Multinomial, Bernoulli, Dropout) or that hold subgraphs (If, Loop, Scan);
//  - Shape and Size of a value whose shape infer() knows completely at load (PassHooks::infer_shapes) fold
//    without running anything; a symbolic dim (an input declared with dim_param) is never assumed;
//  - outputs larger than the size cap stay nodes (logged).
// Folding Shape can make more shapes known (Shape -> Gather -> Concat -> Reshape): the pass repeats, up to a few
// rounds, while a round folded something and Shape/Size nodes remain.
#include "passes/graph_util.hpp"
#include "passes/passes.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

namespace ophost {

namespace {

bool never_fold(const Node& n) {
  static const std::set<std::string> kOps = {"RandomNormal", "RandomUniform", "RandomNormalLike",
                                             "RandomUniformLike", "Multinomial", "Bernoulli", "Dropout",
                                             "If", "Loop", "Scan"};
  return !n.domain.empty() || kOps.count(n.op_type) != 0;
}

// Shape / Size of a fully known shape (Shape's start/end from opset 15 on).
std::optional<Tensor> fold_shape_of(const Model& m, const Node& n, const std::vector<int64_t>& dims) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (n.op_type == "Size") {
    Tensor t(DType::kInt64, {});
    int64_t p = 1;
    for (int64_t d : dims) p *= d;
    *t.data_as<int64_t>() = p;
    return t;
  }
  int64_t start = 0, end = rank;
  if (passes::opset_of(m, "") >= 15) {
    if (const Attribute* a = passes::find_attr(n, "start")) start = a->i;
    if (const Attribute* a = passes::find_attr(n, "end")) end = a->i;
  } else if (!n.attributes.empty()) {
    return std::nullopt;  // the kernel will explain
  }
  auto clamp = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  start = clamp(start);
  end = clamp(end);
  const int64_t len = std::max<int64_t>(0, end - start);
  Tensor t(DType::kInt64, {len});
  for (int64_t k = 0; k < len; ++k) t.data_as<int64_t>()[k] = dims[static_cast<size_t>(start + k)];
  return t;
}

}  // namespace

PassResult fold_constants(Model& m, const PassHooks& hooks, size_t size_cap) {
  PassResult r{"constant-folding"};
  std::map<std::string, Tensor> known;  // shallow copies of the initializers' buffers
  for (const auto& [name, t] : m.initializers) known.emplace(name, t);
  size_t folded = 0, constants = 0, shapes_folded = 0, too_big = 0, failed = 0;
  for (int round = 0; round < 4; ++round) {
    bool shape_nodes = std::any_of(m.nodes.begin(), m.nodes.end(), [&](const Node& n) {
      return n.domain.empty() && (n.op_type == "Shape" || n.op_type == "Size") && n.inputs.size() == 1 &&
             !known.count(n.inputs[0]);
    });
    std::map<std::string, std::vector<int64_t>> shapes;
    if (shape_nodes && hooks.infer_shapes) shapes = hooks.infer_shapes(m);
    size_t folded_this_round = 0;
    std::vector<Node> kept;
    kept.reserve(m.nodes.size());
    for (Node& n : m.nodes) {
      std::optional<std::vector<Tensor>> outs;
      if (!never_fold(n) && (n.op_type == "Shape" || n.op_type == "Size") && n.inputs.size() == 1 &&
          !known.count(n.inputs[0]) && n.outputs.size() == 1) {
        auto it = shapes.find(n.inputs[0]);
        if (it != shapes.end() &&
            std::all_of(it->second.begin(), it->second.end(), [](int64_t d) { return d >= 0; })) {
          if (auto t = fold_shape_of(m, n, it->second)) {
            outs.emplace();
            outs->push_back(std::move(*t));
            ++shapes_folded;
          }
        }
      } else if (!never_fold(n) && hooks.evaluate) {
        bool all_constant = true;
        std::vector<const Tensor*> ins;
        for (const std::string& in : n.inputs) {
          if (in.empty()) {
            ins.push_back(nullptr);
            continue;
          }
          auto it = known.find(in);
          if (it == known.end()) {
            all_constant = false;
            break;
          }
          ins.push_back(&it->second);
        }
        if (all_constant) {
          outs = hooks.evaluate(m, n, ins);
          if (!outs) ++failed;
        }
      }
      if (outs) {
        size_t bytes = 0;
        for (const Tensor& t : *outs) bytes += t.nbytes();
        if (bytes > size_cap) {
          spdlog::info("constant-folding: node '{}' ({}) kept: its outputs take {} bytes, above the cap of {}",
                       n.name, n.op_type, bytes, size_cap);
          ++too_big;
          outs.reset();
        } else if (outs->size() != n.outputs.size()) {
          outs.reset();
          ++failed;
        }
      }
      if (!outs) {
        kept.push_back(std::move(n));
        continue;
      }
      for (size_t o = 0; o < n.outputs.size(); ++o) {
        if (n.outputs[o].empty()) continue;
        known.emplace(n.outputs[o], (*outs)[o]);
        m.initializers.emplace_back(n.outputs[o], std::move((*outs)[o]));
      }
      ++folded_this_round;
      if (n.op_type == "Constant" && n.domain.empty()) ++constants;
    }
    m.nodes = std::move(kept);
    folded += folded_this_round;
    if (!folded_this_round || !shape_nodes) break;
  }
  r.changed = folded;
  r.message = std::to_string(folded - constants) + " nodes folded (" + std::to_string(shapes_folded) +
              " Shape/Size of known shapes), " + std::to_string(constants) + " Constant nodes made initializers";
  if (too_big) r.message += ", " + std::to_string(too_big) + " kept over the size cap";
  if (failed) r.message += ", " + std::to_string(failed) + " could not be evaluated at load";
  return r;
}

}  // namespace ophost
