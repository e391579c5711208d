// onnx-core: MatMulInteger (10) and QLinearMatMul (10) on oneDNN's int8 matmul (uint8 activations, int8 weights,
// int32 accumulation; VNNI/AMX where the CPU has them).
//
// The fast form is the one quantizers write: B a constant matrix [K, N] (or vector [K]) with zero points of 0
// (int8) or 128 (uint8), A [..., M, K] with one zero point; A's leading dimensions are folded into M. B is
// prepared once (quant_dnnl.hpp: shifted to int8) and reordered into the primitive's layout when it is built;
// where this ISA's kernels would saturate, A's rows are split in two instead of B (split_a_). An int8 A is shifted to uint8 (a + 128, zero point + 128:
// (a - zp) is unchanged), since oneDNN's uint8 path is the one with jit kernels on every ISA. QLinearMatMul
// requantizes the int32 products exactly as ONNX does (quant_simd::requantize_cols: per-column scales
// a_scale * b_scale[n] / y_scale). Other forms (B not constant or batched, per-row zero points, other weight zero
// points) run the reference loops of quant_ref.cpp, reported as reference.
#include "common.hpp"
#include "dnnl_util.hpp"
#include "quant_dnnl.hpp"
#include "quant_ref.hpp"
#include "quant_simd.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <map>
#include <memory>
#include <mutex>

namespace onnx_core {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

// The product as a 1x1 convolution over a [1, K, rows, 1] channels-last image (A [rows, K] as it is; the result
// [1, N, rows, 1] channels-last is Y [rows, N]; B [K, N] is the weights' hwio layout): oneDNN 2.6's int8 1x1
// convolution kernels run 4-8x faster than its int8 matmul (gemm:jit) for a few rows (a decoder's step, M = 1) and
// as fast for many.
struct MMPrim {
  int64_t rows = 0;
  dnnl::convolution_forward mm;
  memory wei;
  size_t scratch_bytes = 0;
  std::string impl;
};

class QMatMulKernel {
 public:
  QMatMulKernel(const oph::KernelInit& init, bool qlinear)
      : qlinear_(qlinear), op_(qlinear ? "QLinearMatMul" : "MatMulInteger") {
    const size_t bi = qlinear ? 3 : 1, bzi = qlinear ? 5 : 3;
    const oph_value_info& b = init.input(bi);
    a_dtype_ = init.input(0).dtype;
    // What can be known at load is checked at load (constant scales and zero points, their types and lengths).
    const size_t ncols = b.ndim == 2 && b.shape[1] > 0 ? static_cast<size_t>(b.shape[1]) : 0;
    if (qlinear) {
      quant::check_const_scale(init.input(4), op_, "b_scale", ncols);
      quant::check_const_scale(init.input(6), op_, "y_scale", 0);
      quant::check_const_zero_point(init.input(2), a_dtype_, op_, "a_zero_point", 0);
      quant::check_const_zero_point(init.input(5), b.dtype, op_, "b_zero_point", ncols);
    } else if (init.num_inputs() > 3) {
      quant::check_const_zero_point(init.input(3), b.dtype, op_, "b_zero_point", ncols);
    }
    std::string why;
    const auto bzp = init.num_inputs() > bzi ? quant::constant_ints(init.input(bzi)) : std::vector<int32_t>{};
    if (!b.constant) why = "B is not a constant";
    else if (b.constant->ndim < 1 || b.constant->ndim > 2) why = "B is not a matrix or vector";
    else if (!bzp) why = "b_zero_point is not a constant";
    else {
      const oph_tensor* t = b.constant;
      K_ = t->shape[0];
      N_ = t->ndim == 2 ? t->shape[1] : 1;
      b1d_ = t->ndim == 1;
      if (!bzp->empty() && bzp->size() != 1 && bzp->size() != static_cast<size_t>(N_))
        fail(op_ + ": b_zero_point must be a scalar or have one value per column of B (" + std::to_string(N_) +
             "), got " + std::to_string(bzp->size()));
      // Never split B: where this ISA's kernels could saturate, A is split instead (split_a_, below), which reads
      // B once per run instead of twice (a decoder's step is bound by reading B).
      const auto prepared = quant::int8_weights(static_cast<const char*>(t->data) + t->byte_offset, t->dtype,
                                                static_cast<size_t>(K_ * N_), *bzp, /*may_split=*/false);
      if (!prepared) {
        why = "b_zero_point is not 0 (int8 B) or 128 (uint8 B), which oneDNN needs";
      } else {
        w_ = *prepared;
        split_a_ = !w_.fits7 && !quant::int8_exact_isa();
        col_sums_.assign(static_cast<size_t>(N_), 0);
        for (int64_t k = 0; k < K_; ++k)
          for (int64_t n = 0; n < N_; ++n) col_sums_[static_cast<size_t>(n)] += w_.w1[static_cast<size_t>(k * N_ + n)];
      }
    }
    if (!why.empty()) {
      reference_ = true;
      oph::log(OPH_LOG_INFO, op_ + " '" + init.node_name() + "': reference loops, since " + why);
      return;
    }
    const oph_value_info& a = init.input(0);
    if (a.ndim >= 1 && all_known({a.shape, static_cast<size_t>(a.ndim)})) {
      const int64_t rows = a.ndim == 1 ? 1 : oph::numel({a.shape, static_cast<size_t>(a.ndim - 1)});
      cache_[rows] = build(rows);
    }
  }

