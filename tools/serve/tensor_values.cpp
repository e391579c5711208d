#include "tensor_values.hpp"

#include "request_error.hpp"
#include "v2_types.hpp"

#include <limits>
#include <type_traits>

namespace ophost::serve {

namespace {

template <class T>
void put(Tensor& t, size_t index, const Scalar& value, const std::string& field) {
  T* p = t.data_as<T>() + index;
  auto where = [&] { return field + "[" + std::to_string(index) + "]"; };
  auto dt = std::string(v2_datatype(t.dtype()));
  if constexpr (std::is_same_v<T, bool>) {
    if (!std::holds_alternative<bool>(value)) throw RequestError(400, where() + ": BOOL wants true or false");
    *p = std::get<bool>(value);
  } else if constexpr (std::is_floating_point_v<T>) {
    if (std::holds_alternative<bool>(value)) throw RequestError(400, where() + ": " + dt + " wants a number, not a bool");
    std::visit([&](auto v) { *p = static_cast<T>(v); }, value);
  } else {
    using L = std::numeric_limits<T>;
    if (const auto* i = std::get_if<int64_t>(&value)) {
      bool fits = std::is_signed_v<T> ? (*i >= static_cast<int64_t>(L::min()) && *i <= static_cast<int64_t>(L::max()))
                                      : (*i >= 0 && static_cast<uint64_t>(*i) <= static_cast<uint64_t>(L::max()));
      if (!fits) throw RequestError(400, where() + ": " + std::to_string(*i) + " is out of range for " + dt);
      *p = static_cast<T>(*i);
    } else if (const auto* u = std::get_if<uint64_t>(&value)) {
      if (*u > static_cast<uint64_t>(L::max()))
        throw RequestError(400, where() + ": " + std::to_string(*u) + " is out of range for " + dt);
      *p = static_cast<T>(*u);
    } else {
      throw RequestError(400, where() + ": " + dt + " wants an integer");
    }
  }
}

template <class T>
Scalar get(const Tensor& t, size_t index) {
  T v = t.data_as<T>()[index];
  if constexpr (std::is_same_v<T, bool>) return v;
  else if constexpr (std::is_floating_point_v<T>) return static_cast<double>(v);
  else if constexpr (std::is_signed_v<T>) return static_cast<int64_t>(v);
  else return static_cast<uint64_t>(v);
}

template <class F>
auto dispatch(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kBool: return f(bool{});
    case DType::kUint8: return f(uint8_t{});
    case DType::kUint16: return f(uint16_t{});
    case DType::kUint32: return f(uint32_t{});
    case DType::kUint64: return f(uint64_t{});
    case DType::kInt8: return f(int8_t{});
    case DType::kInt16: return f(int16_t{});
    case DType::kInt32: return f(int32_t{});
    case DType::kInt64: return f(int64_t{});
    case DType::kFloat32: return f(float{});
    case DType::kFloat64: return f(double{});
    default: break;
  }
  throw RequestError(400, "datatype " + std::string(v2_datatype(dtype)) +
                              " has no typed (JSON / contents) form here; send it as binary data");
}

}  // namespace

bool has_typed_form(DType dtype) noexcept {
  switch (dtype) {
    case DType::kBool: case DType::kUint8: case DType::kUint16: case DType::kUint32: case DType::kUint64:
    case DType::kInt8: case DType::kInt16: case DType::kInt32: case DType::kInt64: case DType::kFloat32:
    case DType::kFloat64:
      return true;
    default:
      return false;
  }
}

void store_element(Tensor& t, size_t index, const Scalar& value, const std::string& field) {
  static_assert(sizeof(bool) == 1, "BOOL tensors hold one byte per element");
  dispatch(t.dtype(), [&](auto tag) { put<decltype(tag)>(t, index, value, field); });
}

Scalar load_element(const Tensor& t, size_t index) {
  return dispatch(t.dtype(), [&](auto tag) { return get<decltype(tag)>(t, index); });
}

}  // namespace ophost::serve
