// onnx-core: Conv and ConvTranspose (1-3 spatial dims, float32) through oneDNN.
//
// One oneDNN primitive per node and input shape: built at kernel creation when the shapes are known, else at
// the first compute (cached by input shape). Constant weights are reordered once into the layout the primitive
// prefers. Activations are ONNX's plain NC[D]HW, except where the host's nchwc-layout pass marked a FusedConv's
// X, Y or Z as channel-blocked (x_blocked/y_blocked/z_blocked: nChw8c/16c in the plain tensor's buffer, see
// nchwc_block), so that chains of convolutions and elementwise ops stay blocked between them. Where the layout a
// value arrives in (or must leave in) is not the one the primitive takes, it is reordered on the way in and out.
// FusedConv's optional Z (conv-add-fusion) is added before the activation: y = act(conv(x) + z), a oneDNN sum
// post-op.
//
// Threads: Debian's oneDNN uses the OpenMP runtime. Every primitive is built and runs after omp_set_num_threads(n)
// on the calling thread: n = team_threads() (host config, else the host pool's size, else the user's
// OMP_NUM_THREADS), or fewer for a small convolution (conv_threads below).
#include "common.hpp"
#include "conv_geom.hpp"
#include "dnnl_util.hpp"
#include "simd_math.hpp"
#include "winograd.hpp"

#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <atomic>

