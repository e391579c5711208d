// matmul-bias-fusion: a MatMul by constant weights followed by Add of a constant bias, as PyTorch exports
// nn.Linear on inputs of rank > 2 (ONNX Runtime's MatMulAddFusion does the same rewrite):
//
//   h = MatMul(A, W)      y = Add(h, bias)  (or Add(bias, h))
//
// becomes y = com.ophost::FusedMatMul(A, W, bias), whose kernel adds the bias as it writes each row instead of
// a second pass over y. Conditions, each checked (anything else is left alone):
//   - MatMul is the standard op with two inputs and one output; W is a float32 initializer of rank 2 [K, N];
//   - h is read only by the Add and is no graph output; the Add is the standard two-input op;
//   - bias is a float32 initializer of rank 1 with N values (rank 1 keeps y's shape h's: a [1, N] bias would
//     add a dim to a 1-D h);
//   - PassHooks::can_fuse_op: a pack serves com.ophost::FusedMatMul with OPH_OP_FLAG_ALLOW_FUSION on the device
//     the two nodes resolve to, and the model does not import com.ophost at another version.
// The fused node takes the Add's place (A, W and bias are defined before it) and the MatMul's name.
#include "passes/graph_util.hpp"
#include "passes/passes.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

namespace ophost {

PassResult fuse_matmul_bias(Model& m, const PassHooks& hooks) {
  PassResult r{"matmul-bias-fusion"};
  if (int64_t v = passes::fused_domain_clash(m)) {
    r.message = "0 MatMul + Add pairs fused (the model imports domain com.ophost at version " + std::to_string(v) + ")";
    return r;
  }
  if (!hooks.can_fuse_op ||
      std::none_of(m.nodes.begin(), m.nodes.end(), [](const Node& n) { return n.op_type == "MatMul"; })) {
    r.message = "0 MatMul + Add pairs fused";
    return r;
  }
  std::unordered_map<std::string, const Tensor*> constants;
  for (const auto& [name, t] : m.initializers) constants.emplace(name, &t);
  auto constant = [&](const std::string& v) -> const Tensor* {
    auto it = constants.find(v);
    return it == constants.end() || it->second->dtype() != DType::kFloat32 ? nullptr : it->second;
  };
  // One index for the whole pass: a rewrite changes only its own pair's values (h disappears, the Add's output
  // gets a new producer), which no other pair's conditions read.
  const passes::Uses uses(m);
  std::set<size_t> removed;
  size_t not_served = 0;
  for (size_t mi = 0; mi < m.nodes.size(); ++mi) {
    const Node& mm = m.nodes[mi];
    if (!passes::standard_binary(mm, "MatMul") || mm.implicit_inputs) continue;
    const Tensor* w = constant(mm.inputs[1]);
    if (!w || w->shape().size() != 2 || w->shape()[1] <= 0) continue;
    const std::string& h = mm.outputs[0];
    if (uses.readers(h) != 1 || uses.is_output(h)) continue;
    const size_t ai = static_cast<size_t>(uses.consumers.at(h)[0]);
    const Node& add = m.nodes[ai];
    if (!passes::standard_binary(add, "Add") || add.implicit_inputs) continue;
    const std::string bias = passes::other_input(add, h);
    const Tensor* b = constant(bias);
    if (!b || b->shape().size() != 1 || b->shape()[0] != w->shape()[1]) {
      spdlog::debug("matmul-bias-fusion: '{}' + '{}' not fused: the Add's other operand is not a float32 constant "
                    "of shape [{}]", mm.name, add.name, w->shape()[1]);
      continue;
    }
    if (!hooks.can_fuse_op(m, kFusedMatMul, {&mm, &add})) {
      ++not_served;
      continue;
    }
    Node fused;
    fused.name = mm.name;
    fused.domain = kFusedDomain;
    fused.op_type = kFusedMatMul;
    fused.inputs = {mm.inputs[0], mm.inputs[1], bias};
    fused.outputs = {add.outputs[0]};
    m.nodes[ai] = std::move(fused);
    removed.insert(mi);
    m.opset_imports[kFusedDomain] = 1;
    ++r.changed;
  }
  passes::erase_nodes(m, removed);
  r.message = std::to_string(r.changed) + " MatMul + Add pairs fused";
  if (not_served)
    r.message += "; " + std::to_string(not_served) + " left: no pack serves com.ophost::FusedMatMul for them";
  return r;
}

}  // namespace ophost
