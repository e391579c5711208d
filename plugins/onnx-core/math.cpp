// onnx-core: elementwise math: rounding and trigonometric functions, Celu, Mish, Gelu, PRelu, Sign, variadic Min/Max/Sum/Mean
// (broadcasting), Mod and BitShift.
#include "common.hpp"
#include "simd_math.hpp"

#include <cmath>
#include <limits>

namespace onnx_core {
namespace {

// kNumericAll plus float16 (dispatched as Half).
const std::vector<oph_dtype> kAllNumeric = {f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64};

// ----- unary with attributes -----

// fn(x, attrs...) over float types; `attrs` are read once per compute into a small array. `simd`, when given,
// computes float32 tensors instead (a vectorised loop of simd_math.hpp).
using Params = std::vector<float>;
using SimdFn = void (*)(const float*, float*, size_t);

template <class Fn>
void register_float_unary(oph::Pack& pack, const char* name, int32_t since, int32_t until, const char* doc,
                          std::vector<std::pair<const char*, float>> attrs, Fn fn,
                          const std::vector<oph_dtype>& types = kFloat, SimdFn simd = nullptr) {
  std::string op = name;
  std::vector<std::string> names;
  for (auto& a : attrs) names.push_back(a.first);
  oph::OpBuilder& b = pack.op(kDomain, name).versions(since, until).doc(doc).input("X", "T").output("Y", "T");
  for (auto& a : attrs) b.attr(a.first, a.second);
  b.infer(oph::same_as_input(0))
      .compute([op, names, fn, simd](oph::KernelContext& ctx) {
        oph::TensorRef x = input(ctx, 0, op);
        oph::TensorRef y = ensure_output(ctx, 0, x.shape(), op);
        if (!y.present()) return;
        if (simd && x.dtype() == f32) {
          unary_apply_f32(x, y, simd);
          return;
        }
        Params p;
        for (const auto& n : names) p.push_back(ctx.attr<float>(n));
        dispatch_float(x.dtype(), op, [&]<class T>(std::type_identity<T>) {
          const T* X = static_cast<const T*>(x.data());
          T* Y = static_cast<T*>(y.data());
          const float* pp = p.data();
          parallel_for(x.size(), kGrain, [=](size_t lo, size_t hi) {
            for (size_t i = lo; i < hi; ++i) Y[i] = static_cast<T>(fn(static_cast<double>(X[i]), pp));
          });
        });
      })
      .may_inplace(0, 0);
  add_types(b, "T", types);
}

template <class T>
T sign_of(T v) {
  if constexpr (std::is_unsigned_v<T>) return v > 0 ? T(1) : T(0);
  else if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(v)) return v;
    return v > 0 ? T(1) : (v < 0 ? T(-1) : T(0));
  } else return v > 0 ? T(1) : (v < 0 ? T(-1) : T(0));
}

// Gelu's approximate attribute: true for "tanh", false for "none"; anything else fails.
bool gelu_tanh_attr(const std::string& a) {
  if (a != "none" && a != "tanh") fail("Gelu: approximate must be \"none\" or \"tanh\", got \"" + a + "\"");
  return a == "tanh";
}

// Gelu in double: x * Phi(x) with Phi(x) = erfc(-x / sqrt(2)) / 2 (no cancellation for x < 0), or for "tanh"
// x * sigmoid(2u) = 0.5 x (1 + tanh(u)); gelu(-inf) = -0, the limit (the formulas would give -inf * 0).
double gelu_ref(double x, bool tanh_approx) {
  if (std::isinf(x)) return x > 0 ? x : -0.0;
  if (!tanh_approx) return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
  const double u2 = 2 * std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
  return u2 >= 0 ? x / (1 + std::exp(-u2)) : x * std::exp(u2) / (1 + std::exp(u2));
}

// ----- variadic Min/Max/Sum/Mean -----

enum class VarKind { kMin, kMax, kSum, kMean };

