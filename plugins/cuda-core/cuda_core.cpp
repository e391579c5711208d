// cuda-core: standard-domain ONNX ops on CUDA devices. MatMul and Gemm through cuBLAS (FP32 math, no TF32),
// Add and Mul (float, int32, int64; numpy broadcasting), Relu, Sigmoid, Softmax (opset 1-12 coerced to 2-D,
// 13+ one axis). Kernels are queued on the host's stream (ctx.stream()) on the node's device; nothing here
// synchronizes with the host. Shape inference matches onnx-core's, so placement can move a node between the
// CPU and CUDA kernels freely.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <ophost/ophost_plugin.hpp>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "cuda_core_kernels.hpp"

namespace oph = ophost::sdk;

namespace {

constexpr const char* kDomain = "";
constexpr const char* kDevice = "cuda";

[[noreturn]] void fail(const std::string& msg, int32_t code = OPH_CODE_INVALID_ARGUMENT) { throw oph::Error(code, msg); }

void check_launch(const char* err, const char* op) {
  if (err && *err) fail(std::string(op) + " on cuda: kernel launch failed: " + err, OPH_CODE_INTERNAL);
}

// Makes the node's device current on this thread (the host may call compute from any thread).
void select_device(const oph::KernelContext& ctx, const char* op) {
  int current = -1;
  const int want = ctx.device().device_id;
  if (cudaGetDevice(&current) == cudaSuccess && current == want) return;
  if (cudaError_t e = cudaSetDevice(want); e != cudaSuccess)
    fail(std::string(op) + ": cudaSetDevice(" + std::to_string(want) + ") failed: " + cudaGetErrorString(e),
         OPH_CODE_INTERNAL);
}

oph::TensorRef input(const oph::KernelContext& ctx, size_t i, const char* op) {
  oph::TensorRef t = ctx.input(i);
  if (!t.present()) fail(std::string(op) + ": input " + std::to_string(i) + " is missing");
  return t;
}

// Output 0 with `shape`: preallocated by the host, or allocated now when its shape was unknown at plan time.
oph::TensorRef output(const oph::KernelContext& ctx, std::span<const int64_t> shape) {
  oph::TensorRef y = ctx.output(0);
  if (y.present() && y.raw()->data == nullptr) y = ctx.allocate_output(0, shape);
  return y;
}

void add_float(oph::OpBuilder& b) { b.types("T", {oph::dtypes::f32}); }

// ----- Relu, Sigmoid -----

template <cuda_core::UnaryOp Op>
void unary_compute(oph::KernelContext& ctx, const char* name) {
  oph::TensorRef x = input(ctx, 0, name);
  oph::TensorRef y = output(ctx, x.shape());
  if (!y.present()) return;
  if (!(x.dtype() == oph::dtypes::f32)) fail(std::string(name) + ": cuda kernel supports float32 only");
  select_device(ctx, name);
  check_launch(cuda_core::unary(ctx.stream(), Op, static_cast<const float*>(x.data()), static_cast<float*>(y.data()),
                                x.size()),
               name);
}

template <cuda_core::UnaryOp Op>
void register_unary(oph::Pack& pack, const char* name, int32_t since, const char* doc) {
  oph::OpBuilder& b = pack.op(kDomain, name)
                          .device(kDevice)
                          .versions(since, OPH_OPSET_MAX)
                          .doc(doc)
                          .input("X", "T")
                          .output("Y", "T")
                          .infer(oph::same_as_input(0))
                          .compute([name](oph::KernelContext& ctx) { unary_compute<Op>(ctx, name); })
                          .may_inplace(0, 0);
  add_float(b);
}

// ----- Add, Mul -----

// Element strides of `shape` (right-aligned in an output of rank `rank`), 0 along broadcast dimensions.
void broadcast_strides(std::span<const int64_t> shape, std::span<const int64_t> out, int64_t* strides) {
  const size_t rank = out.size(), off = rank - shape.size();
  int64_t s = 1;
  for (size_t k = rank; k-- > 0;) {
    int64_t d = k < off ? 1 : shape[k - off];
    strides[k] = (d == 1 && out[k] != 1) ? 0 : s;
    s *= d;
  }
}

cuda_core::DType dtype_code(oph_dtype d, const char* op) {
  if (d == oph::dtypes::f32) return cuda_core::DType::kF32;
  if (d == oph::dtypes::i32) return cuda_core::DType::kI32;
  if (d == oph::dtypes::i64) return cuda_core::DType::kI64;
  fail(std::string(op) + ": cuda kernel supports float32, int32 and int64, got " + oph::dtype_name(d));
}

template <cuda_core::BinaryOp Op>
void binary_compute(oph::KernelContext& ctx, const char* name) {
  oph::TensorRef a = input(ctx, 0, name), b = input(ctx, 1, name);
  if (!(a.dtype() == b.dtype())) fail(std::string(name) + ": A and B must have the same dtype");
  oph::SmallShape out = oph::broadcast_small(a.shape(), b.shape());
  oph::TensorRef y = output(ctx, out.span());
  if (!y.present()) return;
  const size_t n = oph::numel(out.span());
  if (n == 0) return;
  cuda_core::DType t = dtype_code(a.dtype(), name);
  cuda_core::BinaryMode mode = cuda_core::BinaryMode::kGeneral;
  cuda_core::Broadcast bc;
  if (a.size() == n && b.size() == n) mode = cuda_core::BinaryMode::kSameShape;
  else if (a.size() == n && b.size() == 1) mode = cuda_core::BinaryMode::kScalarB;
  else if (b.size() == n && a.size() == 1) mode = cuda_core::BinaryMode::kScalarA;
  else {
    if (out.rank > static_cast<size_t>(cuda_core::kMaxRank)) fail(std::string(name) + ": rank above 16");
    bc.rank = static_cast<int>(out.rank);
    std::copy(out.dims, out.dims + out.rank, bc.dims);
    broadcast_strides(a.shape(), out.span(), bc.a_strides);
    broadcast_strides(b.shape(), out.span(), bc.b_strides);
  }
  select_device(ctx, name);
  check_launch(cuda_core::binary(ctx.stream(), Op, t, mode, a.data(), b.data(), y.data(), n, &bc), name);
}

template <cuda_core::BinaryOp Op>
void register_binary(oph::Pack& pack, const char* name, const char* doc) {
  pack.op(kDomain, name)
      .device(kDevice)
      .versions(7, OPH_OPSET_MAX)
      .doc(doc)
      .input("A", "T")
      .input("B", "T")
      .output("C", "T")
      .types("T", {oph::dtypes::f32, oph::dtypes::i32, oph::dtypes::i64})
      .infer(oph::broadcast_inputs())
      .compute([name](oph::KernelContext& ctx) { binary_compute<Op>(ctx, name); })
      .may_inplace(0, 0);
}

// ----- Softmax -----

int64_t softmax_axis(int64_t axis, int64_t rank, int32_t since) {
  if (rank == 0) fail("Softmax: input must have rank >= 1");
  const bool negative_ok = since >= 11;
  if (axis < -rank || axis >= rank || (!negative_ok && axis < 0))
    fail("Softmax: axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

struct SoftmaxKernel {
  int64_t axis;
  int32_t since;
  explicit SoftmaxKernel(const oph::KernelInit& init)
      : axis(init.attr<int64_t>("axis")), since(init.raw()->op->since_version) {
    if (init.input(0).ndim >= 0) softmax_axis(axis, init.input(0).ndim, since);
  }
  void compute(oph::KernelContext& ctx) {
    oph::TensorRef x = input(ctx, 0, "Softmax");
    oph::TensorRef y = output(ctx, x.shape());
    if (!y.present()) return;
    if (!(x.dtype() == oph::dtypes::f32)) fail("Softmax: cuda kernel supports float32 only");
    const int64_t ax = softmax_axis(axis, x.ndim(), since);
    const bool flatten = since < 13;  // opset 1-12: coerced to 2-D at axis
    size_t outer = 1, len = 1, inner = 1;
    for (int64_t k = 0; k < x.ndim(); ++k) {
      size_t d = static_cast<size_t>(x.shape()[static_cast<size_t>(k)]);
      if (k < ax) outer *= d;
      else if (k == ax || flatten) len *= d;
      else inner *= d;
    }
    select_device(ctx, "Softmax");
    check_launch(cuda_core::softmax(ctx.stream(), static_cast<const float*>(x.data()), static_cast<float*>(y.data()),
                                    outer, len, inner),
                 "Softmax");
  }
};

void register_softmax(oph::Pack& pack, int32_t since, int32_t until, int64_t default_axis, const char* doc) {
  oph::OpBuilder& b = pack.op(kDomain, "Softmax")
                          .device(kDevice)
                          .versions(since, until)
                          .doc(doc)
                          .attr("axis", default_axis)
                          .input("input", "T")
                          .output("output", "T")
                          .infer([since](oph::InferContext& c) {
                            if (c.input_rank_known(0))
                              softmax_axis(c.attr<int64_t>("axis"), static_cast<int64_t>(c.input_shape(0).size()), since);
                            oph::same_as_input(0)(c);
                          })
                          .kernel<SoftmaxKernel>();
  add_float(b);
}

// ----- cuBLAS -----

const char* cublas_text(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "cuBLAS error";
  }
}

void check_cublas(cublasStatus_t s, const char* op, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS)
    fail(std::string(op) + ": " + call + " failed: " + cublas_text(s) + " (" + std::to_string(static_cast<int>(s)) + ")",
         OPH_CODE_INTERNAL);
}

// One cuBLAS handle per device for the whole pack, created on first use. A handle holds one current stream,
// so calls are serialized by the lock (they only queue work; the GPU runs them asynchronously). Handles are
// never destroyed: at process exit the CUDA runtime may already be gone, and a handle is a few KB.
class Blas {
 public:
  class Lease {
   public:
    Lease(std::unique_lock<std::mutex> lock, cublasHandle_t h) : lock_(std::move(lock)), h_(h) {}
    cublasHandle_t get() const noexcept { return h_; }

