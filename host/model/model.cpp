// ONNX file -> ophost::Model, with the host's own structural validation.
#include "model/model.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/big_buffer.hpp"
#include "core/unique_fd.hpp"
#include "model/tensor_proto.hpp"

#include <onnx/onnx_pb.h>

#include <google/protobuf/io/coded_stream.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <system_error>
#include <unordered_map>
#include <unordered_set>

namespace ophost {

namespace fs = std::filesystem;

std::string describe_node(const Node& node) {
  std::string op = node.domain.empty() ? node.op_type : node.domain + "::" + node.op_type;
  return "node '" + node.name + "' (" + op + ")";
}

std::string format_bytes(uint64_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 6) {
    v /= 1024.0;
    ++u;
  }
  char buf[64];
  if (u == 0) {
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(bytes));
  } else if (v == static_cast<double>(static_cast<uint64_t>(v))) {
    std::snprintf(buf, sizeof buf, "%llu %s", static_cast<unsigned long long>(v), units[u]);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  }
  return buf;
}

void check_tensor_size(DType dtype, std::span<const int64_t> shape, const ModelLimits& limits,
                       const std::string& what) {
  if (dtype == DType::kUndefined) return;
  uint64_t n = 1;
  bool overflow = false;
  for (int64_t d : shape) {
    if (d < 0) return;  // not fully known yet
    overflow = overflow || __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n);
  }
  const uint64_t esize = dtype == DType::kString ? sizeof(std::string) : dtype_size(dtype);
  uint64_t bytes = 0;
  overflow = overflow || __builtin_mul_overflow(n, esize, &bytes);
  if (overflow || bytes > limits.max_tensor_bytes) {
    std::vector<int64_t> dims(shape.begin(), shape.end());
    throw Error(Code::kResourceExhausted,
                what + " would be " + dtype_name(dtype) + " " + shape_to_string(dims) + ", " +
                    (overflow ? std::string("more bytes than a 64-bit size can count")
                              : format_bytes(bytes) + " (" + std::to_string(bytes) + " bytes)") +
                    ", over the tensor size limit of " + format_bytes(limits.max_tensor_bytes) +
                    " (SessionOptions::max_tensor_bytes, ophost --max-tensor-bytes)");
  }
}