template <class T>
T var_combine(VarKind k, T a, T b) {
  if constexpr (std::is_same_v<T, Half>) {
    return Half::of(var_combine<float>(k, static_cast<float>(a), static_cast<float>(b)));
  } else {
    if constexpr (std::is_floating_point_v<T>) {
      if ((k == VarKind::kMin || k == VarKind::kMax) && (std::isnan(a) || std::isnan(b)))
        return std::isnan(a) ? a : b;
    }
    switch (k) {
      case VarKind::kMin: return b < a ? b : a;
      case VarKind::kMax: return b > a ? b : a;
      default: return static_cast<T>(a + b);
    }
  }
}

void variadic_infer(oph::InferContext& c, const std::string& op) {
  for (size_t i = 1; i < c.num_inputs(); ++i)
    if (c.has_input(i) && c.input_dtype(i) != c.input_dtype(0))
      fail(op + ": all inputs must have the same dtype, got " + oph::dtype_name(c.input_dtype(0)) + " and " +
           oph::dtype_name(c.input_dtype(i)));
  oph::broadcast_inputs()(c);
}

void variadic_compute(const oph::KernelContext& ctx, const std::string& op, VarKind kind) {
  const size_t n_in = ctx.num_inputs();
  if (n_in == 0) fail(op + ": needs at least one input");
  std::vector<oph::TensorRef> ins;
  std::vector<int64_t> oshape;
  for (size_t i = 0; i < n_in; ++i) {
    ins.push_back(input(ctx, i, op));
    if (ins[i].dtype() != ins[0].dtype()) fail(op + ": all inputs must have the same dtype");
    oshape = i == 0 ? std::vector<int64_t>(ins[0].shape().begin(), ins[0].shape().end())
                    : oph::broadcast_shapes(oshape, ins[i].shape());
  }
  oph::TensorRef y = ensure_output(ctx, 0, oshape, op);
  if (!y.present() || y.size() == 0) return;
  std::span<const int64_t> os(oshape);
  dispatch_numeric_all<Half>(ins[0].dtype(), op, [&]<class T>(std::type_identity<T>) {
    T* Y = static_cast<T*>(y.data());
    auto data = [&](size_t i) { return static_cast<const T*>(ins[i].data()); };
    if (n_in == 1) {
      binary_apply(data(0), ins[0].shape(), data(0), ins[0].shape(), Y, os, [](T a, T) { return a; });
    } else {
      // The output may share its buffer with an input of the same shape: the first step reads both inputs
      // before writing; later steps read Y element by element before overwriting it.
      binary_apply(data(0), ins[0].shape(), data(1), ins[1].shape(), Y, os,
                   [kind](T a, T b) { return var_combine(kind, a, b); });
      for (size_t i = 2; i < n_in; ++i)
        binary_apply(static_cast<const T*>(Y), os, data(i), ins[i].shape(), Y, os,
                     [kind](T a, T b) { return var_combine(kind, a, b); });
    }
    if (kind == VarKind::kMean) {
      if constexpr (std::is_same_v<T, Half>) {
        for (size_t i = 0; i < y.size(); ++i) Y[i] = Half::of(static_cast<float>(Y[i]) / static_cast<float>(n_in));
      } else {
        for (size_t i = 0; i < y.size(); ++i) Y[i] = static_cast<T>(Y[i] / static_cast<T>(n_in));
      }
    }
  });
}

void register_variadic(oph::Pack& pack, const char* name, VarKind kind, int32_t since, int32_t until,
                       const std::vector<oph_dtype>& types, const char* doc) {
  std::string op = name;
  oph::OpBuilder& b = pack.op(kDomain, name)
                          .versions(since, until)
                          .doc(doc)
                          .input("data_0", "T", OPH_ARITY_VARIADIC, OPH_MEMORY_DEVICE, 1)
                          .output(kind == VarKind::kSum ? "sum" : kind == VarKind::kMean ? "mean"
                                                              : kind == VarKind::kMax   ? "max"
                                                                                        : "min",
                                  "T")
                          .infer([op](oph::InferContext& c) { variadic_infer(c, op); })
                          .compute([op, kind](oph::KernelContext& ctx) { variadic_compute(ctx, op, kind); });
  add_types(b, "T", types);
}

