// onnx-core: the Highway targets the pack's vectorised loops (rnn_simd.cpp, simd_math.cpp, norm_simd.cpp) may
// dispatch to, capped once at oneDNN's effective ISA, so ONEDNN_MAX_CPU_ISA=AVX2 caps these loops as it caps
// oneDNN's kernels (one switch for testing every kernel at a lower ISA on a machine that has a higher one).
#pragma once

namespace onnx_core {

// Disables the Highway targets above oneDNN's effective ISA; cheap after the first call (thread-safe).
void cap_simd_targets();

}  // namespace onnx_core
