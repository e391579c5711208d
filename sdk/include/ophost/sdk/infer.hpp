// ophost plugin SDK, C++ layer: shape inference (InferContext) and the infer helpers.
// One part of <ophost/ophost_plugin.hpp>, which includes every part in order; include that one.
#pragma once

#include <ophost/sdk/attrs.hpp>

namespace ophost::sdk {

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

}  // namespace ophost::sdk