namespace {

// Deepest nesting of GraphProto attributes below `g` (g itself is depth 0); stops counting past `cap`.
int subgraph_depth(const onnx::GraphProto& g, int cap) {
  int deepest = 0;
  for (const auto& n : g.node()) {
    for (const auto& a : n.attribute()) {
      auto visit = [&](const onnx::GraphProto& sub) {
        if (deepest > cap) return;
        deepest = std::max(deepest, 1 + subgraph_depth(sub, cap - 1));
      };
      if (a.has_g()) visit(a.g());
      for (const auto& sub : a.graphs()) visit(sub);
    }
  }
  return deepest;
}

// Builds errors that all start with the model's name.
struct Reporter {
  std::string file;
  [[noreturn]] void fail(Code code, const std::string& what) const { throw Error(code, file + ": " + what); }
};

std::string normalise_domain(const std::string& d) { return d == "ai.onnx" ? std::string() : d; }

ModelValueInfo convert_value_info(const onnx::ValueInfoProto& vi, const char* role, bool require_type,
                                  const Reporter& r) {
  ModelValueInfo out;
  out.name = vi.name();
  if (out.name.empty()) r.fail(Code::kInvalidArgument, std::string(role) + " without a name; give every graph " +
                                                           role + " a name");
  if (!vi.has_type() || vi.type().value_case() == onnx::TypeProto::VALUE_NOT_SET) {
    if (require_type) {
      r.fail(Code::kInvalidArgument,
             std::string(role) + " '" + out.name + "' has no type; declare its element type (and shape)");
    }
    return out;
  }
  if (!vi.type().has_tensor_type()) {
    if (!require_type) return out;  // sequence/map/optional intermediates: no tensor info to record
    r.fail(Code::kUnimplemented, std::string(role) + " '" + out.name +
                                     "' is not a tensor (sequence, map or optional types are not supported yet)");
  }
  const auto& tt = vi.type().tensor_type();
  if (tt.has_elem_type() && tt.elem_type() != 0) {
    auto d = dtype_from_onnx(tt.elem_type());
    if (!d) {
      r.fail(Code::kUnimplemented, std::string(role) + " '" + out.name + "' has element type " +
                                       onnx_dtype_name(tt.elem_type()) + ", which ophost does not support");
    }
    out.dtype = *d;
  } else if (require_type) {
    r.fail(Code::kInvalidArgument, std::string(role) + " '" + out.name + "' has no element type; declare it");
  }
  if (tt.has_shape()) {
    if (static_cast<size_t>(tt.shape().dim_size()) > kMaxModelRank) {
      r.fail(Code::kInvalidArgument, std::string(role) + " '" + out.name + "' has rank " +
                                         std::to_string(tt.shape().dim_size()) + "; ophost supports at most " +
                                         std::to_string(kMaxModelRank) + " dimensions");
    }
    out.has_shape = true;
    for (const auto& dim : tt.shape().dim()) {
      if (dim.has_dim_value()) {
        if (dim.dim_value() < 0) {
          r.fail(Code::kInvalidArgument, std::string(role) + " '" + out.name + "' has a negative dimension (" +
                                             std::to_string(dim.dim_value()) + ")");
        }
        out.shape.push_back(dim.dim_value());
        out.dim_params.emplace_back();
      } else {
        out.shape.push_back(OPH_DIM_UNKNOWN);
        out.dim_params.push_back(dim.has_dim_param() ? dim.dim_param() : std::string());
      }
    }
  }
  return out;
}

int32_t infer_attribute_type(const onnx::AttributeProto& a) {
  // Very old files leave `type` unset; take it from the one field that is filled.
  if (a.has_f()) return OPH_ATTR_FLOAT;
  if (a.has_i()) return OPH_ATTR_INT;
  if (a.has_s()) return OPH_ATTR_STRING;
  if (a.has_t()) return OPH_ATTR_TENSOR;
  if (a.has_g()) return onnx::AttributeProto::GRAPH;
  if (a.floats_size()) return OPH_ATTR_FLOATS;
  if (a.ints_size()) return OPH_ATTR_INTS;
  if (a.strings_size()) return OPH_ATTR_STRINGS;
  if (a.graphs_size()) return onnx::AttributeProto::GRAPHS;
  return OPH_ATTR_UNDEFINED;
}

// Reads a subgraph attribute's GraphProto (If/Loop/Scan bodies) into a Model of its own.
using SubgraphReader = std::function<std::shared_ptr<const Model>(const onnx::GraphProto&, const std::string& where)>;

Attribute convert_attribute(const onnx::AttributeProto& a, int index, const std::string& where,
                            const fs::path& base_dir, const ModelLimits& limits, const Reporter& r,
                            const SubgraphReader& read_subgraph) {
  Attribute out;
  out.name = a.name();
  if (out.name.empty()) {
    r.fail(Code::kInvalidArgument,
           where + ": attribute #" + std::to_string(index) + " has no name; every attribute needs a name");
  }
  const std::string attr = where + ": attribute '" + out.name + "'";
  if (!a.ref_attr_name().empty()) {
    r.fail(Code::kInvalidArgument, attr + " refers to a function attribute ('" + a.ref_attr_name() +
                                       "'), which is only allowed inside a function body");
  }
  int32_t type = a.has_type() ? static_cast<int32_t>(a.type()) : OPH_ATTR_UNDEFINED;
  if (type == OPH_ATTR_UNDEFINED) type = infer_attribute_type(a);
  switch (type) {
    case OPH_ATTR_FLOAT: out.f = a.f(); break;
    case OPH_ATTR_INT: out.i = a.i(); break;
    case OPH_ATTR_STRING: out.s = a.s(); break;
    case OPH_ATTR_TENSOR:
      try {
        out.t = tensor_from_proto(a.t(), base_dir, limits.max_tensor_bytes);
      } catch (const Error& e) {
        r.fail(e.code(), attr + ": " + e.what());
      }
      break;
    case OPH_ATTR_FLOATS: out.floats.assign(a.floats().begin(), a.floats().end()); break;
    case OPH_ATTR_INTS: out.ints.assign(a.ints().begin(), a.ints().end()); break;
    case OPH_ATTR_STRINGS: out.strings.assign(a.strings().begin(), a.strings().end()); break;
    case onnx::AttributeProto::GRAPH:
      if (!a.has_g()) r.fail(Code::kInvalidArgument, attr + " is of type GRAPH but holds no graph");
      out.g = read_subgraph(a.g(), attr);
      break;
    case onnx::AttributeProto::GRAPHS:
      r.fail(Code::kUnimplemented, attr + " is a list of graphs (GRAPHS), which no ONNX op uses; it is not "
                                          "supported");
    case onnx::AttributeProto::SPARSE_TENSOR:
    case onnx::AttributeProto::SPARSE_TENSORS:
      r.fail(Code::kUnimplemented, attr + " is a sparse tensor, which is not supported yet");
    case onnx::AttributeProto::TENSORS:
      r.fail(Code::kUnimplemented, attr + " is a list of tensors (TENSORS), which is not supported yet");
    case OPH_ATTR_UNDEFINED:
      r.fail(Code::kInvalidArgument, attr + " has no type and no value");
    default:
      r.fail(Code::kUnimplemented, attr + " has attribute type " + std::to_string(type) +
                                       ", which is not supported");
  }
  out.type = type;
  return out;
}

// Kahn's algorithm; among ready nodes the one earliest in the file goes first, so an already sorted graph keeps
// its order. Reports a real cycle with the nodes on it.
std::vector<Node> topo_sort(std::vector<Node> nodes, const std::unordered_map<std::string, size_t>& producer,
                            const Reporter& r) {
  const size_t n = nodes.size();
  std::vector<std::vector<size_t>> consumers(n);
  std::vector<size_t> indegree(n, 0);
  for (size_t k = 0; k < n; ++k) {
    std::set<size_t> preds;  // distinct producers of this node's inputs
    for (const auto& in : nodes[k].inputs) {
      if (in.empty()) continue;
      auto it = producer.find(in);
      if (it != producer.end()) preds.insert(it->second);
    }
    indegree[k] = preds.size();
    for (size_t p : preds) consumers[p].push_back(k);
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t k = 0; k < n; ++k)
    if (indegree[k] == 0) ready.push(k);
  std::vector<size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    size_t k = ready.top();
    ready.pop();
    order.push_back(k);
    for (size_t c : consumers[k])
      if (--indegree[c] == 0) ready.push(c);
  }
  if (order.size() != n) {
    // Walk back from an unsorted node through unsorted producers until a node repeats: that is a cycle.
    std::vector<bool> done(n, false);
    for (size_t k : order) done[k] = true;
    size_t start = 0;
    while (done[start]) ++start;
    std::vector<size_t> path;
    std::unordered_map<size_t, size_t> pos;
    size_t cur = start;
    while (!pos.count(cur)) {
      pos[cur] = path.size();
      path.push_back(cur);
      size_t next = cur;
      for (const auto& in : nodes[cur].inputs) {
        if (in.empty()) continue;
        auto it = producer.find(in);
        if (it != producer.end() && !done[it->second]) {
          next = it->second;
          break;
        }
      }
      cur = next;
    }
    // path[pos[cur]..] is the cycle, in consumer -> producer order; print it producer -> consumer.
    std::vector<size_t> cycle(path.begin() + static_cast<std::ptrdiff_t>(pos[cur]), path.end());
    std::reverse(cycle.begin(), cycle.end());
    // Start at the node earliest in the file, so the message is stable.
    std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
    std::string text;
    for (size_t k : cycle) text += describe_node(nodes[k]) + " -> ";
    text += describe_node(nodes[cycle.front()]);
    r.fail(Code::kInvalidArgument, "the graph has a cycle: " + text +
                                       "; ONNX graphs must be acyclic (loops belong in a Loop node)");
  }
  std::vector<Node> sorted;
  sorted.reserve(n);
  for (size_t k : order) sorted.push_back(std::move(nodes[k]));
  return sorted;
}

