// onnx-core: helpers shared by the op families (dtype dispatch, 16-bit floats, shape utilities, broadcasting loops).
// Internal to the pack; built only against the public SDK.
#pragma once

#include <ophost/ophost_plugin.hpp>

#include "team.hpp"
#include "simd_math.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace onnx_core {

namespace oph = ophost::sdk;
using oph::dtypes::bf16;
using oph::dtypes::boolean;
using oph::dtypes::f16;
using oph::dtypes::f32;
using oph::dtypes::f64;
using oph::dtypes::i16;
using oph::dtypes::i32;
using oph::dtypes::i64;
using oph::dtypes::i8;
using oph::dtypes::u16;
using oph::dtypes::u32;
using oph::dtypes::u64;
using oph::dtypes::u8;

// Elements per parallel chunk for elementwise loops.
constexpr size_t kGrain = 16384;

// The standard ONNX domain.
inline constexpr const char* kDomain = "";

// Type sets.
inline const std::vector<oph_dtype> kFloat = {f32, f64};
inline const std::vector<oph_dtype> kNumeric = {f32, f64, i32, i64};
// Every real numeric type (arithmetic ops from opset 14, Clip 12+, Pow 15's exponent).
inline const std::vector<oph_dtype> kNumericAll = {f32, f64, i8, i16, i32, i64, u8, u16, u32, u64};
// Every fixed-size dtype: data-movement ops (Identity, Reshape, Transpose, ...) are byte copies.
inline const std::vector<oph_dtype> kAll = {f16, bf16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, boolean};

inline void add_types(oph::OpBuilder& b, const char* type_var, const std::vector<oph_dtype>& ds) {
  for (oph_dtype d : ds) b.types(type_var, {d});
}

[[noreturn]] inline void fail(const std::string& msg, int32_t code = OPH_CODE_INVALID_ARGUMENT) {
  throw oph::Error(code, msg);
}

inline std::string shape_str(std::span<const int64_t> s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    r += (i ? "," : "");
    r += s[i] < 0 ? std::string("?") : std::to_string(s[i]);
  }
  return r + "]";
}

inline bool all_known(std::span<const int64_t> s) {
  for (int64_t d : s)
    if (d < 0) return false;
  return true;
}

// Product of dims; OPH_DIM_UNKNOWN when any is unknown.
inline int64_t product_or_unknown(std::span<const int64_t> s) {
  int64_t p = 1;
  for (int64_t d : s) {
    if (d < 0) return OPH_DIM_UNKNOWN;
    p *= d;
  }
  return p;
}

inline int64_t product(std::span<const int64_t> s) {
  int64_t p = 1;
  for (int64_t d : s) p *= d;
  return p;
}

// A negative axis in an opset whose spec allows only [0, rank): accepted, because ONNX Runtime accepts negative
// axes in every opset and exporters (PaddlePaddle at opset 9, old tf2onnx) rely on it; logged at debug level.
inline void accept_negative_axis_leniently(int64_t axis, const std::string& op, const char* what) {
  oph::log(OPH_LOG_DEBUG, op + ": negative " + what + " " + std::to_string(axis) +
                              " is outside this opset's spec; accepted as ONNX Runtime does (counted from the end)");
}

