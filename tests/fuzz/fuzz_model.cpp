// libFuzzer: ONNX bytes -> a prepared session (no run). Everything the host does before running is exercised:
// protobuf parse, structural validation, initializer decoding, op resolution, every pack's infer(), the memory
// plan and create_kernel. Any outcome other than success or an ophost::Error is a finding.
//   OPHOST_FUZZ_PLUGIN_DIR=<build>/lib/ophost/plugins ophost_fuzz_model corpus/ seeds/
#include <ophost/runtime.hpp>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <span>

namespace {
// Never destroyed: at exit the packs' own static objects (the SDK C++ layer keeps each pack's plugin info in a
// function-local static) are destroyed before a static Runtime would be, and release() would read freed
// memory (found by this target on its first run; reported against the SDK). Reachable, so not a leak.
ophost::Runtime* g_runtime = nullptr;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("OPHOST_LOG_LEVEL", "off", 1);
  const char* dir = std::getenv("OPHOST_FUZZ_PLUGIN_DIR");
  if (!dir || !*dir) {
    std::fprintf(stderr, "ophost_fuzz_model: set OPHOST_FUZZ_PLUGIN_DIR to a plugin root (<build>/lib/ophost/plugins)\n");
    std::abort();
  }
  ophost::RuntimeOptions o;
  o.use_env_plugin_path = false;
  o.use_default_plugin_dir = false;
  o.plugin_paths = {dir};
  o.intra_op_threads = 1;
  g_runtime = new ophost::Runtime(o);
  if (g_runtime->plugins().empty()) {
    std::fprintf(stderr, "ophost_fuzz_model: no plugins found in %s\n", dir);
    std::abort();
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ophost::SessionOptions so;
  // Small caps keep every legitimate outcome far below libFuzzer's memory limit.
  so.max_tensor_bytes = 64u << 20;
  so.mem_limit = 256u << 20;
  try {
    auto session = g_runtime->load_from_bytes(
        std::span<const std::byte>(reinterpret_cast<const std::byte*>(data), size), so, "fuzz.onnx");
  } catch (const ophost::Error&) {
    // a clean rejection
  }
  return 0;
}
