// Small helpers the passes share: who produces and who reads a value, attribute and initializer look-ups,
// fresh names.
#pragma once

#include "model/model.hpp"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ophost::passes {

// Node index of each value's producer, and the nodes that read each value (a node reading a value twice is
// listed twice).
struct Uses {
  // Hash maps: the rewrites rebuild Uses after each change, and Swin-T's 6623 nodes made std::map's string
  // compares and node allocations ~60% of its load time.
  std::unordered_map<std::string, int> producer;
  std::unordered_map<std::string, std::vector<int>> consumers;
  std::unordered_set<std::string> graph_outputs;

  Uses() = default;
  explicit Uses(const Model& m) {
    producer.reserve(m.nodes.size() * 2);
    consumers.reserve(m.nodes.size() * 2);
    for (size_t i = 0; i < m.nodes.size(); ++i) {
      for (const std::string& in : m.nodes[i].inputs)
        if (!in.empty()) consumers[in].push_back(static_cast<int>(i));
      for (const std::string& out : m.nodes[i].outputs)
        if (!out.empty()) producer[out] = static_cast<int>(i);
    }
    for (const ModelValueInfo& o : m.outputs) graph_outputs.insert(o.name);
  }
  size_t readers(const std::string& v) const {
    auto it = consumers.find(v);
    return it == consumers.end() ? 0 : it->second.size();
  }
  bool is_output(const std::string& v) const { return graph_outputs.count(v) != 0; }
  // Nobody reads it and it is not a graph output.
  bool unused(const std::string& v) const { return v.empty() || (readers(v) == 0 && !is_output(v)); }
};

inline const Attribute* find_attr(const Node& n, const std::string& name) {
  for (const Attribute& a : n.attributes)
    if (a.name == name) return &a;
  return nullptr;
}

inline const Tensor* find_initializer(const Model& m, const std::string& name) {
  if (name.empty()) return nullptr;
  for (const auto& [n, t] : m.initializers)
    if (n == name) return &t;
  return nullptr;
}

// The single value of a float32 constant with one element (any shape), or nullopt.
inline std::optional<float> scalar_const(const Model& m, const std::string& name) {
  const Tensor* t = find_initializer(m, name);
  if (!t || t->dtype() != DType::kFloat32 || t->numel() != 1) return std::nullopt;
  return t->data_as<float>()[0];
}

// A standard-domain `op` with two inputs and one (named) output.
inline bool standard_binary(const Node& n, const char* op) {
  return n.op_type == op && n.domain.empty() && n.inputs.size() == 2 && n.outputs.size() == 1 && !n.outputs[0].empty();
}

// The input of a two-input node that is not `x` (empty when both are x or the node is malformed).
inline std::string other_input(const Node& n, const std::string& x) {
  if (n.inputs.size() != 2) return {};
  if (n.inputs[0] == x && n.inputs[1] != x) return n.inputs[1];
  if (n.inputs[1] == x && n.inputs[0] != x) return n.inputs[0];
  return {};
}

inline int64_t opset_of(const Model& m, const std::string& domain) {
  auto it = m.opset_imports.find(domain);
  return it == m.opset_imports.end() ? 0 : it->second;
}

// Every value name the model uses (initializers, graph inputs and outputs, node inputs and outputs).
inline std::set<std::string> used_names(const Model& m) {
  std::set<std::string> used;
  for (const auto& [n, t] : m.initializers) used.insert(n);
  for (const ModelValueInfo& v : m.inputs) used.insert(v.name);
  for (const ModelValueInfo& v : m.outputs) used.insert(v.name);
  for (const Node& n : m.nodes) {
    used.insert(n.inputs.begin(), n.inputs.end());
    used.insert(n.outputs.begin(), n.outputs.end());
  }
  return used;
}

// A name not in `used`, starting from `base` (base, base_1, base_2, ...); added to `used`. For a pass that names
// many new values: collect used_names(m) once.
inline std::string fresh_name(std::set<std::string>& used, const std::string& base) {
  std::string c = base;
  for (int k = 1; used.count(c); ++k) c = base + "_" + std::to_string(k);
  used.insert(c);
  return c;
}

// A value name not used anywhere in the model, starting from `base`.
inline std::string fresh_name(const Model& m, const std::string& base) {
  std::set<std::string> used = used_names(m);
  return fresh_name(used, base);
}

// Every reference to value `from` (node inputs and outputs) renamed to `to`.
inline void rename_value(Model& m, const std::string& from, const std::string& to) {
  for (Node& n : m.nodes) {
    for (std::string& in : n.inputs)
      if (in == from) in = to;
    for (std::string& out : n.outputs)
      if (out == from) out = to;
  }
}

// The name of the node a fusion writes, from the name of the chain's node `from` (PyTorch's module path kept):
// "/enc/layers.0/norm1/ReduceMean", "LayerNormalization" -> "/enc/layers.0/norm1/LayerNormalization".
inline std::string fused_node_name(const std::string& from, const std::string& op) {
  const size_t slash = from.rfind('/');
  return slash == std::string::npos ? from + "_" + op : from.substr(0, slash + 1) + op;
}

// Removes the nodes at the indices in `removed` (and clears it).
inline void erase_nodes(Model& m, std::set<size_t>& removed) {
  if (removed.empty()) return;
  std::vector<Node> kept;
  kept.reserve(m.nodes.size() - removed.size());
  for (size_t i = 0; i < m.nodes.size(); ++i)
    if (!removed.count(i)) kept.push_back(std::move(m.nodes[i]));
  m.nodes = std::move(kept);
  removed.clear();
}

// The version of domain com.ophost the model imports when it is not 1 (the version the passes write ops of):
// a pass that would add com.ophost ops leaves such a model alone. 0 when there is no clash.
inline int64_t fused_domain_clash(const Model& m) {
  auto it = m.opset_imports.find("com.ophost");
  return it != m.opset_imports.end() && it->second != 1 ? it->second : 0;
}

}  // namespace ophost::passes
