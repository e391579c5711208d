// onnx-core: signal processing (opset 17): HannWindow, HammingWindow, BlackmanWindow, DFT, STFT, MelWeightMatrix.
// Transforms are direct O(n^2) sums in double precision (correct before fast).
#include "common.hpp"

#include <cmath>
#include <numbers>

namespace onnx_core {
namespace {

constexpr double kPi = std::numbers::pi;

// Output dtypes (T2): the ones the output_datatype attribute may name.
const std::vector<oph_dtype> kWindowOut = {f32, f64, i8, i16, i32, i64, u8, u16, u32, u64};

// The dtype named by the output_datatype attribute.
oph_dtype output_datatype(const oph::InferContext& c, const std::string& op) {
  return dtype_from_onnx(c.attr<int64_t>("output_datatype"), kWindowOut, op, "output_datatype");
}

// Writes doubles into a tensor of any dtype in kWindowOut.
void store_doubles(const oph::TensorRef& t, const std::vector<double>& v, const std::string& op) {
  auto put = [&]<class T>(std::type_identity<T>) {
    T* p = static_cast<T*>(t.data());
    for (size_t i = 0; i < v.size(); ++i) p[i] = static_cast<T>(v[i]);
  };
  if (!try_dispatch_numeric_all(t.dtype(), put))
    fail(op + ": output dtype " + oph::dtype_name(t.dtype()) + " is not supported", OPH_CODE_UNIMPLEMENTED);
}

int64_t scalar_int(const oph_tensor* t, const std::string& op, const char* what) {
  auto v = read_ints(t, op, what);
  if (v.size() != 1) fail(op + ": " + what + " must be a scalar");
  return v[0];
}
double scalar_float(const oph::TensorRef& t, const std::string& op, const char* what) {
  if (t.size() != 1) fail(op + ": " + what + " must be a scalar");
  if (t.dtype() == f32) return *static_cast<const float*>(t.data());
  if (t.dtype() == f64) return *static_cast<const double*>(t.data());
  fail(op + ": " + what + " of dtype " + oph::dtype_name(t.dtype()) + " is not supported", OPH_CODE_UNIMPLEMENTED);
}

std::vector<double> read_doubles(const oph::TensorRef& t, const std::string& op) {
  std::vector<double> v(t.size());
  dispatch_float(t.dtype(), op, [&]<class T>(std::type_identity<T>) {
    const T* p = static_cast<const T*>(t.data());
    for (size_t i = 0; i < v.size(); ++i) v[i] = p[i];
  });
  return v;
}

// ----- window functions -----

enum class Window { kHann, kHamming, kBlackman };

void register_window(oph::Pack& pack, const char* name, Window w) {
  const std::string op = name;
  auto& b = pack.op(kDomain, name)
                .versions(17, OPH_OPSET_MAX)
                .doc("window function of the given length")
                .input("size", "T1", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)
                .output("output", "T2")
                .attr("output_datatype", int64_t{1})
                .attr("periodic", int64_t{1});
  add_types(b, "T1", {i32, i64});
  add_types(b, "T2", kWindowOut);
  b.infer([op](oph::InferContext& c) {
    oph_dtype out = output_datatype(c, op);
    const oph_tensor* s = c.input_constant(0);
    c.set_output(0, out, {s ? scalar_int(s, op, "size") : OPH_DIM_UNKNOWN});
  });
  b.compute([op, w](oph::KernelContext& ctx) {
    const int64_t n = scalar_int(input(ctx, 0, op).raw(), op, "size");
    if (n < 0) fail(op + ": size must be >= 0");
    const bool periodic = ctx.attr<int64_t>("periodic") != 0;
    const double N1 = periodic ? static_cast<double>(n) : static_cast<double>(n - 1);
    // The output first: the host checks its size against the tensor cap before anything as big is allocated.
    const int64_t shape[1] = {n};
    oph::TensorRef y = ensure_output(ctx, 0, shape, op);
    if (!y.present()) return;
    std::vector<double> v(n);
    for (int64_t i = 0; i < n; ++i) {
      const double x = N1 == 0 ? 0 : 2 * kPi * static_cast<double>(i) / N1;
      switch (w) {
        case Window::kHann: v[i] = 0.5 - 0.5 * std::cos(x); break;
        case Window::kHamming: v[i] = 25.0 / 46.0 - (1 - 25.0 / 46.0) * std::cos(x); break;
        case Window::kBlackman: v[i] = 0.42 - 0.5 * std::cos(x) + 0.08 * std::cos(2 * x); break;
      }
    }
    store_doubles(y, v, op);
  });
}

// ----- DFT -----

// out[k] = sum_{t < n_in} in[t] * exp(sign * 2 pi i k t / L), k < n_out; complex values interleaved (re, im).
void dft_1d(const double* in, size_t n_in, size_t L, size_t n_out, bool inverse, double* out) {
  const double sign = inverse ? 1.0 : -1.0;
  for (size_t k = 0; k < n_out; ++k) {
    double re = 0, im = 0;
    for (size_t t = 0; t < n_in && t < L; ++t) {
      const double a = sign * 2 * kPi * static_cast<double>((k * t) % L) / static_cast<double>(L);
      const double c = std::cos(a), s = std::sin(a);
      re += in[2 * t] * c - in[2 * t + 1] * s;
      im += in[2 * t] * s + in[2 * t + 1] * c;
    }
    if (inverse) {
      re /= static_cast<double>(L);
      im /= static_cast<double>(L);
    }
    out[2 * k] = re;
    out[2 * k + 1] = im;
  }
}

int64_t dft_axis(int64_t axis, size_t rank) {
  // Accepted: [-r, -2] and [0, r-2] where r is the input's rank (the last dim holds re/im).
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis > r - 2 || axis == -1)
    fail("DFT: axis " + std::to_string(axis) + " is out of range for an input of rank " + std::to_string(r));
  return axis < 0 ? axis + r : axis;
}

std::vector<int64_t> dft_shape(std::span<const int64_t> xs, int64_t axis, int64_t len, bool onesided) {
  std::vector<int64_t> out(xs.begin(), xs.end());
  out[axis] = len < 0 ? OPH_DIM_UNKNOWN : (onesided ? len / 2 + 1 : len);
  out.back() = 2;
  return out;
}

void dft_infer(oph::InferContext& c) {
  if (!c.input_rank_known(0)) return c.set_output_unknown_rank(0, c.input_dtype(0));
  auto xs = c.input_shape(0);
  if (xs.size() < 2) fail("DFT: input must have rank >= 2");
  if (xs.back() >= 0 && xs.back() != 1 && xs.back() != 2) fail("DFT: the last dim of the input must be 1 or 2");
  const int64_t axis = dft_axis(c.attr<int64_t>("axis"), xs.size());
  int64_t len = xs[axis];
  if (c.has_input(1)) {
    const oph_tensor* l = c.input_constant(1);
    len = l ? scalar_int(l, "DFT", "dft_length") : OPH_DIM_UNKNOWN;
  }
  c.set_output(0, c.input_dtype(0), dft_shape(xs, axis, len, c.attr<int64_t>("onesided") != 0));
}

void dft_compute(oph::KernelContext& ctx) {
  const std::string op = "DFT";
  oph::TensorRef x = input(ctx, 0, op);
  auto xs = x.shape();
  if (xs.size() < 2 || (xs.back() != 1 && xs.back() != 2)) fail(op + ": input must be [..., 1 or 2], got " + shape_str(xs));
  const int64_t axis = dft_axis(ctx.attr<int64_t>("axis"), xs.size());
  const bool inverse = ctx.attr<int64_t>("inverse") != 0, onesided = ctx.attr<int64_t>("onesided") != 0;
  if (inverse && onesided) fail(op + ": inverse with onesided=1 is not supported", OPH_CODE_UNIMPLEMENTED);
  int64_t L = xs[axis];
  if (ctx.input(1).present()) L = scalar_int(ctx.input(1).raw(), op, "dft_length");
  if (L < 1) fail(op + ": dft_length must be >= 1");
  auto os = dft_shape(xs, axis, L, onesided);
  oph::TensorRef y = ensure_output(ctx, 0, os, op);
  if (!y.present()) return;
  const bool cplx = xs.back() == 2;
  const size_t n_in = xs[axis], n_out = os[axis];
  const size_t outer = oph::numel(xs.first(axis)), inner = oph::numel(xs.subspan(axis + 1, xs.size() - axis - 2));
  std::vector<double> xv = read_doubles(x, op), yv(oph::numel(os));
  std::vector<double> sig(2 * n_in), res(2 * n_out);
  for (size_t o = 0; o < outer; ++o)
    for (size_t i = 0; i < inner; ++i) {
      for (size_t t = 0; t < n_in; ++t) {
        const size_t src = ((o * n_in + t) * inner + i) * (cplx ? 2 : 1);
        sig[2 * t] = xv[src];
        sig[2 * t + 1] = cplx ? xv[src + 1] : 0.0;
      }
      dft_1d(sig.data(), n_in, L, n_out, inverse, res.data());
      for (size_t k = 0; k < n_out; ++k) {
        const size_t dst = ((o * n_out + k) * inner + i) * 2;
        yv[dst] = res[2 * k];
        yv[dst + 1] = res[2 * k + 1];
      }
    }
  store_doubles(y, yv, op);
}

// ----- STFT -----

struct StftDims {
  int64_t frames = OPH_DIM_UNKNOWN, frame_length = OPH_DIM_UNKNOWN, bins = OPH_DIM_UNKNOWN;
};

void stft_infer(oph::InferContext& c) {
  const std::string op = "STFT";
  if (!c.input_rank_known(0)) return c.set_output_unknown_rank(0, c.input_dtype(0));
  auto xs = c.input_shape(0);
  if (xs.size() != 3) fail(op + ": signal must be [batch, length, 1 or 2], got " + shape_str(xs));
  int64_t step = c.input_constant(1) ? scalar_int(c.input_constant(1), op, "frame_step") : OPH_DIM_UNKNOWN;
  int64_t fl = OPH_DIM_UNKNOWN;
  if (c.has_input(3)) fl = c.input_constant(3) ? scalar_int(c.input_constant(3), op, "frame_length") : OPH_DIM_UNKNOWN;
  else if (c.has_input(2) && c.input_rank_known(2) && c.input_shape(2).size() == 1) fl = c.input_shape(2)[0];
  const bool onesided = c.attr<int64_t>("onesided") != 0;
  int64_t frames = (step > 0 && fl > 0 && xs[1] >= 0) ? (xs[1] - fl) / step + 1 : OPH_DIM_UNKNOWN;
  int64_t bins = fl < 0 ? OPH_DIM_UNKNOWN : (onesided ? fl / 2 + 1 : fl);
  c.set_output(0, c.input_dtype(0), {xs[0], frames, bins, 2});
}

void stft_compute(oph::KernelContext& ctx) {
  const std::string op = "STFT";
  oph::TensorRef x = input(ctx, 0, op);
  auto xs = x.shape();
  if (xs.size() != 3 || (xs[2] != 1 && xs[2] != 2)) fail(op + ": signal must be [batch, length, 1 or 2], got " + shape_str(xs));
  const int64_t step = scalar_int(input(ctx, 1, op).raw(), op, "frame_step");
  oph::TensorRef win = ctx.input(2);
  int64_t fl = -1;
  if (ctx.input(3).present()) fl = scalar_int(ctx.input(3).raw(), op, "frame_length");
  if (win.present()) {
    if (win.ndim() != 1) fail(op + ": window must be 1-D");
    if (fl >= 0 && fl != win.shape()[0]) fail(op + ": frame_length and the window's length differ");
    fl = win.shape()[0];
  }
  if (fl < 1) fail(op + ": frame_length (or a window) is required and must be >= 1");
  if (step < 1) fail(op + ": frame_step must be >= 1");
  const bool onesided = ctx.attr<int64_t>("onesided") != 0;
  const bool cplx = xs[2] == 2;
  if (cplx && onesided) fail(op + ": onesided=1 requires a real signal");
  if (xs[1] < fl) fail(op + ": the signal is shorter than one frame");
  const int64_t frames = (xs[1] - fl) / step + 1, bins = onesided ? fl / 2 + 1 : fl;
  const int64_t os[4] = {xs[0], frames, bins, 2};
  oph::TensorRef y = ensure_output(ctx, 0, os, op);
  if (!y.present()) return;
  std::vector<double> xv = read_doubles(x, op), wv;
  if (win.present()) wv = read_doubles(win, op);
  std::vector<double> yv(oph::numel(os)), sig(2 * fl), res(2 * bins);
  const size_t ch = cplx ? 2 : 1;
  for (int64_t b = 0; b < xs[0]; ++b)
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t t = 0; t < fl; ++t) {
        const size_t src = (b * xs[1] + f * step + t) * ch;
        const double w = wv.empty() ? 1.0 : wv[t];
        sig[2 * t] = xv[src] * w;
        sig[2 * t + 1] = cplx ? xv[src + 1] * w : 0.0;
      }
      dft_1d(sig.data(), fl, fl, bins, false, res.data());
      std::copy(res.begin(), res.end(), yv.begin() + (b * frames + f) * bins * 2);
    }
  store_doubles(y, yv, op);
}

