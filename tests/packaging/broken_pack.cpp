// One op with one deliberate mistake, for the tests of `ophost pack check`: ONE source compiled into a pack per
// variant (tests/packaging/CMakeLists.txt, one compile definition each). Every op is float32 in, float32 out.
//
//   BROKEN_CLEAN       broken::scale      correct (pack check is clean)
//   BROKEN_UNWRITTEN   broken::unwritten  infer says n + 2 elements, compute writes n
//   BROKEN_PAST_ONE    broken::past_one   writes 1 element past the end of its output
//   BROKEN_PAST_256    broken::past_256   writes 256 bytes past the end of its output
//   BROKEN_INPLACE     broken::reverse    declared MAY_INPLACE, wrong in place
//   BROKEN_SCRIBBLE    broken::scribble   writes into its input (not declared MUTATES_INPUT)
//   BROKEN_THROW       broken::throws     compute throws std::runtime_error
//   BROKEN_ERROR       broken::fails      compute returns an error status (oph::Error)
//   BROKEN_SEGV        broken::segv       compute dereferences a bad pointer
//   BROKEN_HANG        broken::hang       compute never returns
//   BROKEN_REQ_ATTR    broken::scale_by   required int attribute 'k' (correct with it)
//   BROKEN_RANK2       broken::bias_rows  x [N, C] + bias [C] only; infer rejects other shapes (correct)
//   BROKEN_NAN_ZERO    broken::relu       y = x > 0 ? x : 0, so NaN in gives 0 out (ONNX Relu keeps NaN);
//                      broken::count_nan  float32 x -> int64 scalar y, the number of NaNs in x (correct)
#include <ophost/ophost_plugin.hpp>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace oph = ophost::sdk;

namespace {

[[maybe_unused]] void scale(oph::In<float> x, oph::Out<float> y) {
  for (size_t i = 0; i < x.size(); ++i) y[i] = 2.0f * x[i];
}

[[maybe_unused]] void unwritten(oph::In<float> x, oph::Out<float> y) {
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i];  // y has x.size() + 2 elements
}

[[maybe_unused]] void past_one(oph::In<float> x, oph::Out<float> y) {
  float* out = y.data();
  for (size_t i = 0; i <= x.size(); ++i) out[i] = x[i < x.size() ? i : 0];
}

[[maybe_unused]] void past_256(oph::In<float> x, oph::Out<float> y) {
  float* out = y.data();
  for (size_t i = 0; i < x.size() + 64; ++i) out[i] = 1.0f;  // 64 floats = 256 bytes too many
}

[[maybe_unused]] void reverse(oph::In<float> x, oph::Out<float> y) {
  size_t n = x.size();
  for (size_t i = 0; i < n; ++i) y[i] = x[n - 1 - i];
}

[[maybe_unused]] void scribble(oph::In<float> x, oph::Out<float> y) {
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i];
  if (x.size() > 0) const_cast<float*>(x.data())[x.size() - 1] = 123.0f;
}

[[maybe_unused]] void throws(oph::In<float>, oph::Out<float>) {
  throw std::runtime_error("broken::throws does not support this layout");
}

[[maybe_unused]] void fails(oph::In<float>, oph::Out<float>) {
  throw oph::Error(OPH_CODE_UNIMPLEMENTED, "broken::fails: not implemented for these inputs");
}

[[maybe_unused]] void segv(oph::In<float> x, oph::Out<float> y) {
  volatile uintptr_t address = 16;  // volatile: a real load of a bad pointer, not a trap the compiler inserts
  float* bad = reinterpret_cast<float*>(address);
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] + bad[i];
}

[[maybe_unused]] void hang(oph::In<float> x, oph::Out<float> y) {
  volatile bool forever = true;
  while (forever) {
  }
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i];
}

