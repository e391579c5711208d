// onnx-core: Pad (constant, reflect, edge and wrap modes).
#include "common.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>

namespace onnx_core {
namespace {

struct PadArgs {
  std::string mode;
  std::vector<int64_t> pads;  // 2 * rank: begins then ends
};

std::vector<int64_t> pad_full(std::span<const int64_t> in, std::vector<int64_t> pads, const std::vector<int64_t>& axes,
                              const std::string& op) {
  const int64_t r = static_cast<int64_t>(in.size());
  if (axes.empty()) {
    if (static_cast<int64_t>(pads.size()) != 2 * r)
      fail(op + ": pads has " + std::to_string(pads.size()) + " entries, expected " + std::to_string(2 * r));
    return pads;
  }
  const size_t na = axes.size();
  if (pads.size() != 2 * na) fail(op + ": pads must have 2 entries per axis");
  std::vector<int64_t> full(static_cast<size_t>(2 * r), 0);
  for (size_t k = 0; k < na; ++k) {
    int64_t a = normalize_axis(axes[k], r, true, op);
    full[static_cast<size_t>(a)] = pads[k];
    full[static_cast<size_t>(a + r)] = pads[k + na];
  }
  return full;
}

std::vector<int64_t> pad_shape(std::span<const int64_t> in, const std::vector<int64_t>& pads) {
  const size_t r = in.size();
  std::vector<int64_t> out(r);
  for (size_t k = 0; k < r; ++k) out[k] = in[k] < 0 ? OPH_DIM_UNKNOWN : in[k] + pads[k] + pads[k + r];
  return out;
}

void pad_run(const oph::KernelContext& ctx, const oph::TensorRef& x, const std::vector<int64_t>& pads,
             const std::string& mode, const void* fill, const std::string& op) {
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    fail(op + ": mode '" + mode + "' is not supported (constant, reflect, edge, wrap)");
  auto in = x.shape();
  const size_t r = in.size();
  std::vector<int64_t> oshape = pad_shape(in, pads);
  for (int64_t d : oshape)
    if (d < 0) fail(op + ": pads give a negative output dimension");
  oph::TensorRef y = ensure_output(ctx, 0, oshape, op);
  if (!y.present()) return;
  const size_t n = oph::numel(oshape), es = elem_size(x.dtype());
  if (mode != "constant")
    for (size_t k = 0; k < r; ++k)
      if (in[k] == 0 && oshape[k] > 0) fail(op + ": cannot pad an empty axis in mode '" + mode + "'");
  if (n == 0) return;
  if (r == 0) {  // a scalar: nothing to pad
    std::memcpy(y.data(), x.data(), es);
    return;
  }
  enum class Mode { kConstant, kEdge, kWrap, kReflect };
  const Mode md = mode == "constant" ? Mode::kConstant : mode == "edge" ? Mode::kEdge : mode == "wrap" ? Mode::kWrap
                                                                                                     : Mode::kReflect;
  // Source coordinate of output coordinate c (already shifted by the begin pad) on an axis of length d; -1 when
  // it falls outside in constant mode.
  auto map = [md](int64_t c, int64_t d) -> int64_t {
    if (c >= 0 && c < d) return c;
    switch (md) {
      case Mode::kConstant: return -1;
      case Mode::kEdge: return std::clamp<int64_t>(c, 0, d - 1);
      case Mode::kWrap: return ((c % d) + d) % d;
      case Mode::kReflect:
        if (d == 1) return 0;
        {
          const int64_t period = 2 * (d - 1);
          c = ((c % period) + period) % period;
          return c >= d ? period - c : c;
        }
    }
    return -1;
  };
  auto st = compact_strides(in);
  const char* S = static_cast<const char*>(x.data());
  char* D = static_cast<char*>(y.data());
  // Row by row along the innermost axis: the part of a row inside the input is one memcpy; only the borders
  // are mapped element by element (a per-element index decomposition made PP-OCR/M-LSD's Pads 10-50x slower).
  const int64_t W = oshape[r - 1], in_w = in[r - 1], pb = pads[r - 1];
  const size_t rows = W ? n / static_cast<size_t>(W) : 0;
  const int64_t mid_lo = std::clamp<int64_t>(pb, 0, W), mid_hi = std::clamp<int64_t>(pb + in_w, mid_lo, W);
  for (size_t row = 0; row < rows; ++row) {
    size_t rem = row;
    int64_t off = 0;
    bool outside = false;
    for (size_t k = r - 1; k-- > 0;) {
      int64_t c = static_cast<int64_t>(rem % static_cast<size_t>(oshape[k]));
      rem /= static_cast<size_t>(oshape[k]);
      c = map(c - pads[k], in[k]);
      if (c < 0) {
        outside = true;
        break;
      }
      off += c * st[k];
    }
    char* dst = D + row * static_cast<size_t>(W) * es;
    if (outside) {
      for (int64_t j = 0; j < W; ++j) std::memcpy(dst + static_cast<size_t>(j) * es, fill, es);
      continue;
    }
    const char* src = S + static_cast<size_t>(off) * es;
    if (mid_hi > mid_lo)
      std::memcpy(dst + static_cast<size_t>(mid_lo) * es, src + static_cast<size_t>(mid_lo - pb) * es,
                  static_cast<size_t>(mid_hi - mid_lo) * es);
    auto border = [&](int64_t j) {
      const int64_t c = map(j - pb, in_w);
      std::memcpy(dst + static_cast<size_t>(j) * es, c < 0 ? fill : src + static_cast<size_t>(c) * es, es);
    };
    for (int64_t j = 0; j < mid_lo; ++j) border(j);
    for (int64_t j = mid_hi; j < W; ++j) border(j);
  }
}

void register_pad(oph::Pack& pack) {
  {
    oph::OpBuilder& b = pack.op(kDomain, "Pad")
                            .versions(2, 10)
                            .doc("pad with a constant, reflection or the edge values (attributes)")
                            .attr("mode", std::string("constant"))
                            .required_attr("pads", OPH_ATTR_INTS)
                            .attr("value", 0.0f)
                            .input("data", "T")
                            .output("output", "T")
                            .infer([](oph::InferContext& c) {
                              if (!c.input_rank_known(0)) {
                                c.set_output_unknown_rank(0, c.input_dtype(0));
                                return;
                              }
                              auto pads = pad_full(c.input_shape(0), c.attr<std::vector<int64_t>>("pads"), {}, "Pad");
                              c.set_output(0, c.input_dtype(0), pad_shape(c.input_shape(0), pads));
                            })
                            .compute([](oph::KernelContext& ctx) {
                              oph::TensorRef x = input(ctx, 0, "Pad");
                              auto pads = pad_full(x.shape(), ctx.attr<std::vector<int64_t>>("pads"), {}, "Pad");
                              float v = ctx.attr<float>("value");
                              std::array<unsigned char, 8> fill{};
                              dispatch_float(x.dtype(), "Pad", [&]<class T>(std::type_identity<T>) {
                                T t = static_cast<T>(v);
                                std::memcpy(fill.data(), &t, sizeof(T));
                              });
                              pad_run(ctx, x, pads, ctx.attr<std::string>("mode"), fill.data(), "Pad");
                            });
    add_types(b, "T", kFloat);
  }
  for (auto vr : {std::pair{11, 17}, std::pair{18, OPH_OPSET_MAX}}) {
    const int32_t since = vr.first, until = vr.second;
    const bool has_axes = since >= 18;
    oph::OpBuilder& b = pack.op(kDomain, "Pad")
                            .versions(since, until)
                            .doc("pad with a constant, reflection or the edge values (pads as an input)")
                            .attr("mode", std::string("constant"))
                            .input("data", "T")
                            .input("pads", "I", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)
                            .optional_input("constant_value", "T", OPH_MEMORY_HOST)
                            .types("I", {i64});
    if (has_axes) b.optional_input("axes", "Tind", OPH_MEMORY_HOST).types("Tind", {i32, i64});
    b.output("output", "T")
        .infer([has_axes](oph::InferContext& c) {
          if (!c.input_rank_known(0)) {
            c.set_output_unknown_rank(0, c.input_dtype(0));
            return;
          }
          auto in = c.input_shape(0);
          auto pads = const_ints(c, 1, "Pad", "pads");
          std::optional<std::vector<int64_t>> axes = std::vector<int64_t>{};
          if (has_axes && c.has_input(3)) axes = const_ints(c, 3, "Pad", "axes");
          if (!pads || !axes) {
            c.set_output(0, c.input_dtype(0), std::vector<int64_t>(in.size(), OPH_DIM_UNKNOWN));
            return;
          }
          c.set_output(0, c.input_dtype(0), pad_shape(in, pad_full(in, *pads, *axes, "Pad")));
        })
        .compute([has_axes](oph::KernelContext& ctx) {
          oph::TensorRef x = input(ctx, 0, "Pad");
          std::vector<int64_t> axes;
          if (has_axes && ctx.num_inputs() > 3 && ctx.input(3).present()) axes = read_ints(ctx.input(3).raw(), "Pad", "axes");
          auto pads = pad_full(x.shape(), read_ints(ctx.input(1).raw(), "Pad", "pads"), axes, "Pad");
          std::array<unsigned char, 8> fill{};
          if (ctx.num_inputs() > 2 && ctx.input(2).present() && ctx.input(2).size() > 0)
            std::memcpy(fill.data(), ctx.input(2).data(), elem_size(x.dtype()));
          pad_run(ctx, x, pads, ctx.attr<std::string>("mode"), fill.data(), "Pad");
        });
    add_types(b, "T", kAll);
  }
}

}  // namespace

static const Family kFamily("pad", &register_pad);

}  // namespace onnx_core
