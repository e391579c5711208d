// onnx-core: normalization: BatchNormalization (inference; opsets 7, 9, 14, 15), InstanceNormalization,
// LayerNormalization (17, and com.ophost::LayerNormalization for the host's layer-norm-fusion), LRN (1, 13), MeanVarianceNormalization (9, 13).
#include "common.hpp"
#include "norm_simd.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace onnx_core {
namespace {

// Values of a float32/float64 tensor as doubles.
std::vector<double> read_floats(const oph::TensorRef& t, const std::string& op, const char* what) {
  std::vector<double> v(t.size());
  if (t.dtype() == f32) {
    const float* p = static_cast<const float*>(t.data());
    for (size_t i = 0; i < v.size(); ++i) v[i] = p[i];
  } else if (t.dtype() == f64) {
    const double* p = static_cast<const double*>(t.data());
    for (size_t i = 0; i < v.size(); ++i) v[i] = p[i];
  } else {
    fail(op + ": " + what + " must be float32 or float64, got " + oph::dtype_name(t.dtype()), OPH_CODE_UNIMPLEMENTED);
  }
  return v;
}

// y[p, i] = x[p, i] * a[c(p), i?] + b[...] over planes p = n*C + c of `inner` elements.
template <class T>
void affine_planes(const T* x, T* y, size_t N, size_t C, size_t inner,
                   const std::vector<T>& a, const std::vector<T>& b, bool per_element) {
  const T* ap = a.data();
  const T* bp = b.data();
  parallel_for(N * C, std::max<size_t>(1, kGrain / std::max<size_t>(inner, 1)), [=](size_t lo, size_t hi) {
    for (size_t p = lo; p < hi; ++p) {
      const size_t c = p % C;
      const T* xs = x + p * inner;
      T* ys = y + p * inner;
      if (per_element) {
        const T* as = ap + c * inner;
        const T* bs = bp + c * inner;
        for (size_t i = 0; i < inner; ++i) ys[i] = xs[i] * as[i] + bs[i];
      } else {
        const T av = ap[c], bv = bp[c];
        for (size_t i = 0; i < inner; ++i) ys[i] = xs[i] * av + bv;
      }
    }
  });
}

// ----- BatchNormalization -----

struct BatchNormKernel {
  float epsilon;
  bool spatial = true;
  explicit BatchNormKernel(const oph::KernelInit& init) : epsilon(init.attr<float>("epsilon")) {
    const oph::Attrs& at = init.attrs();
    try {
      spatial = at.get<int64_t>("spatial") != 0;
    } catch (const oph::Error&) {
    }
    try {
      if (at.get<int64_t>("training_mode") != 0)
        fail("BatchNormalization: training_mode=1 is not supported (onnx-core runs inference only)",
             OPH_CODE_UNIMPLEMENTED);
    } catch (const oph::Error& e) {
      if (std::string(e.what()).find("training_mode=1") != std::string::npos) throw;
    }
    for (size_t i = 1; i < init.num_outputs(); ++i)
      if (init.output(i).present)
        fail("BatchNormalization: output " + std::to_string(i) +
                 " (running/saved statistics) is only produced in training mode, which onnx-core does not support",
             OPH_CODE_UNIMPLEMENTED);
  }
  void compute(oph::KernelContext& ctx) {
    const std::string op = "BatchNormalization";
    oph::TensorRef x = input(ctx, 0, op);
    auto xs = x.shape();
    if (xs.size() < 2) fail(op + ": X must have rank >= 2 (N, C, ...), got " + shape_str(xs));
    oph::TensorRef y = ensure_output(ctx, 0, xs, op);
    if (!y.present()) return;
    const size_t N = xs[0], C = xs[1], inner = N * C ? x.size() / (N * C) : 0;
    const size_t plen = spatial ? C : C * inner;
    std::vector<double> sc = read_floats(input(ctx, 1, op), op, "scale"), bi = read_floats(input(ctx, 2, op), op, "B"),
                        mean = read_floats(input(ctx, 3, op), op, "mean"), var = read_floats(input(ctx, 4, op), op, "var");
    for (auto* v : {&sc, &bi, &mean, &var})
      if (v->size() != plen)
        fail(op + ": scale, B, mean and var must have " + std::to_string(plen) + " values (X " + shape_str(xs) + ")");
    dispatch_float(x.dtype(), op, [&]<class T>(std::type_identity<T>) {
      std::vector<T> a(plen), b(plen);
      for (size_t i = 0; i < plen; ++i) {
        // Same rounding as the straightforward float formula: a = scale / sqrt(var + eps) in T.
        T inv = T(1) / std::sqrt(static_cast<T>(var[i]) + static_cast<T>(epsilon));
        a[i] = static_cast<T>(sc[i]) * inv;
        b[i] = static_cast<T>(bi[i]) - static_cast<T>(mean[i]) * a[i];
      }
      affine_planes<T>(static_cast<const T*>(x.data()), static_cast<T*>(y.data()), N, C, inner, a, b, !spatial);
    });
  }
};

// ----- InstanceNormalization -----

struct InstanceNormKernel {
  float epsilon;
  explicit InstanceNormKernel(const oph::KernelInit& init) : epsilon(init.attr<float>("epsilon")) {}
  void compute(oph::KernelContext& ctx) {
    const std::string op = "InstanceNormalization";
    oph::TensorRef x = input(ctx, 0, op);
    auto xs = x.shape();
    if (xs.size() < 3) fail(op + ": X must have rank >= 3 (N, C, spatial...), got " + shape_str(xs));
    oph::TensorRef y = ensure_output(ctx, 0, xs, op);
    if (!y.present()) return;
    const size_t N = xs[0], C = xs[1], inner = N * C ? x.size() / (N * C) : 0;
    std::vector<double> sc = read_floats(input(ctx, 1, op), op, "scale"), bi = read_floats(input(ctx, 2, op), op, "B");
    if (sc.size() != C || bi.size() != C) fail(op + ": scale and B must have " + std::to_string(C) + " values");
    const double eps = epsilon;
    dispatch_float(x.dtype(), op, [&]<class T>(std::type_identity<T>) {
      const T* xp = static_cast<const T*>(x.data());
      T* yp = static_cast<T*>(y.data());
      parallel_for(N * C, 1, [&](size_t lo, size_t hi) {
        for (size_t p = lo; p < hi; ++p) {
          const T* s = xp + p * inner;
          double sum = 0, sq = 0;
          for (size_t i = 0; i < inner; ++i) sum += s[i];
          const double mean = inner ? sum / inner : 0;
          for (size_t i = 0; i < inner; ++i) sq += (s[i] - mean) * (s[i] - mean);
          const double var = inner ? sq / inner : 0;
          const size_t c = p % C;
          const T a = static_cast<T>(sc[c] / std::sqrt(var + eps));
          const T b = static_cast<T>(bi[c] - mean * sc[c] / std::sqrt(var + eps));
          T* d = yp + p * inner;
          for (size_t i = 0; i < inner; ++i) d[i] = s[i] * a + b;
        }
      });
    });
  }
};

// ----- LayerNormalization (17) -----
// float32 rows on Highway (norm_simd.cpp: vector lanes, the ISA oneDNN is capped at), float64 in scalar loops;
// parallel over rows.

int64_t layer_norm_axis(int64_t axis, size_t rank) { return normalize_axis(axis, static_cast<int64_t>(rank), true, "LayerNormalization"); }

void layer_norm_infer(oph::InferContext& c) {
  if (!c.input_rank_known(0)) {
    c.set_output_unknown_rank(0, c.input_dtype(0));
    return;
  }
  auto xs = c.input_shape(0);
  int64_t axis = layer_norm_axis(c.attr<int64_t>("axis"), xs.size());
  int64_t stash = c.attr<int64_t>("stash_type");
  if (stash != 1) fail("LayerNormalization: stash_type " + std::to_string(stash) + " is not supported (only 1: float32)", OPH_CODE_UNIMPLEMENTED);
  c.set_output(0, c.input_dtype(0), xs);
  std::vector<int64_t> ms(xs.begin(), xs.end());
  for (size_t i = axis; i < ms.size(); ++i) ms[i] = 1;
  c.set_output(1, f32, ms);
  c.set_output(2, f32, ms);
}

struct LayerNormKernel {
  int64_t axis;
  float epsilon;
  explicit LayerNormKernel(const oph::KernelInit& init)
      : axis(init.attr<int64_t>("axis")), epsilon(init.attr<float>("epsilon")) {
    if (init.attr<int64_t>("stash_type") != 1)
      fail("LayerNormalization: only stash_type=1 (float32) is supported", OPH_CODE_UNIMPLEMENTED);
  }
  oph::Implementation implementation() {
    return {std::string("Highway ") + norm_simd::target_name() + " (float32; float64: scalar loops)", false};
  }
  void compute(oph::KernelContext& ctx) {
    const std::string op = "LayerNormalization";
    oph::TensorRef x = input(ctx, 0, op);
    auto xs = x.shape();
    const int64_t ax = layer_norm_axis(axis, xs.size());
    oph::TensorRef y = ensure_output(ctx, 0, xs, op);
    std::vector<int64_t> ms(xs.begin(), xs.end());
    for (size_t i = ax; i < ms.size(); ++i) ms[i] = 1;
    oph::TensorRef mo = ensure_output(ctx, 1, ms, op), io = ensure_output(ctx, 2, ms, op);
    const size_t inner = oph::numel(xs.subspan(ax)), outer = oph::numel(xs.first(ax));
    oph::TensorRef st = input(ctx, 1, op), bt = ctx.input(2);
    if (st.size() != inner && st.size() != 1) fail(op + ": Scale must have " + std::to_string(inner) + " values");
    if (bt.present() && bt.size() != inner && bt.size() != 1) fail(op + ": B must have " + std::to_string(inner) + " values");
    if (mo.present() && !(mo.dtype() == f32)) fail(op + ": Mean must be float32", OPH_CODE_UNIMPLEMENTED);
    if (io.present() && !(io.dtype() == f32)) fail(op + ": InvStdDev must be float32", OPH_CODE_UNIMPLEMENTED);
    dispatch_float(x.dtype(), op, [&]<class T>(std::type_identity<T>) {
      if (!(st.dtype() == x.dtype()) || (bt.present() && !(bt.dtype() == x.dtype())))
        fail(op + ": Scale and B must have X's dtype");
      const T* xp = static_cast<const T*>(x.data());
      T* yp = y.present() ? static_cast<T*>(y.data()) : nullptr;
      const T* sp = static_cast<const T*>(st.data());
      const T* bp = bt.present() ? static_cast<const T*>(bt.data()) : nullptr;
      const bool s1 = st.size() == 1, b1 = bt.present() && bt.size() == 1;
      float* mp = mo.present() ? static_cast<float*>(mo.data()) : nullptr;
      float* ip = io.present() ? static_cast<float*>(io.data()) : nullptr;
      const size_t grain = std::max<size_t>(1, kGrain / std::max<size_t>(inner, 1));
      if constexpr (std::is_same_v<T, float>) {
        parallel_for(outer, grain, [&](size_t lo, size_t hi) {
          norm_simd::layer_norm_rows({xp + lo * inner, yp ? yp + lo * inner : nullptr, hi - lo, inner, sp, s1, bp, b1,
                                      epsilon, mp ? mp + lo : nullptr, ip ? ip + lo : nullptr});
        });
        return;
      }
      const double eps = epsilon;
      parallel_for(outer, grain, [&](size_t lo, size_t hi) {
        for (size_t r = lo; r < hi; ++r) {
          const T* s = xp + r * inner;
          double sum = 0, sq = 0;
          for (size_t i = 0; i < inner; ++i) sum += s[i];
          const double mean = inner ? sum / inner : 0;
          for (size_t i = 0; i < inner; ++i) sq += (s[i] - mean) * (s[i] - mean);
          const double inv = 1.0 / std::sqrt((inner ? sq / inner : 0) + eps);
          if (mp) mp[r] = static_cast<float>(mean);
          if (ip) ip[r] = static_cast<float>(inv);
          if (!yp) continue;
          T* d = yp + r * inner;
          const T m = static_cast<T>(mean), iv = static_cast<T>(inv);
          for (size_t i = 0; i < inner; ++i) {
            T v = (s[i] - m) * iv * sp[s1 ? 0 : i];
            d[i] = bp ? v + bp[b1 ? 0 : i] : v;
          }
        }
      });
    });
  }
};

void bn_infer(oph::InferContext& c) {
  if (!c.input_rank_known(0)) {
    c.set_output_unknown_rank(0, c.input_dtype(0));
    return;
  }
  auto xs = c.input_shape(0);
  if (xs.size() < 2) fail("BatchNormalization: X must have rank >= 2 (N, C, ...), got " + shape_str(xs));
  c.set_output(0, c.input_dtype(0), xs);
  // Training outputs are rejected at kernel creation; give them a shape so planning can proceed to that error.
  for (size_t i = 1; i < c.num_outputs(); ++i) c.set_output(i, c.input_dtype(0), {xs[1]});
}

void lrn_compute(oph::KernelContext& ctx) {
  const std::string op = "LRN";
  oph::TensorRef x = input(ctx, 0, op);
  auto xs = x.shape();
  if (xs.size() < 3) fail(op + ": X must have rank >= 3 (N, C, spatial...)");
  oph::TensorRef y = ensure_output(ctx, 0, xs, op);
  if (!y.present()) return;
  const double alpha = ctx.attr<float>("alpha"), beta = ctx.attr<float>("beta"), bias = ctx.attr<float>("bias");
  const int64_t size = ctx.attr<int64_t>("size");
  if (size < 1) fail(op + ": size must be >= 1");
  const int64_t N = xs[0], C = xs[1];
  const size_t inner = oph::numel(xs.subspan(2));
  const int64_t lo_off = (size - 1) / 2, hi_off = size - 1 - lo_off;  // floor and ceil of (size-1)/2
  dispatch_float(x.dtype(), op, [&]<class T>(std::type_identity<T>) {
    const T* xp = static_cast<const T*>(x.data());
    T* yp = static_cast<T*>(y.data());
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (size_t i = 0; i < inner; ++i) {
          double sq = 0;
          for (int64_t k = std::max<int64_t>(0, c - lo_off); k <= std::min<int64_t>(C - 1, c + hi_off); ++k) {
            const double v = xp[(n * C + k) * inner + i];
            sq += v * v;
          }
          const size_t at = (n * C + c) * inner + i;
          yp[at] = static_cast<T>(xp[at] / std::pow(bias + alpha / static_cast<double>(size) * sq, beta));
        }
  });
}

void mvn_compute(oph::KernelContext& ctx) {
  const std::string op = "MeanVarianceNormalization";
  oph::TensorRef x = input(ctx, 0, op);
  auto xs = x.shape();
  oph::TensorRef y = ensure_output(ctx, 0, xs, op);
  if (!y.present()) return;
  std::vector<bool> reduce(xs.size(), false);
  for (int64_t a : ctx.attr<std::vector<int64_t>>("axes")) reduce[normalize_axis(a, xs.size(), true, op, "axes")] = true;
  // Group elements by their kept coordinates.
  const size_t n = x.size();
  std::vector<size_t> group(n);
  size_t ngroups = 1;
  {
    std::vector<int64_t> kept_stride(xs.size(), 0);
    for (size_t d = xs.size(); d-- > 0;)
      if (!reduce[d]) {
        kept_stride[d] = static_cast<int64_t>(ngroups);
        ngroups *= xs[d];
      }
    for (size_t i = 0; i < n; ++i) {
      size_t r = i, g = 0;
      for (size_t d = xs.size(); d-- > 0;) {
        g += (r % xs[d]) * kept_stride[d];
        r /= xs[d];
      }
      group[i] = g;
    }
  }
  dispatch_float(x.dtype(), op, [&]<class T>(std::type_identity<T>) {
    const T* xp = static_cast<const T*>(x.data());
    T* yp = static_cast<T*>(y.data());
    std::vector<double> sum(ngroups, 0), sq(ngroups, 0), cnt(ngroups, 0);
    for (size_t i = 0; i < n; ++i) {
      sum[group[i]] += xp[i];
      sq[group[i]] += static_cast<double>(xp[i]) * xp[i];
      cnt[group[i]] += 1;
    }
    for (size_t i = 0; i < n; ++i) {
      const size_t g = group[i];
      const double mean = sum[g] / cnt[g], var = std::max(0.0, sq[g] / cnt[g] - mean * mean);
      yp[i] = static_cast<T>((xp[i] - mean) / (std::sqrt(var) + 1e-9));
    }
  });
}

void register_lrn_mvn(oph::Pack& pack) {
  for (int since : {1, 13}) {
    auto& l = pack.op(kDomain, "LRN")
                  .versions(since, since == 1 ? 12 : OPH_OPSET_MAX)
                  .doc("local response normalization across channels")
                  .input("X", "T")
                  .output("Y", "T")
                  .attr("alpha", 1e-4f)
                  .attr("beta", 0.75f)
                  .attr("bias", 1.0f)
                  .required_attr("size", OPH_ATTR_INT)
                  .infer(oph::same_as_input(0))
                  .compute(&lrn_compute);
    add_types(l, "T", kFloat);

    auto& m = pack.op(kDomain, "MeanVarianceNormalization")
                  .versions(since == 1 ? 9 : 13, since == 1 ? 12 : OPH_OPSET_MAX)
                  .doc("(X - mean) / (std + 1e-9) over the given axes")
                  .input("X", "T")
                  .output("Y", "T")
                  .attr("axes", {0, 2, 3})
                  .infer(oph::same_as_input(0))
                  .compute(&mvn_compute);
    add_types(m, "T", kFloat);
  }
}

void register_norm(oph::Pack& pack) {
  // BatchNormalization: 7-8 (spatial), 9-13, 14 (training_mode; U for mean/var), 15+ (T1 scale/B, T2 mean/var).
  struct V { int since, until; bool spatial, training; const char* tscale; const char* tstat; int outs; };
  for (V v : {V{7, 8, true, false, "T", "T", 5}, V{9, 13, false, false, "T", "T", 5}, V{14, 14, false, true, "T", "U", 3},
              V{15, OPH_OPSET_MAX, false, true, "T1", "T2", 3}}) {
    auto& b = pack.op(kDomain, "BatchNormalization")
                  .versions(v.since, v.until)
                  .doc("batch normalization, inference mode (running statistics)")
                  .input("X", "T")
                  .input("scale", v.tscale)
                  .input("B", v.tscale)
                  .input("input_mean", v.tstat)
                  .input("input_var", v.tstat)
                  .output("Y", "T");
    if (v.outs == 5) {
      b.output("mean", "T", OPH_ARITY_OPTIONAL).output("var", "T", OPH_ARITY_OPTIONAL);
      b.output("saved_mean", "T", OPH_ARITY_OPTIONAL).output("saved_var", "T", OPH_ARITY_OPTIONAL);
    } else {
      b.output("running_mean", v.tstat, OPH_ARITY_OPTIONAL).output("running_var", v.tstat, OPH_ARITY_OPTIONAL);
    }
    b.attr("epsilon", 1e-5f).attr("momentum", 0.9f);
    if (v.spatial) b.attr("spatial", int64_t{1});
    if (v.training) b.attr("training_mode", int64_t{0});
    b.infer(&bn_infer).kernel<BatchNormKernel>();
    add_types(b, "T", kFloat);
    if (std::string(v.tscale) != "T") add_types(b, v.tscale, kFloat);
    if (std::string(v.tstat) != "T" && std::string(v.tstat) != v.tscale) add_types(b, v.tstat, kFloat);
  }

  {  // opset 6+ (opset 1 also had the legacy consumed_inputs attribute: not served)
    auto& b = pack.op(kDomain, "InstanceNormalization")
                  .versions(6, OPH_OPSET_MAX)
                  .doc("per-instance, per-channel normalization")
                  .input("input", "T")
                  .input("scale", "T")
                  .input("B", "T")
                  .output("output", "T")
                  .attr("epsilon", 1e-5f)
                  .infer(oph::same_as_input(0))
                  .kernel<InstanceNormKernel>();
    add_types(b, "T", kFloat);
  }

  // LayerNormalization-17, and the same kernel as com.ophost::LayerNormalization, written by the host's
  // layer-norm-fusion pass where an exporter wrote the op out (ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div...).
  for (bool fused : {false, true}) {
    auto& ln = pack.op(fused ? "com.ophost" : kDomain, "LayerNormalization")
                   .versions(fused ? 1 : 17, OPH_OPSET_MAX)
                   .doc(fused ? "LayerNormalization-17 (output Y), written by the host's layer-norm-fusion pass for the "
                                "chain ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div[, Mul Scale][, Add B]"
                              : "layer normalization over the dims from axis on")
                   .input("X", "T")
                   .input("Scale", "T")
                   .optional_input("B", "T")
                   .output("Y", "T")
                   .output("Mean", "U", OPH_ARITY_OPTIONAL)
                   .output("InvStdDev", "U", OPH_ARITY_OPTIONAL)
                   .attr("axis", int64_t{-1})
                   .attr("epsilon", 1e-5f)
                   .attr("stash_type", int64_t{1})
                   .infer(&layer_norm_infer)
                   .kernel<LayerNormKernel>();
    if (fused) ln.flags(OPH_OP_FLAG_ALLOW_FUSION);
    add_types(ln, "T", kFloat);
    add_types(ln, "U", {f32});
  }
  register_lrn_mvn(pack);
}

}  // namespace

static const Family kFamily("norm", &register_norm);

}  // namespace onnx_core
