// ophost plugin SDK: header-only C++20 layer over the C ABI in ophost_plugin.h.
//
// An operator in a few lines:
//
//   #include <ophost/ophost_plugin.hpp>
//   namespace oph = ophost::sdk;
//
//   static void relu6_scale(oph::In<float> x, oph::Out<float> y, float scale, float max_val) {
//     for (size_t i = 0; i < x.size(); ++i) y[i] = std::clamp(x[i] * scale, 0.0f, max_val);
//   }
//
//   OPH_PACK(pack) {
//     pack.op("myops", "relu6_scale")
//         .attr("scale", 1.0f)          // attribute parameters bind to attr() declarations in order
//         .attr("max_val", 6.0f)
//         .infer(oph::same_as_input(0))
//         .fn<relu6_scale>();           // inputs/outputs/types taken from the function's signature
//   }
//
// Everything the host sees is plain C data owned by the pack (valid until the plugin's release). Every
// callback into the pack catches C++ exceptions and turns them into an oph_status; throw oph::Error(code, msg)
// to choose the code. Only the C headers and the C++ standard library are used.
#pragma once

#include <ophost/ophost_plugin.h>

#include <algorithm>
#include <atomic>
#include <concepts>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <new>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

// Equality of DLPack dtypes (global, so that it is found for the C struct).
inline constexpr bool operator==(oph_dtype a, oph_dtype b) noexcept {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

namespace ophost::sdk {

// ---------------------------------------------------------------------------------------------------------
// Errors and host services
// ---------------------------------------------------------------------------------------------------------

// Throw from any op callback; converted to an oph_status with this code.
class Error : public std::runtime_error {
 public:
  Error(int32_t code, const std::string& message) : std::runtime_error(message), code_(code) {}
  int32_t code() const noexcept { return code_; }

 private:
  int32_t code_;
};

namespace detail {
inline const oph_host_services*& services_slot() noexcept {
  static const oph_host_services* services = nullptr;
  return services;
}
}  // namespace detail

// The host services given to this plugin at entry (NULL before entry).
inline const oph_host_services* services() noexcept { return detail::services_slot(); }

// Builds a status from the exception in flight. Call only inside a catch block.
inline oph_status* status_from_current_exception(std::string_view where) noexcept {
  const oph_host_services* s = services();
  if (!s || !s->status_create) return nullptr;  // no host: nothing can be reported
  try {
    throw;
  } catch (const Error& e) {
    return s->status_create(e.code(), e.what());
  } catch (const std::invalid_argument& e) {
    return s->status_create(OPH_CODE_INVALID_ARGUMENT, e.what());
  } catch (const std::out_of_range& e) {
    return s->status_create(OPH_CODE_OUT_OF_RANGE, e.what());
  } catch (const std::bad_alloc&) {
    return s->status_create(OPH_CODE_RESOURCE_EXHAUSTED, "out of memory");
  } catch (const std::exception& e) {
    std::string msg = std::string("unhandled exception in ") + std::string(where) + ": " + e.what();
    return s->status_create(OPH_CODE_INTERNAL, msg.c_str());
  } catch (...) {
    std::string msg = std::string("unknown exception in ") + std::string(where);
    return s->status_create(OPH_CODE_INTERNAL, msg.c_str());
  }
}

// Runs f() and converts any exception into a status (NULL on success).
template <class F>
oph_status* guarded(std::string_view where, F&& f) noexcept {
  try {
    f();
    return nullptr;
  } catch (...) {
    return status_from_current_exception(where);
  }
}

inline void log(int32_t level, const std::string& message) noexcept {
  const oph_host_services* s = services();
#ifdef OPH_PLUGIN_NAME
  const char* plugin = OPH_PLUGIN_NAME;
#else
  const char* plugin = nullptr;
#endif
  if (s && s->log) s->log(s->host, level, plugin, message.c_str());
}

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

// ---------------------------------------------------------------------------------------------------------
// Attributes
// ---------------------------------------------------------------------------------------------------------

template <class T>
struct attr_traits;
template <> struct attr_traits<float> { static constexpr int32_t type = OPH_ATTR_FLOAT; };
template <> struct attr_traits<int64_t> { static constexpr int32_t type = OPH_ATTR_INT; };
template <> struct attr_traits<std::string> { static constexpr int32_t type = OPH_ATTR_STRING; };
template <> struct attr_traits<std::vector<float>> { static constexpr int32_t type = OPH_ATTR_FLOATS; };
template <> struct attr_traits<std::vector<int64_t>> { static constexpr int32_t type = OPH_ATTR_INTS; };
template <> struct attr_traits<std::vector<std::string>> { static constexpr int32_t type = OPH_ATTR_STRINGS; };

inline const char* attr_type_name(int32_t t) noexcept {
  switch (t) {
    case OPH_ATTR_FLOAT: return "float";
    case OPH_ATTR_INT: return "int";
    case OPH_ATTR_STRING: return "string";
    case OPH_ATTR_TENSOR: return "tensor";
    case OPH_ATTR_FLOATS: return "floats";
    case OPH_ATTR_INTS: return "ints";
    case OPH_ATTR_STRINGS: return "strings";
    default: return "undefined";
  }
}

// Read access to the resolved attributes of one node, in schema order (borrowed).
class Attrs {
 public:
  Attrs() = default;
  Attrs(const oph_op_def* op, const oph_attr_value* const* values, size_t n) : op_(op), values_(values), n_(n) {}

  size_t index_of(std::string_view name) const {
    for (size_t i = 0; i < n_ && i < op_->num_attributes; ++i)
      if (name == op_->attributes[i]->name) return i;
    throw Error(OPH_CODE_INTERNAL, "op '" + std::string(op_->name) + "' has no attribute '" +
                                       std::string(name) + "' in its schema");
  }
  const oph_attr_value& value(size_t i) const { return *values_[i]; }
  bool has(std::string_view name) const { return value(index_of(name)).type != OPH_ATTR_UNDEFINED; }

  template <class T>
  T get(std::string_view name) const {
    return convert<T>(value(index_of(name)), name);
  }
  template <class T>
  static T convert(const oph_attr_value& v, std::string_view name) {
    if (v.type != attr_traits<T>::type) {
      throw Error(OPH_CODE_INVALID_ARGUMENT, "attribute '" + std::string(name) + "' is " +
                                                 attr_type_name(v.type) + ", expected " +
                                                 attr_type_name(attr_traits<T>::type));
    }
    if constexpr (std::is_same_v<T, float>) return v.f;
    else if constexpr (std::is_same_v<T, int64_t>) return v.i;
    else if constexpr (std::is_same_v<T, std::string>) return std::string(v.s ? v.s : "", v.count);
    else if constexpr (std::is_same_v<T, std::vector<float>>) return std::vector<float>(v.floats, v.floats + v.count);
    else if constexpr (std::is_same_v<T, std::vector<int64_t>>) return std::vector<int64_t>(v.ints, v.ints + v.count);
    else {
      std::vector<std::string> out;
      for (size_t i = 0; i < v.count; ++i) out.emplace_back(v.strings[i]);
      return out;
    }
  }
  size_t size() const noexcept { return n_; }

 private:
  const oph_op_def* op_ = nullptr;
  const oph_attr_value* const* values_ = nullptr;
  size_t n_ = 0;
};

// ---------------------------------------------------------------------------------------------------------
// Shape inference
// ---------------------------------------------------------------------------------------------------------

class InferContext {
 public:
  explicit InferContext(const oph_infer_context* c) : c_(c), attrs_(c->op, c->attrs, c->num_attrs) {}

  size_t num_inputs() const noexcept { return c_->num_inputs; }
  size_t num_outputs() const noexcept { return c_->num_outputs; }
  bool has_input(size_t i) const noexcept { return i < c_->num_inputs && c_->inputs[i]->present; }
  const oph_value_info& input(size_t i) const {
    if (i >= c_->num_inputs) throw Error(OPH_CODE_INVALID_ARGUMENT, "input " + std::to_string(i) + " missing");
    return *c_->inputs[i];
  }
  oph_dtype input_dtype(size_t i) const { return input(i).dtype; }
  bool input_rank_known(size_t i) const { return input(i).ndim >= 0; }
  std::span<const int64_t> input_shape(size_t i) const {
    const oph_value_info& v = input(i);
    return {v.shape, static_cast<size_t>(v.ndim < 0 ? 0 : v.ndim)};
  }
  // Constant value of input i in host memory, or NULL when it is only known at run time.
  const oph_tensor* input_constant(size_t i) const { return has_input(i) ? input(i).constant : nullptr; }

  void set_output(size_t i, oph_dtype dtype, std::span<const int64_t> shape) {
    if (i >= c_->num_outputs) return;  // output not requested by the model
    if (shape.size() > OPH_MAX_NDIM) throw Error(OPH_CODE_OUT_OF_RANGE, "output rank above OPH_MAX_NDIM");
    oph_value_info& o = *c_->outputs[i];
    o.dtype = dtype;
    o.ndim = static_cast<int32_t>(shape.size());
    std::copy(shape.begin(), shape.end(), o.shape);
  }
  void set_output(size_t i, oph_dtype dtype, std::initializer_list<int64_t> shape) {
    set_output(i, dtype, std::span<const int64_t>(shape.begin(), shape.size()));
  }
  // Output whose rank is not known before running.
  void set_output_unknown_rank(size_t i, oph_dtype dtype) {
    if (i >= c_->num_outputs) return;
    c_->outputs[i]->dtype = dtype;
    c_->outputs[i]->ndim = -1;
  }

  const Attrs& attrs() const noexcept { return attrs_; }
  template <class T>
  T attr(std::string_view name) const { return attrs_.get<T>(name); }
  const char* node_name() const noexcept { return c_->node_name ? c_->node_name : ""; }
  const oph_infer_context* raw() const noexcept { return c_; }

 private:
  const oph_infer_context* c_;
  Attrs attrs_;
};

using InferFn = std::function<void(InferContext&)>;

// Output `out` (default 0) has the dtype and shape of input `i`.
inline InferFn same_as_input(size_t i, size_t out = 0) {
  return [i, out](InferContext& c) {
    c.set_output(out, c.input_dtype(i), c.input_shape(i));
    if (!c.input_rank_known(i)) c.set_output_unknown_rank(out, c.input_dtype(i));
  };
}

// ONNX multidirectional (numpy) broadcasting of two shapes. Unknown dims (-1) broadcast against 1 and stay
// unknown against each other. Throws Error(INVALID_ARGUMENT) when the shapes are incompatible.
inline std::vector<int64_t> broadcast_shapes(std::span<const int64_t> a, std::span<const int64_t> b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t k = 0; k < n; ++k) {
    int64_t da = k < n - a.size() ? 1 : a[k - (n - a.size())];
    int64_t db = k < n - b.size() ? 1 : b[k - (n - b.size())];
    if (da == db || db == 1) out[k] = da;
    else if (da == 1) out[k] = db;
    else if (da < 0 || db < 0) out[k] = da < 0 ? db : da;
    else {
      auto str = [](std::span<const int64_t> s) {
        std::string r = "[";
        for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
        return r + "]";
      };
      throw Error(OPH_CODE_INVALID_ARGUMENT, "shapes " + str(a) + " and " + str(b) +
                                                 " cannot be broadcast (dimension " + std::to_string(k) +
                                                 ": " + std::to_string(da) + " vs " + std::to_string(db) + ")");
    }
  }
  return out;
}

// A shape held inline (no allocation), for hot paths in compute.
struct SmallShape {
  int64_t dims[OPH_MAX_NDIM] = {};
  size_t rank = 0;
  std::span<const int64_t> span() const noexcept { return {dims, rank}; }
};

// broadcast_shapes without allocating; same rules and errors.
inline SmallShape broadcast_small(std::span<const int64_t> a, std::span<const int64_t> b) {
  SmallShape out;
  size_t n = std::max(a.size(), b.size());
  if (n > OPH_MAX_NDIM) throw Error(OPH_CODE_OUT_OF_RANGE, "broadcast rank above OPH_MAX_NDIM");
  out.rank = n;
  for (size_t k = 0; k < n; ++k) {
    int64_t da = k < n - a.size() ? 1 : a[k - (n - a.size())];
    int64_t db = k < n - b.size() ? 1 : b[k - (n - b.size())];
    if (da == db || db == 1) out.dims[k] = da;
    else if (da == 1) out.dims[k] = db;
    else broadcast_shapes(a, b);  // throws the descriptive error
  }
  return out;
}

// Output 0: broadcast of all present inputs; dtype of input 0 (or `dtype` when given).
inline InferFn broadcast_inputs() {
  return [](InferContext& c) {
    std::vector<int64_t> shape;
    bool first = true;
    for (size_t i = 0; i < c.num_inputs(); ++i) {
      if (!c.has_input(i)) continue;
      if (!c.input_rank_known(i)) {
        c.set_output_unknown_rank(0, c.input_dtype(0));
        return;
      }
      shape = first ? std::vector<int64_t>(c.input_shape(i).begin(), c.input_shape(i).end())
                    : broadcast_shapes(shape, c.input_shape(i));
      first = false;
    }
    c.set_output(0, c.input_dtype(0), shape);
  };
}

// ---------------------------------------------------------------------------------------------------------
// Compute
// ---------------------------------------------------------------------------------------------------------

class KernelContext {
 public:
  KernelContext(const oph_compute_context* c, const Attrs& attrs) : c_(c), attrs_(attrs) {}

  size_t num_inputs() const noexcept { return c_->num_inputs; }
  size_t num_outputs() const noexcept { return c_->num_outputs; }
  TensorRef input(size_t i) const { return TensorRef(i < c_->num_inputs ? c_->inputs[i] : nullptr); }
  TensorRef output(size_t i) const { return TensorRef(i < c_->num_outputs ? c_->outputs[i] : nullptr); }

  template <class T>
  In<T> input(size_t i) const {
    TensorRef r = input(i);
    if (r.present() && !(r.dtype() == dtype_v<T>)) {
      throw Error(OPH_CODE_INVALID_ARGUMENT, "input " + std::to_string(i) + " is " + dtype_name(r.dtype()) +
                                                 ", kernel expects " + dtype_name(dtype_v<T>));
    }
    return In<T>(r);
  }
  template <class T>
  Out<T> output(size_t i) const {
    TensorRef r = output(i);
    if (r.present() && !(r.dtype() == dtype_v<T>)) {
      throw Error(OPH_CODE_INVALID_ARGUMENT, "output " + std::to_string(i) + " is " + dtype_name(r.dtype()) +
                                                 ", kernel expects " + dtype_name(dtype_v<T>));
    }
    return Out<T>(r);
  }

  // For outputs whose shape is only known at run time (data == NULL on entry).
  TensorRef allocate_output(size_t i, std::span<const int64_t> shape) const {
    if (!c_->allocate_output) throw Error(OPH_CODE_UNIMPLEMENTED, "host cannot allocate outputs at run time");
    oph_status* st = c_->allocate_output(c_, i, static_cast<int32_t>(shape.size()), shape.data());
    if (st) {
      std::string msg = services()->status_message(st);
      int32_t code = services()->status_code(st);
      services()->status_destroy(st);
      throw Error(code, msg);
    }
    return output(i);
  }

  // Runs body(begin, end) over [0, n) on the host's intra-op pool. Exceptions thrown by body are rethrown
  // here (the first one wins).
  template <class F>
  void parallel_for(size_t n, size_t grain, F&& body) const {
    const oph_host_services* s = c_->services;
    struct Job {
      F* body;
      std::exception_ptr error;
      std::atomic_flag failed = ATOMIC_FLAG_INIT;
    };
    Job job{&body, nullptr};
    auto thunk = [](void* user, size_t b, size_t e) {
      Job* j = static_cast<Job*>(user);
      try {
        (*j->body)(b, e);
      } catch (...) {
        if (!j->failed.test_and_set()) j->error = std::current_exception();
      }
    };
    if (s && s->parallel_for && n > grain) s->parallel_for(s->host, n, grain ? grain : 1, thunk, &job);
    else if (n > 0) thunk(&job, 0, n);
    if (job.error) std::rethrow_exception(job.error);
  }

  const Attrs& attrs() const noexcept { return attrs_; }
  template <class T>
  T attr(std::string_view name) const { return attrs_.get<T>(name); }
  void* stream() const noexcept { return c_->stream; }
  oph_device device() const noexcept { return c_->device; }
  const oph_compute_context* raw() const noexcept { return c_; }

 private:
  const oph_compute_context* c_;
  const Attrs& attrs_;
};

// Deep copy of resolved attributes, kept in a kernel's state (valid as long as the state).
class AttrStore {
 public:
  AttrStore() = default;
  AttrStore(const oph_op_def* op, const oph_attr_value* const* values, size_t n) : op_(op) {
    values_.resize(n);
    value_ptrs_.resize(n);
    strings_.resize(n);
    floats_.resize(n);
    ints_.resize(n);
    string_lists_.resize(n);
    string_ptrs_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      const oph_attr_value& v = *values[i];
      oph_attr_value& c = values_[i];
      value_ptrs_[i] = &c;
      c = v;
      c.struct_size = OPH_ATTR_VALUE_STRUCT_SIZE;  // a copy holds exactly the fields this layer knows
      if (v.type == OPH_ATTR_STRING) {
        strings_[i].assign(v.s ? v.s : "", v.count);
        c.s = strings_[i].c_str();
      } else if (v.type == OPH_ATTR_FLOATS) {
        floats_[i].assign(v.floats, v.floats + v.count);
        c.floats = floats_[i].data();
      } else if (v.type == OPH_ATTR_INTS) {
        ints_[i].assign(v.ints, v.ints + v.count);
        c.ints = ints_[i].data();
      } else if (v.type == OPH_ATTR_STRINGS) {
        for (size_t k = 0; k < v.count; ++k) string_lists_[i].emplace_back(v.strings[k]);
        for (auto& s : string_lists_[i]) string_ptrs_[i].push_back(s.c_str());
        c.strings = string_ptrs_[i].data();
      } else if (v.type == OPH_ATTR_TENSOR) {
        c.tensor = nullptr;  // tensors are only valid during create_kernel; kernels copy what they need
      }
    }
  }
  AttrStore(const AttrStore&) = delete;
  AttrStore& operator=(const AttrStore&) = delete;
  Attrs view() const noexcept { return Attrs(op_, value_ptrs_.data(), value_ptrs_.size()); }

 private:
  const oph_op_def* op_ = nullptr;
  std::vector<oph_attr_value> values_;
  std::vector<const oph_attr_value*> value_ptrs_;
  std::vector<std::string> strings_;
  std::vector<std::vector<float>> floats_;
  std::vector<std::vector<int64_t>> ints_;
  std::vector<std::vector<std::string>> string_lists_;
  std::vector<std::vector<const char*>> string_ptrs_;
};

