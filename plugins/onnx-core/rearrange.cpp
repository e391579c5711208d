// onnx-core: rearrangements that move elements without changing them: DepthToSpace, SpaceToDepth, ReverseSequence.
#include "common.hpp"

#include <string>

namespace onnx_core {
namespace {

// blocksize of DepthToSpace/SpaceToDepth: positive, and blocksize^2 must not overflow.
int64_t checked_blocksize(int64_t b, const char* op) {
  if (b <= 0) fail(std::string(op) + ": blocksize must be positive, got " + std::to_string(b));
  if (b > (int64_t{1} << 31)) fail(std::string(op) + ": blocksize " + std::to_string(b) + " is too large");
  return b;
}

int64_t checked_mul(int64_t a, int64_t b, const char* op) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) fail(std::string(op) + ": output dimension overflows int64");
  return r;
}

void depth_space_compute(const oph::KernelContext& ctx, bool to_space, int32_t since) {
  const std::string op = to_space ? "DepthToSpace" : "SpaceToDepth";
  oph::TensorRef x = input(ctx, 0, op);
  if (x.ndim() != 4) fail(op + ": input must be 4-D [N, C, H, W]");
  const int64_t b = ctx.attr<int64_t>("blocksize");
  if (b <= 0) fail(op + ": blocksize must be positive");
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  std::vector<int64_t> oshape, shape6, strides6;
  if (to_space) {
    if (C % (b * b) != 0) fail(op + ": channels must be divisible by blocksize^2");
    const int64_t Cp = C / (b * b);
    const bool crd = since >= 11 && ctx.attr<std::string>("mode") == "CRD";
    if (since >= 11) {
      std::string mode = ctx.attr<std::string>("mode");
      if (mode != "DCR" && mode != "CRD") fail(op + ": mode must be DCR or CRD, got '" + mode + "'");
    }
    oshape = {N, Cp, H * b, W * b};
    shape6 = {N, Cp, H, b, W, b};
    if (crd) strides6 = {C * H * W, b * b * H * W, W, b * H * W, 1, H * W};
    else strides6 = {C * H * W, H * W, W, b * Cp * H * W, 1, Cp * H * W};
  } else {
    if (H % b != 0 || W % b != 0) fail(op + ": height and width must be divisible by blocksize");
    oshape = {N, C * b * b, H / b, W / b};
    shape6 = {N, b, b, C, H / b, W / b};
    strides6 = {C * H * W, W, 1, H * W, b * W, b};
  }
  oph::TensorRef y = ensure_output(ctx, 0, oshape, op);
  if (!y.present()) return;
  strided_copy(y.data(), x.data(), elem_size(x.dtype()), shape6, strides6, 0);
}

void register_depth_space(oph::Pack& pack) {
  for (auto vr : {std::pair{1, 10}, std::pair{11, OPH_OPSET_MAX}}) {
    const int32_t since = vr.first, until = vr.second;
    oph::OpBuilder& b = pack.op(kDomain, "DepthToSpace")
                            .versions(since, until)
                            .doc("rearranges depth blocks into spatial blocks")
                            .required_attr("blocksize", OPH_ATTR_INT)
                            .input("input", "T")
                            .output("output", "T")
                            .infer([](oph::InferContext& c) {
                              if (!c.input_rank_known(0) || c.input_shape(0).size() != 4) {
                                c.set_output_unknown_rank(0, c.input_dtype(0));
                                return;
                              }
                              auto s = c.input_shape(0);
                              const int64_t b = checked_blocksize(c.attr<int64_t>("blocksize"), "DepthToSpace");
                              if (s[1] >= 0 && s[1] % (b * b) != 0)
                                fail("DepthToSpace: channels " + std::to_string(s[1]) +
                                     " must be divisible by blocksize^2 = " + std::to_string(b * b));
                              auto m = [b](int64_t d) { return d < 0 ? OPH_DIM_UNKNOWN : checked_mul(d, b, "DepthToSpace"); };
                              c.set_output(0, c.input_dtype(0),
                                           {s[0], s[1] < 0 ? OPH_DIM_UNKNOWN : s[1] / (b * b), m(s[2]), m(s[3])});
                            })
                            .compute([since](oph::KernelContext& ctx) { depth_space_compute(ctx, true, since); });
    if (since >= 11) b.attr("mode", std::string("DCR"));
    add_types(b, "T", kAll);
  }
  oph::OpBuilder& b = pack.op(kDomain, "SpaceToDepth")
                          .versions(1, OPH_OPSET_MAX)
                          .doc("rearranges spatial blocks into depth")
                          .required_attr("blocksize", OPH_ATTR_INT)
                          .input("input", "T")
                          .output("output", "T")
                          .infer([](oph::InferContext& c) {
                            if (!c.input_rank_known(0) || c.input_shape(0).size() != 4) {
                              c.set_output_unknown_rank(0, c.input_dtype(0));
                              return;
                            }
                            auto s = c.input_shape(0);
                            const int64_t b = checked_blocksize(c.attr<int64_t>("blocksize"), "SpaceToDepth");
                            for (int k = 2; k < 4; ++k)
                              if (s[k] >= 0 && s[k] % b != 0)
                                fail("SpaceToDepth: height and width " + shape_str(s) + " must be divisible by blocksize " +
                                     std::to_string(b));
                            auto d = [b](int64_t v) { return v < 0 ? OPH_DIM_UNKNOWN : v / b; };
                            c.set_output(0, c.input_dtype(0),
                                         {s[0], s[1] < 0 ? OPH_DIM_UNKNOWN : checked_mul(s[1], b * b, "SpaceToDepth"), d(s[2]),
                                          d(s[3])});
                          })
                          .compute([](oph::KernelContext& ctx) { depth_space_compute(ctx, false, 1); });
  add_types(b, "T", kAll);
}

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

void register_rearrange(oph::Pack& pack) {
  register_depth_space(pack);
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
}

}  // namespace

static const Family kFamily("rearrange", &register_rearrange);

}  // namespace onnx_core
