// onnx-core: assorted ops: Einsum (12), Unique (11), ReverseSequence (10), LRN (1, 13), MeanVarianceNormalization
// (9, 13), Det (11), Upsample (7, 9; deprecated in 10).
#include "common.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace onnx_core {
namespace {

// Every real numeric dtype (no float16), dispatched with dispatch_numeric_all.
const std::vector<oph_dtype> kAnyNumeric = {f32, f64, i8, i16, i32, i64, u8, u16, u32, u64};

// ======================================= Einsum =======================================

struct EinsumPlan {
  // Labels 0..L-1: letters first (in order of appearance), then ellipsis dims 0..E-1.
  std::vector<int64_t> label_size;
  std::vector<std::vector<int>> in_labels;  // per input, per dim
  std::vector<int> out_labels;
  std::vector<int64_t> out_shape;
};

EinsumPlan einsum_plan(std::string eq, const std::vector<std::vector<int64_t>>& shapes) {
  const std::string op = "Einsum";
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  std::string lhs = eq, rhs;
  const bool explicit_out = eq.find("->") != std::string::npos;
  if (explicit_out) {
    lhs = eq.substr(0, eq.find("->"));
    rhs = eq.substr(eq.find("->") + 2);
  }
  std::vector<std::string> terms;
  for (size_t p = 0;;) {
    size_t q = lhs.find(',', p);
    terms.push_back(lhs.substr(p, q == std::string::npos ? std::string::npos : q - p));
    if (q == std::string::npos) break;
    p = q + 1;
  }
  if (terms.size() != shapes.size())
    fail(op + ": the equation has " + std::to_string(terms.size()) + " operands but " + std::to_string(shapes.size()) +
         " inputs are given");
  // Parse terms into letters with an ellipsis marker ('.').
  auto parse = [&](const std::string& t) {
    std::string r;
    for (size_t i = 0; i < t.size(); ++i) {
      if (t[i] == '.') {
        if (t.compare(i, 3, "...") != 0 || r.find('.') != std::string::npos) fail(op + ": malformed ellipsis in '" + t + "'");
        r += '.';
        i += 2;
      } else if (std::isalpha(static_cast<unsigned char>(t[i]))) {
        r += t[i];
      } else {
        fail(op + ": invalid character '" + std::string(1, t[i]) + "' in the equation");
      }
    }
    return r;
  };
  std::map<char, int> letter;
  std::vector<char> letters;
  std::vector<std::string> pt;
  size_t E = 0;
  for (size_t k = 0; k < terms.size(); ++k) {
    pt.push_back(parse(terms[k]));
    const bool ell = pt[k].find('.') != std::string::npos;
    const size_t nl = pt[k].size() - (ell ? 1 : 0);
    if ((!ell && nl != shapes[k].size()) || (ell && nl > shapes[k].size()))
      fail(op + ": operand " + std::to_string(k) + " '" + terms[k] + "' does not match its rank " +
           std::to_string(shapes[k].size()));
    if (ell) E = std::max(E, shapes[k].size() - nl);
    for (char ch : pt[k])
      if (ch != '.' && !letter.count(ch)) {
        letter[ch] = static_cast<int>(letters.size());
        letters.push_back(ch);
      }
  }
  EinsumPlan p;
  const int nletters = static_cast<int>(letters.size());
  p.label_size.assign(nletters + E, -2);  // -2: not set yet
  auto set_size = [&](int label, int64_t d, bool broadcastable) {
    int64_t& s = p.label_size[label];
    if (s == -2 || (broadcastable && s == 1)) s = d;
    else if (d != s && !(broadcastable && d == 1))
      fail(op + ": dimension sizes disagree for a label (" + std::to_string(s) + " vs " + std::to_string(d) + ")");
  };
  std::vector<int> count(nletters + E, 0);
  for (size_t k = 0; k < pt.size(); ++k) {
    std::vector<int> labels;
    size_t dim = 0;
    const size_t e = shapes[k].size() - (pt[k].size() - (pt[k].find('.') != std::string::npos ? 1 : 0));
    for (char ch : pt[k]) {
      if (ch == '.') {
        for (size_t j = 0; j < e; ++j) {
          int label = nletters + static_cast<int>(E - e + j);
          labels.push_back(label);
          set_size(label, shapes[k][dim++], true);
        }
      } else {
        labels.push_back(letter[ch]);
        set_size(letter[ch], shapes[k][dim++], false);
        ++count[letter[ch]];
      }
    }
    p.in_labels.push_back(labels);
  }
  for (size_t j = 0; j < E; ++j)
    if (p.label_size[nletters + j] == -2) p.label_size[nletters + j] = 1;
  if (explicit_out) {
    std::string r = parse(rhs);
    for (char ch : r) {
      if (ch == '.') {
        for (size_t j = 0; j < E; ++j) p.out_labels.push_back(nletters + static_cast<int>(j));
      } else {
        if (!letter.count(ch)) fail(op + ": output label '" + std::string(1, ch) + "' does not appear in the inputs");
        if (std::count(r.begin(), r.end(), ch) > 1) fail(op + ": output label '" + std::string(1, ch) + "' repeats");
        p.out_labels.push_back(letter[ch]);
      }
    }
  } else {
    for (size_t j = 0; j < E; ++j) p.out_labels.push_back(nletters + static_cast<int>(j));
    std::vector<char> once;
    for (char ch : letters)
      if (count[letter[ch]] == 1) once.push_back(ch);
    std::sort(once.begin(), once.end());
    for (char ch : once) p.out_labels.push_back(letter[ch]);
  }
  for (int l : p.out_labels) p.out_shape.push_back(p.label_size[l]);
  return p;
}

void einsum_infer(oph::InferContext& c) {
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    if (!c.input_rank_known(i)) return c.set_output_unknown_rank(0, c.input_dtype(0));
    auto s = c.input_shape(i);
    shapes.emplace_back(s.begin(), s.end());
  }
  for (auto& s : shapes)
    if (!all_known(s)) {
      // Rank is still determined: plan with placeholder sizes and mark every dim unknown.
      std::vector<std::vector<int64_t>> ph = shapes;
      for (auto& q : ph) std::replace(q.begin(), q.end(), int64_t{-1}, int64_t{1});
      auto p = einsum_plan(c.attr<std::string>("equation"), ph);
      std::vector<int64_t> out(p.out_shape.size(), OPH_DIM_UNKNOWN);
      return c.set_output(0, c.input_dtype(0), out);
    }
  c.set_output(0, c.input_dtype(0), einsum_plan(c.attr<std::string>("equation"), shapes).out_shape);
}

