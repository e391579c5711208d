// onnx-core: reductions ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare, ArgMax/ArgMin and CumSum.
// Axes come from the `axes` attribute (ReduceSum < 13, the others < 18) or from the optional `axes` input in
// host memory (ReduceSum 13+, the others 18+, with noop_with_empty_axes).
#include "common.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace onnx_core {
namespace {

enum class Kind { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

// dispatch_numeric_all plus bool (one byte holding 0 or 1): only ReduceMax/ReduceMin 20+ accept it, where max is
// OR and min is AND, exactly the uint8 reduction.
template <class F>
void dispatch_reduce(oph_dtype d, const std::string& op, F&& f) {
  if (d == boolean) f(std::type_identity<uint8_t>{});
  else dispatch_numeric_all(d, op, f);
}

// Resolved reduction axes: a mask over the input dims. `all` when every axis is reduced.
std::vector<bool> axes_mask(const std::vector<int64_t>& axes, int64_t rank, bool allow_negative,
                            const std::string& op) {
  std::vector<bool> mask(static_cast<size_t>(rank), axes.empty());
  for (int64_t a : axes) {
    int64_t n = normalize_axis(a, rank, allow_negative, op, "axis");
    if (mask[static_cast<size_t>(n)] && !axes.empty()) fail(op + ": axis " + std::to_string(a) + " is repeated");
    mask[static_cast<size_t>(n)] = true;
  }
  return mask;
}

std::vector<int64_t> reduced_shape(std::span<const int64_t> in, const std::vector<bool>& mask, bool keepdims) {
  std::vector<int64_t> out;
  for (size_t k = 0; k < in.size(); ++k) {
    if (!mask[k]) out.push_back(in[k]);
    else if (keepdims) out.push_back(1);
  }
  return out;
}

struct ReduceConfig {
  std::string op;
  Kind kind;
  bool axes_input;  // axes come from input 1 (else from the attribute)
  int32_t since;
};

// Axes for this node; nullopt when they are only known at run time. `noop` is set when the input passes through.
std::optional<std::vector<int64_t>> node_axes(const ReduceConfig& cfg, const oph::Attrs& attrs,
                                              const oph_tensor* axes_tensor, bool axes_present, bool& noop) {
  noop = false;
  if (!cfg.axes_input) {
    if (attrs.has("axes")) return attrs.get<std::vector<int64_t>>("axes");
    return std::vector<int64_t>{};
  }
  if (!axes_present) {
    noop = attrs.get<int64_t>("noop_with_empty_axes") != 0;
    return std::vector<int64_t>{};
  }
  if (!axes_tensor) return std::nullopt;
  std::vector<int64_t> v = read_ints(axes_tensor, cfg.op, "axes");
  if (v.empty()) noop = attrs.get<int64_t>("noop_with_empty_axes") != 0;
  return v;
}

void reduce_infer(oph::InferContext& c, const ReduceConfig& cfg) {
  const oph_dtype dt = c.input_dtype(0);
  const bool keepdims = c.attr<int64_t>("keepdims") != 0;
  bool noop = false;
  bool axes_present = cfg.axes_input && c.has_input(1);
  auto axes = node_axes(cfg, c.attrs(), axes_present ? c.input_constant(1) : nullptr, axes_present, noop);
  if (!c.input_rank_known(0)) {
    c.set_output_unknown_rank(0, dt);
    return;
  }
  auto in = c.input_shape(0);
  if (!axes) {
    if (keepdims) c.set_output(0, dt, std::vector<int64_t>(in.size(), OPH_DIM_UNKNOWN));
    else c.set_output_unknown_rank(0, dt);
    return;
  }
  if (noop) {
    c.set_output(0, dt, in);
    return;
  }
  auto mask = axes_mask(*axes, static_cast<int64_t>(in.size()), cfg.since >= 11, cfg.op);
  c.set_output(0, dt, reduced_shape(in, mask, keepdims));
}

template <class T>
using Acc = std::conditional_t<std::is_floating_point_v<T>, double,
                               std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;

template <class T>
void reduce_typed(Kind kind, const T* X, std::span<const int64_t> in,
                  const std::vector<bool>& mask, T* Y, size_t out_n) {
  const size_t r = in.size();
  // Offsets of the reduced positions (relative) and of the kept positions (one per output element).
  std::vector<int64_t> strides(r, 1);
  for (size_t k = r; k-- > 1;) strides[k - 1] = strides[k] * in[k];
  std::vector<int64_t> red_offsets{0}, kept_dims, kept_strides;
  for (size_t k = 0; k < r; ++k) {
    if (mask[k]) {
      std::vector<int64_t> next;
      next.reserve(red_offsets.size() * static_cast<size_t>(in[k]));
      for (int64_t o : red_offsets)
        for (int64_t j = 0; j < in[k]; ++j) next.push_back(o + j * strides[k]);
      red_offsets.swap(next);
    } else {
      kept_dims.push_back(in[k]);
      kept_strides.push_back(strides[k]);
    }
  }
  const size_t count = red_offsets.size();
  const int64_t* ro = red_offsets.data();
  using A = Acc<T>;
  // The reduced axes trailing and contiguous (offsets 0 .. count - 1: a mean over H and W, as PyTorch exports
  // x.mean([2, 3])): sums of a floating type over a row run on four partial sums the compiler can vectorise,
  // instead of one dependent chain through the offset table (ShuffleNet v2's ReduceMean over [1, 1024, 7, 7]:
  // 21.6 us, ONNX Runtime's 8).
  if constexpr (std::is_floating_point_v<T>) {
    const bool rows = count > 0 && red_offsets.back() == static_cast<int64_t>(count) - 1;
    if (rows && (kind == Kind::kSum || kind == Kind::kMean)) {
      parallel_for(out_n, std::max<size_t>(1, kGrain / count), [&](size_t lo, size_t hi) {
        for (size_t o = lo; o < hi; ++o) {
          const T* xr = X + o * count;  // kept axes lead, so output o reads row o
          double p[4] = {0, 0, 0, 0};
          size_t j = 0;
          for (; j + 4 <= count; j += 4)
            for (size_t q = 0; q < 4; ++q) p[q] += static_cast<double>(xr[j + q]);
          for (; j < count; ++j) p[0] += static_cast<double>(xr[j]);
          const double acc = (p[0] + p[1]) + (p[2] + p[3]);
          Y[o] = static_cast<T>(kind == Kind::kMean ? acc / static_cast<double>(count) : acc);
        }
      });
      return;
    }
  }
  parallel_for(out_n, std::max<size_t>(1, kGrain / std::max<size_t>(1, count)), [&](size_t lo, size_t hi) {
    for (size_t o = lo; o < hi; ++o) {
      int64_t base = 0;
      size_t rem = o;
      for (size_t k = kept_dims.size(); k-- > 0;) {
        base += static_cast<int64_t>(rem % static_cast<size_t>(kept_dims[k])) * kept_strides[k];
        rem /= static_cast<size_t>(kept_dims[k]);
      }
      const T* xb = X + base;
      A acc{};
      switch (kind) {
        case Kind::kSum:
        case Kind::kMean:
        case Kind::kLogSum:
          for (size_t j = 0; j < count; ++j) acc += static_cast<A>(xb[ro[j]]);
          if (kind == Kind::kMean) acc = count ? static_cast<A>(acc / static_cast<A>(count)) : A{};
          if (kind == Kind::kLogSum) acc = static_cast<A>(std::log(static_cast<double>(acc)));
          Y[o] = static_cast<T>(acc);
          break;
        case Kind::kSumSquare:
        case Kind::kL2:
          for (size_t j = 0; j < count; ++j) acc += static_cast<A>(xb[ro[j]]) * static_cast<A>(xb[ro[j]]);
          Y[o] = kind == Kind::kL2 ? static_cast<T>(std::sqrt(static_cast<double>(acc))) : static_cast<T>(acc);
          break;
        case Kind::kL1:
          for (size_t j = 0; j < count; ++j) {
            A v = static_cast<A>(xb[ro[j]]);
            if constexpr (std::is_signed_v<A>) acc += v < 0 ? -v : v;
            else acc += v;
          }
          Y[o] = static_cast<T>(acc);
          break;
        case Kind::kProd:
          acc = A(1);
          for (size_t j = 0; j < count; ++j) acc *= static_cast<A>(xb[ro[j]]);
          Y[o] = static_cast<T>(acc);
          break;
        case Kind::kMax:
        case Kind::kMin: {
          T m = kind == Kind::kMax
                    ? (std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                            : std::numeric_limits<T>::lowest())
                    : (std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity()
                                                            : std::numeric_limits<T>::max());
          for (size_t j = 0; j < count; ++j) {
            T v = xb[ro[j]];
            if constexpr (std::is_floating_point_v<T>) {
              if (std::isnan(v)) { m = v; break; }
            }
            m = kind == Kind::kMax ? std::max(m, v) : std::min(m, v);
          }
          Y[o] = m;
          break;
        }
        case Kind::kLogSumExp: {
          double mx = -std::numeric_limits<double>::infinity();
          for (size_t j = 0; j < count; ++j) mx = std::max(mx, static_cast<double>(xb[ro[j]]));
          double s = 0;
          if (std::isinf(mx)) {
            Y[o] = static_cast<T>(mx);
            break;
          }
          for (size_t j = 0; j < count; ++j) s += std::exp(static_cast<double>(xb[ro[j]]) - mx);
          Y[o] = static_cast<T>(mx + std::log(s));
          break;
        }
      }
    }
  });
}

void reduce_compute(const oph::KernelContext& ctx, const ReduceConfig& cfg) {
  {
    oph::TensorRef x = input(ctx, 0, cfg.op);
    const bool keepdims = ctx.attr<int64_t>("keepdims") != 0;
    bool noop = false;
    bool axes_present = cfg.axes_input && ctx.input(1).present();
    auto axes = node_axes(cfg, ctx.attrs(), axes_present ? ctx.input(1).raw() : nullptr, axes_present, noop);
    if (noop) {
      oph::TensorRef y = ensure_output(ctx, 0, x.shape(), cfg.op);
      if (y.present()) copy_bytes(y.data(), x.data(), x.size() * elem_size(x.dtype()));
      return;
    }
    auto mask = axes_mask(*axes, x.ndim(), cfg.since >= 11, cfg.op);
    std::vector<int64_t> oshape = reduced_shape(x.shape(), mask, keepdims);
    oph::TensorRef y = ensure_output(ctx, 0, oshape, cfg.op);
    if (!y.present()) return;
    dispatch_reduce(x.dtype(), cfg.op, [&]<class T>(std::type_identity<T>) {
      reduce_typed<T>(cfg.kind, static_cast<const T*>(x.data()), x.shape(), mask, static_cast<T*>(y.data()),
                      y.size());
    });
  }
}

void register_reduce(oph::Pack& pack, const char* name, Kind kind, int32_t since, int32_t until, bool axes_input,
                     const std::vector<oph_dtype>& types) {
  ReduceConfig cfg{name, kind, axes_input, since};
  oph::OpBuilder& b = pack.op(kDomain, name).versions(since, until).input("data", "T");
  if (axes_input) {
    b.optional_input("axes", "I", OPH_MEMORY_HOST)
        .types("I", {i64})
        .attr("keepdims", int64_t{1})
        .attr("noop_with_empty_axes", int64_t{0})
        .doc("reduction over the axes given as input 1 (all axes when empty, unless noop_with_empty_axes)");
  } else {
    b.optional_attr("axes", OPH_ATTR_INTS)
        .attr("keepdims", int64_t{1})
        .doc("reduction over the axes attribute (all axes when absent)");
  }
  b.output("reduced", "T")
      .infer([cfg](oph::InferContext& c) { reduce_infer(c, cfg); })
      .compute([cfg](oph::KernelContext& ctx) { reduce_compute(ctx, cfg); });
  add_types(b, "T", types);
}

// ----- ArgMax / ArgMin -----

template <bool kMax>
void arg_compute(const oph::KernelContext& ctx, const std::string& op, int32_t since) {
  oph::TensorRef x = input(ctx, 0, op);
  const int64_t rank = x.ndim();
  if (rank == 0) fail(op + ": input must have rank >= 1");
  const int64_t axis = normalize_axis(ctx.attr<int64_t>("axis"), rank, since >= 11, op);
  const bool keepdims = ctx.attr<int64_t>("keepdims") != 0;
  const bool last = since >= 12 && ctx.attr<int64_t>("select_last_index") != 0;
  std::vector<bool> mask(static_cast<size_t>(rank), false);
  mask[static_cast<size_t>(axis)] = true;
  std::vector<int64_t> oshape = reduced_shape(x.shape(), mask, keepdims);
  oph::TensorRef y = ensure_output(ctx, 0, oshape, op);
  if (!y.present()) return;
  size_t outer = 1, inner = 1;
  const size_t len = static_cast<size_t>(x.shape()[axis]);
  for (int64_t k = 0; k < rank; ++k) {
    if (k < axis) outer *= static_cast<size_t>(x.shape()[k]);
    else if (k > axis) inner *= static_cast<size_t>(x.shape()[k]);
  }
  if (len == 0 && outer * inner > 0) fail(op + ": cannot reduce over an empty axis");
  int64_t* Y = static_cast<int64_t*>(y.data());
  dispatch_reduce(x.dtype(), op, [&]<class T>(std::type_identity<T>) {
    const T* X = static_cast<const T*>(x.data());
    parallel_for(outer * inner, std::max<size_t>(1, kGrain / std::max<size_t>(1, len)), [&](size_t lo, size_t hi) {
      for (size_t r = lo; r < hi; ++r) {
        const size_t o = r / inner, j = r % inner;
        const T* xb = X + o * len * inner + j;
        size_t best = 0;
        T bv = xb[0];
        for (size_t l = 1; l < len; ++l) {
          T v = xb[l * inner];
          bool better = kMax ? (last ? v >= bv : v > bv) : (last ? v <= bv : v < bv);
          if (better) {
            bv = v;
            best = l;
          }
        }
        Y[r] = static_cast<int64_t>(best);
      }
    });
  });
}

template <bool kMax>
void register_arg(oph::Pack& pack, const char* name, int32_t since, int32_t until) {
  std::string op = name;
  oph::OpBuilder& b = pack.op(kDomain, name)
                          .versions(since, until)
                          .doc(kMax ? "indices of the maximum along axis" : "indices of the minimum along axis")
                          .input("data", "T")
                          .output("reduced", "I")
                          .types("I", {i64})
                          .attr("axis", int64_t{0})
                          .attr("keepdims", int64_t{1});
  if (since >= 12) b.attr("select_last_index", int64_t{0});
  b.infer([op, since](oph::InferContext& c) {
     if (!c.input_rank_known(0)) {
       c.set_output_unknown_rank(0, i64);
       return;
     }
     auto in = c.input_shape(0);
     if (in.empty()) fail(op + ": input must have rank >= 1");
     int64_t axis = normalize_axis(c.attr<int64_t>("axis"), static_cast<int64_t>(in.size()), since >= 11, op);
     std::vector<bool> mask(in.size(), false);
     mask[static_cast<size_t>(axis)] = true;
     c.set_output(0, i64, reduced_shape(in, mask, c.attr<int64_t>("keepdims") != 0));
   }).compute([op, since](oph::KernelContext& ctx) { arg_compute<kMax>(ctx, op, since); });
  add_types(b, "T", {f32, f64, i8, i16, i32, i64, u8, u16, u32, u64});
}

void cumsum_compute(const oph::KernelContext& ctx) {
  const std::string op = "CumSum";
  oph::TensorRef x = input(ctx, 0, op);
  std::vector<int64_t> av = read_ints(ctx.input(1).raw(), op, "axis");
  if (av.size() != 1) fail(op + ": axis must be a scalar");
  const int64_t axis = normalize_axis(av[0], x.ndim(), true, op);
  const bool exclusive = ctx.attr<int64_t>("exclusive") != 0, reverse = ctx.attr<int64_t>("reverse") != 0;
  oph::TensorRef y = ensure_output(ctx, 0, x.shape(), op);
  if (!y.present()) return;
  size_t outer = 1, inner = 1;
  const size_t len = static_cast<size_t>(x.shape()[axis]);
  for (int64_t k = 0; k < axis; ++k) outer *= static_cast<size_t>(x.shape()[k]);
  for (int64_t k = axis + 1; k < x.ndim(); ++k) inner *= static_cast<size_t>(x.shape()[k]);
  dispatch_numeric_all(x.dtype(), op, [&]<class T>(std::type_identity<T>) {
    const T* X = static_cast<const T*>(x.data());
    T* Y = static_cast<T*>(y.data());
    for (size_t o = 0; o < outer; ++o)
      for (size_t j = 0; j < inner; ++j) {
        T acc = T(0);
        for (size_t s = 0; s < len; ++s) {
          size_t l = reverse ? len - 1 - s : s;
          size_t at = (o * len + l) * inner + j;
          T v = X[at];
          if (exclusive) {
            Y[at] = acc;
            acc = static_cast<T>(acc + v);
          } else {
            acc = static_cast<T>(acc + v);
            Y[at] = acc;
          }
        }
      }
  });
}

void register_cumsum(oph::Pack& pack) {
  oph::OpBuilder& b = pack.op(kDomain, "CumSum")
                          .versions(11, OPH_OPSET_MAX)
                          .doc("cumulative sum along axis (exclusive, reverse)")
                          .attr("exclusive", int64_t{0})
                          .attr("reverse", int64_t{0})
                          .input("x", "T")
                          .input("axis", "T2", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)
                          .output("y", "T")
                          .types("T2", {i32, i64})
                          .infer(oph::same_as_input(0))
                          .compute(cumsum_compute);
  add_types(b, "T", {f32, f64, i32, i64, u32, u64});
}

}  // namespace

void register_reductions(oph::Pack& pack) {
  const std::vector<oph_dtype> base = {f32, f64, i32, i64, u32, u64};
  const std::vector<oph_dtype> minmax = {f32, f64, i32, i64, u32, u64, i8, u8};
  struct R {
    const char* name;
    Kind kind;
  };
  const R rs[] = {{"ReduceMean", Kind::kMean},   {"ReduceMax", Kind::kMax},         {"ReduceMin", Kind::kMin},
                  {"ReduceProd", Kind::kProd},   {"ReduceL1", Kind::kL1},           {"ReduceL2", Kind::kL2},
                  {"ReduceLogSum", Kind::kLogSum}, {"ReduceLogSumExp", Kind::kLogSumExp},
                  {"ReduceSumSquare", Kind::kSumSquare}};
  for (const R& r : rs) {
    const auto& types = (r.kind == Kind::kMax || r.kind == Kind::kMin) ? minmax : base;
    // 1-10: non-negative axes; 11-17: negative axes allowed; 18+: axes as an input; ReduceMax/Min 20 add bool.
    register_reduce(pack, r.name, r.kind, 1, 10, false, types);
    register_reduce(pack, r.name, r.kind, 11, 17, false, types);
    if (r.kind == Kind::kMax || r.kind == Kind::kMin) {
      std::vector<oph_dtype> with_bool = types;
      with_bool.push_back(boolean);
      register_reduce(pack, r.name, r.kind, 18, 19, true, types);
      register_reduce(pack, r.name, r.kind, 20, OPH_OPSET_MAX, true, with_bool);
    } else {
      register_reduce(pack, r.name, r.kind, 18, OPH_OPSET_MAX, true, types);
    }
  }
  register_reduce(pack, "ReduceSum", Kind::kSum, 1, 10, false, base);
  register_reduce(pack, "ReduceSum", Kind::kSum, 11, 12, false, base);
  register_reduce(pack, "ReduceSum", Kind::kSum, 13, OPH_OPSET_MAX, true, base);

  register_arg<true>(pack, "ArgMax", 1, 10);
  register_arg<true>(pack, "ArgMax", 11, 11);
  register_arg<true>(pack, "ArgMax", 12, OPH_OPSET_MAX);
  register_arg<false>(pack, "ArgMin", 1, 10);
  register_arg<false>(pack, "ArgMin", 11, 11);
  register_arg<false>(pack, "ArgMin", 12, OPH_OPSET_MAX);
  register_cumsum(pack);
}

static const Family kFamily("reduce", &register_reductions);

}  // namespace onnx_core
