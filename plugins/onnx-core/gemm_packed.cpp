// onnx-core: Highway kernels of gemm_packed.hpp. This file is compiled once per Highway target (foreach_target.h
// re-includes it through HWY_TARGET_INCLUDE); the dispatchers at the end pick the best target at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "gemm_packed.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

#include "gemm_packed.hpp"

#include <algorithm>
#include <cstring>

HWY_BEFORE_NAMESPACE();
namespace onnx_core::gemm_packed {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Rows of the micro-kernel: 2 * MR accumulators plus two B vectors and one broadcast of A fit the register file.
#if HWY_TARGET <= HWY_AVX3
constexpr size_t kMR = 12;  // 32 vector registers
#else
constexpr size_t kMR = 6;  // 16 vector registers
#endif
// Depth of one pass over a panel (KC x NR floats: 16 KiB at AVX2, 32 KiB at AVX-512, kept in L1/L2) and rows of A
// per pass (MC x KC floats, kept in L2 while every panel streams past them).
constexpr size_t kKC = 256;
constexpr size_t kMC = 120;

size_t PanelWidthImpl() { return 2 * hn::Lanes(hn::ScalableTag<float>()); }

// K in equal slices of at most kKC (384 = 2 x 192, not 256 + 128); slice kb covers [kb * step, min(K, ...)).
struct KSlices {
  size_t count, step;
  explicit KSlices(size_t K) : count(K == 0 ? 1 : (K + kKC - 1) / kKC), step(K == 0 ? 0 : (K + count - 1) / count) {}
  size_t begin(size_t kb) const { return kb * step; }
  size_t depth(size_t kb, size_t K) const { return std::min(step, K - begin(kb)); }
};

// Panel p's part of K slice kb: kc x NR floats at begin(kb) * panels * NR + p * kc * NR, so that one slice of all
// panels is one sequential stream (what multiply() reads for each block of rows).
void PackImpl(const float* b, size_t K, size_t N, bool transposed, float scale, float* out) {
  const size_t nr = PanelWidthImpl();
  const size_t panels = (N + nr - 1) / nr;
  const KSlices ks(K);
  for (size_t kb = 0; kb < ks.count; ++kb) {
    const size_t k0 = ks.begin(kb), kc = ks.depth(kb, K);
    for (size_t p = 0; p < panels; ++p) {
      float* dst = out + k0 * panels * nr + p * kc * nr;
      const size_t n0 = p * nr, cols = std::min(nr, N - n0);
      for (size_t k = 0; k < kc; ++k) {
        float* row = dst + k * nr;
        if (!transposed) {
          const float* src = b + (k0 + k) * N + n0;
          for (size_t j = 0; j < cols; ++j) row[j] = scale * src[j];
        } else {
          for (size_t j = 0; j < cols; ++j) row[j] = scale * b[(n0 + j) * K + k0 + k];
        }
        for (size_t j = cols; j < nr; ++j) row[j] = 0.0f;
      }
    }
  }
}

// R rows of C (R <= kMR) times one panel, over kc steps of k; A's element (r, k) is a[r * lda + k] (A is not
// packed: measured, copying MR x KC blocks of A cost more than they saved on these shapes). `init`: 0 start from zero, 1 from bias (the
// panel's slice), 2 from C. `cols` < NR only for the last panel: C is then read and written through a buffer.
template <size_t R>
HWY_NOINLINE void Micro(const float* HWY_RESTRICT a, size_t lda, const float* HWY_RESTRICT bp, size_t kc,
                        float* HWY_RESTRICT c, size_t ldc, size_t cols, int init, const float* HWY_RESTRICT bias) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  const size_t L = hn::Lanes(d), nr = 2 * L;
  HWY_ALIGN float buf[kMR * 2 * HWY_MAX_BYTES / sizeof(float)];
  const bool full = cols == nr;
  float* cw = c;  // where the sums are loaded from and stored to
  size_t ldw = ldc;
  if (!full) {
    cw = buf;
    ldw = nr;
    for (size_t r = 0; r < R; ++r) {
      std::memset(buf + r * nr, 0, nr * sizeof(float));
      if (init == 2) std::memcpy(buf + r * nr, c + r * ldc, cols * sizeof(float));
    }
  }
  V c0[R], c1[R];
  if (init == 2) {
#pragma GCC unroll 12
    for (size_t r = 0; r < R; ++r) {
      c0[r] = hn::LoadU(d, cw + r * ldw);
      c1[r] = hn::LoadU(d, cw + r * ldw + L);
    }
  } else if (init == 1) {
    HWY_ALIGN float bb[2 * HWY_MAX_BYTES / sizeof(float)] = {};
    std::memcpy(bb, bias, cols * sizeof(float));
    const V b0 = hn::Load(d, bb), b1 = hn::Load(d, bb + L);
#pragma GCC unroll 12
    for (size_t r = 0; r < R; ++r) {
      c0[r] = b0;
      c1[r] = b1;
    }
  } else {
#pragma GCC unroll 12
    for (size_t r = 0; r < R; ++r) {
      c0[r] = hn::Zero(d);
      c1[r] = hn::Zero(d);
    }
  }
  for (size_t k = 0; k < kc; ++k) {
    const V b0 = hn::Load(d, bp + k * nr);
    const V b1 = hn::Load(d, bp + k * nr + L);
#pragma GCC unroll 12
    for (size_t r = 0; r < R; ++r) {
      const V av = hn::Set(d, a[r * lda + k]);
      c0[r] = hn::MulAdd(av, b0, c0[r]);
      c1[r] = hn::MulAdd(av, b1, c1[r]);
    }
  }
#pragma GCC unroll 12
  for (size_t r = 0; r < R; ++r) {
    hn::StoreU(c0[r], d, cw + r * ldw);
    hn::StoreU(c1[r], d, cw + r * ldw + L);
  }
  if (!full)
    for (size_t r = 0; r < R; ++r) std::memcpy(c + r * ldc, buf + r * nr, cols * sizeof(float));
}