namespace onnx_core {
namespace {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using namespace conv_detail;

void conv_infer(oph::InferContext& c, bool transpose) {
  ConvAttrs a = read_conv_attrs(c.attrs(), transpose);
  if (c.input_dtype(1) != c.input_dtype(0)) fail(a.op + ": X and W must have the same dtype");
  if (!c.input_rank_known(0) || !c.input_rank_known(1)) {
    c.set_output_unknown_rank(0, c.input_dtype(0));
    return;
  }
  ConvGeom g = conv_geom(a, c.input_shape(0), c.input_shape(1));
  if (c.has_input(2) && c.input_rank_known(2)) {
    auto b = c.input_shape(2);
    if (b.size() != 1 || (b[0] >= 0 && g.OC >= 0 && b[0] != g.OC))
      fail(a.op + ": B must be 1-D with " + std::to_string(g.OC) + " values, got " + shape_str(b));
  }
  if (c.has_input(3) && c.input_rank_known(3)) {  // FusedConv's Z: the output's shape, no broadcasting
    auto z = c.input_shape(3);
    bool ok = z.size() == g.out_shape.size();
    for (size_t i = 0; ok && i < z.size(); ++i) ok = z[i] < 0 || g.out_shape[i] < 0 || z[i] == g.out_shape[i];
    if (!ok) fail(a.op + ": Z " + shape_str(z) + " must have the output's shape " + shape_str(g.out_shape));
  }
  c.set_output(0, c.input_dtype(0), g.out_shape);
}

// ----- oneDNN primitive -----

memory::dims to_dims(std::span<const int64_t> v) { return memory::dims(v.begin(), v.end()); }

tag plain_tag(size_t nsp) { return nsp == 1 ? tag::ncw : nsp == 2 ? tag::nchw : tag::ncdhw; }

// Plain ONNX weight layout as a oneDNN descriptor.
memory::desc onnx_weights_md(const ConvGeom& g, bool transpose) {
  const size_t n = g.nsp;
  const int64_t ICg = g.C / g.G, OCg = g.OC / g.G;
  memory::dims dims;
  if (g.G > 1) dims.push_back(g.G);
  dims.push_back(g.G > 1 ? OCg : g.OC);
  dims.push_back(g.G > 1 ? ICg : g.C);
  dims.insert(dims.end(), g.k.begin(), g.k.end());
  tag t;
  if (!transpose) {
    // ONNX Conv W: [OC, IC/G, k...] == [G, OC/G, IC/G, k...]
    if (g.G > 1) t = n == 1 ? tag::goiw : n == 2 ? tag::goihw : tag::goidhw;
    else t = n == 1 ? tag::oiw : n == 2 ? tag::oihw : tag::oidhw;
  } else {
    // ONNX ConvTranspose W: [IC, OC/G, k...] == [G, IC/G, OC/G, k...]: i before o.
    if (g.G > 1) t = n == 1 ? tag::acbd : n == 2 ? tag::giohw : tag::giodhw;
    else t = n == 1 ? tag::bac : n == 2 ? tag::iohw : tag::iodhw;
  }
  return memory::desc(dims, memory::data_type::f32, t);
}

// The ONNX activation of a FusedConv as oneDNN post-ops (y = act(conv(x)) in the primitive's epilogue).
dnnl::post_ops activation_post_ops(const ConvAttrs& a) {
  using alg = dnnl::algorithm;
  const std::string& k = a.activation;
  const std::vector<float>& p = a.activation_params;
  auto need = [&](size_t n) {
    if (p.size() != n)
      fail("FusedConv: activation '" + k + "' takes " + std::to_string(n) + " activation_params, got " +
           std::to_string(p.size()));
  };
  dnnl::post_ops po;
  if (a.sum) po.append_sum(1.0f);  // y = conv(x) + z, before the activation
  if (k.empty()) need(0);  // no activation (a FusedConv written for its Z or its layouts)
  else if (k == "Relu") need(0), po.append_eltwise(1.0f, alg::eltwise_relu, 0.0f, 0.0f);
  else if (k == "LeakyRelu") need(1), po.append_eltwise(1.0f, alg::eltwise_relu, p[0], 0.0f);
  else if (k == "Elu") need(1), po.append_eltwise(1.0f, alg::eltwise_elu, p[0], 0.0f);
  else if (k == "Sigmoid") need(0), po.append_eltwise(1.0f, alg::eltwise_logistic, 0.0f, 0.0f);
  else if (k == "Tanh") need(0), po.append_eltwise(1.0f, alg::eltwise_tanh, 0.0f, 0.0f);
  else if (k == "HardSwish") need(0), po.append_eltwise(1.0f, alg::eltwise_hardswish, 1.0f / 6.0f, 0.5f);
  else if (k == "Swish") {  // x * sigmoid(x), SiLU
    need(0);
    if (!a.host_silu) po.append_eltwise(1.0f, alg::eltwise_swish, 1.0f, 0.0f);
  }
  else if (k == "Clip") need(2), po.append_eltwise(1.0f, alg::eltwise_clip, p[0], p[1]);
  else if (k == "HardSigmoid") {
    need(2);
    po.append_eltwise(1.0f, alg::eltwise_linear, p[0], p[1]);  // alpha * x + beta
    po.append_eltwise(1.0f, alg::eltwise_clip, 0.0f, 1.0f);
  } else {
    fail("FusedConv: unsupported activation '" + k +
         "'; supported: Relu, LeakyRelu, Elu, Sigmoid, Tanh, HardSwish, Swish, Clip, HardSigmoid");
  }
  if (a.output_scale != 1.0f || a.output_shift != 0.0f)
    po.append_eltwise(1.0f, alg::eltwise_linear, a.output_scale, a.output_shift);
  if (a.output_min != -FLT_MAX || a.output_max != FLT_MAX)
    po.append_eltwise(1.0f, alg::eltwise_clip, a.output_min, a.output_max);
  return po;
}

struct Prim {
  ConvGeom g;
  dnnl::primitive prim;
  memory::desc user_src, user_dst, src_md, dst_md, wei_md, user_wei, bias_md, user_z;
  bool reorder_src = false, reorder_dst = false, has_bias = false, reorder_z = false;
  // Padding done by the reorder of X (see try_prepadded): src_md is the padded tensor, X goes into src_sub
  // (its interior) and the border is zero.
  bool prepad = false;
  memory::desc src_sub;
  dnnl::reorder src_r, dst_r, wei_r, z_r;
  memory wei;  // reordered constant weights (empty when weights are not constant)
  std::string impl;  // oneDNN's implementation name (impl_info_str), e.g. "jit_dw:avx2", "brgconv:avx512_core"
  // Pointwise on plain NCHW: one sgemm per image instead of a primitive (see build), then Relu here if any.
  bool sgemm = false, sgemm_relu = false;
  // Winograd F(4x4, 3x3) on 8-channel blocks, host-written (winograd.hpp), instead of a primitive; then its
  // epilogue (bias, Z, activation, output_*) is done in its output transform.
  std::shared_ptr<const winograd::Conv43> wino;
  winograd::Epilogue wino_e;
  size_t scratch_bytes = 0, src_bytes = 0, dst_bytes = 0;
  int threads = 1;  // the OpenMP team it is built for and runs on (conv_threads)
};

// Whether the NCHW sgemm path suits this pointwise convolution's shape: not for 2 to 63 pixels per image, where
// sgemm's N (the pixels) is too narrow for its kernels (ShuffleNet v2's 464 -> 1024 at 7x7: sgemm 300 us, 155
// GFLOP/s; brgconv_1x1 on channels-last 207 us, 225 GFLOP/s, so 276 us with the reorders of X and Y, against
// 359 in the model, per-node profile, 1 thread, AVX-512). One pixel (squeeze-excitation) is a matrix-vector
// product either way, without reorders on sgemm.
bool sgemm_shape_ok(const ConvGeom& g) {
  int64_t hw = 1;
  for (size_t i = 2; i < g.out_shape.size(); ++i) hw *= g.out_shape[i];
  return hw == 1 || hw >= 64;
}

// Threads for one convolution: one per `per_thread` floating-point operations (2 x multiply-adds), at most the
// team's size. Every parallel region oneDNN runs (the reorders of X and Y and the convolution: up to 3 per node)
// costs a fork and a join: on a 2-vCPU VM (Zen 5) a 96-channel 3x3 depthwise convolution at 8x8 took 1.8 us on
// one thread and 7.1 us on two, each of its reorders 0.7 and 4.8 us (ONEDNN_VERBOSE=2). Per model the threshold
// mattered little between 1e5 and 3e6 FLOP per thread (interleaved runs, 2 threads); what it must catch are
// the squeeze-excitation convolutions on 1x1 pixels (tens of kFLOP, 2-4 us on one thread, 8-16 on two). The
// NCHW sgemm path takes 2e6: 24 -> 58 channels at 28x28 (2.2 MFLOP) took 10.4 us on one thread, 12.7 on two;
// 58 -> 58 (5.3 MFLOP) 23.8 and 18.2.
int conv_threads(const ConvGeom& g, double per_thread) {
  double flops = 2.0 * static_cast<double>(g.C / g.G);
  for (int64_t d : g.out_shape) flops *= static_cast<double>(d);
  for (int64_t k : g.k) flops *= static_cast<double>(k);
  return static_cast<int>(std::clamp(flops / per_thread, 1.0, static_cast<double>(team_threads())));
}
constexpr double kConvFlopPerThread = 1e5, kSgemmFlopPerThread = 2e6;
// Winograd (ConvKernel::try_winograd): smallest output side for F(4x4, 3x3) first, and the transformed-weight
// bounds of F(4x4, 3x3) and F(2x2, 3x3).
constexpr int64_t kWino43MinOut = 24;
constexpr double kWino43MaxWeightBytes = 3e6, kWino23MaxWeightBytes = 8e6;
// The host's F(4x4, 3x3) (try_host_winograd, 8-channel blocks): smallest output side, and the bound on its
// transformed weights (36 x C x K floats, 4x the convolution's own).
constexpr int64_t kHostWinoMinOut = 7;
// F(4, 3) (3x1 and 1x3 kernels): smallest output on the 3-tap side (one whole tile; at 2 a tile's 6 products make
// 2 outputs, as many multiplies as the direct convolution's).
constexpr int64_t kHostWino1DMinOut = 4;
constexpr double kHostWinoMaxWeightBytes = 1e7;

class ConvKernel {
 public:
  ConvKernel(const oph::KernelInit& init, bool transpose, bool fused = false)
      : a_(read_conv_attrs(init.attrs(), transpose)) {
    if (fused) {
      a_.op = "FusedConv";
      a_.activation = init.attrs().get<std::string>("activation");
      a_.sum = init.num_inputs() > 3 && init.input(3).present;
      a_.x_blocked = init.attrs().get<int64_t>("x_blocked") != 0;
      a_.y_blocked = init.attrs().get<int64_t>("y_blocked") != 0;
      a_.z_blocked = init.attrs().get<int64_t>("z_blocked") != 0;
      if (a_.z_blocked && !a_.sum) fail("FusedConv: z_blocked is set but input Z is absent");
      if (init.attrs().has("activation_params"))
        a_.activation_params = init.attrs().get<std::vector<float>>("activation_params");
      a_.output_scale = init.attrs().get<float>("output_scale");
      a_.output_shift = init.attrs().get<float>("output_shift");
      a_.output_min = init.attrs().get<float>("output_min");
      a_.output_max = init.attrs().get<float>("output_max");
      if (!(a_.output_min <= a_.output_max))
        fail("FusedConv: output_min " + std::to_string(a_.output_min) + " must be <= output_max " +
             std::to_string(a_.output_max));
      activation_post_ops(a_);  // an unsupported activation fails here, at load
      a_.host_silu = a_.activation == "Swish" && a_.output_untouched();
    }
    const float* const_w_data = nullptr;  // valid during this call only
    if (init.num_inputs() > 1 && init.input(1).constant) {
      const oph_tensor* t = init.input(1).constant;
      const_w_data = constant_f32(init.input(1));
      if (!const_w_data) fail(a_.op + ": W must be float32");
      const_w_shape_.assign(t->shape, t->shape + t->ndim);
      const_w_ = true;
    }
    if (init.num_inputs() > 2 && init.input(2).present && init.input(2).constant) {
      const oph_tensor* t = init.input(2).constant;
      const float* p = constant_f32(init.input(2));
      if (!p) fail(a_.op + ": B must be float32");
      const_b_.assign(p, p + oph::numel({t->shape, static_cast<size_t>(t->ndim)}));
      has_const_b_ = true;
    }
    const oph_value_info& x = init.input(0);
    if (const_w_ && x.ndim >= 3 && all_known({x.shape, static_cast<size_t>(x.ndim)})) {
      bool bias = init.num_inputs() > 2 && init.input(2).present;
      std::vector<int64_t> key(x.shape, x.shape + x.ndim);
      key.push_back(bias);
      cache_[key] = build(key, const_w_shape_, bias, const_w_data);
    }
  }

