// onnx-core: tensor generators: Range, ConstantOfShape, EyeLike, OneHot.
#include "common.hpp"
#include "convert.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

namespace onnx_core {
namespace {

// ---------------------------------------------------------------------------------------------------------
// Range, ConstantOfShape
// ---------------------------------------------------------------------------------------------------------

template <class T>
int64_t range_count(T start, T limit, T delta) {
  if (delta == T(0)) fail("Range: delta must not be 0");
  double n = std::ceil((static_cast<double>(limit) - static_cast<double>(start)) / static_cast<double>(delta));
  return std::max<int64_t>(0, static_cast<int64_t>(n));
}

void register_range_cos(oph::Pack& pack) {
  {
    oph::OpBuilder& b =
        pack.op(kDomain, "Range")
            .versions(11, OPH_OPSET_MAX)
            .doc("[start, start + delta, ...) up to limit")
            .input("start", "T", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)
            .input("limit", "T", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)
            .input("delta", "T", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)
            .output("output", "T")
            .infer([](oph::InferContext& c) {
              const oph_tensor *s = c.input_constant(0), *l = c.input_constant(1), *d = c.input_constant(2);
              if (!s || !l || !d) {
                c.set_output(0, c.input_dtype(0), {OPH_DIM_UNKNOWN});
                return;
              }
              dispatch_numeric_all(c.input_dtype(0), "Range", [&]<class T>(std::type_identity<T>) {
                auto v = [](const oph_tensor* t) {
                  return *reinterpret_cast<const T*>(static_cast<const char*>(t->data) + t->byte_offset);
                };
                c.set_output(0, c.input_dtype(0), {range_count<T>(v(s), v(l), v(d))});
              });
            })
            .compute([](oph::KernelContext& ctx) {
              oph::TensorRef s = input(ctx, 0, "Range"), l = input(ctx, 1, "Range"), d = input(ctx, 2, "Range");
              dispatch_numeric_all(s.dtype(), "Range", [&]<class T>(std::type_identity<T>) {
                T st = *static_cast<const T*>(s.data()), dl = *static_cast<const T*>(d.data());
                int64_t n = range_count<T>(st, *static_cast<const T*>(l.data()), dl);
                oph::TensorRef y = ensure_output(ctx, 0, std::span<const int64_t>(&n, 1), "Range");
                if (!y.present()) return;
                T* Y = static_cast<T*>(y.data());
                for (int64_t i = 0; i < n; ++i) Y[i] = static_cast<T>(st + static_cast<T>(i) * dl);
              });
            });
    add_types(b, "T", {f32, f64, i16, i32, i64});
  }
  struct ConstantOfShapeKernel {
    oph_dtype dtype = f32;
    std::vector<unsigned char> value = std::vector<unsigned char>(4, 0);
    explicit ConstantOfShapeKernel(const oph::KernelInit& init) {
      const oph_attr_value& v = init.attrs().value(init.attrs().index_of("value"));
      if (v.type == OPH_ATTR_TENSOR && v.tensor) {
        dtype = v.tensor->dtype;
        size_t es = elem_size(dtype);
        if (oph::numel({v.tensor->shape, static_cast<size_t>(v.tensor->ndim)}) != 1)
          fail("ConstantOfShape: value must hold exactly one element");
        value.resize(es);
        std::memcpy(value.data(), static_cast<const char*>(v.tensor->data) + v.tensor->byte_offset, es);
      }
    }
    void compute(oph::KernelContext& ctx) {
      std::vector<int64_t> shape = read_ints(ctx.input(0).raw(), "ConstantOfShape", "input");
      for (int64_t d : shape)
        if (d < 0) fail("ConstantOfShape: dimensions must be non-negative");
      oph::TensorRef y = ensure_output(ctx, 0, shape, "ConstantOfShape");
      if (!y.present()) return;
      const size_t es = value.size(), n = y.size();
      char* D = static_cast<char*>(y.data());
      for (size_t i = 0; i < n; ++i) std::memcpy(D + i * es, value.data(), es);
    }
  };
  oph::OpBuilder& b =
      pack.op(kDomain, "ConstantOfShape")
          .versions(9, OPH_OPSET_MAX)
          .doc("a tensor of the given shape filled with `value` (default float32 0)")
          .optional_attr("value", OPH_ATTR_TENSOR)
          .input("input", "T1", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)
          .output("output", "T2")
          .types("T1", {i64})
          .infer([](oph::InferContext& c) {
            const oph_attr_value& v = c.attrs().value(c.attrs().index_of("value"));
            oph_dtype dt = (v.type == OPH_ATTR_TENSOR && v.tensor) ? v.tensor->dtype : f32;
            auto shape = const_ints(c, 0, "ConstantOfShape", "input");
            if (shape) c.set_output(0, dt, *shape);
            else if (c.input_rank_known(0) && c.input_shape(0).size() == 1 && c.input_shape(0)[0] >= 0)
              c.set_output(0, dt, std::vector<int64_t>(static_cast<size_t>(c.input_shape(0)[0]), OPH_DIM_UNKNOWN));
            else c.set_output_unknown_rank(0, dt);
          })
          .kernel<ConstantOfShapeKernel>();
  add_types(b, "T2", kAll);
}

// ---------------------------------------------------------------------------------------------------------
// EyeLike
// ---------------------------------------------------------------------------------------------------------

void register_eyelike(oph::Pack& pack) {
  oph::OpBuilder& b =
      pack.op(kDomain, "EyeLike")
          .versions(9, OPH_OPSET_MAX)
          .doc("2-D tensor with ones on the k-th diagonal, shaped like the input")
          .optional_attr("dtype", OPH_ATTR_INT)
          .attr("k", int64_t{0})
          .input("input", "T1")
          .output("output", "T2")
          .infer([](oph::InferContext& c) {
            oph_dtype dt = c.attrs().has("dtype") ? cast_dtype(c.attr<int64_t>("dtype"), "EyeLike") : c.input_dtype(0);
            if (c.input_rank_known(0) && c.input_shape(0).size() != 2) fail("EyeLike: input must be 2-D");
            if (!c.input_rank_known(0)) c.set_output_unknown_rank(0, dt);
            else c.set_output(0, dt, c.input_shape(0));
          })
          .compute([](oph::KernelContext& ctx) {
            oph::TensorRef x = ctx.input(0);
            if (x.ndim() != 2) fail("EyeLike: input must be 2-D");
            oph::TensorRef y = ensure_output(ctx, 0, x.shape(), "EyeLike");
            if (!y.present()) return;
            const int64_t R = x.shape()[0], C = x.shape()[1], k = ctx.attr<int64_t>("k");
            dispatch_all(y.dtype(), "EyeLike", [&]<class T>(std::type_identity<T>) {
              T* Y = static_cast<T*>(y.data());
              std::memset(static_cast<void*>(Y), 0, y.size() * sizeof(T));
              for (int64_t i = 0; i < R; ++i) {
                int64_t j = i + k;
                if (j >= 0 && j < C) Y[i * C + j] = convert<T>(1.0);
              }
            });
          });
  add_types(b, "T1", kAll);
  add_types(b, "T2", kAll);
}

// ---------------------------------------------------------------------------------------------------------
// OneHot
// ---------------------------------------------------------------------------------------------------------

int64_t scalar_int(const oph_tensor* t, const std::string& op, const char* what) {
  if (!t) fail(op + ": " + std::string(what) + " is missing");
  const char* p = static_cast<const char*>(t->data) + t->byte_offset;
  int64_t v = 0;
  dispatch_numeric_all(t->dtype, op, [&]<class T>(std::type_identity<T>) {
    v = static_cast<int64_t>(*reinterpret_cast<const T*>(p));
  });
  return v;
}

std::vector<int64_t> onehot_shape(std::span<const int64_t> in, int64_t depth, int64_t axis_attr) {
  const int64_t r = static_cast<int64_t>(in.size()) + 1;
  int64_t axis = normalize_axis(axis_attr, r, true, "OneHot");
  std::vector<int64_t> out(in.begin(), in.end());
  out.insert(out.begin() + axis, depth);
  return out;
}

void onehot_compute(const oph::KernelContext& ctx) {
  const std::string op = "OneHot";
  oph::TensorRef idx = input(ctx, 0, op), vals = input(ctx, 2, op);
  int64_t depth = scalar_int(ctx.input(1).raw(), op, "depth");
  if (depth < 1) fail(op + ": depth must be >= 1");
  if (vals.size() != 2) fail(op + ": values must hold [off_value, on_value]");
  std::vector<int64_t> oshape = onehot_shape(idx.shape(), depth, ctx.attr<int64_t>("axis"));
  const int64_t axis = normalize_axis(ctx.attr<int64_t>("axis"), static_cast<int64_t>(oshape.size()), true, op);
  oph::TensorRef y = ensure_output(ctx, 0, oshape, op);
  if (!y.present()) return;
  size_t outer = 1, inner = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= static_cast<size_t>(oshape[k]);
  for (size_t k = static_cast<size_t>(axis) + 1; k < oshape.size(); ++k) inner *= static_cast<size_t>(oshape[k]);
  const size_t es = elem_size(vals.dtype());
  const char* V = static_cast<const char*>(vals.data());
  char* D = static_cast<char*>(y.data());
  const size_t n = y.size();
  for (size_t i = 0; i < n; ++i) std::memcpy(D + i * es, V, es);
  dispatch_numeric_all(idx.dtype(), op, [&]<class T>(std::type_identity<T>) {
    const T* I = static_cast<const T*>(idx.data());
    for (size_t o = 0; o < outer; ++o)
      for (size_t j = 0; j < inner; ++j) {
        int64_t v = static_cast<int64_t>(I[o * inner + j]);
        if (v < 0) v += depth;
        if (v < 0 || v >= depth) continue;
        std::memcpy(D + ((o * static_cast<size_t>(depth) + static_cast<size_t>(v)) * inner + j) * es, V + es, es);
      }
  });
}

void register_onehot(oph::Pack& pack) {
  for (auto vr : {std::pair{9, 10}, std::pair{11, OPH_OPSET_MAX}}) {
    const int32_t since = vr.first, until = vr.second;
    oph::OpBuilder& b = pack.op(kDomain, "OneHot")
                            .versions(since, until)
                            .doc("one-hot encoding of indices with depth classes, [off_value, on_value]")
                            .attr("axis", int64_t{-1})
                            .input("indices", "T1")
                            .input("depth", "T2", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)
                            .input("values", "T3")
                            .output("output", "T3")
                            .infer([](oph::InferContext& c) {
                              const oph_tensor* d = c.input_constant(1);
                              if (!c.input_rank_known(0)) {
                                c.set_output_unknown_rank(0, c.input_dtype(2));
                                return;
                              }
                              int64_t depth = d ? scalar_int(d, "OneHot", "depth") : OPH_DIM_UNKNOWN;
                              c.set_output(0, c.input_dtype(2), onehot_shape(c.input_shape(0), depth, c.attr<int64_t>("axis")));
                            })
                            .compute(onehot_compute);
    const std::vector<oph_dtype> real = {f32, f64, i8, i16, i32, i64, u8, u16, u32, u64};
    add_types(b, "T1", real);
    add_types(b, "T2", real);
    add_types(b, "T3", kAll);
  }
}

void register_generators(oph::Pack& pack) {
  register_range_cos(pack);
  register_eyelike(pack);
  register_onehot(pack);
}

}  // namespace

static const Family kFamily("generator", &register_generators);

}  // namespace onnx_core