// ----- MelWeightMatrix -----

void mel_compute(oph::KernelContext& ctx) {
  const std::string op = "MelWeightMatrix";
  const int64_t num_mel = scalar_int(input(ctx, 0, op).raw(), op, "num_mel_bins");
  const int64_t dft_len = scalar_int(input(ctx, 1, op).raw(), op, "dft_length");
  const int64_t rate = scalar_int(input(ctx, 2, op).raw(), op, "sample_rate");
  const double lo = scalar_float(input(ctx, 3, op), op, "lower_edge_hertz");
  const double hi = scalar_float(input(ctx, 4, op), op, "upper_edge_hertz");
  if (num_mel < 1 || dft_len < 1 || rate < 1) fail(op + ": num_mel_bins, dft_length and sample_rate must be >= 1");
  if (!std::isfinite(lo) || !std::isfinite(hi)) fail(op + ": lower_edge_hertz and upper_edge_hertz must be finite");
  const int64_t spec_bins = dft_len / 2 + 1;
  // The output first: the host checks [spec_bins, num_mel] against the tensor cap (and for overflow) before the
  // scratch below, as big, is allocated.
  const int64_t os[2] = {spec_bins, num_mel};
  oph::TensorRef y = ensure_output(ctx, 0, os, op);
  if (!y.present()) return;
  // Mel-spaced band edges, mapped to DFT bins (as the ONNX reference does).
  const double lo_mel = 2595 * std::log10(1 + lo / 700), hi_mel = 2595 * std::log10(1 + hi / 700);
  const double step = (hi_mel - lo_mel) / static_cast<double>(num_mel + 2);
  std::vector<int64_t> fb(num_mel + 2);
  for (int64_t i = 0; i < num_mel + 2; ++i) {
    double hz = 700 * (std::pow(10.0, (static_cast<double>(i) * step + lo_mel) / 2595) - 1);
    fb[i] = static_cast<int64_t>(std::floor(static_cast<double>(dft_len + 1) * hz / static_cast<double>(rate)));
  }
  std::vector<double> w(spec_bins * num_mel, 0.0);
  auto at = [&](int64_t j, int64_t i) -> double& {
    if (j < 0 || j >= spec_bins) fail(op + ": band edge outside the spectrum (check the edge frequencies)");
    return w[j * num_mel + i];
  };
  for (int64_t i = 0; i < num_mel; ++i) {
    const int64_t l = fb[i], c = fb[i + 1], h = fb[i + 2];
    if (c == l) at(c, i) = 1;
    else
      for (int64_t j = l; j <= c; ++j) at(j, i) = static_cast<double>(j - l) / static_cast<double>(c - l);
    if (h > c)
      for (int64_t j = c; j < h; ++j) at(j, i) = static_cast<double>(h - j) / static_cast<double>(h - c);
  }
  store_doubles(y, w, op);
}

