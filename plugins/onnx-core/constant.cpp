// onnx-core: Constant (opsets 1-8, 9-10, 11, 12+). The host turns plain Constant nodes into load-time values;
// this op serves the remaining cases (e.g. when that is disabled) with the same semantics: exactly one of
// value / value_float / value_floats / value_int / value_ints. String values (value_string(s), or a string
// `value` tensor) and sparse_value are rejected with a clear message: the ABI has no string tensor layout and
// no sparse attribute type.
#include "common.hpp"

namespace onnx_core {
namespace {

struct ConstValue {
  oph_dtype dtype{};
  std::vector<int64_t> shape;
  std::vector<char> bytes;
};

// The one attribute present, as a tensor value. `opset12` tells whether the value_* forms exist.
ConstValue constant_value(const oph::Attrs& at, bool opset12) {
  const std::string op = "Constant";
  ConstValue v;
  int set = 0;
  if (at.has("value")) {
    ++set;
    const oph_attr_value& a = at.value(at.index_of("value"));
    const oph_tensor* t = a.tensor;
    if (!t) fail(op + ": the value tensor is not available", OPH_CODE_INTERNAL);
    if (t->dtype.code == OPH_DTYPE_OPAQUE)
      fail(op + ": string tensors are not supported by onnx-core", OPH_CODE_UNIMPLEMENTED);
    v.dtype = t->dtype;
    v.shape.assign(t->shape, t->shape + t->ndim);
    size_t n = oph::numel(v.shape) * elem_size(t->dtype);
    const char* p = static_cast<const char*>(t->data) + t->byte_offset;
    if (t->strides) fail(op + ": strided value tensor", OPH_CODE_INTERNAL);
    v.bytes.assign(p, p + n);
  }
  if (opset12) {
    auto put = [&](oph_dtype d, std::vector<int64_t> shape, const void* src, size_t bytes) {
      ++set;
      v.dtype = d;
      v.shape = std::move(shape);
      v.bytes.assign(static_cast<const char*>(src), static_cast<const char*>(src) + bytes);
    };
    if (at.has("value_float")) {
      float f = at.get<float>("value_float");
      put(f32, {}, &f, sizeof f);
    }
    if (at.has("value_floats")) {
      auto fs = at.get<std::vector<float>>("value_floats");
      put(f32, {static_cast<int64_t>(fs.size())}, fs.data(), fs.size() * sizeof(float));
    }
    if (at.has("value_int")) {
      int64_t i = at.get<int64_t>("value_int");
      put(i64, {}, &i, sizeof i);
    }
    if (at.has("value_ints")) {
      auto is = at.get<std::vector<int64_t>>("value_ints");
      put(i64, {static_cast<int64_t>(is.size())}, is.data(), is.size() * sizeof(int64_t));
    }
    if (at.has("value_string") || at.has("value_strings"))
      fail(op + ": value_string / value_strings are not supported by onnx-core (no string tensors)",
           OPH_CODE_UNIMPLEMENTED);
  }
  if (set != 1)
    fail(op + ": exactly one of value" + std::string(opset12 ? ", value_float(s), value_int(s), value_string(s)" : "") +
         " must be given, got " + std::to_string(set));
  return v;
}

template <bool kOpset12>
void constant_infer(oph::InferContext& c) {
  ConstValue v = constant_value(c.attrs(), kOpset12);
  c.set_output(0, v.dtype, v.shape);
}

template <bool kOpset12>
struct ConstantKernel {
  ConstValue v;
  explicit ConstantKernel(const oph::KernelInit& init) : v(constant_value(init.attrs(), kOpset12)) {}
  void compute(oph::KernelContext& ctx) {
    oph::TensorRef y = ensure_output(ctx, 0, v.shape, "Constant");
    if (!y.present()) return;
    if (!(y.dtype() == v.dtype)) fail("Constant: output dtype differs from the value's", OPH_CODE_INTERNAL);
    if (!v.bytes.empty()) std::memcpy(y.data(), v.bytes.data(), v.bytes.size());
  }
};

void register_constant(oph::Pack& pack) {
  std::vector<oph_dtype> floats = {f16, f32, f64};
  {
    auto& b = pack.op(kDomain, "Constant").versions(1, 8).doc("a constant tensor").output("output", "T");
    b.required_attr("value", OPH_ATTR_TENSOR).infer(&constant_infer<false>).kernel<ConstantKernel<false>>();
    add_types(b, "T", floats);
  }
  {
    auto& b = pack.op(kDomain, "Constant").versions(9, 10).doc("a constant tensor").output("output", "T");
    b.required_attr("value", OPH_ATTR_TENSOR).infer(&constant_infer<false>).kernel<ConstantKernel<false>>();
    add_types(b, "T", kAll);
  }
  {
    // sparse_value (11+) has no ABI attribute type: the host rejects it as an unknown attribute.
    auto& b = pack.op(kDomain, "Constant").versions(11, 11).doc("a constant tensor").output("output", "T");
    b.optional_attr("value", OPH_ATTR_TENSOR).infer(&constant_infer<false>).kernel<ConstantKernel<false>>();
    add_types(b, "T", kAll);
  }
  {
    auto& b = pack.op(kDomain, "Constant").versions(12, OPH_OPSET_MAX).doc("a constant tensor").output("output", "T");
    b.optional_attr("value", OPH_ATTR_TENSOR)
        .optional_attr("value_float", OPH_ATTR_FLOAT)
        .optional_attr("value_floats", OPH_ATTR_FLOATS)
        .optional_attr("value_int", OPH_ATTR_INT)
        .optional_attr("value_ints", OPH_ATTR_INTS)
        .optional_attr("value_string", OPH_ATTR_STRING)
        .optional_attr("value_strings", OPH_ATTR_STRINGS)
        .infer(&constant_infer<true>)
        .kernel<ConstantKernel<true>>();
    add_types(b, "T", kAll);
  }
}

}  // namespace

static const Family kFamily("constant", &register_constant);

}  // namespace onnx_core
