// constant-folding: a node whose inputs are all constants (initializers, or outputs of nodes folded before it)
// runs once at load through its own kernel (PassHooks::evaluate) and its outputs become initializers.
//  - standard domain only (a custom op may keep state or have side effects), and never the ops whose result is
//    random (Random*, Multinomial, Bernoulli, Dropout) or that hold subgraphs (If, Loop, Scan);
//  - Shape and Size of a value whose shape infer() knows completely at load (PassHooks::infer_shapes) fold
//    without running anything; a symbolic dim (an input declared with dim_param) is never assumed;
//  - outputs larger than the size cap stay nodes (logged);
//  - bounded work: the bytes of new constants may not exceed the model's initializer bytes plus an extra budget
//    (SessionOptions::max_fold_bytes). The total is predicted from the inferred shapes before anything is
//    computed (a model over budget is rejected before any large allocation) and checked again as nodes are
//    evaluated (for outputs whose shapes were not known up front).
// Folding Shape can make more shapes known (Shape -> Gather -> Concat -> Reshape -> Shape ...): a kept node that
// reads a value folded or re-shaped earlier in the sweep has its output shapes inferred again on the spot
// (PassHooks::infer_node), so one sweep follows the whole chain (Swin-T: 2936 nodes folded in one sweep; with a
// whole-graph inference per round it took 28 rounds). The pass repeats, up to 32 rounds, while a round folded
// something and Shape/Size nodes remain (hooks without infer_node).
#include "passes/graph_util.hpp"
#include "passes/passes.hpp"

#include "model/model.hpp"

#include <ophost/error.hpp>

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

bool is_shape_node(const Node& n) {
  return n.domain.empty() && (n.op_type == "Shape" || n.op_type == "Size") && n.inputs.size() == 1 &&
         n.outputs.size() == 1;
}

bool fully_known(const std::vector<int64_t>& dims) {
  return std::all_of(dims.begin(), dims.end(), [](int64_t d) { return d >= 0; });
}

// Bytes of a value of these dims and type; nullopt when unknown or when the count overflows.
std::optional<uint64_t> value_bytes(const InferredValue& v) {
  if (v.dtype == DType::kUndefined || v.dtype == DType::kString || !fully_known(v.dims)) return std::nullopt;
  uint64_t n = dtype_size(v.dtype);
  for (int64_t d : v.dims)
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) return std::nullopt;
  return n;
}

// Bytes of all of a node's outputs from the inferred shapes; nullopt when one is unknown or the sum overflows.
std::optional<uint64_t> outputs_bytes(const Node& n, const std::map<std::string, InferredValue>& info) {
  uint64_t bytes = 0;
  for (const std::string& out : n.outputs) {
    if (out.empty()) continue;
    auto it = info.find(out);
    std::optional<uint64_t> b = it == info.end() ? std::nullopt : value_bytes(it->second);
    if (!b || __builtin_add_overflow(bytes, *b, &bytes)) return std::nullopt;
  }
  return bytes;
}

// A DequantizeLinear of an 8-bit constant, left to qdq-fusion when keep_8bit_dequantize is set (its int8 weights
// stay a quarter of their float size); `input` is its input 0's element type.
bool kept_for_qdq(const Node& n, DType input, bool keep_8bit_dequantize) {
  return keep_8bit_dequantize && n.op_type == "DequantizeLinear" && n.domain.empty() &&
         (input == DType::kInt8 || input == DType::kUint8);
}

// Bounded work: new constants may take the initializers' bytes plus `extra`.
class FoldBudget {
 public:
  FoldBudget(const Model& m, uint64_t extra) : file_(m.path.string()), extra_(extra) {
    for (const auto& [name, t] : m.initializers) initializers_ += t.nbytes();
    limit_ = initializers_ + extra_;
  }
  // Counts `bytes` more for `n`; throws when that crosses the budget. `predicted`: said before computing.
  void add(const Node& n, uint64_t bytes, size_t nodes_before, bool predicted) {
    if (bytes <= limit_ && used_ <= limit_ - bytes) {
      used_ += bytes;
      return;
    }
    throw Error(Code::kResourceExhausted,
                file_ + ": constant folding " + (predicted ? "would create" : "created") + " " +
                    format_bytes(used_) + " in " + std::to_string(nodes_before) + " nodes, and node '" + n.name +
                    "' (" + n.op_type + ") would add " + format_bytes(bytes) + ": over the budget of " +
                    format_bytes(limit_) + " (the model's initializers, " + format_bytes(initializers_) +
                    ", plus " + format_bytes(extra_) +
                    " from SessionOptions::max_fold_bytes / ophost --max-fold-bytes). Raise --max-fold-bytes, or "
                    "load with --disable-pass constant-folding (those nodes then run at every run)");
  }