// What a kernel class's constructor receives (borrowed; valid during construction).
class KernelInit {
 public:
  explicit KernelInit(const oph_kernel_create_args* a) : a_(a), attrs_(a->op, a->attrs, a->num_attrs) {}
  const Attrs& attrs() const noexcept { return attrs_; }
  template <class T>
  T attr(std::string_view name) const { return attrs_.get<T>(name); }
  size_t num_inputs() const noexcept { return a_->num_inputs; }
  size_t num_outputs() const noexcept { return a_->num_outputs; }
  const oph_value_info& input(size_t i) const { return *a_->inputs[i]; }
  const oph_value_info& output(size_t i) const { return *a_->outputs[i]; }
  const char* node_name() const noexcept { return a_->node_name ? a_->node_name : ""; }
  oph_device device() const noexcept { return a_->device; }
  const oph_kernel_create_args* raw() const noexcept { return a_; }

 private:
  const oph_kernel_create_args* a_;
  Attrs attrs_;
};

// Base of every kernel state built by this layer.
// What a stateful kernel reports through oph_op_def.kernel_impl (ABI 1.1): define
//   oph::Implementation implementation();
// in the kernel class (called outside compute; empty name = not known yet).
struct Implementation {
  std::string name;        // e.g. "oneDNN jit_dw:avx2"
  bool reference = false;  // a reference/fallback implementation (slow)
};