  void compute(oph::KernelContext& ctx) {
    if (reference_) return qlinear_ ? quant::qlinear_matmul_ref(ctx) : quant::matmul_integer_ref(ctx);
    oph::TensorRef A = input(ctx, 0, op_);
    if (!(A.dtype() == a_dtype_))
      fail(op_ + ": A is " + oph::dtype_name(A.dtype()) + ", the node was built for " + oph::dtype_name(a_dtype_));
    std::vector<int64_t> bshape = b1d_ ? std::vector<int64_t>{K_} : std::vector<int64_t>{K_, N_};
    const quant::MatMulPlan plan = quant::matmul_plan(A.shape(), bshape, op_);
    const int64_t rows = A.ndim() == 1 ? 1 : oph::numel(A.shape().first(A.ndim() - 1));
    oph::TensorRef Y = ensure_output(ctx, 0, plan.out, op_);
    if (!Y.present() || rows == 0 || N_ == 0) return;
    const size_t R = static_cast<size_t>(rows), N = static_cast<size_t>(N_), K = static_cast<size_t>(K_);

    const oph::TensorRef az = ctx.input(2);
    int32_t a_zp = 0;
    if (az.present()) {
      if (az.size() != 1)
        fail(op_ + ": a_zero_point must be a scalar here (per-row zero points run only in the reference loops), got "
                   "shape " + shape_str(az.shape()), OPH_CODE_UNIMPLEMENTED);
      if (!(az.dtype() == A.dtype())) fail(op_ + ": a_zero_point must have A's dtype " + oph::dtype_name(A.dtype()));
      a_zp = quant::int_at(az, 0);
    }
    std::shared_ptr<const MMPrim> p;
    {
      std::lock_guard lock(mu_);
      if (auto it = cache_.find(rows); it != cache_.end()) p = it->second;
    }
    if (!p) {
      auto built = build(rows);
      std::lock_guard lock(mu_);
      if (cache_.size() > 16) cache_.clear();  // dynamic shapes: keep the cache bounded
      p = cache_.emplace(rows, built).first->second;
    }

    auto& eng = cpu_engine();
    thread_local dnnl::stream stream(eng);
    thread_local Scratch a_buf, a_buf2, acc_buf, acc2_buf, scratch_buf;
    set_dnnl_threads();
    const void* a = A.data();
    const uint8_t flip = A.dtype() == i8 ? 0x80u : 0;  // int8 A runs as uint8: a + 128, zero point + 128
    a_zp += flip;
    if (flip && !split_a_) {  // (the split below flips as it goes)
      uint8_t* u = reinterpret_cast<uint8_t*>(a_buf.get(R * K));
      quant::int8_as_uint8(A.data(), u, R * K);
      a = u;
    }
    int32_t* acc = qlinear_ ? reinterpret_cast<int32_t*>(acc_buf.get(R * N * sizeof(int32_t)))
                            : static_cast<int32_t*>(Y.data());
    // Split A (see split_a_): row r becomes rows 2r (a >> 1, at most 127) and 2r + 1 (a & 1), run without a zero
    // point; acc = 2 * acc[2r] + acc[2r + 1] - a_zp * (column sums of B) afterwards.
    const int64_t prim_rows = split_a_ ? 2 * rows : rows;
    int32_t* prim_acc = acc;
    if (split_a_) {
      uint8_t* two = reinterpret_cast<uint8_t*>(a_buf2.get(2 * R * K));
      const uint8_t* s = static_cast<const uint8_t*>(a);
      parallel_for(R, std::max<size_t>(1, kGrain / K), [&](size_t lo, size_t hi) {
        for (size_t r = lo; r < hi; ++r) {
          // (restrict: uint8_t stores may alias anything, which keeps the compiler from vectorising the loop)
          const uint8_t* __restrict in = s + r * K;
          uint8_t* __restrict out_h = two + 2 * r * K;
          uint8_t* __restrict out_l = out_h + K;
          for (size_t k = 0; k < K; ++k) {
            const uint8_t v = static_cast<uint8_t>(in[k] ^ flip);
            out_h[k] = static_cast<uint8_t>(v >> 1);
            out_l[k] = static_cast<uint8_t>(v & 1u);
          }
        }
      });
      a = two;
      prim_acc = reinterpret_cast<int32_t*>(acc2_buf.get(2 * R * N * sizeof(int32_t)));
    }
    memory src(memory::desc({1, K_, prim_rows, 1}, dt::u8, tag::nhwc), eng, const_cast<void*>(a));
    memory dst(memory::desc({1, N_, prim_rows, 1}, dt::s32, tag::nhwc), eng, prim_acc);
    quant::run_int8(p->mm, p->wei, nullptr, {}, src, dst, split_a_ ? 0 : a_zp, p->scratch_bytes, stream, scratch_buf);
    if (split_a_) {
      const int32_t* sums = col_sums_.data();
      parallel_for(R, std::max<size_t>(1, kGrain / N), [&](size_t lo, size_t hi) {
        for (size_t r = lo; r < hi; ++r) {
          const int32_t* hi_row = prim_acc + 2 * r * N;
          const int32_t* lo_row = hi_row + N;
          int32_t* out = acc + r * N;
          for (size_t n = 0; n < N; ++n) out[n] = 2 * hi_row[n] + lo_row[n] - a_zp * sums[n];
        }
      });
    }
    if (!qlinear_) return;

    oph::TensorRef as = input(ctx, 1, op_), bs = input(ctx, 4, op_), ys = input(ctx, 6, op_), yz = input(ctx, 7, op_);
    const size_t M = static_cast<size_t>(plan.M);
    if (as.size() != 1 && as.size() != M) fail(op_ + ": a_scale must be a scalar or have M=" + std::to_string(M) + " values");
    if (bs.size() != 1 && bs.size() != N) fail(op_ + ": b_scale must be a scalar or have N=" + std::to_string(N) + " values");
    if (ys.size() != 1 || yz.size() != 1) fail(op_ + ": y_scale and y_zero_point must be scalars");
    if (!(yz.dtype() == Y.dtype())) fail(op_ + ": y_zero_point must have y's dtype");
    const float y_scale = quant::float_at(ys, 0);
    const int32_t y_zp = quant::int_at(yz, 0);
    const bool y_signed = Y.dtype() == i8;
    char* y = static_cast<char*>(Y.data());
    thread_local std::vector<float> col_scales;
    col_scales.resize(N);
    if (as.size() == 1) {
      const float a_scale = quant::float_at(as, 0);
      for (size_t n = 0; n < N; ++n) col_scales[n] = a_scale * quant::float_at(bs, bs.size() == 1 ? 0 : n) / y_scale;
    }
    const bool per_row = as.size() != 1;
    const float* cols = col_scales.data();  // the calling thread's (thread_local) vector
    parallel_for(R, std::max<size_t>(1, kGrain / N), [&](size_t lo, size_t hi) {
      std::vector<float> row_scales;
      for (size_t r = lo; r < hi; ++r) {
        const float* sc = cols;
        if (per_row) {
          row_scales.resize(N);
          const float a_scale = quant::float_at(as, r % M);
          for (size_t n = 0; n < N; ++n) row_scales[n] = a_scale * quant::float_at(bs, bs.size() == 1 ? 0 : n) / y_scale;
          sc = row_scales.data();
        }
        quant_simd::requantize_cols(acc + r * N, N, nullptr, sc, y_zp, y_signed, y + r * N);
      }
    });
  }

