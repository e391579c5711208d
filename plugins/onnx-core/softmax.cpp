// onnx-core: Softmax, LogSoftmax, Hardmax and the losses built on them: NegativeLogLikelihoodLoss,
// SoftmaxCrossEntropyLoss.
// LogSoftmax and Hardmax: opset 1-12: the input is coerced to 2-D at `axis` (default 1) and log-softmax runs over
// the second dimension; opset 13+: over the single dimension `axis` (default -1).
#include "common.hpp"
#include "simd_math.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace onnx_core {
namespace {

// ----- Softmax -----
// Opset 1-12: the input is coerced to 2-D [prod(shape[:axis]), prod(shape[axis:])] and softmax runs over the
// second dimension (axis default 1). Opset 13+: softmax over the single dimension `axis` (default -1).

struct SoftmaxGeometry {
  size_t outer, len, inner;
};

SoftmaxGeometry softmax_geometry(std::span<const int64_t> shape, int64_t axis, bool flatten) {
  const size_t r = shape.size();
  size_t outer = 1, len = 1, inner = 1;
  for (size_t k = 0; k < r; ++k) {
    size_t d = static_cast<size_t>(shape[k]);
    if (static_cast<int64_t>(k) < axis) outer *= d;
    else if (static_cast<int64_t>(k) == axis || flatten) len *= d;
    else inner *= d;
  }
  return {outer, len, inner};
}

int64_t softmax_axis(int64_t axis, int64_t rank, int32_t since) {
  // Opset 1-10: axis in [0, rank-1]; 11+: [-rank, rank-1].
  if (rank == 0) fail("Softmax: input must have rank >= 1");
  return normalize_axis(axis, rank, since >= 11, "Softmax");
}

struct SoftmaxKernel {
  int64_t axis;
  int32_t since;
  bool flatten;
  explicit SoftmaxKernel(const oph::KernelInit& init)
      : axis(init.attr<int64_t>("axis")), since(init.raw()->op->since_version), flatten(init.raw()->op->since_version < 13) {
    if (init.input(0).ndim >= 0) softmax_axis(axis, init.input(0).ndim, since);
  }
  void compute(oph::KernelContext& ctx) {
    oph::TensorRef x = input(ctx, 0, "Softmax");
    oph::TensorRef y = ensure_output(ctx, 0, x.shape(), "Softmax");
    if (!y.present()) return;
    int64_t ax = softmax_axis(axis, x.ndim(), since);
    SoftmaxGeometry g = softmax_geometry(x.shape(), ax, flatten);
    if (g.outer == 0 || g.len == 0 || g.inner == 0) return;
    dispatch_float(x.dtype(), "Softmax", [&]<class T>(std::type_identity<T>) {
      const T* X = static_cast<const T*>(x.data());
      T* Y = static_cast<T*>(y.data());
      const size_t len = g.len, inner = g.inner;
      size_t grain = std::max<size_t>(1, kGrain / (len * inner));
      if constexpr (std::is_same_v<T, float>) {
        if (inner == 1) {  // rows of the last axis: one dispatched call per task
          parallel_for(g.outer, grain, [=](size_t lo, size_t hi) {
            simd_math::softmax_rows(X + lo * len, Y + lo * len, hi - lo, len);
          });
          return;
        }
      }
      parallel_for(g.outer, grain, [=](size_t lo, size_t hi) {
        std::vector<T> mx(inner), sum(inner);
        for (size_t o = lo; o < hi; ++o) {
          const T* xb = X + o * len * inner;
          T* yb = Y + o * len * inner;
          if (inner == 1) {
            T m = xb[0];
            for (size_t l = 1; l < len; ++l) m = std::max(m, xb[l]);
            T s = T(0);  // float32 rows of the last axis went to softmax_rows above
            for (size_t l = 0; l < len; ++l) {
              yb[l] = std::exp(xb[l] - m);
              s += yb[l];
            }
            const T inv = T(1) / s;
            for (size_t l = 0; l < len; ++l) yb[l] *= inv;
          } else {
            std::copy(xb, xb + inner, mx.begin());
            for (size_t l = 1; l < len; ++l)
              for (size_t j = 0; j < inner; ++j) mx[j] = std::max(mx[j], xb[l * inner + j]);
            std::fill(sum.begin(), sum.end(), T(0));
            for (size_t l = 0; l < len; ++l)
              for (size_t j = 0; j < inner; ++j) {
                T e = std::exp(xb[l * inner + j] - mx[j]);
                yb[l * inner + j] = e;
                sum[j] += e;
              }
            for (size_t j = 0; j < inner; ++j) sum[j] = T(1) / sum[j];
            for (size_t l = 0; l < len; ++l)
              for (size_t j = 0; j < inner; ++j) yb[l * inner + j] *= sum[j];
          }
        }
      });
    });
  }
};

void register_softmax(oph::Pack& pack, int32_t since, int32_t until, int64_t default_axis, const char* doc) {
  oph::OpBuilder& b = pack.op(kDomain, "Softmax")
                          .versions(since, until)
                          .doc(doc)
                          .attr("axis", default_axis)
                          .input("input", "T")
                          .output("output", "T")
                          .infer([since](oph::InferContext& c) {
                            if (c.input_rank_known(0))
                              softmax_axis(c.attr<int64_t>("axis"), static_cast<int64_t>(c.input_shape(0).size()), since);
                            oph::same_as_input(0)(c);
                          })
                          .kernel<SoftmaxKernel>();
  add_types(b, "T", kFloat);
}

int64_t logsoftmax_axis(int64_t axis, int64_t rank, int32_t since) {
  if (rank == 0) fail("LogSoftmax: input must have rank >= 1");
  return normalize_axis(axis, rank, since >= 11, "LogSoftmax");
}

struct LogSoftmaxKernel {
  int64_t axis;
  int32_t since;
  explicit LogSoftmaxKernel(const oph::KernelInit& init)
      : axis(init.attr<int64_t>("axis")), since(init.raw()->op->since_version) {
    if (init.input(0).ndim >= 0) logsoftmax_axis(axis, init.input(0).ndim, since);
  }
  void compute(oph::KernelContext& ctx) {
    const std::string op = "LogSoftmax";
    oph::TensorRef x = input(ctx, 0, op);
    oph::TensorRef y = ensure_output(ctx, 0, x.shape(), op);
    if (!y.present()) return;
    const int64_t ax = logsoftmax_axis(axis, x.ndim(), since);
    const bool flatten = since < 13;
    size_t outer = 1, len = 1, inner = 1;
    for (int64_t k = 0; k < x.ndim(); ++k) {
      size_t d = static_cast<size_t>(x.shape()[k]);
      if (k < ax) outer *= d;
      else if (k == ax || flatten) len *= d;
      else inner *= d;
    }
    if (outer == 0 || len == 0 || inner == 0) return;
    dispatch_float(x.dtype(), op, [&]<class T>(std::type_identity<T>) {
      const T* X = static_cast<const T*>(x.data());
      T* Y = static_cast<T*>(y.data());
      parallel_for(outer * inner, std::max<size_t>(1, kGrain / len), [=](size_t lo, size_t hi) {
        for (size_t r = lo; r < hi; ++r) {
          const size_t o = r / inner, j = r % inner;
          const T* xb = X + o * len * inner + j;
          T* yb = Y + o * len * inner + j;
          T m = xb[0];
          for (size_t l = 1; l < len; ++l) m = std::max(m, xb[l * inner]);
          double s = 0;
          for (size_t l = 0; l < len; ++l) s += std::exp(static_cast<double>(xb[l * inner] - m));
          const T ls = static_cast<T>(std::log(s));
          for (size_t l = 0; l < len; ++l) yb[l * inner] = xb[l * inner] - m - ls;
        }
      });
    });
  }
};

void register_one(oph::Pack& pack, int32_t since, int32_t until, int64_t default_axis, const char* doc) {
  oph::OpBuilder& b = pack.op(kDomain, "LogSoftmax")
                          .versions(since, until)
                          .doc(doc)
                          .attr("axis", default_axis)
                          .input("input", "T")
                          .output("output", "T")
                          .infer([since](oph::InferContext& c) {
                            if (c.input_rank_known(0))
                              logsoftmax_axis(c.attr<int64_t>("axis"), static_cast<int64_t>(c.input_shape(0).size()),
                                              since);
                            oph::same_as_input(0)(c);
                          })
                          .kernel<LogSoftmaxKernel>();
  add_types(b, "T", kFloat);
}


// ----- Hardmax -----

void hardmax_compute(const oph::KernelContext& ctx, int32_t since) {
  const std::string op = "Hardmax";
  oph::TensorRef x = input(ctx, 0, op);
  oph::TensorRef y = ensure_output(ctx, 0, x.shape(), op);
  if (!y.present()) return;
  if (x.ndim() == 0) fail(op + ": input must have rank >= 1");
  const int64_t ax = normalize_axis(ctx.attr<int64_t>("axis"), x.ndim(), since >= 11, op);
  const bool flatten = since < 13;
  size_t outer = 1, len = 1, inner = 1;
  for (int64_t k = 0; k < x.ndim(); ++k) {
    size_t d = static_cast<size_t>(x.shape()[k]);
    if (k < ax) outer *= d;
    else if (k == ax || flatten) len *= d;
    else inner *= d;
  }
  dispatch_float(x.dtype(), op, [&]<class T>(std::type_identity<T>) {
    const T* X = static_cast<const T*>(x.data());
    T* Y = static_cast<T*>(y.data());
    std::fill(Y, Y + y.size(), T(0));
    if (len == 0) return;
    for (size_t o = 0; o < outer; ++o)
      for (size_t j = 0; j < inner; ++j) {
        const T* xb = X + o * len * inner + j;
        size_t best = 0;
        for (size_t l = 1; l < len; ++l)
          if (xb[l * inner] > xb[best * inner]) best = l;
        Y[o * len * inner + best * inner + j] = T(1);
      }
  });
}

// ----- NegativeLogLikelihoodLoss / SoftmaxCrossEntropyLoss -----

struct LossArgs {
  std::string reduction;
  bool has_ignore = false;
  int64_t ignore_index = 0;
};

LossArgs loss_args(const oph::Attrs& a, const std::string& op) {
  LossArgs l;
  l.reduction = a.get<std::string>("reduction");
  if (l.reduction != "none" && l.reduction != "sum" && l.reduction != "mean")
    fail(op + ": reduction must be none, sum or mean, got '" + l.reduction + "'");
  l.has_ignore = a.has("ignore_index");
  if (l.has_ignore) l.ignore_index = a.get<int64_t>("ignore_index");
  return l;
}

void loss_infer(oph::InferContext& c, const std::string& op, bool log_prob_output) {
  LossArgs l = loss_args(c.attrs(), op);
  const oph_dtype dt = c.input_dtype(0);
  if (l.reduction == "none") {
    if (c.input_rank_known(1)) c.set_output(0, dt, c.input_shape(1));
    else c.set_output_unknown_rank(0, dt);
  } else {
    c.set_output(0, dt, std::span<const int64_t>());
  }
  if (log_prob_output) {
    if (c.input_rank_known(0)) c.set_output(1, dt, c.input_shape(0));
    else c.set_output_unknown_rank(1, dt);
  }
}

// loss from log-probabilities `lp` [N, C, D] (D = product of the trailing dims) and targets [N, D].
template <class T>
void nll_typed(const oph::KernelContext& ctx, const T* lp, size_t N, size_t C, size_t D, const oph::TensorRef& target,
               const T* weight, const LossArgs& l, oph::TensorRef out, const std::string& op) {
  (void)ctx;
  std::vector<double> loss(N * D, 0.0);
  double wsum = 0;
  for (size_t n = 0; n < N; ++n)
    for (size_t d = 0; d < D; ++d) {
      const size_t at = n * D + d;
      int64_t t = target.dtype() == i64 ? static_cast<const int64_t*>(target.data())[at]
                                        : static_cast<const int32_t*>(target.data())[at];
      if (l.has_ignore && t == l.ignore_index) continue;
      if (t < 0 || t >= static_cast<int64_t>(C))
        fail(op + ": target " + std::to_string(t) + " is out of range for " + std::to_string(C) + " classes");
      double w = weight ? static_cast<double>(weight[t]) : 1.0;
      loss[at] = -static_cast<double>(lp[(n * C + static_cast<size_t>(t)) * D + d]) * w;
      wsum += w;
    }
  T* Y = static_cast<T*>(out.data());
  if (l.reduction == "none") {
    for (size_t i = 0; i < N * D; ++i) Y[i] = static_cast<T>(loss[i]);
    return;
  }
  double s = 0;
  for (double v : loss) s += v;
  if (l.reduction == "sum") Y[0] = static_cast<T>(s);
  else if (weight || l.has_ignore) Y[0] = static_cast<T>(s / wsum);
  else Y[0] = static_cast<T>(s / static_cast<double>(N * D));
}

void loss_compute(const oph::KernelContext& ctx, bool softmax) {
  const std::string op = softmax ? "SoftmaxCrossEntropyLoss" : "NegativeLogLikelihoodLoss";
  oph::TensorRef x = input(ctx, 0, op), target = input(ctx, 1, op);
  oph::TensorRef weight = ctx.num_inputs() > 2 ? ctx.input(2) : oph::TensorRef();
  LossArgs l = loss_args(ctx.attrs(), op);
  if (x.ndim() < 2) fail(op + ": input must have shape [N, C, ...]");
  if (target.ndim() != x.ndim() - 1) fail(op + ": target must have shape [N, d1, ...]");
  // target is [N, d1, ...] of the input's [N, C, d1, ...], weight [C]: anything else would be read out of bounds.
  for (size_t k = 0; k < target.ndim(); ++k)
    if (target.shape()[k] != x.shape()[k == 0 ? 0 : k + 1])
      fail(op + ": target shape " + shape_str(target.shape()) + " does not match the input's " +
           shape_str(x.shape()) + " (target must be [N, d1, ...] of the input's [N, C, d1, ...])");
  if (weight.present() && (weight.ndim() != 1 || weight.shape()[0] != x.shape()[1]))
    fail(op + ": weight must have shape [C] = [" + std::to_string(x.shape()[1]) + "], got " +
         shape_str(weight.shape()));
  const size_t N = static_cast<size_t>(x.shape()[0]), C = static_cast<size_t>(x.shape()[1]);
  size_t D = 1;  // the product of the trailing dims (not x.size() / (N * C), which is 0 when C is)
  for (size_t k = 2; k < x.ndim(); ++k) D *= static_cast<size_t>(x.shape()[k]);
  std::vector<int64_t> oshape;
  if (l.reduction == "none") oshape.assign(target.shape().begin(), target.shape().end());
  oph::TensorRef y = ensure_output(ctx, 0, oshape, op);
  oph::TensorRef lp_out = softmax && ctx.num_outputs() > 1 ? ensure_output(ctx, 1, x.shape(), op) : oph::TensorRef();
  dispatch_float(x.dtype(), op, [&]<class T>(std::type_identity<T>) {
    const T* X = static_cast<const T*>(x.data());
    const T* W = weight.present() ? static_cast<const T*>(weight.data()) : nullptr;
    std::vector<T> lp;
    if (softmax) {
      lp.resize(x.size());
      for (size_t n = 0; n < N; ++n)
        for (size_t d = 0; d < D; ++d) {
          const T* xb = X + n * C * D + d;
          T m = -std::numeric_limits<T>::infinity();
          for (size_t c = 0; c < C; ++c) m = std::max(m, xb[c * D]);
          double s = 0;
          for (size_t c = 0; c < C; ++c) s += std::exp(static_cast<double>(xb[c * D] - m));
          const T ls = static_cast<T>(std::log(s));
          for (size_t c = 0; c < C; ++c) lp[n * C * D + c * D + d] = xb[c * D] - m - ls;
        }
      if (lp_out.present()) std::copy(lp.begin(), lp.end(), static_cast<T*>(lp_out.data()));
      X = lp.data();
    }
    if (y.present()) nll_typed<T>(ctx, X, N, C, D, target, W, l, y, op);
  });
}

void register_losses(oph::Pack& pack) {
  for (bool softmax : {false, true}) {
    const char* name = softmax ? "SoftmaxCrossEntropyLoss" : "NegativeLogLikelihoodLoss";
    std::string op = name;
    // 12 and 13 differ only in types (13 adds bfloat16/float16 we do not serve).
    oph::OpBuilder& b = pack.op(kDomain, name)
                            .versions(12, OPH_OPSET_MAX)
                            .doc(softmax ? "cross entropy of softmax(scores, axis=1) against class labels"
                                         : "negative log likelihood of log-probabilities at the target classes")
                            .attr("reduction", std::string("mean"))
                            .optional_attr("ignore_index", OPH_ATTR_INT)
                            .input(softmax ? "scores" : "input", "T")
                            .input(softmax ? "labels" : "target", "Tind")
                            .optional_input(softmax ? "weights" : "weight", "T")
                            .output(softmax ? "output" : "loss", "T");
    if (softmax) b.output("log_prob", "T", OPH_ARITY_OPTIONAL);
    b.types("Tind", {i32, i64})
        .infer([op, softmax](oph::InferContext& c) { loss_infer(c, op, softmax); })
        .compute([softmax](oph::KernelContext& ctx) { loss_compute(ctx, softmax); });
    add_types(b, "T", kFloat);
  }
}

}  // namespace