// ----- Mod -----

template <class T>
T mod_one(T a, T b, bool fmod) {
  if constexpr (std::is_same_v<T, Half>) {
    return Half::of(std::fmod(static_cast<float>(a), static_cast<float>(b)));
  } else if constexpr (std::is_floating_point_v<T>) {
    return std::fmod(a, b);
  } else {
    if (b == 0) fail("Mod: integer division by zero");
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return 0;
      T r = static_cast<T>(a % b);
      if (!fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
      return r;
    } else {
      return static_cast<T>(a % b);
    }
  }
}

void mod_compute(const oph::KernelContext& ctx) {
  const std::string op = "Mod";
  oph::TensorRef a = input(ctx, 0, op), b = input(ctx, 1, op);
  if (a.dtype() != b.dtype()) fail(op + ": A and B must have the same dtype");
  const bool fmod = ctx.attr<int64_t>("fmod") != 0;
  if (!fmod && (a.dtype().code == OPH_DTYPE_FLOAT))
    fail(op + ": fmod must be 1 for floating-point inputs (got fmod=0 with " + oph::dtype_name(a.dtype()) + ")");
  std::vector<int64_t> oshape = oph::broadcast_shapes(a.shape(), b.shape());
  oph::TensorRef y = ensure_output(ctx, 0, oshape, op);
  if (!y.present()) return;
  dispatch_numeric_all<Half>(a.dtype(), op, [&]<class T>(std::type_identity<T>) {
    binary_apply(static_cast<const T*>(a.data()), a.shape(), static_cast<const T*>(b.data()), b.shape(),
                 static_cast<T*>(y.data()), std::span<const int64_t>(oshape),
                 [fmod](T x, T z) { return mod_one(x, z, fmod); });
  });
}

// ----- BitShift -----

void bitshift_compute(const oph::KernelContext& ctx) {
  const std::string op = "BitShift";
  oph::TensorRef a = input(ctx, 0, op), b = input(ctx, 1, op);
  std::string dir = ctx.attr<std::string>("direction");
  if (dir != "LEFT" && dir != "RIGHT") fail(op + ": direction must be \"LEFT\" or \"RIGHT\", got \"" + dir + "\"");
  const bool left = dir == "LEFT";
  std::vector<int64_t> oshape = oph::broadcast_shapes(a.shape(), b.shape());
  oph::TensorRef y = ensure_output(ctx, 0, oshape, op);
  if (!y.present()) return;
  auto run = [&]<class T>(std::type_identity<T>) {
    binary_apply(static_cast<const T*>(a.data()), a.shape(), static_cast<const T*>(b.data()), b.shape(),
                 static_cast<T*>(y.data()), std::span<const int64_t>(oshape), [left](T x, T s) -> T {
                   if (s >= sizeof(T) * 8) return T(0);
                   return left ? static_cast<T>(x << s) : static_cast<T>(x >> s);
                 });
  };
  const oph_dtype d = a.dtype();
  if (d == u8) run(std::type_identity<uint8_t>{});
  else if (d == u16) run(std::type_identity<uint16_t>{});
  else if (d == u32) run(std::type_identity<uint32_t>{});
  else if (d == u64) run(std::type_identity<uint64_t>{});
  else fail(op + ": dtype " + oph::dtype_name(d) + " is not supported", OPH_CODE_UNIMPLEMENTED);
}