class KernelBase {
 public:
  KernelBase(const oph_op_def* op, const oph_kernel_create_args* a) : store_(op, a->attrs, a->num_attrs) {}
  virtual ~KernelBase() = default;
  virtual void compute(KernelContext& ctx) = 0;
  // Unknown unless the kernel class defines implementation().
  virtual Implementation implementation() { return {}; }
  Attrs attrs() const noexcept { return store_.view(); }
  // Keeps the last implementation name alive for the C caller (oph_op_def.kernel_impl's lifetime rule).
  std::string impl_name_;

 private:
  AttrStore store_;
};

// ---------------------------------------------------------------------------------------------------------
// Signature-driven functions: In<T>..., Out<T>..., then attribute parameters in declaration order.
// An optional first parameter `const KernelContext&` gives access to parallel_for and the stream.
// ---------------------------------------------------------------------------------------------------------

namespace detail {
template <class T> struct is_in : std::false_type {};
template <class T> struct is_in<In<T>> : std::true_type {};
template <class T> struct is_out : std::false_type {};
template <class T> struct is_out<Out<T>> : std::true_type {};
template <class T> struct is_ctx : std::is_same<std::remove_cvref_t<T>, KernelContext> {};

template <class F> struct fn_traits;
template <class R, class... A> struct fn_traits<R (*)(A...)> {
  using args = std::tuple<std::remove_cvref_t<A>...>;
  using raw_args = std::tuple<A...>;
};

template <class A>
constexpr int kind_of() {  // 0 ctx, 1 in, 2 out, 3 attr
  if constexpr (is_ctx<A>::value) return 0;
  else if constexpr (is_in<std::remove_cvref_t<A>>::value) return 1;
  else if constexpr (is_out<std::remove_cvref_t<A>>::value) return 2;
  else return 3;
}
}  // namespace detail

