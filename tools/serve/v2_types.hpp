// Open Inference Protocol datatypes ("FP32", "INT64", ...) and ophost DTypes, and the checks every front end
// applies to a client's shape before anything is allocated.
#pragma once

#include <ophost/tensor.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace ophost::serve {

// "FP32" for kFloat32 ...; "" for a DType the protocol has no name for.
std::string_view v2_datatype(DType dtype) noexcept;
// kUndefined for a name the protocol does not define. "BYTES" maps to kString.
DType dtype_from_v2(std::string_view name) noexcept;

// Checks a client's shape (field: "inputs[0].shape" in messages): every dim >= 0 and the byte count of
// dtype x shape fits 64 bits and `max_bytes`. Returns the element count. Throws RequestError(400 or 413).
int64_t checked_numel(std::span<const int64_t> shape, DType dtype, uint64_t max_bytes, const std::string& field);

// "[1,3,640,640]" with -1 for unknown dims, as the protocol writes them.
std::string v2_shape(std::span<const int64_t> shape);

}  // namespace ophost::serve
