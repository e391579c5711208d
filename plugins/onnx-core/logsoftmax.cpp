// onnx-core: LogSoftmax. Opset 1-12: the input is coerced to 2-D at `axis` (default 1) and log-softmax runs over
// the second dimension; opset 13+: over the single dimension `axis` (default -1).
#include "common.hpp"

#include <algorithm>
#include <cmath>

namespace onnx_core {
namespace {

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
      ctx.parallel_for(outer * inner, std::max<size_t>(1, kGrain / len), [=](size_t lo, size_t hi) {
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

}  // namespace

void register_logsoftmax(oph::Pack& pack) {
  register_one(pack, 1, 10, 1, "log of softmax over the input coerced to 2-D at axis (default 1)");
  register_one(pack, 11, 12, 1, "log of softmax over the input coerced to 2-D at axis (default 1; negative allowed)");
  register_one(pack, 13, OPH_OPSET_MAX, -1, "log of softmax along axis (default -1)");
}

static const Family kFamily("logsoftmax", &register_logsoftmax);

}  // namespace onnx_core