void same_dtype_broadcast_infer(oph::InferContext& c, const std::string& op) {
  if (c.input_dtype(0) != c.input_dtype(1))
    fail(op + ": inputs must have the same dtype, got " + oph::dtype_name(c.input_dtype(0)) + " and " +
         oph::dtype_name(c.input_dtype(1)));
  oph::broadcast_inputs()(c);
}

// ----- PRelu -----

void prelu_compute(const oph::KernelContext& ctx) {
  const std::string op = "PRelu";
  oph::TensorRef x = input(ctx, 0, op), s = input(ctx, 1, op);
  std::vector<int64_t> oshape = oph::broadcast_shapes(x.shape(), s.shape());
  if (oshape.size() != x.shape().size() || !std::equal(oshape.begin(), oshape.end(), x.shape().begin()))
    fail(op + ": slope " + shape_str(s.shape()) + " is not unidirectionally broadcastable to X " + shape_str(x.shape()));
  oph::TensorRef y = ensure_output(ctx, 0, oshape, op);
  if (!y.present()) return;
  dispatch_numeric_all<Half>(x.dtype(), op, [&]<class T>(std::type_identity<T>) {
    binary_apply(static_cast<const T*>(x.data()), x.shape(), static_cast<const T*>(s.data()), s.shape(),
                 static_cast<T*>(y.data()), std::span<const int64_t>(oshape), [](T v, T sl) -> T {
                   if constexpr (std::is_same_v<T, Half>) {
                     float f = v;
                     return f < 0 ? Half::of(f * static_cast<float>(sl)) : v;
                   } else {
                     return v < T(0) ? static_cast<T>(v * sl) : v;
                   }
                 });
  });
}

template <class Fn>
void register_numeric_unary(oph::Pack& pack, const char* name, int32_t since, const char* doc,
                            const std::vector<oph_dtype>& types, Fn fn) {
  std::string op = name;
  oph::OpBuilder& b = pack.op(kDomain, name)
                          .versions(since, OPH_OPSET_MAX)
                          .doc(doc)
                          .input("input", "T")
                          .output("output", "T")
                          .infer(oph::same_as_input(0))
                          .compute([op, fn](oph::KernelContext& ctx) {
                            oph::TensorRef x = input(ctx, 0, op);
                            oph::TensorRef y = ensure_output(ctx, 0, x.shape(), op);
                            if (!y.present()) return;
                            dispatch_numeric(x.dtype(), op, [&]<class T>(std::type_identity<T>) {
                              unary_apply(static_cast<const T*>(x.data()), static_cast<T*>(y.data()),
                                          x.size(), [fn](T v) { return fn(v); });
                            });
                          })
                          .may_inplace(0, 0);
  add_types(b, "T", types);
}

}  // namespace