   private:
    std::unique_lock<std::mutex> lock_;
    cublasHandle_t h_;
  };

  static Lease acquire(int device, void* stream, const char* op) {
    static std::mutex mutex;
    static std::vector<cublasHandle_t>* handles = new std::vector<cublasHandle_t>();
    std::unique_lock<std::mutex> lock(mutex);
    if (device < 0) fail(std::string(op) + ": bad device id", OPH_CODE_INTERNAL);
    if (handles->size() <= static_cast<size_t>(device)) handles->resize(static_cast<size_t>(device) + 1, nullptr);
    cublasHandle_t& h = (*handles)[static_cast<size_t>(device)];
    if (!h) {
      check_cublas(cublasCreate(&h), op, "cublasCreate");
      check_cublas(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST), op, "cublasSetPointerMode");
    }
    check_cublas(cublasSetStream(h, static_cast<cudaStream_t>(stream)), op, "cublasSetStream");
    return Lease(std::move(lock), h);
  }
};

// Row-major Y[M,N] = alpha * op(A) op(B) + beta * Y, as column-major Y^T = op(B)^T op(A)^T.
// A is stored [M,K] (or [K,M] when ta), B [K,N] (or [N,K] when tb).
struct GemmCall {
  int64_t m, n, k;
  bool ta = false, tb = false;
};

