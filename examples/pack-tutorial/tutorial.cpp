// The pack of docs/writing-a-pack.md's second part ("Beyond one input of one shape"): five ops in the domain
// `tut`, each showing one thing the first example (examples/third-party-pack) does not.
//
//   tut::repeat_rows  custom shape inference, a required attribute
//   tut::row_argmax   several outputs, an int64 output
//   tut::poly         a kernel class with state built once per node, in place, implementation()
//   tut::positive     an output whose shape is only known while computing (allocate_output)
//   tut::pad_rows     a host-memory (shape-like) input, read by infer when it is a constant
//
// The lines between "[snippet NAME]" and "[end NAME]" are quoted verbatim in the tutorial (a CTest compares
// them); the CTest packaging.pack_tutorial builds this file against the installed SDK, checks the pack with
// `ophost pack check` and runs model.onnx and dynamic.onnx (make_models.py) through it.
#include <ophost/ophost_plugin.hpp>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace oph = ophost::sdk;

namespace {

// [snippet repeat_rows]
// y = x repeated `times` times along axis 0 (numpy.tile(x, (times, 1, ...))). `times` is required: there is
// no sensible default, so a model without it is rejected at load, naming the node.
void repeat_rows_infer(oph::InferContext& ctx) {
  if (!ctx.input_rank_known(0)) return ctx.set_output_unknown_rank(0, ctx.input_dtype(0));
  std::span<const int64_t> x = ctx.input_shape(0);
  if (x.empty()) throw oph::Error(OPH_CODE_INVALID_ARGUMENT, "x must have rank 1 or more, got a scalar");
  const int64_t times = ctx.attr<int64_t>("times");
  if (times < 1) throw oph::Error(OPH_CODE_INVALID_ARGUMENT, "times must be 1 or more, got " + std::to_string(times));
  std::vector<int64_t> y(x.begin(), x.end());
  if (y[0] >= 0) y[0] *= times;  // an unknown dimension (-1) stays unknown
  ctx.set_output(0, ctx.input_dtype(0), y);
}

void repeat_rows(oph::In<float> x, oph::Out<float> y, int64_t times) {  // int64_t: the type of an int attribute
  for (int64_t t = 0; t < times; ++t) std::copy(x.data(), x.data() + x.size(), y.data() + t * x.size());
}
// [end repeat_rows]

// [snippet row_argmax]
// The largest value of each row (last axis) and its index: two outputs of two dtypes.
void row_argmax_infer(oph::InferContext& ctx) {
  std::span<const int64_t> x = ctx.input_shape(0);
  if (!ctx.input_rank_known(0) || x.empty() || x.back() == 0)
    throw oph::Error(OPH_CODE_INVALID_ARGUMENT, "x must have a known rank of 1 or more and a last dimension above 0");
  std::vector<int64_t> rows(x.begin(), x.end() - 1);  // the shape without the last axis
  ctx.set_output(0, oph::dtypes::f32, rows);
  ctx.set_output(1, oph::dtypes::i64, rows);
}

void row_argmax(const oph::KernelContext& ctx, oph::In<float> x, oph::Out<float> values, oph::Out<int64_t> indices) {
  const size_t n = static_cast<size_t>(x.shape().back());
  ctx.parallel_for(values.size(), 1024, [&](size_t begin, size_t end) {
    for (size_t r = begin; r < end; ++r) {
      const float* row = x.data() + r * n;
      const float* best = std::max_element(row, row + n);  // the first of equal maxima, as numpy.argmax
      values[r] = *best;
      indices[r] = best - row;
    }
  });
}
// [end row_argmax]

// [snippet poly]
// y = c0 + c1 x + c2 x^2 + ... (coefficients from the attribute). The kernel object is built once per node,
// when the model loads: work that depends only on attributes belongs in its constructor, not in compute.
class Poly {
 public:
  explicit Poly(const oph::KernelInit& init) : coeffs_(init.attr<std::vector<float>>("coefficients")) {
    std::reverse(coeffs_.begin(), coeffs_.end());  // highest degree first, for Horner's scheme
  }
  // compute may run concurrently for one node: it only reads the state.
  void compute(oph::KernelContext& ctx) const {
    oph::In<float> x = ctx.input<float>(0);
    oph::Out<float> y = ctx.output<float>(0);
    const float* in = x.data();
    float* out = y.data();  // may be the same buffer as `in` (MAY_INPLACE): read in[i] before writing out[i]
    ctx.parallel_for(x.size(), 16384, [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) {
        const float v = in[i];
        float acc = 0;
        for (float c : coeffs_) acc = acc * v + c;
        out[i] = acc;
      }
    });
  }
  // Optional: what `ophost inspect --kernels` shows for this node.
  oph::Implementation implementation() const { return {"horner, degree " + std::to_string(coeffs_.size() - 1), false}; }

 private:
  std::vector<float> coeffs_;
};

