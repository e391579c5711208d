// onnx-core: the standard ONNX domain ("") on CPU, written against the public plugin SDK like any other pack.
// Each op family registers itself from its own source file.
#include "common.hpp"

OPH_PACK(pack) {
  onnx_core::register_elementwise(pack);
  onnx_core::register_unary(pack);
  onnx_core::register_linalg(pack);
  onnx_core::register_shape(pack);
}
