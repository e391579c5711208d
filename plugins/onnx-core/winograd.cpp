// onnx-core: Highway kernels of winograd.hpp. This file is compiled once per Highway target (foreach_target.h
// re-includes it through HWY_TARGET_INCLUDE); Conv43 at the end dispatches to the best target at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "winograd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

#include "winograd.hpp"

#include <algorithm>

HWY_BEFORE_NAMESPACE();
namespace onnx_core::winograd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using D8 = hn::CappedTag<float, 8>;  // one channel block: 1 vector on AVX2 and up, 2 on SSE4
using V8 = hn::Vec<D8>;

// Where tile t of the output lies: image n, tile row th, tile column tw.
struct Tile {
  int64_t n, th, tw;
  Tile(int64_t t, int64_t TH, int64_t TW) : n(t / (TH * TW)), th(t % (TH * TW) / TW), tw(t % TW) {}
};

// out = B^T in, for one column of 6 (in[k * s], out[k * s]).
HWY_INLINE void InputRows(const V8* in, size_t s, V8* out, D8 d) {
  const V8 four = hn::Set(d, 4.0f), five = hn::Set(d, 5.0f), two = hn::Set(d, 2.0f);
  const V8 d0 = in[0], d1 = in[s], d2 = in[2 * s], d3 = in[3 * s], d4 = in[4 * s], d5 = in[5 * s];
  out[0] = hn::MulAdd(four, d0, hn::NegMulAdd(five, d2, d4));
  out[s] = hn::NegMulAdd(four, hn::Add(d1, d2), hn::Add(d3, d4));
  out[2 * s] = hn::MulAdd(four, hn::Sub(d1, d2), hn::Sub(d4, d3));
  out[3 * s] = hn::MulAdd(two, hn::Sub(d3, d1), hn::Sub(d4, d2));
  out[4 * s] = hn::MulAdd(two, hn::Sub(d1, d3), hn::Sub(d4, d2));
  out[5 * s] = hn::MulAdd(four, d1, hn::NegMulAdd(five, d3, d5));
}

// out = A^T in, 6 values to 4 (in[k * s], out[k * s]).
HWY_INLINE void OutputRows(const V8* in, size_t s, V8* out, D8 d) {
  const V8 two = hn::Set(d, 2.0f), four = hn::Set(d, 4.0f), eight = hn::Set(d, 8.0f);
  const V8 a = hn::Add(in[s], in[2 * s]), b = hn::Sub(in[s], in[2 * s]);
  const V8 c = hn::Add(in[3 * s], in[4 * s]), e = hn::Sub(in[3 * s], in[4 * s]);
  out[0] = hn::Add(hn::Add(in[0], a), c);
  out[s] = hn::MulAdd(two, e, b);
  out[2 * s] = hn::MulAdd(four, c, a);
  out[3 * s] = hn::Add(hn::MulAdd(eight, e, b), in[5 * s]);
}

