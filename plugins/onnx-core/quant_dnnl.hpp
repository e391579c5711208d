// onnx-core: what the int8 kernels on oneDNN (qconv.cpp, qmatmul.cpp) share: the weights as oneDNN takes them
// (int8, zero point 0) and the one exactness rule of oneDNN's int8 kernels.
//
// Exactness: oneDNN's int8 convolutions and matmuls multiply uint8 activations by int8 weights. With VNNI
// (AVX-VNNI, AVX512-VNNI) or AMX the products are summed straight into int32: exact. Without (AVX2, AVX-512
// before Cascade Lake) the kernels sum pairs of products in 16 bits first (vpmaddubsw), which saturates when
// x0*w0 + x1*w1 leaves [-32768, 32767] (activations near 255 with weights near +-127), so a result can be off by
// far more than a quantization step. ONNX defines exact int32 accumulation; these kernels keep it: on such an ISA
// weights with any |w| > 64 are split into two halves of |w| <= 64 (w = w1 + w2, so every pair sums to at most
// 255 * 128 = 32640) run as two primitives summed in int32, at twice the multiply-adds. Weights that already fit
// (7-bit, "reduce_range" quantization) run once.
#pragma once

#include "common.hpp"
#include "dnnl_util.hpp"

#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace onnx_core::quant {

// Whether oneDNN's int8 kernels at its effective ISA accumulate u8 x s8 products in int32 without a saturating
// 16-bit step (VNNI or AMX).
inline bool int8_exact_isa() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::avx2_vnni:
    case dnnl::cpu_isa::avx512_core_vnni:
    case dnnl::cpu_isa::avx512_core_bf16:
    case dnnl::cpu_isa::avx512_core_amx:
      return true;
    default:
      return false;
  }
}

// Constant weights as oneDNN's int8 primitives take them: int8 values with a zero point of 0, split in two halves
// where int8_exact_isa() is false and some |w| > 64 (see the top of this file).
struct Int8Weights {
  std::vector<int8_t> w1, w2;  // w2 empty: not split
  bool fits7 = true;           // every |w| <= 64: no 16-bit pair sum can saturate, whatever the activations
  bool split() const { return !w2.empty(); }
};

// The weights (n values of dtype int8 or uint8) with zero points `zp` (every value of a per-tensor or per-channel
// zero point; empty = 0), or nullopt when oneDNN cannot take them exactly: int8 weights need zero points of 0,
// uint8 weights zero points of 128 (w - 128 is then an int8 value).
// `may_split` false: never split (a kernel that does not pair products in 16 bits: oneDNN's depthwise int8
// convolution multiplies and adds each tap in 32 bits).
inline std::optional<Int8Weights> int8_weights(const void* data, oph_dtype dtype, size_t n,
                                               const std::vector<int32_t>& zp, bool may_split = true) {
  const bool is_signed = dtype == i8;
  if (!is_signed && !(dtype == u8)) return std::nullopt;
  const int32_t want = is_signed ? 0 : 128;
  for (int32_t z : zp)
    if (z != want) return std::nullopt;
  Int8Weights w;
  w.w1.resize(n);
  bool fits = true;
  for (size_t i = 0; i < n; ++i) {
    const int32_t v = is_signed ? static_cast<const int8_t*>(data)[i] : static_cast<const uint8_t*>(data)[i] - 128;
    w.w1[i] = static_cast<int8_t>(v);
    fits = fits && v >= -64 && v <= 64;
  }
  w.fits7 = fits;
  if (!fits && may_split && !int8_exact_isa()) {
    w.w2.resize(n);
    for (size_t i = 0; i < n; ++i) {
      const int8_t v = w.w1[i];
      const int8_t half = static_cast<int8_t>(v / 2);  // toward zero: |half| <= 64, |v - half| <= 64
      w.w1[i] = half;
      w.w2[i] = static_cast<int8_t>(v - half);
    }
  }
  return w;
}

// Constant int8 weights (at host, laid out as `from`) reordered into `want`, a primitive's weights layout; once,
// when the primitive is built.
inline dnnl::memory reorder_int8_weights(const int8_t* host, const dnnl::memory::desc& from,
                                         const dnnl::memory::desc& want) {
  auto& eng = cpu_engine();
  dnnl::stream s(eng);
  dnnl::memory src(from, eng, const_cast<int8_t*>(host)), dst(want, eng);
  dnnl::reorder(src, dst).execute(s, src, dst);
  s.wait();
  return dst;
}

