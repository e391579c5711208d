// onnx-core: quant_ref.hpp's shared shape rules and the reference loops of the integer matmul/conv ops.
#include "quant_ref.hpp"

#include <cstring>

namespace onnx_core::quant {
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

// ----- MatMulInteger / QLinearMatMul -----

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
static std::vector<int32_t> int_matmul(const oph::TensorRef& A, const oph::TensorRef& B, const oph::TensorRef& azp,
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

void matmul_integer_ref(oph::KernelContext& ctx) {
  const std::string op = "MatMulInteger";
  oph::TensorRef A = input(ctx, 0, op), B = input(ctx, 1, op);
  MatMulPlan p = matmul_plan(A.shape(), B.shape(), op);
  oph::TensorRef y = ensure_output(ctx, 0, p.out, op);
  if (!y.present()) return;
  auto acc = int_matmul(A, B, ctx.input(2), ctx.input(3), p, op);
  std::memcpy(y.data(), acc.data(), acc.size() * sizeof(int32_t));
}

void qlinear_matmul_ref(oph::KernelContext& ctx) {
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

QConvGeom conv_geom(const oph::Attrs& at, std::span<const int64_t> xs, std::span<const int64_t> ws,
                   const std::string& op) {
  if (xs.size() < 3) fail(op + ": X must have rank >= 3 (N, C, spatial...), got " + shape_str(xs));
  if (ws.size() != xs.size()) fail(op + ": W must have X's rank, got " + shape_str(ws));
  const size_t sp = xs.size() - 2;
  QConvGeom g;
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
static std::vector<int32_t> int_conv(const oph::TensorRef& X, const oph::TensorRef& W, const oph::TensorRef& xzp,
                              const oph::TensorRef& wzp, const QConvGeom& g, const std::string& op) {
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

void conv_integer_ref(oph::KernelContext& ctx) {
  const std::string op = "ConvInteger";
  oph::TensorRef X = input(ctx, 0, op), W = input(ctx, 1, op);
  QConvGeom g = conv_geom(ctx.attrs(), X.shape(), W.shape(), op);
  oph::TensorRef y = ensure_output(ctx, 0, g.out, op);
  if (!y.present()) return;
  auto acc = int_conv(X, W, ctx.input(2), ctx.input(3), g, op);
  std::memcpy(y.data(), acc.data(), acc.size() * sizeof(int32_t));
}

void qlinear_conv_ref(oph::KernelContext& ctx) {
  const std::string op = "QLinearConv";
  oph::TensorRef X = input(ctx, 0, op), xs = input(ctx, 1, op), xz = input(ctx, 2, op);
  oph::TensorRef W = input(ctx, 3, op), ws = input(ctx, 4, op), wz = input(ctx, 5, op);
  oph::TensorRef ys = input(ctx, 6, op), yz = input(ctx, 7, op), B = ctx.input(8);
  QConvGeom g = conv_geom(ctx.attrs(), X.shape(), W.shape(), op);
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

}  // namespace onnx_core::quant