// ---------------------------------------------------------------------------------------------------------
// Op and pack builders
// ---------------------------------------------------------------------------------------------------------

class Pack;

// Owns every C structure of one op (stable addresses; valid until the pack is destroyed).
class OpBuilder {
 public:
  using ComputeFn = std::function<void(KernelContext&)>;
  using Factory = std::function<std::unique_ptr<KernelBase>(const oph_op_def*, const oph_kernel_create_args*)>;

  OpBuilder(std::string domain, std::string name) {
    def_.struct_size = OPH_OP_DEF_STRUCT_SIZE;
    def_.domain = keep(std::move(domain));
    def_.name = keep(std::move(name));
    def_.since_version = 1;
    def_.end_version = OPH_OPSET_MAX;
    def_.device = keep("cpu");
    def_.user_data = this;
    def_.infer = &infer_thunk;
    def_.create_kernel = &create_thunk;
    def_.destroy_kernel = &destroy_thunk;
    def_.kernel_impl = &impl_thunk;
    def_.compute = &compute_thunk;
  }
  OpBuilder(const OpBuilder&) = delete;
  OpBuilder& operator=(const OpBuilder&) = delete;

  OpBuilder& since(int32_t v) { def_.since_version = v; return *this; }
  OpBuilder& until(int32_t v) { def_.end_version = v; return *this; }
  OpBuilder& versions(int32_t since_v, int32_t end_v) { return since(since_v).until(end_v); }
  OpBuilder& device(std::string d) { def_.device = keep(std::move(d)); return *this; }
  OpBuilder& doc(std::string d) { def_.doc = keep(std::move(d)); return *this; }
  OpBuilder& flags(uint64_t f) { def_.flags |= f; return *this; }

