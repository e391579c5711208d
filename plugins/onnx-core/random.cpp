// onnx-core: random generators Bernoulli (15) and RandomUniformLike (1). Each node owns a std::mt19937_64,
// seeded from the `seed` attribute when given (else from std::random_device); draws are serialised per node.
// Values depend on the generator, so they never match another implementation's stream bit for bit.
#include "common.hpp"

#include <mutex>
#include <random>

namespace onnx_core {
namespace {

// Output dtypes (Bernoulli T2, and what the dtype attribute may name).
const std::vector<oph_dtype> kRandomOut = {f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, boolean};

// Stores doubles into a tensor of any supported dtype.
template <class F>
void store_each(const oph::TensorRef& t, const std::string& op, F&& value_at) {
  auto put = [&]<class T>(std::type_identity<T>) {
    T* p = static_cast<T*>(t.data());
    for (size_t i = 0; i < t.size(); ++i) p[i] = static_cast<T>(value_at(i));
  };
  oph_dtype d = t.dtype();
  if (d == boolean) put(std::type_identity<uint8_t>{});
  else if (!try_dispatch_numeric_all(d, put))
    fail(op + ": output dtype " + oph::dtype_name(d) + " is not supported", OPH_CODE_UNIMPLEMENTED);
}

struct RandomKernel {
  std::mutex mu;
  std::mt19937_64 rng;
  explicit RandomKernel(const oph::KernelInit& init) {
    if (init.attrs().has("seed")) rng.seed(static_cast<uint64_t>(static_cast<int64_t>(init.attr<float>("seed"))));
    else rng.seed(std::random_device{}());
  }
};

struct BernoulliKernel : RandomKernel {
  explicit BernoulliKernel(const oph::KernelInit& init) : RandomKernel(init) {}
  void compute(oph::KernelContext& ctx) {
    const std::string op = "Bernoulli";
    oph::TensorRef x = input(ctx, 0, op);
    oph::TensorRef y = ensure_output(ctx, 0, x.shape(), op);
    if (!y.present()) return;
    std::vector<double> p(x.size());
    dispatch_float(x.dtype(), op, [&]<class T>(std::type_identity<T>) {
      const T* xp = static_cast<const T*>(x.data());
      for (size_t i = 0; i < p.size(); ++i) {
        if (!(xp[i] >= 0 && xp[i] <= 1)) fail(op + ": probabilities must be in [0, 1]");
        p[i] = xp[i];
      }
    });
    std::vector<double> draw(p.size());
    {
      std::lock_guard<std::mutex> lock(mu);
      std::uniform_real_distribution<double> u(0.0, 1.0);
      for (auto& d : draw) d = u(rng);
    }
    store_each(y, op, [&](size_t i) { return draw[i] < p[i] ? 1.0 : 0.0; });
  }
};

struct RandomUniformLikeKernel : RandomKernel {
  explicit RandomUniformLikeKernel(const oph::KernelInit& init) : RandomKernel(init) {}
  void compute(oph::KernelContext& ctx) {
    const std::string op = "RandomUniformLike";
    oph::TensorRef x = input(ctx, 0, op);
    oph::TensorRef y = ensure_output(ctx, 0, x.shape(), op);
    if (!y.present()) return;
    const double lo = ctx.attr<float>("low"), hi = ctx.attr<float>("high");
    if (!(hi >= lo)) fail(op + ": high must be >= low");
    std::vector<double> v(y.size());
    {
      std::lock_guard<std::mutex> lock(mu);
      std::uniform_real_distribution<double> u(lo, hi);
      for (auto& d : v) d = u(rng);
    }
    store_each(y, op, [&](size_t i) { return v[i]; });
  }
};

// Output dtype: the dtype attribute when given, else the input's.
oph::InferFn like_infer(const char* op) {
  return [op](oph::InferContext& c) {
    oph_dtype out =
        c.attrs().has("dtype") ? dtype_from_onnx(c.attr<int64_t>("dtype"), kRandomOut, op, "dtype") : c.input_dtype(0);
    if (!c.input_rank_known(0)) return c.set_output_unknown_rank(0, out);
    c.set_output(0, out, c.input_shape(0));
  };
}

void register_random(oph::Pack& pack) {
  auto& b = pack.op(kDomain, "Bernoulli")
                .versions(15, OPH_OPSET_MAX)
                .doc("Bernoulli draws with the input's probabilities (per-node mt19937_64)")
                .input("input", "T1")
                .output("output", "T2")
                .optional_attr("dtype", OPH_ATTR_INT)
                .optional_attr("seed", OPH_ATTR_FLOAT)
                .infer(like_infer("Bernoulli"))
                .kernel<BernoulliKernel>();
  add_types(b, "T1", kFloat);
  add_types(b, "T2", kRandomOut);

  auto& r = pack.op(kDomain, "RandomUniformLike")
                .versions(1, OPH_OPSET_MAX)
                .doc("uniform draws in [low, high) with the input's shape (per-node mt19937_64)")
                .input("input", "T1")
                .output("output", "T2")
                .optional_attr("dtype", OPH_ATTR_INT)
                .attr("high", 1.0f)
                .attr("low", 0.0f)
                .optional_attr("seed", OPH_ATTR_FLOAT)
                .infer(like_infer("RandomUniformLike"))
                .kernel<RandomUniformLikeKernel>();
  add_types(r, "T1", kAll);
  add_types(r, "T2", kFloat);
}

}  // namespace

static const Family kFamily("random", &register_random);

}  // namespace onnx_core