// Normalises an axis in [-rank, rank). `allow_negative` false (opsets whose spec says [0, rank)) still accepts a
// negative axis, with a debug log line (accept_negative_axis_leniently).
inline int64_t normalize_axis(int64_t axis, int64_t rank, bool allow_negative, const std::string& op,
                              const char* what = "axis") {
  if (axis < 0 && !allow_negative) accept_negative_axis_leniently(axis, op, what);
  if (axis < -rank || axis >= rank)
    fail(op + ": " + what + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

inline size_t elem_size(oph_dtype d) { return (static_cast<size_t>(d.bits) * d.lanes + 7) / 8; }

// ---------------------------------------------------------------------------------------------------------
// 16-bit floats
// ---------------------------------------------------------------------------------------------------------

// IEEE binary16 bits -> float (exact).
inline float half_to_float(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, b;
  if (exp == 0) {
    if (man == 0) b = sign;
    else {
      int e = -1;
      do {
        ++e;
        man <<= 1;
      } while ((man & 0x400) == 0);
      b = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (man & 0x3ff) << 13;
    }
  } else if (exp == 31) b = sign | 0x7f800000u | man << 13;
  else b = sign | (exp + 127 - 15) << 23 | man << 13;
  return std::bit_cast<float>(b);
}
// float -> IEEE binary16 bits, rounding to nearest even (NaN stays NaN, overflow gives inf).
inline uint16_t float_to_half(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (absx < 0x38800000u) {                                             // subnormal or zero
    float af = std::bit_cast<float>(absx);
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(af * 16777216.0f)));
  }
  uint32_t mant = absx + 0xfffu + ((absx >> 13) & 1u);  // round to nearest even
  return static_cast<uint16_t>(sign | ((mant - 0x38000000u) >> 13));
}
// bfloat16 bits -> float (exact).
inline float bf16_to_float(uint16_t h) {
  uint32_t b = static_cast<uint32_t>(h) << 16;
  return std::bit_cast<float>(b);
}
// float -> bfloat16 bits, rounding to nearest even (NaN stays a quiet NaN).
inline uint16_t float_to_bf16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

// Storage type of a float16 element (the kernels' T for f16); arithmetic goes through float.
struct Half {
  uint16_t bits;
  operator float() const { return half_to_float(bits); }
  static Half of(float f) { return Half{float_to_half(f)}; }
};
// Storage type of a bfloat16 element (the kernels' T for bf16); convert with bf16_to_float / float_to_bf16.
struct BF16 {
  uint16_t bits;
};

// ---------------------------------------------------------------------------------------------------------
// Typed dispatch: each calls f(std::type_identity<T>{}) for the dtype's C++ type
// ---------------------------------------------------------------------------------------------------------

// The dtype whose elements a kernel sees as T: oph::dtype_v<T>, plus Half for float16 and BF16 for bfloat16.
template <class T>
constexpr oph_dtype storage_dtype() {
  if constexpr (std::is_same_v<T, Half>) return f16;
  else if constexpr (std::is_same_v<T, BF16>) return bf16;
  else return oph::dtype_v<T>;
}
// The error of every dispatch below for a dtype outside its set.
[[noreturn]] inline void fail_dtype(oph_dtype d, const std::string& op) {
  fail(op + ": dtype " + oph::dtype_name(d) + " is not supported by onnx-core", OPH_CODE_UNIMPLEMENTED);
}
// Calls f(std::type_identity<T>{}) for the T among Ts... whose storage_dtype is d; false (calling nothing) if none is.
template <class... Ts, class F>
bool try_dispatch(oph_dtype d, F&& f) {
  return ((d == storage_dtype<Ts>() ? (f(std::type_identity<Ts>{}), true) : false) || ...);
}
// try_dispatch, failing with fail_dtype for a dtype outside Ts...
template <class... Ts, class F>
void dispatch(oph_dtype d, const std::string& op, F&& f) {
  if (!try_dispatch<Ts...>(d, f)) fail_dtype(d, op);
}

// The dtypes of kFloat.
template <class F>
void dispatch_float(oph_dtype d, const std::string& op, F&& f) {
  dispatch<float, double>(d, op, f);
}
// The dtypes of kNumeric.
template <class F>
void dispatch_numeric(oph_dtype d, const std::string& op, F&& f) {
  dispatch<float, double, int32_t, int64_t>(d, op, f);
}
// The dtypes of kNumericAll plus the storage types Extra... (Half, BF16, bool); false for any other dtype.
template <class... Extra, class F>
bool try_dispatch_numeric_all(oph_dtype d, F&& f) {
  return try_dispatch<float, double, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t,
                      Extra...>(d, f);
}
// try_dispatch_numeric_all<Extra...>, failing with fail_dtype for any other dtype.
template <class... Extra, class F>
void dispatch_numeric_all(oph_dtype d, const std::string& op, F&& f) {
  if (!try_dispatch_numeric_all<Extra...>(d, f)) fail_dtype(d, op);
}
// The dtypes of kAll (float16 as Half, bfloat16 as BF16).
template <class F>
void dispatch_all(oph_dtype d, const std::string& op, F&& f) {
  dispatch_numeric_all<Half, BF16, bool>(d, op, f);
}