  OpBuilder& input(std::string name, std::string type_var, int32_t arity = OPH_ARITY_SINGLE,
                   int32_t memory = OPH_MEMORY_DEVICE, int32_t min_arity = 1) {
    inputs_.push_back(io(std::move(name), std::move(type_var), arity, memory, min_arity));
    return *this;
  }
  OpBuilder& optional_input(std::string name, std::string type_var, int32_t memory = OPH_MEMORY_DEVICE) {
    return input(std::move(name), std::move(type_var), OPH_ARITY_OPTIONAL, memory);
  }
  OpBuilder& output(std::string name, std::string type_var, int32_t arity = OPH_ARITY_SINGLE) {
    outputs_.push_back(io(std::move(name), std::move(type_var), arity, OPH_MEMORY_DEVICE, 1));
    return *this;
  }
  // Renames the formal inputs/outputs (e.g. after fn<>() derived them).
  OpBuilder& input_names(std::initializer_list<const char*> names) { rename(inputs_, names); return *this; }
  OpBuilder& output_names(std::initializer_list<const char*> names) { rename(outputs_, names); return *this; }

  OpBuilder& types(std::string type_var, std::initializer_list<oph_dtype> allowed) {
    for (auto& tc : constraints_) {
      if (std::string_view(tc.type_var) == type_var) {
        auto& v = constraint_types_.at(&tc - constraints_.data());
        for (oph_dtype d : allowed)
          if (std::find(v.begin(), v.end(), d) == v.end()) v.push_back(d);
        return *this;
      }
    }
    constraints_.push_back({OPH_TYPE_CONSTRAINT_STRUCT_SIZE, keep(std::move(type_var)), nullptr, 0});
    constraint_types_.emplace_back(allowed);
    return *this;
  }

  template <class T>
  OpBuilder& attr(std::string name, T default_value) {
    using V = std::conditional_t<std::is_floating_point_v<T>, float,
              std::conditional_t<std::is_integral_v<T>, int64_t,
              std::conditional_t<std::is_convertible_v<T, std::string> && !std::is_same_v<T, std::vector<int64_t>>
                                 && !std::is_same_v<T, std::vector<float>>, std::string, T>>>;
    return attr_impl<V>(std::move(name), V(default_value), false);
  }
  OpBuilder& attr(std::string name, std::initializer_list<int64_t> default_value) {
    return attr_impl<std::vector<int64_t>>(std::move(name), std::vector<int64_t>(default_value), false);
  }
  // Required attribute of type OPH_ATTR_*.
  OpBuilder& required_attr(std::string name, int32_t type) { return schema_attr(std::move(name), type, true); }
  // Optional attribute without default (the kernel sees OPH_ATTR_UNDEFINED when absent).
  OpBuilder& optional_attr(std::string name, int32_t type) { return schema_attr(std::move(name), type, false); }