// The graph's initializers, inputs, nodes (sorted), outputs and value_infos into m, whose limits and opset
// imports are already set. A subgraph (an If/Loop/Scan body) may read values it does not define (they are
// collected in m.outer_refs), may be empty, and may leave its inputs' types open.
// release: the same graph, writable (the main graph of a model this load owns; null for subgraphs): each
// initializer's raw_data is freed once converted, so that the protobuf copy and the tensors do not both hold
// every weight at once (ConvNeXt-T: 110 MB each).
void read_graph(const onnx::GraphProto& g, Model& m, bool subgraph, const fs::path& base_dir, const Reporter& r,
                onnx::GraphProto* release = nullptr) {
  const SubgraphReader read_subgraph = [&](const onnx::GraphProto& sub, const std::string& where) {
    auto body = std::make_shared<Model>();
    body->limits = m.limits;
    body->ir_version = m.ir_version;
    body->opset_imports = m.opset_imports;
    body->producer_name = m.producer_name;
    body->producer_version = m.producer_version;
    try {
      read_graph(sub, *body, true, base_dir, r);
    } catch (const Error& e) {
      // Say which node's body the problem is in (the message already starts with the file's name).
      std::string what = e.what();
      const std::string prefix = r.file + ": ";
      if (what.compare(0, prefix.size(), prefix) == 0) what.erase(0, prefix.size());
      r.fail(e.code(), where + " (subgraph '" + sub.name() + "'): " + what);
    }
    return std::shared_ptr<const Model>(std::move(body));
  };
  // Initializers.
  if (g.sparse_initializer_size() > 0) {
    r.fail(Code::kUnimplemented, "sparse initializer '" + g.sparse_initializer(0).values().name() +
                                     "' is not supported yet; store it as a dense initializer");
  }
  std::unordered_set<std::string> defined;  // graph inputs, initializers, node outputs
  std::unordered_set<std::string> initializer_names;
  m.initializers.reserve(static_cast<size_t>(g.initializer_size()));
  // The main graph's raw_data initializers in one block (InitializerBlock), when there is enough of them for
  // huge pages to matter.
  std::optional<InitializerBlock> block;
  if (release) {
    size_t raw = 0;
    for (const auto& t : g.initializer())
      if (t.data_location() != onnx::TensorProto::EXTERNAL) raw += (t.raw_data().size() + 63) / 64 * 64;
    if (raw >= kHugeBufferBytes) block.emplace(raw);
  }
  for (int k = 0; k < g.initializer_size(); ++k) {
    const auto& t = g.initializer(k);
    if (t.name().empty()) {
      r.fail(Code::kInvalidArgument, "initializer #" + std::to_string(k) + " has no name");
    }
    if (!initializer_names.insert(t.name()).second) {
      r.fail(Code::kInvalidArgument, "initializer '" + t.name() + "' is defined twice");
    }
    try {
      m.initializers.emplace_back(t.name(),
                                  tensor_from_proto(t, base_dir, m.limits.max_tensor_bytes, block ? &*block : nullptr));
    } catch (const Error& e) {
      r.fail(e.code(), std::string("initializer: ") + e.what());
    }
    defined.insert(t.name());
    if (release) std::string().swap(*release->mutable_initializer(k)->mutable_raw_data());
  }

  // Graph inputs (those with an initializer: overridable defaults in the main graph from IR 4, constants else).
  std::unordered_set<std::string> input_names;
  std::vector<ModelValueInfo> overridable;
  for (const auto& vi : g.input()) {
    const bool is_init = initializer_names.count(vi.name()) > 0;
    // A subgraph's inputs may leave their types to the op (Loop's iteration number and condition, for example).
    ModelValueInfo info = convert_value_info(vi, "graph input", !is_init && !subgraph, r);
    if (!input_names.insert(info.name).second) {
      r.fail(Code::kInvalidArgument, "graph input '" + info.name + "' is declared twice");
    }
    defined.insert(info.name);
    if (!is_init) m.inputs.push_back(std::move(info));
    else if (subgraph || m.ir_version < 4) m.initializer_inputs.push_back(info.name);
    else overridable.push_back(std::move(info));
  }
  // Overridable initializers (IR >= 4, main graph) follow the required inputs, their initializers become their
  // defaults. A declared type must agree with the initializer's; a missing one is taken from it.
  for (ModelValueInfo& info : overridable) {
    auto it = std::find_if(m.initializers.begin(), m.initializers.end(),
                           [&](const auto& kv) { return kv.first == info.name; });
    if (it == m.initializers.end()) continue;  // the initializer failed to load (already reported)
    const Tensor& t = it->second;
    if (info.dtype == DType::kUndefined) info.dtype = t.dtype();
    if (info.dtype != t.dtype()) {
      r.fail(Code::kInvalidArgument, "graph input '" + info.name + "' is declared " + dtype_name(info.dtype) +
                                         " but its initializer is " + dtype_name(t.dtype()));
    }
    if (!info.has_shape) {
      info.has_shape = true;
      info.shape.assign(t.shape().begin(), t.shape().end());
      info.dim_params.assign(info.shape.size(), "");
    }
    bool fits = info.shape.size() == t.shape().size();
    for (size_t k = 0; fits && k < info.shape.size(); ++k) fits = info.shape[k] < 0 || info.shape[k] == t.shape()[k];
    if (!fits) {
      r.fail(Code::kInvalidArgument, "graph input '" + info.name + "' is declared " + shape_to_string(info.shape) +
                                         " but its initializer is " + shape_to_string(t.shape()));
    }
    m.input_defaults.push_back(std::move(it->second));
    m.initializers.erase(it);
    m.inputs.push_back(std::move(info));
  }

  // Nodes.
  std::vector<Node> nodes;
  nodes.reserve(static_cast<size_t>(g.node_size()));
  std::unordered_map<std::string, size_t> producer;  // value -> index into `nodes`
  for (int k = 0; k < g.node_size(); ++k) {
    const auto& np = g.node(k);
    Node node;
    node.op_type = np.op_type();
    node.domain = normalise_domain(np.domain());
    node.name = np.name().empty() ? np.op_type() + "_" + std::to_string(k) : np.name();
    if (node.op_type.empty()) {
      r.fail(Code::kInvalidArgument, "node #" + std::to_string(k) + " ('" + node.name + "') has no op_type");
    }
    const std::string where = describe_node(node);
    if (!m.opset_imports.count(node.domain)) {
      r.fail(Code::kInvalidArgument,
             where + " uses domain '" + (node.domain.empty() ? std::string("ai.onnx") : node.domain) +
                 "' but the model has no opset_import for it; add opset_import { domain: \"" + node.domain +
                 "\", version: N }");
    }
    node.inputs.assign(np.input().begin(), np.input().end());
    node.outputs.assign(np.output().begin(), np.output().end());
    std::unordered_set<std::string> attr_names;
    for (int a = 0; a < np.attribute_size(); ++a) {
      node.attributes.push_back(convert_attribute(np.attribute(a), a, where, base_dir, m.limits, r, read_subgraph));
      if (!attr_names.insert(node.attributes.back().name).second) {
        r.fail(Code::kInvalidArgument, where + ": attribute '" + node.attributes.back().name + "' is given twice");
      }
    }
    // What the node's subgraphs read from enclosing scopes becomes the node's implicit inputs.
    for (const Attribute& a : node.attributes) {
      if (!a.g) continue;
      for (const std::string& ref : a.g->outer_refs) {
        if (std::find(node.inputs.begin() + static_cast<std::ptrdiff_t>(node.formal_inputs()), node.inputs.end(),
                      ref) != node.inputs.end())
          continue;
        node.inputs.push_back(ref);
        ++node.implicit_inputs;
      }
    }
    for (const auto& out : node.outputs) {
      if (out.empty()) continue;
      if (initializer_names.count(out)) {
        r.fail(Code::kInvalidArgument, where + ": output '" + out + "' has the same name as an initializer; "
                                                   "every value must be defined once");
      }
      if (input_names.count(out)) {
        r.fail(Code::kInvalidArgument, where + ": output '" + out + "' has the same name as a graph input; "
                                                   "every value must be defined once");
      }
      auto [it, inserted] = producer.emplace(out, nodes.size());
      if (!inserted) {
        const std::string other = it->second == nodes.size() ? std::string("the same node")
                                                             : describe_node(nodes[it->second]);
        r.fail(Code::kInvalidArgument, where + ": output '" + out + "' is already produced by " + other +
                                           "; every value must be defined once");
      }
    }
    nodes.push_back(std::move(node));
  }
  // Every input must be defined somewhere (order is fixed by the sort below); in a subgraph, a name defined
  // nowhere inside is a value of an enclosing graph.
  auto outer_ref = [&](const std::string& name) {
    if (std::find(m.outer_refs.begin(), m.outer_refs.end(), name) == m.outer_refs.end()) m.outer_refs.push_back(name);
  };
  for (const auto& node : nodes) {
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const auto& in = node.inputs[k];
      if (in.empty() || defined.count(in) || producer.count(in)) continue;
      if (subgraph) {
        outer_ref(in);
        continue;
      }
      if (k >= node.formal_inputs()) {
        r.fail(Code::kInvalidArgument, describe_node(node) + ": its subgraph reads '" + in +
                                           "', which is not defined: it is not a graph input, an initializer or "
                                           "the output of any node in this graph or an enclosing one");
      }
      r.fail(Code::kInvalidArgument,
             describe_node(node) + ": input #" + std::to_string(k) + " '" + in +
                 "' is not defined: it is not a graph input, an initializer or the output of any node");
    }
  }
  m.nodes = topo_sort(std::move(nodes), producer, r);

  // Graph outputs.
  std::unordered_set<std::string> output_names;
  for (const auto& vi : g.output()) {
    ModelValueInfo info = convert_value_info(vi, "graph output", false, r);
    if (!output_names.insert(info.name).second) {
      r.fail(Code::kInvalidArgument, "graph output '" + info.name + "' is declared twice");
    }
    if (!producer.count(info.name) && !defined.count(info.name)) {
      if (subgraph) {  // a body may pass an enclosing graph's value straight through
        outer_ref(info.name);
        m.outputs.push_back(std::move(info));
        continue;
      }
      r.fail(Code::kInvalidArgument, "graph output '" + info.name +
                                         "' is not produced by any node (nor is it a graph input or initializer)");
    }
    m.outputs.push_back(std::move(info));
  }
  for (const auto& vi : g.value_info()) {
    if (vi.name().empty()) continue;
    m.value_infos.push_back(convert_value_info(vi, "value_info", false, r));
  }
}

}  // namespace

