// onnx-core: oneDNN helpers shared by the kernels that run on it (Conv/ConvTranspose, MatMul/Gemm): the CPU
// engine and the size of oneDNN's OpenMP team.
#pragma once

#include "common.hpp"

#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string_view>
#include <thread>

namespace onnx_core {

inline dnnl::engine& cpu_engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

// A oneDNN implementation name (primitive_desc::impl_info_str) of reference code: "ref:any", "ref_int8:any",
// "gemm:ref" (rare), ... These run scalar loops 10-100x slower than the jit kernels.
inline bool is_reference_impl(std::string_view impl) {
  return impl.rfind("ref", 0) == 0 || impl.find(":ref") != std::string_view::npos;
}

// Appends `item` to a ", "-separated list unless the list holds it already (kernels report the distinct
// implementations they built, one per input shape).
inline void append_distinct(std::string& list, const std::string& item) {
  size_t pos = 0;
  while (pos <= list.size()) {
    const size_t end = std::min(list.find(", ", pos), list.size());
    if (list.compare(pos, end - pos, item) == 0) return;
    pos = end + 2;
  }
  list += (list.empty() ? "" : ", ") + item;
}

// The distinct names name(entry) gives the entries of `cache` (a map to shared pointers of objects with an `impl`
// string, oneDNN's impl_info_str or a host kernel's name); reference when any entry's impl is.
template <class Cache, class Name>
oph::Implementation implementation_of(const Cache& cache, Name name) {
  oph::Implementation out;
  for (const auto& [key, p] : cache) {
    append_distinct(out.name, name(*p));
    out.reference = out.reference || is_reference_impl(p->impl);
  }
  return out;
}

// What a kernel reports as its implementation: `prefix` and every distinct oneDNN implementation name
// (impl_info_str) of the primitives in `cache` (a map to shared pointers of objects with an `impl` string);
// reference when any of them is.
template <class Cache>
oph::Implementation dnnl_implementation(const Cache& cache, const std::string& prefix) {
  oph::Implementation out = implementation_of(cache, [](const auto& p) { return p.impl; });
  if (!out.name.empty()) out.name = prefix + out.name;
  return out;
}

// A growing, 64-byte aligned buffer (one per thread: thread_local in the kernels that stage data for oneDNN);
// get() keeps its bytes only until the next get() with a larger size.
struct Scratch {
  std::vector<char> buf;
  char* get(size_t bytes) {
    if (buf.size() < bytes + 64) buf.resize(bytes + 64);
    return reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(buf.data()) + 63) & ~uintptr_t(63));
  }
};

// Channel block of the blocked activation layouts (nChw16c / nChw8c) that oneDNN's jit kernels take on the ISA
// it runs at (after ONEDNN_MAX_CPU_ISA): 16 floats from AVX-512 on, else 8 (AVX2, AVX, SSE4.1).
inline int dnnl_channel_block() {
  static const int b = [] {
    switch (dnnl::get_effective_cpu_isa()) {
      case dnnl::cpu_isa::sse41:
      case dnnl::cpu_isa::avx:
      case dnnl::cpu_isa::avx2:
      case dnnl::cpu_isa::avx2_vnni:
        return 8;
      default:
        return 16;
    }
  }();
  return b;
}

// Channel-blocked activations ("NCHWc"): values the host's nchwc-layout pass marks as blocked (FusedConv's
// x_blocked/y_blocked/z_blocked, LayoutReorder) are stored as nChw16c or nChw8c in a buffer of the plain tensor's
// size. The block depends on C alone, so a producer and its consumers always agree: the ISA's block
// (dnnl_channel_block) when it divides C, else 8 (AVX2-width kernels, which AVX-512 machines run too), else 0
// (C not a multiple of 8: the value cannot be blocked).
inline int nchwc_block(int64_t channels) {
  const int b = dnnl_channel_block();
  if (channels > 0 && channels % b == 0) return b;
  if (channels > 0 && channels % 8 == 0) return 8;
  return 0;
}

inline dnnl::memory::format_tag nchwc_tag(int64_t channels) {
  return nchwc_block(channels) == 16 ? dnnl::memory::format_tag::nChw16c : dnnl::memory::format_tag::nChw8c;
}

// Threads the host's parallel_for actually uses: distinct threads that run chunks of a probe loop (a few
// hundred microseconds, once per process, at the first convolution's kernel creation, when nothing else runs).
inline int host_pool_threads() {
  static const int n = [] {
    const oph_host_services* s = oph::services();
    if (!s || !s->parallel_for) return 1;
    struct Probe {
      std::mutex mu;
      std::set<std::thread::id> ids;
      std::atomic<uint64_t> sink{0};
    } probe;
    s->parallel_for(
        s->host, 4096, 1,
        [](void* user, size_t b, size_t e) {
          auto* p = static_cast<Probe*>(user);
          uint64_t x = b;
          for (size_t i = b; i < e; ++i)
            for (int k = 0; k < 200; ++k) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
          p->sink += x;
          std::lock_guard lock(p->mu);
          p->ids.insert(std::this_thread::get_id());
        },
        &probe);
    return std::max<int>(1, static_cast<int>(probe.ids.size()));
  }();
  return n;
}

// Threads for oneDNN's OpenMP team, in this order: the host's config value for this pack
// (config_get(host, "onnx-core", "threads")); 0 = leave OpenMP alone when the user set OMP_NUM_THREADS;
// else the number of threads the host's intra-op pool runs parallel_for on (so `--threads 1` gives one
// oneDNN thread and oneDNN never runs more threads than the host offers).
inline int dnnl_threads() {
  static const int n = [] {
    const oph_host_services* s = oph::services();
    if (s && s->config_get) {
      const char* v = s->config_get(s->host, "onnx-core", "threads");
      if (v && *v) {
        int t = std::atoi(v);
        if (t > 0) return t;
      }
    }
    if (const char* env = std::getenv("OMP_NUM_THREADS"); env && *env) return 0;
    return host_pool_threads();
  }();
  return n;
}

// The OpenMP team's size for this pack's oneDNN primitives and its own loops (team.hpp): dnnl_threads(), else
// (the user set OMP_NUM_THREADS) OpenMP's own default, read once, before anything here changed it.
inline int team_threads() {
  static const int n = [] {
    const int d = dnnl_threads();
    return d > 0 ? d : std::max(1, omp_get_max_threads());
  }();
  return n;
}

// Sets oneDNN's OpenMP team size for the calling thread (see team_threads()). Always set, never left as it is:
// a small convolution runs on fewer threads (conv.cpp) and the next primitive must not inherit that.
inline void set_dnnl_threads() { omp_set_num_threads(team_threads()); }

}  // namespace onnx_core
