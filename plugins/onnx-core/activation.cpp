// onnx-core: parametric activations: HardSigmoid, HardSwish, Elu, Selu, ThresholdedRelu, Softplus, Softsign.
#include "common.hpp"

#include <cmath>

namespace onnx_core {
namespace {

// One kernel for every activation: the op's float attributes (alpha, beta/gamma) are read once at creation.
template <class F>
struct ActKernel {
  std::string op;
  float alpha = 0, beta = 0;
  ActKernel(const oph::KernelInit& init, std::string name, const char* a_name, const char* b_name) : op(std::move(name)) {
    if (a_name) alpha = init.attr<float>(a_name);
    if (b_name) beta = init.attr<float>(b_name);
    if (!std::isfinite(alpha) || !std::isfinite(beta)) fail(op + ": attributes must be finite");
  }
  void run(oph::KernelContext& ctx) {
    oph::TensorRef x = input(ctx, 0, op);
    oph::TensorRef y = ensure_output(ctx, 0, x.shape(), op);
    if (!y.present()) return;
    dispatch_float(x.dtype(), op, [&]<class T>(std::type_identity<T>) {
      const T a = static_cast<T>(alpha), b = static_cast<T>(beta);
      unary_apply(static_cast<const T*>(x.data()), static_cast<T*>(y.data()), x.size(),
                  [a, b](T v) { return F{}(v, a, b); });
    });
  }
};

struct HardSigmoidF {
  template <class T> T operator()(T x, T a, T b) const { return std::min(std::max(a * x + b, T(0)), T(1)); }
};
struct HardSwishF {  // x * HardSigmoid(x; 1/6, 0.5)
  template <class T> T operator()(T x, T, T) const {
    return x * std::min(std::max(x * T(1.0 / 6.0) + T(0.5), T(0)), T(1));
  }
};
struct EluF {
  template <class T> T operator()(T x, T a, T) const { return x < T(0) ? a * std::expm1(x) : x; }
};
struct SeluF {
  template <class T> T operator()(T x, T a, T g) const { return x <= T(0) ? g * a * std::expm1(x) : g * x; }
};
struct ThresholdedReluF {
  template <class T> T operator()(T x, T a, T) const { return x > a ? x : T(0); }
};
struct SoftplusF {
  template <class T> T operator()(T x, T, T) const { return x > T(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }
};
struct SoftsignF {
  template <class T> T operator()(T x, T, T) const { return x / (T(1) + std::abs(x)); }
};

#define ONNX_CORE_ACT(Name, A, B)                                                                  \
  struct Name##K {                                                                                  \
    ActKernel<Name##F> k;                                                                           \
    explicit Name##K(const oph::KernelInit& i) : k(i, #Name, A, B) {}                              \
    void compute(oph::KernelContext& ctx) { k.run(ctx); }                                           \
  };
ONNX_CORE_ACT(HardSigmoid, "alpha", "beta")
ONNX_CORE_ACT(HardSwish, nullptr, nullptr)
ONNX_CORE_ACT(Elu, "alpha", nullptr)
ONNX_CORE_ACT(Selu, "alpha", "gamma")
ONNX_CORE_ACT(ThresholdedRelu, "alpha", nullptr)
ONNX_CORE_ACT(Softplus, nullptr, nullptr)
ONNX_CORE_ACT(Softsign, nullptr, nullptr)
#undef ONNX_CORE_ACT

template <class K>
oph::OpBuilder& act(oph::Pack& pack, const char* name, int since, const char* doc) {
  auto& b = pack.op(kDomain, name)
                .versions(since, OPH_OPSET_MAX)
                .doc(doc)
                .input("X", "T")
                .output("Y", "T")
                .infer(oph::same_as_input(0))
                .may_inplace(0, 0);
  add_types(b, "T", kFloat);
  return b;
}

void register_activation(oph::Pack& pack) {
  act<HardSigmoidK>(pack, "HardSigmoid", 6, "max(0, min(1, alpha * x + beta))")
      .attr("alpha", 0.2f)
      .attr("beta", 0.5f)
      .kernel<HardSigmoidK>();
  act<HardSwishK>(pack, "HardSwish", 14, "x * max(0, min(1, x / 6 + 0.5))").kernel<HardSwishK>();
  act<EluK>(pack, "Elu", 6, "x < 0 ? alpha * (exp(x) - 1) : x").attr("alpha", 1.0f).kernel<EluK>();
  act<SeluK>(pack, "Selu", 6, "gamma * (x <= 0 ? alpha * (exp(x) - 1) : x)")
      .attr("alpha", 1.67326319217681884765625f)
      .attr("gamma", 1.05070102214813232421875f)
      .kernel<SeluK>();
  act<ThresholdedReluK>(pack, "ThresholdedRelu", 10, "x > alpha ? x : 0").attr("alpha", 1.0f).kernel<ThresholdedReluK>();
  act<SoftplusK>(pack, "Softplus", 1, "log(exp(x) + 1)").kernel<SoftplusK>();
  act<SoftsignK>(pack, "Softsign", 1, "x / (1 + |x|)").kernel<SoftsignK>();
}

}  // namespace

static const Family kFamily("activation", &register_activation);

}  // namespace onnx_core