// PH x PW input points per tile (6 x 6 for 3x3, 6 x 1 for 3x1, 1 x 6 for 1x3), 4 or 1 outputs per tile side.
// Tiles [lo, hi) of the group that starts at tile t0 (cnt tiles): V[xi][i][c] at v + (xi * cnt + i) * C + c.
template <int PH, int PW>
void InputTransform(const float* x, int64_t C, const Shape& s, int64_t TH, int64_t TW, int64_t t0, size_t lo,
                    size_t hi, size_t cnt, float* v) {
  constexpr int64_t OTH = PH == 6 ? 4 : 1, OTW = PW == 6 ? 4 : 1;
  constexpr size_t P = PH * PW;
  const D8 d;
  const size_t L = hn::Lanes(d);
  const int64_t CB = C / 8, H = s.H, W = s.W;
  for (size_t i = lo; i < hi; ++i) {
    const Tile tile(t0 + static_cast<int64_t>(i), TH, TW);
    const int64_t h0 = tile.th * OTH - s.pt, w0 = tile.tw * OTW - s.pl;
    const bool inside = h0 >= 0 && w0 >= 0 && h0 + PH <= H && w0 + PW <= W;
    for (int64_t cb = 0; cb < CB; ++cb) {
      const float* xb = x + (tile.n * CB + cb) * H * W * 8;
      float* vb = v + i * C + cb * 8;
      for (size_t l = 0; l < 8; l += L) {
        V8 in[P], mid[P];
        for (int64_t a = 0; a < PH; ++a)
          for (int64_t b = 0; b < PW; ++b) {
            const int64_t h = h0 + a, w = w0 + b;
            in[a * PW + b] = inside || (h >= 0 && h < H && w >= 0 && w < W) ? hn::LoadU(d, xb + (h * W + w) * 8 + l)
                                                                              : hn::Zero(d);
          }
        const V8* t = in;
        if constexpr (PH == 6) {
          for (size_t b = 0; b < PW; ++b) InputRows(in + b, PW, mid + b, d);  // columns: B^T d
          t = mid;
        }
        if constexpr (PW == 6) {
          V8* dst = PH == 6 ? in : mid;
          for (size_t a = 0; a < PH; ++a) InputRows(t + a * 6, 1, dst + a * 6, d);  // rows: (B^T d) B
          t = dst;
        }
        for (size_t xi = 0; xi < P; ++xi) hn::StoreU(t[xi], d, vb + xi * cnt * C + l);
      }
    }
  }
}

// Tiles [lo, hi) of the group at t0: Y from M[xi][i][k] at m + (xi * cnt + i) * K + k, then the epilogue.
template <int PH, int PW>
void OutputTransform(const float* m, int64_t K, const Shape& s, int64_t TH, int64_t TW, int64_t t0, size_t lo,
                     size_t hi, size_t cnt, const float* bias, const float* z, float* y, const Epilogue& e) {
  constexpr int64_t OTH = PH == 6 ? 4 : 1, OTW = PW == 6 ? 4 : 1;
  constexpr size_t P = PH * PW;
  const D8 d;
  const size_t L = hn::Lanes(d);
  const int64_t KB = K / 8, OH = s.OH, OW = s.OW;
  const V8 alpha = hn::Set(d, e.alpha), act_lo = hn::Set(d, e.act_lo), act_hi = hn::Set(d, e.act_hi);
  const V8 scale = hn::Set(d, e.scale), shift = hn::Set(d, e.shift);
  const V8 out_lo = hn::Set(d, e.lo), out_hi = hn::Set(d, e.hi);
  const bool affine = e.scale != 1.0f || e.shift != 0.0f, clamp = e.lo > -FLT_MAX || e.hi < FLT_MAX;
  for (size_t i = lo; i < hi; ++i) {
    const Tile tile(t0 + static_cast<int64_t>(i), TH, TW);
    const int64_t oh0 = tile.th * OTH, ow0 = tile.tw * OTW;
    const int64_t rows = std::min<int64_t>(OTH, OH - oh0), cols = std::min<int64_t>(OTW, OW - ow0);
    for (int64_t kb = 0; kb < KB; ++kb) {
      const float* mb = m + i * K + kb * 8;
      const size_t plane = static_cast<size_t>(((tile.n * KB + kb) * OH + oh0) * OW + ow0) * 8;
      for (size_t l = 0; l < 8; l += L) {
        V8 in[P], mid[OTH * PW], out[OTH * OTW];
        for (size_t xi = 0; xi < P; ++xi) in[xi] = hn::LoadU(d, mb + xi * cnt * K + l);
        const V8* t = in;
        if constexpr (PH == 6) {
          for (size_t b = 0; b < PW; ++b) OutputRows(in + b, PW, mid + b, d);  // A^T m: 4 x PW
          t = mid;
        }
        if constexpr (PW == 6) {
          for (size_t a = 0; a < OTH; ++a) OutputRows(t + a * 6, 1, out + a * 4, d);  // (A^T m) A: OTH x 4
          t = out;
        }
        const V8 bv = bias ? hn::LoadU(d, bias + kb * 8 + l) : hn::Zero(d);
        for (int64_t a = 0; a < rows; ++a)
          for (int64_t b = 0; b < cols; ++b) {
            const size_t at = plane + static_cast<size_t>(a * OW + b) * 8 + l;
            V8 r = hn::Add(t[a * OTW + b], bv);
            if (z) r = hn::Add(r, hn::LoadU(d, z + at));
            switch (e.act) {
              case Epilogue::Act::kNone: break;
              case Epilogue::Act::kRelu: r = hn::Max(r, hn::Zero(d)); break;
              case Epilogue::Act::kLeakyRelu:
                r = hn::IfThenElse(hn::Gt(r, hn::Zero(d)), r, hn::Mul(r, alpha));
                break;
              case Epilogue::Act::kClip: r = hn::Min(hn::Max(r, act_lo), act_hi); break;
            }
            if (affine) r = hn::MulAdd(r, scale, shift);
            if (clamp) r = hn::Min(hn::Max(r, out_lo), out_hi);
            hn::StoreU(r, d, y + at);
          }
      }
    }
  }
}

