// Typed tensor data as the protocol carries it outside the binary forms: JSON "data" arrays (REST) and
// InferTensorContents (gRPC). Each element is range-checked against the tensor's dtype; a value that does not
// fit is a RequestError(400) naming the field and element index.
#pragma once

#include <ophost/tensor.hpp>

#include <cstdint>
#include <string>
#include <variant>

namespace ophost::serve {

using Scalar = std::variant<int64_t, uint64_t, double, bool>;

// Stores `value` as element `index` of `t` (bool, integer and floating-point dtypes; FP16/BF16 and BYTES are
// refused, they need the binary forms). `field`: "inputs[0].data" in messages.
void store_element(Tensor& t, size_t index, const Scalar& value, const std::string& field);

// Element `index` of `t` as a Scalar (bool, integer and floating-point dtypes).
Scalar load_element(const Tensor& t, size_t index);

// Whether store_element / load_element handle this dtype.
bool has_typed_form(DType dtype) noexcept;

}  // namespace ophost::serve
