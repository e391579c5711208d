// onnx-core: unary elementwise ops: Identity, Relu, Sigmoid, Tanh, Exp, Log, Sqrt, Neg, Abs, LeakyRelu, Clip.
#include "common.hpp"
#include "simd_math.hpp"

#include <cmath>
#include <limits>

namespace onnx_core {
namespace {

template <class T>
T wrap_neg(T x) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(std::make_unsigned_t<T>(0) - static_cast<std::make_unsigned_t<T>>(x));
  else
    return -x;
}

struct ReluOp {
  template <class T> T operator()(T x) const { return x < T(0) ? T(0) : x; }
};
// Ops with a vectorised float32 loop name it as kSimd (simd_math.hpp); other dtypes use operator().
struct SigmoidOp {
  static constexpr auto kSimd = &simd_math::sigmoid;
  template <class T> T operator()(T x) const {
    // Split by sign so exp never overflows.
    if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
    T e = std::exp(x);
    return e / (T(1) + e);
  }
};
struct TanhOp {
  static constexpr auto kSimd = &simd_math::tanh;
  template <class T> T operator()(T x) const { return std::tanh(x); }
};
struct ExpOp {
  static constexpr auto kSimd = &simd_math::exp;
  template <class T> T operator()(T x) const { return std::exp(x); }
};
struct LogOp {
  static constexpr auto kSimd = &simd_math::log;
  template <class T> T operator()(T x) const { return std::log(x); }
};
struct SqrtOp {
  template <class T> T operator()(T x) const { return std::sqrt(x); }
};
struct NegOp {
  template <class T> T operator()(T x) const { return wrap_neg(x); }
};
struct AbsOp {
  template <class T> T operator()(T x) const { return x < T(0) ? wrap_neg(x) : x; }
};

template <class Op>
void unary_compute(const oph::KernelContext& ctx, const std::string& op, bool float_only) {
  oph::TensorRef x = input(ctx, 0, op);
  oph::TensorRef y = ensure_output(ctx, 0, x.shape(), op);
  if (!y.present()) return;
  if constexpr (requires { Op::kSimd; }) {
    if (x.dtype() == f32) {
      unary_apply_f32(x, y, Op::kSimd);
      return;
    }
  }
  auto run = [&]<class T>(std::type_identity<T>) {
    unary_apply(static_cast<const T*>(x.data()), static_cast<T*>(y.data()), x.size(), Op{});
  };
  if (float_only) dispatch_float(x.dtype(), op, run);
  else dispatch_numeric(x.dtype(), op, run);
}

template <class Op>
void register_unary_op(oph::Pack& pack, const char* name, int32_t since, int32_t until,
                       const std::vector<oph_dtype>& types, const char* doc) {
  std::string op = name;
  bool float_only = true;
  for (oph_dtype d : types)
    if (d.code != OPH_DTYPE_FLOAT) float_only = false;
  oph::OpBuilder& b = pack.op(kDomain, name)
                          .versions(since, until)
                          .doc(doc)
                          .input("X", "T")
                          .output("Y", "T")
                          .infer(oph::same_as_input(0))
                          .compute([op, float_only](oph::KernelContext& ctx) { unary_compute<Op>(ctx, op, float_only); })
                          .may_inplace(0, 0);
  add_types(b, "T", types);
}

// ----- Identity -----
void identity_compute(const oph::KernelContext& ctx) {
  oph::TensorRef x = input(ctx, 0, "Identity");
  oph::TensorRef y = ensure_output(ctx, 0, x.shape(), "Identity");
  if (!y.present()) return;
  copy_bytes(y.data(), x.data(), x.size() * elem_size(x.dtype()));
}

// ----- LeakyRelu -----
struct LeakyReluKernel {
  float alpha;
  explicit LeakyReluKernel(const oph::KernelInit& init) : alpha(init.attr<float>("alpha")) {
    if (!std::isfinite(alpha)) fail("LeakyRelu: alpha must be finite");
  }
  void compute(oph::KernelContext& ctx) {
    oph::TensorRef x = input(ctx, 0, "LeakyRelu");
    oph::TensorRef y = ensure_output(ctx, 0, x.shape(), "LeakyRelu");
    if (!y.present()) return;
    dispatch_float(x.dtype(), "LeakyRelu", [&]<class T>(std::type_identity<T>) {
      const T a = static_cast<T>(alpha);
      unary_apply(static_cast<const T*>(x.data()), static_cast<T*>(y.data()), x.size(),
                  [a](T v) { return v < T(0) ? v * a : v; });
    });
  }
};

// ----- Clip -----
template <class T>
void clip_run(const oph::TensorRef& x, const oph::TensorRef& y, T lo, T hi) {
  unary_apply(static_cast<const T*>(x.data()), static_cast<T*>(y.data()), x.size(),
              [lo, hi](T v) { return std::min(std::max(v, lo), hi); });
}

// Opset 6-10: bounds are float attributes.
struct Clip6Kernel {
  float lo, hi;
  explicit Clip6Kernel(const oph::KernelInit& init) : lo(init.attr<float>("min")), hi(init.attr<float>("max")) {
    if (std::isnan(lo) || std::isnan(hi)) fail("Clip: min and max must not be NaN");
  }
  void compute(oph::KernelContext& ctx) {
    oph::TensorRef x = input(ctx, 0, "Clip");
    oph::TensorRef y = ensure_output(ctx, 0, x.shape(), "Clip");
    if (!y.present()) return;
    dispatch_float(x.dtype(), "Clip", [&]<class T>(std::type_identity<T>) {
      clip_run<T>(x, y, static_cast<T>(lo), static_cast<T>(hi));
    });
  }
};

// Opset 11+: bounds are optional scalar inputs in host memory; absent means the dtype's range.
void clip11_compute(const oph::KernelContext& ctx) {
  oph::TensorRef x = input(ctx, 0, "Clip");
  oph::TensorRef y = ensure_output(ctx, 0, x.shape(), "Clip");
  if (!y.present()) return;
  dispatch_numeric_all(x.dtype(), "Clip", [&]<class T>(std::type_identity<T>) {
    T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
    auto bound = [&](size_t i, T& v, const char* what) {
      oph::TensorRef r = ctx.input(i);
      if (!r.present()) return;
      if (r.dtype() != x.dtype()) fail(std::string("Clip: ") + what + " must have the dtype of the input");
      if (r.size() != 1) fail(std::string("Clip: ") + what + " must be a scalar, got shape " + shape_str(r.shape()));
      v = *static_cast<const T*>(r.data());
    };
    bound(1, lo, "min");
    bound(2, hi, "max");
    clip_run<T>(x, y, lo, hi);
  });
}

void clip11_infer(oph::InferContext& c) {
  for (size_t i = 1; i < 3; ++i) {
    if (!c.has_input(i)) continue;
    if (c.input_dtype(i) != c.input_dtype(0)) fail("Clip: min and max must have the dtype of the input");
    if (c.input_rank_known(i) && product_or_unknown(c.input_shape(i)) > 1)
      fail("Clip: " + std::string(i == 1 ? "min" : "max") + " must be a scalar, got shape " +
           shape_str(c.input_shape(i)));
  }
  oph::same_as_input(0)(c);
}

void register_clip11(oph::Pack& pack, int32_t since, int32_t until, const std::vector<oph_dtype>& types) {
  oph::OpBuilder& b = pack.op(kDomain, "Clip")
                          .versions(since, until)
                          .doc("Y = min(max(X, min), max); min/max optional scalar inputs")
                          .input("input", "T")
                          .optional_input("min", "T", OPH_MEMORY_HOST)
                          .optional_input("max", "T", OPH_MEMORY_HOST)
                          .output("output", "T")
                          .infer(clip11_infer)
                          .compute(clip11_compute)
                          .may_inplace(0, 0);
  add_types(b, "T", types);
}

}  // namespace

