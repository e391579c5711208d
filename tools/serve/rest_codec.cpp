#include "rest_codec.hpp"

#include "request_error.hpp"
#include "tensor_values.hpp"
#include "v2_types.hpp"

#include <nlohmann/json.hpp>

#include <charconv>

namespace ophost::serve {

namespace {

using nlohmann::json;

constexpr int kMaxNesting = 64;

const json* member(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

// Counts the leaves of a (nested) "data" array, checking each is a number or a bool.
void count_leaves(const json& node, int depth, size_t& count, const std::string& field) {
  if (node.is_array()) {
    if (depth > kMaxNesting) throw RequestError(400, field + ": nested deeper than " + std::to_string(kMaxNesting));
    for (const json& e : node) count_leaves(e, depth + 1, count, field);
    return;
  }
  if (!node.is_number() && !node.is_boolean()) {
    throw RequestError(400, field + "[" + std::to_string(count) + "]: " + std::string(node.type_name()) +
                                " is not a number or a bool (BYTES tensors are not served)");
  }
  ++count;
}

void store_leaves(const json& node, Tensor& t, size_t& index, const std::string& field) {
  if (node.is_array()) {
    for (const json& e : node) store_leaves(e, t, index, field);
    return;
  }
  Scalar v;
  if (node.is_boolean()) v = node.get<bool>();
  else if (node.is_number_unsigned()) v = node.get<uint64_t>();
  else if (node.is_number_integer()) v = node.get<int64_t>();
  else v = node.get<double>();
  store_element(t, index++, v, field);
}

bool bool_parameter(const json& obj, const char* key, const std::string& field) {
  const json* params = member(obj, "parameters");
  if (!params) return false;
  if (!params->is_object()) throw RequestError(400, field + ".parameters must be an object");
  const json* v = member(*params, key);
  if (!v) return false;
  if (!v->is_boolean()) throw RequestError(400, field + ".parameters." + key + " must be true or false");
  return v->get<bool>();
}

InputData parse_input(const json& in, const std::string& field, std::string_view& binary, uint64_t max_bytes) {
  if (!in.is_object()) throw RequestError(400, field + " must be an object with name, shape, datatype and data");
  InputData d;
  d.field = field;
  const json* name = member(in, "name");
  if (!name || !name->is_string()) throw RequestError(400, field + ".name is missing or not a string");
  d.name = name->get<std::string>();
  const json* dt = member(in, "datatype");
  if (!dt || !dt->is_string()) throw RequestError(400, field + " '" + d.name + "': datatype is missing or not a string");
  d.dtype = dtype_from_v2(dt->get<std::string>());
  if (d.dtype == DType::kUndefined || d.dtype == DType::kString) {
    throw RequestError(400, field + " '" + d.name + "': datatype '" + dt->get<std::string>() +
                                "' is not served (BOOL, UINT8..UINT64, INT8..INT64, FP16, FP32, FP64, BF16)");
  }
  const json* shape = member(in, "shape");
  if (!shape || !shape->is_array()) throw RequestError(400, field + " '" + d.name + "': shape is missing or not a list");
  for (size_t i = 0; i < shape->size(); ++i) {
    const json& s = (*shape)[i];
    if (!s.is_number_integer() || (s.is_number_unsigned() && s.get<uint64_t>() > uint64_t{INT64_MAX})) {
      throw RequestError(400, field + ".shape[" + std::to_string(i) + "] is not an integer of 64 bits");
    }
    d.shape.push_back(s.get<int64_t>());
  }
  int64_t numel = checked_numel(d.shape, d.dtype, max_bytes, field + ".shape");
  const json* params = member(in, "parameters");
  const json* size = params && params->is_object() ? member(*params, "binary_data_size") : nullptr;
  const json* data = member(in, "data");
  if (size && data) throw RequestError(400, field + " '" + d.name + "' has both data and parameters.binary_data_size");
  if (size) {
    if (!size->is_number_unsigned()) {
      throw RequestError(400, field + ".parameters.binary_data_size must be a non-negative integer");
    }
    uint64_t n = size->get<uint64_t>();
    if (n > binary.size()) {
      throw RequestError(400, field + " '" + d.name + "': parameters.binary_data_size is " + std::to_string(n) +
                                  " bytes, but only " + std::to_string(binary.size()) +
                                  " bytes of binary data are left in the body (truncated?)");
    }
    d.is_raw = true;
    d.raw = std::as_bytes(std::span<const char>(binary.data(), n));
    binary.remove_prefix(n);
    return d;
  }
  if (!data) throw RequestError(400, field + " '" + d.name + "' has neither data nor parameters.binary_data_size");
  if (!has_typed_form(d.dtype)) {
    throw RequestError(400, field + " '" + d.name + "': " + dt->get<std::string>() +
                                " data must use the binary tensor data extension");
  }
  size_t count = 0;
  count_leaves(*data, 0, count, field + ".data");
  if (count != static_cast<size_t>(numel)) {
    throw RequestError(400, field + " '" + d.name + "': data holds " + std::to_string(count) + " elements, shape " +
                                v2_shape(d.shape) + " needs " + std::to_string(numel));
  }
  d.tensor = Tensor(d.dtype, d.shape);
  size_t index = 0;
  store_leaves(*data, d.tensor, index, field + ".data");
  return d;
}

}  // namespace

RestRequest parse_rest_request(std::string_view body, std::optional<std::string_view> header_length,
                               uint64_t max_tensor_bytes) {
  std::string_view head = body, binary;
  if (header_length) {
    size_t n = 0;
    auto [end, ec] = std::from_chars(header_length->data(), header_length->data() + header_length->size(), n);
    if (ec != std::errc() || end != header_length->data() + header_length->size() || n > body.size()) {
      throw RequestError(400, "Inference-Header-Content-Length '" + std::string(*header_length) +
                                  "' is not a byte count within the body's " + std::to_string(body.size()) +
                                  " bytes");
    }
    head = body.substr(0, n);
    binary = body.substr(n);
  }
  json j;
  try {
    j = json::parse(head);
  } catch (const json::exception& e) {
    throw RequestError(400, std::string("request body is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw RequestError(400, "request body must be a JSON object with 'inputs'");
  RestRequest r;
  if (const json* id = member(j, "id")) {
    if (!id->is_string()) throw RequestError(400, "id must be a string");
    r.id = id->get<std::string>();
  }
  r.binary_default = bool_parameter(j, "binary_data_output", "request");
  const json* inputs = member(j, "inputs");
  if (!inputs || !inputs->is_array() || inputs->empty()) throw RequestError(400, "inputs is missing or not a non-empty list");
  for (size_t i = 0; i < inputs->size(); ++i)
    r.inputs.push_back(parse_input((*inputs)[i], "inputs[" + std::to_string(i) + "]", binary, max_tensor_bytes));
  if (!binary.empty()) {
    throw RequestError(400, std::to_string(binary.size()) +
                                " bytes of binary data follow the last input's (check parameters.binary_data_size)");
  }
  if (const json* outputs = member(j, "outputs")) {
    if (!outputs->is_array()) throw RequestError(400, "outputs must be a list");
    for (size_t i = 0; i < outputs->size(); ++i) {
      std::string field = "outputs[" + std::to_string(i) + "]";
      const json& o = (*outputs)[i];
      const json* name = o.is_object() ? member(o, "name") : nullptr;
      if (!name || !name->is_string()) throw RequestError(400, field + ".name is missing or not a string");
      r.outputs.push_back(name->get<std::string>());
      const json* params = member(o, "parameters");
      bool binary_out = r.binary_default;
      if (params && params->is_object() && member(*params, "binary_data")) binary_out = bool_parameter(o, "binary_data", field);
      r.output_binary.push_back(binary_out);
    }
  }
  return r;
}

RestResponse encode_rest_response(const ServedVersion& version, const RestRequest& request,
                                  const InferResult& result) {
  json out = {{"model_name", version.model()}, {"model_version", version.version()}};
  if (!request.id.empty()) out["id"] = request.id;
  json& list = out["outputs"] = json::array();
  size_t binary_bytes = 0;
  std::vector<const Tensor*> binary;
  for (size_t i = 0; i < result.outputs.size(); ++i) {
    const NamedTensor& o = result.outputs[i];
    bool as_binary = request.outputs.empty() ? request.binary_default : request.output_binary[i];
    std::string_view dt = v2_datatype(o.tensor.dtype());
    if (dt.empty() || o.tensor.dtype() == DType::kString) {
      throw RequestError(500, "output '" + o.name + "' has dtype " + dtype_name(o.tensor.dtype()) +
                                  ", which the protocol cannot carry here");
    }
    json t = {{"name", o.name}, {"datatype", dt}, {"shape", o.tensor.shape()}};
    if (!as_binary && !has_typed_form(o.tensor.dtype())) {
      throw RequestError(400, "outputs: '" + o.name + "' is " + std::string(dt) +
                                  ", which has no JSON form; request it with parameters.binary_data = true");
    }
    if (as_binary) {
      t["parameters"] = {{"binary_data_size", o.tensor.nbytes()}};
      binary_bytes += o.tensor.nbytes();
      binary.push_back(&o.tensor);
    } else {
      json& data = t["data"] = json::array();
      size_t n = static_cast<size_t>(o.tensor.numel());
      data.get_ref<json::array_t&>().reserve(n);
      for (size_t k = 0; k < n; ++k) std::visit([&](auto v) { data.push_back(v); }, load_element(o.tensor, k));
    }
    list.push_back(std::move(t));
  }
  RestResponse r;
  r.body = out.dump();
  if (!binary.empty()) {
    r.header_length = r.body.size();
    r.body.reserve(r.body.size() + binary_bytes);
    for (const Tensor* t : binary) r.body.append(static_cast<const char*>(t->data()), t->nbytes());
  }
  return r;
}

}  // namespace ophost::serve