// Runs `first` on src, wei and dst (int32) with the run-time source zero point `zp` and its scratchpad (user mode,
// `scratch_bytes` from `scratch`); then, when `second` is given, the same with the second weight half `wei2`
// (second's sum post-op adds it to dst). Waits for both.
inline void run_int8(const dnnl::primitive& first, const dnnl::memory& wei, const dnnl::primitive* second,
                     const dnnl::memory& wei2, const dnnl::memory& src, const dnnl::memory& dst, int32_t zp,
                     size_t scratch_bytes, dnnl::stream& stream, Scratch& scratch) {
  using dnnl::memory;
  auto& eng = cpu_engine();
  int32_t zp_value = zp;
  memory zpm(memory::desc({1}, memory::data_type::s32, memory::format_tag::x), eng, &zp_value);
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, src},
                                          {DNNL_ARG_WEIGHTS, wei},
                                          {DNNL_ARG_DST, dst},
                                          {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zpm}};
  if (scratch_bytes)
    args[DNNL_ARG_SCRATCHPAD] = memory(memory::desc({static_cast<memory::dim>(scratch_bytes)}, memory::data_type::u8,
                                                    memory::format_tag::x),
                                       eng, scratch.get(scratch_bytes));
  first.execute(stream, args);
  if (second) {
    args[DNNL_ARG_WEIGHTS] = wei2;
    second->execute(stream, args);
  }
  stream.wait();
}

// dst[i] = src[i] ^ 0x80 for n bytes: int8 values as uint8 (x + 128; with the zero point + 128, x - zp is
// unchanged), which is the source type oneDNN's int8 kernels are exact for. dst == src is allowed.
inline void int8_as_uint8(const void* src, void* dst, size_t n) {
  parallel_for(n, kGrain * 4, [=](size_t lo, size_t hi) {
    const uint8_t* s = static_cast<const uint8_t*>(src) + lo;
    uint8_t* d = static_cast<uint8_t*>(dst) + lo;
    for (size_t i = 0; i < hi - lo; ++i) d[i] = static_cast<uint8_t>(s[i] ^ 0x80u);
  });
}

// The integer values of a small constant tensor (zero points), or nullopt when it is not a constant of an 8/32-bit
// integer type; an absent input gives an empty vector.
inline std::optional<std::vector<int32_t>> constant_ints(const oph_value_info& v) {
  if (!v.present) return std::vector<int32_t>{};
  const oph_tensor* t = v.constant;
  if (!t) return std::nullopt;
  const size_t n = oph::numel({t->shape, static_cast<size_t>(t->ndim)});
  const char* base = static_cast<const char*>(t->data) + t->byte_offset;
  std::vector<int32_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    if (t->dtype == u8) out[i] = reinterpret_cast<const uint8_t*>(base)[i];
    else if (t->dtype == i8) out[i] = reinterpret_cast<const int8_t*>(base)[i];
    else if (t->dtype == i32) out[i] = reinterpret_cast<const int32_t*>(base)[i];
    else return std::nullopt;
  }
  return out;
}

// Load-time check of a constant scale input (a run-time one is checked when it arrives): float32, every value
// finite and > 0, and 1 or `per_channel` values (0: one value only). Fails naming the op, the input and the fix.
inline void check_const_scale(const oph_value_info& v, const std::string& op, const char* name, size_t per_channel) {
  const oph_tensor* t = v.present ? v.constant : nullptr;
  if (!t) return;
  if (!(t->dtype == f32)) fail(op + ": " + name + " must be float32, got " + oph::dtype_name(t->dtype));
  const size_t n = oph::numel({t->shape, static_cast<size_t>(t->ndim)});
  if (n != 1 && n != per_channel)
    fail(op + ": " + name + " has " + std::to_string(n) + " values; it must be a scalar" +
         (per_channel ? " or have one value per output channel (" + std::to_string(per_channel) + ")" : std::string()));
  const float* f = reinterpret_cast<const float*>(static_cast<const char*>(t->data) + t->byte_offset);
  for (size_t i = 0; i < n; ++i)
    if (!(f[i] > 0) || !std::isfinite(f[i]))
      fail(op + ": " + name + "[" + std::to_string(i) + "] is " + std::to_string(f[i]) +
           "; a quantization scale must be a finite positive number (re-export or re-quantize the model)");
}

// Load-time check of a constant zero point: of the quantized value's dtype `want` (the ONNX type constraint
// ties them), 1 or `per_channel` values.
inline void check_const_zero_point(const oph_value_info& v, oph_dtype want, const std::string& op, const char* name,
                                   size_t per_channel) {
  if (!v.present) return;
  if (!(v.dtype == want))
    fail(op + ": " + name + " is " + oph::dtype_name(v.dtype) + " but the value it belongs to is " +
         oph::dtype_name(want) + "; they must have the same type");
  const oph_tensor* t = v.constant;
  if (!t) return;
  const size_t n = oph::numel({t->shape, static_cast<size_t>(t->ndim)});
  if (n != 1 && n != per_channel)
    fail(op + ": " + name + " has " + std::to_string(n) + " values; it must be a scalar" +
         (per_channel ? " or have one value per output channel (" + std::to_string(per_channel) + ")" : std::string()));
}

}  // namespace onnx_core::quant