void register_math(oph::Pack& pack) {
  using P = const float*;
  // Rounding and elementary functions (float types).
  register_float_unary(pack, "Floor", 6, OPH_OPSET_MAX, "Y = floor(X)", {}, [](double x, P) { return std::floor(x); });
  register_float_unary(pack, "Ceil", 6, OPH_OPSET_MAX, "Y = ceil(X)", {}, [](double x, P) { return std::ceil(x); });
  register_float_unary(pack, "Round", 11, OPH_OPSET_MAX, "Y = round half to even(X)", {},
                       [](double x, P) { return std::nearbyint(x); });
  register_float_unary(pack, "Erf", 9, OPH_OPSET_MAX, "Y = erf(X)", {}, [](double x, P) { return std::erf(x); }, kFloat,
                       &simd_math::erf);
  register_float_unary(pack, "Sin", 7, OPH_OPSET_MAX, "Y = sin(X)", {}, [](double x, P) { return std::sin(x); });
  register_float_unary(pack, "Cos", 7, OPH_OPSET_MAX, "Y = cos(X)", {}, [](double x, P) { return std::cos(x); });
  register_float_unary(pack, "Tan", 7, OPH_OPSET_MAX, "Y = tan(X)", {}, [](double x, P) { return std::tan(x); });
  register_float_unary(pack, "Asin", 7, OPH_OPSET_MAX, "Y = asin(X)", {}, [](double x, P) { return std::asin(x); });
  register_float_unary(pack, "Acos", 7, OPH_OPSET_MAX, "Y = acos(X)", {}, [](double x, P) { return std::acos(x); });
  register_float_unary(pack, "Atan", 7, OPH_OPSET_MAX, "Y = atan(X)", {}, [](double x, P) { return std::atan(x); });
  register_float_unary(pack, "Sinh", 9, OPH_OPSET_MAX, "Y = sinh(X)", {}, [](double x, P) { return std::sinh(x); });
  register_float_unary(pack, "Cosh", 9, OPH_OPSET_MAX, "Y = cosh(X)", {}, [](double x, P) { return std::cosh(x); });
  register_float_unary(pack, "Asinh", 9, OPH_OPSET_MAX, "Y = asinh(X)", {}, [](double x, P) { return std::asinh(x); });
  register_float_unary(pack, "Acosh", 9, OPH_OPSET_MAX, "Y = acosh(X)", {}, [](double x, P) { return std::acosh(x); });
  register_float_unary(pack, "Atanh", 9, OPH_OPSET_MAX, "Y = atanh(X)", {}, [](double x, P) { return std::atanh(x); });
  register_float_unary(pack, "Reciprocal", 6, OPH_OPSET_MAX, "Y = 1 / X", {}, [](double x, P) { return 1.0 / x; });
  // Activations.
  // Activations. Elu, Selu, ThresholdedRelu, Softplus, Softsign, HardSigmoid and HardSwish live in activation.cpp.
  register_float_unary(pack, "Celu", 12, OPH_OPSET_MAX, "Y = max(0, X) + min(0, alpha * (exp(X / alpha) - 1))",
                       {{"alpha", 1.0f}}, [](double x, P p) {
                         double a = p[0];
                         return std::max(0.0, x) + std::min(0.0, a * std::expm1(x / a));
                       });
  register_float_unary(pack, "Mish", 18, OPH_OPSET_MAX, "Y = X * tanh(softplus(X))", {}, [](double x, P) {
    double sp = x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
    return x * std::tanh(sp);
  });
  // Gelu-20 (approximate = "none": x * Phi(x), or "tanh"), and the same kernel as com.ophost::Gelu, written by the
  // host's gelu-fusion pass where an exporter wrote the op out (Div sqrt2, Erf, Add 1, Mul x, Mul 0.5; or the tanh
  // form). float32 through simd_math (one pass); float64 by the same formulas in double.
  for (bool fused : {false, true}) {
    oph::OpBuilder& b =
        pack.op(fused ? "com.ophost" : kDomain, "Gelu")
            .versions(fused ? 1 : 20, OPH_OPSET_MAX)
            .doc(fused ? "Gelu-20, written by the host's gelu-fusion pass for the chain Div sqrt(2) (or Mul 1/sqrt(2)), "
                         "Erf, Add 1, Mul x, Mul 0.5 (approximate \"tanh\": Pow 3, Mul 0.044715, Add x, Mul sqrt(2/pi), "
                         "Tanh, Add 1, Mul x, Mul 0.5)"
                       : "Y = 0.5 * X * (1 + erf(X / sqrt(2))) (or the tanh approximation)")
            .input("X", "T")
            .output("Y", "T")
            .attr("approximate", std::string("none"))
            .infer([](oph::InferContext& c) {
              gelu_tanh_attr(c.attr<std::string>("approximate"));
              oph::same_as_input(0)(c);
            })
            .compute([](oph::KernelContext& ctx) {
              oph::TensorRef x = input(ctx, 0, "Gelu");
              oph::TensorRef y = ensure_output(ctx, 0, x.shape(), "Gelu");
              if (!y.present()) return;
              const bool tanh_approx = gelu_tanh_attr(ctx.attr<std::string>("approximate"));
              if (x.dtype() == f32) {
                unary_apply_f32(x, y, tanh_approx ? simd_math::gelu_tanh : simd_math::gelu);
                return;
              }
              dispatch_float(x.dtype(), "Gelu", [&]<class T>(std::type_identity<T>) {
                unary_apply(static_cast<const T*>(x.data()), static_cast<T*>(y.data()), x.size(),
                            [tanh_approx](T v) { return static_cast<T>(gelu_ref(static_cast<double>(v), tanh_approx)); });
              });
            })
            .may_inplace(0, 0);
    if (fused) b.flags(OPH_OP_FLAG_ALLOW_FUSION);
    add_types(b, "T", kFloat);
  }
  // IsNaN 9+, IsInf 10+ (detect_negative, detect_positive): bool outputs.
  {
    oph::OpBuilder& b = pack.op(kDomain, "IsNaN")
                            .versions(9, OPH_OPSET_MAX)
                            .doc("Y = isnan(X)")
                            .input("X", "T1")
                            .output("Y", "T2")
                            .types("T2", {boolean})
                            .infer([](oph::InferContext& c) {
                              if (!c.input_rank_known(0)) c.set_output_unknown_rank(0, boolean);
                              else c.set_output(0, boolean, c.input_shape(0));
                            })
                            .compute([](oph::KernelContext& ctx) {
                              oph::TensorRef x = input(ctx, 0, "IsNaN");
                              oph::TensorRef y = ensure_output(ctx, 0, x.shape(), "IsNaN");
                              if (!y.present()) return;
                              dispatch_float(x.dtype(), "IsNaN", [&]<class T>(std::type_identity<T>) {
                                unary_apply(static_cast<const T*>(x.data()), static_cast<bool*>(y.data()), x.size(),
                                            [](T v) { return std::isnan(v); });
                              });
                            });
    add_types(b, "T1", kFloat);
  }
  {
    oph::OpBuilder& b = pack.op(kDomain, "IsInf")
                            .versions(10, OPH_OPSET_MAX)
                            .doc("Y = isinf(X), optionally only +inf or -inf")
                            .attr("detect_negative", int64_t{1})
                            .attr("detect_positive", int64_t{1})
                            .input("X", "T1")
                            .output("Y", "T2")
                            .types("T2", {boolean})
                            .infer([](oph::InferContext& c) {
                              if (!c.input_rank_known(0)) c.set_output_unknown_rank(0, boolean);
                              else c.set_output(0, boolean, c.input_shape(0));
                            })
                            .compute([](oph::KernelContext& ctx) {
                              oph::TensorRef x = input(ctx, 0, "IsInf");
                              oph::TensorRef y = ensure_output(ctx, 0, x.shape(), "IsInf");
                              if (!y.present()) return;
                              const bool neg = ctx.attr<int64_t>("detect_negative") != 0;
                              const bool pos = ctx.attr<int64_t>("detect_positive") != 0;
                              dispatch_float(x.dtype(), "IsInf", [&]<class T>(std::type_identity<T>) {
                                unary_apply(static_cast<const T*>(x.data()), static_cast<bool*>(y.data()), x.size(),
                                            [neg, pos](T v) { return std::isinf(v) && ((v > 0 && pos) || (v < 0 && neg)); });
                              });
                            });
    add_types(b, "T1", kFloat);
  }
  // Shrink 9+: Y = X + bias for X < -lambd, X - bias for X > lambd, else 0.
  {
    oph::OpBuilder& b = pack.op(kDomain, "Shrink")
                            .versions(9, OPH_OPSET_MAX)
                            .doc("Y = X + bias if X < -lambd, X - bias if X > lambd, else 0")
                            .attr("bias", 0.0f)
                            .attr("lambd", 0.5f)
                            .input("input", "T")
                            .output("output", "T")
                            .infer(oph::same_as_input(0))
                            .compute([](oph::KernelContext& ctx) {
                              oph::TensorRef x = input(ctx, 0, "Shrink");
                              oph::TensorRef y = ensure_output(ctx, 0, x.shape(), "Shrink");
                              if (!y.present()) return;
                              const double bias = ctx.attr<float>("bias"), lambd = ctx.attr<float>("lambd");
                              dispatch_numeric(x.dtype(), "Shrink", [&]<class T>(std::type_identity<T>) {
                                unary_apply(static_cast<const T*>(x.data()), static_cast<T*>(y.data()), x.size(),
                                            [bias, lambd](T v) {
                                              double d = static_cast<double>(v);
                                              return static_cast<T>(d < -lambd ? d + bias : d > lambd ? d - bias : 0.0);
                                            });
                              });
                            })
                            .may_inplace(0, 0);
    add_types(b, "T", kNumeric);
  }
  register_numeric_unary(pack, "Sign", 9, "Y = sign(X)", kNumeric, [](auto v) { return sign_of(v); });

  // PRelu 7+: slope unidirectionally broadcast to X (9 and 16 only add types).
  {
    oph::OpBuilder& b = pack.op(kDomain, "PRelu")
                            .versions(7, OPH_OPSET_MAX)
                            .doc("Y = slope * X for X < 0, else X (slope broadcast to X)")
                            .input("X", "T")
                            .input("slope", "T")
                            .output("Y", "T")
                            .infer([](oph::InferContext& c) { oph::same_as_input(0)(c); })
                            .compute(prelu_compute);
    add_types(b, "T", {f32, f64, i32, i64});
  }

  // Variadic, broadcasting (opset 8+; 6-7 did not broadcast, which broadcasting semantics include).
  const std::vector<oph_dtype> minmax12 = kAllNumeric;
  register_variadic(pack, "Max", VarKind::kMax, 6, 11, kFloat, "elementwise max of the inputs, broadcasting");
  register_variadic(pack, "Max", VarKind::kMax, 12, OPH_OPSET_MAX, minmax12, "elementwise max of the inputs, broadcasting");
  register_variadic(pack, "Min", VarKind::kMin, 6, 11, kFloat, "elementwise min of the inputs, broadcasting");
  register_variadic(pack, "Min", VarKind::kMin, 12, OPH_OPSET_MAX, minmax12, "elementwise min of the inputs, broadcasting");
  register_variadic(pack, "Sum", VarKind::kSum, 6, OPH_OPSET_MAX, kFloat, "elementwise sum of the inputs, broadcasting");
  register_variadic(pack, "Mean", VarKind::kMean, 6, OPH_OPSET_MAX, kFloat, "elementwise mean of the inputs, broadcasting");

  {
    oph::OpBuilder& b = pack.op(kDomain, "Mod")
                            .versions(10, OPH_OPSET_MAX)
                            .doc("C = A mod B (fmod=0: sign of the divisor, integers only; fmod=1: C fmod)")
                            .attr("fmod", int64_t{0})
                            .input("A", "T")
                            .input("B", "T")
                            .output("C", "T")
                            .infer([](oph::InferContext& c) { same_dtype_broadcast_infer(c, "Mod"); })
                            .compute(mod_compute);
    add_types(b, "T", kAllNumeric);
  }
  pack.op(kDomain, "BitShift")
      .versions(11, OPH_OPSET_MAX)
      .doc("Z = X << Y or X >> Y (unsigned integers, broadcasting)")
      .required_attr("direction", OPH_ATTR_STRING)
      .input("X", "T")
      .input("Y", "T")
      .output("Z", "T")
      .types("T", {u8, u16, u32, u64})
      .infer([](oph::InferContext& c) { same_dtype_broadcast_infer(c, "BitShift"); })
      .compute(bitshift_compute);
}

static const Family kFamily("math", &register_math);

}  // namespace onnx_core
