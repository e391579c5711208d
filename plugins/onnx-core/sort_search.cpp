// onnx-core: sorting, searching and counting: TopK, Unique, NonZero.
#include "common.hpp"
#include "convert.hpp"

#include <algorithm>
#include <numeric>
#include <optional>

namespace onnx_core {
namespace {

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

void unique_infer(oph::InferContext& c) {
  const oph_dtype t = c.input_dtype(0);
  const bool has_axis = c.attrs().has("axis");
  if (has_axis && c.input_rank_known(0)) {
    auto xs = c.input_shape(0);
    std::vector<int64_t> ys(xs.begin(), xs.end());
    ys[normalize_axis(c.attr<int64_t>("axis"), xs.size(), true, "Unique")] = OPH_DIM_UNKNOWN;
    c.set_output(0, t, ys);
  } else if (has_axis) {
    c.set_output_unknown_rank(0, t);
  } else {
    c.set_output(0, t, {OPH_DIM_UNKNOWN});
  }
  c.set_output(1, i64, {OPH_DIM_UNKNOWN});
  if (!has_axis) c.set_output(2, i64, {c.input_rank_known(0) ? product_or_unknown(c.input_shape(0)) : OPH_DIM_UNKNOWN});
  else
    c.set_output(2, i64, {c.input_rank_known(0) ? c.input_shape(0)[normalize_axis(c.attr<int64_t>("axis"),
                                                                                  c.input_shape(0).size(), true, "Unique")]
                                                : OPH_DIM_UNKNOWN});
  c.set_output(3, i64, {OPH_DIM_UNKNOWN});
}

void unique_compute(oph::KernelContext& ctx) {
  const std::string op = "Unique";
  oph::TensorRef x = input(ctx, 0, op);
  auto xs = x.shape();
  const bool has_axis = ctx.attrs().has("axis");
  const bool sorted = ctx.attr<int64_t>("sorted") != 0;
  size_t outer = 1, dim = x.size(), inner = 1;
  int64_t ax = 0;
  if (has_axis) {
    ax = normalize_axis(ctx.attr<int64_t>("axis"), static_cast<int64_t>(xs.size()), true, op);
    outer = oph::numel(xs.first(ax));
    dim = xs[ax];
    inner = oph::numel(xs.subspan(ax + 1));
  }
  dispatch_numeric_all(x.dtype(), op, [&]<class T>(std::type_identity<T>) {
    const T* xp = static_cast<const T*>(x.data());
    // Slice s along the axis: elements (o, s, i) for all o, i; compared lexicographically in (o, i) order.
    auto cmp = [&](size_t a, size_t b) -> int {
      for (size_t o = 0; o < outer; ++o)
        for (size_t i = 0; i < inner; ++i) {
          T va = xp[(o * dim + a) * inner + i], vb = xp[(o * dim + b) * inner + i];
          if (va < vb) return -1;
          if (vb < va) return 1;
        }
      return 0;
    };
    std::vector<size_t> firsts;               // first occurrence of each unique slice, in order of appearance
    std::vector<int64_t> inverse(dim), counts;
    // Sort all slice indices stably, then group equal runs: O(n log n) comparisons.
    std::vector<size_t> idx(dim);
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return cmp(a, b) < 0; });
    std::vector<size_t> group_first;  // per sorted group: first occurrence
    std::vector<int64_t> group_of(dim), group_count;
    for (size_t k = 0; k < dim; ++k) {
      if (k == 0 || cmp(idx[k - 1], idx[k]) != 0) {
        group_first.push_back(idx[k]);
        group_count.push_back(0);
      }
      group_of[idx[k]] = static_cast<int64_t>(group_first.size() - 1);
      ++group_count.back();
    }
    const size_t ng = group_first.size();
    // Output order of groups: sorted order, or order of first appearance.
    std::vector<size_t> gorder(ng);
    std::iota(gorder.begin(), gorder.end(), 0);
    if (!sorted) std::sort(gorder.begin(), gorder.end(), [&](size_t a, size_t b) { return group_first[a] < group_first[b]; });
    std::vector<int64_t> rank_of(ng);
    for (size_t r = 0; r < ng; ++r) rank_of[gorder[r]] = static_cast<int64_t>(r);
    std::vector<int64_t> ys(xs.begin(), xs.end());
    if (has_axis) ys[ax] = static_cast<int64_t>(ng);
    else ys = {static_cast<int64_t>(ng)};
    oph::TensorRef y = ensure_output(ctx, 0, ys, op);
    if (y.present()) {
      T* yp = static_cast<T*>(y.data());
      for (size_t o = 0; o < outer; ++o)
        for (size_t r = 0; r < ng; ++r)
          std::memcpy(yp + (o * ng + r) * inner, xp + (o * dim + group_first[gorder[r]]) * inner, inner * sizeof(T));
    }
    const int64_t ng64[1] = {static_cast<int64_t>(ng)}, nd64[1] = {static_cast<int64_t>(dim)};
    oph::TensorRef io = ensure_output(ctx, 1, ng64, op), vo = ensure_output(ctx, 2, nd64, op),
                   co = ensure_output(ctx, 3, ng64, op);
    if (io.present())
      for (size_t r = 0; r < ng; ++r) static_cast<int64_t*>(io.data())[r] = static_cast<int64_t>(group_first[gorder[r]]);
    if (vo.present())
      for (size_t k = 0; k < dim; ++k) static_cast<int64_t*>(vo.data())[k] = rank_of[group_of[k]];
    if (co.present())
      for (size_t r = 0; r < ng; ++r) static_cast<int64_t*>(co.data())[r] = group_count[gorder[r]];
  });
}

void register_sort_search(oph::Pack& pack) {
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

  auto& u = pack.op(kDomain, "Unique")
                .versions(11, OPH_OPSET_MAX)
                .doc("unique elements or slices, with indices, inverse indices and counts")
                .input("X", "T")
                .output("Y", "T")
                .output("indices", "tensor(int64)", OPH_ARITY_OPTIONAL)
                .output("inverse_indices", "tensor(int64)", OPH_ARITY_OPTIONAL)
                .output("counts", "tensor(int64)", OPH_ARITY_OPTIONAL)
                .optional_attr("axis", OPH_ATTR_INT)
                .attr("sorted", int64_t{1})
                .types("tensor(int64)", {i64})
                .infer(&unique_infer)
                .compute(&unique_compute);
  add_types(u, "T", kNumericAll);
}

}  // namespace

static const Family kFamily("sort_search", &register_sort_search);

}  // namespace onnx_core
