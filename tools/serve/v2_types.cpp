#include "v2_types.hpp"

#include "request_error.hpp"

#include <array>
#include <utility>

namespace ophost::serve {

namespace {
constexpr std::array<std::pair<DType, std::string_view>, 14> kNames{{
    {DType::kBool, "BOOL"},
    {DType::kUint8, "UINT8"},
    {DType::kUint16, "UINT16"},
    {DType::kUint32, "UINT32"},
    {DType::kUint64, "UINT64"},
    {DType::kInt8, "INT8"},
    {DType::kInt16, "INT16"},
    {DType::kInt32, "INT32"},
    {DType::kInt64, "INT64"},
    {DType::kFloat16, "FP16"},
    {DType::kFloat32, "FP32"},
    {DType::kFloat64, "FP64"},
    {DType::kBFloat16, "BF16"},
    {DType::kString, "BYTES"},
}};
}  // namespace

std::string_view v2_datatype(DType dtype) noexcept {
  for (const auto& [d, name] : kNames)
    if (d == dtype) return name;
  return {};
}

DType dtype_from_v2(std::string_view name) noexcept {
  for (const auto& [d, n] : kNames)
    if (n == name) return d;
  return DType::kUndefined;
}

int64_t checked_numel(std::span<const int64_t> shape, DType dtype, uint64_t max_bytes, const std::string& field) {
  uint64_t numel = 1;
  bool overflow = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) {
      throw RequestError(400, field + "[" + std::to_string(i) + "] is " + std::to_string(shape[i]) +
                                  ": dimensions must be >= 0");
    }
    overflow = overflow || __builtin_mul_overflow(numel, static_cast<uint64_t>(shape[i]), &numel);
  }
  uint64_t bytes = 0;
  size_t elem = dtype == DType::kString ? 1 : dtype_size(dtype);
  overflow = overflow || numel > uint64_t{INT64_MAX} || __builtin_mul_overflow(numel, elem, &bytes);
  if (overflow) {
    throw RequestError(400, field + " " + v2_shape(shape) + ": the element count overflows 64 bits");
  }
  if (bytes > max_bytes) {
    throw RequestError(413, field + " " + v2_shape(shape) + " is " + std::to_string(bytes) +
                                " bytes, over the server's tensor limit of " + std::to_string(max_bytes) +
                                " bytes (--max-request-tensor-bytes)");
  }
  return static_cast<int64_t>(numel);
}

std::string v2_shape(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace ophost::serve