void register_softmax_family(oph::Pack& pack) {
  // Softmax 1-10 and 11-12 differ only in negative axis support; 13+ changed the axis semantics.
  register_softmax(pack, 1, 10, 1, "softmax over the input coerced to 2-D at axis (default 1)");
  register_softmax(pack, 11, 12, 1, "softmax over the input coerced to 2-D at axis (default 1)");
  register_softmax(pack, 13, OPH_OPSET_MAX, -1, "softmax along axis (default -1)");
  register_one(pack, 1, 10, 1, "log of softmax over the input coerced to 2-D at axis (default 1)");
  register_one(pack, 11, 12, 1, "log of softmax over the input coerced to 2-D at axis (default 1; negative allowed)");
  register_one(pack, 13, OPH_OPSET_MAX, -1, "log of softmax along axis (default -1)");
  // Hardmax 1-10, 11-12 (negative axis): 2-D coercion at axis (default 1); 13+: along axis (default -1).
  struct HV {
    int32_t since, until;
    int64_t axis;
  };
  for (HV v : {HV{1, 10, 1}, HV{11, 12, 1}, HV{13, OPH_OPSET_MAX, -1}}) {
    const int32_t since = v.since;
    oph::OpBuilder& b = pack.op(kDomain, "Hardmax")
                            .versions(v.since, v.until)
                            .doc("1 at the first maximum along axis, 0 elsewhere")
                            .attr("axis", v.axis)
                            .input("input", "T")
                            .output("output", "T")
                            .infer(oph::same_as_input(0))
                            .compute([since](oph::KernelContext& ctx) { hardmax_compute(ctx, since); });
    add_types(b, "T", kFloat);
  }
  register_losses(pack);
}

static const Family kFamily("softmax", &register_softmax_family);

}  // namespace onnx_core
