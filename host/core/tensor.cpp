// ophost::Tensor and the DType helpers declared in <ophost/tensor.hpp>.
#include <ophost/error.hpp>
#include <ophost/tensor.hpp>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string>

namespace ophost {

namespace {
constexpr size_t kAlignment = 64;
}  // namespace

size_t dtype_size(DType dtype) noexcept {
  switch (dtype) {
    case DType::kFloat32: return 4;
    case DType::kUint8: return 1;
    case DType::kInt8: return 1;
    case DType::kUint16: return 2;
    case DType::kInt16: return 2;
    case DType::kInt32: return 4;
    case DType::kInt64: return 8;
    case DType::kBool: return 1;
    case DType::kFloat16: return 2;
    case DType::kFloat64: return 8;
    case DType::kUint32: return 4;
    case DType::kUint64: return 8;
    case DType::kBFloat16: return 2;
    case DType::kString:
    case DType::kUndefined: return 0;
  }
  return 0;
}

const char* dtype_name(DType dtype) noexcept {
  switch (dtype) {
    case DType::kUndefined: return "undefined";
    case DType::kFloat32: return "float32";
    case DType::kUint8: return "uint8";
    case DType::kInt8: return "int8";
    case DType::kUint16: return "uint16";
    case DType::kInt16: return "int16";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kString: return "string";
    case DType::kBool: return "bool";
    case DType::kFloat16: return "float16";
    case DType::kFloat64: return "float64";
    case DType::kUint32: return "uint32";
    case DType::kUint64: return "uint64";
    case DType::kBFloat16: return "bfloat16";
  }
  return "undefined";
}

oph_dtype to_dl(DType dtype) noexcept {
  auto make = [](int code, int bits) {
    return oph_dtype{static_cast<uint8_t>(code), static_cast<uint8_t>(bits), 1};
  };
  switch (dtype) {
    case DType::kFloat32: return make(OPH_DTYPE_FLOAT, 32);
    case DType::kFloat64: return make(OPH_DTYPE_FLOAT, 64);
    case DType::kFloat16: return make(OPH_DTYPE_FLOAT, 16);
    case DType::kBFloat16: return make(OPH_DTYPE_BFLOAT, 16);
    case DType::kInt8: return make(OPH_DTYPE_INT, 8);
    case DType::kInt16: return make(OPH_DTYPE_INT, 16);
    case DType::kInt32: return make(OPH_DTYPE_INT, 32);
    case DType::kInt64: return make(OPH_DTYPE_INT, 64);
    case DType::kUint8: return make(OPH_DTYPE_UINT, 8);
    case DType::kUint16: return make(OPH_DTYPE_UINT, 16);
    case DType::kUint32: return make(OPH_DTYPE_UINT, 32);
    case DType::kUint64: return make(OPH_DTYPE_UINT, 64);
    case DType::kBool: return make(OPH_DTYPE_BOOL, 8);
    case DType::kString:
    case DType::kUndefined: break;
  }
  return oph_dtype{static_cast<uint8_t>(OPH_DTYPE_OPAQUE), 0, 0};
}

bool is_onnx_dtype(oph_dtype d) noexcept {
  if (d.lanes == 0) return false;
  switch (d.code) {
    case OPH_DTYPE_INT: case OPH_DTYPE_UINT: return d.bits == 8 || d.bits == 16 || d.bits == 32 || d.bits == 64;
    case OPH_DTYPE_FLOAT: return d.bits == 16 || d.bits == 32 || d.bits == 64;
    case OPH_DTYPE_BFLOAT: return d.bits == 16;
    case OPH_DTYPE_BOOL: return d.bits == 8;
    case OPH_DTYPE_COMPLEX: return d.bits == 64 || d.bits == 128;
    case OPH_DTYPE_OPAQUE: return true;
    default: return false;
  }
}

DType from_dl(oph_dtype dtype) noexcept {
  if (dtype.lanes != 1) return DType::kUndefined;
  switch (dtype.code) {
    case OPH_DTYPE_FLOAT:
      switch (dtype.bits) {
        case 16: return DType::kFloat16;
        case 32: return DType::kFloat32;
        case 64: return DType::kFloat64;
      }
      break;
    case OPH_DTYPE_BFLOAT:
      if (dtype.bits == 16) return DType::kBFloat16;
      break;
    case OPH_DTYPE_INT:
      switch (dtype.bits) {
        case 8: return DType::kInt8;
        case 16: return DType::kInt16;
        case 32: return DType::kInt32;
        case 64: return DType::kInt64;
      }
      break;
    case OPH_DTYPE_UINT:
      switch (dtype.bits) {
        case 8: return DType::kUint8;
        case 16: return DType::kUint16;
        case 32: return DType::kUint32;
        case 64: return DType::kUint64;
      }
      break;
    case OPH_DTYPE_BOOL:
      if (dtype.bits == 8) return DType::kBool;
      break;
  }
  return DType::kUndefined;
}

std::string shape_to_string(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ',';
    s += shape[i] < 0 ? std::string("?") : std::to_string(shape[i]);
  }
  s += ']';
  return s;
}

