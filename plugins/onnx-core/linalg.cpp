// onnx-core: linear algebra: MatMul (numpy-style batched), Gemm, Einsum, Det.
// float32 MatMul and Gemm run on oneDNN's sgemm (its OpenMP team sized by dnnl_threads(), as for Conv);
// float64 keeps the plain loops.
#include "common.hpp"
#include "dnnl_util.hpp"
#include "gemm_packed.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace onnx_core {
namespace {

// ----- MatMul -----

// Row-major C[M,N] = alpha * op(A) * op(B) + beta * C through oneDNN.
void sgemm(bool ta, bool tb, size_t M, size_t N, size_t K, float alpha, const float* A, const float* B, float beta,
           float* C) {
  const dnnl_dim_t lda = static_cast<dnnl_dim_t>(std::max<size_t>(1, ta ? M : K));
  const dnnl_dim_t ldb = static_cast<dnnl_dim_t>(std::max<size_t>(1, tb ? K : N));
  const dnnl_dim_t ldc = static_cast<dnnl_dim_t>(std::max<size_t>(1, N));
  dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', static_cast<dnnl_dim_t>(M), static_cast<dnnl_dim_t>(N),
                                static_cast<dnnl_dim_t>(K), alpha, A, lda, B, ldb, beta, C, ldc);
  if (st != dnnl_success) fail("oneDNN sgemm failed with status " + std::to_string(static_cast<int>(st)), OPH_CODE_INTERNAL);
}

struct MatMulShape {
  bool a1d = false, b1d = false;
  int64_t M = 0, K = 0, N = 0;
  std::vector<int64_t> abatch, bbatch, batch, out;
};

MatMulShape matmul_shape(std::span<const int64_t> a, std::span<const int64_t> b) {
  if (a.empty() || b.empty()) fail("MatMul: inputs must have rank >= 1 (got " + shape_str(a) + " and " + shape_str(b) + ")");
  MatMulShape s;
  s.a1d = a.size() == 1;
  s.b1d = b.size() == 1;
  std::vector<int64_t> av(a.begin(), a.end()), bv(b.begin(), b.end());
  if (s.a1d) av.insert(av.begin(), 1);
  if (s.b1d) bv.push_back(1);
  s.M = av[av.size() - 2];
  int64_t ka = av.back(), kb = bv[bv.size() - 2];
  if (ka >= 0 && kb >= 0 && ka != kb)
    fail("MatMul: inner dimensions differ: " + shape_str(a) + " x " + shape_str(b));
  s.K = ka >= 0 ? ka : kb;
  s.N = bv.back();
  s.abatch.assign(av.begin(), av.end() - 2);
  s.bbatch.assign(bv.begin(), bv.end() - 2);
  s.batch = oph::broadcast_shapes(s.abatch, s.bbatch);
  s.out = s.batch;
  if (!s.a1d) s.out.push_back(s.M);
  if (!s.b1d) s.out.push_back(s.N);
  return s;
}

void matmul_infer(oph::InferContext& c) {
  if (c.input_dtype(0) != c.input_dtype(1)) fail("MatMul: A and B must have the same dtype");
  if (!c.input_rank_known(0) || !c.input_rank_known(1)) {
    c.set_output_unknown_rank(0, c.input_dtype(0));
    return;
  }
  c.set_output(0, c.input_dtype(0), matmul_shape(c.input_shape(0), c.input_shape(1)).out);
}

// Offsets (in elements) of each broadcast batch entry into an input with batch dims `in`.
std::vector<size_t> batch_offsets(std::span<const int64_t> batch, std::span<const int64_t> in, size_t matrix) {
  size_t nb = oph::numel(batch);
  std::vector<size_t> off(nb);
  const size_t r = batch.size();
  std::vector<size_t> stride(r, 0);
  size_t acc = matrix;
  for (size_t k = r; k-- > 0;) {
    int64_t d = k + in.size() >= r ? in[k + in.size() - r] : 1;
    stride[k] = d == 1 ? 0 : acc;
    acc *= static_cast<size_t>(d);
  }
  for (size_t i = 0; i < nb; ++i) {
    size_t rem = i, o = 0;
    for (size_t k = r; k-- > 0;) {
      o += (rem % static_cast<size_t>(batch[k])) * stride[k];
      rem /= static_cast<size_t>(batch[k]);
    }
    off[i] = o;
  }
  return off;
}