template <size_t R>
HWY_INLINE void MicroRows(size_t rows, const float* a, size_t lda, const float* bp, size_t kc, float* c, size_t ldc,
                          size_t cols, int init, const float* bias) {
  if constexpr (R > 0) {
    if (rows == R) return Micro<R>(a, lda, bp, kc, c, ldc, cols, init, bias);
    MicroRows<R - 1>(rows, a, lda, bp, kc, c, ldc, cols, init, bias);
  }
}

void MultiplyImpl(const float* packed, size_t K, size_t N, const float* a, size_t M, size_t lda, float* c, size_t ldc,
                  const float* bias, size_t p_lo, size_t p_hi) {
  const size_t nr = PanelWidthImpl(), panels = (N + nr - 1) / nr;
  const KSlices ks(K);
  // Rows of A in blocks of kMC; for each, every K slice, and for each slice every panel: the block's C stays in L2
  // across the K slices, A's rows x slice in L2 across the panels, the panel's KC x NR slice in L1 across rows.
  for (size_t m0 = 0; m0 < M; m0 += kMC) {
    const size_t m1 = std::min(M, m0 + kMC);
    for (size_t kb = 0; kb < ks.count; ++kb) {
      const size_t k0 = ks.begin(kb), kc = ks.depth(kb, K);
      const int init = kb > 0 ? 2 : (bias ? 1 : 0);
      for (size_t p = p_lo; p < p_hi; ++p) {
        const float* bp = packed + k0 * panels * nr + p * kc * nr;
        const size_t n0 = p * nr, cols = std::min(nr, N - n0);
        const float* pb = bias ? bias + n0 : nullptr;
        for (size_t i = m0; i < m1; i += kMR) {
          const size_t rows = std::min(kMR, m1 - i);
          MicroRows<kMR>(rows, a + i * lda + k0, lda, bp, kc, c + i * ldc + n0, ldc, cols, init, pb);
        }
      }
    }
  }
}

const char* TargetImpl() { return hwy::TargetName(HWY_TARGET); }

}  // namespace HWY_NAMESPACE
}  // namespace onnx_core::gemm_packed
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "simd_targets.hpp"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <new>
#include <stdexcept>

namespace onnx_core::gemm_packed {

HWY_EXPORT(PanelWidthImpl);
HWY_EXPORT(PackImpl);
HWY_EXPORT(MultiplyImpl);
HWY_EXPORT(TargetImpl);

void PackedB::Free::operator()(float* p) const noexcept { std::free(p); }

PackedB pack(const float* b, size_t K, size_t N, bool transposed, float scale) {
  cap_simd_targets();
  PackedB p;
  p.k_ = K;
  p.n_ = N;
  p.nr_ = HWY_DYNAMIC_DISPATCH(PanelWidthImpl)();
  const size_t bytes = std::max<size_t>(p.panels() * K * p.nr_ * sizeof(float), 64);
  constexpr size_t kHuge = size_t{2} << 20;
  const size_t align = bytes >= 2 * kHuge ? kHuge : 64;
  const size_t alloc = (bytes + align - 1) / align * align;
  float* data = static_cast<float*>(std::aligned_alloc(align, alloc));
  if (!data) throw std::bad_alloc();
  p.store_.reset(data);
  if (align == kHuge) (void)::madvise(data, alloc, MADV_HUGEPAGE);  // advice: 4 KiB pages serve without it
  HWY_DYNAMIC_DISPATCH(PackImpl)(b, K, N, transposed, scale, data);  // writes every float, padding included
  p.data_ = data;
  return p;
}

void multiply(const PackedB& b, const float* a, size_t M, size_t lda, float* c, size_t ldc, const float* bias,
              size_t panel_lo, size_t panel_hi) {
  cap_simd_targets();
  if (b.panel_width() != HWY_DYNAMIC_DISPATCH(PanelWidthImpl)())
    throw std::logic_error("gemm_packed: B was packed for another SIMD target");
  panel_hi = std::min(panel_hi, b.panels());
  if (M == 0 || panel_lo >= panel_hi) return;
  HWY_DYNAMIC_DISPATCH(MultiplyImpl)(b.data(), b.rows(), b.cols(), a, M, lda, c, ldc, bias, panel_lo,
                                     panel_hi);
}

const char* target_name() {
  cap_simd_targets();
  return HWY_DYNAMIC_DISPATCH(TargetImpl)();
}

}  // namespace onnx_core::gemm_packed
#endif  // HWY_ONCE