int64_t shape_numel(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) {
      throw Error(Code::kOutOfRange, "shape " + shape_to_string(shape) +
                                         " has a negative or unknown dimension; a concrete shape is required");
    }
    int64_t r = 0;
    if (__builtin_mul_overflow(n, d, &r)) {
      throw Error(Code::kOutOfRange, "shape " + shape_to_string(shape) + " has more elements than fit in int64");
    }
    n = r;
  }
  return n;
}

void Tensor::Free::operator()(std::byte* p) const noexcept { std::free(p); }

Tensor Tensor::wrap(DType dtype, std::vector<int64_t> shape, std::shared_ptr<std::byte> data) {
  if (dtype == DType::kUndefined || dtype == DType::kString || dtype_size(dtype) == 0) {
    throw Error(Code::kInvalidArgument, "Tensor::wrap: element type " + std::to_string(static_cast<int32_t>(dtype)) +
                                            " cannot be wrapped (fixed-size element types only)");
  }
  if (!data) throw Error(Code::kInvalidArgument, "Tensor::wrap: no buffer");
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.numel_ = shape_numel(t.shape_);
  t.data_ = std::move(data);
  return t;
}

Tensor::Tensor(DType dtype, std::vector<int64_t> shape) : dtype_(dtype), shape_(std::move(shape)) {
  if (dtype == DType::kUndefined) {
    throw Error(Code::kInvalidArgument, "cannot create a tensor of undefined element type");
  }
  if (dtype_size(dtype) == 0 && dtype != DType::kString) {
    throw Error(Code::kInvalidArgument,
                "cannot create a tensor of element type " + std::to_string(static_cast<int32_t>(dtype)));
  }
  numel_ = shape_numel(shape_);
  if (dtype == DType::kString) {
    strings_.resize(static_cast<size_t>(numel_));
    return;
  }
  const size_t esize = dtype_size(dtype);
  size_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<size_t>(numel_), esize, &bytes) ||
      bytes > std::numeric_limits<size_t>::max() - kAlignment) {
    throw Error(Code::kOutOfRange, "tensor of shape " + shape_to_string(shape_) + " and type " + dtype_name(dtype) +
                                       " is too large to allocate");
  }
  // aligned_alloc needs a size that is a multiple of the alignment; keep at least one block so data() is never
  // NULL (an empty tensor still has a valid, aligned address).
  size_t alloc = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (alloc == 0) alloc = kAlignment;
  void* p = std::aligned_alloc(kAlignment, alloc);
  if (p == nullptr) {
    throw Error(Code::kResourceExhausted, "out of memory allocating " + std::to_string(alloc) +
                                              " bytes for a tensor of shape " + shape_to_string(shape_) + " (" +
                                              dtype_name(dtype) + ")");
  }
  std::memset(p, 0, alloc);
  data_ = std::shared_ptr<std::byte>(static_cast<std::byte*>(p), Free{});
}

oph_tensor Tensor::view() const noexcept {
  oph_tensor t{};
  t.data = const_cast<std::byte*>(data_.get());
  t.device = oph_device{OPH_DL_CPU, 0};
  t.ndim = static_cast<int32_t>(shape_.size());
  t.dtype = to_dl(dtype_);
  t.shape = shape_.empty() ? nullptr : const_cast<int64_t*>(shape_.data());
  t.strides = nullptr;
  t.byte_offset = 0;
  return t;
}

Tensor Tensor::clone() const {
  if (empty()) return Tensor();
  Tensor copy(dtype_, shape_);
  if (dtype_ == DType::kString) {
    copy.strings_ = strings_;
  } else if (nbytes() > 0) {
    std::memcpy(copy.data(), data(), nbytes());
  }
  return copy;
}

}  // namespace ophost