namespace {

// The protobuf parse of a model's bytes, with the checks that need only the bytes.
onnx::ModelProto parse_model(std::span<const std::byte> bytes, const ModelLimits& limits, const Reporter& r) {
  if (bytes.size() > static_cast<size_t>(INT_MAX)) {
    r.fail(Code::kInvalidArgument, "model is " + std::to_string(bytes.size()) +
                                       " bytes; protobuf files are limited to 2 GiB, so store the weights as "
                                       "external data");
  }
  if (limits.max_subgraph_depth < 0) {
    r.fail(Code::kInvalidArgument, "max_subgraph_depth must be >= 0");
  }
  // Message nesting is bounded while parsing: each subgraph level costs 3 (Graph -> Node -> Attribute ->
  // Graph); 32 more cover the model's own levels and nested TypeProtos (sequence of map of ...).
  const int recursion_limit = 3 * std::min(limits.max_subgraph_depth, 1000) + 32;
  onnx::ModelProto proto;
  {
    google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                              static_cast<int>(bytes.size()));
    in.SetRecursionLimit(recursion_limit);
    if (!proto.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage()) {
      r.fail(Code::kInvalidArgument, "not an ONNX model (protobuf ModelProto parse failed; " +
                                         std::to_string(bytes.size()) + " bytes); messages nested deeper than " +
                                         std::to_string(recursion_limit) + " levels (subgraphs deeper than " +
                                         std::to_string(limits.max_subgraph_depth) + ") are refused as well");
    }
  }
  return proto;
}

