// onnx-core: cap_simd_targets (simd_targets.hpp).
#include "simd_targets.hpp"

#include <hwy/targets.h>
#include <oneapi/dnnl/dnnl.h>

#include <cstdint>

namespace onnx_core {

void cap_simd_targets() {
  // ISA bits of dnnl_cpu_isa_t: 0x4 AVX2, 0x20 AVX-512 (avx512_core and up).
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