void register_unary(oph::Pack& pack) {
  // Identity: the tensor semantics are the same in every version (13+ only add types/sequence/optional
  // values, which this host does not have).
  {
    oph::OpBuilder& b = pack.op(kDomain, "Identity")
                            .versions(1, OPH_OPSET_MAX)
                            .doc("Y = X")
                            .input("input", "T")
                            .output("output", "T")
                            .infer(oph::same_as_input(0))
                            .compute(identity_compute)
                            .may_inplace(0, 0);
    add_types(b, "T", kAll);
  }
  // Opset 1 versions carry the legacy consumed_inputs attribute: not claimed.
  register_unary_op<ReluOp>(pack, "Relu", 6, 13, kFloat, "Y = max(X, 0)");
  register_unary_op<ReluOp>(pack, "Relu", 14, OPH_OPSET_MAX, kNumeric, "Y = max(X, 0)");
  register_unary_op<SigmoidOp>(pack, "Sigmoid", 6, OPH_OPSET_MAX, kFloat, "Y = 1 / (1 + exp(-X))");
  register_unary_op<TanhOp>(pack, "Tanh", 6, OPH_OPSET_MAX, kFloat, "Y = tanh(X)");
  register_unary_op<ExpOp>(pack, "Exp", 6, OPH_OPSET_MAX, kFloat, "Y = exp(X)");
  register_unary_op<LogOp>(pack, "Log", 6, OPH_OPSET_MAX, kFloat, "Y = log(X)");
  register_unary_op<SqrtOp>(pack, "Sqrt", 6, OPH_OPSET_MAX, kFloat, "Y = sqrt(X)");
  register_unary_op<NegOp>(pack, "Neg", 6, OPH_OPSET_MAX, kNumeric, "Y = -X");
  register_unary_op<AbsOp>(pack, "Abs", 6, OPH_OPSET_MAX, kNumeric, "Y = |X|");

  {
    oph::OpBuilder& b = pack.op(kDomain, "LeakyRelu")
                            .versions(6, OPH_OPSET_MAX)
                            .doc("Y = X < 0 ? alpha * X : X")
                            .attr("alpha", 0.01f)
                            .input("X", "T")
                            .output("Y", "T")
                            .infer(oph::same_as_input(0))
                            .kernel<LeakyReluKernel>()
                            .may_inplace(0, 0);
    add_types(b, "T", kFloat);
  }
  {
    oph::OpBuilder& b = pack.op(kDomain, "Clip")
                            .versions(6, 10)
                            .doc("Y = min(max(X, min), max); min/max attributes")
                            .attr("min", std::numeric_limits<float>::lowest())
                            .attr("max", std::numeric_limits<float>::max())
                            .input("input", "T")
                            .output("output", "T")
                            .infer(oph::same_as_input(0))
                            .kernel<Clip6Kernel>()
                            .may_inplace(0, 0);
    add_types(b, "T", kFloat);
  }
  register_clip11(pack, 11, 11, kFloat);
  register_clip11(pack, 12, OPH_OPSET_MAX, kNumericAll);  // 12 added the integer types
}

static const Family kFamily("unary", &register_unary);

}  // namespace onnx_core