void InputTransformImpl(Taps taps, const float* x, int64_t C, const Shape& s, int64_t TH, int64_t TW, int64_t t0,
                        size_t lo, size_t hi, size_t cnt, float* v) {
  switch (taps) {
    case Taps::k3x3: return InputTransform<6, 6>(x, C, s, TH, TW, t0, lo, hi, cnt, v);
    case Taps::k3x1: return InputTransform<6, 1>(x, C, s, TH, TW, t0, lo, hi, cnt, v);
    case Taps::k1x3: return InputTransform<1, 6>(x, C, s, TH, TW, t0, lo, hi, cnt, v);
  }
}

void OutputTransformImpl(Taps taps, const float* m, int64_t K, const Shape& s, int64_t TH, int64_t TW, int64_t t0,
                         size_t lo, size_t hi, size_t cnt, const float* bias, const float* z, float* y,
                         const Epilogue& e) {
  switch (taps) {
    case Taps::k3x3: return OutputTransform<6, 6>(m, K, s, TH, TW, t0, lo, hi, cnt, bias, z, y, e);
    case Taps::k3x1: return OutputTransform<6, 1>(m, K, s, TH, TW, t0, lo, hi, cnt, bias, z, y, e);
    case Taps::k1x3: return OutputTransform<1, 6>(m, K, s, TH, TW, t0, lo, hi, cnt, bias, z, y, e);
  }
}

const char* TargetImpl() { return hwy::TargetName(HWY_TARGET); }

}  // namespace HWY_NAMESPACE
}  // namespace onnx_core::winograd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "simd_targets.hpp"
#include "team.hpp"

