// onnx-core: linear quantization: QuantizeLinear (10, 13), DequantizeLinear (10, 13), DynamicQuantizeLinear (11),
// MatMulInteger (10), QLinearMatMul (10), ConvInteger (10), QLinearConv (10).
// Rounding is round-half-to-even (std::nearbyint in the default rounding mode), saturating to the target type.
#include "common.hpp"

#include <cfenv>
#include <cmath>
#include <limits>

namespace onnx_core {
namespace {

template <class Q>
Q saturate_round(float v) {
  float r = std::nearbyint(v);
  r = std::max<float>(r, static_cast<float>(std::numeric_limits<Q>::lowest()));
  r = std::min<float>(r, static_cast<float>(std::numeric_limits<Q>::max()));
  return static_cast<Q>(r);
}

template <class F>
void dispatch_q8(oph_dtype d, const std::string& op, F&& f) {
  if (d == u8) f(std::type_identity<uint8_t>{});
  else if (d == i8) f(std::type_identity<int8_t>{});
  else fail(op + ": dtype " + oph::dtype_name(d) + " is not supported (uint8 and int8 are)", OPH_CODE_UNIMPLEMENTED);
}

// Integer value of element i of a uint8/int8/int32 tensor.
int32_t int_at(const oph::TensorRef& t, size_t i) {
  if (t.dtype() == u8) return static_cast<const uint8_t*>(t.data())[i];
  if (t.dtype() == i8) return static_cast<const int8_t*>(t.data())[i];
  if (t.dtype() == i32) return static_cast<const int32_t*>(t.data())[i];
  fail("quantized tensor of dtype " + oph::dtype_name(t.dtype()) + " is not supported", OPH_CODE_UNIMPLEMENTED);
}
float float_at(const oph::TensorRef& t, size_t i) {
  if (t.dtype() == f32) return static_cast<const float*>(t.data())[i];
  fail("scale of dtype " + oph::dtype_name(t.dtype()) + " is not supported (float32 is)", OPH_CODE_UNIMPLEMENTED);
}

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
  dispatch_q8(y.dtype(), op, [&]<class Q>(std::type_identity<Q>) {
    Q* yp = static_cast<Q*>(y.data());
    for (size_t o = 0; o < s.outer; ++o)
      for (size_t d = 0; d < s.dim; ++d) {
        const float scale = float_at(sc, d);
        const int32_t z = zp.present() ? int_at(zp, d) : 0;
        const size_t base = (o * s.dim + d) * s.inner;
        for (size_t i = 0; i < s.inner; ++i) {
          float xv;
          if (x.dtype() == f32) xv = static_cast<const float*>(x.data())[base + i];
          else xv = static_cast<float>(static_cast<const int32_t*>(x.data())[base + i]);
          // Round x / scale first, then add the zero point (as the ONNX reference does).
          float q = std::nearbyint(xv / scale) + static_cast<float>(z);
          yp[base + i] = saturate_round<Q>(q);
        }
      }
  });
}

void quantize_infer(oph::InferContext& c) {
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
  for (size_t i = 0; i < n; ++i) {
    lo = std::min(lo, xp[i]);
    hi = std::max(hi, xp[i]);
  }
  const float scale = (hi - lo) / 255.0f;
  const uint8_t zp = scale == 0 ? 0 : saturate_round<uint8_t>((0.0f - lo) / scale);
  oph::TensorRef y = ensure_output(ctx, 0, x.shape(), op);
  oph::TensorRef ys = ensure_output(ctx, 1, {}, op), yz = ensure_output(ctx, 2, {}, op);
  if (y.present()) {
    uint8_t* yp = static_cast<uint8_t*>(y.data());
    for (size_t i = 0; i < n; ++i)
      yp[i] = scale == 0 ? zp : saturate_round<uint8_t>(std::nearbyint(xp[i] / scale) + static_cast<float>(zp));
  }
  if (ys.present()) *static_cast<float*>(ys.data()) = scale;
  if (yz.present()) *static_cast<uint8_t*>(yz.data()) = zp;
}

// ----- MatMulInteger / QLinearMatMul -----

// numpy matmul shape for A [.., M, K] x B [.., K, N] (1-D operands promoted and the added dim removed).
struct MatMulPlan {
  std::vector<int64_t> out;
  std::vector<int64_t> batch;  // broadcast batch dims
  int64_t M = 1, K = 1, N = 1;
  bool a1d = false, b1d = false;
};
MatMulPlan matmul_plan(std::span<const int64_t> as, std::span<const int64_t> bs, const std::string& op) {
  MatMulPlan p;
  if (as.empty() || bs.empty()) fail(op + ": operands must have rank >= 1");
  std::vector<int64_t> a(as.begin(), as.end()), b(bs.begin(), bs.end());
  if (a.size() == 1) { a.insert(a.begin(), 1); p.a1d = true; }
  if (b.size() == 1) { b.push_back(1); p.b1d = true; }
  p.M = a[a.size() - 2];
  p.K = a.back();
  p.N = b.back();
  if (b[b.size() - 2] != p.K && p.K >= 0 && b[b.size() - 2] >= 0)
    fail(op + ": inner dimensions differ: " + shape_str(as) + " x " + shape_str(bs));
  p.batch = oph::broadcast_shapes(std::span<const int64_t>(a).first(a.size() - 2),
                                  std::span<const int64_t>(b).first(b.size() - 2));
  p.out = p.batch;
  if (!p.a1d) p.out.push_back(p.M);
  if (!p.b1d) p.out.push_back(p.N);
  return p;
}

void matmul_infer(oph::InferContext& c, size_t a, size_t b, oph_dtype out) {
  if (!c.input_rank_known(a) || !c.input_rank_known(b)) return c.set_output_unknown_rank(0, out);
  c.set_output(0, out, matmul_plan(c.input_shape(a), c.input_shape(b), "MatMul").out);
}

// acc[batch, m, n] = sum_k (A - azp[m]) * (B - bzp[n]) in int32.
std::vector<int32_t> int_matmul(const oph::TensorRef& A, const oph::TensorRef& B, const oph::TensorRef& azp,
                                const oph::TensorRef& bzp, const MatMulPlan& p, const std::string& op) {
  const size_t M = p.M, K = p.K, N = p.N;
  if (azp.present() && azp.size() != 1 && azp.size() != M)
    fail(op + ": a_zero_point must be a scalar or have M=" + std::to_string(M) + " values", OPH_CODE_UNIMPLEMENTED);
  if (bzp.present() && bzp.size() != 1 && bzp.size() != N)
    fail(op + ": b_zero_point must be a scalar or have N=" + std::to_string(N) + " values", OPH_CODE_UNIMPLEMENTED);
  auto as = A.shape(), bs = B.shape();
  const size_t nb = oph::numel(p.batch);
  std::vector<int32_t> acc(nb * M * N);
  const size_t br = p.batch.size();
  const size_t a_batch_rank = as.size() >= 2 ? as.size() - 2 : 0, b_batch_rank = bs.size() >= 2 ? bs.size() - 2 : 0;
  for (size_t bi = 0; bi < nb; ++bi) {
    // Offsets of this batch index in A and B (broadcast dims of size 1 stay at 0).
    size_t rem = bi, aoff = 0, boff = 0, astr = M * K, bstr = K * N;
    for (size_t k = br; k-- > 0;) {
      size_t idx = rem % p.batch[k];
      rem /= p.batch[k];
      size_t ka = k + a_batch_rank, kb = k + b_batch_rank;
      if (ka >= br) {
        int64_t d = as[ka - br];
        if (d != 1) aoff += idx * astr;
        astr *= d;
      }
      if (kb >= br) {
        int64_t d = bs[kb - br];
        if (d != 1) boff += idx * bstr;
        bstr *= d;
      }
    }
    for (size_t m = 0; m < M; ++m) {
      const int32_t za = azp.present() ? int_at(azp, azp.size() == 1 ? 0 : m) : 0;
      for (size_t n = 0; n < N; ++n) {
        const int32_t zb = bzp.present() ? int_at(bzp, bzp.size() == 1 ? 0 : n) : 0;
        int32_t s = 0;
        for (size_t k = 0; k < K; ++k)
          s += (int_at(A, aoff + m * K + k) - za) * (int_at(B, boff + k * N + n) - zb);
        acc[(bi * M + m) * N + n] = s;
      }
    }
  }
  return acc;
}

void matmul_integer_compute(oph::KernelContext& ctx) {
  const std::string op = "MatMulInteger";
  oph::TensorRef A = input(ctx, 0, op), B = input(ctx, 1, op);
  MatMulPlan p = matmul_plan(A.shape(), B.shape(), op);
  oph::TensorRef y = ensure_output(ctx, 0, p.out, op);
  if (!y.present()) return;
  auto acc = int_matmul(A, B, ctx.input(2), ctx.input(3), p, op);
  std::memcpy(y.data(), acc.data(), acc.size() * sizeof(int32_t));
}

void qlinear_matmul_compute(oph::KernelContext& ctx) {
  const std::string op = "QLinearMatMul";
  oph::TensorRef A = input(ctx, 0, op), as = input(ctx, 1, op), az = input(ctx, 2, op);
  oph::TensorRef B = input(ctx, 3, op), bs = input(ctx, 4, op), bz = input(ctx, 5, op);
  oph::TensorRef ys = input(ctx, 6, op), yz = input(ctx, 7, op);
  MatMulPlan p = matmul_plan(A.shape(), B.shape(), op);
  oph::TensorRef y = ensure_output(ctx, 0, p.out, op);
  if (!y.present()) return;
  if (as.size() != 1 && as.size() != static_cast<size_t>(p.M)) fail(op + ": a_scale must be a scalar or have M values");
  if (bs.size() != 1 && bs.size() != static_cast<size_t>(p.N)) fail(op + ": b_scale must be a scalar or have N values");
  if (ys.size() != 1 || yz.size() != 1) fail(op + ": y_scale and y_zero_point must be scalars", OPH_CODE_UNIMPLEMENTED);
  auto acc = int_matmul(A, B, az, bz, p, op);
  const float ysc = float_at(ys, 0);
  const int32_t yzp = int_at(yz, 0);
  const size_t M = p.M, N = p.N;
  dispatch_q8(y.dtype(), op, [&]<class Q>(std::type_identity<Q>) {
    Q* yp = static_cast<Q*>(y.data());
    for (size_t i = 0; i < acc.size(); ++i) {
      size_t n = i % N, m = (i / N) % M;
      const float scale = float_at(as, as.size() == 1 ? 0 : m) * float_at(bs, bs.size() == 1 ? 0 : n) / ysc;
      yp[i] = saturate_round<Q>(std::nearbyint(static_cast<float>(acc[i]) * scale) + static_cast<float>(yzp));
    }
  });
}

// ----- ConvInteger / QLinearConv -----

struct ConvGeom {
  std::vector<int64_t> kernel, strides, dilations, pads, out;  // pads: begins then ends
  int64_t group = 1;
};

ConvGeom conv_geom(const oph::Attrs& at, std::span<const int64_t> xs, std::span<const int64_t> ws,
                   const std::string& op) {
  if (xs.size() < 3) fail(op + ": X must have rank >= 3 (N, C, spatial...), got " + shape_str(xs));
  if (ws.size() != xs.size()) fail(op + ": W must have X's rank, got " + shape_str(ws));
  const size_t sp = xs.size() - 2;
  ConvGeom g;
  g.group = at.get<int64_t>("group");
  if (g.group < 1) fail(op + ": group must be >= 1");
  g.kernel = at.has("kernel_shape") ? at.get<std::vector<int64_t>>("kernel_shape")
                                    : std::vector<int64_t>(ws.begin() + 2, ws.end());
  g.strides = at.has("strides") ? at.get<std::vector<int64_t>>("strides") : std::vector<int64_t>(sp, 1);
  g.dilations = at.has("dilations") ? at.get<std::vector<int64_t>>("dilations") : std::vector<int64_t>(sp, 1);
  g.pads = at.has("pads") ? at.get<std::vector<int64_t>>("pads") : std::vector<int64_t>(2 * sp, 0);
  if (g.kernel.size() != sp || g.strides.size() != sp || g.dilations.size() != sp || g.pads.size() != 2 * sp)
    fail(op + ": kernel_shape, strides, dilations and pads must match the " + std::to_string(sp) + " spatial dims");
  for (size_t i = 0; i < sp; ++i)
    if (g.kernel[i] != ws[i + 2]) fail(op + ": kernel_shape disagrees with W's shape " + shape_str(ws));
  const std::string ap = at.get<std::string>("auto_pad");
  g.out = {xs[0], ws[0]};
  for (size_t i = 0; i < sp; ++i) {
    const int64_t in = xs[i + 2], ek = (g.kernel[i] - 1) * g.dilations[i] + 1, s = g.strides[i];
    if (in < 0) {
      g.out.push_back(OPH_DIM_UNKNOWN);
      continue;
    }
    if (ap == "NOTSET") {
    } else if (ap == "VALID") {
      g.pads[i] = g.pads[i + sp] = 0;
    } else if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
      const int64_t o = (in + s - 1) / s;
      const int64_t total = std::max<int64_t>(0, (o - 1) * s + ek - in);
      const int64_t small = total / 2, big = total - small;
      g.pads[i] = ap == "SAME_UPPER" ? small : big;
      g.pads[i + sp] = ap == "SAME_UPPER" ? big : small;
    } else {
      fail(op + ": auto_pad '" + ap + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
    }
    const int64_t o = (in + g.pads[i] + g.pads[i + sp] - ek) / s + 1;
    if (o < 1) fail(op + ": the kernel does not fit the padded input");
    g.out.push_back(o);
  }
  if (xs[1] >= 0 && ws[1] >= 0 && xs[1] != ws[1] * g.group)
    fail(op + ": X has " + std::to_string(xs[1]) + " channels, W expects " + std::to_string(ws[1] * g.group));
  return g;
}

// acc[n, m, out...] = sum (x - xzp) * (w - wzp[m]); padding contributes 0 (x == xzp).
std::vector<int32_t> int_conv(const oph::TensorRef& X, const oph::TensorRef& W, const oph::TensorRef& xzp,
                              const oph::TensorRef& wzp, const ConvGeom& g, const std::string& op) {
  auto xs = X.shape(), ws = W.shape();
  const size_t sp = xs.size() - 2;
  const int64_t N = xs[0], C = xs[1], M = ws[0], Cg = ws[1], Mg = M / g.group;
  if (M % g.group) fail(op + ": W's output channels are not divisible by group");
  if (xzp.present() && xzp.size() != 1) fail(op + ": x_zero_point must be a scalar", OPH_CODE_UNIMPLEMENTED);
  if (wzp.present() && wzp.size() != 1 && wzp.size() != static_cast<size_t>(M))
    fail(op + ": w_zero_point must be a scalar or have one value per output channel");
  const int32_t zx = xzp.present() ? int_at(xzp, 0) : 0;
  std::vector<int64_t> in_sp(xs.begin() + 2, xs.end()), out_sp(g.out.begin() + 2, g.out.end());
  const size_t in_plane = oph::numel(in_sp), out_plane = oph::numel(out_sp), kvol = oph::numel(g.kernel);
  std::vector<int32_t> acc(static_cast<size_t>(N * M) * out_plane, 0);
  std::vector<int64_t> oi(sp), ki(sp);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      const int32_t zw = wzp.present() ? int_at(wzp, wzp.size() == 1 ? 0 : m) : 0;
      const int64_t grp = m / Mg;
      for (size_t o = 0; o < out_plane; ++o) {
        size_t r = o;
        for (size_t d = sp; d-- > 0;) { oi[d] = r % out_sp[d]; r /= out_sp[d]; }
        int32_t s = 0;
        for (int64_t c = 0; c < Cg; ++c) {
          const size_t xbase = static_cast<size_t>(n * C + grp * Cg + c) * in_plane;
          const size_t wbase = static_cast<size_t>(m * Cg + c) * kvol;
          for (size_t k = 0; k < kvol; ++k) {
            size_t rk = k, xoff = 0;
            bool inside = true;
            for (size_t d = sp; d-- > 0;) { ki[d] = rk % g.kernel[d]; rk /= g.kernel[d]; }
            for (size_t d = 0; d < sp; ++d) {
              int64_t p = oi[d] * g.strides[d] - g.pads[d] + ki[d] * g.dilations[d];
              if (p < 0 || p >= in_sp[d]) { inside = false; break; }
              xoff = xoff * in_sp[d] + p;
            }
            if (!inside) continue;
            s += (int_at(X, xbase + xoff) - zx) * (int_at(W, wbase + k) - zw);
          }
        }
        acc[static_cast<size_t>(n * M + m) * out_plane + o] = s;
      }
    }
  return acc;
}

