// A pack whose ops load fine but misbehave at run time, for the tests of `ophost pack check`. Built with
// ophost_add_pack (so its manifest and symbols are clean); every op has exactly one problem.
#include <ophost/ophost_plugin.hpp>

#include <algorithm>

namespace oph = ophost::sdk;

namespace {

// Writes into its input (declared read-only).
void scribble(oph::In<float> x, oph::Out<float> y) {
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i];
  if (x.size() > 0) const_cast<float*>(x.data())[0] = 123.0f;
}

// y[i] = x[n-1-i], declared MAY_INPLACE: wrong when y and x share a buffer.
void reverse(oph::In<float> x, oph::Out<float> y) {
  size_t n = x.size();
  for (size_t i = 0; i < n; ++i) y[i] = x[n - 1 - i];
}

// infer says [1]; compute writes two elements.
void overrun(oph::In<float> x, oph::Out<float> y) {
  float* out = y.data();
  out[0] = x.size() > 0 ? x[0] : 0.0f;
  out[1] = 1.0f;
}

// Well-behaved (the checker reports it clean).
void twice(oph::In<float> x, oph::Out<float> y) {
  for (size_t i = 0; i < x.size(); ++i) y[i] = 2.0f * x[i];
}

}  // namespace

OPH_PACK(pack) {
  pack.op("bad", "scribble").infer(oph::same_as_input(0)).fn<scribble>();
  pack.op("bad", "reverse").infer(oph::same_as_input(0)).fn<reverse>().may_inplace(0, 0);
  pack.op("bad", "overrun")
      .infer([](oph::InferContext& c) { c.set_output(0, c.input_dtype(0), {1}); })
      .fn<overrun>();
  pack.op("bad", "twice").infer(oph::same_as_input(0)).fn<twice>().may_inplace(0, 0);
}