// ----- MatMul -----

struct MatMulGeometry {
  int64_t m = 1, n = 1, k = 1;
  bool a_vec = false, b_vec = false;
  std::vector<int64_t> batch, out;          // broadcast batch dims; output shape
  std::vector<int64_t> a_batch, b_batch;    // batch dims of each operand (padded left with 1)
};

MatMulGeometry matmul_geometry(std::span<const int64_t> a, std::span<const int64_t> b) {
  if (a.empty() || b.empty()) fail("MatMul: inputs must have rank >= 1");
  MatMulGeometry g;
  g.a_vec = a.size() == 1;
  g.b_vec = b.size() == 1;
  g.m = g.a_vec ? 1 : a[a.size() - 2];
  g.k = a.back();
  const int64_t kb = g.b_vec ? b[0] : b[b.size() - 2];
  g.n = g.b_vec ? 1 : b.back();
  if (g.k != kb && g.k >= 0 && kb >= 0)
    fail("MatMul: inner dimensions differ (" + std::to_string(g.k) + " vs " + std::to_string(kb) + ")");
  std::vector<int64_t> ab(a.begin(), a.end() - (g.a_vec ? 1 : 2)), bb(b.begin(), b.end() - (g.b_vec ? 1 : 2));
  g.batch = oph::broadcast_shapes(ab, bb);
  g.a_batch.assign(g.batch.size() - ab.size(), 1);
  g.a_batch.insert(g.a_batch.end(), ab.begin(), ab.end());
  g.b_batch.assign(g.batch.size() - bb.size(), 1);
  g.b_batch.insert(g.b_batch.end(), bb.begin(), bb.end());
  g.out = g.batch;
  if (!g.a_vec) g.out.push_back(g.m);
  if (!g.b_vec) g.out.push_back(g.n);
  return g;
}