  OpBuilder& alias(int32_t input, int32_t output, int32_t kind) {
    aliases_.push_back({OPH_ALIAS_DEF_STRUCT_SIZE, input, output, kind});
    return *this;
  }
  OpBuilder& may_inplace(int32_t input = 0, int32_t output = 0) {
    return alias(input, output, OPH_ALIAS_MAY_INPLACE);
  }

  OpBuilder& infer(InferFn f) { infer_ = std::move(f); return *this; }

  // Stateless compute; attributes are available through ctx.attr<T>(name).
  OpBuilder& compute(ComputeFn f) {
    factory_ = [f = std::move(f)](const oph_op_def* op, const oph_kernel_create_args* a) {
      struct K final : KernelBase {
        K(const oph_op_def* op, const oph_kernel_create_args* a, const ComputeFn& f) : KernelBase(op, a), f_(f) {}
        void compute(KernelContext& ctx) override { f_(ctx); }
        ComputeFn f_;
      };
      return std::unique_ptr<KernelBase>(std::make_unique<K>(op, a, f));
    };
    return *this;
  }

  // Stateful kernel: K(const KernelInit&) built once per node, then K::compute(KernelContext&).
  template <class K>
  OpBuilder& kernel() {
    factory_ = [](const oph_op_def* op, const oph_kernel_create_args* a) {
      struct Holder final : KernelBase {
        Holder(const oph_op_def* op, const oph_kernel_create_args* a) : KernelBase(op, a), k(KernelInit(a)) {}
        void compute(KernelContext& ctx) override { k.compute(ctx); }
        Implementation implementation() override {
          if constexpr (requires { { k.implementation() } -> std::convertible_to<Implementation>; })
            return k.implementation();
          else
            return {};
        }
        K k;
      };
      return std::unique_ptr<KernelBase>(std::make_unique<Holder>(op, a));
    };
    return *this;
  }

  // Signature-driven op: inputs from In<T> parameters, outputs from Out<T> parameters (type variables T0, T1,
  // ... one per distinct element type), attribute parameters bound to attr() declarations in order.
  template <auto Fn>
  OpBuilder& fn() {
    using Args = typename detail::fn_traits<decltype(Fn)>::args;
    derive_signature<Args>(std::make_index_sequence<std::tuple_size_v<Args>>{});
    compute([](KernelContext& ctx) { invoke<Fn, Args>(ctx, std::make_index_sequence<std::tuple_size_v<Args>>{}); });
    return *this;
  }

  const oph_op_def* finish() {
    if (!infer_) throw Error(OPH_CODE_FAILED_PRECONDITION, op_id() + ": no infer() given");
    if (!factory_) throw Error(OPH_CODE_FAILED_PRECONDITION, op_id() + ": no compute given (fn, compute or kernel)");
    for (size_t i = 0; i < constraints_.size(); ++i) {
      constraints_[i].allowed = constraint_types_[i].data();
      constraints_[i].num_allowed = constraint_types_[i].size();
    }
    for (size_t i = 0; i < attrs_.size(); ++i) {
      attr_default_fix(i);
      attrs_[i].default_value = defaults_[i].value.type == OPH_ATTR_UNDEFINED ? nullptr : &defaults_[i].value;
    }
    def_.inputs = pointers(inputs_, input_ptrs_);
    def_.num_inputs = inputs_.size();
    def_.outputs = pointers(outputs_, output_ptrs_);
    def_.num_outputs = outputs_.size();
    def_.type_constraints = pointers(constraints_, constraint_ptrs_);
    def_.num_type_constraints = constraints_.size();
    def_.attributes = pointers(attrs_, attr_ptrs_);
    def_.num_attributes = attrs_.size();
    def_.aliases = pointers(aliases_, alias_ptrs_);
    def_.num_aliases = aliases_.size();
    return &def_;
  }

  std::string op_id() const { return std::string(def_.domain) + "::" + def_.name; }

 private:
  const char* keep(std::string s) { return strings_.emplace_back(std::move(s)).c_str(); }

  // The C view of `structs`: an array of pointers to its elements (NULL when empty), kept in `ptrs`.
  template <class T>
  static const T* const* pointers(const std::vector<T>& structs, std::vector<const T*>& ptrs) {
    ptrs.clear();
    for (const T& s : structs) ptrs.push_back(&s);
    return ptrs.empty() ? nullptr : ptrs.data();
  }

  oph_io_def io(std::string name, std::string type_var, int32_t arity, int32_t memory, int32_t min_arity) {
    return {OPH_IO_DEF_STRUCT_SIZE, keep(std::move(name)), keep(std::move(type_var)), arity, min_arity, memory};
  }
  void rename(std::vector<oph_io_def>& v, std::initializer_list<const char*> names) {
    if (names.size() != v.size())
      throw Error(OPH_CODE_INVALID_ARGUMENT, op_id() + ": " + std::to_string(names.size()) +
                                                 " names for " + std::to_string(v.size()) + " values");
    size_t i = 0;
    for (const char* n : names) v[i++].name = keep(n);
  }