void register_signal(oph::Pack& pack) {
  register_window(pack, "HannWindow", Window::kHann);
  register_window(pack, "HammingWindow", Window::kHamming);
  register_window(pack, "BlackmanWindow", Window::kBlackman);

  auto& d = pack.op(kDomain, "DFT")
                .versions(17, 19)
                .doc("discrete Fourier transform along one axis (direct sum)")
                .input("input", "T1")
                .optional_input("dft_length", "T2", OPH_MEMORY_HOST)
                .output("output", "T1")
                .attr("axis", int64_t{1})
                .attr("inverse", int64_t{0})
                .attr("onesided", int64_t{0})
                .infer(&dft_infer)
                .compute(&dft_compute);
  add_types(d, "T1", kFloat);
  add_types(d, "T2", {i32, i64});

  auto& s = pack.op(kDomain, "STFT")
                .versions(17, OPH_OPSET_MAX)
                .doc("short-time Fourier transform (direct sums)")
                .input("signal", "T1")
                .input("frame_step", "T2", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)
                .optional_input("window", "T1")
                .optional_input("frame_length", "T2", OPH_MEMORY_HOST)
                .output("output", "T1")
                .attr("onesided", int64_t{1})
                .infer(&stft_infer)
                .compute(&stft_compute);
  add_types(s, "T1", kFloat);
  add_types(s, "T2", {i32, i64});

  auto& m = pack.op(kDomain, "MelWeightMatrix")
                .versions(17, OPH_OPSET_MAX)
                .doc("mel filter bank weights [dft_length/2+1, num_mel_bins]")
                .input("num_mel_bins", "T1", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)
                .input("dft_length", "T1", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)
                .input("sample_rate", "T1", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)
                .input("lower_edge_hertz", "T2", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)
                .input("upper_edge_hertz", "T2", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)
                .output("output", "T3")
                .attr("output_datatype", int64_t{1})
                .infer([](oph::InferContext& c) {
                  const std::string op = "MelWeightMatrix";
                  oph_dtype out = output_datatype(c, op);
                  const oph_tensor* n = c.input_constant(0);
                  const oph_tensor* l = c.input_constant(1);
                  c.set_output(0, out, {l ? scalar_int(l, op, "dft_length") / 2 + 1 : OPH_DIM_UNKNOWN,
                                        n ? scalar_int(n, op, "num_mel_bins") : OPH_DIM_UNKNOWN});
                })
                .compute(&mel_compute);
  add_types(m, "T1", {i32, i64});
  add_types(m, "T2", kFloat);
  add_types(m, "T3", kWindowOut);
}

}  // namespace

static const Family kFamily("signal", &register_signal);

}  // namespace onnx_core
