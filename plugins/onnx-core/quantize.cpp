// onnx-core: linear quantization: QuantizeLinear (10, 13), DequantizeLinear (10, 13), DynamicQuantizeLinear (11).
// The integer matmul and conv ops are in qmatmul.cpp and qconv.cpp.
// Rounding is round-half-to-even (std::nearbyint in the default rounding mode), saturating to the target type.
#include "common.hpp"
#include "quant_ref.hpp"
#include "quant_simd.hpp"

#include <cfenv>
#include <cmath>
#include <limits>

namespace onnx_core {
namespace {

using quant::dispatch_q8;
using quant::float_at;
using quant::int_at;
using quant::saturate_round;


// Per-tensor (scalar) or per-axis (1-D of x.shape[axis]) quantization parameters: returns (blocks, axis dim, inner).
struct AxisSplit {
  size_t outer = 1, dim = 1, inner = 1;
  bool per_axis = false;
};
AxisSplit split_for(std::span<const int64_t> xs, const oph::TensorRef& scale, int64_t axis, bool has_axis,
                    const std::string& op) {
  AxisSplit s;
  if (scale.size() == 1 && scale.ndim() <= 1) {
    s.inner = oph::numel(xs);
    return s;
  }
  if (!has_axis) fail(op + ": scale must be a scalar in this opset, got shape " + shape_str(scale.shape()));
  if (scale.ndim() != 1) fail(op + ": scale must be a scalar or 1-D, got shape " + shape_str(scale.shape()));
  int64_t ax = normalize_axis(axis, static_cast<int64_t>(xs.size()), true, op);
  if (static_cast<int64_t>(scale.size()) != xs[ax])
    fail(op + ": per-axis scale has " + std::to_string(scale.size()) + " values, axis " + std::to_string(ax) +
         " of the input has " + std::to_string(xs[ax]));
  s.per_axis = true;
  s.outer = oph::numel(xs.first(ax));
  s.dim = xs[ax];
  s.inner = oph::numel(xs.subspan(ax + 1));
  return s;
}

// Runs f(base, n, d) over [0, outer * dim * inner) in chunks of at most kGrain elements, each inside one
// (outer, axis) block whose axis index is d: the quantization parameters of a chunk are those of d.
template <class F>
void for_each_axis_chunk(const AxisSplit& s, F&& f) {
  const size_t chunk = std::max<size_t>(1, std::min(s.inner, kGrain));
  const size_t per_block = (s.inner + chunk - 1) / chunk;
  parallel_for(s.outer * s.dim * per_block, 1, [&](size_t lo, size_t hi) {
    for (size_t t = lo; t < hi; ++t) {
      const size_t blk = t / per_block, d = blk % s.dim, i0 = (t % per_block) * chunk;
      f(blk * s.inner + i0, std::min(chunk, s.inner - i0), d);
    }
  });
}

void check_zp(const oph::TensorRef& zp, const oph::TensorRef& scale, const std::string& op) {
  if (zp.present() && zp.size() != scale.size())
    fail(op + ": zero point has " + std::to_string(zp.size()) + " values but scale has " + std::to_string(scale.size()));
}

// ----- QuantizeLinear -----

void quantize_compute(oph::KernelContext& ctx, bool has_axis) {
  const std::string op = "QuantizeLinear";
  oph::TensorRef x = input(ctx, 0, op), sc = input(ctx, 1, op), zp = ctx.input(2);
  oph::TensorRef y = ensure_output(ctx, 0, x.shape(), op);
  if (!y.present()) return;
  check_zp(zp, sc, op);
  AxisSplit s = split_for(x.shape(), sc, has_axis ? ctx.attr<int64_t>("axis") : 1, has_axis, op);
  const bool is_signed = y.dtype() == i8;
  if (!is_signed && !(y.dtype() == u8))
    fail(op + ": dtype " + oph::dtype_name(y.dtype()) + " is not supported (uint8 and int8 are)", OPH_CODE_UNIMPLEMENTED);
  if (x.dtype() == f32) {  // vectorised, in chunks of one (outer, axis) block each
    const float* xp = static_cast<const float*>(x.data());
    char* yp = static_cast<char*>(y.data());
    for_each_axis_chunk(s, [&](size_t base, size_t n, size_t d) {
      quant_simd::quantize(xp + base, n, float_at(sc, d), zp.present() ? int_at(zp, d) : 0, is_signed, yp + base);
    });
    return;
  }
  dispatch_q8(y.dtype(), op, [&]<class Q>(std::type_identity<Q>) {  // int32 x
    Q* yp = static_cast<Q*>(y.data());
    const int32_t* xp = static_cast<const int32_t*>(x.data());
    for (size_t o = 0; o < s.outer; ++o)
      for (size_t d = 0; d < s.dim; ++d) {
        const float scale = float_at(sc, d);
        const int32_t z = zp.present() ? int_at(zp, d) : 0;
        const size_t base = (o * s.dim + d) * s.inner;
        for (size_t i = 0; i < s.inner; ++i) {
          // Round x / scale first, then add the zero point (as the ONNX reference does).
          float q = std::nearbyint(static_cast<float>(xp[base + i]) / scale) + static_cast<float>(z);
          yp[base + i] = saturate_round<Q>(q);
        }
      }
  });
}

// What can be known at load about (De)QuantizeLinear's parameters, checked at load: a constant scale's values
// (finite, > 0), the axis against x's rank, and a per-axis scale's / zero point's length against that axis.
void check_qparams(const oph::InferContext& c, const std::string& op, bool has_axis) {
  const char* scale_name = op == "QuantizeLinear" ? "y_scale" : "x_scale";
  const char* zp_name = op == "QuantizeLinear" ? "y_zero_point" : "x_zero_point";
  const oph_tensor* sc = c.input_constant(1);
  size_t n = 0;
  if (sc) {
    n = oph::numel({sc->shape, static_cast<size_t>(sc->ndim)});
    if (sc->dtype == f32) {
      const float* f = reinterpret_cast<const float*>(static_cast<const char*>(sc->data) + sc->byte_offset);
      for (size_t i = 0; i < n; ++i)
        if (!(f[i] > 0) || !std::isfinite(f[i]))
          fail(op + ": " + scale_name + "[" + std::to_string(i) + "] is " + std::to_string(f[i]) +
               "; a quantization scale must be a finite positive number (re-export or re-quantize the model)");
    }
  }
  if (c.has_input(2) && c.input_rank_known(1) && c.input_rank_known(2)) {
    const int64_t a = product_or_unknown(c.input_shape(1)), b = product_or_unknown(c.input_shape(2));
    if (a >= 0 && b >= 0 && a != b)
      fail(op + ": " + zp_name + " has " + std::to_string(b) + " values but " + scale_name + " has " +
           std::to_string(a) + "; they must match (one per channel of the axis, or one each)");
  }
  if (!has_axis || !c.input_rank_known(0) || !sc || n <= 1) return;
  const auto xs = c.input_shape(0);
  const int64_t rank = static_cast<int64_t>(xs.size());
  const int64_t axis = c.attrs().get<int64_t>("axis");
  if (axis < -rank || axis >= rank)
    fail(op + ": axis " + std::to_string(axis) + " is out of range for x of rank " + std::to_string(rank));
  const int64_t dim = xs[axis < 0 ? axis + rank : axis];
  if (dim >= 0 && static_cast<int64_t>(n) != dim)
    fail(op + ": the per-axis " + scale_name + " has " + std::to_string(n) + " values but axis " +
         std::to_string(axis) + " of x has " + std::to_string(dim) + "; give one per channel of that axis or set axis");
}

void quantize_infer(oph::InferContext& c, bool has_axis) {
  check_qparams(c, "QuantizeLinear", has_axis);
  oph_dtype out = c.has_input(2) ? c.input_dtype(2) : u8;
  if (!c.input_rank_known(0)) return c.set_output_unknown_rank(0, out);
  c.set_output(0, out, c.input_shape(0));
}

// ----- DequantizeLinear -----

void dequantize_compute(oph::KernelContext& ctx, bool has_axis) {
  const std::string op = "DequantizeLinear";
  oph::TensorRef x = input(ctx, 0, op), sc = input(ctx, 1, op), zp = ctx.input(2);
  oph::TensorRef y = ensure_output(ctx, 0, x.shape(), op);
  if (!y.present()) return;
  check_zp(zp, sc, op);
  if (zp.present() && !(zp.dtype() == x.dtype())) fail(op + ": x_zero_point must have x's dtype");
  AxisSplit s = split_for(x.shape(), sc, has_axis ? ctx.attr<int64_t>("axis") : 1, has_axis, op);
  float* yp = static_cast<float*>(y.data());
  if (x.dtype() == u8 || x.dtype() == i8) {  // vectorised, in chunks of one (outer, axis) block each
    const char* xp = static_cast<const char*>(x.data());
    const bool is_signed = x.dtype() == i8;
    for_each_axis_chunk(s, [&](size_t base, size_t n, size_t d) {
      quant_simd::dequantize(xp + base, is_signed, n, float_at(sc, d), zp.present() ? int_at(zp, d) : 0, yp + base);
    });
    return;
  }
  for (size_t o = 0; o < s.outer; ++o)
    for (size_t d = 0; d < s.dim; ++d) {
      const float scale = float_at(sc, d);
      const int32_t z = zp.present() ? int_at(zp, d) : 0;
      if (x.dtype() == i32 && z != 0) fail(op + ": an int32 input requires a zero point of 0");
      const size_t base = (o * s.dim + d) * s.inner;
      for (size_t i = 0; i < s.inner; ++i)
        yp[base + i] = static_cast<float>(static_cast<int64_t>(int_at(x, base + i)) - z) * scale;
    }
}

// ----- DynamicQuantizeLinear -----

void dynamic_quantize_compute(oph::KernelContext& ctx) {
  const std::string op = "DynamicQuantizeLinear";
  oph::TensorRef x = input(ctx, 0, op);
  const float* xp = static_cast<const float*>(x.data());
  const size_t n = x.size();
  float lo = 0, hi = 0;  // the range always includes 0
  if (n) {
    const size_t chunk = kGrain * 4, chunks = (n + chunk - 1) / chunk;
    std::vector<float> los(chunks), his(chunks);
    parallel_for(chunks, 1, [&](size_t b, size_t e) {
      for (size_t c = b; c < e; ++c)
        quant_simd::min_max(xp + c * chunk, std::min(chunk, n - c * chunk), &los[c], &his[c]);
    });
    for (size_t c = 0; c < chunks; ++c) {
      if (!std::isnan(los[c])) lo = std::min(lo, los[c]);
      if (!std::isnan(his[c])) hi = std::max(hi, his[c]);
    }
  }
  const float scale = (hi - lo) / 255.0f;
  const uint8_t zp = scale == 0 ? 0 : saturate_round<uint8_t>((0.0f - lo) / scale);
  oph::TensorRef y = ensure_output(ctx, 0, x.shape(), op);
  oph::TensorRef ys = ensure_output(ctx, 1, {}, op), yz = ensure_output(ctx, 2, {}, op);
  if (y.present()) {
    uint8_t* yp = static_cast<uint8_t*>(y.data());
    if (scale == 0) std::memset(yp, zp, n);
    else
      parallel_for(n, kGrain, [&](size_t b, size_t e) { quant_simd::quantize(xp + b, e - b, scale, zp, false, yp + b); });
  }
  if (ys.present()) *static_cast<float*>(ys.data()) = scale;
  if (yz.present()) *static_cast<uint8_t*>(yz.data()) = zp;
}

void register_quantize(oph::Pack& pack) {
  for (int since : {10, 13}) {
    const bool has_axis = since >= 13;
    auto& q = pack.op(kDomain, "QuantizeLinear")
                  .versions(since, since == 10 ? 12 : 18)
                  .doc("linear quantization to uint8/int8, round half to even, saturating")
                  .input("x", "T1")
                  .input("y_scale", "tensor(float)")
                  .optional_input("y_zero_point", "T2")
                  .output("y", "T2");
    if (has_axis) q.attr("axis", int64_t{1});
    add_types(q, "T1", {f32, i32});
    q.types("tensor(float)", {f32}).types("T2", {i8, u8});
    q.infer([has_axis](oph::InferContext& c) { quantize_infer(c, has_axis); }).compute([has_axis](oph::KernelContext& ctx) { quantize_compute(ctx, has_axis); });

    auto& d = pack.op(kDomain, "DequantizeLinear")
                  .versions(since, since == 10 ? 12 : 18)
                  .doc("linear dequantization to float32")
                  .input("x", "T")
                  .input("x_scale", "tensor(float)")
                  .optional_input("x_zero_point", "T")
                  .output("y", "tensor(float)");
    if (has_axis) d.attr("axis", int64_t{1});
    add_types(d, "T", {i8, u8, i32});
    d.types("tensor(float)", {f32});
    d.infer([has_axis](oph::InferContext& c) {
       check_qparams(c, "DequantizeLinear", has_axis);
       if (!c.input_rank_known(0)) return c.set_output_unknown_rank(0, f32);
       c.set_output(0, f32, c.input_shape(0));
     }).compute([has_axis](oph::KernelContext& ctx) { dequantize_compute(ctx, has_axis); });
  }

  pack.op(kDomain, "DynamicQuantizeLinear")
      .versions(11, OPH_OPSET_MAX)
      .doc("uint8 quantization with scale and zero point computed from the input's range")
      .input("x", "T1")
      .output("y", "T2")
      .output("y_scale", "tensor(float)")
      .output("y_zero_point", "T2")
      .types("T1", {f32})
      .types("T2", {u8})
      .types("tensor(float)", {f32})
      .infer([](oph::InferContext& c) {
        if (!c.input_rank_known(0)) c.set_output_unknown_rank(0, u8);
        else c.set_output(0, u8, c.input_shape(0));
        c.set_output(1, f32, std::span<const int64_t>());
        c.set_output(2, u8, std::span<const int64_t>());
      })
      .compute(&dynamic_quantize_compute);
}

}  // namespace

static const Family kFamily("quantize", &register_quantize);

}  // namespace onnx_core