// ONNX TensorProto.DataType code (Cast `to`, a `dtype` attribute) -> dtype; fails
// "<op>: <what> <code> is not supported by onnx-core" unless the dtype is in `allowed`.
inline oph_dtype dtype_from_onnx(int64_t code, const std::vector<oph_dtype>& allowed, const std::string& op,
                                 const char* what) {
  static constexpr std::pair<int64_t, oph_dtype> kCodes[] = {
      {1, f32}, {2, u8}, {3, i8}, {4, u16}, {5, i16}, {6, i32}, {7, i64},
      {9, boolean}, {10, f16}, {11, f64}, {12, u32}, {13, u64}, {16, bf16}};
  for (const auto& [c, d] : kCodes)
    if (c == code && std::find(allowed.begin(), allowed.end(), d) != allowed.end()) return d;
  fail(op + ": " + what + " " + std::to_string(code) + " is not supported by onnx-core", OPH_CODE_UNIMPLEMENTED);
}

// Inputs must be compact row-major (strides NULL or equal to the compact strides).
inline void check_compact(const oph::TensorRef& t, const std::string& op) {
  const oph_tensor* r = t.raw();
  if (!r || !r->strides) return;
  int64_t expect = 1;
  for (int32_t k = r->ndim - 1; k >= 0; --k) {
    if (r->shape[k] != 1 && r->strides[k] != expect) fail(op + ": strided tensors are not supported", OPH_CODE_UNIMPLEMENTED);
    expect *= r->shape[k];
  }
}

inline oph::TensorRef input(const oph::KernelContext& ctx, size_t i, const std::string& op) {
  oph::TensorRef r = ctx.input(i);
  if (!r.present()) fail(op + ": input " + std::to_string(i) + " is missing");
  check_compact(r, op);
  return r;
}

// Output i with the shape computed from the actual inputs: allocated through the host when the plan left it
// without memory (shape unknown at plan time), else checked against the planned shape. Absent (output not
// requested) when !present().
inline oph::TensorRef ensure_output(const oph::KernelContext& ctx, size_t i, std::span<const int64_t> shape,
                                    const std::string& op) {
  oph::TensorRef r = ctx.output(i);
  if (!r.present()) return r;
  if (r.raw()->data == nullptr) {
    if (shape.size() > OPH_MAX_NDIM) fail(op + ": output rank above OPH_MAX_NDIM", OPH_CODE_OUT_OF_RANGE);
    return ctx.allocate_output(i, shape);
  }
  auto planned = r.shape();
  if (planned.size() != shape.size() || !std::equal(planned.begin(), planned.end(), shape.begin()))
    fail(op + ": output " + std::to_string(i) + " was planned as " + shape_str(planned) + " but the inputs give " +
             shape_str(shape),
         OPH_CODE_INTERNAL);
  return r;
}

// The values of a constant float32 input as kernel creation sees it (oph_value_info::constant; valid during that
// call only), or null when the input is absent, not constant or not float32.
inline const float* constant_f32(const oph_value_info& v) {
  const oph_tensor* t = v.present ? v.constant : nullptr;
  if (!t || !(t->dtype == f32)) return nullptr;
  return reinterpret_cast<const float*>(static_cast<const char*>(t->data) + t->byte_offset);
}

// Integer values of a host-memory int64 (or int32) tensor: shapes, axes.
inline std::vector<int64_t> read_ints(const oph_tensor* t, const std::string& op, const char* what) {
  if (!t) fail(op + ": " + std::string(what) + " is missing");
  size_t n = oph::numel({t->shape, static_cast<size_t>(t->ndim)});
  const char* base = static_cast<const char*>(t->data) + t->byte_offset;
  std::vector<int64_t> v(n);
  if (n == 0) return v;  // (an empty tensor may have a NULL data pointer)
  if (t->dtype == i64) std::memcpy(v.data(), base, n * sizeof(int64_t));
  else if (t->dtype == i32)
    for (size_t k = 0; k < n; ++k) v[k] = reinterpret_cast<const int32_t*>(base)[k];
  else
    fail(op + ": " + std::string(what) + " must be int64, got " + oph::dtype_name(t->dtype));
  return v;
}

