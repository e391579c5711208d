// onnx-core: the Highway targets the pack's run-time dispatched kernels (rnn_simd.cpp, norm_simd.cpp) may use,
// capped at oneDNN's effective ISA, so ONEDNN_MAX_CPU_ISA=AVX2 caps these loops at AVX2 as it caps oneDNN's
// kernels. Include only where HWY_ONCE is true (the dispatchers), and call before the first dispatch.
#pragma once

#include <hwy/highway.h>
#include <oneapi/dnnl/dnnl.h>

namespace onnx_core {

// Disables, once per process, the Highway targets above oneDNN's effective ISA: ISA bits of dnnl_cpu_isa_t:
// 0x4 AVX2, 0x20 AVX-512 (avx512_core and up).
inline void cap_hwy_targets() {
  static const bool done = [] {
    const unsigned isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
    int64_t off = 0;
    if (!(isa & 0x20u)) off |= HWY_AVX3 | HWY_AVX3_DL;
    if (!(isa & 0x4u)) off |= HWY_AVX2;
    if (off) hwy::DisableTargets(off);
    return true;
  }();
  (void)done;
}

}  // namespace onnx_core
