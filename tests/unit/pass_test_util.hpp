// Small models for the graph-pass tests (test_passes.cpp, test_fusion_passes.cpp): value infos, nodes,
// constants, and look-ups of what a pass left.
#pragma once

#include "passes/passes.hpp"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace ophost::pass_test {

inline ModelValueInfo vinfo(const std::string& name, std::vector<int64_t> shape = {}, DType dt = DType::kFloat32) {
  ModelValueInfo v;
  v.name = name;
  v.dtype = dt;
  v.has_shape = !shape.empty();
  v.shape = std::move(shape);
  v.dim_params.assign(v.shape.size(), "");
  return v;
}

inline Node node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
          const std::string& name = "") {
  Node n;
  n.op_type = op;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  n.name = name.empty() ? op + "_" + n.outputs[0] : name;
  return n;
}

inline Attribute fattr(const std::string& name, float f) {
  Attribute a;
  a.name = name;
  a.type = OPH_ATTR_FLOAT;
  a.f = f;
  return a;
}

inline Tensor ftensor(std::vector<int64_t> shape, std::vector<float> values) {
  Tensor t(DType::kFloat32, std::move(shape));
  std::copy(values.begin(), values.end(), t.data_as<float>());
  return t;
}

inline Tensor random_tensor(std::vector<int64_t> shape, std::mt19937& rng, float lo = -1, float hi = 1) {
  Tensor t(DType::kFloat32, std::move(shape));
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = d(rng);
  return t;
}

inline Model base_model(int64_t opset = 17) {
  Model m;
  m.path = "test.onnx";
  m.ir_version = 8;
  m.opset_imports[""] = opset;
  return m;
}

inline const Tensor* init(const Model& m, const std::string& name) {
  for (const auto& [n, t] : m.initializers)
    if (n == name) return &t;
  return nullptr;
}

inline std::vector<std::string> op_types(const Model& m) {
  std::vector<std::string> v;
  for (const Node& n : m.nodes) v.push_back(n.op_type);
  return v;
}

inline InferredValue f32_shape(std::vector<int64_t> dims) { return {std::move(dims), DType::kFloat32}; }

inline const Attribute* attr_of(const Node& n, const std::string& name) {
  for (const Attribute& a : n.attributes)
    if (a.name == name) return &a;
  return nullptr;
}

inline Tensor itensor(std::vector<int64_t> values) {
  Tensor t(DType::kInt64, {static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), t.data_as<int64_t>());
  return t;
}

// Hooks whose can_fuse_op answers `served` and, when `asked` is given, records each question: the fused op's
// name, then the op types of the nodes it would replace.
inline PassHooks fusing_hooks(bool served = true, std::vector<std::string>* asked = nullptr) {
  PassHooks h;
  h.can_fuse_op = [served, asked](const Model&, const char* op, const std::vector<const Node*>& nodes) {
    if (asked) {
      asked->push_back(op);
      for (const Node* n : nodes) asked->push_back(n->op_type);
    }
    return served;
  };
  return h;
}

}  // namespace ophost::pass_test
