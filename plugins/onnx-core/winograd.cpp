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

// Tiles [lo, hi) of the group that starts at tile t0 (cnt tiles): V[xi][i][c] at v + (xi * cnt + i) * C + c.
void InputTransformImpl(const float* x, int64_t C, const Shape& s, int64_t TH, int64_t TW, int64_t t0, size_t lo,
                        size_t hi, size_t cnt, float* v) {
  const D8 d;
  const size_t L = hn::Lanes(d);
  const int64_t CB = C / 8, H = s.H, W = s.W;
  for (size_t i = lo; i < hi; ++i) {
    const Tile tile(t0 + static_cast<int64_t>(i), TH, TW);
    const int64_t h0 = tile.th * 4 - s.pt, w0 = tile.tw * 4 - s.pl;
    const bool inside = h0 >= 0 && w0 >= 0 && h0 + 6 <= H && w0 + 6 <= W;
    for (int64_t cb = 0; cb < CB; ++cb) {
      const float* xb = x + (tile.n * CB + cb) * H * W * 8;
      float* vb = v + i * C + cb * 8;
      for (size_t l = 0; l < 8; l += L) {
        V8 in[36], mid[36];
        for (int64_t a = 0; a < 6; ++a)
          for (int64_t b = 0; b < 6; ++b) {
            const int64_t h = h0 + a, w = w0 + b;
            in[a * 6 + b] = inside || (h >= 0 && h < H && w >= 0 && w < W) ? hn::LoadU(d, xb + (h * W + w) * 8 + l)
                                                                             : hn::Zero(d);
          }
        for (size_t b = 0; b < 6; ++b) InputRows(in + b, 6, mid + b, d);      // columns: B^T d
        for (size_t a = 0; a < 6; ++a) InputRows(mid + a * 6, 1, in + a * 6, d);  // rows: (B^T d) B
        for (size_t xi = 0; xi < 36; ++xi) hn::StoreU(in[xi], d, vb + xi * cnt * C + l);
      }
    }
  }
}