  oph::Implementation implementation() {
    if (reference_) return {"reference loops (quant_ref.cpp)", true};
    std::lock_guard lock(mu_);
    oph::Implementation impl = dnnl_implementation(cache_, "oneDNN ");
    if (!impl.name.empty() && split_a_)
      impl.name += " on A split in two rows per row (this ISA's int8 kernels saturate 16-bit pair sums)";
    return impl;
  }

 private:
  std::shared_ptr<const MMPrim> build(int64_t rows) {
    auto p = std::make_shared<MMPrim>();
    p->rows = rows;
    if (split_a_) rows *= 2;
    auto& eng = cpu_engine();
    set_dnnl_threads();
    memory::desc src_md({1, K_, rows, 1}, dt::u8, tag::nhwc), wany({N_, K_, 1, 1}, dt::s8, tag::any),
        wuser({N_, K_, 1, 1}, dt::s8, tag::hwio), dst_md({1, N_, rows, 1}, dt::s32, tag::nhwc);
    dnnl::primitive_attr attr;
    attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                      src_md, wany, dst_md, {1, 1}, {0, 0}, {0, 0});
    dnnl::convolution_forward::primitive_desc pd(d, attr, eng);
    p->impl = pd.impl_info_str();
    p->scratch_bytes = pd.scratchpad_desc().get_size();
    p->mm = dnnl::convolution_forward(pd);
    p->wei = quant::reorder_int8_weights(w_.w1.data(), wuser, pd.weights_desc());
    return p;
  }