 private:
  std::string file_;
  uint64_t extra_, initializers_ = 0, limit_ = 0, used_ = 0;
};

// What folding would create, from the inferred shapes alone: every node that would fold (all inputs constant
// or folded before it, or Shape/Size of a known shape) counts its outputs' bytes, unless they are over the
// per-node cap (kept as nodes). Nodes whose output sizes are unknown here are checked when evaluated.
void predict_fold(const Model& m, const std::map<std::string, InferredValue>& info, size_t size_cap,
                  uint64_t extra, bool keep_8bit_dequantize) {
  FoldBudget budget(m, extra);
  std::set<std::string> constant;
  for (const auto& [name, t] : m.initializers) constant.insert(name);
  size_t counted = 0;
  for (const Node& n : m.nodes) {
    if (never_fold(n)) continue;
    if (!n.inputs.empty()) {
      auto in = info.find(n.inputs[0]);
      if (in != info.end() && kept_for_qdq(n, in->second.dtype, keep_8bit_dequantize)) continue;
    }
    bool inputs_constant = std::all_of(n.inputs.begin(), n.inputs.end(),
                                       [&](const std::string& in) { return in.empty() || constant.count(in); });
    bool shape_of_known = false;
    if (is_shape_node(n) && !inputs_constant) {
      auto it = info.find(n.inputs[0]);
      shape_of_known = it != info.end() && fully_known(it->second.dims);
    }
    if (!inputs_constant && !shape_of_known) continue;
    std::optional<uint64_t> bytes = outputs_bytes(n, info);
    if (!bytes || *bytes > size_cap) continue;  // evaluated later, or kept as a node
    for (const std::string& out : n.outputs)
      if (!out.empty()) constant.insert(out);
    if (n.op_type == "Constant") continue;  // its bytes are already in the file
    budget.add(n, *bytes, counted++, /*predicted=*/true);
  }
}

}  // namespace