void matmul_infer(oph::InferContext& c) {
  if (!c.input_rank_known(0) || !c.input_rank_known(1)) {
    c.set_output_unknown_rank(0, c.input_dtype(0));
    return;
  }
  c.set_output(0, c.input_dtype(0), matmul_geometry(c.input_shape(0), c.input_shape(1)).out);
}

void matmul_compute(oph::KernelContext& ctx) {
  oph::TensorRef a = input(ctx, 0, "MatMul"), b = input(ctx, 1, "MatMul");
  if (!(a.dtype() == oph::dtypes::f32) || !(b.dtype() == oph::dtypes::f32))
    fail("MatMul: cuda kernel supports float32 only");
  MatMulGeometry g = matmul_geometry(a.shape(), b.shape());
  oph::TensorRef y = output(ctx, g.out);
  if (!y.present()) return;
  const int64_t batches = static_cast<int64_t>(oph::numel(g.batch));
  if (batches == 0 || g.m == 0 || g.n == 0) return;
  select_device(ctx, "MatMul");
  const auto* A = static_cast<const float*>(a.data());
  const auto* B = static_cast<const float*>(b.data());
  auto* Y = static_cast<float*>(y.data());
  if (g.k == 0) {  // empty sum: zeros
    if (cudaError_t e = cudaMemsetAsync(Y, 0, oph::numel(g.out) * sizeof(float), static_cast<cudaStream_t>(ctx.stream()));
        e != cudaSuccess)
      fail(std::string("MatMul: cudaMemsetAsync failed: ") + cudaGetErrorString(e), OPH_CODE_INTERNAL);
    return;
  }
  const float one = 1.0f, zero = 0.0f;
  const int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
  const int64_t a_count = static_cast<int64_t>(oph::numel(g.a_batch)), b_count = static_cast<int64_t>(oph::numel(g.b_batch));
  Blas::Lease blas = Blas::acquire(ctx.device().device_id, ctx.stream(), "MatMul");
  // Column-major: Y^T[n,m] = B^T[n,k] A^T[k,m].
  if ((a_count == batches || a_count == 1) && (b_count == batches || b_count == 1)) {
    check_cublas(cublasSgemmStridedBatched(blas.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, B, n,
                                           b_count == 1 ? 0 : g.k * g.n, A, k, a_count == 1 ? 0 : g.m * g.k, &zero,
                                           Y, n, g.m * g.n, static_cast<int>(batches)),
                 "MatMul", "cublasSgemmStridedBatched");
    return;
  }
  // General batch broadcasting (e.g. [2,1,M,K] x [1,3,K,N]): one GEMM per output batch.
  const size_t r = g.batch.size();
  std::vector<int64_t> idx(r, 0);
  for (int64_t t = 0; t < batches; ++t) {
    int64_t rest = t, ao = 0, bo = 0, as = 1, bs = 1;
    for (size_t d = r; d-- > 0;) {
      idx[d] = rest % g.batch[d];
      rest /= g.batch[d];
      ao += (g.a_batch[d] == 1 ? 0 : idx[d]) * as;
      bo += (g.b_batch[d] == 1 ? 0 : idx[d]) * bs;
      as *= g.a_batch[d];
      bs *= g.b_batch[d];
    }
    check_cublas(cublasSgemm(blas.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, B + bo * g.k * g.n, n,
                             A + ao * g.m * g.k, k, &zero, Y + t * g.m * g.n, n),
                 "MatMul", "cublasSgemm");
  }
}

