// ophost plugin SDK, C++ layer: dtypes, and the tensor views compute receives (TensorRef, In<T>, Out<T>).
// One part of <ophost/ophost_plugin.hpp>, which includes every part in order; include that one.
#pragma once

#include <ophost/sdk/status.hpp>

// Equality of DLPack dtypes (global, so that it is found for the C struct).
inline constexpr bool operator==(oph_dtype a, oph_dtype b) noexcept {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

namespace ophost::sdk {

// ---------------------------------------------------------------------------------------------------------
// Data types
// ---------------------------------------------------------------------------------------------------------

namespace dtypes {
inline constexpr oph_dtype f16{OPH_DTYPE_FLOAT, 16, 1};
inline constexpr oph_dtype bf16{OPH_DTYPE_BFLOAT, 16, 1};
inline constexpr oph_dtype f32{OPH_DTYPE_FLOAT, 32, 1};
inline constexpr oph_dtype f64{OPH_DTYPE_FLOAT, 64, 1};
inline constexpr oph_dtype i8{OPH_DTYPE_INT, 8, 1};
inline constexpr oph_dtype i16{OPH_DTYPE_INT, 16, 1};
inline constexpr oph_dtype i32{OPH_DTYPE_INT, 32, 1};
inline constexpr oph_dtype i64{OPH_DTYPE_INT, 64, 1};
inline constexpr oph_dtype u8{OPH_DTYPE_UINT, 8, 1};
inline constexpr oph_dtype u16{OPH_DTYPE_UINT, 16, 1};
inline constexpr oph_dtype u32{OPH_DTYPE_UINT, 32, 1};
inline constexpr oph_dtype u64{OPH_DTYPE_UINT, 64, 1};
inline constexpr oph_dtype boolean{OPH_DTYPE_BOOL, 8, 1};
}  // namespace dtypes

template <class T>
struct dtype_of;
template <> struct dtype_of<float> { static constexpr oph_dtype value = dtypes::f32; };
template <> struct dtype_of<double> { static constexpr oph_dtype value = dtypes::f64; };
template <> struct dtype_of<int8_t> { static constexpr oph_dtype value = dtypes::i8; };
template <> struct dtype_of<int16_t> { static constexpr oph_dtype value = dtypes::i16; };
template <> struct dtype_of<int32_t> { static constexpr oph_dtype value = dtypes::i32; };
template <> struct dtype_of<int64_t> { static constexpr oph_dtype value = dtypes::i64; };
template <> struct dtype_of<uint8_t> { static constexpr oph_dtype value = dtypes::u8; };
template <> struct dtype_of<uint16_t> { static constexpr oph_dtype value = dtypes::u16; };
template <> struct dtype_of<uint32_t> { static constexpr oph_dtype value = dtypes::u32; };
template <> struct dtype_of<uint64_t> { static constexpr oph_dtype value = dtypes::u64; };
template <> struct dtype_of<bool> { static constexpr oph_dtype value = dtypes::boolean; };
template <class T>
inline constexpr oph_dtype dtype_v = dtype_of<T>::value;

inline std::string dtype_name(oph_dtype d) {
  std::string base;
  switch (d.code) {
    case OPH_DTYPE_INT: base = "int"; break;
    case OPH_DTYPE_UINT: base = "uint"; break;
    case OPH_DTYPE_FLOAT: base = "float"; break;
    case OPH_DTYPE_BFLOAT: base = "bfloat"; break;
    case OPH_DTYPE_BOOL: return "bool";
    case OPH_DTYPE_OPAQUE: return "string";
    default: base = "code" + std::to_string(d.code) + "_"; break;
  }
  return base + std::to_string(d.bits);
}

inline size_t numel(std::span<const int64_t> shape) noexcept {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d < 0 ? 0 : d);
  return n;
}

// ---------------------------------------------------------------------------------------------------------
// Tensor views used in compute
// ---------------------------------------------------------------------------------------------------------

// Untyped view of one actual input or output (borrowed; valid during compute).
class TensorRef {
 public:
  TensorRef() = default;
  explicit TensorRef(const oph_tensor* t) : t_(t) {}
  bool present() const noexcept { return t_ != nullptr; }
  const oph_tensor* raw() const noexcept { return t_; }
  oph_dtype dtype() const noexcept { return t_->dtype; }
  std::span<const int64_t> shape() const noexcept {
    return {t_->shape, static_cast<size_t>(t_->ndim)};
  }
  int32_t ndim() const noexcept { return t_->ndim; }
  size_t size() const noexcept { return numel(shape()); }
  void* data() const noexcept { return static_cast<char*>(t_->data) + t_->byte_offset; }

 private:
  const oph_tensor* t_ = nullptr;
};

// Typed read-only input (borrowed; valid during compute). Signature-driven ops receive these.
template <class T>
class In {
 public:
  using value_type = T;
  In() = default;
  explicit In(TensorRef r) : r_(r) {}
  bool present() const noexcept { return r_.present(); }
  const T* data() const noexcept { return static_cast<const T*>(r_.data()); }
  size_t size() const noexcept { return r_.size(); }
  std::span<const int64_t> shape() const noexcept { return r_.shape(); }
  const T& operator[](size_t i) const noexcept { return data()[i]; }
  std::span<const T> values() const noexcept { return {data(), size()}; }
  const oph_tensor* raw() const noexcept { return r_.raw(); }

 private:
  TensorRef r_;
};

// Typed output, preallocated by the host with the shape from infer (borrowed; valid during compute).
template <class T>
class Out {
 public:
  using value_type = T;
  Out() = default;
  explicit Out(TensorRef r) : r_(r) {}
  bool present() const noexcept { return r_.present(); }
  T* data() const noexcept { return static_cast<T*>(r_.data()); }
  size_t size() const noexcept { return r_.size(); }
  std::span<const int64_t> shape() const noexcept { return r_.shape(); }
  T& operator[](size_t i) const noexcept { return data()[i]; }
  std::span<T> values() const noexcept { return {data(), size()}; }
  const oph_tensor* raw() const noexcept { return r_.raw(); }

 private:
  TensorRef r_;
};

}  // namespace ophost::sdk