  void compute(oph::KernelContext& ctx) {
    const std::string& op = a_.op;
    oph::TensorRef x = input(ctx, 0, op), w = input(ctx, 1, op);
    if (!(x.dtype() == f32) || !(w.dtype() == f32)) fail(op + ": only float32 is supported", OPH_CODE_UNIMPLEMENTED);
    oph::TensorRef b = ctx.input(2);
    if (b.present()) check_compact(b, op);
    std::vector<int64_t> key(x.shape().begin(), x.shape().end());
    key.push_back(b.present());
    std::shared_ptr<const Prim> p;
    const bool const_w = const_w_;
    if (!const_w) key.insert(key.end(), w.shape().begin(), w.shape().end());
    {
      std::lock_guard lock(mu_);
      auto it = cache_.find(key);
      if (it != cache_.end()) p = it->second;
    }
    if (!p) {
      std::vector<int64_t> xs(x.shape().begin(), x.shape().end());
      xs.push_back(b.present());
      // Constant weights: the same initializer as at creation, read again from the input (the kernel keeps only
      // the primitives' reordered copies, not a copy of the ONNX tensor).
      auto built = build(xs, const_w ? const_w_shape_ : std::vector<int64_t>(w.shape().begin(), w.shape().end()),
                         b.present(), const_w ? static_cast<const float*>(w.data()) : nullptr);
      // Built now, for shapes known only while running: the host's load-time check did not see it.
      if (is_reference_impl(built->impl))
        oph::log(OPH_LOG_WARN, op + " on X " + shape_str(xs) + ": oneDNN has only reference code (" + built->impl +
                                   ") for this convolution on this CPU; expect it to be 10-100x slower");
      std::lock_guard lock(mu_);
      if (cache_.size() > 16) cache_.clear();  // dynamic shapes: keep the cache bounded
      p = cache_.emplace(key, built).first->second;
    }
    oph::TensorRef y = ensure_output(ctx, 0, p->g.out_shape, op);
    if (!y.present()) return;
    if (b.present() && (b.ndim() != 1 || b.shape()[0] != p->g.OC))
      fail(op + ": B must have shape [" + std::to_string(p->g.OC) + "], got " + shape_str(b.shape()));
    if (oph::numel(p->g.out_shape) == 0) return;
    void* z = nullptr;
    if (a_.sum) {
      oph::TensorRef zt = input(ctx, 3, op);
      if (!(zt.dtype() == f32) || !std::ranges::equal(zt.shape(), p->g.out_shape))
        fail(op + ": Z must be float32 of the output's shape " + shape_str(p->g.out_shape) + ", got " +
             shape_str(zt.shape()));
      z = zt.data();
    }
    run(*p, x.data(), w.data(), b.present() ? b.data() : nullptr, z, y.data());
    if (a_.host_silu) {  // elementwise: the same in any layout (a blocked Y has no padding)
      float* yf = static_cast<float*>(y.data());
      parallel_for(static_cast<size_t>(oph::numel(p->g.out_shape)), kGrain,
                       [yf](size_t lo, size_t hi) { simd_math::silu(yf + lo, yf + lo, hi - lo); });
    }
  }

  // Every distinct oneDNN implementation this node has built ("oneDNN jit_dw:avx2"); reference when any is.
  oph::Implementation implementation() {
    std::lock_guard lock(mu_);
    oph::Implementation impl =
        implementation_of(cache_, [](const Prim& p) { return p.wino ? p.impl : "oneDNN " + p.impl; });
    if (a_.host_silu && !impl.name.empty()) impl.name += ", then SiLU (Highway)";
    return impl;
  }