// ----- Gemm -----

struct GemmKernel {
  float alpha, beta;
  bool ta, tb;
  explicit GemmKernel(const oph::KernelInit& init)
      : alpha(init.attr<float>("alpha")),
        beta(init.attr<float>("beta")),
        ta(init.attr<int64_t>("transA") != 0),
        tb(init.attr<int64_t>("transB") != 0) {}

  void compute(oph::KernelContext& ctx) {
    oph::TensorRef a = input(ctx, 0, "Gemm"), b = input(ctx, 1, "Gemm");
    oph::TensorRef c = ctx.input(2);
    if (a.ndim() != 2 || b.ndim() != 2) fail("Gemm: A and B must be 2-D");
    const int64_t M = ta ? a.shape()[1] : a.shape()[0], K = ta ? a.shape()[0] : a.shape()[1];
    const int64_t Kb = tb ? b.shape()[1] : b.shape()[0], N = tb ? b.shape()[0] : b.shape()[1];
    if (K != Kb) fail("Gemm: inner dimensions differ (" + std::to_string(K) + " vs " + std::to_string(Kb) + ")");
    const int64_t out_shape[2] = {M, N};
    oph::TensorRef y = output(ctx, out_shape);
    if (!y.present() || M == 0 || N == 0) return;
    select_device(ctx, "Gemm");
    auto* Y = static_cast<float*>(y.data());
    float be = 0.0f;
    if (c.present() && beta != 0.0f && c.size() > 0) {
      // Y = broadcast(C), then GEMM accumulates with beta.
      if (c.ndim() > 2) fail("Gemm: C must have rank <= 2");
      cuda_core::Broadcast bc;
      bc.rank = 2;
      bc.dims[0] = M;
      bc.dims[1] = N;
      broadcast_strides(c.shape(), std::span<const int64_t>(out_shape, 2), bc.a_strides);
      for (size_t d = 0; d < c.shape().size(); ++d) {
        int64_t cd = c.shape()[d], od = out_shape[2 - c.shape().size() + d];
        if (cd != 1 && cd != od) fail("Gemm: C cannot be broadcast to [" + std::to_string(M) + "," + std::to_string(N) + "]");
      }
      check_launch(cuda_core::broadcast_copy(ctx.stream(), static_cast<const float*>(c.data()), Y,
                                             static_cast<size_t>(M * N), &bc),
                   "Gemm");
      be = beta;
    }
    if (K == 0) {
      // Y = beta * C (or 0): scale in place with a 1x1 "GEMM" would be overkill; use cublasSscal.
      Blas::Lease blas = Blas::acquire(ctx.device().device_id, ctx.stream(), "Gemm");
      if (be == 0.0f) {
        if (cudaMemsetAsync(Y, 0, static_cast<size_t>(M * N) * sizeof(float), static_cast<cudaStream_t>(ctx.stream())) !=
            cudaSuccess)
          fail("Gemm: cudaMemsetAsync failed", OPH_CODE_INTERNAL);
      } else {
        check_cublas(cublasSscal(blas.get(), static_cast<int>(M * N), &be, Y, 1), "Gemm", "cublasSscal");
      }
      return;
    }
    Blas::Lease blas = Blas::acquire(ctx.device().device_id, ctx.stream(), "Gemm");
    // Column-major Y^T[N,M] = op(B)^T op(A)^T; the column-major view of row-major storage is the transpose.
    check_cublas(cublasSgemm(blas.get(), tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                             static_cast<int>(N), static_cast<int>(M), static_cast<int>(K), &alpha,
                             static_cast<const float*>(b.data()), static_cast<int>(tb ? K : N),
                             static_cast<const float*>(a.data()), static_cast<int>(ta ? M : K), &be, Y,
                             static_cast<int>(N)),
                 "Gemm", "cublasSgemm");
  }
};