void einsum_compute(oph::KernelContext& ctx) {
  const std::string op = "Einsum";
  std::vector<oph::TensorRef> in;
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    in.push_back(input(ctx, i, op));
    shapes.emplace_back(in.back().shape().begin(), in.back().shape().end());
    if (!(in.back().dtype() == in[0].dtype())) fail(op + ": all inputs must have the same dtype");
  }
  EinsumPlan p = einsum_plan(ctx.attr<std::string>("equation"), shapes);
  oph::TensorRef y = ensure_output(ctx, 0, p.out_shape, op);
  if (!y.present()) return;
  const size_t L = p.label_size.size();
  // Per input, per label: element stride (0 for broadcast dims); repeated labels add up (diagonals).
  std::vector<std::vector<int64_t>> stride(in.size(), std::vector<int64_t>(L, 0));
  for (size_t k = 0; k < in.size(); ++k) {
    int64_t s = 1;
    for (size_t d = shapes[k].size(); d-- > 0;) {
      if (shapes[k][d] != 1 || p.label_size[p.in_labels[k][d]] == 1) stride[k][p.in_labels[k][d]] += s;
      s *= shapes[k][d];
    }
  }
  std::vector<int> order = p.out_labels, red;
  for (size_t l = 0; l < L; ++l)
    if (std::find(order.begin(), order.end(), static_cast<int>(l)) == order.end()) red.push_back(static_cast<int>(l));
  const size_t nout = oph::numel(p.out_shape);
  size_t nred = 1;
  for (int l : red) nred *= static_cast<size_t>(p.label_size[l]);
  dispatch_numeric_all(in[0].dtype(), op, [&]<class T>(std::type_identity<T>) {
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
    T* yp = static_cast<T*>(y.data());
    std::vector<const T*> ptr;
    for (auto& t : in) ptr.push_back(static_cast<const T*>(t.data()));
    ctx.parallel_for(nout, 64, [&](size_t lo, size_t hi) {
      std::vector<int64_t> base(in.size());
      for (size_t o = lo; o < hi; ++o) {
        std::fill(base.begin(), base.end(), 0);
        size_t r = o;
        for (size_t d = order.size(); d-- > 0;) {
          const int64_t idx = static_cast<int64_t>(r % p.label_size[order[d]]);
          r /= p.label_size[order[d]];
          for (size_t k = 0; k < in.size(); ++k) base[k] += idx * stride[k][order[d]];
        }
        Acc acc = 0;
        for (size_t q = 0; q < nred; ++q) {
          size_t rr = q;
          Acc prod = 1;
          for (size_t k = 0; k < in.size(); ++k) {
            int64_t off = base[k];
            size_t r2 = rr;
            for (size_t d = red.size(); d-- > 0;) {
              off += static_cast<int64_t>(r2 % p.label_size[red[d]]) * stride[k][red[d]];
              r2 /= p.label_size[red[d]];
            }
            prod *= static_cast<Acc>(ptr[k][off]);
          }
          acc += prod;
        }
        yp[o] = static_cast<T>(acc);
      }
    });
  });
}