void matmul_compute(const oph::KernelContext& ctx) {
  oph::TensorRef a = input(ctx, 0, "MatMul"), b = input(ctx, 1, "MatMul");
  if (a.dtype() != b.dtype()) fail("MatMul: A and B must have the same dtype");
  MatMulShape s = matmul_shape(a.shape(), b.shape());
  oph::TensorRef y = ensure_output(ctx, 0, s.out, "MatMul");
  if (!y.present()) return;
  const size_t M = s.M, K = s.K, N = s.N;
  std::vector<size_t> aoff = batch_offsets(s.batch, s.abatch, M * K);
  std::vector<size_t> boff = batch_offsets(s.batch, s.bbatch, K * N);
  const size_t rows = aoff.size() * M;
  if (rows == 0 || N == 0) return;
  if (a.dtype() == f32) {
    const float* A = static_cast<const float*>(a.data());
    const float* B = static_cast<const float*>(b.data());
    float* C = static_cast<float*>(y.data());
    if (K == 0) {
      std::fill(C, C + rows * N, 0.0f);
      return;
    }
    set_dnnl_threads();
    if (oph::numel(s.bbatch) == 1) {
      sgemm(false, false, rows, N, K, 1.0f, A, B, 0.0f, C);  // A's batch folds into its rows
    } else {
      for (size_t bi = 0; bi < aoff.size(); ++bi) sgemm(false, false, M, N, K, 1.0f, A + aoff[bi], B + boff[bi], 0.0f, C + bi * M * N);
    }
    return;
  }
  dispatch_float(a.dtype(), "MatMul", [&]<class T>(std::type_identity<T>) {
    const T* A = static_cast<const T*>(a.data());
    const T* B = static_cast<const T*>(b.data());
    T* C = static_cast<T*>(y.data());
    const size_t* ao = aoff.data();
    const size_t* bo = boff.data();
    size_t grain = std::max<size_t>(1, kGrain / std::max<size_t>(1, K * N));
    parallel_for(rows, grain, [=](size_t lo, size_t hi) {
      for (size_t r = lo; r < hi; ++r) {
        size_t bi = r / M, i = r % M;
        T* c = C + r * N;
        for (size_t j = 0; j < N; ++j) c[j] = T(0);
        const T* arow = A + ao[bi] + i * K;
        const T* bmat = B + bo[bi];
        for (size_t k = 0; k < K; ++k) {
          const T aik = arow[k];
          const T* brow = bmat + k * N;
          for (size_t j = 0; j < N; ++j) c[j] += aik * brow[j];
        }
      }
    });
  });
}

// Runs the packed product over every row of A (its batch dims folded into rows) and every panel, split across
// the intra-op threads by panels.
void run_packed(const gemm_packed::PackedB& pb, const float* A, size_t rows, float* C,
                const float* bias) {
  const size_t K = pb.rows(), N = pb.cols(), panels = pb.panels();
  // Enough work per task to amortise a task switch: about kGrain multiply-adds per element of C's panel column.
  const size_t per_panel = std::max<size_t>(1, rows * K * pb.panel_width());
  const size_t grain = std::max<size_t>(1, (64 * kGrain) / per_panel);
  parallel_for(panels, grain, [&](size_t lo, size_t hi) {
    gemm_packed::multiply(pb, A, rows, K, C, N, bias, lo, hi);
  });
}

