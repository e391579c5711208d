// onnx-core: the standard ONNX domain ("") on CPU, written against the public plugin SDK like any other pack.
// Each op family registers itself from its own source file (see Family in common.hpp).
#include "common.hpp"

#include <map>
#include <string>

namespace onnx_core {

namespace {
std::map<std::string, RegisterFn>& families() {
  static std::map<std::string, RegisterFn> f;
  return f;
}
}  // namespace

Family::Family(const char* name, RegisterFn fn) { families()[name] = fn; }

void register_all_families(oph::Pack& pack) {
  for (const auto& [name, fn] : families()) fn(pack);
}

}  // namespace onnx_core

OPH_PACK(pack) { onnx_core::register_all_families(pack); }