// ======================================= Unique =======================================

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

// ======================================= ReverseSequence =======================================

void reverse_sequence_compute(oph::KernelContext& ctx) {
  const std::string op = "ReverseSequence";
  oph::TensorRef x = input(ctx, 0, op);
  auto seq = read_ints(input(ctx, 1, op).raw(), op, "sequence_lens");
  auto xs = x.shape();
  if (xs.size() < 2) fail(op + ": input must have rank >= 2");
  const int64_t ba = ctx.attr<int64_t>("batch_axis"), ta = ctx.attr<int64_t>("time_axis");
  if (!((ba == 0 && ta == 1) || (ba == 1 && ta == 0)))
    fail(op + ": batch_axis and time_axis must be 0 and 1 (in either order), got " + std::to_string(ba) + ", " +
         std::to_string(ta));
  const int64_t B = xs[ba], Tn = xs[ta];
  if (static_cast<int64_t>(seq.size()) != B) fail(op + ": sequence_lens must have batch_size values");
  oph::TensorRef y = ensure_output(ctx, 0, xs, op);
  if (!y.present()) return;
  const size_t es = elem_size(x.dtype()), inner = oph::numel(xs.subspan(2)) * es;
  const char* xp = static_cast<const char*>(x.data());
  char* yp = static_cast<char*>(y.data());
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = seq[b];
    if (len < 0 || len > Tn) fail(op + ": sequence_lens[" + std::to_string(b) + "] = " + std::to_string(len) + " is out of range");
    for (int64_t t = 0; t < Tn; ++t) {
      const int64_t src_t = t < len ? len - 1 - t : t;
      auto off = [&](int64_t tt) { return static_cast<size_t>(ba == 0 ? b * Tn + tt : tt * B + b) * inner; };
      std::memcpy(yp + off(t), xp + off(src_t), inner);
    }
  }
}

// ======================================= LRN =======================================

void lrn_compute(oph::KernelContext& ctx) {
  const std::string op = "LRN";
  oph::TensorRef x = input(ctx, 0, op);
  auto xs = x.shape();
  if (xs.size() < 3) fail(op + ": X must have rank >= 3 (N, C, spatial...)");
  oph::TensorRef y = ensure_output(ctx, 0, xs, op);
  if (!y.present()) return;
  const double alpha = ctx.attr<float>("alpha"), beta = ctx.attr<float>("beta"), bias = ctx.attr<float>("bias");
  const int64_t size = ctx.attr<int64_t>("size");
  if (size < 1) fail(op + ": size must be >= 1");
  const int64_t N = xs[0], C = xs[1];
  const size_t inner = oph::numel(xs.subspan(2));
  const int64_t lo_off = (size - 1) / 2, hi_off = size - 1 - lo_off;  // floor and ceil of (size-1)/2
  dispatch_float(x.dtype(), op, [&]<class T>(std::type_identity<T>) {
    const T* xp = static_cast<const T*>(x.data());
    T* yp = static_cast<T*>(y.data());
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (size_t i = 0; i < inner; ++i) {
          double sq = 0;
          for (int64_t k = std::max<int64_t>(0, c - lo_off); k <= std::min<int64_t>(C - 1, c + hi_off); ++k) {
            const double v = xp[(n * C + k) * inner + i];
            sq += v * v;
          }
          const size_t at = (n * C + c) * inner + i;
          yp[at] = static_cast<T>(xp[at] / std::pow(bias + alpha / static_cast<double>(size) * sq, beta));
        }
  });
}