// MatMul with a constant 2-D float32 B: packed at creation; other cases (and other dtypes) as matmul_compute.
class MatMulKernel {
 public:
  explicit MatMulKernel(const oph::KernelInit& init) {
    const oph_value_info& b = init.input(1);
    if (const float* w = constant_f32(b); w && b.ndim == 2 && b.shape[0] > 0 && b.shape[1] > 0)
      packed_ = gemm_packed::pack(w, static_cast<size_t>(b.shape[0]), static_cast<size_t>(b.shape[1]));
  }
  oph::Implementation implementation() {
    if (packed_.empty()) return {"oneDNN sgemm (float32; float64: loops)", false};
    return {std::string("packed B, Highway ") + gemm_packed::target_name(), false};
  }
  void compute(oph::KernelContext& ctx) {
    if (!packed_.empty() && try_packed(ctx, nullptr)) return;
    matmul_compute(ctx);
  }

 protected:
  // The packed path when A is float32 and B is the packed constant; false: not applicable.
  bool try_packed(oph::KernelContext& ctx, const float* bias) {
    oph::TensorRef a = input(ctx, 0, "MatMul"), b = input(ctx, 1, "MatMul");
    if (!(a.dtype() == f32) || !(b.dtype() == f32)) return false;
    auto bs = b.shape();
    if (bs.size() != 2 || static_cast<size_t>(bs[0]) != packed_.rows() || static_cast<size_t>(bs[1]) != packed_.cols())
      return false;
    MatMulShape s = matmul_shape(a.shape(), bs);
    oph::TensorRef y = ensure_output(ctx, 0, s.out, "MatMul");
    if (!y.present()) return true;
    const size_t rows = oph::numel(a.shape()) / packed_.rows();
    if (rows == 0) return true;
    run_packed(packed_, static_cast<const float*>(a.data()), rows, static_cast<float*>(y.data()), bias);
    return true;
  }
  gemm_packed::PackedB packed_;
};

// com.ophost::FusedMatMul(A, B, Bias): MatMul(A, B) + Bias along the last dim (Bias has B's column count of
// values), written by the host's matmul-bias-fusion pass for MatMul followed by Add of a constant bias.
void fused_matmul_infer(oph::InferContext& c) {
  matmul_infer(c);
  if (c.input_dtype(2) != c.input_dtype(0)) fail("FusedMatMul: Bias must have A's dtype");
}

class FusedMatMulKernel : public MatMulKernel {
 public:
  using MatMulKernel::MatMulKernel;
  void compute(oph::KernelContext& ctx) {
    oph::TensorRef bias = input(ctx, 2, "FusedMatMul");
    check_compact(bias, "FusedMatMul");
    oph::TensorRef b = input(ctx, 1, "FusedMatMul");
    auto bs = b.shape();
    const size_t N = bs.empty() ? 0 : static_cast<size_t>(bs.back());
    if (bs.size() < 2 || bias.size() != N)
      fail("FusedMatMul: Bias must have one value per column of B (" + std::to_string(N) + "), got " +
           std::to_string(bias.size()));
    if (!packed_.empty() && bias.dtype() == f32 && try_packed(ctx, static_cast<const float*>(bias.data()))) return;
    matmul_compute(ctx);
    oph::TensorRef y = ctx.output(0);
    if (!y.present() || N == 0) return;
    dispatch_float(y.dtype(), "FusedMatMul", [&]<class T>(std::type_identity<T>) {
      T* Y = static_cast<T*>(y.data());
      const T* B = static_cast<const T*>(bias.data());
      for (size_t i = 0, n = y.size(); i < n; i += N)
        for (size_t j = 0; j < N; ++j) Y[i + j] += B[j];
    });
  }
};

// ----- Gemm -----

struct GemmShape {
  int64_t M, K, N;
};