// Copies src to dst unless they are the same buffer (ops that may run in place).
inline void copy_bytes(void* dst, const void* src, size_t bytes) {
  if (dst == src || bytes == 0) return;
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  constexpr size_t kChunk = 1 << 20;
  parallel_for((bytes + kChunk - 1) / kChunk, 1, [=](size_t b, size_t e) {
    size_t lo = b * kChunk, hi = std::min(bytes, e * kChunk);
    std::memcpy(d + lo, s + lo, hi - lo);
  });
}

// Shape-like inputs (Slice starts/ends/axes/steps, Expand shape, Tile repeats, Pad pads, Split split, TopK K,
// OneHot depth, Range scalars, ConstantOfShape shape) are delivered in host memory; when they are constants,
// infer() computes the output shape, otherwise the output is allocated in compute. const_ints: the values of
// input i when it is a constant at infer time, else nullopt.
inline std::optional<std::vector<int64_t>> const_ints(const oph::InferContext& c, size_t i, const std::string& op,
                                                      const char* what) {
  const oph_tensor* t = c.input_constant(i);
  if (!t) return std::nullopt;
  return read_ints(t, op, what);
}

// Row-major element strides of a compact tensor of `shape`.
inline std::vector<int64_t> compact_strides(std::span<const int64_t> shape) {
  std::vector<int64_t> st(shape.size(), 1);
  for (size_t k = shape.size(); k-- > 1;) st[k - 1] = st[k] * shape[k];
  return st;
}