// ======================================= MeanVarianceNormalization =======================================

void mvn_compute(oph::KernelContext& ctx) {
  const std::string op = "MeanVarianceNormalization";
  oph::TensorRef x = input(ctx, 0, op);
  auto xs = x.shape();
  oph::TensorRef y = ensure_output(ctx, 0, xs, op);
  if (!y.present()) return;
  std::vector<bool> reduce(xs.size(), false);
  for (int64_t a : ctx.attr<std::vector<int64_t>>("axes")) reduce[normalize_axis(a, xs.size(), true, op, "axes")] = true;
  // Group elements by their kept coordinates.
  const size_t n = x.size();
  std::vector<size_t> group(n);
  size_t ngroups = 1;
  {
    std::vector<int64_t> kept_stride(xs.size(), 0);
    for (size_t d = xs.size(); d-- > 0;)
      if (!reduce[d]) {
        kept_stride[d] = static_cast<int64_t>(ngroups);
        ngroups *= xs[d];
      }
    for (size_t i = 0; i < n; ++i) {
      size_t r = i, g = 0;
      for (size_t d = xs.size(); d-- > 0;) {
        g += (r % xs[d]) * kept_stride[d];
        r /= xs[d];
      }
      group[i] = g;
    }
  }
  dispatch_float(x.dtype(), op, [&]<class T>(std::type_identity<T>) {
    const T* xp = static_cast<const T*>(x.data());
    T* yp = static_cast<T*>(y.data());
    std::vector<double> sum(ngroups, 0), sq(ngroups, 0), cnt(ngroups, 0);
    for (size_t i = 0; i < n; ++i) {
      sum[group[i]] += xp[i];
      sq[group[i]] += static_cast<double>(xp[i]) * xp[i];
      cnt[group[i]] += 1;
    }
    for (size_t i = 0; i < n; ++i) {
      const size_t g = group[i];
      const double mean = sum[g] / cnt[g], var = std::max(0.0, sq[g] / cnt[g] - mean * mean);
      yp[i] = static_cast<T>((xp[i] - mean) / (std::sqrt(var) + 1e-9));
    }
  });
}

// ======================================= Det =======================================

void det_infer(oph::InferContext& c) {
  if (!c.input_rank_known(0)) return c.set_output_unknown_rank(0, c.input_dtype(0));
  auto xs = c.input_shape(0);
  if (xs.size() < 2) fail("Det: input must have rank >= 2");
  if (xs[xs.size() - 1] >= 0 && xs[xs.size() - 2] >= 0 && xs[xs.size() - 1] != xs[xs.size() - 2])
    fail("Det: the last two dims must be equal, got " + shape_str(xs));
  c.set_output(0, c.input_dtype(0), xs.first(xs.size() - 2));
}

void det_compute(oph::KernelContext& ctx) {
  const std::string op = "Det";
  oph::TensorRef x = input(ctx, 0, op);
  auto xs = x.shape();
  if (xs.size() < 2 || xs[xs.size() - 1] != xs[xs.size() - 2]) fail(op + ": input must be [..., M, M], got " + shape_str(xs));
  oph::TensorRef y = ensure_output(ctx, 0, xs.first(xs.size() - 2), op);
  if (!y.present()) return;
  const size_t M = xs.back(), nb = oph::numel(xs.first(xs.size() - 2));
  dispatch_float(x.dtype(), op, [&]<class T>(std::type_identity<T>) {
    const T* xp = static_cast<const T*>(x.data());
    T* yp = static_cast<T*>(y.data());
    std::vector<double> a(M * M);
    for (size_t b = 0; b < nb; ++b) {
      for (size_t i = 0; i < M * M; ++i) a[i] = xp[b * M * M + i];
      double det = 1;
      for (size_t c = 0; c < M; ++c) {  // LU with partial pivoting
        size_t piv = c;
        for (size_t r = c + 1; r < M; ++r)
          if (std::abs(a[r * M + c]) > std::abs(a[piv * M + c])) piv = r;
        if (a[piv * M + c] == 0) {
          det = 0;
          break;
        }
        if (piv != c) {
          for (size_t k = 0; k < M; ++k) std::swap(a[c * M + k], a[piv * M + k]);
          det = -det;
        }
        det *= a[c * M + c];
        for (size_t r = c + 1; r < M; ++r) {
          const double f = a[r * M + c] / a[c * M + c];
          for (size_t k = c; k < M; ++k) a[r * M + k] -= f * a[c * M + k];
        }
      }
      yp[b] = static_cast<T>(det);
    }
  });
}