// The model in `proto` (parsed by parse_model), validated and converted; the initializers' raw_data is freed
// as it is converted (see read_graph).
Model model_from_proto(onnx::ModelProto& proto, size_t file_bytes, const fs::path& base_dir,
                       const ModelLimits& limits, const Reporter& r) {
  if (!proto.has_ir_version()) {
    r.fail(Code::kInvalidArgument, "not an ONNX model (no ir_version; " + std::to_string(file_bytes) + " bytes)");
  }
  if (!proto.has_graph()) {
    r.fail(Code::kInvalidArgument, "not an ONNX model (no graph; " + std::to_string(file_bytes) + " bytes)");
  }
  // IR 11 is the newest format ONNX has released (ONNX 1.18); a larger number is a model this host cannot know
  // how to read (or a corrupt one), not one to run with guessed semantics.
  constexpr int64_t kNewestIrVersion = 11;
  if (proto.ir_version() > kNewestIrVersion || proto.ir_version() < 1) {
    r.fail(Code::kUnimplemented, "ir_version " + std::to_string(proto.ir_version()) + " is not one ophost reads (1 to " +
                                     std::to_string(kNewestIrVersion) + "); export the model again with a released "
                                     "ONNX version");
  }
  const onnx::GraphProto& g = proto.graph();
  if (int depth = subgraph_depth(g, limits.max_subgraph_depth); depth > limits.max_subgraph_depth) {
    r.fail(Code::kResourceExhausted, "subgraphs are nested more than " + std::to_string(limits.max_subgraph_depth) +
                                         " levels deep (ModelLimits::max_subgraph_depth)");
  }
  if (g.node_size() == 0) {
    r.fail(Code::kInvalidArgument, "the graph is empty (no nodes); export the model again");
  }
  if (g.output_size() == 0) {
    r.fail(Code::kInvalidArgument, "the graph declares no outputs; export the model with its outputs");
  }

  Model m;
  m.limits = limits;
  m.ir_version = proto.ir_version();
  m.producer_name = proto.producer_name();
  m.producer_version = proto.producer_version();
  for (const auto& op : proto.opset_import()) {
    const std::string domain = normalise_domain(op.domain());
    auto [it, inserted] = m.opset_imports.emplace(domain, op.version());
    if (!inserted && it->second != op.version()) {
      r.fail(Code::kInvalidArgument, "opset_import lists domain '" + (domain.empty() ? "ai.onnx" : domain) +
                                         "' twice, with versions " + std::to_string(it->second) + " and " +
                                         std::to_string(op.version()));
    }
  }

  read_graph(g, m, false, base_dir, r, proto.mutable_graph());
  return m;
}

}  // namespace