// Tiles [lo, hi) of the group at t0: Y from M[xi][i][k] at m + (xi * cnt + i) * K + k, then the epilogue.
void OutputTransformImpl(const float* m, int64_t K, const Shape& s, int64_t TH, int64_t TW, int64_t t0, size_t lo,
                         size_t hi, size_t cnt, const float* bias, const float* z, float* y, const Epilogue& e) {
  const D8 d;
  const size_t L = hn::Lanes(d);
  const int64_t KB = K / 8, OH = s.OH, OW = s.OW;
  const V8 alpha = hn::Set(d, e.alpha), act_lo = hn::Set(d, e.act_lo), act_hi = hn::Set(d, e.act_hi);
  const V8 scale = hn::Set(d, e.scale), shift = hn::Set(d, e.shift);
  const V8 out_lo = hn::Set(d, e.lo), out_hi = hn::Set(d, e.hi);
  const bool affine = e.scale != 1.0f || e.shift != 0.0f, clamp = e.lo > -FLT_MAX || e.hi < FLT_MAX;
  for (size_t i = lo; i < hi; ++i) {
    const Tile tile(t0 + static_cast<int64_t>(i), TH, TW);
    const int64_t oh0 = tile.th * 4, ow0 = tile.tw * 4;
    const int64_t rows = std::min<int64_t>(4, OH - oh0), cols = std::min<int64_t>(4, OW - ow0);
    for (int64_t kb = 0; kb < KB; ++kb) {
      const float* mb = m + i * K + kb * 8;
      const size_t plane = static_cast<size_t>(((tile.n * KB + kb) * OH + oh0) * OW + ow0) * 8;
      for (size_t l = 0; l < 8; l += L) {
        V8 in[36], mid[24], out[16];
        for (size_t xi = 0; xi < 36; ++xi) in[xi] = hn::LoadU(d, mb + xi * cnt * K + l);
        for (size_t b = 0; b < 6; ++b) OutputRows(in + b, 6, mid + b, d);        // A^T m: 4 x 6
        for (size_t a = 0; a < 4; ++a) OutputRows(mid + a * 6, 1, out + a * 4, d);  // (A^T m) A: 4 x 4
        const V8 bv = bias ? hn::LoadU(d, bias + kb * 8 + l) : hn::Zero(d);
        for (int64_t a = 0; a < rows; ++a)
          for (int64_t b = 0; b < cols; ++b) {
            const size_t at = plane + static_cast<size_t>(a * OW + b) * 8 + l;
            V8 r = hn::Add(out[a * 4 + b], bv);
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

// Scratch per group: V (36 x tiles x C) and M (36 x tiles x K) floats. Groups of up to this many bytes keep both
// in the outer caches between the three steps; at least kMinTiles tiles so that the products stay tall.
constexpr double kGroupBytes = 4.0 * 1024 * 1024;
constexpr size_t kMinTiles = 64;

}  // namespace

Conv43::Conv43(const float* w, int64_t K, int64_t C) : K_(K), C_(C) {
  cap_simd_targets();
  static constexpr double G[6][3] = {{1.0 / 4, 0, 0},           {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                     {-1.0 / 6, 1.0 / 6, -1.0 / 6}, {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                     {1.0 / 24, -1.0 / 12, 1.0 / 6}, {0, 0, 1}};
  // U[xi][c][k] = (G g G^T)[xi] = sum_ij G[a][i] g[i][j] G[b][j], g = w[k][c], xi = 6a + b, in float64; one
  // plane at a time, packed before the next (a 36-plane temporary and its zero-fill cost ResNet-18 ~170 ms of
  // load at AVX2).
  std::vector<float> plane(static_cast<size_t>(C * K)), wt(static_cast<size_t>(C * K * 9));  // wt: [C][K][9]
  for (int64_t k = 0; k < K; ++k)
    for (int64_t c = 0; c < C; ++c) std::copy_n(w + (k * C + c) * 9, 9, wt.data() + (c * K + k) * 9);
  u_.reserve(36);
  for (int a = 0; a < 6; ++a)
    for (int b = 0; b < 6; ++b) {
      double coef[9];  // G[a][i] G[b][j]
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) coef[i * 3 + j] = G[a][i] * G[b][j];
      for (int64_t c = 0; c < C; ++c)
        for (int64_t k = 0; k < K; ++k) {
          const float* g = wt.data() + (c * K + k) * 9;
          double acc = 0.0;
          for (int t = 0; t < 9; ++t) acc += coef[t] * g[t];
          plane[static_cast<size_t>(c * K + k)] = static_cast<float>(acc);
        }
      u_.push_back(gemm_packed::pack(plane.data(), static_cast<size_t>(C), static_cast<size_t>(K)));
    }
}

size_t Conv43::tiles_per_group(const Shape& s) const {
  const size_t tiles = static_cast<size_t>(s.N * ((s.OH + 3) / 4) * ((s.OW + 3) / 4));
  const size_t fit = static_cast<size_t>(kGroupBytes / (36.0 * 4.0 * static_cast<double>(C_ + K_)));
  return std::min(tiles, std::max(kMinTiles, fit));
}

size_t Conv43::scratch_floats(const Shape& s) const {
  return 36 * tiles_per_group(s) * static_cast<size_t>(C_ + K_);
}

void Conv43::run(const Shape& s, const float* x, const float* bias, const float* z, float* y, const Epilogue& e,
                 float* scratch) const {
  cap_simd_targets();
  const int64_t TH = (s.OH + 3) / 4, TW = (s.OW + 3) / 4, T = s.N * TH * TW;
  const size_t tg = tiles_per_group(s);
  float* v = scratch;
  float* m = scratch + 36 * tg * static_cast<size_t>(C_);
  const size_t K = static_cast<size_t>(K_), C = static_cast<size_t>(C_);
  const size_t panels = u_.empty() ? 0 : u_[0].panels();
  // Tiles per task: about 16 K floats of input or output per task, as kGrain elsewhere.
  const size_t grain_in = std::max<size_t>(1, 16384 / (36 * C)), grain_out = std::max<size_t>(1, 16384 / (36 * K));
  for (int64_t t0 = 0; t0 < T; t0 += static_cast<int64_t>(tg)) {
    const size_t cnt = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(tg), T - t0));
    parallel_for(cnt, grain_in, [&](size_t lo, size_t hi) {
      HWY_DYNAMIC_DISPATCH(InputTransformImpl)(x, C_, s, TH, TW, t0, lo, hi, cnt, v);
    });
    parallel_for(36, 1, [&](size_t lo, size_t hi) {
      for (size_t xi = lo; xi < hi; ++xi)
        gemm_packed::multiply(u_[xi], v + xi * cnt * C, cnt, C, m + xi * cnt * K, K, nullptr, 0, panels);
    });
    parallel_for(cnt, grain_out, [&](size_t lo, size_t hi) {
      HWY_DYNAMIC_DISPATCH(OutputTransformImpl)(m, K_, s, TH, TW, t0, lo, hi, cnt, bias, z, y, e);
    });
  }
}

const char* Conv43::target_name() {
  cap_simd_targets();
  return HWY_DYNAMIC_DISPATCH(TargetImpl)();
}

}  // namespace onnx_core::winograd
#endif  // HWY_ONCE