 private:
  // `wdata`: the constant weights (shape wshape), reordered once into the primitive's layout; null otherwise.
  std::shared_ptr<const Prim> build(const std::vector<int64_t>& key, const std::vector<int64_t>& wshape, bool bias,
                                    const float* wdata) {
    std::span<const int64_t> xs(key.data(), key.size() - 1);
    auto p = std::make_shared<Prim>();
    p->g = conv_geom(a_, xs, wshape);
    const ConvGeom& g = p->g;
    // oneDNN partitions a primitive's work for the OpenMP team size current at creation: set it first, or a
    // primitive built at load (static shapes) runs on every core whatever --threads says.
    p->threads = conv_threads(g, kConvFlopPerThread);
    omp_set_num_threads(p->threads);
    const size_t n = g.nsp;
    auto& eng = cpu_engine();
    const tag pt = plain_tag(n);
    memory::dims src_dims = to_dims(xs), dst_dims = to_dims(g.out_shape);
    // Channel-blocked X/Y/Z (nchwc-layout): the block follows from the channel count, as in LayoutReorder.
    auto user_tag = [&](bool blocked, int64_t channels, const char* what) {
      if (!blocked) return pt;
      if (n != 2 || nchwc_block(channels) == 0)
        fail(a_.op + ": " + what + "_blocked needs 4-D tensors whose channels are a multiple of 8; X is " +
             shape_str(xs) + ", the output has " + std::to_string(channels) + " channels");
      return nchwc_tag(channels);
    };
    const tag src_tag = user_tag(a_.x_blocked, g.C, "x"), dst_tag = user_tag(a_.y_blocked, g.OC, "y");
    p->user_src = memory::desc(src_dims, memory::data_type::f32, src_tag);
    p->user_dst = memory::desc(dst_dims, memory::data_type::f32, dst_tag);
    p->user_z = memory::desc(dst_dims, memory::data_type::f32, user_tag(a_.z_blocked, g.OC, "z"));
    p->user_wei = onnx_weights_md(g, a_.transpose);
    p->has_bias = bias;
    p->bias_md = memory::desc({g.OC}, memory::data_type::f32, tag::x);
    memory::dims strides = to_dims(g.s), dil, pl = to_dims(g.pb), pr = to_dims(g.pe);
    for (int64_t d : g.d) dil.push_back(d - 1);
    if (a_.transpose)
      for (size_t i = 0; i < n; ++i) pr[i] -= g.outpad[i];  // output_padding: extra rows at the end
    // Depthwise: the jit kernels want blocked (or channels-last) activations; let oneDNN choose there.
    const bool depthwise = !a_.transpose && g.G > 1 && g.G == g.C && g.G == g.OC;
    // Layouts (measured on PP-OCRv4 det): plain NCHW for pointwise convolutions (a plain sgemm, no im2col); for
    // other kernels oneDNN picks (channels-last brgconv beats NCHW im2col+gemm 2x even with the reorders);
    // depthwise runs on channel blocks of the ISA's vector width (nChw16c on AVX-512, nChw8c on AVX2: the
    // jit_dw kernels of each ISA take only their own block size; the other one falls to reference code).
    bool pointwise = true;
    for (size_t i = 0; i < n; ++i) pointwise = pointwise && g.k[i] == 1 && g.s[i] == 1 && g.pb[i] == 0 && g.pe[i] == 0;
    // oneDNN's gemm convolution (plain layout) applies eltwise post-ops outside its jit code, slowly: PP-OCRv4's
    // pointwise convs + HardSwish ran 10x slower, MobileNetV3's pointwise + Relu 16->72 ch at 56x56 took 1.4 ms
    // (5 GFLOP/s). With any post-op the blocked-layout jit/brgconv kernels win even with the reorders
    // (mobilenet_v3_small 4.7 -> 3.0 ms, squeezenet1_1 10.5 -> 9.6 ms; others unchanged, AVX-512, 1 thread).
    // Pointwise, plain X and Y, group 1, no activation or Relu (or SiLU, run after any path; no output_*):
    // Y_n[OC, HW] = W[OC, C] X_n[C, HW] (+ B, + Z) as one oneDNN sgemm per image, no reorders. oneDNN's own
    // gemm convolution took 4x the sgemm's time (58 -> 58 channels at 28x28: 104 vs 25 us, AVX-512), and the
    // channels-last brgconv it picks with a post-op as long as the sgemm plus two reorders (ShuffleNet v2's
    // 58/116-channel convolutions, which nchwc-layout cannot block).
    // A channel-blocked X with a plain Y (an output channel count nchwc-layout cannot block) and no more input
    // than output channels takes the same path after a reorder of X to plain: ShuffleNet v2's 24 -> 58 at
    // 56x56 (X in 8-channel blocks) ran the blocked jit_1x1 kernel plus a 101 us reorder of its zero-padded
    // 64-channel Y back to plain, 192 us in all; reordering the 24-channel X (8 us) and the sgemm (42 us) is
    // what it takes now.
    const bool plain_act = a_.activation.empty() || a_.activation == "Relu" || a_.host_silu;
    const bool sgemm_x = !a_.x_blocked || g.C <= g.OC;
    if (!a_.transpose && pointwise && g.G == 1 && sgemm_x && !a_.y_blocked && !a_.z_blocked && plain_act &&
        a_.output_untouched() && sgemm_shape_ok(g)) {
      p->sgemm = true;
      p->threads = conv_threads(g, kSgemmFlopPerThread);
      p->sgemm_relu = a_.activation == "Relu";
      p->impl = "sgemm (NCHW)";
      if (a_.x_blocked) {  // X to plain NCHW first, into the kernel's scratch
        p->reorder_src = true;
        p->src_md = memory::desc(src_dims, memory::data_type::f32, pt);
        p->src_bytes = p->src_md.get_size();
        p->src_r = dnnl::reorder(dnnl::reorder::primitive_desc(eng, p->user_src, eng, p->src_md));
        p->impl = "sgemm (NCHW, X reordered from blocked)";
      }
      return p;
    }
    if (try_host_winograd(*p, wdata)) return p;
    const bool slow_gemm_postops = !a_.activation.empty() || a_.sum;
    const bool use_any = !a_.transpose && (depthwise || !pointwise || slow_gemm_postops || !sgemm_shape_ok(g));
    // Candidate activation layouts, best first; the first whose primitive is not a reference implementation
    // wins (a layout tuned for one ISA must never fall back to reference code on another).
    // (src, dst) pairs. Blocked X or Y: first the layouts they arrive and leave in (no reorder at all), then
    // blocked on both sides (a plain X reordered in: jit kernels take plain src only for a few channels).
    std::vector<std::pair<tag, tag>> candidates;
    // Dense convolutions (not grouped, not 1x1) with at least 576 = 64 x 3 x 3 products per output on AVX-512:
    // oneDNN 2.6's brgconv on channels-last beats its blocked jit kernel 1.1-1.45x (Zen 5, 1 thread: 3x3 at
    // 64ch/56x56 1.05x, 128/28 1.24x, 256/14 1.21x, 512/7 1.45x), more than the reorders of X and Y around it
    // cost (ResNet-18 21.7 -> 19.3 ms, DenseNet-121 34.3 -> 32.6). Below that (32 channels at 160x160: 1.04x)
    // the reorders of the large activations would cost more. Taken only when brgconv is what oneDNN builds.
    int64_t kvol = 1;
    for (size_t i = 0; i < n; ++i) kvol *= g.k[i];
    // Also on AVX-512, channel counts that are multiples of 8 but not 16 on blocked values (ShuffleNet's 232,
    // MobileNetV3's 88): oneDNN runs nChw8c with its AVX2 kernels, 1.3-2x slower than brgconv (232->232 1x1 at
    // 7x7: 46.8 vs 24.5 us); worth the reorders of X and Y when C * OC * KH * KW / (C + OC) >= 40 (products per
    // element reordered; 24 -> 144 1x1 at 56x56 gains 80 us and would pay about as much to reorder; embedding_model's
    // 72 -> 72 3x1 on 30x8: jit:avx2 87 us, brgconv 42 us, each reorder ~7).
    const bool eight_blocked = (a_.x_blocked && g.C % 16 != 0) || (a_.y_blocked && g.OC % 16 != 0);
    const bool prefer_brgconv =
        !a_.transpose && n == 2 && g.G == 1 && dnnl_channel_block() == 16 &&
        ((!pointwise && g.C * kvol >= 576) || (eight_blocked && g.C * g.OC * kvol >= 40 * (g.C + g.OC)));
    if (prefer_brgconv) candidates.emplace_back(tag::acdb, tag::acdb);
    if (a_.x_blocked || a_.y_blocked) {
      candidates.emplace_back(src_tag, dst_tag);
      if (nchwc_block(g.C) && nchwc_block(g.OC)) candidates.emplace_back(nchwc_tag(g.C), nchwc_tag(g.OC));
      // An 8-channel-block side (C or OC a multiple of 8 only) on AVX-512, below the brgconv threshold: reorder
      // only the sides not already in 16-channel blocks (channels zero-padded to the next 16, in the conv's
      // scratch) and run the AVX-512 blocked kernel; a 16-channel-block side stays as it is. M-LSD's 24 <-> 144 pointwise convs at
      // 80x80 reordered the 3.6 MB 144-channel tensor (~220 us) around channels-last brgconv_1x1; now a ~25 us
      // reorder of the 24-channel one (activation reorders 2.6 -> 0.8 ms per run; ab_builds, Zen 5, native:
      // M-LSD 20.86 -> 19.72 ms, EfficientNet-B0 7.96 -> 7.60, MobileNetV2 4.61 -> 4.18).
      if (eight_blocked && !prefer_brgconv && dnnl_channel_block() == 16 && g.G == 1 && !a_.transpose && n == 2)
        candidates.emplace_back(tag::aBcd16b, tag::aBcd16b);
    }
    auto both = [&](tag t) { candidates.emplace_back(t, t); };
    if (depthwise && n == 2) {
      const int block = dnnl_channel_block();
      if (g.C % block == 0) both(block == 16 ? tag::aBcd16b : tag::aBcd8b);
      // Channels that are a multiple of 8 only (BlazeFace's 24) on AVX-512: the AVX2 jit_dw kernel on 8-channel
      // blocks beats channels-last brdgmm_dw with its two full-tensor transposes.
      if (block == 16 && g.C % 8 == 0 && g.C % 16 != 0) both(tag::aBcd8b);
      // Other channel counts (ShuffleNet's 58 and 116): blocks of the ISA's width with the channels zero-padded
      // (oneDNN pads a blocked layout itself), so the jit_dw kernel runs instead of channels-last brdgmm_dw.
      // Plain <-> padded-block reorders cost about what plain <-> channels-last ones do; the kernel is 2x faster
      // (116 channels at 14x14, AVX-512: jit_dw 3.8 us, brdgmm_dw 6.6; ShuffleNet's seven such nodes 25.4 ->
      // 20.5 us each with their reorders, per-node profile, 1 thread).
      if (g.C % 8 != 0) both(block == 16 ? tag::aBcd16b : tag::aBcd8b);
      both(tag::acdb);  // channels-last
    }
    both(use_any ? tag::any : pt);
    if (use_any) both(pt);
    if (!a_.transpose && n == 2 && !use_any) both(tag::any);
    memory::desc wei_any(p->user_wei.dims(), memory::data_type::f32, tag::any);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (a_.op == "FusedConv") attr.set_post_ops(activation_post_ops(a_));
    std::string first_error;
    bool built = !a_.transpose && try_winograd(*p, src_dims, dst_dims, src_tag, dst_tag, wei_any, pl, pr, attr, bias);
    for (size_t ci = 0; !built && ci < candidates.size(); ++ci) {
      const auto [st, dt] = candidates[ci];
      const bool last = ci + 1 == candidates.size();
      memory::desc src_md(src_dims, memory::data_type::f32, st), dst_md(dst_dims, memory::data_type::f32, dt);
      // One primitive of kind Fwd (convolution_forward or deconvolution_forward); false when it is reference
      // code and another layout remains to try.
      auto try_build = [&]<class Fwd>(std::type_identity<Fwd>, dnnl::algorithm alg) {
        auto pd = forward_pd<Fwd>(alg, src_md, wei_any, bias ? &p->bias_md : nullptr, dst_md, strides, dil, pl, pr,
                                  attr);
        if (!last && is_reference_impl(pd.impl_info_str())) return false;
        if (prefer_brgconv && ci == 0 && std::string_view(pd.impl_info_str()).substr(0, 7) != "brgconv") return false;
        adopt<Fwd>(*p, pd);
        return true;
      };
      try {
        const bool ok = a_.transpose ? try_build(std::type_identity<dnnl::deconvolution_forward>{},
                                                 dnnl::algorithm::deconvolution_direct)
                                     : try_build(std::type_identity<dnnl::convolution_forward>{},
                                                 dnnl::algorithm::convolution_direct);
        if (!ok) continue;
        built = true;
        break;
      } catch (const dnnl::error& e) {
        if (first_error.empty()) first_error = e.what();
      }
    }
    if (!built)
      fail(a_.op + ": oneDNN cannot build this convolution (X " + shape_str(xs) + ", W " + shape_str(wshape) +
               "): " + first_error,
           OPH_CODE_UNIMPLEMENTED);
    // A dilated convolution with padding on AVX2: oneDNN's jit:avx2 kernel takes no padding wider than the
    // kernel (M-LSD's 3x3, dilation 5, pads 5), so it ran im2col + sgemm (x64:gemm:jit), 1.8x slower than the
    // jit kernel on the same tensor padded beforehand. Pad in the reorder of X instead, when that gives a jit
    // kernel.
    bool dilated = false, padded = false;
    for (size_t i = 0; i < n; ++i) dilated = dilated || g.d[i] > 1, padded = padded || g.pb[i] || g.pe[i];
    if (!a_.transpose && n == 2 && dilated && padded && nchwc_block(g.C) &&
        (p->impl.find("gemm") != std::string::npos || is_reference_impl(p->impl)))
      try_prepadded(*p, src_dims, dst_dims, wei_any, strides, dil, attr, bias);
    plan_activation_reorders(*p);
    if (p->wei_md != p->user_wei) p->wei_r = dnnl::reorder(dnnl::reorder::primitive_desc(eng, p->user_wei, eng, p->wei_md));
    if (const_w_) {
      // Constant weights: reorder once into the primitive's layout.
      if (!wdata || wshape != const_w_shape_) fail(a_.op + ": W shape mismatch", OPH_CODE_INTERNAL);
      p->wei = memory(p->wei_md, eng);
      memory user(p->user_wei, eng, const_cast<float*>(wdata));
      if (p->wei_md != p->user_wei) {
        dnnl::stream s(eng);
        p->wei_r.execute(s, user, p->wei);
        s.wait();
      } else {
        std::memcpy(p->wei.get_data_handle(), wdata, oph::numel(wshape) * sizeof(float));
      }
    }
    return p;
  }