namespace onnx_core::winograd {

HWY_EXPORT(InputTransformImpl);
HWY_EXPORT(OutputTransformImpl);
HWY_EXPORT(TargetImpl);

namespace {

// Scratch per group: V (P x tiles x C) and M (P x tiles x K) floats, P the points per tile (36 or 6). Groups of
// up to this many bytes keep both in the outer caches between the three steps; at least kMinTiles tiles so that
// the products stay tall.
constexpr double kGroupBytes = 4.0 * 1024 * 1024;
constexpr size_t kMinTiles = 64;

}  // namespace

Conv43::Conv43(const float* w, int64_t K, int64_t C, Taps taps) : K_(K), C_(C), taps_(taps) {
  cap_simd_targets();
  static constexpr double G[6][3] = {{1.0 / 4, 0, 0},           {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                     {-1.0 / 6, 1.0 / 6, -1.0 / 6}, {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                     {1.0 / 24, -1.0 / 12, 1.0 / 6}, {0, 0, 1}};
  static constexpr double I[1][3] = {{1, 0, 0}};  // a 1-tap side: the weight as it is
  const int kh = taps == Taps::k1x3 ? 1 : 3, kw = taps == Taps::k3x1 ? 1 : 3, taps_n = kh * kw;
  const int ph = points_h(), pw = points_w();
  const double(*gh)[3] = kh == 3 ? G : I;
  const double(*gw)[3] = kw == 3 ? G : I;
  // U[xi][c][k] = (Gh g Gw^T)[xi] = sum_ij Gh[a][i] g[i][j] Gw[b][j], g = w[k][c] (kh x kw), xi = a * pw + b, in
  // float64; one plane at a time, packed before the next (a 36-plane temporary and its zero-fill cost ResNet-18
  // ~170 ms of load at AVX2).
  std::vector<float> plane(static_cast<size_t>(C * K)), wt(static_cast<size_t>(C * K * taps_n));  // [C][K][taps]
  for (int64_t k = 0; k < K; ++k)
    for (int64_t c = 0; c < C; ++c) std::copy_n(w + (k * C + c) * taps_n, taps_n, wt.data() + (c * K + k) * taps_n);
  u_.reserve(static_cast<size_t>(ph * pw));
  for (int a = 0; a < ph; ++a)
    for (int b = 0; b < pw; ++b) {
      double coef[9];  // Gh[a][i] Gw[b][j]
      for (int i = 0; i < kh; ++i)
        for (int j = 0; j < kw; ++j) coef[i * kw + j] = gh[a][i] * gw[b][j];
      for (int64_t c = 0; c < C; ++c)
        for (int64_t k = 0; k < K; ++k) {
          const float* g = wt.data() + (c * K + k) * taps_n;
          double acc = 0.0;
          for (int t = 0; t < taps_n; ++t) acc += coef[t] * g[t];
          plane[static_cast<size_t>(c * K + k)] = static_cast<float>(acc);
        }
      u_.push_back(gemm_packed::pack(plane.data(), static_cast<size_t>(C), static_cast<size_t>(K)));
    }
}

size_t Conv43::tiles_per_group(const Shape& s) const {
  const size_t P = u_.size();
  const size_t tiles = static_cast<size_t>(s.N * tiles_h(s) * tiles_w(s));
  const size_t fit = static_cast<size_t>(kGroupBytes / (static_cast<double>(P) * 4.0 * static_cast<double>(C_ + K_)));
  return std::min(tiles, std::max(kMinTiles, fit));
}

size_t Conv43::scratch_floats(const Shape& s) const {
  return u_.size() * tiles_per_group(s) * static_cast<size_t>(C_ + K_);
}

void Conv43::run(const Shape& s, const float* x, const float* bias, const float* z, float* y, const Epilogue& e,
                 float* scratch) const {
  cap_simd_targets();
  const size_t P = u_.size();
  const int64_t TH = tiles_h(s), TW = tiles_w(s), T = s.N * TH * TW;
  const size_t tg = tiles_per_group(s);
  float* v = scratch;
  float* m = scratch + P * tg * static_cast<size_t>(C_);
  const size_t K = static_cast<size_t>(K_), C = static_cast<size_t>(C_);
  const size_t panels = u_.empty() ? 0 : u_[0].panels();
  // Tiles per task: about 16 K floats of input or output per task, as kGrain elsewhere.
  const size_t grain_in = std::max<size_t>(1, 16384 / (P * C)), grain_out = std::max<size_t>(1, 16384 / (P * K));
  for (int64_t t0 = 0; t0 < T; t0 += static_cast<int64_t>(tg)) {
    const size_t cnt = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(tg), T - t0));
    parallel_for(cnt, grain_in, [&](size_t lo, size_t hi) {
      HWY_DYNAMIC_DISPATCH(InputTransformImpl)(taps_, x, C_, s, TH, TW, t0, lo, hi, cnt, v);
    });
    parallel_for(P, 1, [&](size_t lo, size_t hi) {
      for (size_t xi = lo; xi < hi; ++xi)
        gemm_packed::multiply(u_[xi], v + xi * cnt * C, cnt, C, m + xi * cnt * K, K, nullptr, 0, panels);
    });
    parallel_for(cnt, grain_out, [&](size_t lo, size_t hi) {
      HWY_DYNAMIC_DISPATCH(OutputTransformImpl)(taps_, m, K_, s, TH, TW, t0, lo, hi, cnt, bias, z, y, e);
    });
  }
}

const char* Conv43::target_name() {
  cap_simd_targets();
  return HWY_DYNAMIC_DISPATCH(TargetImpl)();
}

}  // namespace onnx_core::winograd
#endif  // HWY_ONCE
