// onnx-core: detection and sampling ops: NonMaxSuppression (10), RoiAlign (10, 16), GridSample (16),
// MaxUnpool (9, 11). Interpolation details follow ONNX Runtime's CPU kernels, which the ONNX tests agree with.
#include "common.hpp"

#include <algorithm>
#include <cmath>

namespace onnx_core {
namespace {

// ======================================= NonMaxSuppression =======================================

struct Box {
  float y1, x1, y2, x2;
};

Box read_box(const float* p, bool center) {
  if (center) {
    const float xc = p[0], yc = p[1], w = p[2], h = p[3];
    return {yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2};
  }
  return {std::min(p[0], p[2]), std::min(p[1], p[3]), std::max(p[0], p[2]), std::max(p[1], p[3])};
}

bool suppress(const Box& a, const Box& b, float iou_threshold) {
  const float ix1 = std::max(a.x1, b.x1), iy1 = std::max(a.y1, b.y1);
  const float ix2 = std::min(a.x2, b.x2), iy2 = std::min(a.y2, b.y2);
  if (ix2 <= ix1 || iy2 <= iy1) return false;
  const float inter = (ix2 - ix1) * (iy2 - iy1);
  const float area_a = (a.x2 - a.x1) * (a.y2 - a.y1), area_b = (b.x2 - b.x1) * (b.y2 - b.y1);
  const float uni = area_a + area_b - inter;
  if (area_a <= 0 || area_b <= 0 || uni <= 0) return false;
  return inter / uni > iou_threshold;
}

void nms_compute(oph::KernelContext& ctx) {
  const std::string op = "NonMaxSuppression";
  oph::TensorRef boxes = input(ctx, 0, op), scores = input(ctx, 1, op);
  auto bs = boxes.shape(), ss = scores.shape();
  if (bs.size() != 3 || bs[2] != 4) fail(op + ": boxes must be [batch, boxes, 4], got " + shape_str(bs));
  if (ss.size() != 3 || ss[0] != bs[0] || ss[2] != bs[1])
    fail(op + ": scores must be [batch, classes, boxes] matching boxes, got " + shape_str(ss));
  int64_t max_out = 0;
  float iou_th = 0, score_th = 0;
  bool has_score_th = false;
  if (ctx.input(2).present() && ctx.input(2).size() > 0) max_out = read_ints(ctx.input(2).raw(), op, "max_output_boxes_per_class")[0];
  if (ctx.input(3).present() && ctx.input(3).size() > 0) iou_th = *static_cast<const float*>(ctx.input(3).data());
  if (ctx.input(4).present() && ctx.input(4).size() > 0) {
    score_th = *static_cast<const float*>(ctx.input(4).data());
    has_score_th = true;
  }
  if (iou_th < 0 || iou_th > 1) fail(op + ": iou_threshold must be in [0, 1]");
  const int64_t cpb = ctx.attr<int64_t>("center_point_box");
  if (cpb != 0 && cpb != 1) fail(op + ": center_point_box must be 0 or 1");
  const float* bp = static_cast<const float*>(boxes.data());
  const float* sp = static_cast<const float*>(scores.data());
  const int64_t B = bs[0], N = bs[1], C = ss[1];
  std::vector<int64_t> sel;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c) {
      if (max_out <= 0) continue;
      const float* s = sp + (b * C + c) * N;
      std::vector<int64_t> cand;
      for (int64_t i = 0; i < N; ++i)
        if (!has_score_th || s[i] > score_th) cand.push_back(i);
      // Highest score first; equal scores: lower index first.
      std::stable_sort(cand.begin(), cand.end(), [&](int64_t a, int64_t q) { return s[a] > s[q]; });
      std::vector<Box> kept;
      int64_t taken = 0;
      for (int64_t i : cand) {
        if (taken >= max_out) break;
        Box bx = read_box(bp + (b * N + i) * 4, cpb == 1);
        bool drop = false;
        for (const Box& k : kept)
          if (suppress(k, bx, iou_th)) {
            drop = true;
            break;
          }
        if (drop) continue;
        kept.push_back(bx);
        sel.insert(sel.end(), {b, c, i});
        ++taken;
      }
    }
  const int64_t os[2] = {static_cast<int64_t>(sel.size() / 3), 3};
  oph::TensorRef y = ensure_output(ctx, 0, os, op);
  if (y.present() && !sel.empty()) std::memcpy(y.data(), sel.data(), sel.size() * sizeof(int64_t));
}

// ======================================= RoiAlign =======================================

void roi_align_infer(oph::InferContext& c) {
  const int64_t oh = c.attr<int64_t>("output_height"), ow = c.attr<int64_t>("output_width");
  int64_t n = c.input_rank_known(1) && c.input_shape(1).size() == 2 ? c.input_shape(1)[0] : OPH_DIM_UNKNOWN;
  int64_t ch = c.input_rank_known(0) && c.input_shape(0).size() == 4 ? c.input_shape(0)[1] : OPH_DIM_UNKNOWN;
  c.set_output(0, c.input_dtype(0), {n, ch, oh, ow});
}

void roi_align_compute(oph::KernelContext& ctx, bool has_ctm) {
  const std::string op = "RoiAlign";
  oph::TensorRef X = input(ctx, 0, op), rois = input(ctx, 1, op);
  auto bi = read_ints(input(ctx, 2, op).raw(), op, "batch_indices");
  auto xs = X.shape(), rs = rois.shape();
  if (xs.size() != 4) fail(op + ": X must be [N, C, H, W]");
  if (rs.size() != 2 || rs[1] != 4) fail(op + ": rois must be [num_rois, 4]");
  if (static_cast<int64_t>(bi.size()) != rs[0]) fail(op + ": batch_indices must have num_rois values");
  const std::string mode = ctx.attr<std::string>("mode");
  if (mode != "avg" && mode != "max") fail(op + ": mode '" + mode + "' is not one of avg, max");
  bool half_pixel = false;
  if (has_ctm) {
    const std::string ctm = ctx.attr<std::string>("coordinate_transformation_mode");
    if (ctm == "half_pixel") half_pixel = true;
    else if (ctm != "output_half_pixel")
      fail(op + ": coordinate_transformation_mode '" + ctm + "' is not one of half_pixel, output_half_pixel");
  }
  const int64_t PH = ctx.attr<int64_t>("output_height"), PW = ctx.attr<int64_t>("output_width");
  const int64_t sampling = ctx.attr<int64_t>("sampling_ratio");
  const double scale = ctx.attr<float>("spatial_scale");
  if (PH < 1 || PW < 1) fail(op + ": output_height and output_width must be >= 1");
  if (sampling < 0) fail(op + ": sampling_ratio must be >= 0");
  const int64_t R = rs[0], C = xs[1], H = xs[2], W = xs[3];
  const int64_t os[4] = {R, C, PH, PW};
  oph::TensorRef y = ensure_output(ctx, 0, os, op);
  if (!y.present()) return;
  dispatch_float(X.dtype(), op, [&]<class T>(std::type_identity<T>) {
    const T* xp = static_cast<const T*>(X.data());
    const T* rp = static_cast<const T*>(rois.data());
    T* yp = static_cast<T*>(y.data());
    struct Sample {
      int64_t p1, p2, p3, p4;
      T w1, w2, w3, w4;
    };
    for (int64_t n = 0; n < R; ++n) {
      const int64_t b = bi[n];
      if (b < 0 || b >= xs[0]) fail(op + ": batch index " + std::to_string(b) + " is out of range");
      const T off = half_pixel ? T(0.5) : T(0);
      const T sw = rp[n * 4 + 0] * static_cast<T>(scale) - off, sh = rp[n * 4 + 1] * static_cast<T>(scale) - off;
      const T ew = rp[n * 4 + 2] * static_cast<T>(scale) - off, eh = rp[n * 4 + 3] * static_cast<T>(scale) - off;
      T rw = ew - sw, rh = eh - sh;
      if (!half_pixel) {
        rw = std::max(rw, T(1));
        rh = std::max(rh, T(1));
      }
      if (!std::isfinite(static_cast<double>(rw)) || !std::isfinite(static_cast<double>(rh)))
        fail(op + ": roi " + std::to_string(n) + " has a non-finite coordinate");
      const T bin_h = rh / static_cast<T>(PH), bin_w = rw / static_cast<T>(PW);
      // sampling_ratio 0 adapts the samples per output cell to the box size: bound the total, so a hostile box
      // (1e30 wide) is an error, not a multi-terabyte allocation.
      const double agh = sampling > 0 ? double(sampling) : std::ceil(static_cast<double>(rh) / double(PH));
      const double agw = sampling > 0 ? double(sampling) : std::ceil(static_cast<double>(rw) / double(PW));
      constexpr double kMaxSamples = double(1 << 24);
      if (std::max(agh, 1.0) * std::max(agw, 1.0) * double(PH) * double(PW) > kMaxSamples)
        fail(op + ": roi " + std::to_string(n) + " [" + std::to_string(static_cast<double>(rp[n * 4])) + ", " +
             std::to_string(static_cast<double>(rp[n * 4 + 1])) + ", " + std::to_string(static_cast<double>(rp[n * 4 + 2])) +
             ", " + std::to_string(static_cast<double>(rp[n * 4 + 3])) + "] would need more than 2^24 samples (" +
             std::to_string(agh) + " x " + std::to_string(agw) + " per output cell, sampling_ratio " +
             std::to_string(sampling) + "); the box is far larger than any feature map: check the rois, or set "
             "sampling_ratio");
      const int64_t gh = static_cast<int64_t>(std::max(agh, 0.0));
      const int64_t gw = static_cast<int64_t>(std::max(agw, 0.0));
      const T count = static_cast<T>(std::max<int64_t>(gh * gw, 1));
      std::vector<Sample> pre;
      pre.reserve(PH * PW * gh * gw);
      for (int64_t ph = 0; ph < PH; ++ph)
        for (int64_t pw = 0; pw < PW; ++pw)
          for (int64_t iy = 0; iy < gh; ++iy) {
            const T yy = sh + static_cast<T>(ph) * bin_h + (static_cast<T>(iy) + T(0.5)) * bin_h / static_cast<T>(gh);
            for (int64_t ix = 0; ix < gw; ++ix) {
              const T xx = sw + static_cast<T>(pw) * bin_w + (static_cast<T>(ix) + T(0.5)) * bin_w / static_cast<T>(gw);
              T yv = yy, xv = xx;
              if (yv < -1.0 || yv > static_cast<T>(H) || xv < -1.0 || xv > static_cast<T>(W)) {
                pre.push_back({0, 0, 0, 0, 0, 0, 0, 0});
                continue;
              }
              if (yv <= 0) yv = 0;
              if (xv <= 0) xv = 0;
              int64_t yl = static_cast<int64_t>(yv), xl = static_cast<int64_t>(xv), yh, xh;
              if (yl >= H - 1) { yh = yl = H - 1; yv = static_cast<T>(yl); } else yh = yl + 1;
              if (xl >= W - 1) { xh = xl = W - 1; xv = static_cast<T>(xl); } else xh = xl + 1;
              const T ly = yv - static_cast<T>(yl), lx = xv - static_cast<T>(xl), hy = 1 - ly, hx = 1 - lx;
              pre.push_back({yl * W + xl, yl * W + xh, yh * W + xl, yh * W + xh, hy * hx, hy * lx, ly * hx, ly * lx});
            }
          }
      for (int64_t c = 0; c < C; ++c) {
        const T* img = xp + (b * C + c) * H * W;
        size_t k = 0;
        for (int64_t ph = 0; ph < PH; ++ph)
          for (int64_t pw = 0; pw < PW; ++pw) {
            T v = 0;
            bool first = true;
            for (int64_t s = 0; s < gh * gw; ++s, ++k) {
              const Sample& q = pre[k];
              if (mode == "avg") {
                v += q.w1 * img[q.p1] + q.w2 * img[q.p2] + q.w3 * img[q.p3] + q.w4 * img[q.p4];
              } else {
                const T m = std::max(std::max(q.w1 * img[q.p1], q.w2 * img[q.p2]), std::max(q.w3 * img[q.p3], q.w4 * img[q.p4]));
                v = first ? m : std::max(v, m);
                first = false;
              }
            }
            yp[((n * C + c) * PH + ph) * PW + pw] = mode == "avg" ? v / count : v;
          }
      }
    }
  });
}

// ======================================= GridSample =======================================

enum class GsMode { kBilinear, kNearest, kBicubic };
enum class GsPad { kZeros, kBorder, kReflection };

template <class T>
T gs_reflect(T x, T lo, T hi) {
  const T range = hi - lo;
  if (x < lo) {
    const T dx = lo - x;
    const int64_t n = static_cast<int64_t>(dx / range);
    const T r = dx - static_cast<T>(n) * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const T dx = x - hi;
    const int64_t n = static_cast<int64_t>(dx / range);
    const T r = dx - static_cast<T>(n) * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

template <class T>
void cubic_coeffs(T x, T c[4]) {
  const T a = T(-0.75);
  x = std::abs(x);
  c[0] = ((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a;
  c[1] = ((a + 2) * x - (a + 3)) * x * x + 1;
  c[2] = ((a + 2) * (1 - x) - (a + 3)) * (1 - x) * (1 - x) + 1;
  c[3] = ((a * (2 - x) - 5 * a) * (2 - x) + 8 * a) * (2 - x) - 4 * a;
}

void grid_sample_infer(oph::InferContext& c) {
  if (!c.input_rank_known(0) || !c.input_rank_known(1)) return c.set_output_unknown_rank(0, c.input_dtype(0));
  auto xs = c.input_shape(0), gs = c.input_shape(1);
  if (xs.size() != 4 || gs.size() != 4) fail("GridSample: X and grid must have rank 4 (2-D sampling)", OPH_CODE_UNIMPLEMENTED);
  c.set_output(0, c.input_dtype(0), {xs[0], xs[1], gs[1], gs[2]});
}

void grid_sample_compute(oph::KernelContext& ctx) {
  const std::string op = "GridSample";
  oph::TensorRef X = input(ctx, 0, op), G = input(ctx, 1, op);
  auto xs = X.shape(), gs = G.shape();
  if (xs.size() != 4 || gs.size() != 4 || gs[3] != 2 || gs[0] != xs[0])
    fail(op + ": X must be [N, C, H, W] and grid [N, H_out, W_out, 2], got " + shape_str(xs) + " and " + shape_str(gs));
  const std::string ms = ctx.attr<std::string>("mode"), ps = ctx.attr<std::string>("padding_mode");
  GsMode mode;
  if (ms == "bilinear") mode = GsMode::kBilinear;
  else if (ms == "nearest") mode = GsMode::kNearest;
  else if (ms == "bicubic") mode = GsMode::kBicubic;
  else fail(op + ": mode '" + ms + "' is not one of bilinear, nearest, bicubic");
  GsPad pad;
  if (ps == "zeros") pad = GsPad::kZeros;
  else if (ps == "border") pad = GsPad::kBorder;
  else if (ps == "reflection") pad = GsPad::kReflection;
  else fail(op + ": padding_mode '" + ps + "' is not one of zeros, border, reflection");
  const bool align = ctx.attr<int64_t>("align_corners") != 0;
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], Ho = gs[1], Wo = gs[2];
  const int64_t os[4] = {N, C, Ho, Wo};
  oph::TensorRef y = ensure_output(ctx, 0, os, op);
  if (!y.present()) return;
  if (!(G.dtype() == X.dtype())) fail(op + ": grid must have X's dtype", OPH_CODE_UNIMPLEMENTED);
  dispatch_float(X.dtype(), op, [&]<class T>(std::type_identity<T>) {
    const T* xp = static_cast<const T*>(X.data());
    const T* gp = static_cast<const T*>(G.data());
    T* yp = static_cast<T*>(y.data());
    const T x_min = align ? T(0) : T(-0.5), x_max = align ? static_cast<T>(W - 1) : static_cast<T>(W) - T(0.5);
    const T y_min = align ? T(0) : T(-0.5), y_max = align ? static_cast<T>(H - 1) : static_cast<T>(H) - T(0.5);
    auto denorm = [&](T v, int64_t len) {
      return align ? (v + 1) / 2 * static_cast<T>(len - 1) : ((v + 1) * static_cast<T>(len) - 1) / 2;
    };
    auto pixel = [&](const T* img, int64_t yy, int64_t xx) -> T {
      if (pad == GsPad::kZeros) return (xx >= 0 && xx < W && yy >= 0 && yy < H) ? img[yy * W + xx] : T(0);
      if (pad == GsPad::kBorder) {
        xx = std::clamp<int64_t>(xx, 0, W - 1);
        yy = std::clamp<int64_t>(yy, 0, H - 1);
        return img[yy * W + xx];
      }
      xx = static_cast<int64_t>(gs_reflect<T>(static_cast<T>(xx), x_min, x_max));
      yy = static_cast<int64_t>(gs_reflect<T>(static_cast<T>(yy), y_min, y_max));
      xx = std::clamp<int64_t>(xx, 0, W - 1);
      yy = std::clamp<int64_t>(yy, 0, H - 1);
      return img[yy * W + xx];
    };
    for (int64_t n = 0; n < N; ++n)
      for (int64_t oy = 0; oy < Ho; ++oy)
        for (int64_t ox = 0; ox < Wo; ++ox) {
          const T* g = gp + ((n * Ho + oy) * Wo + ox) * 2;
          T gx = denorm(g[0], W), gy = denorm(g[1], H);
          if (mode == GsMode::kNearest) {
            gx = std::nearbyint(gx);
            gy = std::nearbyint(gy);
          }
          if (gx < x_min || gx > x_max || gy < y_min || gy > y_max) {
            if (pad == GsPad::kBorder) {
              gx = std::clamp(gx, T(0), static_cast<T>(W - 1));
              gy = std::clamp(gy, T(0), static_cast<T>(H - 1));
            } else if (pad == GsPad::kReflection) {
              gx = gs_reflect(gx, x_min, x_max);
              gy = gs_reflect(gy, y_min, y_max);
            }
          }
          for (int64_t c = 0; c < C; ++c) {
            const T* img = xp + (n * C + c) * H * W;
            T v;
            if (mode == GsMode::kNearest) {
              v = pixel(img, static_cast<int64_t>(gy), static_cast<int64_t>(gx));
            } else if (mode == GsMode::kBilinear) {
              const int64_t x1 = static_cast<int64_t>(std::floor(gx)), y1 = static_cast<int64_t>(std::floor(gy));
              const int64_t x2 = x1 + 1, y2 = y1 + 1;
              const T p11 = pixel(img, y1, x1), p12 = pixel(img, y1, x2), p21 = pixel(img, y2, x1), p22 = pixel(img, y2, x2);
              const T dx2 = static_cast<T>(x2) - gx, dx1 = gx - static_cast<T>(x1);
              const T dy2 = static_cast<T>(y2) - gy, dy1 = gy - static_cast<T>(y1);
              v = dy2 * (dx2 * p11 + dx1 * p12) + dy1 * (dx2 * p21 + dx1 * p22);
            } else {
              const int64_t x0 = static_cast<int64_t>(std::floor(gx)) - 1, y0 = static_cast<int64_t>(std::floor(gy)) - 1;
              T p[4][4];
              for (int h = 0; h < 4; ++h)
                for (int w = 0; w < 4; ++w) p[h][w] = pixel(img, y0 + h, x0 + w);
              T cx[4], cy[4], row[4];
              cubic_coeffs<T>(gx - static_cast<T>(x0) - 1, cx);
              cubic_coeffs<T>(gy - static_cast<T>(y0) - 1, cy);
              for (int h = 0; h < 4; ++h) row[h] = cx[0] * p[h][0] + cx[1] * p[h][1] + cx[2] * p[h][2] + cx[3] * p[h][3];
              v = cy[0] * row[0] + cy[1] * row[1] + cy[2] * row[2] + cy[3] * row[3];
            }
            yp[((n * C + c) * Ho + oy) * Wo + ox] = v;
          }
        }
  });
}

// ======================================= MaxUnpool =======================================

std::vector<int64_t> unpool_default_shape(const oph::Attrs& at, std::span<const int64_t> xs, const std::string& op) {
  if (xs.size() < 3) fail(op + ": X must have rank >= 3");
  const size_t sp = xs.size() - 2;
  auto k = at.get<std::vector<int64_t>>("kernel_shape");
  auto s = at.has("strides") ? at.get<std::vector<int64_t>>("strides") : std::vector<int64_t>(sp, 1);
  auto p = at.has("pads") ? at.get<std::vector<int64_t>>("pads") : std::vector<int64_t>(2 * sp, 0);
  if (k.size() != sp || s.size() != sp || p.size() != 2 * sp)
    fail(op + ": kernel_shape, strides and pads must match the " + std::to_string(sp) + " spatial dims");
  std::vector<int64_t> out = {xs[0], xs[1]};
  for (size_t i = 0; i < sp; ++i)
    out.push_back(xs[i + 2] < 0 ? OPH_DIM_UNKNOWN : (xs[i + 2] - 1) * s[i] + k[i] - p[i] - p[i + sp]);
  return out;
}

void max_unpool_infer(oph::InferContext& c) {
  const std::string op = "MaxUnpool";
  if (!c.input_rank_known(0)) return c.set_output_unknown_rank(0, c.input_dtype(0));
  if (c.has_input(2)) {
    const oph_tensor* t = c.input_constant(2);
    if (t) return c.set_output(0, c.input_dtype(0), read_ints(t, op, "output_shape"));
    return c.set_output(0, c.input_dtype(0), std::vector<int64_t>(c.input_shape(0).size(), OPH_DIM_UNKNOWN));
  }
  c.set_output(0, c.input_dtype(0), unpool_default_shape(c.attrs(), c.input_shape(0), op));
}

void max_unpool_compute(oph::KernelContext& ctx) {
  const std::string op = "MaxUnpool";
  oph::TensorRef X = input(ctx, 0, op), I = input(ctx, 1, op);
  auto xs = X.shape();
  std::vector<int64_t> os = ctx.input(2).present() ? read_ints(ctx.input(2).raw(), op, "output_shape")
                                                   : unpool_default_shape(ctx.attrs(), xs, op);
  if (os.size() != xs.size()) fail(op + ": output_shape must have X's rank");
  if (I.size() != X.size() || !(I.dtype() == i64)) fail(op + ": I must be int64 with X's shape");
  oph::TensorRef y = ensure_output(ctx, 0, os, op);
  if (!y.present()) return;
  const size_t es = elem_size(X.dtype()), ny = y.size();
  std::memset(y.data(), 0, ny * es);
  const int64_t* ip = static_cast<const int64_t*>(I.data());
  const char* xp = static_cast<const char*>(X.data());
  char* yp = static_cast<char*>(y.data());
  for (size_t i = 0; i < X.size(); ++i) {
    if (ip[i] < 0 || static_cast<size_t>(ip[i]) >= ny) fail(op + ": index " + std::to_string(ip[i]) + " is out of range");
    std::memcpy(yp + ip[i] * es, xp + i * es, es);
  }
}

void register_detection(oph::Pack& pack) {
  pack.op(kDomain, "NonMaxSuppression")
      .versions(10, OPH_OPSET_MAX)
      .doc("greedy per-class non-max suppression")
      .input("boxes", "tensor(float)")
      .input("scores", "tensor(float)")
      .optional_input("max_output_boxes_per_class", "tensor(int64)", OPH_MEMORY_HOST)
      .optional_input("iou_threshold", "tensor(float)", OPH_MEMORY_HOST)
      .optional_input("score_threshold", "tensor(float)", OPH_MEMORY_HOST)
      .output("selected_indices", "tensor(int64)")
      .attr("center_point_box", int64_t{0})
      .types("tensor(float)", {f32})
      .types("tensor(int64)", {i64})
      .infer([](oph::InferContext& c) { c.set_output(0, i64, {OPH_DIM_UNKNOWN, 3}); })
      .compute(&nms_compute);

  for (int since : {10, 16}) {
    const bool has_ctm = since >= 16;
    auto& r = pack.op(kDomain, "RoiAlign")
                  .versions(since, since == 10 ? 15 : OPH_OPSET_MAX)
                  .doc("region of interest align (bilinear sampling, avg or max pooling)")
                  .input("X", "T1")
                  .input("rois", "T1")
                  .input("batch_indices", "T2", OPH_ARITY_SINGLE, OPH_MEMORY_HOST);
    r.output("Y", "T1");
    if (has_ctm) r.attr("coordinate_transformation_mode", std::string("half_pixel"));
    r.attr("mode", std::string("avg"))
        .attr("output_height", int64_t{1})
        .attr("output_width", int64_t{1})
        .attr("sampling_ratio", int64_t{0})
        .attr("spatial_scale", 1.0f);
    add_types(r, "T1", kFloat);
    r.types("T2", {i64});
    r.infer(&roi_align_infer).compute([has_ctm](oph::KernelContext& ctx) { roi_align_compute(ctx, has_ctm); });
  }

  auto& g = pack.op(kDomain, "GridSample")
                .versions(16, 19)
                .doc("2-D grid sampling (bilinear, nearest, bicubic; zeros, border, reflection padding)")
                .input("X", "T1")
                .input("grid", "T2")
                .output("Y", "T1")
                .attr("align_corners", int64_t{0})
                .attr("mode", std::string("bilinear"))
                .attr("padding_mode", std::string("zeros"))
                .infer(&grid_sample_infer)
                .compute(&grid_sample_compute);
  add_types(g, "T1", kFloat);
  add_types(g, "T2", kFloat);

  for (int since : {9, 11}) {
    auto& m = pack.op(kDomain, "MaxUnpool")
                  .versions(since, since == 9 ? 10 : OPH_OPSET_MAX)
                  .doc("scatters pooled values back to the positions given by MaxPool's indices")
                  .input("X", "T1")
                  .input("I", "T2")
                  .optional_input("output_shape", "T2", OPH_MEMORY_HOST)
                  .output("output", "T1")
                  .required_attr("kernel_shape", OPH_ATTR_INTS)
                  .optional_attr("pads", OPH_ATTR_INTS)
                  .optional_attr("strides", OPH_ATTR_INTS)
                  .infer(&max_unpool_infer)
                  .compute(&max_unpool_compute);
    add_types(m, "T1", kAll);
    m.types("T2", {i64});
  }
}

}  // namespace

static const Family kFamily("detection", &register_detection);

}  // namespace onnx_core
