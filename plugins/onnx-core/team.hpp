// onnx-core: the pack's parallel loops run on oneDNN's OpenMP team, not on the host's intra-op pool.
//
// Why: oneDNN (Debian's build) threads with OpenMP, so a pack that also used the host's pool (ctx.parallel_for)
// had two pools of N threads on N cores. After every oneDNN primitive the OpenMP workers spin for a while; a
// host-pool loop that follows waits for a core, and the other way round. Measured on 2 cores (Zen 5, AVX-512,
// `tools/bench/ab_builds.sh --threads 2`): ConvNeXt-T 65.65 ms on two pools, 37.48 ms with every loop on the
// OpenMP team (one thread: 59.9); EfficientNet-B0 6.38 -> 4.87. The team has the host's thread count
// (team_threads() in dnnl_util.hpp: the host's config for this pack, else its intra-op pool's size, else the
// user's OMP_NUM_THREADS), so `--threads N` still means N threads (CTest onnx_core_threads).
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

namespace onnx_core {

namespace team_detail {
using ChunkFn = void (*)(void* body, size_t begin, size_t end);
// Runs fn(body, b, e) over [0, n) in chunks; parallel when n holds at least two chunks of `grain` items and
// the team has more than one thread, inline otherwise: inside a parallel region (never nested) and while another
// thread's loop holds the team (one team at a time). The first exception a chunk throws is rethrown here after
// every thread finished.
void run(size_t n, size_t grain, ChunkFn fn, void* body);
}  // namespace team_detail

// body(begin, end) over [0, n), chunks of at least `grain` items, on oneDNN's OpenMP team. `body` is used only
// during the call (it may capture locals by reference).
template <class F>
void parallel_for(size_t n, size_t grain, F&& body) {
  if (n == 0) return;
  using Body = std::remove_reference_t<F>;
  team_detail::run(n, grain, [](void* b, size_t lo, size_t hi) { (*static_cast<Body*>(b))(lo, hi); },
                   const_cast<void*>(static_cast<const void*>(&body)));
}

}  // namespace onnx_core
