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
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ophost {

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
};

struct Model {
  std::filesystem::path path;
  int64_t ir_version = 0;
  std::map<std::string, int64_t> opset_imports;  // "" for the standard domain
  std::string producer_name, producer_version;
  std::vector<ModelValueInfo> inputs;  // graph inputs that are not initializers
  std::vector<ModelValueInfo> outputs;
  std::vector<ModelValueInfo> value_infos;
  std::vector<std::pair<std::string, Tensor>> initializers;
  std::vector<Node> nodes;  // topologically sorted (stable: file order kept where it is already valid)
};

// Loads and validates an ONNX model file. Throws ophost::Error naming the file (and the node, where there is
// one) with what to fix.
Model load_model(const std::filesystem::path& path);

// Same, from bytes in memory. `base_dir` is the folder external data is resolved against (empty: external data
// is rejected); `display_name` prefixes every error message.
Model load_model_from_bytes(std::span<const std::byte> bytes, const std::filesystem::path& base_dir,
                            std::string_view display_name);

// "node 'Add_3' (Add)" or "node 'n' (com.example::Op)", for error messages.
std::string describe_node(const Node& node);

}  // namespace ophost
