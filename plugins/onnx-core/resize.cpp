// onnx-core: Resize (opsets 10, 11-12, 13-17, 18, 19+) and Upsample (7, 9; deprecated in 10, nearest and linear).
// Resize: modes nearest, linear (N-linear) and cubic (11+, Keys
// kernel with cubic_coeff_a and exclude_outside), any rank, every
// coordinate_transformation_mode and nearest_mode; axes and keep_aspect_ratio_policy (18+). Coordinates are
// computed in float, as ONNX Runtime does, so that nearest-neighbour picks agree at the rounding edges.
#include "common.hpp"

#include <algorithm>
#include <cmath>

namespace onnx_core {
namespace {

enum class Mode { kNearest, kLinear, kCubic };
enum class Ctm { kHalfPixel, kHalfPixelSymmetric, kPytorchHalfPixel, kAlignCorners, kAsymmetric, kTfHalfPixelForNn, kTfCropAndResize };
enum class Nearest { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kSimple };
enum class Aspect { kStretch, kNotLarger, kNotSmaller };

struct ResizeAttrs {
  int version = 11;
  Mode mode = Mode::kNearest;
  Ctm ctm = Ctm::kHalfPixel;
  Nearest nearest = Nearest::kRoundPreferFloor;
  Aspect aspect = Aspect::kStretch;
  float extrapolation = 0.f;
  float cubic_a = -0.75f;
  bool exclude_outside = false;
  std::vector<int64_t> axes;
};

ResizeAttrs read_resize_attrs(const oph::Attrs& at, int version) {
  ResizeAttrs a;
  a.version = version;
  const std::string op = "Resize";
  std::string mode = at.get<std::string>("mode");
  if (mode == "nearest") a.mode = Mode::kNearest;
  else if (mode == "linear") a.mode = Mode::kLinear;
  else if (mode == "cubic") a.mode = Mode::kCubic;
  else fail(op + ": mode '" + mode + "' is not one of nearest, linear, cubic");
  if (version < 11 && a.mode == Mode::kCubic) fail(op + ": mode 'cubic' needs opset 11 or later");
  if (version < 11) {
    // Opset 10 behaves like Upsample: asymmetric coordinates; nearest truncates (rounds up when downsampling,
    // like ONNX Runtime).
    a.ctm = Ctm::kAsymmetric;
    a.nearest = Nearest::kSimple;
    return a;
  }
  std::string ctm = at.get<std::string>("coordinate_transformation_mode");
  if (ctm == "half_pixel") a.ctm = Ctm::kHalfPixel;
  else if (ctm == "half_pixel_symmetric" && version >= 19) a.ctm = Ctm::kHalfPixelSymmetric;
  else if (ctm == "pytorch_half_pixel") a.ctm = Ctm::kPytorchHalfPixel;
  else if (ctm == "align_corners") a.ctm = Ctm::kAlignCorners;
  else if (ctm == "asymmetric") a.ctm = Ctm::kAsymmetric;
  else if (ctm == "tf_half_pixel_for_nn" && version < 13) a.ctm = Ctm::kTfHalfPixelForNn;
  else if (ctm == "tf_crop_and_resize") a.ctm = Ctm::kTfCropAndResize;
  else fail(op + ": coordinate_transformation_mode '" + ctm + "' is not valid in opset " + std::to_string(version));
  std::string nm = at.get<std::string>("nearest_mode");
  if (nm == "round_prefer_floor") a.nearest = Nearest::kRoundPreferFloor;
  else if (nm == "round_prefer_ceil") a.nearest = Nearest::kRoundPreferCeil;
  else if (nm == "floor") a.nearest = Nearest::kFloor;
  else if (nm == "ceil") a.nearest = Nearest::kCeil;
  else fail(op + ": nearest_mode '" + nm + "' is not one of round_prefer_floor, round_prefer_ceil, floor, ceil");
  a.extrapolation = at.get<float>("extrapolation_value");
  int64_t exclude = at.get<int64_t>("exclude_outside");
  if (exclude != 0 && exclude != 1) fail(op + ": exclude_outside must be 0 or 1");
  a.exclude_outside = exclude == 1;
  a.cubic_a = at.get<float>("cubic_coeff_a");
  if (version >= 18) {
    if (at.get<int64_t>("antialias") != 0 && a.mode != Mode::kNearest)
      fail(op + ": antialias=1 is not supported by onnx-core", OPH_CODE_UNIMPLEMENTED);
    std::string k = at.get<std::string>("keep_aspect_ratio_policy");
    if (k == "stretch") a.aspect = Aspect::kStretch;
    else if (k == "not_larger") a.aspect = Aspect::kNotLarger;
    else if (k == "not_smaller") a.aspect = Aspect::kNotSmaller;
    else fail(op + ": keep_aspect_ratio_policy '" + k + "' is not one of stretch, not_larger, not_smaller");
    if (at.has("axes")) a.axes = at.get<std::vector<int64_t>>("axes");
  }
  return a;
}

std::vector<float> read_float_tensor(const oph_tensor* t, const char* what) {
  if (!(t->dtype == f32) && !(t->dtype == f64) && !(t->dtype == f16))
    fail(std::string("Resize: ") + what + " must be float, got " + oph::dtype_name(t->dtype));
  size_t n = oph::numel({t->shape, static_cast<size_t>(t->ndim)});
  const char* base = static_cast<const char*>(t->data) + t->byte_offset;
  std::vector<float> v(n);
  if (t->dtype == f32) std::memcpy(v.data(), base, n * sizeof(float));
  else if (t->dtype == f64)
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(reinterpret_cast<const double*>(base)[i]);
  else fail(std::string("Resize: float16 ") + what + " is not supported", OPH_CODE_UNIMPLEMENTED);
  return v;
}

// Resolved per-axis plan: output dims, scales and roi for every axis of X.
struct ResizePlan {
  std::vector<int64_t> out;
  std::vector<float> scales, roi_start, roi_end;
};

// in: X's shape (known). roi/scales/sizes: host tensors or NULL. Returns the plan (output dims from sizes or
// scales).
ResizePlan resize_plan(const ResizeAttrs& a, std::span<const int64_t> in, const oph_tensor* roi, const oph_tensor* scales,
                       const oph_tensor* sizes) {
  const std::string op = "Resize";
  const size_t r = in.size();
  std::vector<int64_t> axes = a.axes;
  if (axes.empty())
    for (size_t i = 0; i < r; ++i) axes.push_back(static_cast<int64_t>(i));
  for (auto& ax : axes) ax = normalize_axis(ax, static_cast<int64_t>(r), true, op, "axes value");
  for (size_t i = 0; i < axes.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (axes[i] == axes[j]) fail(op + ": axes has a repeated axis");
  const size_t na = axes.size();
  ResizePlan p;
  p.out.assign(in.begin(), in.end());
  p.scales.assign(r, 1.f);
  p.roi_start.assign(r, 0.f);
  p.roi_end.assign(r, 1.f);
  if (roi && a.ctm == Ctm::kTfCropAndResize) {
    std::vector<float> rv = read_float_tensor(roi, "roi");
    if (rv.size() != 2 * na) fail(op + ": roi must have 2 * " + std::to_string(na) + " values, got " + std::to_string(rv.size()));
    for (size_t i = 0; i < na; ++i) {
      p.roi_start[axes[i]] = rv[i];
      p.roi_end[axes[i]] = rv[na + i];
    }
  }
  const bool has_scales = scales && oph::numel({scales->shape, static_cast<size_t>(scales->ndim)}) > 0;
  const bool has_sizes = sizes && oph::numel({sizes->shape, static_cast<size_t>(sizes->ndim)}) > 0;
  if (has_scales == has_sizes) fail(op + ": exactly one of scales and sizes must be given (non-empty)");
  if (has_scales) {
    std::vector<float> sv = read_float_tensor(scales, "scales");
    if (sv.size() != na) fail(op + ": scales must have " + std::to_string(na) + " values, got " + std::to_string(sv.size()));
    for (size_t i = 0; i < na; ++i) {
      if (!(sv[i] > 0)) fail(op + ": scales must be positive");
      const size_t ax = axes[i];
      p.scales[ax] = sv[i];
      float len = static_cast<float>(in[ax]);
      if (a.ctm == Ctm::kTfCropAndResize) len *= p.roi_end[ax] - p.roi_start[ax];
      p.out[ax] = static_cast<int64_t>(std::floor(len * sv[i]));
    }
  } else {
    std::vector<int64_t> sz = read_ints(sizes, op, "sizes");
    if (sz.size() != na) fail(op + ": sizes must have " + std::to_string(na) + " values, got " + std::to_string(sz.size()));
    for (int64_t s : sz)
      if (s < 0) fail(op + ": sizes must be >= 0");
    if (a.aspect == Aspect::kStretch) {
      for (size_t i = 0; i < na; ++i) {
        const size_t ax = axes[i];
        p.out[ax] = sz[i];
        p.scales[ax] = in[ax] ? static_cast<float>(sz[i]) / static_cast<float>(in[ax]) : 1.f;
      }
    } else {
      float s = a.aspect == Aspect::kNotLarger ? std::numeric_limits<float>::max() : std::numeric_limits<float>::lowest();
      for (size_t i = 0; i < na; ++i) {
        float si = static_cast<float>(sz[i]) / static_cast<float>(in[axes[i]]);
        s = a.aspect == Aspect::kNotLarger ? std::min(s, si) : std::max(s, si);
      }
      for (size_t i = 0; i < na; ++i) {
        const size_t ax = axes[i];
        p.scales[ax] = s;
        p.out[ax] = static_cast<int64_t>(std::round(static_cast<float>(in[ax]) * s));
      }
    }
  }
  return p;
}

// The input tensors (roi, scales, sizes) per version: opset 10 has (X, scales).
struct ResizeInputs {
  const oph_tensor *roi = nullptr, *scales = nullptr, *sizes = nullptr;
};

void resize_infer(oph::InferContext& c, int version) {
  ResizeAttrs a = read_resize_attrs(c.attrs(), version);
  oph_dtype dt = c.input_dtype(0);
  if (!c.input_rank_known(0)) {
    c.set_output_unknown_rank(0, dt);
    return;
  }
  auto xs = c.input_shape(0);
  for (int64_t ax : a.axes) normalize_axis(ax, static_cast<int64_t>(xs.size()), true, "Resize", "axes value");
  ResizeInputs in;
  bool all_const = true;
  auto take = [&](size_t i, const oph_tensor*& dst) {
    if (!c.has_input(i)) return;
    dst = c.input_constant(i);
    if (!dst) {
      // Non-constant: empty tensors count as absent only when their shape says so.
      if (!(c.input_rank_known(i) && product_or_unknown(c.input_shape(i)) == 0)) all_const = false;
    }
  };
  if (version < 11) {
    take(1, in.scales);
  } else {
    take(1, in.roi);
    take(2, in.scales);
    take(3, in.sizes);
  }
  if (!all_const || !all_known(xs)) {
    std::vector<int64_t> out(xs.begin(), xs.end());
    std::vector<int64_t> axes = a.axes;
    if (axes.empty())
      for (size_t i = 0; i < xs.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    for (int64_t ax : axes) out[ax < 0 ? ax + xs.size() : ax] = OPH_DIM_UNKNOWN;
    c.set_output(0, dt, out);
    return;
  }
  c.set_output(0, dt, resize_plan(a, xs, in.roi, in.scales, in.sizes).out);
}

// Source coordinate of output index x on one axis.
inline float source_coord(Ctm ctm, float x, float scale, int64_t len_in, int64_t len_out, float roi_start, float roi_end) {
  switch (ctm) {
    case Ctm::kHalfPixel: return (x + 0.5f) / scale - 0.5f;
    case Ctm::kHalfPixelSymmetric: {
      float adj = static_cast<float>(len_out) / (scale * static_cast<float>(len_in));
      float center = static_cast<float>(len_in) / 2;
      float offset = center * (1 - adj);
      return offset + (x + 0.5f) / scale - 0.5f;
    }
    case Ctm::kPytorchHalfPixel: return len_out > 1 ? (x + 0.5f) / scale - 0.5f : 0.f;
    case Ctm::kAlignCorners:
      return len_out == 1 ? 0.f : x * static_cast<float>(len_in - 1) / static_cast<float>(len_out - 1);
    case Ctm::kAsymmetric: return x / scale;
    case Ctm::kTfHalfPixelForNn: return (x + 0.5f) / scale;
    case Ctm::kTfCropAndResize:
      return len_out > 1 ? roi_start * static_cast<float>(len_in - 1) +
                               x * (roi_end - roi_start) * static_cast<float>(len_in - 1) / static_cast<float>(len_out - 1)
                         : 0.5f * (roi_start + roi_end) * static_cast<float>(len_in - 1);
  }
  return 0.f;
}

inline int64_t nearest_index(Nearest m, float v, float scale) {
  switch (m) {
    case Nearest::kRoundPreferFloor:
      return v == std::floor(v) + 0.5f ? static_cast<int64_t>(std::floor(v)) : static_cast<int64_t>(std::round(v));
    case Nearest::kRoundPreferCeil: return static_cast<int64_t>(std::round(v));  // ties away from zero == up for v >= 0
    case Nearest::kFloor: return static_cast<int64_t>(std::floor(v));
    case Nearest::kCeil: return static_cast<int64_t>(std::ceil(v));
    case Nearest::kSimple: return scale < 1.f ? static_cast<int64_t>(std::ceil(v)) : static_cast<int64_t>(v);
  }
  return 0;
}

// Per-axis taps: for each output index, K (input index, weight) pairs (K = 1 nearest, 2 linear, 4 cubic);
// `outside` marks extrapolation (tf_crop_and_resize).
struct AxisTaps {
  int K = 1;
  std::vector<int64_t> idx;  // len_out * K
  std::vector<float> w;      // len_out * K
  std::vector<uint8_t> outside;
  bool identity = false;  // out == in and the mapping is the identity
};

// Keys cubic convolution weights for the 4 neighbours x0-1 .. x0+2 of a source coordinate whose distance to x0
// is `ratio` in (0, 1] (ONNX's reference prefers the left pixel: an integer coordinate has ratio 1).
inline void cubic_weights(float ratio, float A, float* w) {
  auto far = [A](float d) { return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A; };      // 1 <= d < 2
  auto near = [A](float d) { return ((A + 2) * d - (A + 3)) * d * d + 1; };           // 0 <= d < 1
  w[0] = far(ratio + 1);
  w[1] = near(ratio);
  w[2] = near(1 - ratio);
  w[3] = far(2 - ratio);
}

AxisTaps axis_taps(const ResizeAttrs& a, int64_t len_in, int64_t len_out, float scale, float rs, float re) {
  AxisTaps t;
  t.K = a.mode == Mode::kNearest ? 1 : a.mode == Mode::kLinear ? 2 : 4;
  const int K = t.K;
  t.idx.assign(static_cast<size_t>(len_out) * K, 0);
  t.w.assign(static_cast<size_t>(len_out) * K, 0.f);
  t.outside.assign(len_out, 0);
  bool ident = len_in == len_out;
  if (ident && scale == 1.f && a.ctm != Ctm::kTfCropAndResize) {
    // An axis that is not resized is copied, whatever the transform (as ONNX Runtime does; the literal
    // tf_half_pixel_for_nn + ceil formula would shift it by one).
    for (int64_t o = 0; o < len_out; ++o) {
      t.idx[o * K] = o;
      t.w[o * K] = 1;
    }
    t.identity = true;
    return t;
  }
  for (int64_t o = 0; o < len_out; ++o) {
    int64_t* ii = &t.idx[o * K];
    float* ww = &t.w[o * K];
    float v = source_coord(a.ctm, static_cast<float>(o), scale, len_in, len_out, rs, re);
    if (a.ctm == Ctm::kTfCropAndResize && (v < 0 || v > static_cast<float>(len_in - 1))) {
      t.outside[o] = 1;
      ww[0] = 1;
      ident = false;
      continue;
    }
    if (a.mode == Mode::kNearest) {
      int64_t i = nearest_index(a.nearest, v, scale);
      ii[0] = std::clamp<int64_t>(i, 0, len_in - 1);
      ww[0] = 1;
    } else if (a.mode == Mode::kLinear) {
      v = std::clamp(v, 0.f, static_cast<float>(len_in - 1));
      int64_t x0 = std::min<int64_t>(static_cast<int64_t>(v), len_in - 1);
      int64_t x1 = std::min<int64_t>(x0 + 1, len_in - 1);
      float d = v - static_cast<float>(x0);
      ii[0] = x0;
      ii[1] = x1;
      ww[0] = x0 == x1 ? 1 : 1 - d;
      ww[1] = x0 == x1 ? 0 : d;
    } else {
      // Cubic: neighbours x0-1 .. x0+2 (edge-clamped indices), optionally renormalised without the outside ones.
      float fl = std::floor(v);
      int64_t x0 = static_cast<int64_t>(fl);
      float ratio = v - fl;
      if (ratio == 0.f) {
        ratio = 1.f;
        x0 -= 1;
      }
      cubic_weights(ratio, a.cubic_a, ww);
      float sum = 0;
      for (int k = 0; k < 4; ++k) {
        int64_t src = x0 - 1 + k;
        if (a.exclude_outside && (src < 0 || src >= len_in)) ww[k] = 0;
        sum += ww[k];
        ii[k] = std::clamp<int64_t>(src, 0, len_in - 1);
      }
      if (a.exclude_outside && sum != 0)
        for (int k = 0; k < 4; ++k) ww[k] /= sum;
    }
    if (ii[0] != o || ww[0] != 1 || (K > 1 && ww[1] != 0)) ident = false;
  }
  t.identity = ident;
  return t;
}

// Linear resize of the last two axes of float32 planes (every outer axis kept as it is; not tf_crop_and_resize):
// each input row a plane needs is interpolated along W once (2 taps per output column), then each output row
// is the blend of two such rows (contiguous, vectorised). The general loop below gathered 4 inputs per output
// and rebuilt its corner list per row: M-LSD's 64x40x40 -> 64x80x80 took 797 us there (1.9 ns per output;
// ONNX Runtime's three upsamples 335 us together). Same products and sums in the same order as that loop, so
// the same results bit for bit.
void bilinear_planes(const AxisTaps& ty, const AxisTaps& tx, size_t planes, int64_t Hin, int64_t Win, int64_t Hout,
                     int64_t Wout, const float* x, float* y) {
  const size_t plane_out = static_cast<size_t>(Hout * Wout);
  parallel_for(planes, std::max<size_t>(1, kGrain / std::max<size_t>(plane_out, 1)), [&](size_t lo, size_t hi) {
    std::vector<float> rows(2 * static_cast<size_t>(Wout));
    for (size_t pl = lo; pl < hi; ++pl) {
      const float* xp = x + pl * static_cast<size_t>(Hin * Win);
      float* yp = y + pl * plane_out;
      int64_t held[2] = {-1, -1};  // the input rows the two buffers hold, interpolated along W
      auto row = [&](int64_t iy, int64_t keep) -> const float* {
        for (int b = 0; b < 2; ++b)
          if (held[b] == iy) return rows.data() + b * Wout;
        const int b = held[0] == keep ? 1 : 0;  // never overwrite the other row this output row needs
        held[b] = iy;
        float* r = rows.data() + b * Wout;
        const float* xr = xp + iy * Win;
        for (int64_t o = 0; o < Wout; ++o)
          r[o] = tx.w[2 * o] * xr[tx.idx[2 * o]] + tx.w[2 * o + 1] * xr[tx.idx[2 * o + 1]];
        return r;
      };
      for (int64_t oy = 0; oy < Hout; ++oy) {
        const int64_t i0 = ty.idx[2 * oy], i1 = ty.idx[2 * oy + 1];
        const float w0 = ty.w[2 * oy], w1 = ty.w[2 * oy + 1];
        float* yr = yp + oy * Wout;
        const float* top = row(i0, -1);
        if (w1 == 0) {  // one input row (the general loop's single corner: w0 * top + 0 * top)
          for (int64_t o = 0; o < Wout; ++o) yr[o] = w0 * top[o] + 0.0f * top[o];
          continue;
        }
        const float* bot = row(i1, i0);
        for (int64_t o = 0; o < Wout; ++o) yr[o] = w0 * top[o] + w1 * bot[o];
      }
    }
  });
}

// Nearest resize of the last two axes (every outer axis kept as it is; not tf_crop_and_resize), any element
// type: an output row that reads the same input row as the one before it is a copy of that row, and along W an
// integer upscale (each input element s times, as PP-OCRv4's 2x/4x/8x upsamples) is a replicate loop instead
// of a gather. The general loop below gathered every element through a 64-bit index: PP-OCRv4 det's six
// upsamples took 5.4 ms per run at 1 ns per output. Copies only: the same results bit for bit.
template <class T>
void nearest_planes(const AxisTaps& ty, const AxisTaps& tx, size_t planes, int64_t Hin, int64_t Win, int64_t Hout,
                    int64_t Wout, const T* x, T* y) {
  const int64_t s = Wout % Win == 0 ? Wout / Win : 0;
  bool replicate = s > 0;
  for (int64_t o = 0; replicate && o < Wout; ++o) replicate = tx.idx[o] == o / s;
  const size_t plane_out = static_cast<size_t>(Hout * Wout);
  parallel_for(planes, std::max<size_t>(1, kGrain / std::max<size_t>(plane_out, 1)), [&](size_t lo, size_t hi) {
    for (size_t pl = lo; pl < hi; ++pl) {
      const T* xp = x + pl * static_cast<size_t>(Hin * Win);
      T* yp = y + pl * plane_out;
      for (int64_t oy = 0; oy < Hout; ++oy) {
        T* yr = yp + oy * Wout;
        const int64_t iy = ty.idx[oy];
        if (oy > 0 && ty.idx[oy - 1] == iy) {
          std::memcpy(yr, yr - Wout, static_cast<size_t>(Wout) * sizeof(T));
          continue;
        }
        const T* xr = xp + iy * Win;
        if (s == 1 && replicate) {
          std::memcpy(yr, xr, static_cast<size_t>(Wout) * sizeof(T));
        } else if (replicate && s == 2) {
          for (int64_t i = 0; i < Win; ++i) yr[2 * i] = yr[2 * i + 1] = xr[i];
        } else if (replicate) {
          for (int64_t i = 0; i < Win; ++i)
            for (int64_t k = 0; k < s; ++k) yr[i * s + k] = xr[i];
        } else {
          for (int64_t o = 0; o < Wout; ++o) yr[o] = xr[tx.idx[o]];
        }
      }
    }
  });
}

template <class T>
void resize_run(const ResizeAttrs& a, const ResizePlan& p, std::span<const int64_t> in,
                const T* x, T* y) {
  const size_t r = in.size();
  if (r == 0) {
    y[0] = x[0];
    return;
  }
  std::vector<AxisTaps> taps(r);
  for (size_t k = 0; k < r; ++k) taps[k] = axis_taps(a, in[k], p.out[k], p.scales[k], p.roi_start[k], p.roi_end[k]);
  std::vector<int64_t> istride(r);
  int64_t acc = 1;
  for (size_t k = r; k-- > 0;) {
    istride[k] = acc;
    acc *= in[k];
  }
  bool outer_kept = r >= 2 && a.ctm != Ctm::kTfCropAndResize;
  for (size_t k = 0; outer_kept && k + 2 < r; ++k) outer_kept = taps[k].identity;
  if (outer_kept) {
    const size_t planes = oph::numel(std::span<const int64_t>(in).first(r - 2));
    const int64_t Hin = in[r - 2], Win = in[r - 1], Hout = p.out[r - 2], Wout = p.out[r - 1];
    if (a.mode == Mode::kNearest) {
      nearest_planes<T>(taps[r - 2], taps[r - 1], planes, Hin, Win, Hout, Wout, x, y);
      return;
    }
    if constexpr (std::is_same_v<T, float>) {
      if (a.mode == Mode::kLinear) {
        bilinear_planes(taps[r - 2], taps[r - 1], planes, Hin, Win, Hout, Wout, x, y);
        return;
      }
    }
  }
  const int64_t W = p.out[r - 1];
  const size_t rows = oph::numel(std::span<const int64_t>(p.out).first(r - 1));
  const T extra = static_cast<T>(a.extrapolation);
  const AxisTaps& last = taps[r - 1];
  const bool nearest = a.mode == Mode::kNearest;
  parallel_for(rows, std::max<size_t>(1, kGrain / std::max<int64_t>(W, 1)), [&](size_t lo, size_t hi) {
    std::vector<int64_t> offs;
    std::vector<float> wts;
    std::vector<int64_t> idx(r - 1);
    for (size_t row = lo; row < hi; ++row) {
      // Outer axes: the set of (input offset, weight) corners of this row.
      offs.assign(1, 0);
      wts.assign(1, 1.f);
      bool outside = false;
      size_t rem = row;
      for (size_t k = r - 1; k-- > 0;) {
        idx[k] = static_cast<int64_t>(rem % static_cast<size_t>(p.out[k]));
        rem /= static_cast<size_t>(p.out[k]);
      }
      for (size_t k = 0; k + 1 < r; ++k) {
        const AxisTaps& t = taps[k];
        const int64_t o = idx[k];
        if (t.outside[o]) outside = true;
        const int64_t* ti = &t.idx[o * t.K];
        const float* tw = &t.w[o * t.K];
        int used = 1;  // taps with a weight (the first always counts)
        for (int q = 1; q < t.K; ++q)
          if (tw[q] != 0) used = q + 1;
        if (used == 1) {
          for (auto& off : offs) off += ti[0] * istride[k];
        } else {
          const size_t n = offs.size();
          for (int q = 1; q < used; ++q) {
            for (size_t j = 0; j < n; ++j) {
              offs.push_back(offs[j] + ti[q] * istride[k]);
              wts.push_back(wts[j] * tw[q]);
            }
          }
          for (size_t j = 0; j < n; ++j) {
            offs[j] += ti[0] * istride[k];
            wts[j] *= tw[0];
          }
        }
      }
      T* yr = y + row * W;
      if (outside) {
        for (int64_t o = 0; o < W; ++o) yr[o] = extra;
        continue;
      }
      if (nearest) {
        const T* xr = x + offs[0];
        const int64_t* ii = last.idx.data();
        for (int64_t o = 0; o < W; ++o) yr[o] = xr[ii[o]];
      } else if (last.K == 2 && offs.size() <= 2) {
        // Bilinear (or linear along the last axis only): two input rows, two taps each.
        const T* x0 = x + offs[0];
        const T* x1 = x + offs[offs.size() - 1];
        const float w0 = wts[0], w1 = offs.size() == 2 ? wts[1] : 0.0f;
        const int64_t* ii = last.idx.data();
        const float* ww = last.w.data();
        for (int64_t o = 0; o < W; ++o) {
          const int64_t i0 = ii[2 * o], i1 = ii[2 * o + 1];
          const float a0 = ww[2 * o], a1 = ww[2 * o + 1];
          const float top = a0 * static_cast<float>(x0[i0]) + a1 * static_cast<float>(x0[i1]);
          const float bot = a0 * static_cast<float>(x1[i0]) + a1 * static_cast<float>(x1[i1]);
          yr[o] = static_cast<T>(w0 * top + w1 * bot);
        }
      } else {
        const int K = last.K;
        for (int64_t o = 0; o < W; ++o) {
          const int64_t* ii = &last.idx[o * K];
          const float* ww = &last.w[o * K];
          float s = 0;
          for (size_t j = 0; j < offs.size(); ++j) {
            const T* xr = x + offs[j];
            float inner = 0;
            for (int q = 0; q < K; ++q) inner += ww[q] * static_cast<float>(xr[ii[q]]);
            s += wts[j] * inner;
          }
          yr[o] = static_cast<T>(s);
        }
      }
      for (int64_t o = 0; o < W; ++o)
        if (last.outside[o]) yr[o] = extra;
    }
  });
}

template <int kVersion>
struct ResizeKernel {
  ResizeAttrs a;
  explicit ResizeKernel(const oph::KernelInit& init) : a(read_resize_attrs(init.attrs(), kVersion)) {}
  void compute(oph::KernelContext& ctx) {
    const std::string op = "Resize";
    oph::TensorRef x = input(ctx, 0, op);
    auto xs = x.shape();
    ResizeInputs in;
    auto raw = [&](size_t i) -> const oph_tensor* {
      oph::TensorRef t = ctx.input(i);
      return t.present() ? t.raw() : nullptr;
    };
    if (kVersion < 11) {
      in.scales = raw(1);
    } else {
      in.roi = raw(1);
      in.scales = raw(2);
      in.sizes = raw(3);
    }
    ResizePlan p = resize_plan(a, xs, in.roi, in.scales, in.sizes);
    oph::TensorRef y = ensure_output(ctx, 0, p.out, op);
    if (!y.present() || y.size() == 0) return;
    if (x.size() == 0) fail(op + ": cannot resize an empty input to a non-empty output");
    oph_dtype dt = x.dtype();
    if (dt == f32) resize_run<float>(a, p, xs, static_cast<const float*>(x.data()), static_cast<float*>(y.data()));
    else if (dt == f64) resize_run<double>(a, p, xs, static_cast<const double*>(x.data()), static_cast<double*>(y.data()));
    else if (dt == u8 && a.mode == Mode::kNearest)
      resize_run<uint8_t>(a, p, xs, static_cast<const uint8_t*>(x.data()), static_cast<uint8_t*>(y.data()));
    else if (dt == i8 && a.mode == Mode::kNearest)
      resize_run<int8_t>(a, p, xs, static_cast<const int8_t*>(x.data()), static_cast<int8_t*>(y.data()));
    else if (dt == i32 && a.mode == Mode::kNearest)
      resize_run<int32_t>(a, p, xs, static_cast<const int32_t*>(x.data()), static_cast<int32_t*>(y.data()));
    else if (dt == i64 && a.mode == Mode::kNearest)
      resize_run<int64_t>(a, p, xs, static_cast<const int64_t*>(x.data()), static_cast<int64_t*>(y.data()));
    else fail(op + ": dtype " + oph::dtype_name(dt) + " is not supported for this mode", OPH_CODE_UNIMPLEMENTED);
  }
};

template <int kVersion>
void add_resize(oph::Pack& pack, int since, int until) {
  auto& b = pack.op(kDomain, "Resize").versions(since, until).doc("resize: nearest, linear and cubic interpolation");
  b.input("X", "T1", OPH_ARITY_SINGLE);
  if (kVersion < 11) {
    b.input("scales", "T2", OPH_ARITY_SINGLE, OPH_MEMORY_HOST);
  } else if (kVersion < 13) {
    b.input("roi", "T2", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)
        .input("scales", "T3", OPH_ARITY_SINGLE, OPH_MEMORY_HOST)
        .input("sizes", "T4", OPH_ARITY_OPTIONAL, OPH_MEMORY_HOST);
  } else {
    b.input("roi", "T2", OPH_ARITY_OPTIONAL, OPH_MEMORY_HOST)
        .input("scales", "T3", OPH_ARITY_OPTIONAL, OPH_MEMORY_HOST)
        .input("sizes", "T4", OPH_ARITY_OPTIONAL, OPH_MEMORY_HOST);
  }
  b.output("Y", "T1");
  if (kVersion >= 18) b.attr("antialias", int64_t{0}).optional_attr("axes", OPH_ATTR_INTS);
  if (kVersion >= 11) {
    b.attr("coordinate_transformation_mode", std::string("half_pixel"))
        .attr("cubic_coeff_a", -0.75f)
        .attr("exclude_outside", int64_t{0})
        .attr("extrapolation_value", 0.0f);
  }
  if (kVersion >= 18) b.attr("keep_aspect_ratio_policy", std::string("stretch"));
  b.attr("mode", std::string("nearest"));
  if (kVersion >= 11) b.attr("nearest_mode", std::string("round_prefer_floor"));
  b.infer([](oph::InferContext& c) { resize_infer(c, kVersion); }).template kernel<ResizeKernel<kVersion>>();
  add_types(b, "T1", {f32, f64, i8, u8, i32, i64});
  if (kVersion < 11) {
    add_types(b, "T2", {f32});
  } else {
    add_types(b, "T2", {f32, f64});  // roi: float tensors
    add_types(b, "T3", {f32});
    add_types(b, "T4", {i64});
  }
}

std::vector<int64_t> upsample_shape(std::span<const int64_t> xs, const std::vector<float>& scales, const std::string& op) {
  if (scales.size() != xs.size())
    fail(op + ": scales has " + std::to_string(scales.size()) + " values for an input of rank " + std::to_string(xs.size()));
  std::vector<int64_t> out(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    if (scales[i] < 1) fail(op + ": scales must be >= 1");
    out[i] = xs[i] < 0 ? OPH_DIM_UNKNOWN : static_cast<int64_t>(std::floor(static_cast<double>(xs[i]) * scales[i]));
  }
  return out;
}

std::vector<float> read_scales(const oph::TensorRef& t, const std::string& op) {
  if (!(t.dtype() == f32)) fail(op + ": scales must be float32");
  const float* p = static_cast<const float*>(t.data());
  return std::vector<float>(p, p + t.size());
}

void upsample_compute(oph::KernelContext& ctx, bool scales_input) {
  const std::string op = "Upsample";
  oph::TensorRef x = input(ctx, 0, op);
  auto xs = x.shape();
  std::vector<float> scales = scales_input ? read_scales(input(ctx, 1, op), op) : ctx.attr<std::vector<float>>("scales");
  auto os = upsample_shape(xs, scales, op);
  oph::TensorRef y = ensure_output(ctx, 0, os, op);
  if (!y.present()) return;
  const std::string mode = ctx.attr<std::string>("mode");
  const size_t r = xs.size(), n = oph::numel(os);
  if (mode == "nearest") {
    const size_t es = elem_size(x.dtype());
    const char* xp = static_cast<const char*>(x.data());
    char* yp = static_cast<char*>(y.data());
    for (size_t o = 0; o < n; ++o) {
      size_t rem = o, src = 0, mul = 1;
      for (size_t d = r; d-- > 0;) {
        const int64_t oi = static_cast<int64_t>(rem % os[d]);
        rem /= os[d];
        const int64_t ii = std::min<int64_t>(xs[d] - 1, static_cast<int64_t>(std::floor(oi / scales[d])));
        src += ii * mul;
        mul *= xs[d];
      }
      std::memcpy(yp + o * es, xp + src * es, es);
    }
  } else if (mode == "linear") {
    dispatch_float(x.dtype(), op, [&]<class T>(std::type_identity<T>) {
      const T* xp = static_cast<const T*>(x.data());
      T* yp = static_cast<T*>(y.data());
      std::vector<int64_t> i0(r), i1(r);
      std::vector<double> w(r);
      for (size_t o = 0; o < n; ++o) {
        size_t rem = o;
        for (size_t d = r; d-- > 0;) {
          const int64_t oi = static_cast<int64_t>(rem % os[d]);
          rem /= os[d];
          const double in = std::min<double>(static_cast<double>(oi) / scales[d], static_cast<double>(xs[d] - 1));
          i0[d] = static_cast<int64_t>(std::floor(in));
          i1[d] = std::min<int64_t>(i0[d] + 1, xs[d] - 1);
          w[d] = in - static_cast<double>(i0[d]);
        }
        double acc = 0;
        for (size_t corner = 0; corner < (size_t{1} << r); ++corner) {
          double wt = 1;
          size_t src = 0;
          for (size_t d = 0; d < r; ++d) {
            const bool hi = (corner >> d) & 1;
            wt *= hi ? w[d] : 1 - w[d];
            src = src * xs[d] + (hi ? i1[d] : i0[d]);
          }
          if (wt != 0) acc += wt * xp[src];
        }
        yp[o] = static_cast<T>(acc);
      }
    });
  } else {
    fail(op + ": mode '" + mode + "' is not supported (nearest and linear are)");
  }
}

void register_upsample(oph::Pack& pack) {
  for (int since : {7, 9}) {
    const bool scales_input = since == 9;
    auto& up = pack.op(kDomain, "Upsample")
                   .versions(since, since == 7 ? 8 : 9)
                   .doc("nearest or (multi)linear upsampling by scales (deprecated in opset 10)")
                   .input("X", "T")
                   .output("Y", "T")
                   .attr("mode", std::string("nearest"));
    if (scales_input) up.input("scales", "tensor(float)", OPH_ARITY_SINGLE, OPH_MEMORY_HOST).types("tensor(float)", {f32});
    else up.required_attr("scales", OPH_ATTR_FLOATS);
    add_types(up, "T", kAll);
    up.infer([scales_input](oph::InferContext& c) {
        if (!c.input_rank_known(0)) return c.set_output_unknown_rank(0, c.input_dtype(0));
        auto xs = c.input_shape(0);
        std::vector<float> scales;
        if (scales_input) {
          const oph_tensor* s = c.input_constant(1);
          if (!s) return c.set_output(0, c.input_dtype(0), std::vector<int64_t>(xs.size(), OPH_DIM_UNKNOWN));
          const float* p = reinterpret_cast<const float*>(static_cast<const char*>(s->data) + s->byte_offset);
          scales.assign(p, p + oph::numel({s->shape, static_cast<size_t>(s->ndim)}));
        } else {
          scales = c.attr<std::vector<float>>("scales");
        }
        c.set_output(0, c.input_dtype(0), upsample_shape(xs, scales, "Upsample"));
      })
        .compute([scales_input](oph::KernelContext& ctx) { upsample_compute(ctx, scales_input); });
  }
}

void register_resize(oph::Pack& pack) {
  add_resize<10>(pack, 10, 10);
  add_resize<11>(pack, 11, 12);
  add_resize<13>(pack, 13, 17);
  add_resize<18>(pack, 18, 18);
  add_resize<19>(pack, 19, OPH_OPSET_MAX);
  register_upsample(pack);
}

}  // namespace

static const Family kFamily("resize", &register_resize);

}  // namespace onnx_core