  // The operation descriptor of a forward (de)convolution, with a bias when `bias_md` is given.
  template <class Fwd>
  static typename Fwd::desc forward_desc(dnnl::algorithm alg, const memory::desc& src, const memory::desc& wei,
                                         const memory::desc* bias_md, const memory::desc& dst,
                                         const memory::dims& strides, const memory::dims& dil, const memory::dims& pl,
                                         const memory::dims& pr) {
    return bias_md ? typename Fwd::desc(dnnl::prop_kind::forward_inference, alg, src, wei, *bias_md, dst, strides,
                                        dil, pl, pr)
                   : typename Fwd::desc(dnnl::prop_kind::forward_inference, alg, src, wei, dst, strides, dil, pl, pr);
  }

  // Its primitive descriptor (oneDNN's first implementation; not for walking next_impl(), which reads the
  // operation descriptor again: keep that alive, as try_winograd does).
  template <class Fwd>
  static typename Fwd::primitive_desc forward_pd(dnnl::algorithm alg, const memory::desc& src, const memory::desc& wei,
                                                 const memory::desc* bias_md, const memory::desc& dst,
                                                 const memory::dims& strides, const memory::dims& dil,
                                                 const memory::dims& pl, const memory::dims& pr,
                                                 const dnnl::primitive_attr& attr) {
    return typename Fwd::primitive_desc(forward_desc<Fwd>(alg, src, wei, bias_md, dst, strides, dil, pl, pr), attr,
                                        cpu_engine());
  }

  // The reorders of X into p.src_md (its interior when prepadded), of Y out of p.dst_md and of Z into it, where the
  // user's layouts differ from the kernel's.
  void plan_activation_reorders(Prim& p) const {
    auto& eng = cpu_engine();
    p.reorder_src = p.prepad || p.src_md != p.user_src;
    p.reorder_dst = p.dst_md != p.user_dst;
    if (p.reorder_src) {
      p.src_r = dnnl::reorder(dnnl::reorder::primitive_desc(eng, p.user_src, eng, p.prepad ? p.src_sub : p.src_md));
      p.src_bytes = p.src_md.get_size();
    }
    if (p.reorder_dst) {
      p.dst_r = dnnl::reorder(dnnl::reorder::primitive_desc(eng, p.dst_md, eng, p.user_dst));
      p.dst_bytes = p.dst_md.get_size();
    }
    p.reorder_z = a_.sum && p.user_z != p.dst_md;
    if (p.reorder_z) p.z_r = dnnl::reorder(dnnl::reorder::primitive_desc(eng, p.user_z, eng, p.dst_md));
  }

  // X in the kernel's layout: the user's tensor, or its reorder into `buf` (zero border first when prepadded).
  static memory stage_src(const Prim& p, void* x, dnnl::stream& stream, Scratch& buf) {
    auto& eng = cpu_engine();
    memory user_src(p.user_src, eng, x);
    if (!p.reorder_src) return user_src;
    char* b = buf.get(p.src_bytes);
    memory src(p.src_md, eng, b);
    if (p.prepad) {
      std::memset(b, 0, p.src_bytes);  // the border (the buffer is shared with other nodes' reorders)
      memory interior(p.src_sub, eng, b);
      p.src_r.execute(stream, user_src, interior);
    } else {
      p.src_r.execute(stream, user_src, src);
    }
    return src;
  }