// Rows of x plus bias: x must be rank 2 [N, C] and bias rank 1 [C].
[[maybe_unused]] void bias_infer(oph::InferContext& c) {
  auto x = c.input_shape(0);
  auto b = c.input_shape(1);
  if (x.size() != 2) throw oph::Error(OPH_CODE_INVALID_ARGUMENT, "x must be rank 2, got rank " + std::to_string(x.size()));
  if (b.size() != 1 || b[0] != x[1])
    throw oph::Error(OPH_CODE_INVALID_ARGUMENT, "bias must be [C] with C = x's dim 1");
  c.set_output(0, c.input_dtype(0), x);
}

[[maybe_unused]] void bias_rows(oph::In<float> x, oph::In<float> bias, oph::Out<float> y) {
  size_t c = bias.size();
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] + bias[i % c];
}

[[maybe_unused]] void relu_nan_zero(oph::In<float> x, oph::Out<float> y) {
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;  // NaN > 0 is false: 0
}

[[maybe_unused]] void count_nan(oph::In<float> x, oph::Out<int64_t> y) {
  int64_t n = 0;
  for (size_t i = 0; i < x.size(); ++i) n += std::isnan(x[i]) ? 1 : 0;
  y[0] = n;
}

}  // namespace

OPH_PACK(pack) {
#if defined(BROKEN_CLEAN)
  pack.op("broken", "scale").infer(oph::same_as_input(0)).fn<scale>().may_inplace(0, 0);
#elif defined(BROKEN_UNWRITTEN)
  pack.op("broken", "unwritten")
      .infer([](oph::InferContext& c) {
        int64_t n = 1;
        for (int64_t d : c.input_shape(0)) n *= d;
        c.set_output(0, c.input_dtype(0), {n + 2});
      })
      .fn<unwritten>();
#elif defined(BROKEN_PAST_ONE)
  pack.op("broken", "past_one").infer(oph::same_as_input(0)).fn<past_one>();
#elif defined(BROKEN_PAST_256)
  pack.op("broken", "past_256").infer(oph::same_as_input(0)).fn<past_256>();
#elif defined(BROKEN_INPLACE)
  pack.op("broken", "reverse").infer(oph::same_as_input(0)).fn<reverse>().may_inplace(0, 0);
#elif defined(BROKEN_SCRIBBLE)
  pack.op("broken", "scribble").infer(oph::same_as_input(0)).fn<scribble>();
#elif defined(BROKEN_THROW)
  pack.op("broken", "throws").infer(oph::same_as_input(0)).fn<throws>();
#elif defined(BROKEN_ERROR)
  pack.op("broken", "fails").infer(oph::same_as_input(0)).fn<fails>();
#elif defined(BROKEN_SEGV)
  // A correct op after the crashing one: the check goes on with it.
  pack.op("broken", "segv").infer(oph::same_as_input(0)).fn<segv>();
  pack.op("broken", "scale").infer(oph::same_as_input(0)).fn<scale>();
#elif defined(BROKEN_HANG)
  pack.op("broken", "hang").infer(oph::same_as_input(0)).fn<hang>();
#elif defined(BROKEN_REQ_ATTR)
  pack.op("broken", "scale_by")
      .input("x", "T")
      .output("y", "T")
      .types("T", {oph::dtypes::f32})
      .required_attr("k", OPH_ATTR_INT)
      .infer(oph::same_as_input(0))
      .compute([](oph::KernelContext& ctx) {
        auto x = ctx.input<float>(0);
        auto y = ctx.output<float>(0);
        float k = static_cast<float>(ctx.attr<int64_t>("k"));
        for (size_t i = 0; i < x.size(); ++i) y[i] = k * x[i];
      });
#elif defined(BROKEN_RANK2)
  pack.op("broken", "bias_rows").infer(bias_infer).fn<bias_rows>().input_names({"x", "bias"});
#elif defined(BROKEN_NAN_ZERO)
  pack.op("broken", "relu").infer(oph::same_as_input(0)).fn<relu_nan_zero>().input_names({"x"}).output_names({"y"});
  pack.op("broken", "count_nan")
      .infer([](oph::InferContext& c) { c.set_output(0, oph::dtypes::i64, {}); })
      .fn<count_nan>()
      .input_names({"x"})
      .output_names({"y"});
#else
#error "define one BROKEN_* variant"
#endif
}
