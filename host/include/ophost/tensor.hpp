// ophost::Tensor: an owning, 64-byte aligned, contiguous host tensor used by the embedding API, model
// initializers and .npy I/O. Element types use ONNX TensorProto numbering.
#pragma once

#include <ophost/export.hpp>
#include <ophost/ophost_plugin.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ophost {

// ONNX TensorProto.DataType numbering.
enum class DType : int32_t {
  kUndefined = 0,
  kFloat32 = 1,
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kFloat64 = 11,
  kUint32 = 12,
  kUint64 = 13,
  kBFloat16 = 16,
};

// Bytes per element (0 for kUndefined and kString).
OPHOST_API size_t dtype_size(DType dtype) noexcept;
// "float32", "int64", ... (numpy-style names).
OPHOST_API const char* dtype_name(DType dtype) noexcept;
// DLPack dtype for a DType; {OPAQUE,0,0} for string/undefined.
OPHOST_API oph_dtype to_dl(DType dtype) noexcept;
// DType for a DLPack dtype; kUndefined when there is none.
OPHOST_API DType from_dl(oph_dtype dtype) noexcept;
// Whether some ONNX element type maps to a DLPack dtype: the DType ones, and also complex64/128 and strings
// (opaque), which DType lacks. What `pack check` and the op runner accept from an op's infer.
OPHOST_API bool is_onnx_dtype(oph_dtype dtype) noexcept;
// "[1,3,640,640]" (unknown dims as "?").
OPHOST_API std::string shape_to_string(std::span<const int64_t> shape);
// Product of dims (1 for a scalar). Throws Error(kOutOfRange) on negative dims or overflow.
OPHOST_API int64_t shape_numel(std::span<const int64_t> shape);

class OPHOST_API Tensor {
 public:
  Tensor() = default;
  // Allocates a zero-filled tensor. String tensors hold std::string elements (see strings()).
  Tensor(DType dtype, std::vector<int64_t> shape);
  // A tensor over `data`, a buffer of at least numel * dtype_size bytes (64-byte aligned for kernels' sake)
  // owned by the shared_ptr: its deleter runs when the last Tensor sharing it is destroyed. The bytes are not
  // touched. Not for string tensors (throws Error(kInvalidArgument)); `data` must not be null.
  static Tensor wrap(DType dtype, std::vector<int64_t> shape, std::shared_ptr<std::byte> data);

  DType dtype() const noexcept { return dtype_; }
  std::span<const int64_t> shape() const noexcept { return shape_; }
  int64_t numel() const noexcept { return numel_; }
  size_t nbytes() const noexcept { return numel_ * dtype_size(dtype_); }
  bool empty() const noexcept { return dtype_ == DType::kUndefined; }

  void* data() noexcept { return data_.get(); }
  const void* data() const noexcept { return data_.get(); }
  template <class T>
  T* data_as() noexcept { return static_cast<T*>(data()); }
  template <class T>
  const T* data_as() const noexcept { return static_cast<const T*>(data()); }

  // String tensors only: the elements (numel of them).
  std::vector<std::string>& strings() noexcept { return strings_; }
  const std::vector<std::string>& strings() const noexcept { return strings_; }

  // A DLPack-layout view of this tensor on the CPU. The view's shape points into this tensor; valid while the
  // tensor lives and is not reshaped.
  oph_tensor view() const noexcept;

  // Deep copy.
  Tensor clone() const;

  // How many Tensors share this tensor's buffer (copies share; clone() does not). 0 when there is none.
  long data_use_count() const noexcept { return data_.use_count(); }

 private:
  struct Free {
    void operator()(std::byte* p) const noexcept;
  };
  DType dtype_ = DType::kUndefined;
  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
  std::shared_ptr<std::byte> data_;
  std::vector<std::string> strings_;
};

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

}  // namespace ophost