PassResult fold_constants(Model& m, const PassHooks& hooks, size_t size_cap, uint64_t extra_budget,
                          bool keep_8bit_dequantize) {
  PassResult r{"constant-folding"};
  std::map<std::string, Tensor> known;  // shallow copies of the initializers' buffers
  for (const auto& [name, t] : m.initializers) known.emplace(name, t);
  size_t folded = 0, constants = 0, shapes_folded = 0, too_big = 0, failed = 0;
  int sweeps = 0;
  FoldBudget budget(m, extra_budget);
  std::map<std::string, InferredValue> shapes;
  if (hooks.infer_shapes) {
    shapes = hooks.infer_shapes(m);
    predict_fold(m, shapes, size_cap, extra_budget, keep_8bit_dequantize);
  }
  for (int round = 0; round < 32; ++round) {
    bool shape_nodes = std::any_of(m.nodes.begin(), m.nodes.end(), [&](const Node& n) {
      return n.domain.empty() && (n.op_type == "Shape" || n.op_type == "Size") && n.inputs.size() == 1 &&
             !known.count(n.inputs[0]);
    });
    if (round > 0 && shape_nodes && hooks.infer_shapes) shapes = hooks.infer_shapes(m);
    size_t folded_this_round = 0;
    // Values folded or given a new shape in this sweep: a kept node reading one has its output shapes inferred
    // again on the spot (PassHooks::infer_node), so a Shape further down folds in the same sweep.
    std::set<std::string> changed;
    auto follow_shapes = [&](const Node& n) {
      if (!hooks.infer_node || n.implicit_inputs ||
          std::none_of(n.inputs.begin(), n.inputs.end(), [&](const std::string& in) { return changed.count(in); }))
        return;
      std::vector<const Tensor*> consts(n.inputs.size(), nullptr);
      std::vector<const InferredValue*> ins(n.inputs.size(), nullptr);
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        if (n.inputs[i].empty()) continue;
        if (auto k = known.find(n.inputs[i]); k != known.end()) {
          consts[i] = &k->second;
        } else if (auto sh = shapes.find(n.inputs[i]); sh != shapes.end()) {
          ins[i] = &sh->second;
        } else {
          return;
        }
      }
      std::optional<std::vector<InferredValue>> outs = hooks.infer_node(m, n, consts, ins);
      if (!outs) return;
      for (size_t o = 0; o < n.outputs.size() && o < outs->size(); ++o) {
        const InferredValue& v = (*outs)[o];
        if (n.outputs[o].empty() || v.dtype == DType::kUndefined) continue;
        auto [it, fresh] = shapes.try_emplace(n.outputs[o], v);
        if (!fresh && it->second.dims == v.dims && it->second.dtype == v.dtype) continue;
        it->second = v;
        changed.insert(n.outputs[o]);
      }
    };
    std::vector<Node> kept;
    kept.reserve(m.nodes.size());
    for (Node& n : m.nodes) {
      std::optional<std::vector<Tensor>> outs;
      if (!never_fold(n) && (n.op_type == "Shape" || n.op_type == "Size") && n.inputs.size() == 1 &&
          !known.count(n.inputs[0]) && n.outputs.size() == 1) {
        auto it = shapes.find(n.inputs[0]);
        if (it != shapes.end() && fully_known(it->second.dims)) {
          if (auto t = fold_shape_of(m, n, it->second.dims)) {
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
        // DequantizeLinear of 8-bit weights, left to qdq-fusion.
        if (all_constant && !ins.empty() && ins[0] && kept_for_qdq(n, ins[0]->dtype(), keep_8bit_dequantize))
          all_constant = false;
        // Outputs known to be over the per-node cap are not computed at all.
        if (all_constant) {
          if (std::optional<uint64_t> predicted = outputs_bytes(n, shapes); predicted && *predicted > size_cap) {
            spdlog::info("constant-folding: node '{}' ({}) kept: its outputs would take {} bytes, above the cap of {}",
                         n.name, n.op_type, *predicted, size_cap);
            ++too_big;
            all_constant = false;
          }
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
        follow_shapes(n);
        kept.push_back(std::move(n));
        continue;
      }
      if (!(n.op_type == "Constant" && n.domain.empty())) {
        size_t bytes = 0;
        for (const Tensor& t : *outs) bytes += t.nbytes();
        budget.add(n, bytes, folded + folded_this_round, /*predicted=*/false);
      }
      for (size_t o = 0; o < n.outputs.size(); ++o) {
        if (n.outputs[o].empty()) continue;
        changed.insert(n.outputs[o]);
        known.emplace(n.outputs[o], (*outs)[o]);
        m.initializers.emplace_back(n.outputs[o], std::move((*outs)[o]));
      }
      ++folded_this_round;
      if (n.op_type == "Constant" && n.domain.empty()) ++constants;
    }
    m.nodes = std::move(kept);
    folded += folded_this_round;
    sweeps = round + 1;
    spdlog::debug("constant-folding: round {} folded {} nodes, {} left", round + 1, folded_this_round, m.nodes.size());
    if (!folded_this_round || !shape_nodes) break;
  }
  r.changed = folded;
  r.message = std::to_string(folded - constants) + " nodes folded (" + std::to_string(shapes_folded) +
              " Shape/Size of known shapes) in " + std::to_string(sweeps) + (sweeps == 1 ? " sweep, " : " sweeps, ") +
              std::to_string(constants) + " Constant nodes made initializers";
  if (too_big) r.message += ", " + std::to_string(too_big) + " kept over the size cap";
  if (failed) r.message += ", " + std::to_string(failed) + " could not be evaluated at load";
  return r;
}

}  // namespace ophost
