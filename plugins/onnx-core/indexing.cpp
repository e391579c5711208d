// onnx-core: indexing: Gather, GatherElements, ScatterElements, Scatter, GatherND, ScatterND, Compress.
#include "common.hpp"

#include <algorithm>
#include <cstring>

namespace onnx_core {
namespace {

int64_t index_at(const oph::TensorRef& t, size_t i) {
  if (t.dtype() == i64) return static_cast<const int64_t*>(t.data())[i];
  return static_cast<const int32_t*>(t.data())[i];
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
  parallel_for(outer * ni, std::max<size_t>(1, kGrain / std::max<size_t>(1, inner)), [&](size_t lo, size_t hi) {
    for (size_t r = lo; r < hi; ++r) {
      size_t o = r / ni, j = r % ni;
      std::memcpy(D + r * block, S + (o * static_cast<size_t>(dim) + static_cast<size_t>(ix[j])) * block, block);
    }
  });
}

// GatherElements / ScatterElements: along every axis but `axis`, an index position is also a data position, so
// indices may not be longer than data there (it would read or write out of bounds).
void check_element_indices(std::span<const int64_t> data, std::span<const int64_t> idx, int64_t axis,
                           const std::string& op) {
  for (size_t k = 0; k < idx.size(); ++k)
    if (static_cast<int64_t>(k) != axis && idx[k] > data[k])
      fail(op + ": indices shape " + shape_str(idx) + " exceeds data shape " + shape_str(data) + " on axis " +
           std::to_string(k) + " (only the axis " + std::to_string(axis) + " may differ)");
}

void gather_elements_compute(const oph::KernelContext& ctx) {
  const std::string op = "GatherElements";
  oph::TensorRef data = input(ctx, 0, op), idx = input(ctx, 1, op);
  const int64_t r = data.ndim();
  if (idx.ndim() != r) fail(op + ": data and indices must have the same rank");
  const int64_t axis = normalize_axis(ctx.attr<int64_t>("axis"), r, true, op);
  check_element_indices(data.shape(), idx.shape(), axis, op);
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
  check_element_indices(data.shape(), idx.shape(), axis, op);
  if (!std::equal(idx.shape().begin(), idx.shape().end(), upd.shape().begin(), upd.shape().end()))
    fail(op + ": updates shape " + shape_str(upd.shape()) + " must equal the indices shape " + shape_str(idx.shape()));
  oph::TensorRef y = ensure_output(ctx, 0, data.shape(), op);
  if (!y.present()) return;
  copy_bytes(y.data(), data.data(), data.size() * elem_size(data.dtype()));
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
// GatherND, ScatterND, Scatter, Compress
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
  // updates must be indices.shape[:-1] + data.shape[indices.shape[-1]:], or it is read out of bounds.
  std::vector<int64_t> want(idx.shape().begin(), idx.shape().end() - 1);
  want.insert(want.end(), data.shape().begin() + static_cast<std::ptrdiff_t>(g.last), data.shape().end());
  if (!std::equal(want.begin(), want.end(), upd.shape().begin(), upd.shape().end()))
    fail(op + ": updates shape " + shape_str(upd.shape()) + " must be indices.shape[:-1] + data.shape[" +
         std::to_string(g.last) + ":] = " + shape_str(want));
  oph::TensorRef y = ensure_output(ctx, 0, data.shape(), op);
  if (!y.present()) return;
  copy_bytes(y.data(), data.data(), data.size() * elem_size(data.dtype()));
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
}

void register_indexing(oph::Pack& pack) {
  register_gathers(pack);
  register_nd(pack);
}

}  // namespace

static const Family kFamily("indexing", &register_indexing);

}  // namespace onnx_core