// dst (contiguous, `shape`) [i] = src[base + sum(idx_k * strides_k)], elements of `es` bytes: Slice, Transpose,
// Expand and the depth/space rearrangements. Dimensions of size 1 are dropped and neighbours that are contiguous
// in the source too (strides_k == strides_k+1 * shape_k+1) merged first, so a channel slice of NCHW or a
// Transpose that keeps the trailing dims together copies whole rows (memcpy) instead of single elements.
inline void strided_copy(void* dst, const void* src, size_t es, std::span<const int64_t> shape,
                         std::span<const int64_t> strides, int64_t base) {
  const size_t n = oph::numel(shape);
  if (n == 0) return;
  std::array<int64_t, OPH_MAX_NDIM> sh{}, st{};
  size_t r = 0;
  for (size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] == 1) continue;
    if (r > 0 && st[r - 1] == strides[k] * shape[k]) {  // merge with the previous (outer) dimension
      sh[r - 1] *= shape[k];
      st[r - 1] = strides[k];
      continue;
    }
    sh[r] = shape[k];
    st[r] = strides[k];
    ++r;
  }
  if (r == 0) {  // one element
    std::memcpy(dst, static_cast<const char*>(src) + base * static_cast<int64_t>(es), es);
    return;
  }
  const size_t inner = static_cast<size_t>(sh[r - 1]);
  const int64_t is = st[r - 1];
  const size_t rows = n / inner;
  // A batch of 2-D transposes of 4-byte elements: the output's second-innermost dimension is the source's
  // contiguous one (NCHW <-> NHWC: out [N, HW, C] reading src [N, C, HW]). Element by element along the output
  // rows each read was a cache line of its own; here 16 x 64 tiles, each transposed in 4 x 4 vector blocks
  // (simd_math::transpose32). [1, 96, 56, 56] -> [1, 56, 56, 96]: 220-235 -> 51-57 us, and back 180-207 -> 45
  // (1 thread, AVX-512); ConvNeXt-T (36 such permutes per run) 62.75 -> 59.84 ms (ab_builds, ORT 61.64).
  if (es == 4 && r >= 2 && is > 0 && st[r - 2] == 1 && sh[r - 2] >= 4 && inner >= 4) {
    const size_t M = static_cast<size_t>(sh[r - 2]), K = inner, tiles_m = (M + 15) / 16;
    const size_t outer = rows / M;  // the product of the dimensions before the last two
    const uint32_t* S = static_cast<const uint32_t*>(src);
    uint32_t* D = static_cast<uint32_t*>(dst);
    parallel_for(outer * tiles_m, std::max<size_t>(1, kGrain / (16 * K)), [&](size_t lo, size_t hi) {
      for (size_t t = lo; t < hi; ++t) {
        const size_t o = t / tiles_m, m0 = (t % tiles_m) * 16, m1 = std::min(M, m0 + 16);
        int64_t off = base;  // the source offset of outer index o
        for (size_t k = r - 2, rem = o; k-- > 0;) {
          off += static_cast<int64_t>(rem % static_cast<size_t>(sh[k])) * st[k];
          rem /= static_cast<size_t>(sh[k]);
        }
        for (size_t k0 = 0; k0 < K; k0 += 64)
          simd_math::transpose32(S + off + static_cast<int64_t>(m0) + static_cast<int64_t>(k0) * is,
                                 static_cast<size_t>(is), D + o * M * K + m0 * K + k0, K, std::min<size_t>(64, K - k0),
                                 m1 - m0);
      }
    });
    return;
  }
  auto run = [&]<class T>(std::type_identity<T>) {
    const T* S = static_cast<const T*>(src);
    T* D = static_cast<T*>(dst);
    parallel_for(rows, std::max<size_t>(1, kGrain / inner), [&](size_t lo, size_t hi) {
      std::array<int64_t, OPH_MAX_NDIM> idx{};
      size_t rem = lo;
      int64_t off = base;
      for (size_t k = r - 1; k-- > 0;) {
        idx[k] = static_cast<int64_t>(rem % static_cast<size_t>(sh[k]));
        rem /= static_cast<size_t>(sh[k]);
        off += idx[k] * st[k];
      }
      for (size_t row = lo; row < hi; ++row) {
        const T* s = S + off;
        T* d = D + row * inner;
        if (is == 1) std::memcpy(d, s, inner * sizeof(T));
        else
          for (size_t j = 0; j < inner; ++j) d[j] = s[static_cast<int64_t>(j) * is];
        for (size_t k = r - 1; k-- > 0;) {  // next row: odometer over the outer dimensions
          off += st[k];
          if (++idx[k] < sh[k]) break;
          off -= st[k] * sh[k];
          idx[k] = 0;
        }
      }
    });
  };
  switch (es) {
    case 1: run(std::type_identity<uint8_t>{}); break;
    case 2: run(std::type_identity<uint16_t>{}); break;
    case 4: run(std::type_identity<uint32_t>{}); break;
    case 8: run(std::type_identity<uint64_t>{}); break;
    default: fail("unsupported element size " + std::to_string(es), OPH_CODE_UNIMPLEMENTED);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Elementwise loops
// ---------------------------------------------------------------------------------------------------------

template <class TI, class TO, class Op>
void unary_apply(const TI* x, TO* y, size_t n, Op op) {
  parallel_for(n, kGrain, [=](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) y[i] = op(x[i]);
  });
}

// y = fn(x) for a vectorised float32 loop (simd_math.hpp), called on chunks of the tensor.
inline void unary_apply_f32(const oph::TensorRef& x, const oph::TensorRef& y,
                            void (*fn)(const float*, float*, size_t)) {
  const float* X = static_cast<const float*>(x.data());
  float* Y = static_cast<float*>(y.data());
  parallel_for(x.size(), kGrain, [=](size_t lo, size_t hi) { fn(X + lo, Y + lo, hi - lo); });
}