  template <class V>
  OpBuilder& attr_impl(std::string name, V value, bool required) {
    oph_attr_def d{};
    d.struct_size = OPH_ATTR_DEF_STRUCT_SIZE;
    d.name = keep(std::move(name));
    d.type = attr_traits<V>::type;
    d.required = required;
    attrs_.push_back(d);
    auto& store = defaults_.emplace_back();
    store.value.struct_size = OPH_ATTR_VALUE_STRUCT_SIZE;
    store.value.type = d.type;
    if constexpr (std::is_same_v<V, float>) store.value.f = value;
    else if constexpr (std::is_same_v<V, int64_t>) store.value.i = value;
    else if constexpr (std::is_same_v<V, std::string>) store.s = std::move(value);
    else if constexpr (std::is_same_v<V, std::vector<float>>) store.floats = std::move(value);
    else if constexpr (std::is_same_v<V, std::vector<int64_t>>) store.ints = std::move(value);
    else store.strings = std::move(value);
    return *this;
  }
  OpBuilder& schema_attr(std::string name, int32_t type, bool required) {
    oph_attr_def d{};
    d.struct_size = OPH_ATTR_DEF_STRUCT_SIZE;
    d.name = keep(std::move(name));
    d.type = type;
    d.required = required;
    attrs_.push_back(d);
    defaults_.emplace_back().value.struct_size = OPH_ATTR_VALUE_STRUCT_SIZE;  // type UNDEFINED: no default
    return *this;
  }
  // Points the default value of attribute i at its stored payload.
  void attr_default_fix(size_t i) {
    DefaultStore& s = defaults_[i];
    oph_attr_value& v = s.value;
    switch (v.type) {
      case OPH_ATTR_STRING: v.s = s.s.c_str(); v.count = s.s.size(); break;
      case OPH_ATTR_FLOATS: v.floats = s.floats.data(); v.count = s.floats.size(); break;
      case OPH_ATTR_INTS: v.ints = s.ints.data(); v.count = s.ints.size(); break;
      case OPH_ATTR_STRINGS:
        s.string_ptrs.clear();
        for (auto& str : s.strings) s.string_ptrs.push_back(str.c_str());
        v.strings = s.string_ptrs.data();
        v.count = s.strings.size();
        break;
      default: break;
    }
  }

  std::string type_var_for(oph_dtype d) {
    for (size_t i = 0; i < constraint_types_.size(); ++i)
      if (constraint_types_[i].size() == 1 && constraint_types_[i][0] == d) return constraints_[i].type_var;
    std::string var = constraints_.empty() ? "T" : "T" + std::to_string(constraints_.size());
    types(var, {d});
    return var;
  }

  template <class Args, size_t... I>
  void derive_signature(std::index_sequence<I...>) {
    size_t attr_index = 0;
    (derive_one<std::tuple_element_t<I, Args>>(attr_index), ...);
    if (attr_index != attrs_.size())
      throw Error(OPH_CODE_INVALID_ARGUMENT, op_id() + ": the function takes " + std::to_string(attr_index) +
                                                 " attribute parameters but " + std::to_string(attrs_.size()) +
                                                 " attributes are declared");
  }
  template <class A>
  void derive_one(size_t& attr_index) {
    constexpr int k = detail::kind_of<A>();
    if constexpr (k == 1) {
      input("input_" + std::to_string(inputs_.size()), type_var_for(dtype_v<typename A::value_type>));
    } else if constexpr (k == 2) {
      output("output_" + std::to_string(outputs_.size()), type_var_for(dtype_v<typename A::value_type>));
    } else if constexpr (k == 3) {
      if (attr_index >= attrs_.size() || attrs_[attr_index].type != attr_traits<A>::type)
        throw Error(OPH_CODE_INVALID_ARGUMENT,
                    op_id() + ": attribute parameter " + std::to_string(attr_index) +
                        " of the function does not match the attr() declarations (declare attr() before fn<>())");
      ++attr_index;
    }
  }

  template <auto Fn, class Args, size_t... I>
  static void invoke(KernelContext& ctx, std::index_sequence<I...>) {
    size_t in = 0, out = 0, at = 0;
    // Braced init guarantees left-to-right evaluation.
    std::tuple<std::tuple_element_t<I, Args>...> values{fetch<std::tuple_element_t<I, Args>>(ctx, in, out, at)...};
    std::apply([](auto&... a) { Fn(a...); }, values);
  }
  template <class A>
  static decltype(auto) fetch(KernelContext& ctx, size_t& in, size_t& out, size_t& at) {
    constexpr int k = detail::kind_of<A>();
    if constexpr (k == 0) return std::ref(ctx).get();
    else if constexpr (k == 1) return ctx.input<typename A::value_type>(in++);
    else if constexpr (k == 2) return ctx.output<typename A::value_type>(out++);
    else return Attrs::convert<A>(ctx.attrs().value(at++), "parameter");
  }

  static oph_status* infer_thunk(const oph_infer_context* c) {
    return guarded("infer", [c] {
      InferContext ctx(c);
      static_cast<OpBuilder*>(c->op->user_data)->infer_(ctx);
    });
  }
  static oph_status* create_thunk(const oph_kernel_create_args* a, void** out_state) {
    return guarded("create_kernel", [a, out_state] {
      auto* self = static_cast<OpBuilder*>(a->op->user_data);
      *out_state = self->factory_(a->op, a).release();  // owned by the host until destroy_kernel
    });
  }
  static void destroy_thunk(void* state) { std::unique_ptr<KernelBase> owned(static_cast<KernelBase*>(state)); }
  static const char* impl_thunk(void* state, bool* is_reference) noexcept {
    try {
      auto* k = static_cast<KernelBase*>(state);
      if (k == nullptr) return nullptr;
      Implementation impl = k->implementation();
      if (impl.name.empty()) return nullptr;
      if (is_reference) *is_reference = impl.reference;
      k->impl_name_ = std::move(impl.name);
      return k->impl_name_.c_str();
    } catch (...) {
      return nullptr;
    }
  }
  static oph_status* compute_thunk(void* state, const oph_compute_context* c) {
    return guarded("compute", [state, c] {
      auto* k = static_cast<KernelBase*>(state);
      Attrs attrs = k->attrs();
      KernelContext ctx(c, attrs);
      k->compute(ctx);
    });
  }

