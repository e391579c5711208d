// onnx-core: Dropout (opsets 1, 6, 7, 10, 12, 13). Inference (is_test, opsets 7-11, training_mode false or
// ratio 0) copies the input and gives an all-ones mask; training mode with ratio > 0 draws a Bernoulli mask from a
// per-node generator (seeded by the `seed` attribute when given) and scales kept values by 1 / (1 - ratio).
#include "common.hpp"

#include <mutex>
#include <random>

namespace onnx_core {
namespace {

const std::string kOp = "Dropout";

// Writes an all-ones mask of the mask output's dtype.
void fill_ones(const oph::TensorRef& m) {
  const size_t n = m.size();
  if (m.dtype() == boolean || m.dtype() == u8) std::memset(m.data(), 1, n);
  else if (m.dtype() == f32) std::fill_n(static_cast<float*>(m.data()), n, 1.0f);
  else if (m.dtype() == f64) std::fill_n(static_cast<double*>(m.data()), n, 1.0);
  else if (m.dtype() == f16) std::fill_n(static_cast<uint16_t*>(m.data()), n, uint16_t{0x3c00});
  else if (m.dtype() == bf16) std::fill_n(static_cast<uint16_t*>(m.data()), n, uint16_t{0x3f80});
  else fail(kOp + ": mask dtype " + oph::dtype_name(m.dtype()) + " is not supported", OPH_CODE_UNIMPLEMENTED);
}

double read_scalar_float(const oph::TensorRef& t, const char* what) {
  if (t.size() != 1) fail(kOp + ": " + what + " must be a scalar, got shape " + shape_str(t.shape()));
  if (t.dtype() == f32) return *static_cast<const float*>(t.data());
  if (t.dtype() == f64) return *static_cast<const double*>(t.data());
  fail(kOp + ": " + what + " of dtype " + oph::dtype_name(t.dtype()) + " is not supported", OPH_CODE_UNIMPLEMENTED);
}

struct DropoutKernel {
  int since;
  float ratio_attr = 0.5f;
  bool is_test = false;
  std::mutex mu;
  std::mt19937_64 rng;

  explicit DropoutKernel(const oph::KernelInit& init) : since(0) {
    const oph::Attrs& at = init.attrs();
    // Opset is recovered from the schema: is_test exists in opsets 1-6, ratio as an attribute up to 11, seed from 12.
    bool has_is_test = false, has_ratio = false, has_seed_attr = false;
    for (size_t i = 0; i < at.size(); ++i) {
      const oph_attr_def* d = init.raw()->op->attributes[i];
      std::string n = d->name;
      if (n == "is_test") has_is_test = true;
      if (n == "ratio") has_ratio = true;
      if (n == "seed") has_seed_attr = true;
    }
    since = has_is_test ? 1 : has_ratio ? 7 : 12;
    if (has_ratio) ratio_attr = at.get<float>("ratio");
    if (has_is_test) is_test = at.get<int64_t>("is_test") != 0;
    if (has_seed_attr && at.has("seed")) rng.seed(static_cast<uint64_t>(at.get<int64_t>("seed")));
    else rng.seed(std::random_device{}());
  }

  void compute(oph::KernelContext& ctx) {
    oph::TensorRef x = input(ctx, 0, kOp);
    oph::TensorRef y = ensure_output(ctx, 0, x.shape(), kOp);
    oph::TensorRef m = ensure_output(ctx, 1, x.shape(), kOp);
    double ratio = ratio_attr;
    bool training = false;
    if (since == 1) training = !is_test;
    if (since >= 12) {
      oph::TensorRef r = ctx.input(1);
      if (r.present()) ratio = read_scalar_float(r, "ratio");
      oph::TensorRef t = ctx.input(2);
      if (t.present()) {
        if (t.size() != 1 || !(t.dtype() == boolean)) fail(kOp + ": training_mode must be a bool scalar");
        training = *static_cast<const uint8_t*>(t.data()) != 0;
      }
    }
    if (training && (ratio < 0 || ratio >= 1))
      fail(kOp + ": ratio must be in [0, 1) in training mode, got " + std::to_string(ratio));
    if (!training || ratio == 0) {
      if (y.present()) copy_bytes(y.data(), x.data(), x.size() * elem_size(x.dtype()));
      if (m.present()) fill_ones(m);
      return;
    }
    const size_t n = x.size();
    std::vector<uint8_t> keep(n);
    {
      std::lock_guard<std::mutex> lock(mu);  // one generator per node; concurrent computes draw in turn
      std::uniform_real_distribution<double> u(0.0, 1.0);
      for (size_t i = 0; i < n; ++i) keep[i] = u(rng) >= ratio;
    }
    dispatch_float(x.dtype(), kOp + " (training mode)", [&]<class T>(std::type_identity<T>) {
      const T* xp = static_cast<const T*>(x.data());
      const T scale = static_cast<T>(1.0 / (1.0 - ratio));
      if (y.present()) {
        T* yp = static_cast<T*>(y.data());
        for (size_t i = 0; i < n; ++i) yp[i] = keep[i] ? xp[i] * scale : T(0);
      }
    });
    if (m.present()) {
      if (m.dtype() == boolean) std::memcpy(m.data(), keep.data(), n);
      else
        dispatch_float(m.dtype(), kOp + " mask", [&]<class T>(std::type_identity<T>) {
          T* mp = static_cast<T*>(m.data());
          for (size_t i = 0; i < n; ++i) mp[i] = keep[i] ? T(1) : T(0);
        });
    }
  }
};

void register_dropout(oph::Pack& pack) {
  struct V { int since, until; bool bool_mask; };
  for (V v : {V{1, 5, false}, V{6, 6, false}, V{7, 9, false}, V{10, 11, true}, V{12, 12, true},
              V{13, OPH_OPSET_MAX, true}}) {
    const bool mask_is_t = !v.bool_mask;
    auto& b = pack.op(kDomain, "Dropout").versions(v.since, v.until).doc("dropout; identity in inference mode");
    b.input("data", "T");
    if (v.since >= 12) {
      b.optional_input("ratio", "T1", OPH_MEMORY_HOST).optional_input("training_mode", "T2", OPH_MEMORY_HOST);
      add_types(b, "T1", {f16, f32, f64});
      b.types("T2", {boolean});
    }
    b.output("output", "T").output("mask", mask_is_t ? "T" : (v.since >= 12 ? "T2" : "T1"), OPH_ARITY_OPTIONAL);
    if (v.since == 10 || v.since == 11) b.types("T1", {boolean});
    if (v.since == 1) b.optional_attr("consumed_inputs", OPH_ATTR_INTS);
    if (v.since <= 6) b.attr("is_test", int64_t{0});
    if (v.since <= 11) b.attr("ratio", 0.5f);
    else b.optional_attr("seed", OPH_ATTR_INT);
    add_types(b, "T", {f16, f32, f64});
    if (v.since >= 13) b.types("T", {bf16});
    b.infer([mask_is_t](oph::InferContext& c) {
       oph_dtype mt = mask_is_t ? c.input_dtype(0) : boolean;
       if (!c.input_rank_known(0)) {
         c.set_output_unknown_rank(0, c.input_dtype(0));
         c.set_output_unknown_rank(1, mt);
         return;
       }
       c.set_output(0, c.input_dtype(0), c.input_shape(0));
       c.set_output(1, mt, c.input_shape(0));
     }).kernel<DropoutKernel>();
  }
}

}  // namespace

static const Family kFamily("dropout", &register_dropout);

}  // namespace onnx_core
