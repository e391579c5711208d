// onnx-core: comparison and logical ops with ONNX multidirectional broadcasting: Equal, Less, Greater,
// LessOrEqual, GreaterOrEqual, Not, And, Or, Xor, Where.
#include "common.hpp"

#include <array>

namespace onnx_core {
namespace {

const std::vector<oph_dtype> kCmpTypes = {f32, f64, i8, i16, i32, i64, u8, u16, u32, u64};

struct EqOp { template <class T> bool operator()(T a, T b) const { return a == b; } };
struct LtOp { template <class T> bool operator()(T a, T b) const { return a < b; } };
struct GtOp { template <class T> bool operator()(T a, T b) const { return a > b; } };
struct LeOp { template <class T> bool operator()(T a, T b) const { return a <= b; } };
struct GeOp { template <class T> bool operator()(T a, T b) const { return a >= b; } };
struct AndOp { bool operator()(bool a, bool b) const { return a && b; } };
struct OrOp { bool operator()(bool a, bool b) const { return a || b; } };
struct XorOp { bool operator()(bool a, bool b) const { return a != b; } };

void same_type_broadcast_infer(oph::InferContext& c, const std::string& op, oph_dtype out) {
  if (c.input_dtype(0) != c.input_dtype(1))
    fail(op + ": inputs A and B must have the same dtype, got " + oph::dtype_name(c.input_dtype(0)) + " and " +
         oph::dtype_name(c.input_dtype(1)));
  if (!c.input_rank_known(0) || !c.input_rank_known(1)) {
    c.set_output_unknown_rank(0, out);
    return;
  }
  c.set_output(0, out, oph::broadcast_shapes(c.input_shape(0), c.input_shape(1)));
}

template <class Op>
void compare_compute(const oph::KernelContext& ctx, const std::string& op) {
  oph::TensorRef a = input(ctx, 0, op), b = input(ctx, 1, op);
  if (a.dtype() != b.dtype()) fail(op + ": inputs A and B must have the same dtype");
  std::vector<int64_t> oshape = oph::broadcast_shapes(a.shape(), b.shape());
  oph::TensorRef y = ensure_output(ctx, 0, oshape, op);
  if (!y.present()) return;
  dispatch_numeric_all<bool>(a.dtype(), op, [&]<class T>(std::type_identity<T>) {
    binary_apply(static_cast<const T*>(a.data()), a.shape(), static_cast<const T*>(b.data()), b.shape(),
                 static_cast<bool*>(y.data()), std::span<const int64_t>(oshape), Op{});
  });
}

template <class Op>
void register_cmp(oph::Pack& pack, const char* name, int32_t since, int32_t until,
                      const std::vector<oph_dtype>& types, const char* doc) {
  std::string op = name;
  oph::OpBuilder& b = pack.op(kDomain, name)
                          .versions(since, until)
                          .doc(doc)
                          .input("A", "T")
                          .input("B", "T")
                          .output("C", "T1")
                          .infer([op](oph::InferContext& c) { same_type_broadcast_infer(c, op, boolean); })
                          .compute([op](oph::KernelContext& ctx) { compare_compute<Op>(ctx, op); });
  add_types(b, "T", types);
  b.types("T1", {boolean});
}

template <class Op>
void register_logical(oph::Pack& pack, const char* name, const char* doc) {
  std::string op = name;
  pack.op(kDomain, name)
      .versions(7, OPH_OPSET_MAX)
      .doc(doc)
      .input("A", "T")
      .input("B", "T")
      .output("C", "T1")
      .types("T", {boolean})
      .types("T1", {boolean})
      .infer([op](oph::InferContext& c) { same_type_broadcast_infer(c, op, boolean); })
      .compute([op](oph::KernelContext& ctx) {
        oph::TensorRef a = input(ctx, 0, op), b = input(ctx, 1, op);
        std::vector<int64_t> oshape = oph::broadcast_shapes(a.shape(), b.shape());
        oph::TensorRef y = ensure_output(ctx, 0, oshape, op);
        if (!y.present()) return;
        binary_apply(static_cast<const bool*>(a.data()), a.shape(), static_cast<const bool*>(b.data()),
                     b.shape(), static_cast<bool*>(y.data()), std::span<const int64_t>(oshape), Op{});
      });
}

// Element strides of `in` broadcast to `out` (0 where the input is broadcast).
std::vector<int64_t> broadcast_strides(std::span<const int64_t> in, std::span<const int64_t> out) {
  std::vector<int64_t> st(out.size(), 0);
  int64_t acc = 1;
  for (size_t k = in.size(); k-- > 0;) {
    size_t ok = k + out.size() - in.size();
    st[ok] = in[k] == 1 ? 0 : acc;
    acc *= in[k];
  }
  return st;
}

void where_compute(const oph::KernelContext& ctx) {
  const std::string op = "Where";
  oph::TensorRef c = input(ctx, 0, op), x = input(ctx, 1, op), yv = input(ctx, 2, op);
  if (x.dtype() != yv.dtype()) fail(op + ": X and Y must have the same dtype");
  std::vector<int64_t> oshape = oph::broadcast_shapes(oph::broadcast_shapes(c.shape(), x.shape()), yv.shape());
  oph::TensorRef out = ensure_output(ctx, 0, oshape, op);
  if (!out.present()) return;
  const size_t n = oph::numel(oshape);
  if (n == 0) return;
  const size_t es = elem_size(x.dtype());
  auto sc = broadcast_strides(c.shape(), oshape), sx = broadcast_strides(x.shape(), oshape),
       sy = broadcast_strides(yv.shape(), oshape);
  const bool* C = static_cast<const bool*>(c.data());
  const char* X = static_cast<const char*>(x.data());
  const char* Y = static_cast<const char*>(yv.data());
  char* O = static_cast<char*>(out.data());
  const size_t r = oshape.size();
  auto body = [&]<class T>(std::type_identity<T>) {
    parallel_for(n, kGrain, [&](size_t lo, size_t hi) {
      std::array<int64_t, OPH_MAX_NDIM> idx{};
      size_t rem = lo;
      int64_t oc = 0, ox = 0, oy = 0;
      for (size_t k = r; k-- > 0;) {
        idx[k] = static_cast<int64_t>(rem % static_cast<size_t>(oshape[k]));
        rem /= static_cast<size_t>(oshape[k]);
        oc += idx[k] * sc[k];
        ox += idx[k] * sx[k];
        oy += idx[k] * sy[k];
      }
      const T* XT = reinterpret_cast<const T*>(X);
      const T* YT = reinterpret_cast<const T*>(Y);
      T* OT = reinterpret_cast<T*>(O);
      for (size_t i = lo; i < hi; ++i) {
        OT[i] = C[oc] ? XT[ox] : YT[oy];
        for (size_t k = r; k-- > 0;) {
          oc += sc[k];
          ox += sx[k];
          oy += sy[k];
          if (++idx[k] < oshape[k]) break;
          oc -= sc[k] * oshape[k];
          ox -= sx[k] * oshape[k];
          oy -= sy[k] * oshape[k];
          idx[k] = 0;
        }
      }
    });
  };
  switch (es) {
    case 1: body(std::type_identity<uint8_t>{}); break;
    case 2: body(std::type_identity<uint16_t>{}); break;
    case 4: body(std::type_identity<uint32_t>{}); break;
    case 8: body(std::type_identity<uint64_t>{}); break;
    default: fail(op + ": dtype " + oph::dtype_name(x.dtype()) + " is not supported", OPH_CODE_UNIMPLEMENTED);
  }
}

void where_infer(oph::InferContext& c) {
  if (c.input_dtype(1) != c.input_dtype(2)) fail("Where: X and Y must have the same dtype");
  for (size_t i = 0; i < 3; ++i)
    if (!c.input_rank_known(i)) {
      c.set_output_unknown_rank(0, c.input_dtype(1));
      return;
    }
  c.set_output(0, c.input_dtype(1),
               oph::broadcast_shapes(oph::broadcast_shapes(c.input_shape(0), c.input_shape(1)), c.input_shape(2)));
}

}  // namespace

void register_compare(oph::Pack& pack) {
  std::vector<oph_dtype> eq_types = kCmpTypes;
  eq_types.push_back(boolean);
  // Equal 7-10: bool and integers; 11+: every numeric type (13, 19 add bfloat16/string: not served).
  register_cmp<EqOp>(pack, "Equal", 7, 10, {boolean, i32, i64}, "C = (A == B), broadcasting");
  register_cmp<EqOp>(pack, "Equal", 11, OPH_OPSET_MAX, eq_types, "C = (A == B), broadcasting");
  // Less/Greater 7-8: float types only; 9+: every numeric type.
  register_cmp<LtOp>(pack, "Less", 7, 8, kFloat, "C = (A < B), broadcasting");
  register_cmp<LtOp>(pack, "Less", 9, OPH_OPSET_MAX, kCmpTypes, "C = (A < B), broadcasting");
  register_cmp<GtOp>(pack, "Greater", 7, 8, kFloat, "C = (A > B), broadcasting");
  register_cmp<GtOp>(pack, "Greater", 9, OPH_OPSET_MAX, kCmpTypes, "C = (A > B), broadcasting");
  register_cmp<LeOp>(pack, "LessOrEqual", 12, OPH_OPSET_MAX, kCmpTypes, "C = (A <= B), broadcasting");
  register_cmp<GeOp>(pack, "GreaterOrEqual", 12, OPH_OPSET_MAX, kCmpTypes, "C = (A >= B), broadcasting");

  register_logical<AndOp>(pack, "And", "C = A and B (bool), broadcasting");
  register_logical<OrOp>(pack, "Or", "C = A or B (bool), broadcasting");
  register_logical<XorOp>(pack, "Xor", "C = A xor B (bool), broadcasting");

  pack.op(kDomain, "Not")
      .versions(1, OPH_OPSET_MAX)
      .doc("Y = not X (bool)")
      .input("X", "T")
      .output("Y", "T")
      .types("T", {boolean})
      .infer(oph::same_as_input(0))
      .compute([](oph::KernelContext& ctx) {
        oph::TensorRef x = input(ctx, 0, "Not");
        oph::TensorRef y = ensure_output(ctx, 0, x.shape(), "Not");
        if (!y.present()) return;
        unary_apply(static_cast<const bool*>(x.data()), static_cast<bool*>(y.data()), x.size(),
                    [](bool v) { return !v; });
      })
      .may_inplace(0, 0);

  // Where 9-15 and 16+ differ only in bfloat16 support; one registration serves both.
  {
    oph::OpBuilder& b = pack.op(kDomain, "Where")
                            .versions(9, OPH_OPSET_MAX)
                            .doc("output = condition ? X : Y, broadcasting")
                            .input("condition", "B")
                            .input("X", "T")
                            .input("Y", "T")
                            .output("output", "T")
                            .types("B", {boolean})
                            .infer(where_infer)
                            .compute(where_compute);
    add_types(b, "T", kAll);
  }
}

static const Family kFamily("compare", &register_compare);

}  // namespace onnx_core