  struct DefaultStore {
    oph_attr_value value{};
    std::string s;
    std::vector<float> floats;
    std::vector<int64_t> ints;
    std::vector<std::string> strings;
    std::vector<const char*> string_ptrs;
  };

  oph_op_def def_{};
  std::deque<std::string> strings_;
  std::vector<oph_io_def> inputs_, outputs_;
  std::vector<oph_type_constraint> constraints_;
  std::vector<std::vector<oph_dtype>> constraint_types_;
  std::vector<oph_attr_def> attrs_;
  std::deque<DefaultStore> defaults_;
  std::vector<oph_alias_def> aliases_;
  std::vector<const oph_io_def*> input_ptrs_, output_ptrs_;
  std::vector<const oph_type_constraint*> constraint_ptrs_;
  std::vector<const oph_attr_def*> attr_ptrs_;
  std::vector<const oph_alias_def*> alias_ptrs_;
  InferFn infer_;
  Factory factory_;
};

// An operator pack under construction; OPH_PACK gives you one named `pack`.
class Pack {
 public:
  Pack(std::string name, std::string version) : name_(std::move(name)), version_(std::move(version)) {}

  OpBuilder& op(std::string domain, std::string name) {
    return *ops_.emplace_back(std::make_unique<OpBuilder>(std::move(domain), std::move(name)));
  }

  // Entry implementation used by OPH_PACK.
  static oph_status* entry(const oph_host_info* host, const oph_plugin_info** out_info, const char* name,
                           const char* version, void (*define)(Pack&)) noexcept {
    oph_status* refused = nullptr;
    if (!oph_entry_check(host, out_info, name, &refused)) return refused;
    detail::services_slot() = host->services;
    return guarded("plugin entry", [&] {
      // One library image can be handed to several hosts (several Runtimes in one process share the dlopen
      // handle): they share one Pack, destroyed when the last of them releases it.
      std::lock_guard<std::mutex> lock(instance_mutex());
      Pack*& slot = instance();
      if (!slot) {
        auto pack = std::make_unique<Pack>(name, version);
        define(*pack);
        pack->finish();
        slot = pack.release();  // owned through the slot until the last release
      }
      ++references();
      *out_info = &slot->info_;
    });
  }

 private:
  // A plain pointer, not a static unique_ptr: statics of the library are destroyed at exit, possibly before a
  // host releases the pack, and a trivially destructible slot cannot be destroyed twice.
  static Pack*& instance() {
    static Pack* pack = nullptr;
    return pack;
  }
  static size_t& references() {
    static size_t refs = 0;
    return refs;
  }
  static std::mutex& instance_mutex() {
    static std::mutex m;
    return m;
  }
  static void release(void*) {
    std::lock_guard<std::mutex> lock(instance_mutex());
    if (references() > 0 && --references() == 0) {
      std::unique_ptr<Pack> owned(instance());
      instance() = nullptr;
    }
  }

  void finish() {
    for (auto& op : ops_) op_ptrs_.push_back(op->finish());
    info_.struct_size = OPH_PLUGIN_INFO_STRUCT_SIZE;
    info_.abi_major = OPH_ABI_MAJOR;
    info_.minor_built = OPH_ABI_MINOR;
    info_.minor_required = 0;
    info_.name = name_.c_str();
    info_.version = version_.c_str();
    info_.kind = OPH_PLUGIN_KIND_OPERATOR_PACK;
    info_.ops = op_ptrs_.data();
    info_.num_ops = op_ptrs_.size();
    info_.devices = nullptr;
    info_.num_devices = 0;
    info_.plugin_state = nullptr;
    info_.release = &release;
  }

  std::string name_, version_;
  std::vector<std::unique_ptr<OpBuilder>> ops_;
  std::vector<const oph_op_def*> op_ptrs_;
  oph_plugin_info info_{};
};

}  // namespace ophost::sdk

// Defines the pack's entry symbol and the body that declares its ops, with a `Pack& pack` in scope:
//   OPH_PACK(pack) { pack.op("myops", "relu6_scale")...; }
// The pack's name and version come from OPH_PLUGIN_NAME and OPH_PLUGIN_VERSION, which ophost_add_plugin()
// defines (they must equal the manifest's).
#define OPH_PACK(pack_var)                                                                                 \
  static void oph_pack_define_(::ophost::sdk::Pack& pack_var);                                             \
  static oph_status* oph_pack_entry_(const oph_host_info* host, const oph_plugin_info** out_info) {        \
    return ::ophost::sdk::Pack::entry(host, out_info, OPH_PLUGIN_NAME, OPH_PLUGIN_VERSION, &oph_pack_define_); \
  }                                                                                                        \
  OPH_DEFINE_PLUGIN_ENTRY(oph_pack_entry_)                                                                 \
  static void oph_pack_define_(::ophost::sdk::Pack& pack_var)
