// onnx-core: ConvInteger (10) and QLinearConv (10) on oneDNN's int8 convolutions (uint8/int8 activations, int8
// weights, int32 accumulation; VNNI/AMX where the CPU has them, the AVX2 kernels elsewhere).
//
// Per node, once: the constant weights become int8 with a zero point of 0 (quant_dnnl.hpp: uint8 weights with
// zero point 128 are shifted; split in two on ISAs whose kernels would saturate) and are reordered into each
// primitive's layout when it is built (at load for static shapes). Per run: X (NC[D]HW) is reordered to
// channels-last, the convolution accumulates (x - x_zero_point) * w in int32 (oneDNN's run-time source zero
// point; padding contributes 0, as ONNX's x == x_zero_point there), and the int32 result is transposed back to
// NC[D]HW: ConvInteger's output, or QLinearConv's after the exact ONNX requantization (quant_simd::requantize:
// round half to even of (acc + B) * x_scale * w_scale / y_scale, plus y_zero_point, saturated).
// Forms oneDNN cannot run exactly (other weight zero points, weights that are not constant) run the reference
// loops of quant_ref.cpp, reported as reference by `ophost inspect --kernels` and logged at load.
#include "common.hpp"
#include "dnnl_util.hpp"
#include "quant_dnnl.hpp"
#include "quant_ref.hpp"
#include "quant_simd.hpp"
#include "simd_math.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <optional>

namespace onnx_core {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

dt dnnl_type(oph_dtype d) { return d == i8 ? dt::s8 : dt::u8; }

struct QPrim {
  quant::QConvGeom g;
  std::vector<int64_t> out_shape;
  int64_t N = 0, C = 0, M = 0, P = 0;  // batch, input channels, output channels, output pixels per image
  // Output channels in the accumulator: G groups of Mgp channels, the first Mg of each real (Mgp > Mg: a grouped
  // convolution padded with zero filters to 8 per group, for which oneDNN has jit kernels on AVX2).
  int64_t G = 1, Mg = 0, Mgp = 0;
  bool reorder_src = false;            // X's NC[D]HW differs from the channels-last layout the kernel reads
  memory::desc user_src, src_md, dst_md;  // src_md: uint8, channels-last; dst_md: int32, channels-last
  memory::desc staged_md;                  // X's dtype, channels-last: what the reorder writes
  dnnl::reorder src_r;
  dnnl::convolution_forward conv1, conv2;  // conv2: the second weight half, summed into conv1's result
  memory wei1, wei2;
  size_t scratch_bytes = 0;
  std::string impl;
};

class QConvKernel {
 public:
  QConvKernel(const oph::KernelInit& init, bool qlinear)
      : qlinear_(qlinear), op_(qlinear ? "QLinearConv" : "ConvInteger"),
        attrs_(init.raw()->op, init.raw()->attrs, init.raw()->num_attrs) {
    const size_t wi = qlinear ? 3 : 1, wzi = qlinear ? 5 : 3;
    const oph_value_info& x = init.input(0);
    const oph_value_info& w = init.input(wi);
    x_dtype_ = x.dtype;
    // What can be known at load is checked at load (constant scales and zero points, their types and lengths).
    const size_t M = w.ndim >= 1 && w.shape[0] > 0 ? static_cast<size_t>(w.shape[0]) : 0;
    if (qlinear) {
      quant::check_const_scale(init.input(1), op_, "x_scale", 0);
      quant::check_const_scale(init.input(4), op_, "w_scale", M);
      quant::check_const_scale(init.input(6), op_, "y_scale", 0);
      quant::check_const_zero_point(init.input(2), x.dtype, op_, "x_zero_point", 0);
      quant::check_const_zero_point(init.input(5), w.dtype, op_, "w_zero_point", M);
    } else {
      if (init.num_inputs() > 2) quant::check_const_zero_point(init.input(2), x.dtype, op_, "x_zero_point", 0);
      if (init.num_inputs() > 3) quant::check_const_zero_point(init.input(3), w.dtype, op_, "w_zero_point", M);
    }
    std::string why;
    const auto wzp = init.num_inputs() > wzi ? quant::constant_ints(init.input(wzi)) : std::vector<int32_t>{};
    if (!w.constant) why = "its weights are not a constant";
    else if (!wzp) why = "its weight zero point is not a constant";
    else if (x.ndim >= 0 && (x.ndim < 3 || x.ndim > 5)) why = "oneDNN takes 1-3 spatial dimensions";
    else {
      const oph_tensor* t = w.constant;
      w_shape_.assign(t->shape, t->shape + t->ndim);
      const size_t n = oph::numel(w_shape_);
      // Depthwise (one input and one output channel per group): oneDNN's kernel adds each product in 32 bits,
      // exact on every ISA, so its weights are never split.
      const int64_t group = attrs_.view().get<int64_t>("group");
      const bool depthwise = t->ndim >= 3 && t->shape[1] == 1 && group > 1 && t->shape[0] == group;
      const auto prepared = quant::int8_weights(static_cast<const char*>(t->data) + t->byte_offset, t->dtype, n,
                                                *wzp, !depthwise);
      if (!prepared)
        why = "its weight zero point is not 0 (int8 weights) or 128 (uint8 weights), which oneDNN needs";
      else
        w_ = *prepared;
    }
    if (!why.empty()) {
      reference_ = true;
      oph::log(OPH_LOG_INFO, op_ + " '" + init.node_name() + "': reference loops, since " + why);
      return;
    }
    if (x.ndim >= 3 && all_known({x.shape, static_cast<size_t>(x.ndim)})) {
      std::vector<int64_t> key(x.shape, x.shape + x.ndim);
      cache_[key] = build(key);
    }
  }