// infer rejects what the constructor could not handle, so a bad model fails at load with the node's name.
void poly_infer(oph::InferContext& ctx) {
  if (ctx.attr<std::vector<float>>("coefficients").empty())
    throw oph::Error(OPH_CODE_INVALID_ARGUMENT, "coefficients must hold at least one value");
  oph::same_as_input(0)(ctx);
}
// [end poly]

// [snippet positive]
// y = the elements of x above 0, in order (a 1-D output whose length only compute knows).
void positive_infer(oph::InferContext& ctx) {
  ctx.set_output(0, ctx.input_dtype(0), {-1});  // rank 1, length unknown until compute
}

void positive(oph::KernelContext& ctx) {
  oph::In<float> x = ctx.input<float>(0);
  const int64_t n = std::count_if(x.data(), x.data() + x.size(), [](float v) { return v > 0; });
  const int64_t shape[1] = {n};
  oph::TensorRef y = ctx.allocate_output(0, shape);  // the host allocates it; the shape must match infer's
  float* out = static_cast<float*>(y.data());
  for (float v : x.values())
    if (v > 0) *out++ = v;
}
// [end positive]

// [snippet pad_rows]
// y = x with `rows` rows along axis 0: cut, or padded with zeros. `rows` is a host-memory input (a shape-like
// int64 scalar): the host hands it to compute in CPU memory whatever the device, and to infer when it is a
// constant (an initializer), so the output shape is known at load; otherwise it is known when compute runs.
int64_t rows_value(const oph_tensor& t) {
  int64_t rows = 0;
  std::memcpy(&rows, static_cast<const char*>(t.data) + t.byte_offset, sizeof rows);
  if (rows < 0) throw oph::Error(OPH_CODE_INVALID_ARGUMENT, "rows must be 0 or more, got " + std::to_string(rows));
  return rows;
}

void pad_rows_infer(oph::InferContext& ctx) {
  std::span<const int64_t> x = ctx.input_shape(0);
  if (!ctx.input_rank_known(0) || x.empty()) throw oph::Error(OPH_CODE_INVALID_ARGUMENT, "x must have rank 1 or more");
  if (!ctx.input_rank_known(1) || ctx.input_shape(1).size() != 0)
    throw oph::Error(OPH_CODE_INVALID_ARGUMENT, "rows must be a scalar (rank 0)");
  std::vector<int64_t> y(x.begin(), x.end());
  const oph_tensor* rows = ctx.input_constant(1);
  y[0] = rows ? rows_value(*rows) : -1;  // -1: known when compute runs
  ctx.set_output(0, ctx.input_dtype(0), y);
}

void pad_rows(oph::KernelContext& ctx) {
  oph::In<float> x = ctx.input<float>(0);
  std::vector<int64_t> shape(x.shape().begin(), x.shape().end());
  shape[0] = rows_value(*ctx.input<int64_t>(1).raw());
  // Preallocated when infer knew the shape; otherwise (data NULL) allocated here.
  oph::TensorRef y = ctx.output(0).raw()->data ? ctx.output(0) : ctx.allocate_output(0, shape);
  float* out = static_cast<float*>(y.data());
  const size_t keep = std::min(x.size(), y.size());
  std::copy(x.data(), x.data() + keep, out);
  std::fill(out + keep, out + y.size(), 0.0f);  // every element is written: pack check verifies it
}
// [end pad_rows]

}  // namespace

// [snippet pack]
OPH_PACK(pack) {
  pack.op("tut", "repeat_rows")
      .doc("y = x repeated `times` times along axis 0")
      .required_attr("times", OPH_ATTR_INT)  // no default: a model must give it
      .infer(repeat_rows_infer)
      .fn<repeat_rows>()
      .input_names({"x"})
      .output_names({"y"});

  pack.op("tut", "row_argmax")
      .doc("largest value of each row (last axis) and its index")
      .infer(row_argmax_infer)
      .fn<row_argmax>()  // In<float>, Out<float>, Out<int64_t>: type variables T (float32) and T1 (int64)
      .input_names({"x"})
      .output_names({"values", "indices"});

  pack.op("tut", "poly")
      .doc("y = c0 + c1 x + c2 x^2 + ...")
      .input("x", "T")
      .output("y", "T")
      .types("T", {oph::dtypes::f32})
      .attr("coefficients", std::vector<float>{0.0f, 1.0f})  // default: y = x
      .infer(poly_infer)
      .kernel<Poly>()
      .may_inplace(0, 0);  // y may take over x's buffer when x has no later reader

  pack.op("tut", "positive")
      .doc("the elements of x above 0, as a 1-D tensor")
      .input("x", "T")
      .output("y", "T")
      .types("T", {oph::dtypes::f32})
      .infer(positive_infer)
      .compute(positive);

  pack.op("tut", "pad_rows")
      .doc("x cut or zero-padded to `rows` rows along axis 0")
      .input("x", "T")
      .input("rows", "I", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)  // shape-like: always in CPU memory
      .output("y", "T")
      .types("T", {oph::dtypes::f32})
      .types("I", {oph::dtypes::i64})
      .infer(pad_rows_infer)
      .compute(pad_rows);
}
// [end pack]