  // Takes the layouts, scratchpad size, implementation name and primitive of `pd` into `p`.
  template <class Fwd>
  static void adopt(Prim& p, const typename Fwd::primitive_desc& pd) {
    p.src_md = pd.src_desc();
    p.dst_md = pd.dst_desc();
    p.wei_md = pd.weights_desc();
    p.scratch_bytes = pd.scratchpad_desc().get_size();
    p.impl = pd.impl_info_str();
    p.prim = Fwd(pd);
  }

  // Winograd for 3x3, stride 1, not dilated, not grouped convolutions with outputs of at least 13x13, where oneDNN
  // 2.6 has it (AVX-512 only; none on AVX2, where the direct candidates run as before): F(4x4, 3x3)
  // (jit_wino_4x3) takes 4x fewer multiply-adds than the direct convolution, F(2x2, 3x3) (jit_fp32_wino_2x3)
  // 2.25x fewer, but they read 4x and 1.8x the weights (36 and 16 values per pair of channels instead of 9),
  // which in a model come from memory, not cache. Chosen per layer from per-node profiles of whole models
  // (`ophost bench --profile`, 1 thread, Zen 5; us per conv, direct / 4x3 / 2x3):
  //  - outputs of 24x24 and up: 4x3 (SqueezeNet 32 -> 128 at 27x27: 264 / 136 / 159; ResNet-18 64 -> 64 at
  //    56x56 1190 / 650 / -; 128 -> 128 at 28x28 1085 / 620 / -);
  //  - below 24x24: 2x3 (DenseNet-121 128 -> 32 at 14x14: 73 / 79 / 60; SqueezeNet 48 -> 192 at 13x13:
  //    155 / 175 / 126, 64 -> 256: 255 / 249 / 235);
  //  - 4x3 only up to 3 MB of transformed weights (ResNet-18 256 -> 256 at 14x14, 9.4 MB: 1060 / 1400 / 740),
  //    2x3 up to 8 MB; beyond both, direct (512 -> 512: 2x3 would read 16.8 MB).
  // Outputs at 7x7 stay direct (4x3 0.9-1.7x the direct time there, single layers, warm cache). Both kernels
  // stay within 2.5e-6 of the largest output (max |winograd - direct| / max |y|, 64-512 channels, He-initialised
  // weights; zoo outputs against ONNX Runtime at <= 5.1e-6 of their range, as before). Blocked X and Y
  // (nchwc-layout) are taken as they are: no reorder around it, unlike channels-last brgconv.
  // OPHOST_CONV_WINOGRAD=0 turns it off (direct convolutions only).
  bool try_winograd(Prim& p, const memory::dims& src_dims, const memory::dims& dst_dims, tag src_tag, tag dst_tag,
                    const memory::desc& wei_any, const memory::dims& pl, const memory::dims& pr,
                    const dnnl::primitive_attr& attr, bool bias) const {
    const ConvGeom& g = p.g;
    if (!winograd_enabled() || g.nsp != 2 || g.G != 1 || dnnl_channel_block() != 16) return false;
    for (size_t i = 0; i < 2; ++i)
      if (g.k[i] != 3 || g.s[i] != 1 || g.d[i] != 1 || g.out_shape[2 + i] < 13) return false;
    // Preference order of the two kernels (impl_info_str prefixes); a kernel whose transformed weights exceed
    // its bound is left out.
    const double pairs = static_cast<double>(g.C) * static_cast<double>(g.OC);
    const bool fits43 = pairs * 36 * sizeof(float) <= kWino43MaxWeightBytes,
               fits23 = pairs * 16 * sizeof(float) <= kWino23MaxWeightBytes;
    std::vector<std::string_view> want;
    if (std::min(g.out_shape[2], g.out_shape[3]) < kWino43MinOut) {
      if (fits23) want.push_back("jit_fp32_wino_2x3");
      if (fits43) want.push_back("jit_wino_4x3");
    } else {
      if (fits43) want.push_back("jit_wino_4x3");
      if (fits23) want.push_back("jit_fp32_wino_2x3");
    }
    if (want.empty()) return false;
    // The values' own layouts when both are in 16-channel blocks, else oneDNN's choice (then reordered).
    const bool blocked16 = src_tag == tag::nChw16c && dst_tag == tag::nChw16c;
    memory::desc src_md(src_dims, memory::data_type::f32, blocked16 ? src_tag : tag::any),
        dst_md(dst_dims, memory::data_type::f32, blocked16 ? dst_tag : tag::any);
    try {
      // The operation descriptor stays alive while the implementations are walked: oneDNN 2.6's next_impl()
      // reads it again (a descriptor gone out of scope crashed the primitive's creation).
      const auto d = forward_desc<dnnl::convolution_forward>(dnnl::algorithm::convolution_winograd, src_md, wei_any,
                                                             bias ? &p.bias_md : nullptr, dst_md, {1, 1}, {0, 0}, pl,
                                                             pr);
      dnnl::convolution_forward::primitive_desc pd(d, attr, cpu_engine());
      std::vector<std::string> impls;  // walked once; pd then holds the last one
      do impls.emplace_back(pd.impl_info_str());
      while (pd.next_impl());
      for (std::string_view w : want) {
        const auto it = std::ranges::find_if(impls, [&](const std::string& i) { return i.starts_with(w); });
        if (it == impls.end()) continue;
        dnnl::convolution_forward::primitive_desc chosen(d, attr, cpu_engine());
        for (auto k = impls.begin(); k != it; ++k) chosen.next_impl();
        adopt<dnnl::convolution_forward>(p, chosen);
        return true;
      }
    } catch (const dnnl::error&) {
      // no Winograd kernel for this ISA, shape or post-op: the direct candidates follow
    }
    return false;
  }