  void compute(oph::KernelContext& ctx) {
    if (reference_) return qlinear_ ? quant::qlinear_conv_ref(ctx) : quant::conv_integer_ref(ctx);
    oph::TensorRef X = input(ctx, 0, op_);
    if (!(X.dtype() == x_dtype_)) fail(op_ + ": X is " + oph::dtype_name(X.dtype()) + ", the node was built for " + oph::dtype_name(x_dtype_));
    std::vector<int64_t> key(X.shape().begin(), X.shape().end());
    std::shared_ptr<const QPrim> p;
    {
      std::lock_guard lock(mu_);
      if (auto it = cache_.find(key); it != cache_.end()) p = it->second;
    }
    if (!p) {
      auto built = build(key);
      if (is_reference_impl(built->impl))
        oph::log(OPH_LOG_WARN, op_ + " on X " + shape_str(key) + ": oneDNN has only reference code (" + built->impl +
                                   ") for this convolution on this CPU; expect it to be 10-100x slower");
      std::lock_guard lock(mu_);
      if (cache_.size() > 16) cache_.clear();  // dynamic shapes: keep the cache bounded
      p = cache_.emplace(key, built).first->second;
    }
    oph::TensorRef Y = ensure_output(ctx, 0, p->out_shape, op_);
    if (!Y.present() || oph::numel(p->out_shape) == 0) return;

    // Zero points and scales (validated here: they may be computed at run time).
    const oph::TensorRef xz = ctx.input(2);
    int32_t x_zp = 0;
    if (xz.present()) {
      if (xz.size() != 1) fail(op_ + ": x_zero_point must be a scalar (one value), got shape " + shape_str(xz.shape()));
      if (!(xz.dtype() == X.dtype())) fail(op_ + ": x_zero_point must have X's dtype " + oph::dtype_name(X.dtype()));
      x_zp = quant::int_at(xz, 0);
    }
    const size_t M = static_cast<size_t>(p->M), P = static_cast<size_t>(p->P), N = static_cast<size_t>(p->N);
    thread_local std::vector<float> scales;
    thread_local std::vector<int32_t> bias;
    int32_t y_zp = 0;
    bool y_signed = false;
    if (qlinear_) {
      oph::TensorRef xs = input(ctx, 1, op_), ws = input(ctx, 4, op_), ys = input(ctx, 6, op_), yz = input(ctx, 7, op_);
      if (xs.size() != 1 || ys.size() != 1 || yz.size() != 1)
        fail(op_ + ": x_scale, y_scale and y_zero_point must be scalars");
      if (ws.size() != 1 && ws.size() != M)
        fail(op_ + ": w_scale must be a scalar or have one value per output channel (" + std::to_string(M) + "), got " +
             std::to_string(ws.size()));
      if (!(yz.dtype() == Y.dtype())) fail(op_ + ": y_zero_point must have y's dtype");
      const float x_scale = quant::float_at(xs, 0), y_scale = quant::float_at(ys, 0);
      scales.resize(M);
      for (size_t m = 0; m < M; ++m) scales[m] = x_scale * quant::float_at(ws, ws.size() == 1 ? 0 : m) / y_scale;
      y_zp = quant::int_at(yz, 0);
      y_signed = Y.dtype() == i8;
      bias.assign(M, 0);
      if (oph::TensorRef B = ctx.input(8); B.present()) {
        if (B.size() != M || !(B.dtype() == i32))
          fail(op_ + ": B must be int32 with one value per output channel (" + std::to_string(M) + ")");
        std::memcpy(bias.data(), B.data(), M * sizeof(int32_t));
      }
    }

    auto& eng = cpu_engine();
    thread_local dnnl::stream stream(eng);
    thread_local Scratch src_buf, acc_buf, scratch_buf;
    set_dnnl_threads();
    memory user_src(p->user_src, eng, X.data());
    memory src(p->src_md, eng, X.data());
    const bool shift = x_dtype_ == i8;  // int8 X runs as uint8: x + 128, zero point + 128 (see build)
    if (p->reorder_src || shift) {
      uint8_t* staged = reinterpret_cast<uint8_t*>(src_buf.get(p->src_md.get_size()));
      const void* from = X.data();
      if (p->reorder_src) {
        memory to(p->staged_md, eng, staged);
        p->src_r.execute(stream, user_src, to);
        stream.wait();
        from = staged;
      }
      if (shift) {
        quant::int8_as_uint8(from, staged, p->src_md.get_size());
        x_zp += 128;
      }
      src = memory(p->src_md, eng, staged);
    }
    const bool padded = p->Mgp != p->Mg;
    const size_t Mp = static_cast<size_t>(p->G * p->Mgp);  // channels in the accumulator
    const bool direct_out = !qlinear_ && !padded && (M == 1 || P == 1);  // ConvInteger: NCHW == NHWC here
    int32_t* acc = direct_out ? static_cast<int32_t*>(Y.data())
                              : reinterpret_cast<int32_t*>(acc_buf.get(N * Mp * P * sizeof(int32_t)));
    memory dst(p->dst_md, eng, acc);
    quant::run_int8(p->conv1, p->wei1, p->wei2 ? &p->conv2 : nullptr, p->wei2, src, dst, x_zp, p->scratch_bytes, stream,
                    scratch_buf);
    if (direct_out) return;

    if (!qlinear_ && !padded) {  // int32 [N, P, M] -> [N, M, P] (NC[D]HW) into Y
      int32_t* y = static_cast<int32_t*>(Y.data());
      parallel_for(N, 1, [&](size_t lo, size_t hi) {
        for (size_t n = lo; n < hi; ++n)
          simd_math::transpose32(reinterpret_cast<const uint32_t*>(acc + n * P * M), M,
                                 reinterpret_cast<uint32_t*>(y + n * M * P), P, P, M);
      });
      return;
    }
    // The int32 [N, P, Mp] requantized (QLinearConv) or copied (ConvInteger) into Y [N, M, P], a tile of pixels at a
    // time (transposed into a small buffer, then row by row): acc is read once, Y written once.
    char* y = static_cast<char*>(Y.data());
    const float* sc = scales.data();  // the calling thread's (thread_local) vectors, read by the team's threads
    const int32_t* bi = bias.data();
    if (qlinear_ && !padded && M == 1) {  // the layouts coincide: one channel, [N, P]
      parallel_for(N * P, kGrain, [&](size_t lo, size_t hi) {
        quant_simd::requantize(acc + lo, hi - lo, bi[0], sc[0], y_zp, y_signed, y + lo);
      });
      return;
    }
    if (qlinear_ && !padded && P == 1) {  // the layouts coincide: one pixel, [N, M] rows of per-channel scales
      parallel_for(N, 1, [&](size_t lo, size_t hi) {
        for (size_t n = lo; n < hi; ++n) quant_simd::requantize_cols(acc + n * M, M, bi, sc, y_zp, y_signed, y + n * M);
      });
      return;
    }
    constexpr size_t kTile = 64;
    const size_t tiles = (P + kTile - 1) / kTile;
    const size_t G = static_cast<size_t>(p->G), Mg = static_cast<size_t>(p->Mg), Mgp = static_cast<size_t>(p->Mgp);
    const bool qlinear = qlinear_;
    parallel_for(N * tiles, std::max<size_t>(1, kGrain / (kTile * Mp)), [&](size_t lo, size_t hi) {
      thread_local Scratch tile_buf;
      int32_t* t = reinterpret_cast<int32_t*>(tile_buf.get(Mp * kTile * sizeof(int32_t)));
      for (size_t k = lo; k < hi; ++k) {
        const size_t n = k / tiles, p0 = (k % tiles) * kTile, len = std::min(kTile, P - p0);
        simd_math::transpose32(reinterpret_cast<const uint32_t*>(acc + (n * P + p0) * Mp), Mp,
                               reinterpret_cast<uint32_t*>(t), kTile, len, Mp);
        for (size_t g = 0; g < G; ++g) {
          const int32_t* rows = t + g * Mgp * kTile;
          const size_t m0 = g * Mg;
          if (qlinear) {
            quant_simd::requantize_tile(rows, Mg, kTile, len, bi + m0, sc + m0, y_zp, y_signed,
                                        y + ((n * M + m0) * P + p0), P);
          } else {
            int32_t* yi = reinterpret_cast<int32_t*>(y);
            for (size_t j = 0; j < Mg; ++j)
              std::memcpy(yi + (n * M + m0 + j) * P + p0, rows + j * kTile, len * sizeof(int32_t));
          }
        }
      }
    });
  }

