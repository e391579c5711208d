// ophost plugin SDK, C++ layer: compute (KernelContext), kernel construction and state (KernelInit, KernelBase).
// One part of <ophost/ophost_plugin.hpp>, which includes every part in order; include that one.
#pragma once

#include <ophost/sdk/infer.hpp>

namespace ophost::sdk {

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

// Whether every attribute parameter (each one that is not the context, In<T> or Out<T>) has an attribute type.
template <class Args>
struct attr_params_ok;
template <class... A>
struct attr_params_ok<std::tuple<A...>> : std::bool_constant<((kind_of<A>() != 3 || is_attr_type_v<A>) && ...)> {};
}  // namespace detail

}  // namespace ophost::sdk
