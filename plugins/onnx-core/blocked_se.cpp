// onnx-core: the squeeze-and-excitation ops on channel-blocked values (the host's nchwc-layout pass writes them),
// so an SE block (EfficientNet, MobileNetV3: GlobalAveragePool -> 1x1 convs -> Sigmoid -> Mul(x, s)) no longer
// takes its input out of the blocked region and back (two LayoutReorders per block):
//   com.ophost::BlockedGlobalAveragePool  X nChw8c/16c [N, C, H, W] -> Y [N, C, 1, 1]
//   com.ophost::BlockedMul                X nChw8c/16c [N, C, H, W] * S [N or 1, C, 1, 1] -> Y blocked like X
// With H = W = 1 and C a multiple of the block (what nchwc_block guarantees), the blocked and the plain byte order
// of [N, C, 1, 1] are the same, so Y of the pool and S of the Mul are plain and blocked at once.
#include "common.hpp"
#include "dnnl_util.hpp"
#include "simd_math.hpp"

namespace onnx_core {
namespace {

struct BlockedGeom {
  size_t n, c, hw, block;
};

BlockedGeom blocked_geom(const oph::TensorRef& x, const std::string& op) {
  auto s = x.shape();
  if (!(x.dtype() == f32) || s.size() != 4 || nchwc_block(s[1]) == 0)
    fail(op + ": X must be a 4-D float32 tensor whose channels are a multiple of 8, got " + shape_str(s));
  check_compact(x, op);
  return {static_cast<size_t>(s[0]), static_cast<size_t>(s[1]), static_cast<size_t>(s[2] * s[3]),
          static_cast<size_t>(nchwc_block(s[1]))};
}

void blocked_check_infer(oph::InferContext& c, const std::string& op) {
  if (c.input_rank_known(0)) {
    auto s = c.input_shape(0);
    if (s.size() != 4 || (s[1] >= 0 && nchwc_block(s[1]) == 0))
      fail(op + ": X must be 4-D with channels a multiple of 8, got " + shape_str(s));
  }
}

// Means of each channel block over the spatial positions (Highway, simd_math).
void gap_blocks(const float* x, float* y, size_t blocks, size_t hw, size_t B) {
  const float inv = hw ? 1.0f / static_cast<float>(hw) : 0.0f;
  for (size_t b = 0; b < blocks; ++b) {
    simd_math::sum_channel_blocks(x + b * hw * B, hw, B, y + b * B);
    for (size_t i = 0; i < B; ++i) y[b * B + i] *= inv;
  }
}

struct BlockedGapK {
  explicit BlockedGapK(const oph::KernelInit&) {}
  void compute(oph::KernelContext& ctx) {
    const std::string op = "BlockedGlobalAveragePool";
    oph::TensorRef x = input(ctx, 0, op);
    const BlockedGeom g = blocked_geom(x, op);
    const std::vector<int64_t> ys = {static_cast<int64_t>(g.n), static_cast<int64_t>(g.c), 1, 1};
    oph::TensorRef y = ensure_output(ctx, 0, ys, op);
    if (!y.present()) return;
    const float* X = static_cast<const float*>(x.data());
    float* Y = static_cast<float*>(y.data());
    const size_t blocks = g.n * g.c / g.block, hw = g.hw;
    const size_t grain = std::max<size_t>(1, kGrain / std::max<size_t>(1, hw * g.block));
    const size_t B = g.block;
    parallel_for(blocks, grain, [=](size_t lo, size_t hi) { gap_blocks(X + lo * hw * B, Y + lo * B, hi - lo, hw, B); });
  }
};

void mul_blocks(const float* x, const float* s, float* y, size_t first, size_t blocks, size_t hw, size_t c,
                size_t B, bool s_batch) {
  for (size_t b = first; b < first + blocks; ++b) {
    const size_t n = b / (c / B), cb = b % (c / B);
    simd_math::mul_channel_blocks(x + b * hw * B, s + (s_batch ? n * c : 0) + cb * B, y + b * hw * B, hw, B);
  }
}

struct BlockedMulK {
  explicit BlockedMulK(const oph::KernelInit&) {}
  void compute(oph::KernelContext& ctx) {
    const std::string op = "BlockedMul";
    oph::TensorRef x = input(ctx, 0, op), s = input(ctx, 1, op);
    const BlockedGeom g = blocked_geom(x, op);
    auto ss = s.shape();
    if (!(s.dtype() == f32) || ss.size() != 4 || static_cast<size_t>(ss[1]) != g.c || ss[2] != 1 || ss[3] != 1 ||
        (ss[0] != 1 && static_cast<size_t>(ss[0]) != g.n))
      fail(op + ": S must be float32 of shape [" + std::to_string(g.n) + " or 1, " + std::to_string(g.c) +
           ", 1, 1], got " + shape_str(ss));
    check_compact(s, op);
    oph::TensorRef y = ensure_output(ctx, 0, x.shape(), op);
    if (!y.present()) return;
    const float* X = static_cast<const float*>(x.data());
    const float* S = static_cast<const float*>(s.data());
    float* Y = static_cast<float*>(y.data());
    const size_t blocks = g.n * g.c / g.block, hw = g.hw, c = g.c;
    const bool s_batch = ss[0] != 1;
    const size_t grain = std::max<size_t>(1, kGrain / std::max<size_t>(1, hw * g.block)), B = g.block;
    parallel_for(blocks, grain, [=](size_t lo, size_t hi) { mul_blocks(X, S, Y, lo, hi - lo, hw, c, B, s_batch); });
  }
};

void register_blocked_se(oph::Pack& pack) {
  pack.op("com.ophost", "BlockedGlobalAveragePool")
      .versions(1, OPH_OPSET_MAX)
      .doc("GlobalAveragePool of a channel-blocked (nChw8c/16c) 4-D float32 X; Y [N, C, 1, 1] (the same bytes "
           "blocked or plain); written by the host's nchwc-layout pass")
      .input("X", "T")
      .output("Y", "T")
      .types("T", {f32})
      .infer([](oph::InferContext& c) {
        blocked_check_infer(c, "BlockedGlobalAveragePool");
        if (!c.input_rank_known(0)) return c.set_output_unknown_rank(0, c.input_dtype(0));
        auto s = c.input_shape(0);
        c.set_output(0, c.input_dtype(0), {s[0], s[1], 1, 1});
      })
      .kernel<BlockedGapK>();
  pack.op("com.ophost", "BlockedMul")
      .versions(1, OPH_OPSET_MAX)
      .doc("X * S for a channel-blocked (nChw8c/16c) 4-D float32 X and S of shape [N or 1, C, 1, 1] (an SE "
           "block's scale); Y blocked like X; written by the host's nchwc-layout pass")
      .input("X", "T")
      .input("S", "T")
      .output("Y", "T")
      .types("T", {f32})
      .infer([](oph::InferContext& c) {
        blocked_check_infer(c, "BlockedMul");
        if (!c.input_rank_known(0)) return c.set_output_unknown_rank(0, c.input_dtype(0));
        c.set_output(0, c.input_dtype(0), c.input_shape(0));
      })
      .kernel<BlockedMulK>();
}

}  // namespace

static const Family kFamily("blocked_se", &register_blocked_se);

}  // namespace onnx_core
