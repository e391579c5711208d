// onnx-core: MatMul (numpy-style batched), Gemm.
// float32 MatMul and Gemm run on oneDNN's sgemm (its OpenMP team sized by dnnl_threads(), as for Conv);
// float64 keeps the plain loops.
#include "common.hpp"
#include "dnnl_util.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

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
    ctx.parallel_for(rows, grain, [=](size_t lo, size_t hi) {
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
  explicit GemmKernel(const oph::KernelInit& init)
      : alpha(init.attr<float>("alpha")),
        beta(init.attr<float>("beta")),
        ta(flag_attr(init.attr<int64_t>("transA"), "Gemm", "transA")),
        tb(flag_attr(init.attr<int64_t>("transB"), "Gemm", "transB")) {}

  void compute(oph::KernelContext& ctx) {
    oph::TensorRef a = input(ctx, 0, "Gemm"), b = input(ctx, 1, "Gemm");
    oph::TensorRef c = ctx.input(2);
    if (c.present()) check_compact(c, "Gemm");
    GemmShape s = gemm_shape(a.shape(), b.shape(), ta, tb);
    std::vector<int64_t> oshape = {s.M, s.N};
    oph::TensorRef y = ensure_output(ctx, 0, oshape, "Gemm");
    if (!y.present()) return;
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
      ctx.parallel_for(M, grain, [=](size_t lo, size_t hi) {
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
                            .compute(matmul_compute);
    add_types(b, "T", kFloat);
  }
  // Gemm 7-10: C required; 11+: C optional. (1 and 6 have the legacy broadcast attribute: not claimed.)
  register_gemm(pack, 7, 10, false);
  register_gemm(pack, 11, OPH_OPSET_MAX, true);
}

static const Family kFamily("linalg", &register_linalg);

}  // namespace onnx_core
