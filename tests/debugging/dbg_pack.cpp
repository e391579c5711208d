// Test pack for ophost diff and --debug-kernels (tests/debugging): correct ops and deliberately broken ones.
//
//   dbg::scale        y = 2x                                   correct
//   dbg::scale_wrong  y = 2x, but every 5th element + 0.25     wrong values (what ophost diff must find)
//   dbg::short_write  infer: same shape as x; writes all but the last 3 elements   (--debug-kernels: unwritten)
//   dbg::scribble     y = x, and writes 123 into x's last element (not MUTATES_INPUT) (--debug-kernels: input)
//   dbg::add_one      y = x + 1, MAY_INPLACE(0 -> 0), correct in place              (--debug-kernels: clean)
//   dbg::past_end     y = x, and one element past y's end                           (--debug-kernels: guard zone)
#include <ophost/ophost_plugin.hpp>

namespace oph = ophost::sdk;

namespace {

void scale(oph::In<float> x, oph::Out<float> y) {
  for (size_t i = 0; i < x.size(); ++i) y[i] = 2.0f * x[i];
}

void scale_wrong(oph::In<float> x, oph::Out<float> y) {
  for (size_t i = 0; i < x.size(); ++i) y[i] = 2.0f * x[i] + (i % 5 == 0 ? 0.25f : 0.0f);
}

void short_write(oph::In<float> x, oph::Out<float> y) {
  for (size_t i = 0; i + 3 < x.size(); ++i) y[i] = x[i];
}

void scribble(oph::In<float> x, oph::Out<float> y) {
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i];
  if (x.size() > 0) const_cast<float*>(x.data())[x.size() - 1] = 123.0f;
}

void add_one(oph::In<float> x, oph::Out<float> y) {
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] + 1.0f;
}

void past_end(oph::In<float> x, oph::Out<float> y) {
  float* out = y.data();
  for (size_t i = 0; i <= x.size(); ++i) out[i] = i < x.size() ? x[i] : 7.0f;
}

}  // namespace

OPH_PACK(pack) {
  pack.op("dbg", "scale").infer(oph::same_as_input(0)).fn<scale>();
  pack.op("dbg", "scale_wrong").infer(oph::same_as_input(0)).fn<scale_wrong>();
  pack.op("dbg", "short_write").infer(oph::same_as_input(0)).fn<short_write>();
  pack.op("dbg", "scribble").infer(oph::same_as_input(0)).fn<scribble>();
  pack.op("dbg", "add_one").infer(oph::same_as_input(0)).fn<add_one>().may_inplace(0, 0);
  pack.op("dbg", "past_end").infer(oph::same_as_input(0)).fn<past_end>();
}
