// onnx-core: indexing, data movement and tensor construction: Cast, CastLike, Shape, Size, Gather,
// GatherElements, ScatterElements, Slice, Expand, Tile, Range, ConstantOfShape, Split, Pad, CumSum, OneHot,
// NonZero, TopK, DepthToSpace, SpaceToDepth, Trilu, GatherND, ScatterND, Scatter, Compress, EyeLike.
// Shape-like inputs (Slice starts/ends/axes/steps, Expand shape, Tile repeats, Pad pads, Split split, TopK K,
// OneHot depth, Range scalars, ConstantOfShape shape) are delivered in host memory; when they are constants,
// infer() computes the output shape, otherwise the output is allocated in compute.
#include "common.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>

namespace onnx_core {
namespace {

// ---------------------------------------------------------------------------------------------------------
// Element types
// ---------------------------------------------------------------------------------------------------------

template <class S>
double to_double(S v) {
  if constexpr (std::is_same_v<S, Half>) return half_to_float(v.bits);
  else if constexpr (std::is_same_v<S, BF16>) return bf16_to_float(v.bits);
  else return static_cast<double>(v);
}

template <class D, class S>
D convert(S v) {
  if constexpr (std::is_same_v<D, S>) {
    return v;
  } else if constexpr (std::is_same_v<D, bool>) {
    if constexpr (std::is_integral_v<S>) return v != 0;
    else return to_double(v) != 0.0;
  } else if constexpr (std::is_same_v<D, Half>) {
    if constexpr (std::is_same_v<S, double>) {
      return Half{float_to_half(static_cast<float>(v))};
    }
    return Half{float_to_half(static_cast<float>(to_double(v)))};
  } else if constexpr (std::is_same_v<D, BF16>) {
    return BF16{float_to_bf16(static_cast<float>(to_double(v)))};
  } else if constexpr (std::is_integral_v<D> && std::is_integral_v<S>) {
    return static_cast<D>(v);
  } else if constexpr (std::is_integral_v<D>) {
    double d = to_double(v);
    if (std::isnan(d)) return D(0);
    if (d <= static_cast<double>(std::numeric_limits<D>::lowest())) return std::numeric_limits<D>::lowest();
    if (d >= static_cast<double>(std::numeric_limits<D>::max())) return std::numeric_limits<D>::max();
    return static_cast<D>(d);
  } else {
    return static_cast<D>(to_double(v));
  }
}

// Cast `to` and EyeLike `dtype`: any kAll dtype (string tensors are named as such).
oph_dtype cast_dtype(int64_t t, const std::string& op) {
  if (t == 8) fail(op + ": string tensors are not supported by onnx-core", OPH_CODE_UNIMPLEMENTED);
  return dtype_from_onnx(t, kAll, op, "element type");
}

void cast_buffer(const oph::KernelContext& ctx, oph_dtype from, const void* src, oph_dtype to, void* dst, size_t n,
                 const std::string& op) {
  if (from == to) {
    copy_bytes(ctx, dst, src, n * elem_size(from));
    return;
  }
  dispatch_all(from, op, [&]<class S>(std::type_identity<S>) {
    dispatch_all(to, op, [&]<class D>(std::type_identity<D>) {
      const S* s = static_cast<const S*>(src);
      D* d = static_cast<D*>(dst);
      ctx.parallel_for(n, kGrain, [=](size_t lo, size_t hi) {
        for (size_t i = lo; i < hi; ++i) d[i] = convert<D>(s[i]);
      });
    });
  });
}

// ---------------------------------------------------------------------------------------------------------
// Shape helpers
// ---------------------------------------------------------------------------------------------------------

std::optional<std::vector<int64_t>> const_ints(const oph::InferContext& c, size_t i, const std::string& op,
                                               const char* what) {
  const oph_tensor* t = c.input_constant(i);
  if (!t) return std::nullopt;
  return read_ints(t, op, what);
}

std::vector<int64_t> compact_strides(std::span<const int64_t> shape) {
  std::vector<int64_t> st(shape.size(), 1);
  for (size_t k = shape.size(); k-- > 1;) st[k - 1] = st[k] * shape[k];
  return st;
}

// dst (contiguous, `shape`) [i] = src[base + sum(idx_k * strides_k)], elements of `es` bytes.
void strided_copy(const oph::KernelContext& ctx, void* dst, const void* src, size_t es, std::span<const int64_t> shape,
                  std::span<const int64_t> strides, int64_t base) {
  const size_t n = oph::numel(shape);
  if (n == 0) return;
  const size_t r = shape.size();
  std::vector<int64_t> sh(shape.begin(), shape.end()), st(strides.begin(), strides.end());
  auto run = [&]<class T>(std::type_identity<T>) {
    const T* S = static_cast<const T*>(src);
    T* D = static_cast<T*>(dst);
    ctx.parallel_for(n, kGrain, [&](size_t lo, size_t hi) {
      std::array<int64_t, OPH_MAX_NDIM> idx{};
      size_t rem = lo;
      int64_t off = base;
      for (size_t k = r; k-- > 0;) {
        idx[k] = static_cast<int64_t>(rem % static_cast<size_t>(sh[k]));
        rem /= static_cast<size_t>(sh[k]);
        off += idx[k] * st[k];
      }
      for (size_t i = lo; i < hi; ++i) {
        D[i] = S[off];
        for (size_t k = r; k-- > 0;) {
          off += st[k];
          if (++idx[k] < sh[k]) break;
          off -= st[k] * sh[k];
          idx[k] = 0;
        }
      }
    });
  };
  switch (es) {
    case 1: run(std::type_identity<uint8_t>{}); break;
    case 2: run(std::type_identity<uint16_t>{}); break;
    case 4: run(std::type_identity<uint32_t>{}); break;
    case 8: run(std::type_identity<uint64_t>{}); break;
    default: fail("unsupported element size " + std::to_string(es), OPH_CODE_UNIMPLEMENTED);
  }
}

int64_t index_at(const oph::TensorRef& t, size_t i) {
  if (t.dtype() == i64) return static_cast<const int64_t*>(t.data())[i];
  return static_cast<const int32_t*>(t.data())[i];
}

// ---------------------------------------------------------------------------------------------------------
// Cast, CastLike
// ---------------------------------------------------------------------------------------------------------

void register_cast(oph::Pack& pack) {
  for (auto vr : {std::pair{6, 12}, std::pair{13, 18}, std::pair{19, OPH_OPSET_MAX}}) {
    const int32_t since = vr.first, until = vr.second;
    oph::OpBuilder& b = pack.op(kDomain, "Cast")
                            .versions(since, until)
                            .doc("Y = X converted to the element type `to`")
                            .required_attr("to", OPH_ATTR_INT)
                            .input("input", "T1")
                            .output("output", "T2")
                            .infer([](oph::InferContext& c) {
                              oph_dtype to = cast_dtype(c.attr<int64_t>("to"), "Cast");
                              if (!c.input_rank_known(0)) c.set_output_unknown_rank(0, to);
                              else c.set_output(0, to, c.input_shape(0));
                            })
                            .compute([](oph::KernelContext& ctx) {
                              oph::TensorRef x = input(ctx, 0, "Cast");
                              oph::TensorRef y = ensure_output(ctx, 0, x.shape(), "Cast");
                              if (!y.present()) return;
                              cast_buffer(ctx, x.dtype(), x.data(), y.dtype(), y.data(), x.size(), "Cast");
                            });
    if (since >= 19) b.attr("saturate", int64_t{1});
    add_types(b, "T1", kAll);
    add_types(b, "T2", kAll);
  }
  for (auto vr : {std::pair{15, 18}, std::pair{19, OPH_OPSET_MAX}}) {
    const int32_t since = vr.first, until = vr.second;
    oph::OpBuilder& b = pack.op(kDomain, "CastLike")
                            .versions(since, until)
                            .doc("Y = X converted to the element type of target_type")
                            .input("input", "T1")
                            .input("target_type", "T2")
                            .output("output", "T2")
                            .infer([](oph::InferContext& c) {
                              oph_dtype to = c.input_dtype(1);
                              if (!c.input_rank_known(0)) c.set_output_unknown_rank(0, to);
                              else c.set_output(0, to, c.input_shape(0));
                            })
                            .compute([](oph::KernelContext& ctx) {
                              oph::TensorRef x = input(ctx, 0, "CastLike");
                              oph::TensorRef y = ensure_output(ctx, 0, x.shape(), "CastLike");
                              if (!y.present()) return;
                              cast_buffer(ctx, x.dtype(), x.data(), y.dtype(), y.data(), x.size(), "CastLike");
                            });
    if (since >= 19) b.attr("saturate", int64_t{1});
    add_types(b, "T1", kAll);
    add_types(b, "T2", kAll);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Shape, Size
// ---------------------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------------------
// Gather, GatherElements, ScatterElements
// ---------------------------------------------------------------------------------------------------------

std::vector<int64_t> gather_shape(std::span<const int64_t> data, std::span<const int64_t> idx, int64_t axis) {
  std::vector<int64_t> out(data.begin(), data.begin() + axis);
  out.insert(out.end(), idx.begin(), idx.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  return out;
}

void gather_compute(const oph::KernelContext& ctx, int32_t since) {
  const std::string op = "Gather";
  oph::TensorRef data = input(ctx, 0, op), idx = input(ctx, 1, op);
  if (data.ndim() == 0) fail(op + ": data must have rank >= 1");
  const int64_t axis = normalize_axis(ctx.attr<int64_t>("axis"), data.ndim(), since >= 11, op);
  std::vector<int64_t> oshape = gather_shape(data.shape(), idx.shape(), axis);
  oph::TensorRef y = ensure_output(ctx, 0, oshape, op);
  if (!y.present()) return;
  size_t outer = 1, inner = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= static_cast<size_t>(data.shape()[k]);
  for (int64_t k = axis + 1; k < data.ndim(); ++k) inner *= static_cast<size_t>(data.shape()[k]);
  const int64_t dim = data.shape()[axis];
  const size_t ni = idx.size(), es = elem_size(data.dtype()), block = inner * es;
  std::vector<int64_t> ix(ni);
  for (size_t j = 0; j < ni; ++j) {
    int64_t v = index_at(idx, j);
    if (v < -dim || v >= dim) fail(op + ": index " + std::to_string(v) + " is out of range for axis size " + std::to_string(dim));
    ix[j] = v < 0 ? v + dim : v;
  }
  const char* S = static_cast<const char*>(data.data());
  char* D = static_cast<char*>(y.data());
  ctx.parallel_for(outer * ni, std::max<size_t>(1, kGrain / std::max<size_t>(1, inner)), [&](size_t lo, size_t hi) {
    for (size_t r = lo; r < hi; ++r) {
      size_t o = r / ni, j = r % ni;
      std::memcpy(D + r * block, S + (o * static_cast<size_t>(dim) + static_cast<size_t>(ix[j])) * block, block);
    }
  });
}

void gather_elements_compute(const oph::KernelContext& ctx) {
  const std::string op = "GatherElements";
  oph::TensorRef data = input(ctx, 0, op), idx = input(ctx, 1, op);
  const int64_t r = data.ndim();
  if (idx.ndim() != r) fail(op + ": data and indices must have the same rank");
  const int64_t axis = normalize_axis(ctx.attr<int64_t>("axis"), r, true, op);
  oph::TensorRef y = ensure_output(ctx, 0, idx.shape(), op);
  if (!y.present()) return;
  const size_t n = idx.size(), es = elem_size(data.dtype());
  auto st = compact_strides(data.shape());
  auto ish = idx.shape();
  const int64_t dim = data.shape()[axis];
  const char* S = static_cast<const char*>(data.data());
  char* D = static_cast<char*>(y.data());
  for (size_t i = 0; i < n; ++i) {
    size_t rem = i;
    int64_t off = 0;
    for (int64_t k = r; k-- > 0;) {
      int64_t c = static_cast<int64_t>(rem % static_cast<size_t>(ish[k]));
      rem /= static_cast<size_t>(ish[k]);
      if (k == axis) {
        c = index_at(idx, i);
        if (c < -dim || c >= dim) fail(op + ": index " + std::to_string(c) + " is out of range");
        if (c < 0) c += dim;
      }
      off += c * st[k];
    }
    std::memcpy(D + i * es, S + off * static_cast<int64_t>(es), es);
  }
}

template <class T>
T scatter_reduce(const std::string& red, T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    if (red == "add" || red == "max") return a || b;
    if (red == "mul" || red == "min") return a && b;
    return b;
  } else {
    if (red == "add") return static_cast<T>(a + b);
    if (red == "mul") return static_cast<T>(a * b);
    if (red == "max") return std::max(a, b);
    if (red == "min") return std::min(a, b);
    return b;
  }
}

void scatter_elements_compute(const oph::KernelContext& ctx, int32_t since) {
  const std::string op = "ScatterElements";
  oph::TensorRef data = input(ctx, 0, op), idx = input(ctx, 1, op), upd = input(ctx, 2, op);
  const int64_t r = data.ndim();
  if (idx.ndim() != r || upd.ndim() != r) fail(op + ": data, indices and updates must have the same rank");
  const int64_t axis = normalize_axis(ctx.attr<int64_t>("axis"), r, true, op);
  std::string red = since >= 16 ? ctx.attr<std::string>("reduction") : "none";
  if (red != "none" && red != "add" && red != "mul" && !(since >= 18 && (red == "max" || red == "min")))
    fail(op + ": reduction '" + red + "' is not supported in this opset");
  oph::TensorRef y = ensure_output(ctx, 0, data.shape(), op);
  if (!y.present()) return;
  copy_bytes(ctx, y.data(), data.data(), data.size() * elem_size(data.dtype()));
  auto st = compact_strides(data.shape());
  auto ish = idx.shape();
  const int64_t dim = data.shape()[axis];
  dispatch_all(data.dtype(), op, [&]<class T>(std::type_identity<T>) {
    const T* U = static_cast<const T*>(upd.data());
    T* D = static_cast<T*>(y.data());
    for (size_t i = 0, n = idx.size(); i < n; ++i) {
      size_t rem = i;
      int64_t off = 0;
      for (int64_t k = r; k-- > 0;) {
        int64_t c = static_cast<int64_t>(rem % static_cast<size_t>(ish[k]));
        rem /= static_cast<size_t>(ish[k]);
        if (k == axis) {
          c = index_at(idx, i);
          if (c < -dim || c >= dim) fail(op + ": index " + std::to_string(c) + " is out of range");
          if (c < 0) c += dim;
        }
        off += c * st[k];
      }
      if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BF16>) {
        if (red != "none") fail(op + ": reductions on 16-bit floats are not supported", OPH_CODE_UNIMPLEMENTED);
        D[off] = U[i];
      } else {
        D[off] = scatter_reduce(red, D[off], U[i]);
      }
    }
  });
}

void register_gathers(oph::Pack& pack) {
  for (auto vr : {std::pair{1, 10}, std::pair{11, OPH_OPSET_MAX}}) {
    const int32_t since = vr.first, until = vr.second;
    oph::OpBuilder& b = pack.op(kDomain, "Gather")
                            .versions(since, until)
                            .doc("entries of data along axis at the given indices")
                            .attr("axis", int64_t{0})
                            .input("data", "T")
                            .input("indices", "Tind")
                            .output("output", "T")
                            .types("Tind", {i32, i64})
                            .infer([since](oph::InferContext& c) {
                              if (!c.input_rank_known(0) || !c.input_rank_known(1)) {
                                c.set_output_unknown_rank(0, c.input_dtype(0));
                                return;
                              }
                              auto d = c.input_shape(0);
                              if (d.empty()) fail("Gather: data must have rank >= 1");
                              int64_t axis = normalize_axis(c.attr<int64_t>("axis"), static_cast<int64_t>(d.size()),
                                                            since >= 11, "Gather");
                              c.set_output(0, c.input_dtype(0), gather_shape(d, c.input_shape(1), axis));
                            })
                            .compute([since](oph::KernelContext& ctx) { gather_compute(ctx, since); });
    add_types(b, "T", kAll);
  }
  {
    oph::OpBuilder& b = pack.op(kDomain, "GatherElements")
                            .versions(11, OPH_OPSET_MAX)
                            .doc("output[i][j][k] = data[index[i][j][k]][j][k] (for axis 0)")
                            .attr("axis", int64_t{0})
                            .input("data", "T")
                            .input("indices", "Tind")
                            .output("output", "T")
                            .types("Tind", {i32, i64})
                            .infer([](oph::InferContext& c) {
                              if (!c.input_rank_known(1)) c.set_output_unknown_rank(0, c.input_dtype(0));
                              else c.set_output(0, c.input_dtype(0), c.input_shape(1));
                            })
                            .compute(gather_elements_compute);
    add_types(b, "T", kAll);
  }
  for (auto vr : {std::pair{11, 15}, std::pair{16, 17}, std::pair{18, OPH_OPSET_MAX}}) {
    const int32_t since = vr.first, until = vr.second;
    oph::OpBuilder& b = pack.op(kDomain, "ScatterElements")
                            .versions(since, until)
                            .doc("output = data with updates written at indices along axis (optionally reduced)")
                            .attr("axis", int64_t{0})
                            .input("data", "T")
                            .input("indices", "Tind")
                            .input("updates", "T")
                            .output("output", "T")
                            .types("Tind", {i32, i64})
                            .infer(oph::same_as_input(0))
                            .compute([since](oph::KernelContext& ctx) { scatter_elements_compute(ctx, since); });
    if (since >= 16) b.attr("reduction", std::string("none"));
    add_types(b, "T", kAll);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Slice
// ---------------------------------------------------------------------------------------------------------

struct SliceSpec {
  std::vector<int64_t> shape;    // output shape
  std::vector<int64_t> start;    // per input dim
  std::vector<int64_t> step;
};

SliceSpec slice_spec(std::span<const int64_t> in, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                     std::vector<int64_t> axes, std::vector<int64_t> steps, const std::string& op) {
  const int64_t r = static_cast<int64_t>(in.size());
  if (starts.size() != ends.size()) fail(op + ": starts and ends must have the same length");
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    fail(op + ": starts, ends, axes and steps must have the same length");
  SliceSpec s;
  s.shape.assign(in.begin(), in.end());
  s.start.assign(static_cast<size_t>(r), 0);
  s.step.assign(static_cast<size_t>(r), 1);
  std::vector<bool> seen(static_cast<size_t>(r), false);
  for (size_t k = 0; k < starts.size(); ++k) {
    int64_t a = normalize_axis(axes[k], r, true, op);
    if (seen[static_cast<size_t>(a)]) fail(op + ": axis " + std::to_string(axes[k]) + " is repeated");
    seen[static_cast<size_t>(a)] = true;
    int64_t d = in[static_cast<size_t>(a)], st = steps[k];
    if (st == 0) fail(op + ": steps must not be 0");
    if (d < 0) {
      s.shape[static_cast<size_t>(a)] = OPH_DIM_UNKNOWN;
      continue;
    }
    int64_t b = starts[k], e = ends[k];
    if (b < 0) b += d;
    if (e < 0) e += d;
    int64_t len;
    if (st > 0) {
      b = std::clamp<int64_t>(b, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
      len = e > b ? (e - b + st - 1) / st : 0;
    } else {
      b = std::clamp<int64_t>(b, 0, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
      len = b > e ? (b - e + (-st) - 1) / (-st) : 0;
    }
    s.shape[static_cast<size_t>(a)] = len;
    s.start[static_cast<size_t>(a)] = b;
    s.step[static_cast<size_t>(a)] = st;
  }
  return s;
}

void slice_run(const oph::KernelContext& ctx, const oph::TensorRef& x, const SliceSpec& s, const std::string& op) {
  oph::TensorRef y = ensure_output(ctx, 0, s.shape, op);
  if (!y.present()) return;
  auto st = compact_strides(x.shape());
  std::vector<int64_t> strides(st.size());
  int64_t base = 0;
  for (size_t k = 0; k < st.size(); ++k) {
    strides[k] = st[k] * s.step[k];
    base += s.start[k] * st[k];
  }
  strided_copy(ctx, y.data(), x.data(), elem_size(x.dtype()), s.shape, strides, base);
}

void register_slice(oph::Pack& pack) {
  {
    oph::OpBuilder& b = pack.op(kDomain, "Slice")
                            .versions(1, 9)
                            .doc("data[starts:ends] along axes (attributes)")
                            .required_attr("starts", OPH_ATTR_INTS)
                            .required_attr("ends", OPH_ATTR_INTS)
                            .optional_attr("axes", OPH_ATTR_INTS)
                            .input("data", "T")
                            .output("output", "T")
                            .infer([](oph::InferContext& c) {
                              if (!c.input_rank_known(0)) {
                                c.set_output_unknown_rank(0, c.input_dtype(0));
                                return;
                              }
                              auto ax = c.attrs().has("axes") ? c.attr<std::vector<int64_t>>("axes") : std::vector<int64_t>{};
                              SliceSpec s = slice_spec(c.input_shape(0), c.attr<std::vector<int64_t>>("starts"),
                                                       c.attr<std::vector<int64_t>>("ends"), ax, {}, "Slice");
                              c.set_output(0, c.input_dtype(0), s.shape);
                            })
                            .compute([](oph::KernelContext& ctx) {
                              oph::TensorRef x = input(ctx, 0, "Slice");
                              auto ax = ctx.attrs().has("axes") ? ctx.attr<std::vector<int64_t>>("axes") : std::vector<int64_t>{};
                              SliceSpec s = slice_spec(x.shape(), ctx.attr<std::vector<int64_t>>("starts"),
                                                       ctx.attr<std::vector<int64_t>>("ends"), ax, {}, "Slice");
                              slice_run(ctx, x, s, "Slice");
                            });
    add_types(b, "T", kAll);
  }
  oph::OpBuilder& b = pack.op(kDomain, "Slice")
                          .versions(10, OPH_OPSET_MAX)
                          .doc("data[starts:ends:steps] along axes (inputs in host memory)")
                          .input("data", "T")
                          .input("starts", "Tind", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)
                          .input("ends", "Tind", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)
                          .optional_input("axes", "Tind", OPH_MEMORY_HOST)
                          .optional_input("steps", "Tind", OPH_MEMORY_HOST)
                          .output("output", "T")
                          .types("Tind", {i32, i64})
                          .infer([](oph::InferContext& c) {
                            if (!c.input_rank_known(0)) {
                              c.set_output_unknown_rank(0, c.input_dtype(0));
                              return;
                            }
                            auto in = c.input_shape(0);
                            auto starts = const_ints(c, 1, "Slice", "starts"), ends = const_ints(c, 2, "Slice", "ends");
                            std::optional<std::vector<int64_t>> axes = std::vector<int64_t>{}, steps = std::vector<int64_t>{};
                            if (c.has_input(3)) axes = const_ints(c, 3, "Slice", "axes");
                            if (c.has_input(4)) steps = const_ints(c, 4, "Slice", "steps");
                            if (!starts || !ends || !axes || !steps) {
                              c.set_output(0, c.input_dtype(0), std::vector<int64_t>(in.size(), OPH_DIM_UNKNOWN));
                              return;
                            }
                            c.set_output(0, c.input_dtype(0), slice_spec(in, *starts, *ends, *axes, *steps, "Slice").shape);
                          })
                          .compute([](oph::KernelContext& ctx) {
                            oph::TensorRef x = input(ctx, 0, "Slice");
                            auto ints = [&](size_t i, const char* w) {
                              return ctx.input(i).present() ? read_ints(ctx.input(i).raw(), "Slice", w) : std::vector<int64_t>{};
                            };
                            SliceSpec s = slice_spec(x.shape(), ints(1, "starts"), ints(2, "ends"), ints(3, "axes"),
                                                     ints(4, "steps"), "Slice");
                            slice_run(ctx, x, s, "Slice");
                          });
  add_types(b, "T", kAll);
}

// ---------------------------------------------------------------------------------------------------------
// Expand, Tile
// ---------------------------------------------------------------------------------------------------------

void register_expand_tile(oph::Pack& pack) {
  {
    oph::OpBuilder& b =
        pack.op(kDomain, "Expand")
            .versions(8, OPH_OPSET_MAX)
            .doc("input broadcast to `shape` (bidirectional broadcasting)")
            .input("input", "T")
            .input("shape", "I", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)
            .output("output", "T")
            .types("I", {i64})
            .infer([](oph::InferContext& c) {
              auto shape = const_ints(c, 1, "Expand", "shape");
              if (!shape || !c.input_rank_known(0)) {
                if (c.input_rank_known(1) && c.input_shape(1).size() == 1 && c.input_shape(1)[0] >= 0 &&
                    c.input_rank_known(0))
                  c.set_output(0, c.input_dtype(0),
                               std::vector<int64_t>(std::max<size_t>(c.input_shape(0).size(),
                                                                     static_cast<size_t>(c.input_shape(1)[0])),
                                                    OPH_DIM_UNKNOWN));
                else c.set_output_unknown_rank(0, c.input_dtype(0));
                return;
              }
              c.set_output(0, c.input_dtype(0), oph::broadcast_shapes(c.input_shape(0), *shape));
            })
            .compute([](oph::KernelContext& ctx) {
              oph::TensorRef x = input(ctx, 0, "Expand");
              std::vector<int64_t> shape = read_ints(ctx.input(1).raw(), "Expand", "shape");
              std::vector<int64_t> oshape = oph::broadcast_shapes(x.shape(), shape);
              oph::TensorRef y = ensure_output(ctx, 0, oshape, "Expand");
              if (!y.present()) return;
              auto st = compact_strides(x.shape());
              std::vector<int64_t> strides(oshape.size(), 0);
              const size_t off = oshape.size() - x.shape().size();
              for (size_t k = 0; k < x.shape().size(); ++k) strides[k + off] = x.shape()[k] == 1 ? 0 : st[k];
              strided_copy(ctx, y.data(), x.data(), elem_size(x.dtype()), oshape, strides, 0);
            });
    add_types(b, "T", kAll);
  }
  oph::OpBuilder& b =
      pack.op(kDomain, "Tile")
          .versions(6, OPH_OPSET_MAX)
          .doc("input repeated `repeats` times along each axis")
          .input("input", "T")
          .input("repeats", "T1", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)
          .output("output", "T")
          .types("T1", {i64})
          .infer([](oph::InferContext& c) {
            if (!c.input_rank_known(0)) {
              c.set_output_unknown_rank(0, c.input_dtype(0));
              return;
            }
            auto in = c.input_shape(0);
            auto rep = const_ints(c, 1, "Tile", "repeats");
            if (!rep) {
              c.set_output(0, c.input_dtype(0), std::vector<int64_t>(in.size(), OPH_DIM_UNKNOWN));
              return;
            }
            if (rep->size() != in.size()) fail("Tile: repeats must have one entry per input dimension");
            std::vector<int64_t> out(in.size());
            for (size_t k = 0; k < in.size(); ++k) out[k] = in[k] < 0 ? OPH_DIM_UNKNOWN : in[k] * (*rep)[k];
            c.set_output(0, c.input_dtype(0), out);
          })
          .compute([](oph::KernelContext& ctx) {
            oph::TensorRef x = input(ctx, 0, "Tile");
            std::vector<int64_t> rep = read_ints(ctx.input(1).raw(), "Tile", "repeats");
            auto in = x.shape();
            if (rep.size() != in.size()) fail("Tile: repeats must have one entry per input dimension");
            const size_t r = in.size();
            std::vector<int64_t> oshape(r);
            for (size_t k = 0; k < r; ++k) {
              if (rep[k] < 0) fail("Tile: repeats must be non-negative");
              oshape[k] = in[k] * rep[k];
            }
            oph::TensorRef y = ensure_output(ctx, 0, oshape, "Tile");
            if (!y.present()) return;
            const size_t n = oph::numel(oshape), es = elem_size(x.dtype());
            auto st = compact_strides(in);
            const char* S = static_cast<const char*>(x.data());
            char* D = static_cast<char*>(y.data());
            for (size_t i = 0; i < n; ++i) {
              size_t rem = i;
              int64_t off = 0;
              for (size_t k = r; k-- > 0;) {
                int64_t c = static_cast<int64_t>(rem % static_cast<size_t>(oshape[k]));
                rem /= static_cast<size_t>(oshape[k]);
                off += (c % in[k]) * st[k];
              }
              std::memcpy(D + i * es, S + static_cast<size_t>(off) * es, es);
            }
          });
  add_types(b, "T", kAll);
}

// ---------------------------------------------------------------------------------------------------------
// Range, ConstantOfShape
// ---------------------------------------------------------------------------------------------------------

template <class T>
int64_t range_count(T start, T limit, T delta) {
  if (delta == T(0)) fail("Range: delta must not be 0");
  double n = std::ceil((static_cast<double>(limit) - static_cast<double>(start)) / static_cast<double>(delta));
  return std::max<int64_t>(0, static_cast<int64_t>(n));
}

void register_range_cos(oph::Pack& pack) {
  {
    oph::OpBuilder& b =
        pack.op(kDomain, "Range")
            .versions(11, OPH_OPSET_MAX)
            .doc("[start, start + delta, ...) up to limit")
            .input("start", "T", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)
            .input("limit", "T", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)
            .input("delta", "T", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)
            .output("output", "T")
            .infer([](oph::InferContext& c) {
              const oph_tensor *s = c.input_constant(0), *l = c.input_constant(1), *d = c.input_constant(2);
              if (!s || !l || !d) {
                c.set_output(0, c.input_dtype(0), {OPH_DIM_UNKNOWN});
                return;
              }
              dispatch_numeric_all(c.input_dtype(0), "Range", [&]<class T>(std::type_identity<T>) {
                auto v = [](const oph_tensor* t) {
                  return *reinterpret_cast<const T*>(static_cast<const char*>(t->data) + t->byte_offset);
                };
                c.set_output(0, c.input_dtype(0), {range_count<T>(v(s), v(l), v(d))});
              });
            })
            .compute([](oph::KernelContext& ctx) {
              oph::TensorRef s = input(ctx, 0, "Range"), l = input(ctx, 1, "Range"), d = input(ctx, 2, "Range");
              dispatch_numeric_all(s.dtype(), "Range", [&]<class T>(std::type_identity<T>) {
                T st = *static_cast<const T*>(s.data()), dl = *static_cast<const T*>(d.data());
                int64_t n = range_count<T>(st, *static_cast<const T*>(l.data()), dl);
                oph::TensorRef y = ensure_output(ctx, 0, std::span<const int64_t>(&n, 1), "Range");
                if (!y.present()) return;
                T* Y = static_cast<T*>(y.data());
                for (int64_t i = 0; i < n; ++i) Y[i] = static_cast<T>(st + static_cast<T>(i) * dl);
              });
            });
    add_types(b, "T", {f32, f64, i16, i32, i64});
  }
  struct ConstantOfShapeKernel {
    oph_dtype dtype = f32;
    std::vector<unsigned char> value = std::vector<unsigned char>(4, 0);
    explicit ConstantOfShapeKernel(const oph::KernelInit& init) {
      const oph_attr_value& v = init.attrs().value(init.attrs().index_of("value"));
      if (v.type == OPH_ATTR_TENSOR && v.tensor) {
        dtype = v.tensor->dtype;
        size_t es = elem_size(dtype);
        if (oph::numel({v.tensor->shape, static_cast<size_t>(v.tensor->ndim)}) != 1)
          fail("ConstantOfShape: value must hold exactly one element");
        value.resize(es);
        std::memcpy(value.data(), static_cast<const char*>(v.tensor->data) + v.tensor->byte_offset, es);
      }
    }
    void compute(oph::KernelContext& ctx) {
      std::vector<int64_t> shape = read_ints(ctx.input(0).raw(), "ConstantOfShape", "input");
      for (int64_t d : shape)
        if (d < 0) fail("ConstantOfShape: dimensions must be non-negative");
      oph::TensorRef y = ensure_output(ctx, 0, shape, "ConstantOfShape");
      if (!y.present()) return;
      const size_t es = value.size(), n = y.size();
      char* D = static_cast<char*>(y.data());
      for (size_t i = 0; i < n; ++i) std::memcpy(D + i * es, value.data(), es);
    }
  };
  oph::OpBuilder& b =
      pack.op(kDomain, "ConstantOfShape")
          .versions(9, OPH_OPSET_MAX)
          .doc("a tensor of the given shape filled with `value` (default float32 0)")
          .optional_attr("value", OPH_ATTR_TENSOR)
          .input("input", "T1", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)
          .output("output", "T2")
          .types("T1", {i64})
          .infer([](oph::InferContext& c) {
            const oph_attr_value& v = c.attrs().value(c.attrs().index_of("value"));
            oph_dtype dt = (v.type == OPH_ATTR_TENSOR && v.tensor) ? v.tensor->dtype : f32;
            auto shape = const_ints(c, 0, "ConstantOfShape", "input");
            if (shape) c.set_output(0, dt, *shape);
            else if (c.input_rank_known(0) && c.input_shape(0).size() == 1 && c.input_shape(0)[0] >= 0)
              c.set_output(0, dt, std::vector<int64_t>(static_cast<size_t>(c.input_shape(0)[0]), OPH_DIM_UNKNOWN));
            else c.set_output_unknown_rank(0, dt);
          })
          .kernel<ConstantOfShapeKernel>();
  add_types(b, "T2", kAll);
}

// ---------------------------------------------------------------------------------------------------------
// Split
// ---------------------------------------------------------------------------------------------------------

// Chunk sizes along the axis; nullopt when they are only known at run time.
std::vector<int64_t> split_sizes(int64_t dim, size_t n_out, const std::vector<int64_t>& split, int64_t num_outputs,
                                 const std::string& op) {
  if (!split.empty()) {
    if (split.size() != n_out)
      fail(op + ": split has " + std::to_string(split.size()) + " entries for " + std::to_string(n_out) + " outputs");
    int64_t s = 0;
    for (int64_t v : split) {
      if (v < 0) fail(op + ": split entries must be non-negative");
      s += v;
    }
    if (dim >= 0 && s != dim)
      fail(op + ": split sums to " + std::to_string(s) + " but the axis has size " + std::to_string(dim));
    return split;
  }
  int64_t n = num_outputs > 0 ? num_outputs : static_cast<int64_t>(n_out);
  if (num_outputs > 0 && static_cast<size_t>(num_outputs) != n_out)
    fail(op + ": num_outputs is " + std::to_string(num_outputs) + " but the node has " + std::to_string(n_out) + " outputs");
  std::vector<int64_t> out(static_cast<size_t>(n), OPH_DIM_UNKNOWN);
  if (dim < 0) return out;
  if (num_outputs > 0) {  // opset 18: ceil chunks, the last one smaller
    int64_t chunk = (dim + n - 1) / n;
    for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = std::max<int64_t>(0, std::min(chunk, dim - i * chunk));
  } else {
    if (dim % n != 0)
      fail(op + ": axis of size " + std::to_string(dim) + " cannot be split evenly into " + std::to_string(n) + " outputs");
    std::fill(out.begin(), out.end(), dim / n);
  }
  return out;
}

void register_split(oph::Pack& pack) {
  struct V {
    int32_t since, until;
  };
  for (V v : {V{2, 10}, V{11, 12}, V{13, 17}, V{18, OPH_OPSET_MAX}}) {
    const int32_t since = v.since;
    const bool split_input = since >= 13;
    oph::OpBuilder& b = pack.op(kDomain, "Split").versions(v.since, v.until).doc("input split into chunks along axis");
    b.attr("axis", int64_t{0}).input("input", "T");
    if (split_input) b.optional_input("split", "I", OPH_MEMORY_HOST).types("I", {i64});
    else b.optional_attr("split", OPH_ATTR_INTS);
    if (since >= 18) b.optional_attr("num_outputs", OPH_ATTR_INT);
    b.output("outputs", "T", OPH_ARITY_VARIADIC);
    auto get_split = [split_input](const oph::Attrs& a, const oph_tensor* t, bool present, bool& known) {
      known = true;
      if (split_input) {
        if (!present) return std::vector<int64_t>{};
        if (!t) {
          known = false;
          return std::vector<int64_t>{};
        }
        return read_ints(t, "Split", "split");
      }
      return a.has("split") ? a.get<std::vector<int64_t>>("split") : std::vector<int64_t>{};
    };
    b.infer([since, get_split](oph::InferContext& c) {
       const oph_dtype dt = c.input_dtype(0);
       const size_t n_out = c.num_outputs();
       if (!c.input_rank_known(0)) {
         for (size_t i = 0; i < n_out; ++i) c.set_output_unknown_rank(i, dt);
         return;
       }
       auto in = c.input_shape(0);
       int64_t axis = normalize_axis(c.attr<int64_t>("axis"), static_cast<int64_t>(in.size()), since >= 11, "Split");
       bool known;
       auto split = get_split(c.attrs(), c.has_input(1) ? c.input_constant(1) : nullptr, c.has_input(1), known);
       int64_t num = since >= 18 && c.attrs().has("num_outputs") ? c.attr<int64_t>("num_outputs") : 0;
       if (since >= 18 && c.attrs().has("num_outputs") && num < 1)
         fail("Split: num_outputs must be >= 1, got " + std::to_string(num));
       std::vector<int64_t> sizes =
           known ? split_sizes(in[static_cast<size_t>(axis)], n_out, split, num, "Split")
                 : std::vector<int64_t>(n_out, OPH_DIM_UNKNOWN);
       for (size_t i = 0; i < n_out; ++i) {
         std::vector<int64_t> s(in.begin(), in.end());
         s[static_cast<size_t>(axis)] = i < sizes.size() ? sizes[i] : OPH_DIM_UNKNOWN;
         c.set_output(i, dt, s);
       }
     }).compute([since, get_split](oph::KernelContext& ctx) {
      oph::TensorRef x = input(ctx, 0, "Split");
      auto in = x.shape();
      int64_t axis = normalize_axis(ctx.attr<int64_t>("axis"), x.ndim(), since >= 11, "Split");
      bool known;
      bool present = ctx.num_inputs() > 1 && ctx.input(1).present();
      auto split = get_split(ctx.attrs(), present ? ctx.input(1).raw() : nullptr, present, known);
      int64_t num = since >= 18 && ctx.attrs().has("num_outputs") ? ctx.attr<int64_t>("num_outputs") : 0;
      if (since >= 18 && ctx.attrs().has("num_outputs") && num < 1)
        fail("Split: num_outputs must be >= 1, got " + std::to_string(num));
      const size_t n_out = ctx.num_outputs();
      std::vector<int64_t> sizes = split_sizes(in[static_cast<size_t>(axis)], n_out, split, num, "Split");
      size_t outer = 1, inner = 1;
      for (int64_t k = 0; k < axis; ++k) outer *= static_cast<size_t>(in[k]);
      for (int64_t k = axis + 1; k < x.ndim(); ++k) inner *= static_cast<size_t>(in[k]);
      const size_t es = elem_size(x.dtype()), dim = static_cast<size_t>(in[axis]);
      const char* S = static_cast<const char*>(x.data());
      size_t offset = 0;
      for (size_t i = 0; i < n_out; ++i) {
        std::vector<int64_t> s(in.begin(), in.end());
        s[static_cast<size_t>(axis)] = sizes[i];
        oph::TensorRef y = ensure_output(ctx, i, s, "Split");
        const size_t len = static_cast<size_t>(sizes[i]);
        if (y.present()) {
          char* D = static_cast<char*>(y.data());
          for (size_t o = 0; o < outer; ++o)
            std::memcpy(D + o * len * inner * es, S + (o * dim + offset) * inner * es, len * inner * es);
        }
        offset += len;
      }
    });
    add_types(b, "T", kAll);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Pad
// ---------------------------------------------------------------------------------------------------------

struct PadArgs {
  std::string mode;
  std::vector<int64_t> pads;  // 2 * rank: begins then ends
};

std::vector<int64_t> pad_full(std::span<const int64_t> in, std::vector<int64_t> pads, const std::vector<int64_t>& axes,
                              const std::string& op) {
  const int64_t r = static_cast<int64_t>(in.size());
  if (axes.empty()) {
    if (static_cast<int64_t>(pads.size()) != 2 * r)
      fail(op + ": pads has " + std::to_string(pads.size()) + " entries, expected " + std::to_string(2 * r));
    return pads;
  }
  const size_t na = axes.size();
  if (pads.size() != 2 * na) fail(op + ": pads must have 2 entries per axis");
  std::vector<int64_t> full(static_cast<size_t>(2 * r), 0);
  for (size_t k = 0; k < na; ++k) {
    int64_t a = normalize_axis(axes[k], r, true, op);
    full[static_cast<size_t>(a)] = pads[k];
    full[static_cast<size_t>(a + r)] = pads[k + na];
  }
  return full;
}

std::vector<int64_t> pad_shape(std::span<const int64_t> in, const std::vector<int64_t>& pads) {
  const size_t r = in.size();
  std::vector<int64_t> out(r);
  for (size_t k = 0; k < r; ++k) out[k] = in[k] < 0 ? OPH_DIM_UNKNOWN : in[k] + pads[k] + pads[k + r];
  return out;
}

void pad_run(const oph::KernelContext& ctx, const oph::TensorRef& x, const std::vector<int64_t>& pads,
             const std::string& mode, const void* fill, const std::string& op) {
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    fail(op + ": mode '" + mode + "' is not supported (constant, reflect, edge, wrap)");
  auto in = x.shape();
  const size_t r = in.size();
  std::vector<int64_t> oshape = pad_shape(in, pads);
  for (int64_t d : oshape)
    if (d < 0) fail(op + ": pads give a negative output dimension");
  oph::TensorRef y = ensure_output(ctx, 0, oshape, op);
  if (!y.present()) return;
  const size_t n = oph::numel(oshape), es = elem_size(x.dtype());
  if (mode != "constant")
    for (size_t k = 0; k < r; ++k)
      if (in[k] == 0 && oshape[k] > 0) fail(op + ": cannot pad an empty axis in mode '" + mode + "'");
  if (n == 0) return;
  if (r == 0) {  // a scalar: nothing to pad
    std::memcpy(y.data(), x.data(), es);
    return;
  }
  enum class Mode { kConstant, kEdge, kWrap, kReflect };
  const Mode md = mode == "constant" ? Mode::kConstant : mode == "edge" ? Mode::kEdge : mode == "wrap" ? Mode::kWrap
                                                                                                     : Mode::kReflect;
  // Source coordinate of output coordinate c (already shifted by the begin pad) on an axis of length d; -1 when
  // it falls outside in constant mode.
  auto map = [md](int64_t c, int64_t d) -> int64_t {
    if (c >= 0 && c < d) return c;
    switch (md) {
      case Mode::kConstant: return -1;
      case Mode::kEdge: return std::clamp<int64_t>(c, 0, d - 1);
      case Mode::kWrap: return ((c % d) + d) % d;
      case Mode::kReflect:
        if (d == 1) return 0;
        {
          const int64_t period = 2 * (d - 1);
          c = ((c % period) + period) % period;
          return c >= d ? period - c : c;
        }
    }
    return -1;
  };
  auto st = compact_strides(in);
  const char* S = static_cast<const char*>(x.data());
  char* D = static_cast<char*>(y.data());
  // Row by row along the innermost axis: the part of a row inside the input is one memcpy; only the borders
  // are mapped element by element (a per-element index decomposition made PP-OCR/M-LSD's Pads 10-50x slower).
  const int64_t W = oshape[r - 1], in_w = in[r - 1], pb = pads[r - 1];
  const size_t rows = W ? n / static_cast<size_t>(W) : 0;
  const int64_t mid_lo = std::clamp<int64_t>(pb, 0, W), mid_hi = std::clamp<int64_t>(pb + in_w, mid_lo, W);
  for (size_t row = 0; row < rows; ++row) {
    size_t rem = row;
    int64_t off = 0;
    bool outside = false;
    for (size_t k = r - 1; k-- > 0;) {
      int64_t c = static_cast<int64_t>(rem % static_cast<size_t>(oshape[k]));
      rem /= static_cast<size_t>(oshape[k]);
      c = map(c - pads[k], in[k]);
      if (c < 0) {
        outside = true;
        break;
      }
      off += c * st[k];
    }
    char* dst = D + row * static_cast<size_t>(W) * es;
    if (outside) {
      for (int64_t j = 0; j < W; ++j) std::memcpy(dst + static_cast<size_t>(j) * es, fill, es);
      continue;
    }
    const char* src = S + static_cast<size_t>(off) * es;
    if (mid_hi > mid_lo)
      std::memcpy(dst + static_cast<size_t>(mid_lo) * es, src + static_cast<size_t>(mid_lo - pb) * es,
                  static_cast<size_t>(mid_hi - mid_lo) * es);
    auto border = [&](int64_t j) {
      const int64_t c = map(j - pb, in_w);
      std::memcpy(dst + static_cast<size_t>(j) * es, c < 0 ? fill : src + static_cast<size_t>(c) * es, es);
    };
    for (int64_t j = 0; j < mid_lo; ++j) border(j);
    for (int64_t j = mid_hi; j < W; ++j) border(j);
  }
}

void register_pad(oph::Pack& pack) {
  {
    oph::OpBuilder& b = pack.op(kDomain, "Pad")
                            .versions(2, 10)
                            .doc("pad with a constant, reflection or the edge values (attributes)")
                            .attr("mode", std::string("constant"))
                            .required_attr("pads", OPH_ATTR_INTS)
                            .attr("value", 0.0f)
                            .input("data", "T")
                            .output("output", "T")
                            .infer([](oph::InferContext& c) {
                              if (!c.input_rank_known(0)) {
                                c.set_output_unknown_rank(0, c.input_dtype(0));
                                return;
                              }
                              auto pads = pad_full(c.input_shape(0), c.attr<std::vector<int64_t>>("pads"), {}, "Pad");
                              c.set_output(0, c.input_dtype(0), pad_shape(c.input_shape(0), pads));
                            })
                            .compute([](oph::KernelContext& ctx) {
                              oph::TensorRef x = input(ctx, 0, "Pad");
                              auto pads = pad_full(x.shape(), ctx.attr<std::vector<int64_t>>("pads"), {}, "Pad");
                              float v = ctx.attr<float>("value");
                              std::array<unsigned char, 8> fill{};
                              dispatch_float(x.dtype(), "Pad", [&]<class T>(std::type_identity<T>) {
                                T t = static_cast<T>(v);
                                std::memcpy(fill.data(), &t, sizeof(T));
                              });
                              pad_run(ctx, x, pads, ctx.attr<std::string>("mode"), fill.data(), "Pad");
                            });
    add_types(b, "T", kFloat);
  }
  for (auto vr : {std::pair{11, 17}, std::pair{18, OPH_OPSET_MAX}}) {
    const int32_t since = vr.first, until = vr.second;
    const bool has_axes = since >= 18;
    oph::OpBuilder& b = pack.op(kDomain, "Pad")
                            .versions(since, until)
                            .doc("pad with a constant, reflection or the edge values (pads as an input)")
                            .attr("mode", std::string("constant"))
                            .input("data", "T")
                            .input("pads", "I", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)
                            .optional_input("constant_value", "T", OPH_MEMORY_HOST)
                            .types("I", {i64});
    if (has_axes) b.optional_input("axes", "Tind", OPH_MEMORY_HOST).types("Tind", {i32, i64});
    b.output("output", "T")
        .infer([has_axes](oph::InferContext& c) {
          if (!c.input_rank_known(0)) {
            c.set_output_unknown_rank(0, c.input_dtype(0));
            return;
          }
          auto in = c.input_shape(0);
          auto pads = const_ints(c, 1, "Pad", "pads");
          std::optional<std::vector<int64_t>> axes = std::vector<int64_t>{};
          if (has_axes && c.has_input(3)) axes = const_ints(c, 3, "Pad", "axes");
          if (!pads || !axes) {
            c.set_output(0, c.input_dtype(0), std::vector<int64_t>(in.size(), OPH_DIM_UNKNOWN));
            return;
          }
          c.set_output(0, c.input_dtype(0), pad_shape(in, pad_full(in, *pads, *axes, "Pad")));
        })
        .compute([has_axes](oph::KernelContext& ctx) {
          oph::TensorRef x = input(ctx, 0, "Pad");
          std::vector<int64_t> axes;
          if (has_axes && ctx.num_inputs() > 3 && ctx.input(3).present()) axes = read_ints(ctx.input(3).raw(), "Pad", "axes");
          auto pads = pad_full(x.shape(), read_ints(ctx.input(1).raw(), "Pad", "pads"), axes, "Pad");
          std::array<unsigned char, 8> fill{};
          if (ctx.num_inputs() > 2 && ctx.input(2).present() && ctx.input(2).size() > 0)
            std::memcpy(fill.data(), ctx.input(2).data(), elem_size(x.dtype()));
          pad_run(ctx, x, pads, ctx.attr<std::string>("mode"), fill.data(), "Pad");
        });
    add_types(b, "T", kAll);
  }
}

// ---------------------------------------------------------------------------------------------------------
// CumSum, OneHot, NonZero, TopK
// ---------------------------------------------------------------------------------------------------------

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

int64_t scalar_int(const oph_tensor* t, const std::string& op, const char* what) {
  if (!t) fail(op + ": " + std::string(what) + " is missing");
  const char* p = static_cast<const char*>(t->data) + t->byte_offset;
  int64_t v = 0;
  dispatch_numeric_all(t->dtype, op, [&]<class T>(std::type_identity<T>) {
    v = static_cast<int64_t>(*reinterpret_cast<const T*>(p));
  });
  return v;
}

std::vector<int64_t> onehot_shape(std::span<const int64_t> in, int64_t depth, int64_t axis_attr) {
  const int64_t r = static_cast<int64_t>(in.size()) + 1;
  int64_t axis = normalize_axis(axis_attr, r, true, "OneHot");
  std::vector<int64_t> out(in.begin(), in.end());
  out.insert(out.begin() + axis, depth);
  return out;
}

void onehot_compute(const oph::KernelContext& ctx) {
  const std::string op = "OneHot";
  oph::TensorRef idx = input(ctx, 0, op), vals = input(ctx, 2, op);
  int64_t depth = scalar_int(ctx.input(1).raw(), op, "depth");
  if (depth < 1) fail(op + ": depth must be >= 1");
  if (vals.size() != 2) fail(op + ": values must hold [off_value, on_value]");
  std::vector<int64_t> oshape = onehot_shape(idx.shape(), depth, ctx.attr<int64_t>("axis"));
  const int64_t axis = normalize_axis(ctx.attr<int64_t>("axis"), static_cast<int64_t>(oshape.size()), true, op);
  oph::TensorRef y = ensure_output(ctx, 0, oshape, op);
  if (!y.present()) return;
  size_t outer = 1, inner = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= static_cast<size_t>(oshape[k]);
  for (size_t k = static_cast<size_t>(axis) + 1; k < oshape.size(); ++k) inner *= static_cast<size_t>(oshape[k]);
  const size_t es = elem_size(vals.dtype());
  const char* V = static_cast<const char*>(vals.data());
  char* D = static_cast<char*>(y.data());
  const size_t n = y.size();
  for (size_t i = 0; i < n; ++i) std::memcpy(D + i * es, V, es);
  dispatch_numeric_all(idx.dtype(), op, [&]<class T>(std::type_identity<T>) {
    const T* I = static_cast<const T*>(idx.data());
    for (size_t o = 0; o < outer; ++o)
      for (size_t j = 0; j < inner; ++j) {
        int64_t v = static_cast<int64_t>(I[o * inner + j]);
        if (v < 0) v += depth;
        if (v < 0 || v >= depth) continue;
        std::memcpy(D + ((o * static_cast<size_t>(depth) + static_cast<size_t>(v)) * inner + j) * es, V + es, es);
      }
  });
}

void nonzero_compute(const oph::KernelContext& ctx) {
  const std::string op = "NonZero";
  oph::TensorRef x = input(ctx, 0, op);
  std::vector<size_t> hits;
  dispatch_all(x.dtype(), op, [&]<class T>(std::type_identity<T>) {
    const T* X = static_cast<const T*>(x.data());
    for (size_t i = 0, n = x.size(); i < n; ++i) {
      bool nz;
      if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BF16>) nz = to_double(X[i]) != 0.0;
      else nz = X[i] != T(0);
      if (nz) hits.push_back(i);
    }
  });
  const int64_t r = x.ndim();
  std::vector<int64_t> oshape = {r, static_cast<int64_t>(hits.size())};
  oph::TensorRef y = ensure_output(ctx, 0, oshape, op);
  if (!y.present()) return;
  int64_t* Y = static_cast<int64_t*>(y.data());
  auto sh = x.shape();
  for (size_t h = 0; h < hits.size(); ++h) {
    size_t rem = hits[h];
    for (int64_t k = r; k-- > 0;) {
      Y[k * static_cast<int64_t>(hits.size()) + static_cast<int64_t>(h)] = static_cast<int64_t>(rem % static_cast<size_t>(sh[k]));
      rem /= static_cast<size_t>(sh[k]);
    }
  }
}

void topk_compute(const oph::KernelContext& ctx, int32_t since) {
  const std::string op = "TopK";
  oph::TensorRef x = input(ctx, 0, op);
  int64_t k = since >= 10 ? read_ints(ctx.input(1).raw(), op, "K").at(0) : ctx.attr<int64_t>("k");
  const int64_t axis = normalize_axis(ctx.attr<int64_t>("axis"), x.ndim(), since >= 11, op);
  const bool largest = since >= 11 ? ctx.attr<int64_t>("largest") != 0 : true;
  const bool sorted = since >= 11 ? ctx.attr<int64_t>("sorted") != 0 : true;
  (void)sorted;  // results are always sorted, which every value of `sorted` allows
  const int64_t len = x.shape()[axis];
  if (k < 0 || k > len) fail(op + ": K=" + std::to_string(k) + " is out of range for axis size " + std::to_string(len));
  std::vector<int64_t> oshape(x.shape().begin(), x.shape().end());
  oshape[static_cast<size_t>(axis)] = k;
  oph::TensorRef yv = ensure_output(ctx, 0, oshape, op), yi = ensure_output(ctx, 1, oshape, op);
  size_t outer = 1, inner = 1;
  for (int64_t a = 0; a < axis; ++a) outer *= static_cast<size_t>(x.shape()[a]);
  for (int64_t a = axis + 1; a < x.ndim(); ++a) inner *= static_cast<size_t>(x.shape()[a]);
  dispatch_numeric_all(x.dtype(), op, [&]<class T>(std::type_identity<T>) {
    const T* X = static_cast<const T*>(x.data());
    T* V = yv.present() ? static_cast<T*>(yv.data()) : nullptr;
    int64_t* I = yi.present() ? static_cast<int64_t*>(yi.data()) : nullptr;
    std::vector<int64_t> order(static_cast<size_t>(len));
    for (size_t o = 0; o < outer; ++o)
      for (size_t j = 0; j < inner; ++j) {
        const T* xb = X + o * static_cast<size_t>(len) * inner + j;
        std::iota(order.begin(), order.end(), 0);
        auto cmp = [&](int64_t a, int64_t b) {
          T va = xb[a * static_cast<int64_t>(inner)], vb = xb[b * static_cast<int64_t>(inner)];
          if (va != vb) return largest ? va > vb : va < vb;
          return a < b;
        };
        std::partial_sort(order.begin(), order.begin() + k, order.end(), cmp);
        for (int64_t t = 0; t < k; ++t) {
          size_t at = (o * static_cast<size_t>(k) + static_cast<size_t>(t)) * inner + j;
          if (V) V[at] = xb[order[static_cast<size_t>(t)] * static_cast<int64_t>(inner)];
          if (I) I[at] = order[static_cast<size_t>(t)];
        }
      }
  });
}

void register_misc(oph::Pack& pack) {
  {
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
  for (auto vr : {std::pair{9, 10}, std::pair{11, OPH_OPSET_MAX}}) {
    const int32_t since = vr.first, until = vr.second;
    oph::OpBuilder& b = pack.op(kDomain, "OneHot")
                            .versions(since, until)
                            .doc("one-hot encoding of indices with depth classes, [off_value, on_value]")
                            .attr("axis", int64_t{-1})
                            .input("indices", "T1")
                            .input("depth", "T2", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)
                            .input("values", "T3")
                            .output("output", "T3")
                            .infer([](oph::InferContext& c) {
                              const oph_tensor* d = c.input_constant(1);
                              if (!c.input_rank_known(0)) {
                                c.set_output_unknown_rank(0, c.input_dtype(2));
                                return;
                              }
                              int64_t depth = d ? scalar_int(d, "OneHot", "depth") : OPH_DIM_UNKNOWN;
                              c.set_output(0, c.input_dtype(2), onehot_shape(c.input_shape(0), depth, c.attr<int64_t>("axis")));
                            })
                            .compute(onehot_compute);
    const std::vector<oph_dtype> real = {f32, f64, i8, i16, i32, i64, u8, u16, u32, u64};
    add_types(b, "T1", real);
    add_types(b, "T2", real);
    add_types(b, "T3", kAll);
  }
  {
    oph::OpBuilder& b = pack.op(kDomain, "NonZero")
                            .versions(9, OPH_OPSET_MAX)
                            .doc("indices of the non-zero elements, [rank, count] int64")
                            .input("X", "T")
                            .output("Y", "I")
                            .types("I", {i64})
                            .infer([](oph::InferContext& c) {
                              int64_t r = c.input_rank_known(0) ? static_cast<int64_t>(c.input_shape(0).size()) : OPH_DIM_UNKNOWN;
                              c.set_output(0, i64, {r, OPH_DIM_UNKNOWN});
                            })
                            .compute(nonzero_compute);
    add_types(b, "T", kAll);
  }
  struct TV {
    int32_t since, until;
  };
  for (TV v : {TV{1, 9}, TV{10, 10}, TV{11, OPH_OPSET_MAX}}) {
    const int32_t since = v.since;
    oph::OpBuilder& b = pack.op(kDomain, "TopK").versions(v.since, v.until).doc("the K largest (or smallest) along axis");
    b.attr("axis", int64_t{-1}).input("X", "T");
    if (since < 10) b.required_attr("k", OPH_ATTR_INT);
    else b.input("K", "I", OPH_ARITY_SINGLE, OPH_MEMORY_HOST);
    if (since >= 11) b.attr("largest", int64_t{1}).attr("sorted", int64_t{1});
    b.output("Values", "T")
        .output("Indices", "I")
        .types("I", {i64})
        .infer([since](oph::InferContext& c) {
          if (!c.input_rank_known(0)) {
            c.set_output_unknown_rank(0, c.input_dtype(0));
            c.set_output_unknown_rank(1, i64);
            return;
          }
          std::vector<int64_t> s(c.input_shape(0).begin(), c.input_shape(0).end());
          int64_t axis = normalize_axis(c.attr<int64_t>("axis"), static_cast<int64_t>(s.size()), since >= 11, "TopK");
          int64_t k = OPH_DIM_UNKNOWN;
          if (since < 10) k = c.attr<int64_t>("k");
          else if (auto kv = const_ints(c, 1, "TopK", "K")) k = kv->at(0);
          s[static_cast<size_t>(axis)] = k;
          c.set_output(0, c.input_dtype(0), s);
          c.set_output(1, i64, s);
        })
        .compute([since](oph::KernelContext& ctx) { topk_compute(ctx, since); });
    add_types(b, "T", {f32, f64, i8, i16, i32, i64, u8, u16, u32, u64});
  }
}

// ---------------------------------------------------------------------------------------------------------
// DepthToSpace, SpaceToDepth
// ---------------------------------------------------------------------------------------------------------

// blocksize of DepthToSpace/SpaceToDepth: positive, and blocksize^2 must not overflow.
int64_t checked_blocksize(int64_t b, const char* op) {
  if (b <= 0) fail(std::string(op) + ": blocksize must be positive, got " + std::to_string(b));
  if (b > (int64_t{1} << 31)) fail(std::string(op) + ": blocksize " + std::to_string(b) + " is too large");
  return b;
}

int64_t checked_mul(int64_t a, int64_t b, const char* op) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) fail(std::string(op) + ": output dimension overflows int64");
  return r;
}

void depth_space_compute(const oph::KernelContext& ctx, bool to_space, int32_t since) {
  const std::string op = to_space ? "DepthToSpace" : "SpaceToDepth";
  oph::TensorRef x = input(ctx, 0, op);
  if (x.ndim() != 4) fail(op + ": input must be 4-D [N, C, H, W]");
  const int64_t b = ctx.attr<int64_t>("blocksize");
  if (b <= 0) fail(op + ": blocksize must be positive");
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  std::vector<int64_t> oshape, shape6, strides6;
  if (to_space) {
    if (C % (b * b) != 0) fail(op + ": channels must be divisible by blocksize^2");
    const int64_t Cp = C / (b * b);
    const bool crd = since >= 11 && ctx.attr<std::string>("mode") == "CRD";
    if (since >= 11) {
      std::string mode = ctx.attr<std::string>("mode");
      if (mode != "DCR" && mode != "CRD") fail(op + ": mode must be DCR or CRD, got '" + mode + "'");
    }
    oshape = {N, Cp, H * b, W * b};
    shape6 = {N, Cp, H, b, W, b};
    if (crd) strides6 = {C * H * W, b * b * H * W, W, b * H * W, 1, H * W};
    else strides6 = {C * H * W, H * W, W, b * Cp * H * W, 1, Cp * H * W};
  } else {
    if (H % b != 0 || W % b != 0) fail(op + ": height and width must be divisible by blocksize");
    oshape = {N, C * b * b, H / b, W / b};
    shape6 = {N, b, b, C, H / b, W / b};
    strides6 = {C * H * W, W, 1, H * W, b * W, b};
  }
  oph::TensorRef y = ensure_output(ctx, 0, oshape, op);
  if (!y.present()) return;
  strided_copy(ctx, y.data(), x.data(), elem_size(x.dtype()), shape6, strides6, 0);
}

void register_depth_space(oph::Pack& pack) {
  for (auto vr : {std::pair{1, 10}, std::pair{11, OPH_OPSET_MAX}}) {
    const int32_t since = vr.first, until = vr.second;
    oph::OpBuilder& b = pack.op(kDomain, "DepthToSpace")
                            .versions(since, until)
                            .doc("rearranges depth blocks into spatial blocks")
                            .required_attr("blocksize", OPH_ATTR_INT)
                            .input("input", "T")
                            .output("output", "T")
                            .infer([](oph::InferContext& c) {
                              if (!c.input_rank_known(0) || c.input_shape(0).size() != 4) {
                                c.set_output_unknown_rank(0, c.input_dtype(0));
                                return;
                              }
                              auto s = c.input_shape(0);
                              const int64_t b = checked_blocksize(c.attr<int64_t>("blocksize"), "DepthToSpace");
                              if (s[1] >= 0 && s[1] % (b * b) != 0)
                                fail("DepthToSpace: channels " + std::to_string(s[1]) +
                                     " must be divisible by blocksize^2 = " + std::to_string(b * b));
                              auto m = [b](int64_t d) { return d < 0 ? OPH_DIM_UNKNOWN : checked_mul(d, b, "DepthToSpace"); };
                              c.set_output(0, c.input_dtype(0),
                                           {s[0], s[1] < 0 ? OPH_DIM_UNKNOWN : s[1] / (b * b), m(s[2]), m(s[3])});
                            })
                            .compute([since](oph::KernelContext& ctx) { depth_space_compute(ctx, true, since); });
    if (since >= 11) b.attr("mode", std::string("DCR"));
    add_types(b, "T", kAll);
  }
  oph::OpBuilder& b = pack.op(kDomain, "SpaceToDepth")
                          .versions(1, OPH_OPSET_MAX)
                          .doc("rearranges spatial blocks into depth")
                          .required_attr("blocksize", OPH_ATTR_INT)
                          .input("input", "T")
                          .output("output", "T")
                          .infer([](oph::InferContext& c) {
                            if (!c.input_rank_known(0) || c.input_shape(0).size() != 4) {
                              c.set_output_unknown_rank(0, c.input_dtype(0));
                              return;
                            }
                            auto s = c.input_shape(0);
                            const int64_t b = checked_blocksize(c.attr<int64_t>("blocksize"), "SpaceToDepth");
                            for (int k = 2; k < 4; ++k)
                              if (s[k] >= 0 && s[k] % b != 0)
                                fail("SpaceToDepth: height and width " + shape_str(s) + " must be divisible by blocksize " +
                                     std::to_string(b));
                            auto d = [b](int64_t v) { return v < 0 ? OPH_DIM_UNKNOWN : v / b; };
                            c.set_output(0, c.input_dtype(0),
                                         {s[0], s[1] < 0 ? OPH_DIM_UNKNOWN : checked_mul(s[1], b * b, "SpaceToDepth"), d(s[2]),
                                          d(s[3])});
                          })
                          .compute([](oph::KernelContext& ctx) { depth_space_compute(ctx, false, 1); });
  add_types(b, "T", kAll);
}


// ---------------------------------------------------------------------------------------------------------
// Trilu
// ---------------------------------------------------------------------------------------------------------

void trilu_compute(const oph::KernelContext& ctx) {
  const std::string op = "Trilu";
  oph::TensorRef x = input(ctx, 0, op);
  if (x.ndim() < 2) fail(op + ": input must have rank >= 2");
  int64_t k = 0;
  if (ctx.num_inputs() > 1 && ctx.input(1).present()) {
    auto kv = read_ints(ctx.input(1).raw(), op, "k");
    if (kv.size() != 1) fail(op + ": k must be a scalar");
    k = kv[0];
  }
  const bool upper = ctx.attr<int64_t>("upper") != 0;
  oph::TensorRef y = ensure_output(ctx, 0, x.shape(), op);
  if (!y.present()) return;
  const int64_t R = x.shape()[x.ndim() - 2], C = x.shape()[x.ndim() - 1];
  const size_t es = elem_size(x.dtype()), mat = static_cast<size_t>(R * C), batches = mat ? x.size() / mat : 0;
  const char* S = static_cast<const char*>(x.data());
  char* D = static_cast<char*>(y.data());
  for (size_t b = 0; b < batches; ++b)
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < C; ++j) {
        const size_t at = (b * mat + static_cast<size_t>(i * C + j)) * es;
        const bool keep = upper ? (j - i >= k) : (j - i <= k);
        if (keep) std::memcpy(D + at, S + at, es);
        else std::memset(D + at, 0, es);
      }
}

void register_trilu(oph::Pack& pack) {
  oph::OpBuilder& b = pack.op(kDomain, "Trilu")
                          .versions(14, OPH_OPSET_MAX)
                          .doc("upper (or lower) triangular part of the last two dims, diagonal offset k")
                          .attr("upper", int64_t{1})
                          .input("input", "T")
                          .optional_input("k", "I", OPH_MEMORY_HOST)
                          .output("output", "T")
                          .types("I", {i64})
                          .infer(oph::same_as_input(0))
                          .compute(trilu_compute);
  add_types(b, "T", kAll);
}


// ---------------------------------------------------------------------------------------------------------
// GatherND, ScatterND, Compress, EyeLike
// ---------------------------------------------------------------------------------------------------------

struct NdGeometry {
  size_t batch = 1, per_batch = 1, last = 0, slice = 1;
  std::vector<int64_t> data_strides;  // element strides of the indexed dims (within one batch)
  std::vector<int64_t> dims;          // sizes of the indexed dims
  size_t batch_stride = 0;            // elements of data per batch
};

NdGeometry nd_geometry(std::span<const int64_t> data, std::span<const int64_t> idx, int64_t b, const std::string& op) {
  if (idx.empty()) fail(op + ": indices must have rank >= 1");
  if (b < 0 || b >= static_cast<int64_t>(std::min(data.size(), idx.size())))
    fail(op + ": batch_dims " + std::to_string(b) + " must be in [0, min(rank(data), rank(indices)) - 1] = [0, " +
         std::to_string(static_cast<int64_t>(std::min(data.size(), idx.size())) - 1) + "]");
  for (int64_t k = 0; k < b; ++k)
    if (data[k] != idx[k])
      fail(op + ": the first batch_dims dims of data " + shape_str(data) + " and indices " + shape_str(idx) +
           " must be equal");
  if (idx.back() < 0) fail(op + ": indices.shape[-1] must be known and >= 0");
  NdGeometry g;
  g.last = static_cast<size_t>(idx.back());
  if (static_cast<int64_t>(g.last) + b > static_cast<int64_t>(data.size()))
    fail(op + ": indices.shape[-1] + batch_dims exceeds the data rank");
  for (int64_t k = 0; k < b; ++k) g.batch *= static_cast<size_t>(data[k]);
  for (size_t k = static_cast<size_t>(b); k + 1 < idx.size(); ++k) g.per_batch *= static_cast<size_t>(idx[k]);
  for (size_t k = static_cast<size_t>(b) + g.last; k < data.size(); ++k) g.slice *= static_cast<size_t>(data[k]);
  auto st = compact_strides(data);
  for (size_t k = 0; k < g.last; ++k) {
    g.data_strides.push_back(st[static_cast<size_t>(b) + k]);
    g.dims.push_back(data[static_cast<size_t>(b) + k]);
  }
  g.batch_stride = b > 0 ? static_cast<size_t>(st[static_cast<size_t>(b) - 1]) : 0;
  return g;
}

int64_t nd_offset(const NdGeometry& g, const int64_t* ix, const std::string& op) {
  int64_t off = 0;
  for (size_t k = 0; k < g.last; ++k) {
    int64_t v = ix[k];
    if (v < -g.dims[k] || v >= g.dims[k]) fail(op + ": index " + std::to_string(v) + " is out of range");
    if (v < 0) v += g.dims[k];
    off += v * g.data_strides[k];
  }
  return off;
}

std::vector<int64_t> gathernd_shape(std::span<const int64_t> data, std::span<const int64_t> idx, int64_t b) {
  const int64_t r = static_cast<int64_t>(std::min(data.size(), idx.size()));
  if (b < 0 || b >= r)
    fail("GatherND: batch_dims " + std::to_string(b) + " must be in [0, " + std::to_string(r - 1) + "]");
  if (idx.back() < 0 || b + idx.back() > static_cast<int64_t>(data.size()))
    fail("GatherND: indices.shape[-1] + batch_dims exceeds the data rank");
  std::vector<int64_t> out(idx.begin(), idx.end() - 1);
  for (size_t k = static_cast<size_t>(b + idx.back()); k < data.size(); ++k) out.push_back(data[k]);
  return out;
}

void gathernd_compute(const oph::KernelContext& ctx, int32_t since) {
  const std::string op = "GatherND";
  oph::TensorRef data = input(ctx, 0, op), idx = input(ctx, 1, op);
  const int64_t b = since >= 12 ? ctx.attr<int64_t>("batch_dims") : 0;
  NdGeometry g = nd_geometry(data.shape(), idx.shape(), b, op);
  oph::TensorRef y = ensure_output(ctx, 0, gathernd_shape(data.shape(), idx.shape(), b), op);
  if (!y.present()) return;
  const size_t es = elem_size(data.dtype()), block = g.slice * es;
  const int64_t* I = static_cast<const int64_t*>(idx.data());
  const char* S = static_cast<const char*>(data.data());
  char* D = static_cast<char*>(y.data());
  for (size_t bt = 0; bt < g.batch; ++bt)
    for (size_t j = 0; j < g.per_batch; ++j) {
      const size_t r = bt * g.per_batch + j;
      int64_t off = nd_offset(g, I + r * g.last, op);
      std::memcpy(D + r * block, S + (bt * g.batch_stride + static_cast<size_t>(off)) * es, block);
    }
}

void scatternd_compute(const oph::KernelContext& ctx, int32_t since) {
  const std::string op = "ScatterND";
  oph::TensorRef data = input(ctx, 0, op), idx = input(ctx, 1, op), upd = input(ctx, 2, op);
  std::string red = since >= 16 ? ctx.attr<std::string>("reduction") : "none";
  if (red != "none" && red != "add" && red != "mul" && !(since >= 18 && (red == "max" || red == "min")))
    fail(op + ": reduction '" + red + "' is not supported in this opset");
  NdGeometry g = nd_geometry(data.shape(), idx.shape(), 0, op);
  oph::TensorRef y = ensure_output(ctx, 0, data.shape(), op);
  if (!y.present()) return;
  copy_bytes(ctx, y.data(), data.data(), data.size() * elem_size(data.dtype()));
  const int64_t* I = static_cast<const int64_t*>(idx.data());
  dispatch_all(data.dtype(), op, [&]<class T>(std::type_identity<T>) {
    const T* U = static_cast<const T*>(upd.data());
    T* D = static_cast<T*>(y.data());
    for (size_t j = 0; j < g.per_batch; ++j) {
      int64_t off = nd_offset(g, I + j * g.last, op);
      for (size_t e = 0; e < g.slice; ++e) {
        T& dst = D[static_cast<size_t>(off) + e];
        const T& u = U[j * g.slice + e];
        if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BF16>) {
          if (red != "none") fail(op + ": reductions on 16-bit floats are not supported", OPH_CODE_UNIMPLEMENTED);
          dst = u;
        } else {
          dst = scatter_reduce(red, dst, u);
        }
      }
    }
  });
}

void compress_compute(const oph::KernelContext& ctx, int32_t since) {
  const std::string op = "Compress";
  oph::TensorRef x = input(ctx, 0, op), cond = input(ctx, 1, op);
  const bool* C = static_cast<const bool*>(cond.data());
  const size_t es = elem_size(x.dtype());
  const char* S = static_cast<const char*>(x.data());
  if (!ctx.attrs().has("axis")) {
    std::vector<size_t> keep;
    for (size_t i = 0; i < std::min(cond.size(), x.size()); ++i)
      if (C[i]) keep.push_back(i);
    int64_t n = static_cast<int64_t>(keep.size());
    oph::TensorRef y = ensure_output(ctx, 0, std::span<const int64_t>(&n, 1), op);
    if (!y.present()) return;
    char* D = static_cast<char*>(y.data());
    for (size_t i = 0; i < keep.size(); ++i) std::memcpy(D + i * es, S + keep[i] * es, es);
    return;
  }
  const int64_t axis = normalize_axis(ctx.attr<int64_t>("axis"), x.ndim(), since >= 11, op);
  const size_t len = static_cast<size_t>(x.shape()[axis]);
  std::vector<size_t> keep;
  for (size_t i = 0; i < std::min(cond.size(), len); ++i)
    if (C[i]) keep.push_back(i);
  std::vector<int64_t> oshape(x.shape().begin(), x.shape().end());
  oshape[static_cast<size_t>(axis)] = static_cast<int64_t>(keep.size());
  oph::TensorRef y = ensure_output(ctx, 0, oshape, op);
  if (!y.present()) return;
  size_t outer = 1, inner = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= static_cast<size_t>(x.shape()[k]);
  for (int64_t k = axis + 1; k < x.ndim(); ++k) inner *= static_cast<size_t>(x.shape()[k]);
  char* D = static_cast<char*>(y.data());
  for (size_t o = 0; o < outer; ++o)
    for (size_t i = 0; i < keep.size(); ++i)
      std::memcpy(D + (o * keep.size() + i) * inner * es, S + (o * len + keep[i]) * inner * es, inner * es);
}

void register_nd(oph::Pack& pack) {
  for (auto vr : {std::pair{11, 11}, std::pair{12, OPH_OPSET_MAX}}) {
    const int32_t since = vr.first, until = vr.second;
    oph::OpBuilder& b = pack.op(kDomain, "GatherND")
                            .versions(since, until)
                            .doc("slices of data at the index tuples in the last dim of indices")
                            .input("data", "T")
                            .input("indices", "I")
                            .output("output", "T")
                            .types("I", {i64})
                            .infer([since](oph::InferContext& c) {
                              if (!c.input_rank_known(0) || !c.input_rank_known(1) || c.input_shape(1).empty() ||
                                  c.input_shape(1).back() < 0) {
                                c.set_output_unknown_rank(0, c.input_dtype(0));
                                return;
                              }
                              int64_t b = since >= 12 ? c.attr<int64_t>("batch_dims") : 0;
                              c.set_output(0, c.input_dtype(0), gathernd_shape(c.input_shape(0), c.input_shape(1), b));
                            })
                            .compute([since](oph::KernelContext& ctx) { gathernd_compute(ctx, since); });
    if (since >= 12) b.attr("batch_dims", int64_t{0});
    add_types(b, "T", kAll);
  }
  for (auto vr : {std::pair{11, 15}, std::pair{16, 17}, std::pair{18, OPH_OPSET_MAX}}) {
    const int32_t since = vr.first, until = vr.second;
    oph::OpBuilder& b = pack.op(kDomain, "ScatterND")
                            .versions(since, until)
                            .doc("data with updates written at the index tuples (optionally reduced)")
                            .input("data", "T")
                            .input("indices", "I")
                            .input("updates", "T")
                            .output("output", "T")
                            .types("I", {i64})
                            .infer(oph::same_as_input(0))
                            .compute([since](oph::KernelContext& ctx) { scatternd_compute(ctx, since); });
    if (since >= 16) b.attr("reduction", std::string("none"));
    add_types(b, "T", kAll);
  }
  {
    // Scatter (9-10) is ScatterElements without reduction.
    oph::OpBuilder& b = pack.op(kDomain, "Scatter")
                            .versions(9, 10)
                            .doc("deprecated alias of ScatterElements")
                            .attr("axis", int64_t{0})
                            .input("data", "T")
                            .input("indices", "Tind")
                            .input("updates", "T")
                            .output("output", "T")
                            .types("Tind", {i32, i64})
                            .infer(oph::same_as_input(0))
                            .compute([](oph::KernelContext& ctx) { scatter_elements_compute(ctx, 11); });
    add_types(b, "T", kAll);
  }
  for (auto vr : {std::pair{9, 10}, std::pair{11, OPH_OPSET_MAX}}) {
    const int32_t since = vr.first, until = vr.second;
    oph::OpBuilder& b = pack.op(kDomain, "Compress")
                            .versions(since, until)
                            .doc("slices of input along axis where condition is true (flattened without axis)")
                            .optional_attr("axis", OPH_ATTR_INT)
                            .input("input", "T")
                            .input("condition", "T1")
                            .output("output", "T")
                            .types("T1", {boolean})
                            .infer([since](oph::InferContext& c) {
                              if (!c.attrs().has("axis")) {
                                c.set_output(0, c.input_dtype(0), {OPH_DIM_UNKNOWN});
                                return;
                              }
                              if (!c.input_rank_known(0)) {
                                c.set_output_unknown_rank(0, c.input_dtype(0));
                                return;
                              }
                              std::vector<int64_t> s(c.input_shape(0).begin(), c.input_shape(0).end());
                              int64_t a = normalize_axis(c.attr<int64_t>("axis"), static_cast<int64_t>(s.size()), since >= 11, "Compress");
                              s[static_cast<size_t>(a)] = OPH_DIM_UNKNOWN;
                              c.set_output(0, c.input_dtype(0), s);
                            })
                            .compute([since](oph::KernelContext& ctx) { compress_compute(ctx, since); });
    add_types(b, "T", kAll);
  }
  {
    oph::OpBuilder& b =
        pack.op(kDomain, "EyeLike")
            .versions(9, OPH_OPSET_MAX)
            .doc("2-D tensor with ones on the k-th diagonal, shaped like the input")
            .optional_attr("dtype", OPH_ATTR_INT)
            .attr("k", int64_t{0})
            .input("input", "T1")
            .output("output", "T2")
            .infer([](oph::InferContext& c) {
              oph_dtype dt = c.attrs().has("dtype") ? cast_dtype(c.attr<int64_t>("dtype"), "EyeLike") : c.input_dtype(0);
              if (c.input_rank_known(0) && c.input_shape(0).size() != 2) fail("EyeLike: input must be 2-D");
              if (!c.input_rank_known(0)) c.set_output_unknown_rank(0, dt);
              else c.set_output(0, dt, c.input_shape(0));
            })
            .compute([](oph::KernelContext& ctx) {
              oph::TensorRef x = ctx.input(0);
              if (x.ndim() != 2) fail("EyeLike: input must be 2-D");
              oph::TensorRef y = ensure_output(ctx, 0, x.shape(), "EyeLike");
              if (!y.present()) return;
              const int64_t R = x.shape()[0], C = x.shape()[1], k = ctx.attr<int64_t>("k");
              dispatch_all(y.dtype(), "EyeLike", [&]<class T>(std::type_identity<T>) {
                T* Y = static_cast<T*>(y.data());
                std::memset(static_cast<void*>(Y), 0, y.size() * sizeof(T));
                for (int64_t i = 0; i < R; ++i) {
                  int64_t j = i + k;
                  if (j >= 0 && j < C) Y[i * C + j] = convert<T>(1.0);
                }
              });
            });
    add_types(b, "T1", kAll);
    add_types(b, "T2", kAll);
  }
}

}  // namespace

void register_gather(oph::Pack& pack) {
  register_cast(pack);
  register_shape_size(pack);
  register_gathers(pack);
  register_slice(pack);
  register_expand_tile(pack);
  register_range_cos(pack);
  register_split(pack);
  register_pad(pack);
  register_misc(pack);
  register_depth_space(pack);
  register_trilu(pack);
  register_nd(pack);
}

static const Family kFamily("gather", &register_gather);

}  // namespace onnx_core