void conv_infer(oph::InferContext& c, size_t x, size_t w, oph_dtype out) {
  if (!c.input_rank_known(x) || !c.input_rank_known(w)) return c.set_output_unknown_rank(0, out);
  c.set_output(0, out, conv_geom(c.attrs(), c.input_shape(x), c.input_shape(w), "Conv").out);
}

void conv_integer_compute(oph::KernelContext& ctx) {
  const std::string op = "ConvInteger";
  oph::TensorRef X = input(ctx, 0, op), W = input(ctx, 1, op);
  ConvGeom g = conv_geom(ctx.attrs(), X.shape(), W.shape(), op);
  oph::TensorRef y = ensure_output(ctx, 0, g.out, op);
  if (!y.present()) return;
  auto acc = int_conv(X, W, ctx.input(2), ctx.input(3), g, op);
  std::memcpy(y.data(), acc.data(), acc.size() * sizeof(int32_t));
}

void qlinear_conv_compute(oph::KernelContext& ctx) {
  const std::string op = "QLinearConv";
  oph::TensorRef X = input(ctx, 0, op), xs = input(ctx, 1, op), xz = input(ctx, 2, op);
  oph::TensorRef W = input(ctx, 3, op), ws = input(ctx, 4, op), wz = input(ctx, 5, op);
  oph::TensorRef ys = input(ctx, 6, op), yz = input(ctx, 7, op), B = ctx.input(8);
  ConvGeom g = conv_geom(ctx.attrs(), X.shape(), W.shape(), op);
  oph::TensorRef y = ensure_output(ctx, 0, g.out, op);
  if (!y.present()) return;
  const size_t M = W.shape()[0];
  if (xs.size() != 1 || ys.size() != 1 || yz.size() != 1)
    fail(op + ": x_scale, y_scale and y_zero_point must be scalars", OPH_CODE_UNIMPLEMENTED);
  if (ws.size() != 1 && ws.size() != M) fail(op + ": w_scale must be a scalar or have one value per output channel");
  if (B.present() && (B.size() != M || !(B.dtype() == i32))) fail(op + ": B must be int32 with one value per output channel");
  auto acc = int_conv(X, W, xz, wz, g, op);
  if (acc.empty()) return;  // an empty output (N, M or a spatial dim 0): nothing to write, no plane to divide by
  const size_t plane = acc.size() / (static_cast<size_t>(g.out[0]) * M);
  const float xsc = float_at(xs, 0), ysc = float_at(ys, 0);
  const int32_t yzp = int_at(yz, 0);
  dispatch_q8(y.dtype(), op, [&]<class Q>(std::type_identity<Q>) {
    Q* yp = static_cast<Q*>(y.data());
    for (size_t i = 0; i < acc.size(); ++i) {
      const size_t m = (i / plane) % M;
      int32_t a = acc[i] + (B.present() ? static_cast<const int32_t*>(B.data())[m] : 0);
      const float scale = xsc * float_at(ws, ws.size() == 1 ? 0 : m) / ysc;
      yp[i] = saturate_round<Q>(std::nearbyint(static_cast<float>(a) * scale) + static_cast<float>(yzp));
    }
  });
}

