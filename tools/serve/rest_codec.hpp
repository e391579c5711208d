// The REST wire format of an inference request and response: the JSON body of the Open Inference Protocol and
// its binary tensor data extension (a JSON header of Inference-Header-Content-Length bytes, then the tensors'
// bytes in input order, each input's size in parameters.binary_data_size).
#pragma once

#include "served_model.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ophost::serve {

struct RestRequest {
  std::string id;
  std::vector<InputData> inputs;        // raw spans point into the body given to parse_rest_request
  std::vector<std::string> outputs;     // requested names (empty: all)
  std::vector<bool> output_binary;      // per requested output: parameters.binary_data
  bool binary_default = false;          // parameters.binary_data_output
};

// Throws RequestError(400/413) naming the field. `header_length`: the Inference-Header-Content-Length header's
// value when present.
RestRequest parse_rest_request(std::string_view body, std::optional<std::string_view> header_length,
                               uint64_t max_tensor_bytes);

struct RestResponse {
  std::string body;
  size_t header_length = 0;  // > 0: binary outputs follow the JSON header (application/octet-stream)
};

RestResponse encode_rest_response(const ServedVersion& version, const RestRequest& request,
                                  const InferResult& result);

}  // namespace ophost::serve
