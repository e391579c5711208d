// The host's model IR: an ONNX ModelProto parsed with Debian's ONNX protobuf classes and checked by the host's
// own structural validation (never ONNX's checker or shape inference, which reject current IR versions and
// opsets). Nodes come out topologically sorted; initializers are decoded into host tensors (external data is
// read from files inside the model's folder only).
#pragma once

#include <ophost/error.hpp>
#include <ophost/tensor.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ophost {

struct Model;

// ONNX AttributeProto.GRAPH: a subgraph attribute (the C ABI has no such type; only host ops read them).
inline constexpr int32_t kAttrGraph = 5;

struct Attribute {
  std::string name;
  int32_t type = OPH_ATTR_UNDEFINED;  // OPH_ATTR_* == ONNX AttributeProto.AttributeType
  float f = 0;
  int64_t i = 0;
  std::string s;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  Tensor t;
  // kAttrGraph: the body of an If/Loop/Scan, read with the rules of a subgraph (see Model::outer_refs).
  std::shared_ptr<const Model> g;
};

struct ModelValueInfo {
  std::string name;
  DType dtype = DType::kUndefined;  // kUndefined when the model gives no element type
  std::vector<int64_t> shape;       // OPH_DIM_UNKNOWN (-1) for symbolic or unknown dims
  bool has_shape = false;           // false: rank unknown (shape is empty)
  std::vector<std::string> dim_params;  // same length as shape; the dim_param or "" for each dim
};

struct Node {
  std::string name;     // synthesized "<op_type>_<index>" (index in the file) when empty
  std::string domain;   // "ai.onnx" normalised to ""
  std::string op_type;
  std::vector<std::string> inputs;   // "" = absent optional input
  std::vector<std::string> outputs;  // "" = absent optional output
  std::vector<Attribute> attributes;
  // Trailing entries of `inputs` that are not ONNX inputs of the node but the values of enclosing scopes its
  // subgraph attributes read (their outer_refs, in order, without repeats). Making them inputs gives them
  // producers, consumers and lifetimes like any other input; passes may rename them (bodies bind them by
  // position, not by name).
  size_t implicit_inputs = 0;
  size_t formal_inputs() const noexcept { return inputs.size() - implicit_inputs; }
};

// Bounds on the work and memory a model may ask for at load (a hostile file must fail fast with a message, not
// exhaust the machine). Runtime::load takes them from SessionOptions.
struct ModelLimits {
  // Largest tensor in bytes: initializers, attribute tensors, and (checked by the session) every value whose
  // shape inference gives a fully known shape.
  uint64_t max_tensor_bytes = uint64_t{4} << 30;
  // Deepest nesting of subgraphs (GraphProto attributes of If/Loop/Scan); the protobuf parser's recursion limit
  // is derived from it, so deeply nested messages are refused while parsing.
  int max_subgraph_depth = 8;
  // Most iterations one Loop node may run in one run (a Loop with neither a trip count nor a condition, or a
  // hostile trip count, fails with a message instead of spinning).
  int64_t max_loop_iterations = int64_t{1} << 20;
};

// Highest tensor rank the host accepts anywhere (the C ABI's fixed shape arrays hold OPH_MAX_NDIM dims).
inline constexpr size_t kMaxModelRank = OPH_MAX_NDIM;

// Throws Error(kResourceExhausted) when a value of `dtype` and fully known `shape` would exceed
// limits.max_tensor_bytes (or when its size overflows); `what` names the value ("node 'n' (Op): output 'y'").
// Unknown dims (< 0) are skipped: the value is checked again when its shape is known.
void check_tensor_size(DType dtype, std::span<const int64_t> shape, const ModelLimits& limits,
                       const std::string& what);

// "4 GiB", "1.5 MiB", "12 bytes".
std::string format_bytes(uint64_t bytes);

struct Model {
  std::filesystem::path path;
  ModelLimits limits;  // the limits it was loaded with (the session applies them to inferred shapes)
  int64_t ir_version = 0;
  std::map<std::string, int64_t> opset_imports;  // "" for the standard domain
  std::string producer_name, producer_version;
  // Graph inputs a caller may feed. The last input_defaults.size() of them are overridable initializers (ONNX
  // IR >= 4, main graph: an initializer also listed as a graph input is a default the caller may replace), with
  // those defaults, in order; the others must be given. As graph inputs they are not constants, so no pass
  // folds or fuses them, as in ONNX Runtime.
  std::vector<ModelValueInfo> inputs;
  std::vector<Tensor> input_defaults;
  size_t required_inputs() const noexcept { return inputs.size() - input_defaults.size(); }
  // Graph inputs that also have an initializer but are constants (IR < 4, where every initializer had to be
  // listed as an input, and subgraphs): kept to say so when a caller feeds one.
  std::vector<std::string> initializer_inputs;
  std::vector<ModelValueInfo> outputs;
  std::vector<ModelValueInfo> value_infos;
  std::vector<std::pair<std::string, Tensor>> initializers;
  std::vector<Node> nodes;  // topologically sorted (stable: file order kept where it is already valid)
  // Values the nchwc-layout pass keeps channel-blocked (nChw8c/16c byte order under their NCHW shape).
  std::set<std::string> blocked_values;
  // Subgraphs only: names the graph (or a graph nested in it) reads that it does not define, in order of first
  // use. They are values of an enclosing graph; the node that owns this subgraph lists them as its implicit
  // inputs.
  std::vector<std::string> outer_refs;
};

// Loads and validates an ONNX model file. Throws ophost::Error naming the file (and the node, where there is
// one) with what to fix.
Model load_model(const std::filesystem::path& path, const ModelLimits& limits = {});

// Same, from bytes in memory. `base_dir` is the folder external data is resolved against (empty: external data
// is rejected); `display_name` prefixes every error message.
Model load_model_from_bytes(std::span<const std::byte> bytes, const std::filesystem::path& base_dir,
                            std::string_view display_name, const ModelLimits& limits = {});

// "node 'Add_3' (Add)" or "node 'n' (com.example::Op)", for error messages.
std::string describe_node(const Node& node);

}  // namespace ophost
