// onnx-core: shape ops: Reshape, Transpose, Concat, Flatten, Unsqueeze, Squeeze (all dtypes, byte copies), Shape, Size.
#include "common.hpp"

#include <algorithm>
#include <optional>

namespace onnx_core {
namespace {

// Dtypes of Flatten-1 (before opset 9 added every type).
const std::vector<oph_dtype> kFlatten1Types = {f16, f32, f64};

// ----- Reshape -----

// Output shape of Reshape; `in` may hold unknown dims (then dims that depend on them are unknown).
std::vector<int64_t> reshape_shape(std::span<const int64_t> in, const std::vector<int64_t>& req, bool allowzero) {
  std::vector<int64_t> out(req.size());
  int64_t infer_at = -1;
  bool has_zero = false;
  int64_t known_prod = 1;
  bool prod_known = true;
  for (size_t k = 0; k < req.size(); ++k) {
    int64_t d = req[k];
    if (d == -1) {
      if (infer_at >= 0) fail("Reshape: more than one -1 in shape " + shape_str(req));
      infer_at = static_cast<int64_t>(k);
      continue;
    }
    if (d < -1) fail("Reshape: invalid dimension " + std::to_string(d) + " in shape");
    if (d == 0) {
      has_zero = true;
      if (!allowzero) {
        if (k >= in.size())
          fail("Reshape: shape " + shape_str(req) + " copies dimension " + std::to_string(k) +
               " (0) but the input " + shape_str(in) + " has rank " + std::to_string(in.size()));
        d = in[k];
      }
    }
    out[k] = d;
    if (d < 0) prod_known = false;
    else if (__builtin_mul_overflow(known_prod, d, &known_prod))
      fail("Reshape: shape " + shape_str(req) + " has more elements than int64 can count");
  }
  if (allowzero && has_zero && infer_at >= 0)
    fail("Reshape: with allowzero=1 the shape may not contain both 0 and -1");
  int64_t total = product_or_unknown(in);
  if (infer_at >= 0) {
    if (total < 0 || !prod_known) {
      out[infer_at] = OPH_DIM_UNKNOWN;
    } else {
      if (known_prod == 0 || total % known_prod != 0)
        fail("Reshape: cannot reshape " + shape_str(in) + " to " + shape_str(req));
      out[infer_at] = total / known_prod;
    }
  } else if (total >= 0 && prod_known && total != known_prod) {
    fail("Reshape: cannot reshape " + shape_str(in) + " (" + std::to_string(total) + " elements) to " +
         shape_str(req) + " (" + std::to_string(known_prod) + " elements)");
  }
  return out;
}

bool reshape_allowzero(const oph::Attrs& attrs, bool has_attr) {
  if (!has_attr) return false;
  int64_t v = attrs.get<int64_t>("allowzero");
  if (v != 0 && v != 1) fail("Reshape: attribute allowzero must be 0 or 1, got " + std::to_string(v));
  return v == 1;
}

void reshape_infer(oph::InferContext& c, bool has_allowzero) {
  bool allowzero = reshape_allowzero(c.attrs(), has_allowzero);
  oph_dtype dt = c.input_dtype(0);
  if (const oph_tensor* s = c.input_constant(1)) {
    std::vector<int64_t> req = read_ints(s, "Reshape", "shape");
    if (!c.input_rank_known(0)) {
      // Only dims that do not depend on the input are known.
      std::vector<int64_t> out(req.size(), OPH_DIM_UNKNOWN);
      for (size_t k = 0; k < req.size(); ++k)
        if (req[k] > 0 || (req[k] == 0 && allowzero)) out[k] = req[k];
      c.set_output(0, dt, out);
      return;
    }
    c.set_output(0, dt, reshape_shape(c.input_shape(0), req, allowzero));
    return;
  }
  if (c.input_rank_known(1) && c.input_shape(1).size() == 1 && c.input_shape(1)[0] >= 0) {
    std::vector<int64_t> out(static_cast<size_t>(c.input_shape(1)[0]), OPH_DIM_UNKNOWN);
    c.set_output(0, dt, out);
    return;
  }
  c.set_output_unknown_rank(0, dt);
}

void reshape_compute(const oph::KernelContext& ctx, bool has_allowzero) {
  oph::TensorRef x = input(ctx, 0, "Reshape");
  oph::TensorRef s = input(ctx, 1, "Reshape");
  if (s.ndim() != 1) fail("Reshape: shape must be 1-D, got " + shape_str(s.shape()));
  std::vector<int64_t> req = read_ints(s.raw(), "Reshape", "shape");
  std::vector<int64_t> out = reshape_shape(x.shape(), req, reshape_allowzero(ctx.attrs(), has_allowzero));
  oph::TensorRef y = ensure_output(ctx, 0, out, "Reshape");
  if (!y.present()) return;
  copy_bytes(y.data(), x.data(), x.size() * elem_size(x.dtype()));
}

void register_reshape(oph::Pack& pack, int32_t since, int32_t until) {
  oph::OpBuilder& b = pack.op(kDomain, "Reshape").versions(since, until).doc("reshape to the shape input (0 copies, -1 infers)");
  add_types(b, "T", kAll);
  const bool has_allowzero = since >= 14;
  if (has_allowzero) b.attr("allowzero", int64_t{0});
  b.input("data", "T")
      .input("shape", "tensor(int64)", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)
      .output("reshaped", "T")
      .infer([has_allowzero](oph::InferContext& c) { reshape_infer(c, has_allowzero); })
      .compute([has_allowzero](oph::KernelContext& ctx) { reshape_compute(ctx, has_allowzero); })
      .may_inplace(0, 0);
  b.types("tensor(int64)", {i64});
}

// ----- Transpose -----

std::vector<int64_t> transpose_perm(const oph::Attrs& attrs, size_t rank) {
  std::vector<int64_t> perm;
  if (attrs.has("perm")) {
    perm = attrs.get<std::vector<int64_t>>("perm");
    if (perm.size() != rank)
      fail("Transpose: perm has " + std::to_string(perm.size()) + " entries but the input has rank " + std::to_string(rank));
    std::vector<bool> seen(rank, false);
    for (int64_t p : perm) {
      if (p < 0 || p >= static_cast<int64_t>(rank) || seen[p]) fail("Transpose: perm " + shape_str(perm) + " is not a permutation");
      seen[p] = true;
    }
  } else {
    for (size_t k = rank; k-- > 0;) perm.push_back(static_cast<int64_t>(k));
  }
  return perm;
}

void transpose_infer(oph::InferContext& c) {
  if (!c.input_rank_known(0)) {
    if (c.attrs().has("perm")) {
      auto perm = c.attr<std::vector<int64_t>>("perm");
      c.set_output(0, c.input_dtype(0), std::vector<int64_t>(perm.size(), OPH_DIM_UNKNOWN));
    } else {
      c.set_output_unknown_rank(0, c.input_dtype(0));
    }
    return;
  }
  auto in = c.input_shape(0);
  auto perm = transpose_perm(c.attrs(), in.size());
  std::vector<int64_t> out(in.size());
  for (size_t k = 0; k < in.size(); ++k) out[k] = in[perm[k]];
  c.set_output(0, c.input_dtype(0), out);
}

void transpose_compute(const oph::KernelContext& ctx) {
  oph::TensorRef x = input(ctx, 0, "Transpose");
  auto in = x.shape();
  const size_t r = in.size();
  auto perm = transpose_perm(ctx.attrs(), r);
  const std::vector<int64_t> istride = compact_strides(in);
  std::vector<int64_t> oshape(r), st(r);
  for (size_t k = 0; k < r; ++k) {
    oshape[k] = in[perm[k]];
    st[k] = istride[perm[k]];
  }
  oph::TensorRef y = ensure_output(ctx, 0, oshape, "Transpose");
  if (!y.present()) return;
  strided_copy(y.data(), x.data(), elem_size(x.dtype()), oshape, st, 0);
}

// ----- Concat -----

void concat_infer(oph::InferContext& c, bool allow_negative) {
  int64_t axis = c.attr<int64_t>("axis");
  oph_dtype dt = c.input_dtype(0);
  std::vector<int64_t> out;
  for (size_t i = 0; i < c.num_inputs(); ++i)
    if (c.input_dtype(i) != dt) fail("Concat: all inputs must have the same dtype");
  // Rank from any input with a known rank.
  size_t rank = 0;
  bool rank_known = false;
  for (size_t i = 0; i < c.num_inputs(); ++i)
    if (c.input_rank_known(i)) {
      rank = c.input_shape(i).size();
      rank_known = true;
      break;
    }
  if (!rank_known) {
    c.set_output_unknown_rank(0, dt);
    return;
  }
  if (rank == 0) fail("Concat: inputs must have rank >= 1");
  int64_t ax = normalize_axis(axis, static_cast<int64_t>(rank), allow_negative, "Concat");
  out.assign(rank, OPH_DIM_UNKNOWN);
  int64_t sum = 0;
  bool sum_known = true;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    if (!c.input_rank_known(i)) {
      sum_known = false;
      continue;
    }
    auto s = c.input_shape(i);
    if (s.size() != rank) fail("Concat: inputs have different ranks");
    for (size_t k = 0; k < rank; ++k) {
      if (static_cast<int64_t>(k) == ax) continue;
      if (s[k] < 0) continue;
      if (out[k] >= 0 && out[k] != s[k])
        fail("Concat: input " + std::to_string(i) + " has shape " + shape_str(s) + ", which differs outside axis " +
             std::to_string(ax));
      out[k] = s[k];
    }
    if (s[ax] < 0) sum_known = false;
    else sum += s[ax];
  }
  out[ax] = sum_known ? sum : OPH_DIM_UNKNOWN;
  c.set_output(0, dt, out);
}

void concat_compute(const oph::KernelContext& ctx, bool allow_negative) {
  const size_t n_in = ctx.num_inputs();
  if (n_in == 0) fail("Concat: no inputs");
  oph::TensorRef x0 = input(ctx, 0, "Concat");
  const size_t rank = x0.shape().size();
  if (rank == 0) fail("Concat: inputs must have rank >= 1");
  int64_t ax = normalize_axis(ctx.attr<int64_t>("axis"), static_cast<int64_t>(rank), allow_negative, "Concat");
  std::vector<int64_t> out(x0.shape().begin(), x0.shape().end());
  out[ax] = 0;
  std::vector<oph::TensorRef> ins;
  for (size_t i = 0; i < n_in; ++i) {
    oph::TensorRef t = input(ctx, i, "Concat");
    auto s = t.shape();
    if (t.dtype() != x0.dtype()) fail("Concat: all inputs must have the same dtype");
    if (s.size() != rank) fail("Concat: inputs have different ranks");
    for (size_t k = 0; k < rank; ++k)
      if (static_cast<int64_t>(k) != ax && s[k] != x0.shape()[k])
        fail("Concat: input " + std::to_string(i) + " has shape " + shape_str(s) + ", input 0 " + shape_str(x0.shape()));
    out[ax] += s[ax];
    ins.push_back(t);
  }
  oph::TensorRef y = ensure_output(ctx, 0, out, "Concat");
  if (!y.present()) return;
  const size_t es = elem_size(x0.dtype());
  size_t outer = 1, inner = es;
  for (size_t k = 0; k < rank; ++k) {
    if (static_cast<int64_t>(k) < ax) outer *= static_cast<size_t>(out[k]);
    else if (static_cast<int64_t>(k) > ax) inner *= static_cast<size_t>(out[k]);
  }
  const size_t out_row = static_cast<size_t>(out[ax]) * inner;
  char* dst = static_cast<char*>(y.data());
  size_t col = 0;
  for (const oph::TensorRef& t : ins) {
    const size_t row = static_cast<size_t>(t.shape()[ax]) * inner;
    const char* src = static_cast<const char*>(t.data());
    if (row) {
      parallel_for(outer, std::max<size_t>(1, (kGrain * 4) / row), [=](size_t lo, size_t hi) {
        for (size_t o = lo; o < hi; ++o) std::memcpy(dst + o * out_row + col, src + o * row, row);
      });
    }
    col += row;
  }
}

void register_concat(oph::Pack& pack, int32_t since, int32_t until, bool allow_negative) {
  oph::OpBuilder& b = pack.op(kDomain, "Concat")
                          .versions(since, until)
                          .doc("concatenate along axis")
                          .required_attr("axis", OPH_ATTR_INT)
                          .input("inputs", "T", OPH_ARITY_VARIADIC, OPH_MEMORY_DEVICE, 1)
                          .output("concat_result", "T")
                          .infer([allow_negative](oph::InferContext& c) { concat_infer(c, allow_negative); })
                          .compute([allow_negative](oph::KernelContext& ctx) { concat_compute(ctx, allow_negative); });
  add_types(b, "T", kAll);
}

// ----- Flatten -----

int64_t flatten_axis(int64_t axis, int64_t rank, bool allow_negative) {
  // axis in [0, rank] (1-10) or [-rank, rank] (11+).
  if (axis < 0 && !allow_negative) accept_negative_axis_leniently(axis, "Flatten", "axis");
  if (axis < -rank || axis > rank)
    fail("Flatten: axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> flatten_shape(std::span<const int64_t> in, int64_t axis) {
  return {product_or_unknown(in.subspan(0, axis)), product_or_unknown(in.subspan(axis))};
}

void register_flatten(oph::Pack& pack, int32_t since, int32_t until, bool allow_negative, const std::vector<oph_dtype>& types) {
  oph::OpBuilder& b =
      pack.op(kDomain, "Flatten")
          .versions(since, until)
          .doc("reshape to 2-D [prod(shape[:axis]), prod(shape[axis:])]")
          .attr("axis", int64_t{1})
          .input("input", "T")
          .output("output", "T")
          .infer([allow_negative](oph::InferContext& c) {
            if (!c.input_rank_known(0)) {
              c.set_output(0, c.input_dtype(0), {OPH_DIM_UNKNOWN, OPH_DIM_UNKNOWN});
              return;
            }
            auto in = c.input_shape(0);
            int64_t ax = flatten_axis(c.attr<int64_t>("axis"), static_cast<int64_t>(in.size()), allow_negative);
            c.set_output(0, c.input_dtype(0), flatten_shape(in, ax));
          })
          .compute([allow_negative](oph::KernelContext& ctx) {
            oph::TensorRef x = input(ctx, 0, "Flatten");
            int64_t ax = flatten_axis(ctx.attr<int64_t>("axis"), x.ndim(), allow_negative);
            oph::TensorRef y = ensure_output(ctx, 0, flatten_shape(x.shape(), ax), "Flatten");
            if (!y.present()) return;
            copy_bytes(y.data(), x.data(), x.size() * elem_size(x.dtype()));
          })
          .may_inplace(0, 0);
  add_types(b, "T", types);
}

// ----- Unsqueeze / Squeeze -----
// Axes come from the `axes` attribute (1-12; negative values from 11) or the `axes` input (13+, host memory).

enum class AxesFrom { kAttr, kInput };

std::vector<int64_t> unsqueeze_shape(std::span<const int64_t> in, std::vector<int64_t> axes, bool allow_negative) {
  const int64_t out_rank = static_cast<int64_t>(in.size() + axes.size());
  std::vector<bool> is_new(out_rank, false);
  for (int64_t& a : axes) {
    a = normalize_axis(a, out_rank, allow_negative, "Unsqueeze", "axes entry");
    if (is_new[a]) fail("Unsqueeze: axis " + std::to_string(a) + " is repeated in axes");
    is_new[a] = true;
  }
  std::vector<int64_t> out(out_rank);
  size_t j = 0;
  for (int64_t k = 0; k < out_rank; ++k) out[k] = is_new[k] ? 1 : in[j++];
  return out;
}

// nullopt: cannot be decided (no axes given and some dim is unknown).
std::optional<std::vector<int64_t>> squeeze_shape(std::span<const int64_t> in, const std::optional<std::vector<int64_t>>& axes,
                                                  bool allow_negative) {
  const int64_t r = static_cast<int64_t>(in.size());
  std::vector<bool> drop(r, false);
  if (axes) {
    for (int64_t a : *axes) {
      int64_t k = normalize_axis(a, r, allow_negative, "Squeeze", "axes entry");
      if (in[k] >= 0 && in[k] != 1)
        fail("Squeeze: dimension " + std::to_string(k) + " of " + shape_str(in) + " is not 1");
      drop[k] = true;
    }
  } else {
    for (int64_t k = 0; k < r; ++k) {
      if (in[k] < 0) return std::nullopt;
      drop[k] = in[k] == 1;
    }
  }
  std::vector<int64_t> out;
  for (int64_t k = 0; k < r; ++k)
    if (!drop[k]) out.push_back(in[k]);
  return out;
}

void register_unsqueeze(oph::Pack& pack, int32_t since, int32_t until, AxesFrom from, bool allow_negative) {
  oph::OpBuilder& b = pack.op(kDomain, "Unsqueeze").versions(since, until).doc("insert size-1 dims at axes");
  add_types(b, "T", kAll);
  b.input("data", "T");
  if (from == AxesFrom::kAttr) b.required_attr("axes", OPH_ATTR_INTS);
  else b.input("axes", "tensor(int64)", OPH_ARITY_SINGLE, OPH_MEMORY_HOST).types("tensor(int64)", {i64});
  b.output("expanded", "T")
      .infer([from, allow_negative](oph::InferContext& c) {
        oph_dtype dt = c.input_dtype(0);
        std::optional<std::vector<int64_t>> axes;
        if (from == AxesFrom::kAttr) axes = c.attr<std::vector<int64_t>>("axes");
        else if (const oph_tensor* t = c.input_constant(1)) axes = read_ints(t, "Unsqueeze", "axes");
        if (!c.input_rank_known(0)) {
          c.set_output_unknown_rank(0, dt);
          return;
        }
        if (axes) {
          c.set_output(0, dt, unsqueeze_shape(c.input_shape(0), *axes, allow_negative));
        } else if (c.input_rank_known(1) && c.input_shape(1).size() == 1 && c.input_shape(1)[0] >= 0) {
          c.set_output(0, dt, std::vector<int64_t>(c.input_shape(0).size() + c.input_shape(1)[0], OPH_DIM_UNKNOWN));
        } else {
          c.set_output_unknown_rank(0, dt);
        }
      })
      .compute([from, allow_negative](oph::KernelContext& ctx) {
        oph::TensorRef x = input(ctx, 0, "Unsqueeze");
        std::vector<int64_t> axes = from == AxesFrom::kAttr ? ctx.attr<std::vector<int64_t>>("axes")
                                                             : read_ints(input(ctx, 1, "Unsqueeze").raw(), "Unsqueeze", "axes");
        oph::TensorRef y = ensure_output(ctx, 0, unsqueeze_shape(x.shape(), axes, allow_negative), "Unsqueeze");
        if (!y.present()) return;
        copy_bytes(y.data(), x.data(), x.size() * elem_size(x.dtype()));
      })
      .may_inplace(0, 0);
}

void register_squeeze(oph::Pack& pack, int32_t since, int32_t until, AxesFrom from, bool allow_negative) {
  oph::OpBuilder& b = pack.op(kDomain, "Squeeze").versions(since, until).doc("remove size-1 dims (all, or those in axes)");
  add_types(b, "T", kAll);
  b.input("data", "T");
  if (from == AxesFrom::kAttr) b.optional_attr("axes", OPH_ATTR_INTS);
  else b.optional_input("axes", "tensor(int64)", OPH_MEMORY_HOST).types("tensor(int64)", {i64});
  b.output("squeezed", "T")
      .infer([from, allow_negative](oph::InferContext& c) {
        oph_dtype dt = c.input_dtype(0);
        std::optional<std::vector<int64_t>> axes;
        bool axes_unknown = false;
        if (from == AxesFrom::kAttr) {
          if (c.attrs().has("axes")) axes = c.attr<std::vector<int64_t>>("axes");
        } else if (c.has_input(1)) {
          if (const oph_tensor* t = c.input_constant(1)) axes = read_ints(t, "Squeeze", "axes");
          else axes_unknown = true;
        }
        if (!c.input_rank_known(0)) {
          c.set_output_unknown_rank(0, dt);
          return;
        }
        if (axes_unknown) {
          if (c.input_rank_known(1) && c.input_shape(1).size() == 1 && c.input_shape(1)[0] >= 0)
            c.set_output(0, dt, std::vector<int64_t>(c.input_shape(0).size() - c.input_shape(1)[0], OPH_DIM_UNKNOWN));
          else
            c.set_output_unknown_rank(0, dt);
          return;
        }
        auto out = squeeze_shape(c.input_shape(0), axes, allow_negative);
        if (out) c.set_output(0, dt, *out);
        else c.set_output_unknown_rank(0, dt);
      })
      .compute([from, allow_negative](oph::KernelContext& ctx) {
        oph::TensorRef x = input(ctx, 0, "Squeeze");
        std::optional<std::vector<int64_t>> axes;
        if (from == AxesFrom::kAttr) {
          if (ctx.attrs().has("axes")) axes = ctx.attr<std::vector<int64_t>>("axes");
        } else if (ctx.input(1).present()) {
          axes = read_ints(ctx.input(1).raw(), "Squeeze", "axes");
        }
        auto out = squeeze_shape(x.shape(), axes, allow_negative);
        oph::TensorRef y = ensure_output(ctx, 0, *out, "Squeeze");
        if (!y.present()) return;
        copy_bytes(y.data(), x.data(), x.size() * elem_size(x.dtype()));
      })
      .may_inplace(0, 0);
}

std::pair<int64_t, int64_t> shape_range(int64_t rank, const oph::Attrs& a, bool has_range) {
  int64_t start = 0, end = rank;
  if (has_range) {
    start = a.get<int64_t>("start");
    if (a.has("end")) end = a.get<int64_t>("end");
  }
  auto clampi = [rank](int64_t v) {
    if (v < 0) v += rank;
    return std::clamp<int64_t>(v, 0, rank);
  };
  start = clampi(start);
  end = clampi(end);
  return {start, std::max(start, end)};
}

void register_shape_size(oph::Pack& pack) {
  for (auto vr : {std::pair{1, 14}, std::pair{15, OPH_OPSET_MAX}}) {
    const int32_t since = vr.first, until = vr.second;
    const bool has_range = since >= 15;
    oph::OpBuilder& b = pack.op(kDomain, "Shape")
                            .versions(since, until)
                            .doc("the shape of the input as a 1-D int64 tensor (dims [start, end) from opset 15)")
                            .input("data", "T")
                            .output("shape", "T1")
                            .types("T1", {i64})
                            .infer([has_range](oph::InferContext& c) {
                              if (!c.input_rank_known(0)) {
                                c.set_output(0, i64, {OPH_DIM_UNKNOWN});
                                return;
                              }
                              auto [s, e] = shape_range(static_cast<int64_t>(c.input_shape(0).size()), c.attrs(), has_range);
                              c.set_output(0, i64, {e - s});
                            })
                            .compute([has_range](oph::KernelContext& ctx) {
                              oph::TensorRef x = ctx.input(0);
                              auto [s, e] = shape_range(x.ndim(), ctx.attrs(), has_range);
                              int64_t n = e - s;
                              oph::TensorRef y = ensure_output(ctx, 0, std::span<const int64_t>(&n, 1), "Shape");
                              if (!y.present()) return;
                              int64_t* Y = static_cast<int64_t*>(y.data());
                              for (int64_t k = s; k < e; ++k) Y[k - s] = x.shape()[k];
                            });
    if (has_range) b.attr("start", int64_t{0}).optional_attr("end", OPH_ATTR_INT);
    add_types(b, "T", kAll);
  }
  oph::OpBuilder& b = pack.op(kDomain, "Size")
                          .versions(1, OPH_OPSET_MAX)
                          .doc("the number of elements of the input as an int64 scalar")
                          .input("data", "T")
                          .output("size", "T1")
                          .types("T1", {i64})
                          .infer([](oph::InferContext& c) { c.set_output(0, i64, std::span<const int64_t>()); })
                          .compute([](oph::KernelContext& ctx) {
                            oph::TensorRef x = ctx.input(0);
                            oph::TensorRef y = ensure_output(ctx, 0, std::span<const int64_t>(), "Size");
                            if (y.present()) *static_cast<int64_t*>(y.data()) = static_cast<int64_t>(x.size());
                          });
  add_types(b, "T", kAll);
}

}  // namespace

void register_shape(oph::Pack& pack) {
  // Reshape 5-13: no allowzero (0 always copies); 14+: allowzero attribute. (1-4: legacy shape attribute.)
  register_reshape(pack, 5, 13);
  register_reshape(pack, 14, OPH_OPSET_MAX);
  {
    oph::OpBuilder& b = pack.op(kDomain, "Transpose")
                            .versions(1, OPH_OPSET_MAX)
                            .doc("permute dims (perm default: reversed)")
                            .optional_attr("perm", OPH_ATTR_INTS)
                            .input("data", "T")
                            .output("transposed", "T")
                            .infer(transpose_infer)
                            .compute(transpose_compute);
    add_types(b, "T", kAll);
  }
  // Concat 4-10: axis required, non-negative; 11+: negative axis. (1-3: optional axis, default 1: not claimed.)
  register_concat(pack, 4, 10, false);
  register_concat(pack, 11, OPH_OPSET_MAX, true);
  // Flatten 1-8: float types; 9-10: all types; 11+: negative axis.
  register_flatten(pack, 1, 8, false, kFlatten1Types);
  register_flatten(pack, 9, 10, false, kAll);
  register_flatten(pack, 11, OPH_OPSET_MAX, true, kAll);
  // Unsqueeze/Squeeze 1-10: axes attribute, non-negative; 11-12: negative axes; 13+: axes input.
  register_unsqueeze(pack, 1, 10, AxesFrom::kAttr, false);
  register_unsqueeze(pack, 11, 12, AxesFrom::kAttr, true);
  register_unsqueeze(pack, 13, OPH_OPSET_MAX, AxesFrom::kInput, true);
  register_squeeze(pack, 1, 10, AxesFrom::kAttr, false);
  register_squeeze(pack, 11, 12, AxesFrom::kAttr, true);
  register_squeeze(pack, 13, OPH_OPSET_MAX, AxesFrom::kInput, true);
  register_shape_size(pack);
}

static const Family kFamily("shape", &register_shape);

}  // namespace onnx_core