// ======================================= Upsample =======================================

std::vector<int64_t> upsample_shape(std::span<const int64_t> xs, const std::vector<float>& scales, const std::string& op) {
  if (scales.size() != xs.size())
    fail(op + ": scales has " + std::to_string(scales.size()) + " values for an input of rank " + std::to_string(xs.size()));
  std::vector<int64_t> out(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    if (scales[i] < 1) fail(op + ": scales must be >= 1");
    out[i] = xs[i] < 0 ? OPH_DIM_UNKNOWN : static_cast<int64_t>(std::floor(static_cast<double>(xs[i]) * scales[i]));
  }
  return out;
}

std::vector<float> read_scales(const oph::TensorRef& t, const std::string& op) {
  if (!(t.dtype() == f32)) fail(op + ": scales must be float32");
  const float* p = static_cast<const float*>(t.data());
  return std::vector<float>(p, p + t.size());
}

void upsample_compute(oph::KernelContext& ctx, bool scales_input) {
  const std::string op = "Upsample";
  oph::TensorRef x = input(ctx, 0, op);
  auto xs = x.shape();
  std::vector<float> scales = scales_input ? read_scales(input(ctx, 1, op), op) : ctx.attr<std::vector<float>>("scales");
  auto os = upsample_shape(xs, scales, op);
  oph::TensorRef y = ensure_output(ctx, 0, os, op);
  if (!y.present()) return;
  const std::string mode = ctx.attr<std::string>("mode");
  const size_t r = xs.size(), n = oph::numel(os);
  if (mode == "nearest") {
    const size_t es = elem_size(x.dtype());
    const char* xp = static_cast<const char*>(x.data());
    char* yp = static_cast<char*>(y.data());
    for (size_t o = 0; o < n; ++o) {
      size_t rem = o, src = 0, mul = 1;
      for (size_t d = r; d-- > 0;) {
        const int64_t oi = static_cast<int64_t>(rem % os[d]);
        rem /= os[d];
        const int64_t ii = std::min<int64_t>(xs[d] - 1, static_cast<int64_t>(std::floor(oi / scales[d])));
        src += ii * mul;
        mul *= xs[d];
      }
      std::memcpy(yp + o * es, xp + src * es, es);
    }
  } else if (mode == "linear") {
    dispatch_float(x.dtype(), op, [&]<class T>(std::type_identity<T>) {
      const T* xp = static_cast<const T*>(x.data());
      T* yp = static_cast<T*>(y.data());
      std::vector<int64_t> i0(r), i1(r);
      std::vector<double> w(r);
      for (size_t o = 0; o < n; ++o) {
        size_t rem = o;
        for (size_t d = r; d-- > 0;) {
          const int64_t oi = static_cast<int64_t>(rem % os[d]);
          rem /= os[d];
          const double in = std::min<double>(static_cast<double>(oi) / scales[d], static_cast<double>(xs[d] - 1));
          i0[d] = static_cast<int64_t>(std::floor(in));
          i1[d] = std::min<int64_t>(i0[d] + 1, xs[d] - 1);
          w[d] = in - static_cast<double>(i0[d]);
        }
        double acc = 0;
        for (size_t corner = 0; corner < (size_t{1} << r); ++corner) {
          double wt = 1;
          size_t src = 0;
          for (size_t d = 0; d < r; ++d) {
            const bool hi = (corner >> d) & 1;
            wt *= hi ? w[d] : 1 - w[d];
            src = src * xs[d] + (hi ? i1[d] : i0[d]);
          }
          if (wt != 0) acc += wt * xp[src];
        }
        yp[o] = static_cast<T>(acc);
      }
    });
  } else {
    fail(op + ": mode '" + mode + "' is not supported (nearest and linear are)");
  }
}