void conv_attrs(oph::OpBuilder& b) {
  b.attr("auto_pad", std::string("NOTSET"))
      .optional_attr("dilations", OPH_ATTR_INTS)
      .attr("group", int64_t{1})
      .optional_attr("kernel_shape", OPH_ATTR_INTS)
      .optional_attr("pads", OPH_ATTR_INTS)
      .optional_attr("strides", OPH_ATTR_INTS);
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
    q.infer(&quantize_infer).compute([has_axis](oph::KernelContext& ctx) { quantize_compute(ctx, has_axis); });

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
    d.infer([](oph::InferContext& c) {
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

  auto& mi = pack.op(kDomain, "MatMulInteger")
                 .versions(10, OPH_OPSET_MAX)
                 .doc("integer matmul with zero points, int32 accumulation")
                 .input("A", "T1")
                 .input("B", "T2")
                 .optional_input("a_zero_point", "T1")
                 .optional_input("b_zero_point", "T2")
                 .output("Y", "T3")
                 .types("T3", {i32})
                 .infer([](oph::InferContext& c) { matmul_infer(c, 0, 1, i32); })
                 .compute(&matmul_integer_compute);
  add_types(mi, "T1", {i8, u8});
  add_types(mi, "T2", {i8, u8});

  auto& qm = pack.op(kDomain, "QLinearMatMul")
                 .versions(10, OPH_OPSET_MAX)
                 .doc("quantized matmul")
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
                 .infer([](oph::InferContext& c) { matmul_infer(c, 0, 3, c.input_dtype(7)); })
                 .compute(&qlinear_matmul_compute);
  for (const char* t : {"T1", "T2", "T3"}) add_types(qm, t, {i8, u8});

  auto& ci = pack.op(kDomain, "ConvInteger")
                 .versions(10, OPH_OPSET_MAX)
                 .doc("integer convolution with zero points, int32 accumulation (direct loops)")
                 .input("x", "T1")
                 .input("w", "T2")
                 .optional_input("x_zero_point", "T1")
                 .optional_input("w_zero_point", "T2")
                 .output("y", "T3")
                 .types("T3", {i32});
  conv_attrs(ci);
  ci.infer([](oph::InferContext& c) { conv_infer(c, 0, 1, i32); }).compute(&conv_integer_compute);
  add_types(ci, "T1", {i8, u8});
  add_types(ci, "T2", {i8, u8});

  auto& qc = pack.op(kDomain, "QLinearConv")
                 .versions(10, OPH_OPSET_MAX)
                 .doc("quantized convolution (direct loops)")
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
  conv_attrs(qc);
  qc.infer([](oph::InferContext& c) { conv_infer(c, 0, 3, c.input_dtype(7)); }).compute(&qlinear_conv_compute);
  for (const char* t : {"T1", "T2", "T3"}) add_types(qc, t, {i8, u8});
}

}  // namespace

static const Family kFamily("quantize", &register_quantize);

}  // namespace onnx_core