  oph::Implementation implementation() {
    if (reference_) return {"reference loops (quant_ref.cpp)", true};
    std::lock_guard lock(mu_);
    oph::Implementation impl = dnnl_implementation(cache_, "oneDNN ");
    if (!impl.name.empty() && w_.split())
      impl.name += " x2 (weights split in halves: this ISA's int8 kernels saturate 16-bit pair sums)";
    return impl;
  }

 private:
  static memory::dims to_dims(std::span<const int64_t> s) { return memory::dims(s.begin(), s.end()); }

  std::shared_ptr<const QPrim> build(const std::vector<int64_t>& xs) {
    auto p = std::make_shared<QPrim>();
    p->g = quant::conv_geom(attrs_.view(), xs, w_shape_, op_);
    const auto& g = p->g;
    p->out_shape = g.out;
    const size_t sp = xs.size() - 2;
    p->N = xs[0];
    p->C = xs[1];
    p->M = w_shape_[0];
    p->P = oph::numel(std::span<const int64_t>(g.out).subspan(2));
    if (p->M % g.group) fail(op_ + ": W's output channels are not divisible by group");
    const tag plain = sp == 1 ? tag::ncw : sp == 2 ? tag::nchw : tag::ncdhw;
    const tag last = sp == 1 ? tag::nwc : sp == 2 ? tag::nhwc : tag::ndhwc;
    // An int8 X is shifted to uint8 (x + 128, zero point + 128: x - zp unchanged) before the convolution: oneDNN's
    // int8-source path without VNNI halves the weights ("scale adjust") and is not exact, and its depthwise
    // kernel was wrong for int8 sources (tests/data/onnx_core/make_quant_cases.py).
    const dt xdt = dnnl_type(x_dtype_);
    p->user_src = memory::desc(to_dims(xs), xdt, plain);
    p->staged_md = memory::desc(to_dims(xs), xdt, last);
    p->src_md = memory::desc(to_dims(xs), dt::u8, last);
    const int64_t in_plane = oph::numel(std::span<const int64_t>(xs).subspan(2));
    p->reorder_src = !(p->C == 1 || in_plane == 1);
    p->G = g.group;
    p->Mg = p->Mgp = p->M / g.group;
    memory::dims strides = to_dims(g.strides), dil(sp), pl(sp), pr(sp);
    for (size_t i = 0; i < sp; ++i) {
      dil[i] = g.dilations[i] - 1;
      pl[i] = g.pads[i];
      pr[i] = g.pads[i + sp];
    }
    auto& eng = cpu_engine();
    set_dnnl_threads();
    dnnl::primitive_attr attr;
    attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    // The descriptors for Mgp output channels per group (Mgp = Mg: the convolution as it is).
    memory::dims wdims;
    tag wtag;
    std::optional<dnnl::convolution_forward::desc> d;
    auto describe = [&](int64_t mgp) {
      std::vector<int64_t> out = g.out;
      out[1] = g.group * mgp;
      p->dst_md = memory::desc(to_dims(out), dt::s32, last);
      if (g.group == 1) {
        wdims = {mgp};
        wdims.insert(wdims.end(), w_shape_.begin() + 1, w_shape_.end());
        wtag = sp == 1 ? tag::oiw : sp == 2 ? tag::oihw : tag::oidhw;
      } else {
        wdims = {g.group, mgp};
        wdims.insert(wdims.end(), w_shape_.begin() + 1, w_shape_.end());
        wtag = sp == 1 ? tag::goiw : sp == 2 ? tag::goihw : tag::goidhw;
      }
      d.emplace(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, p->src_md,
                memory::desc(wdims, dt::s8, tag::any), p->dst_md, strides, dil, pl, pr);
      return dnnl::convolution_forward::primitive_desc(*d, attr, eng);
    };
    dnnl::convolution_forward::primitive_desc pd = describe(p->Mg);
    // A grouped convolution oneDNN has only reference code for (on AVX2: output channels per group not a multiple
    // of 8): padded with zero filters to 8 per group, whose outputs are dropped.
    if (is_reference_impl(pd.impl_info_str()) && g.group > 1 && p->Mg % 8 != 0) {
      auto padded = describe((p->Mg + 7) / 8 * 8);
      if (!is_reference_impl(padded.impl_info_str())) {
        pd = padded;
        p->Mgp = (p->Mg + 7) / 8 * 8;
      } else {
        pd = describe(p->Mg);
      }
    }
    const memory::desc wuser(wdims, dt::s8, wtag);
    p->impl = pd.impl_info_str();
    p->scratch_bytes = pd.scratchpad_desc().get_size();
    p->conv1 = dnnl::convolution_forward(pd);
    // Each group's Mg filters, then Mgp - Mg zero filters, when the groups are padded.
    auto reorder_weights = [&](const std::vector<int8_t>& host, const memory::desc& want) {
      if (p->Mgp == p->Mg) return quant::reorder_int8_weights(host.data(), wuser, want);
      const size_t filter = host.size() / static_cast<size_t>(p->M);
      std::vector<int8_t> padded(static_cast<size_t>(p->G * p->Mgp) * filter, 0);
      for (int64_t gi = 0; gi < p->G; ++gi)
        std::memcpy(padded.data() + static_cast<size_t>(gi * p->Mgp) * filter,
                    host.data() + static_cast<size_t>(gi * p->Mg) * filter, static_cast<size_t>(p->Mg) * filter);
      return quant::reorder_int8_weights(padded.data(), wuser, want);
    };
    p->wei1 = reorder_weights(w_.w1, pd.weights_desc());
    if (w_.split()) {
      dnnl::post_ops po;
      po.append_sum(1.0f);
      dnnl::primitive_attr attr2 = attr;
      attr2.set_post_ops(po);
      dnnl::convolution_forward::primitive_desc pd2(*d, attr2, eng);
      if (pd2.weights_desc() != pd.weights_desc())
        fail(op_ + ": oneDNN chose different weight layouts for the two halves (internal)", OPH_CODE_INTERNAL);
      p->scratch_bytes = std::max(p->scratch_bytes, pd2.scratchpad_desc().get_size());
      p->conv2 = dnnl::convolution_forward(pd2);
      p->wei2 = reorder_weights(w_.w2, pd.weights_desc());
      if (std::string(pd2.impl_info_str()) != p->impl) p->impl += " + " + std::string(pd2.impl_info_str());
    }
    if (p->reorder_src) p->src_r = dnnl::reorder(dnnl::reorder::primitive_desc(eng, p->user_src, eng, p->staged_md));
    return p;
  }