  // Winograd F(4x4, 3x3) of winograd.hpp for a dense 3x3 stride-1 convolution on 8-channel blocks (at AVX2, where
  // oneDNN 2.6 has no Winograd), or F(4, 3) for a 3x1 / 1x3 one (AVX2 and AVX-512); constant weights, an
  // activation the output transform applies (none, Relu, LeakyRelu, Clip; SiLU runs after it as after any path).
  // Outputs of at least kHostWinoMinOut on each side (3x3), kHostWino1DMinOut on the 3-tap side (3x1, 1x3).
  // A plain X, Y or Z (channels a multiple of 8) is reordered to and from nChw8c around it, as oneDNN's direct
  // kernels would have it (PP-OCRv4 det's neck, whose shapes are open at load, stays plain).
  bool try_host_winograd(Prim& p, const float* wdata) const {
    const ConvGeom& g = p.g;
    // Not below AVX2 (FMA): on SSE4.1/AVX the transforms and products round twice per multiply-add, and
    // conv_winograd_4x3_batch2 (He-initialised, outputs near 1) was off by 1.7e-5, over the cases' bound.
    const auto isa = dnnl::get_effective_cpu_isa();
    if (!winograd_enabled() || a_.transpose || g.nsp != 2 || g.G != 1 || !wdata) return false;
    winograd::Taps taps;
    if (g.k[0] == 3 && g.k[1] == 3) taps = winograd::Taps::k3x3;
    else if (g.k[0] == 3 && g.k[1] == 1) taps = winograd::Taps::k3x1;
    else if (g.k[0] == 1 && g.k[1] == 3) taps = winograd::Taps::k1x3;
    else return false;
    // 3x3 at AVX2 only (AVX-512 has oneDNN's Winograd); 3x1 / 1x3 at AVX-512 too, where oneDNN has none (on
    // 8-channel blocks: embedding_model's 72 -> 72 3x1 at 32x8 90 -> 60 us, its five such convs 333 -> 215).
    const bool avx2 = isa == dnnl::cpu_isa::avx2 || isa == dnnl::cpu_isa::avx2_vnni;
    const bool avx512 = dnnl_channel_block() == 16;
    if (!(avx2 || (avx512 && taps != winograd::Taps::k3x3))) return false;
    for (size_t i = 0; i < 2; ++i) {
      if (g.s[i] != 1 || g.d[i] != 1) return false;
      if (g.k[i] == 1 && (g.pb[i] != 0 || g.pe[i] != 0)) return false;  // a padded 1-tap side: not transformed
      if (g.k[i] == 3 && g.out[i] < (taps == winograd::Taps::k3x3 ? kHostWinoMinOut : kHostWino1DMinOut)) return false;
    }
    if (nchwc_block(g.C) != 8 || nchwc_block(g.OC) != 8) return false;
    const double points = taps == winograd::Taps::k3x3 ? 36.0 : 6.0;
    if (points * 4.0 * static_cast<double>(g.C * g.OC) > kHostWinoMaxWeightBytes) return false;
    winograd::Epilogue e;
    using Act = winograd::Epilogue::Act;
    const std::string& k = a_.activation;
    if (k == "Relu") e.act = Act::kRelu;
    else if (k == "LeakyRelu") e.act = Act::kLeakyRelu, e.alpha = a_.activation_params.at(0);
    else if (k == "Clip")
      e.act = Act::kClip, e.act_lo = a_.activation_params.at(0), e.act_hi = a_.activation_params.at(1);
    else if (!k.empty() && !a_.host_silu) return false;
    e.scale = a_.output_scale;
    e.shift = a_.output_shift;
    e.lo = a_.output_min;
    e.hi = a_.output_max;
    p.wino = std::make_shared<const winograd::Conv43>(wdata, g.OC, g.C, taps);
    p.wino_e = e;
    p.src_md = memory::desc(p.user_src.dims(), memory::data_type::f32, tag::nChw8c);
    p.dst_md = memory::desc(p.user_dst.dims(), memory::data_type::f32, tag::nChw8c);
    plan_activation_reorders(p);
    p.impl = std::string(taps == winograd::Taps::k3x3 ? "Winograd F(4x4,3x3)" : "Winograd F(4,3)") + " on " +
             winograd::Conv43::target_name() + " (host)";
    return true;
  }

  static bool winograd_enabled() {
    static const bool on = [] {
      const char* v = std::getenv("OPHOST_CONV_WINOGRAD");
      return !(v && std::string_view(v) == "0");
    }();
    return on;
  }

  // The convolution on X padded beforehand (zero pads in the primitive), X and Y channel-blocked; kept when
  // oneDNN has a jit kernel (not gemm, not reference code) for it.
  void try_prepadded(Prim& p, const memory::dims& src_dims, const memory::dims& dst_dims, const memory::desc& wei_any,
                     const memory::dims& strides, const memory::dims& dil, const dnnl::primitive_attr& attr,
                     bool bias) const {
    const ConvGeom& g = p.g;
    memory::dims padded_dims = src_dims, offsets(src_dims.size(), 0), zeros(g.nsp, 0);
    for (size_t i = 0; i < g.nsp; ++i) {
      padded_dims[2 + i] += g.pb[i] + g.pe[i];
      offsets[2 + i] = g.pb[i];
    }
    const tag t = nchwc_tag(g.C);
    memory::desc src_md(padded_dims, memory::data_type::f32, t),
        dst_md(dst_dims, memory::data_type::f32, nchwc_tag(g.OC));
    try {
      auto pd = forward_pd<dnnl::convolution_forward>(dnnl::algorithm::convolution_direct, src_md, wei_any,
                                                      bias ? &p.bias_md : nullptr, dst_md, strides, dil, zeros, zeros,
                                                      attr);
      const std::string impl = pd.impl_info_str();
      if (impl.find("gemm") != std::string::npos || is_reference_impl(impl)) return;
      adopt<dnnl::convolution_forward>(p, pd);
      p.src_sub = p.src_md.submemory_desc(src_dims, offsets);
      p.prepad = true;
    } catch (const dnnl::error&) {
      // keep what the candidates gave
    }
  }

  // The pointwise convolution of Prim::sgemm: per image, Y = W X by sgemm (plus Z, which Y starts as when
  // summed: beta 1), then one pass over Y adds B and applies Relu while the image is in cache. Filling Y with B
  // before the sgemm (beta 1) and a Relu pass after it wrote and read Y twice more: ShuffleNet v2's 13 NCHW
  // pointwise convolutions spent 5% of the model's time in those loops (perf, 1 thread).
  void run_sgemm(const Prim& p, const float* x, const float* w, const float* b, const float* z, float* y) const {
    omp_set_num_threads(p.threads);
    const ConvGeom& g = p.g;
    int64_t hw = 1;
    for (size_t i = 2; i < g.out_shape.size(); ++i) hw *= g.out_shape[i];
    const size_t ysz = static_cast<size_t>(g.OC * hw);
    const bool relu = p.sgemm_relu;
    for (int64_t img = 0; img < g.N; ++img) {
      const float* xi = x + img * g.C * hw;
      float* yi = y + static_cast<size_t>(img) * ysz;
      float beta = 0.0f;
      if (z) {
        const float* zi = z + static_cast<size_t>(img) * ysz;
        if (zi != yi) std::memcpy(yi, zi, ysz * sizeof(float));  // Z may share Y's buffer (may_inplace)
        beta = 1.0f;
      }
      const dnnl_status_t st =
          dnnl_sgemm('N', 'N', g.OC, hw, g.C, 1.0f, w, g.C, xi, hw, beta, yi, hw);
      if (st != dnnl_success) fail(a_.op + ": oneDNN sgemm failed (status " + std::to_string(st) + ")");
      if (!b && !relu) continue;
      for (int64_t oc = 0; oc < g.OC; ++oc)
        simd_math::add_bias(yi + oc * hw, static_cast<size_t>(hw), b ? b[oc] : 0.0f, relu);
    }
  }