GemmShape gemm_shape(std::span<const int64_t> a, std::span<const int64_t> b, bool ta, bool tb) {
  if (a.size() != 2 || b.size() != 2)
    fail("Gemm: A and B must be 2-D, got " + shape_str(a) + " and " + shape_str(b));
  GemmShape s;
  s.M = ta ? a[1] : a[0];
  int64_t ka = ta ? a[0] : a[1];
  int64_t kb = tb ? b[1] : b[0];
  s.N = tb ? b[0] : b[1];
  if (ka >= 0 && kb >= 0 && ka != kb)
    fail("Gemm: inner dimensions differ: A" + std::string(ta ? "'" : "") + " " + shape_str(a) + ", B" +
         (tb ? "'" : "") + " " + shape_str(b));
  s.K = ka >= 0 ? ka : kb;
  return s;
}

// C must be unidirectionally broadcastable to [M, N].
void gemm_check_c(std::span<const int64_t> c, int64_t M, int64_t N) {
  if (c.size() > 2) fail("Gemm: C must have rank <= 2, got " + shape_str(c));
  int64_t want[2] = {M, N};
  for (size_t k = 0; k < c.size(); ++k) {
    int64_t d = c[k], w = want[2 - c.size() + k];
    if (d != 1 && d >= 0 && w >= 0 && d != w)
      fail("Gemm: C " + shape_str(c) + " cannot be broadcast to [" + std::to_string(M) + "," + std::to_string(N) + "]");
  }
}

bool flag_attr(int64_t v, const char* op, const char* name) {
  if (v != 0 && v != 1) fail(std::string(op) + ": attribute " + name + " must be 0 or 1, got " + std::to_string(v));
  return v == 1;
}

void gemm_infer(oph::InferContext& c) {
  bool ta = flag_attr(c.attr<int64_t>("transA"), "Gemm", "transA");
  bool tb = flag_attr(c.attr<int64_t>("transB"), "Gemm", "transB");
  for (size_t i = 1; i < 3; ++i)
    if (c.has_input(i) && c.input_dtype(i) != c.input_dtype(0)) fail("Gemm: A, B and C must have the same dtype");
  if (!c.input_rank_known(0) || !c.input_rank_known(1)) {
    c.set_output(0, c.input_dtype(0), {OPH_DIM_UNKNOWN, OPH_DIM_UNKNOWN});
    return;
  }
  GemmShape s = gemm_shape(c.input_shape(0), c.input_shape(1), ta, tb);
  if (c.has_input(2) && c.input_rank_known(2)) gemm_check_c(c.input_shape(2), s.M, s.N);
  c.set_output(0, c.input_dtype(0), {s.M, s.N});
}

struct GemmKernel {
  float alpha, beta;
  bool ta, tb;
  // alpha * B' packed when B is a constant float32 matrix and A is not transposed; beta * C as a bias row when
  // C is a constant with one value per column (or one value).
  gemm_packed::PackedB packed;
  std::vector<float> bias;
  explicit GemmKernel(const oph::KernelInit& init)
      : alpha(init.attr<float>("alpha")),
        beta(init.attr<float>("beta")),
        ta(flag_attr(init.attr<int64_t>("transA"), "Gemm", "transA")),
        tb(flag_attr(init.attr<int64_t>("transB"), "Gemm", "transB")) {
    const oph_value_info& b = init.input(1);
    const float* w = constant_f32(b);
    if (ta || !w || b.ndim != 2 || b.shape[0] <= 0 || b.shape[1] <= 0) return;
    const size_t K = static_cast<size_t>(tb ? b.shape[1] : b.shape[0]), N = static_cast<size_t>(tb ? b.shape[0] : b.shape[1]);
    packed = gemm_packed::pack(w, K, N, tb, alpha);
    if (init.num_inputs() > 2) {
      const oph_value_info& c = init.input(2);
      const float* cv = constant_f32(c);
      const size_t n = cv ? oph::numel({c.shape, static_cast<size_t>(std::max(c.ndim, 0))}) : 0;
      const bool row = c.ndim >= 1 && c.ndim <= 2 && (c.ndim == 1 || c.shape[0] == 1);
      if (cv && (n == 1 || (row && n == N))) {
        bias.resize(N);
        for (size_t j = 0; j < N; ++j) bias[j] = beta * cv[n == 1 ? 0 : j];
      }
    }
  }
  oph::Implementation implementation() {
    if (packed.empty()) return {"oneDNN sgemm (float32; float64: loops)", false};
    return {std::string("packed B, Highway ") + gemm_packed::target_name(), false};
  }