void gemm_infer(oph::InferContext& c) {
  const bool ta = c.attr<int64_t>("transA") != 0, tb = c.attr<int64_t>("transB") != 0;
  if (!c.input_rank_known(0) || !c.input_rank_known(1)) {
    c.set_output(0, c.input_dtype(0), {OPH_DIM_UNKNOWN, OPH_DIM_UNKNOWN});
    return;
  }
  auto a = c.input_shape(0), b = c.input_shape(1);
  if (a.size() != 2 || b.size() != 2) fail("Gemm: A and B must be 2-D");
  c.set_output(0, c.input_dtype(0), {ta ? a[1] : a[0], tb ? b[0] : b[1]});
}

void register_gemm(oph::Pack& pack, int32_t since, int32_t until, bool c_optional) {
  oph::OpBuilder& b = pack.op(kDomain, "Gemm")
                          .device(kDevice)
                          .versions(since, until)
                          .doc("Y = alpha * A' * B' + beta * C (cuBLAS; C unidirectionally broadcast)")
                          .attr("alpha", 1.0f)
                          .attr("beta", 1.0f)
                          .attr("transA", int64_t{0})
                          .attr("transB", int64_t{0})
                          .input("A", "T")
                          .input("B", "T");
  if (c_optional) b.optional_input("C", "T");
  else b.input("C", "T");
  b.output("Y", "T").infer(gemm_infer).kernel<GemmKernel>();
  add_float(b);
}

}  // namespace

OPH_PACK(pack) {
  register_unary<cuda_core::UnaryOp::kRelu>(pack, "Relu", 6, "Y = max(X, 0)");
  register_unary<cuda_core::UnaryOp::kSigmoid>(pack, "Sigmoid", 6, "Y = 1 / (1 + exp(-X))");
  register_binary<cuda_core::BinaryOp::kAdd>(pack, "Add", "C = A + B (multidirectional broadcasting)");
  register_binary<cuda_core::BinaryOp::kMul>(pack, "Mul", "C = A * B (multidirectional broadcasting)");
  register_softmax(pack, 1, 10, 1, "softmax over the input coerced to 2-D at axis (default 1)");
  register_softmax(pack, 11, 12, 1, "softmax over the input coerced to 2-D at axis (default 1)");
  register_softmax(pack, 13, OPH_OPSET_MAX, -1, "softmax along axis (default -1)");
  {
    oph::OpBuilder& b = pack.op(kDomain, "MatMul")
                            .device(kDevice)
                            .versions(1, OPH_OPSET_MAX)
                            .doc("numpy.matmul through cuBLAS (batched, broadcast batch dims)")
                            .input("A", "T")
                            .input("B", "T")
                            .output("Y", "T")
                            .infer(matmul_infer)
                            .compute(matmul_compute);
    add_float(b);
  }
  register_gemm(pack, 7, 10, false);
  register_gemm(pack, 11, OPH_OPSET_MAX, true);
}