// out = op(a, b) with ONNX multidirectional broadcasting; `oshape` is broadcast_shapes(ashape, bshape).
template <class TA, class TB, class TO, class Op>
void binary_apply(const TA* a, std::span<const int64_t> ashape, const TB* b,
                  std::span<const int64_t> bshape, TO* out, std::span<const int64_t> oshape, Op op) {
  const size_t n = oph::numel(oshape);
  if (n == 0) return;
  const size_t na = oph::numel(ashape), nb = oph::numel(bshape);
  // Fast path 1: same number of elements with the same shape (after dropping leading 1s: equal numel and
  // both equal to the output numel means no dimension is broadcast).
  if (na == n && nb == n) {
    parallel_for(n, kGrain, [=](size_t lo, size_t hi) {
      for (size_t i = lo; i < hi; ++i) out[i] = op(a[i], b[i]);
    });
    return;
  }
  // Fast path 2: one side is a scalar.
  if (nb == 1 && na == n) {
    const TB bv = b[0];
    parallel_for(n, kGrain, [=](size_t lo, size_t hi) {
      for (size_t i = lo; i < hi; ++i) out[i] = op(a[i], bv);
    });
    return;
  }
  if (na == 1 && nb == n) {
    const TA av = a[0];
    parallel_for(n, kGrain, [=](size_t lo, size_t hi) {
      for (size_t i = lo; i < hi; ++i) out[i] = op(av, b[i]);
    });
    return;
  }
  // General path: coalesce dims by (a broadcast?, b broadcast?) pattern, then loop over rows of the
  // innermost coalesced dim with strides 0 or 1.
  const size_t r = oshape.size();
  struct Dim {
    int64_t size;
    bool fa, fb;     // true: the input walks this dim; false: broadcast (stride 0)
    int64_t sa, sb;  // strides in elements
  };
  Dim dims[OPH_MAX_NDIM];  // inline: the general path does not allocate either
  size_t ndims = 0;
  for (size_t k = 0; k < r; ++k) {
    if (oshape[k] == 1) continue;
    int64_t da = k + ashape.size() >= r ? ashape[k + ashape.size() - r] : 1;
    int64_t db = k + bshape.size() >= r ? bshape[k + bshape.size() - r] : 1;
    bool fa = da != 1, fb = db != 1;
    if (ndims && dims[ndims - 1].fa == fa && dims[ndims - 1].fb == fb) dims[ndims - 1].size *= oshape[k];
    else dims[ndims++] = {oshape[k], fa, fb, 0, 0};
  }
  int64_t acc_a = 1, acc_b = 1;
  for (size_t k = ndims; k-- > 0;) {
    dims[k].sa = dims[k].fa ? acc_a : 0;
    dims[k].sb = dims[k].fb ? acc_b : 0;
    if (dims[k].fa) acc_a *= dims[k].size;
    if (dims[k].fb) acc_b *= dims[k].size;
  }
  const Dim inner = dims[ndims - 1];
  const size_t inner_n = static_cast<size_t>(inner.size);
  const size_t rows = n / inner_n;
  const size_t nd = ndims - 1;  // outer dims
  const Dim* dp = dims;
  parallel_for(rows, std::max<size_t>(1, kGrain / inner_n), [=](size_t lo, size_t hi) {
    for (size_t row = lo; row < hi; ++row) {
      int64_t oa = 0, ob = 0;
      size_t rem = row;
      for (size_t k = nd; k-- > 0;) {
        size_t idx = rem % static_cast<size_t>(dp[k].size);
        rem /= static_cast<size_t>(dp[k].size);
        oa += static_cast<int64_t>(idx) * dp[k].sa;
        ob += static_cast<int64_t>(idx) * dp[k].sb;
      }
      const TA* pa = a + oa;
      const TB* pb = b + ob;
      TO* po = out + row * inner_n;
      if (inner.fa && inner.fb) {
        for (size_t i = 0; i < inner_n; ++i) po[i] = op(pa[i], pb[i]);
      } else if (inner.fa) {
        const TB bv = pb[0];
        for (size_t i = 0; i < inner_n; ++i) po[i] = op(pa[i], bv);
      } else {
        const TA av = pa[0];
        for (size_t i = 0; i < inner_n; ++i) po[i] = op(av, pb[i]);
      }
    }
  });
}

// Registration functions, one per source file.
// Each op family's source file registers itself with one line at namespace scope:
//   static const onnx_core::Family kFamily("unary", &register_unary);
// pack.cpp calls every registered family, in name order (so the op table's order does not depend on link order).
using RegisterFn = void (*)(oph::Pack& pack);
struct Family {
  Family(const char* name, RegisterFn fn);
};
void register_all_families(oph::Pack& pack);

}  // namespace onnx_core