  void compute(oph::KernelContext& ctx) {
    oph::TensorRef a = input(ctx, 0, "Gemm"), b = input(ctx, 1, "Gemm");
    oph::TensorRef c = ctx.input(2);
    if (c.present()) check_compact(c, "Gemm");
    GemmShape s = gemm_shape(a.shape(), b.shape(), ta, tb);
    std::vector<int64_t> oshape = {s.M, s.N};
    oph::TensorRef y = ensure_output(ctx, 0, oshape, "Gemm");
    if (!y.present()) return;
    if (!packed.empty() && a.dtype() == f32 && static_cast<size_t>(s.K) == packed.rows() &&
        static_cast<size_t>(s.N) == packed.cols() && (!c.present() || !bias.empty())) {
      if (s.M > 0)
        run_packed(packed, static_cast<const float*>(a.data()), static_cast<size_t>(s.M),
                   static_cast<float*>(y.data()), bias.empty() ? nullptr : bias.data());
      return;
    }
    // Strides of C broadcast to [M, N].
    size_t cs_i = 0, cs_j = 0;
    if (c.present()) {
      if (c.dtype() != a.dtype()) fail("Gemm: A, B and C must have the same dtype");
      auto cs = c.shape();
      gemm_check_c(cs, s.M, s.N);
      if (cs.size() >= 1 && cs.back() != 1) cs_j = 1;
      if (cs.size() == 2 && cs[0] != 1) cs_i = static_cast<size_t>(cs[1]);
    }
    const size_t M = s.M, K = s.K, N = s.N;
    if (M == 0 || N == 0) return;
    if (a.dtype() == f32) {
      float* Y = static_cast<float*>(y.data());
      const float* Cp = c.present() ? static_cast<const float*>(c.data()) : nullptr;
      if (Cp) {
        for (size_t i = 0; i < M; ++i)
          for (size_t j = 0; j < N; ++j) Y[i * N + j] = beta * Cp[i * cs_i + j * cs_j];
      }
      if (K == 0) {
        if (!Cp) std::fill(Y, Y + M * N, 0.0f);
        return;
      }
      set_dnnl_threads();
      sgemm(ta, tb, M, N, K, alpha, static_cast<const float*>(a.data()), static_cast<const float*>(b.data()),
            Cp ? 1.0f : 0.0f, Y);
      return;
    }
    dispatch_float(a.dtype(), "Gemm", [&]<class T>(std::type_identity<T>) {
      const T* A = static_cast<const T*>(a.data());
      const T* B = static_cast<const T*>(b.data());
      const T* Cp = c.present() ? static_cast<const T*>(c.data()) : nullptr;
      T* Y = static_cast<T*>(y.data());
      const T al = static_cast<T>(alpha), be = static_cast<T>(beta);
      const bool ta_ = ta, tb_ = tb;
      size_t grain = std::max<size_t>(1, kGrain / std::max<size_t>(1, K * N));
      parallel_for(M, grain, [=](size_t lo, size_t hi) {
        for (size_t i = lo; i < hi; ++i) {
          T* yr = Y + i * N;
          if (!tb_) {
            for (size_t j = 0; j < N; ++j) yr[j] = T(0);
            for (size_t k = 0; k < K; ++k) {
              const T aik = ta_ ? A[k * M + i] : A[i * K + k];
              const T* br = B + k * N;
              for (size_t j = 0; j < N; ++j) yr[j] += aik * br[j];
            }
          } else {
            for (size_t j = 0; j < N; ++j) {
              const T* br = B + j * K;
              T acc = T(0);
              if (ta_)
                for (size_t k = 0; k < K; ++k) acc += A[k * M + i] * br[k];
              else
                for (size_t k = 0; k < K; ++k) acc += A[i * K + k] * br[k];
              yr[j] = acc;
            }
          }
          if (Cp) {
            const T* cr = Cp + i * cs_i;
            for (size_t j = 0; j < N; ++j) yr[j] = al * yr[j] + be * cr[j * cs_j];
          } else if (al != T(1)) {
            for (size_t j = 0; j < N; ++j) yr[j] *= al;
          }
        }
      });
    });
  }
};