  bool qlinear_;
  std::string op_;
  oph_dtype a_dtype_{};
  int64_t K_ = 0, N_ = 0;
  bool b1d_ = false;
  quant::Int8Weights w_;
  // Where this ISA's int8 kernels could saturate (no VNNI, some |b| > 64): each row of A (uint8) runs as two rows,
  // a >> 1 (<= 127: 127 * 128 * 2 fits 16 bits) and a & 1, against B as it is; col_sums_ gives the zero point's
  // share.
  bool split_a_ = false;
  std::vector<int32_t> col_sums_;
  bool reference_ = false;
  std::mutex mu_;
  std::map<int64_t, std::shared_ptr<const MMPrim>> cache_;
};

struct MatMulIntegerK : QMatMulKernel {
  explicit MatMulIntegerK(const oph::KernelInit& i) : QMatMulKernel(i, false) {}
};
struct QLinearMatMulK : QMatMulKernel {
  explicit QLinearMatMulK(const oph::KernelInit& i) : QMatMulKernel(i, true) {}
};

void register_qmatmul(oph::Pack& pack) {
  auto& mi = pack.op(kDomain, "MatMulInteger")
                 .versions(10, OPH_OPSET_MAX)
                 .doc("integer matmul with zero points, int32 accumulation (oneDNN int8)")
                 .input("A", "T1")
                 .input("B", "T2")
                 .optional_input("a_zero_point", "T1")
                 .optional_input("b_zero_point", "T2")
                 .output("Y", "T3")
                 .types("T3", {i32})
                 .infer([](oph::InferContext& c) { quant::matmul_infer(c, 0, 1, i32); })
                 .kernel<MatMulIntegerK>();
  add_types(mi, "T1", {i8, u8});
  add_types(mi, "T2", {i8, u8});

  auto& qm = pack.op(kDomain, "QLinearMatMul")
                 .versions(10, OPH_OPSET_MAX)
                 .doc("quantized matmul (oneDNN int8, exact ONNX requantization)")
                 .input("a", "T1")
                 .input("a_scale", "tensor(float)")
                 .input("a_zero_point", "T1")
                 .input("b", "T2")
                 .input("b_scale", "tensor(float)")
                 .input("b_zero_point", "T2")
                 .input("y_scale", "tensor(float)")
                 .input("y_zero_point", "T3")
                 .output("y", "T3")
                 .types("tensor(float)", {f32})
                 .infer([](oph::InferContext& c) { quant::matmul_infer(c, 0, 3, c.input_dtype(7)); })
                 .kernel<QLinearMatMulK>();
  for (const char* t : {"T1", "T2", "T3"}) add_types(qm, t, {i8, u8});
}

}  // namespace

static const Family kFamily("qmatmul", &register_qmatmul);

}  // namespace onnx_core
