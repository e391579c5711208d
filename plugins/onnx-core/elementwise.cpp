// onnx-core: binary elementwise ops with ONNX multidirectional broadcasting: Add, Sub, Mul, Div, Pow.
#include "common.hpp"

#include <cmath>
#include <limits>

namespace onnx_core {
namespace {

struct AddOp {
  template <class T> T operator()(T a, T b) const { return static_cast<T>(a + b); }
};
struct SubOp {
  template <class T> T operator()(T a, T b) const { return static_cast<T>(a - b); }
};
struct MulOp {
  template <class T> T operator()(T a, T b) const { return static_cast<T>(a * b); }
};
// Integer division truncates toward zero like C; x / -1 is computed without overflow (wraps for INT_MIN).
struct DivOp {
  template <class T> T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if (b == -1) return static_cast<T>(std::make_unsigned_t<T>(0) - static_cast<std::make_unsigned_t<T>>(a));
      return static_cast<T>(a / b);
    } else {
      return a / b;
    }
  }
};

// Pow: base type T, exponent type T1 (equal before opset 12).
template <class T, class T1>
T pow_one(T a, T1 b) {
  if constexpr (std::is_integral_v<T> && std::is_integral_v<T1>) {
    // Exact integer power (truncated like C for negative exponents).
    if (b < 0) {
      if (a == 1) return 1;
      if (a == -1) return (b % 2 == 0) ? 1 : -1;
      return 0;
    }
    using U = std::make_unsigned_t<T>;
    U result = 1, base = static_cast<U>(a);
    uint64_t e = static_cast<uint64_t>(b);
    while (e) {
      if (e & 1) result = static_cast<U>(result * base);
      base = static_cast<U>(base * base);
      e >>= 1;
    }
    return static_cast<T>(result);
  } else if constexpr (std::is_same_v<T, float> && std::is_same_v<T1, float>) {
    return std::pow(a, b);
  } else {
    return static_cast<T>(std::pow(static_cast<double>(a), static_cast<double>(b)));
  }
}

void binary_infer(oph::InferContext& c, const std::string& op) {
  if (c.input_dtype(0) != c.input_dtype(1))
    fail(op + ": inputs A and B must have the same dtype, got " + oph::dtype_name(c.input_dtype(0)) + " and " +
         oph::dtype_name(c.input_dtype(1)));
  oph::broadcast_inputs()(c);
}

template <class Op>
void binary_compute(const oph::KernelContext& ctx, const std::string& op) {
  oph::TensorRef a = input(ctx, 0, op), b = input(ctx, 1, op);
  if (a.dtype() != b.dtype())
    fail(op + ": inputs A and B must have the same dtype, got " + oph::dtype_name(a.dtype()) + " and " +
         oph::dtype_name(b.dtype()));
  const oph::SmallShape oshape = oph::broadcast_small(a.shape(), b.shape());  // no allocation on the hot path
  oph::TensorRef y = ensure_output(ctx, 0, oshape.span(), op);
  if (!y.present()) return;
  dispatch_numeric_all(a.dtype(), op, [&]<class T>(std::type_identity<T>) {
    const T* pb = static_cast<const T*>(b.data());
    if constexpr (std::is_same_v<Op, DivOp> && std::is_integral_v<T>) {
      for (size_t i = 0, n = b.size(); i < n; ++i)
        if (pb[i] == 0) fail(op + ": integer division by zero");
    }
    binary_apply(static_cast<const T*>(a.data()), a.shape(), pb, b.shape(), static_cast<T*>(y.data()),
                 oshape.span(), Op{});
  });
}