void register_gemm(oph::Pack& pack, int32_t since, int32_t until, bool c_optional) {
  oph::OpBuilder& b = pack.op(kDomain, "Gemm")
                          .versions(since, until)
                          .doc("Y = alpha * A' * B' + beta * C (C unidirectionally broadcast)")
                          .attr("alpha", 1.0f)
                          .attr("beta", 1.0f)
                          .attr("transA", int64_t{0})
                          .attr("transB", int64_t{0})
                          .input("A", "T")
                          .input("B", "T");
  if (c_optional) b.optional_input("C", "T");
  else b.input("C", "T");
  b.output("Y", "T").infer(gemm_infer).kernel<GemmKernel>();
  add_types(b, "T", kFloat);
}

// ----- Einsum -----

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
    parallel_for(nout, 64, [&](size_t lo, size_t hi) {
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

// ----- Det -----

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

}  // namespace

void register_linalg(oph::Pack& pack) {
  {
    oph::OpBuilder& b = pack.op(kDomain, "MatMul")
                            .versions(1, OPH_OPSET_MAX)
                            .doc("numpy.matmul (batched, broadcast batch dims)")
                            .input("A", "T")
                            .input("B", "T")
                            .output("Y", "T")
                            .infer(matmul_infer)
                            .kernel<MatMulKernel>();
    add_types(b, "T", kFloat);
  }
  {
    oph::OpBuilder& b = pack.op("com.ophost", "FusedMatMul")
                            .versions(1, OPH_OPSET_MAX)
                            .doc("MatMul(A, B) + Bias over the last dim (Bias: one value per column of B), written by "
                                 "the host's matmul-bias-fusion pass")
                            .input("A", "T")
                            .input("B", "T")
                            .input("Bias", "T")
                            .output("Y", "T")
                            .infer(fused_matmul_infer)
                            .kernel<FusedMatMulKernel>()
                            .flags(OPH_OP_FLAG_ALLOW_FUSION);
    add_types(b, "T", kFloat);
  }
  // Gemm 7-10: C required; 11+: C optional. (1 and 6 have the legacy broadcast attribute: not claimed.)
  register_gemm(pack, 7, 10, false);
  register_gemm(pack, 11, OPH_OPSET_MAX, true);
  auto& e = pack.op(kDomain, "Einsum")
                .versions(12, OPH_OPSET_MAX)
                .doc("Einstein summation (general index loops)")
                .input("Inputs", "T", OPH_ARITY_VARIADIC, OPH_MEMORY_DEVICE, 1)
                .output("Output", "T")
                .required_attr("equation", OPH_ATTR_STRING)
                .infer(&einsum_infer)
                .compute(&einsum_compute);
  add_types(e, "T", kNumericAll);

  auto& d = pack.op(kDomain, "Det")
                .versions(11, OPH_OPSET_MAX)
                .doc("determinant of square matrices (LU with partial pivoting, double precision)")
                .input("X", "T")
                .output("Y", "T")
                .infer(&det_infer)
                .compute(&det_compute);
  add_types(d, "T", kFloat);
}

static const Family kFamily("linalg", &register_linalg);

}  // namespace onnx_core