Model load_model_from_bytes(std::span<const std::byte> bytes, const fs::path& base_dir,
                            std::string_view display_name, const ModelLimits& limits) {
  const Reporter r{std::string(display_name)};
  onnx::ModelProto proto = parse_model(bytes, limits, r);
  return model_from_proto(proto, bytes.size(), base_dir, limits, r);
}

Model load_model(const fs::path& path, const ModelLimits& limits) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (ec || !fs::exists(status)) {
    if (ec && ec != std::errc::no_such_file_or_directory) {
      throw Error(Code::kUnavailable, "cannot access model file " + path.string() + ": " + ec.message());
    }
    throw Error(Code::kNotFound, "model file not found: " + path.string());
  }
  if (fs::is_directory(status)) {
    throw Error(Code::kInvalidArgument, path.string() + ": is a folder; pass the path of the .onnx file");
  }
  // One descriptor, opened without blocking (a FIFO must not hang the load) and checked to be a regular file;
  // the size read is the size fstat reports for that very file.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    throw Error(errno == EACCES ? Code::kPermissionDenied : Code::kUnavailable,
                "cannot read model file " + path.string() + ": " + std::strerror(errno));
  }
  const UniqueFd closer(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    throw Error(Code::kUnavailable, "cannot read model file " + path.string() + ": " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    const char* what = S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                       : S_ISSOCK(st.st_mode)                                     ? "a socket"
                                                                                  : "not a regular file";
    throw Error(Code::kInvalidArgument, path.string() + ": is " + std::string(what) +
                                            ", not a regular file; pass the path of an .onnx file");
  }
  // Protocol buffers cannot hold more than 2 GiB; larger weights belong in external data files.
  constexpr uintmax_t kMaxModelBytes = uintmax_t{2} << 30;
  const uintmax_t size = static_cast<uintmax_t>(st.st_size);
  if (size > kMaxModelBytes) {
    throw Error(Code::kInvalidArgument, path.string() + ": " + std::to_string(size) +
                                            " bytes is over the 2 GiB a protobuf model can hold; store the weights "
                                            "as external data");
  }
  // The file's bytes live only until they are parsed (the protobuf holds its own copy), and are not zero-filled
  // first (read overwrites them): ConvNeXt-T (110 MB) loaded in 1.3 s, a quarter of it in memset and its page
  // faults, and peaked at 351 MiB with the bytes, the protobuf and the tensors all alive.
  const size_t file_bytes = static_cast<size_t>(size);
  std::shared_ptr<std::byte> data = allocate_for_overwrite(file_bytes, "the model file's bytes");
  char* const buf = reinterpret_cast<char*>(data.get());
  size_t got = 0;
  while (got < file_bytes) {
    const ssize_t n = ::read(fd, buf + got, file_bytes - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      throw Error(Code::kDataLoss, "error while reading model file " + path.string() + " (read " +
                                       std::to_string(got) + " of " + std::to_string(size) + " bytes" +
                                       (n < 0 ? std::string(": ") + std::strerror(errno) : std::string()) + ")");
    }
    got += static_cast<size_t>(n);
  }
  const fs::path abs = fs::absolute(path, ec);
  const fs::path base = (ec ? path : abs).parent_path();
  const Reporter r{path.string()};
  onnx::ModelProto proto = parse_model(std::span<const std::byte>(data.get(), file_bytes), limits, r);
  data.reset();
  Model m = model_from_proto(proto, file_bytes, base.empty() ? fs::path(".") : base, limits, r);
  m.path = path;
  return m;
}

}  // namespace ophost