void register_misc(oph::Pack& pack) {
  auto& e = pack.op(kDomain, "Einsum")
                .versions(12, OPH_OPSET_MAX)
                .doc("Einstein summation (general index loops)")
                .input("Inputs", "T", OPH_ARITY_VARIADIC, OPH_MEMORY_DEVICE, 1)
                .output("Output", "T")
                .required_attr("equation", OPH_ATTR_STRING)
                .infer(&einsum_infer)
                .compute(&einsum_compute);
  add_types(e, "T", kAnyNumeric);

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
  add_types(u, "T", kAnyNumeric);

  auto& rs = pack.op(kDomain, "ReverseSequence")
                 .versions(10, OPH_OPSET_MAX)
                 .doc("reverses each batch entry's first sequence_lens[b] time steps")
                 .input("input", "T")
                 .input("sequence_lens", "tensor(int64)", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)
                 .output("Y", "T")
                 .attr("batch_axis", int64_t{1})
                 .attr("time_axis", int64_t{0})
                 .types("tensor(int64)", {i64})
                 .infer(oph::same_as_input(0))
                 .compute(&reverse_sequence_compute);
  add_types(rs, "T", kAll);

  for (int since : {1, 13}) {
    auto& l = pack.op(kDomain, "LRN")
                  .versions(since, since == 1 ? 12 : OPH_OPSET_MAX)
                  .doc("local response normalization across channels")
                  .input("X", "T")
                  .output("Y", "T")
                  .attr("alpha", 1e-4f)
                  .attr("beta", 0.75f)
                  .attr("bias", 1.0f)
                  .required_attr("size", OPH_ATTR_INT)
                  .infer(oph::same_as_input(0))
                  .compute(&lrn_compute);
    add_types(l, "T", kFloat);

    auto& m = pack.op(kDomain, "MeanVarianceNormalization")
                  .versions(since == 1 ? 9 : 13, since == 1 ? 12 : OPH_OPSET_MAX)
                  .doc("(X - mean) / (std + 1e-9) over the given axes")
                  .input("X", "T")
                  .output("Y", "T")
                  .attr("axes", {0, 2, 3})
                  .infer(oph::same_as_input(0))
                  .compute(&mvn_compute);
    add_types(m, "T", kFloat);
  }

  auto& d = pack.op(kDomain, "Det")
                .versions(11, OPH_OPSET_MAX)
                .doc("determinant of square matrices (LU with partial pivoting, double precision)")
                .input("X", "T")
                .output("Y", "T")
                .infer(&det_infer)
                .compute(&det_compute);
  add_types(d, "T", kFloat);

  for (int since : {7, 9}) {
    const bool scales_input = since == 9;
    auto& up = pack.op(kDomain, "Upsample")
                   .versions(since, since == 7 ? 8 : 9)
                   .doc("nearest or (multi)linear upsampling by scales (deprecated in opset 10)")
                   .input("X", "T")
                   .output("Y", "T")
                   .attr("mode", std::string("nearest"));
    if (scales_input) up.input("scales", "tensor(float)", OPH_ARITY_SINGLE, OPH_MEMORY_HOST).types("tensor(float)", {f32});
    else up.required_attr("scales", OPH_ATTR_FLOATS);
    add_types(up, "T", kAll);
    up.infer([scales_input](oph::InferContext& c) {
        if (!c.input_rank_known(0)) return c.set_output_unknown_rank(0, c.input_dtype(0));
        auto xs = c.input_shape(0);
        std::vector<float> scales;
        if (scales_input) {
          const oph_tensor* s = c.input_constant(1);
          if (!s) return c.set_output(0, c.input_dtype(0), std::vector<int64_t>(xs.size(), OPH_DIM_UNKNOWN));
          const float* p = reinterpret_cast<const float*>(static_cast<const char*>(s->data) + s->byte_offset);
          scales.assign(p, p + oph::numel({s->shape, static_cast<size_t>(s->ndim)}));
        } else {
          scales = c.attr<std::vector<float>>("scales");
        }
        c.set_output(0, c.input_dtype(0), upsample_shape(xs, scales, "Upsample"));
      })
        .compute([scales_input](oph::KernelContext& ctx) { upsample_compute(ctx, scales_input); });
  }
}

}  // namespace

static const Family kFamily("misc", &register_misc);

}  // namespace onnx_core