  void run(const Prim& p, void* x, void* w, void* b, void* z, void* y) const {
    // B: the kernel's copy when it was constant at creation, else the input.
    void* bp = p.has_bias ? (has_const_b_ ? const_cast<float*>(const_b_.data()) : b) : nullptr;
    auto& eng = cpu_engine();
    thread_local dnnl::stream stream(eng);
    thread_local Scratch scratch, src_buf, dst_buf, wei_buf, z_buf;
    if (p.wino) {
      const ConvGeom& g = p.g;
      const winograd::Shape s{g.N, g.in[0], g.in[1], g.out[0], g.out[1], g.pb[0], g.pb[1]};
      float* buf = reinterpret_cast<float*>(scratch.get(p.wino->scratch_floats(s) * sizeof(float)));
      omp_set_num_threads(p.threads);
      // Plain X, Z, Y: through nChw8c copies (Z's may not be Y's buffer: a reorder does not run in place).
      void* xb = stage_src(p, x, stream, src_buf).get_data_handle();
      void* yb = p.reorder_dst ? dst_buf.get(p.dst_bytes) : y;
      void* zb = z;
      if (z && p.reorder_z) {
        zb = z_buf.get(p.dst_md.get_size());
        memory from(p.user_z, eng, z), to(p.dst_md, eng, zb);
        p.z_r.execute(stream, from, to);
      }
      stream.wait();
      p.wino->run(s, static_cast<const float*>(xb), static_cast<const float*>(bp), static_cast<const float*>(zb),
                  static_cast<float*>(yb), p.wino_e, buf);
      if (p.reorder_dst) {
        memory from(p.dst_md, eng, yb), to(p.user_dst, eng, y);
        p.dst_r.execute(stream, from, to);
        stream.wait();
      }
      return;
    }
    if (p.sgemm) {
      if (p.reorder_src) {  // blocked X to plain
        omp_set_num_threads(p.threads);
        x = stage_src(p, x, stream, src_buf).get_data_handle();
        stream.wait();
      }
      run_sgemm(p, static_cast<const float*>(x), static_cast<const float*>(w), static_cast<const float*>(bp),
                static_cast<const float*>(z), static_cast<float*>(y));
      return;
    }
    omp_set_num_threads(p.threads);
    memory user_dst(p.user_dst, eng, y);
    memory src = stage_src(p, x, stream, src_buf), dst = user_dst;
    if (p.reorder_dst) dst = memory(p.dst_md, eng, dst_buf.get(p.dst_bytes));
    if (z) {  // the sum post-op adds what dst holds: Z, in dst's layout (Z may share Y's buffer: may_inplace)
      if (p.reorder_z) {
        memory user_z(p.user_z, eng, z);
        if (dst.get_data_handle() != z) {
          p.z_r.execute(stream, user_z, dst);
        } else {  // Y over Z, Z in another layout: a reorder cannot run in place
          memory tmp(p.dst_md, eng, z_buf.get(p.dst_md.get_size()));
          p.z_r.execute(stream, user_z, tmp);
          std::memcpy(z, tmp.get_data_handle(), p.dst_md.get_size());
        }
      }
      else if (dst.get_data_handle() != z) std::memcpy(dst.get_data_handle(), z, p.dst_md.get_size());
    }
    memory wei = p.wei;
    if (!wei) {
      memory user(p.user_wei, eng, w);
      if (p.wei_md != p.user_wei) {
        wei = memory(p.wei_md, eng, wei_buf.get(p.wei_md.get_size()));
        p.wei_r.execute(stream, user, wei);
      } else {
        wei = user;
      }
    }
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}};
    if (p.has_bias) {
      args.emplace(DNNL_ARG_BIAS, memory(p.bias_md, eng, bp));
    }
    if (p.scratch_bytes) {
      args.emplace(DNNL_ARG_SCRATCHPAD,
                   memory(memory::desc({static_cast<memory::dim>(p.scratch_bytes)}, memory::data_type::u8, tag::x), eng,
                          scratch.get(p.scratch_bytes)));
    }
    p.prim.execute(stream, args);
    if (p.reorder_dst) p.dst_r.execute(stream, dst, user_dst);
    stream.wait();
  }

  ConvAttrs a_;
  std::vector<float> const_b_;
  std::vector<int64_t> const_w_shape_;
  bool const_w_ = false;  // W is a constant of shape const_w_shape_ (read from the input when a primitive is built)
  bool has_const_b_ = false;
  std::mutex mu_;
  std::map<std::vector<int64_t>, std::shared_ptr<const Prim>> cache_;
};

struct ConvK : ConvKernel {
  explicit ConvK(const oph::KernelInit& i) : ConvKernel(i, false) {}
};
struct FusedConvK : ConvKernel {
  explicit FusedConvK(const oph::KernelInit& i) : ConvKernel(i, false, true) {}
};
struct ConvTransposeK : ConvKernel {
  explicit ConvTransposeK(const oph::KernelInit& i) : ConvKernel(i, true) {}
};

void register_conv(oph::Pack& pack) {
  auto common = [](oph::OpBuilder& b) -> oph::OpBuilder& {
    return b.input("X", "T")
        .input("W", "T")
        .optional_input("B", "T")
        .output("Y", "T")
        .types("T", {f32})
        .attr("auto_pad", std::string("NOTSET"))
        .optional_attr("dilations", OPH_ATTR_INTS)
        .attr("group", int64_t{1})
        .optional_attr("kernel_shape", OPH_ATTR_INTS)
        .optional_attr("pads", OPH_ATTR_INTS)
        .optional_attr("strides", OPH_ATTR_INTS);
  };
  {  // same attributes in every opset (1, 11)
    common(pack.op(kDomain, "Conv").versions(1, OPH_OPSET_MAX).doc("N-d convolution (oneDNN), float32"))
        .infer([](oph::InferContext& c) { conv_infer(c, false); })
        .kernel<ConvK>();
    common(pack.op(kDomain, "ConvTranspose").versions(1, OPH_OPSET_MAX).doc("N-d transposed convolution (oneDNN), float32"))
        .optional_attr("output_padding", OPH_ATTR_INTS)
        .optional_attr("output_shape", OPH_ATTR_INTS)
        .infer([](oph::InferContext& c) { conv_infer(c, true); })
        .kernel<ConvTransposeK>();
    // Conv + activation, written by the host's conv-activation-fusion pass (never by exporters).
    common(pack.op("com.ophost", "FusedConv")
               .versions(1, OPH_OPSET_MAX)
               .doc("Conv, plus Z added (conv-add-fusion), then an ONNX activation (Relu, LeakyRelu, Elu, Sigmoid, "
                    "Tanh, HardSwish, Swish (x * Sigmoid(x), SiLU), Clip, HardSigmoid; none when empty), then "
                    "y * output_scale + output_shift clamped to [output_min, output_max], as oneDNN post-ops; X, Y, Z "
                    "channel-blocked where x_blocked/y_blocked/z_blocked (nchwc-layout). Written by the host's passes")
               .flags(OPH_OP_FLAG_ALLOW_FUSION))
        .optional_input("Z", "T")
        .may_inplace(3, 0)
        .attr("activation", std::string())
        .optional_attr("activation_params", OPH_ATTR_FLOATS)
        .attr("output_scale", 1.0f)
        .attr("output_shift", 0.0f)
        .attr("output_min", -FLT_MAX)
        .attr("output_max", FLT_MAX)
        .attr("x_blocked", int64_t{0})
        .attr("y_blocked", int64_t{0})
        .attr("z_blocked", int64_t{0})
        .infer([](oph::InferContext& c) { conv_infer(c, false); })
        .kernel<FusedConvK>();
  }
}

}  // namespace

static const Family kFamily("conv", &register_conv);

}  // namespace onnx_core