template <class Op>
void register_binary(oph::Pack& pack, const char* name, const char* doc) {
  std::string op = name;
  // Opset 7 introduced multidirectional broadcasting (no broadcast/axis attributes); 13 and 14 only add
  // dtypes (bfloat16, 8/16-bit integers), so one registration covers [7, max] with every real numeric type.
  oph::OpBuilder& b = pack.op(kDomain, name)
                          .versions(7, OPH_OPSET_MAX)
                          .doc(doc)
                          .input("A", "T")
                          .input("B", "T")
                          .output("C", "T")
                          .infer([op](oph::InferContext& c) { binary_infer(c, op); })
                          .compute([op](oph::KernelContext& ctx) { binary_compute<Op>(ctx, op); })
                          .may_inplace(0, 0);
  add_types(b, "T", kNumericAll);
}

void pow_compute(const oph::KernelContext& ctx) {
  const std::string op = "Pow";
  oph::TensorRef x = input(ctx, 0, op), e = input(ctx, 1, op);
  std::vector<int64_t> oshape = oph::broadcast_shapes(x.shape(), e.shape());
  oph::TensorRef y = ensure_output(ctx, 0, oshape, op);
  if (!y.present()) return;
  // A scalar exponent of 2 (LayerNorm decompositions square with Pow): x * x, the correctly rounded square as
  // pow gives it, without a call to pow per element.
  if (e.size() == 1 && y.size() == x.size() && (x.dtype() == f32 || x.dtype() == f64)) {
    double ev = 0;
    dispatch_numeric_all(e.dtype(), op, [&]<class T1>(std::type_identity<T1>) {
      ev = static_cast<double>(*static_cast<const T1*>(e.data()));
    });
    if (ev == 2.0) {
      dispatch_float(x.dtype(), op, [&]<class T>(std::type_identity<T>) {
        unary_apply(static_cast<const T*>(x.data()), static_cast<T*>(y.data()), x.size(), [](T v) { return v * v; });
      });
      return;
    }
  }
  dispatch_numeric(x.dtype(), op, [&]<class T>(std::type_identity<T>) {
    dispatch_numeric_all(e.dtype(), op, [&]<class T1>(std::type_identity<T1>) {
      binary_apply(static_cast<const T*>(x.data()), x.shape(), static_cast<const T1*>(e.data()), e.shape(),
                   static_cast<T*>(y.data()), std::span<const int64_t>(oshape),
                   [](T a, T1 b) { return pow_one<T, T1>(a, b); });
    });
  });
}

void pow_infer(oph::InferContext& c, bool same_type) {
  if (same_type && c.input_dtype(0) != c.input_dtype(1))
    fail("Pow: before opset 12, X and Y must have the same dtype");
  oph::broadcast_inputs()(c);
}

}  // namespace

void register_elementwise(oph::Pack& pack) {
  register_binary<AddOp>(pack, "Add", "C = A + B (multidirectional broadcasting)");
  register_binary<SubOp>(pack, "Sub", "C = A - B (multidirectional broadcasting)");
  register_binary<MulOp>(pack, "Mul", "C = A * B (multidirectional broadcasting)");
  register_binary<DivOp>(pack, "Div", "C = A / B (multidirectional broadcasting; integers truncate)");

  // Pow 7-11: one type T for base and exponent; 12+: exponent has its own type T1.
  {
    oph::OpBuilder& b = pack.op(kDomain, "Pow")
                            .versions(7, 11)
                            .doc("Z = X ^ Y (multidirectional broadcasting)")
                            .input("X", "T")
                            .input("Y", "T")
                            .output("Z", "T")
                            .infer([](oph::InferContext& c) { pow_infer(c, true); })
                            .compute(pow_compute);
    add_types(b, "T", kFloat);
  }
  {
    oph::OpBuilder& b = pack.op(kDomain, "Pow")
                            .versions(12, OPH_OPSET_MAX)
                            .doc("Z = X ^ Y (multidirectional broadcasting)")
                            .input("X", "T")
                            .input("Y", "T1")
                            .output("Z", "T")
                            .infer([](oph::InferContext& c) { pow_infer(c, false); })
                            .compute(pow_compute);
    add_types(b, "T", kNumeric);
    add_types(b, "T1", kNumericAll);
  }
}

static const Family kFamily("elementwise", &register_elementwise);

}  // namespace onnx_core