  bool qlinear_;
  std::string op_;
  oph::AttrStore attrs_;
  oph_dtype x_dtype_{};
  std::vector<int64_t> w_shape_;
  quant::Int8Weights w_;
  bool reference_ = false;
  std::mutex mu_;
  std::map<std::vector<int64_t>, std::shared_ptr<const QPrim>> cache_;
};

struct ConvIntegerK : QConvKernel {
  explicit ConvIntegerK(const oph::KernelInit& i) : QConvKernel(i, false) {}
};
struct QLinearConvK : QConvKernel {
  explicit QLinearConvK(const oph::KernelInit& i) : QConvKernel(i, true) {}
};

void register_qconv(oph::Pack& pack) {
  auto& ci = pack.op(kDomain, "ConvInteger")
                 .versions(10, OPH_OPSET_MAX)
                 .doc("integer convolution with zero points, int32 accumulation (oneDNN int8)")
                 .input("x", "T1")
                 .input("w", "T2")
                 .optional_input("x_zero_point", "T1")
                 .optional_input("w_zero_point", "T2")
                 .output("y", "T3")
                 .types("T3", {i32});
  quant::conv_attrs(ci);
  ci.infer([](oph::InferContext& c) { quant::conv_infer(c, 0, 1, i32); }).kernel<ConvIntegerK>();
  add_types(ci, "T1", {i8, u8});
  add_types(ci, "T2", {i8, u8});

  auto& qc = pack.op(kDomain, "QLinearConv")
                 .versions(10, OPH_OPSET_MAX)
                 .doc("quantized convolution (oneDNN int8, exact ONNX requantization)")
                 .input("x", "T1")
                 .input("x_scale", "tensor(float)")
                 .input("x_zero_point", "T1")
                 .input("w", "T2")
                 .input("w_scale", "tensor(float)")
                 .input("w_zero_point", "T2")
                 .input("y_scale", "tensor(float)")
                 .input("y_zero_point", "T3")
                 .optional_input("B", "T4")
                 .output("y", "T3")
                 .types("tensor(float)", {f32})
                 .types("T4", {i32});
  quant::conv_attrs(qc);
  qc.infer([](oph::InferContext& c) { quant::conv_infer(c, 0, 3, c.input_dtype(7)); }).kernel<QLinearConvK>();
  for (const char* t : {"T1", "T2", "T3"}) add_types(qc, t, {i8, u8});
}

}  // namespace

static const Family kFamily("qconv", &register_qconv);

}  // namespace onnx_core
