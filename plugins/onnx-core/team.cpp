// onnx-core: parallel loops on oneDNN's OpenMP team (see team.hpp). This file alone is compiled with -fopenmp.
#include "team.hpp"

#include "dnnl_util.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>

namespace onnx_core {

namespace team_detail {

void run(size_t n, size_t grain, ChunkFn fn, void* body) {
  grain = std::max<size_t>(grain, 1);
  const size_t max_chunks = n / grain;  // every chunk at least `grain` items
  const int threads = team_threads();
  if (threads <= 1 || max_chunks <= 1 || omp_in_parallel()) {
    fn(body, 0, n);
    return;
  }
  // One team at a time: a loop that starts while another thread's loop runs (the host's parallel execution mode
  // runs independent nodes on several threads) runs inline instead of starting a second team of `threads` on
  // the same cores, as the host's own pool does for a concurrent parallel_for.
  static std::atomic<int> active{0};
  if (active.fetch_add(1, std::memory_order_acq_rel) != 0) {
    active.fetch_sub(1, std::memory_order_acq_rel);
    fn(body, 0, n);
    return;
  }
  struct Leave {
    ~Leave() { active.fetch_sub(1, std::memory_order_acq_rel); }
  } leave;
  // A few chunks per thread (uneven chunk costs balance out), taken in order from a shared counter.
  size_t chunks = std::min(max_chunks, static_cast<size_t>(threads) * 4);
  const size_t chunk = (n + chunks - 1) / chunks;
  chunks = (n + chunk - 1) / chunk;
  const int team = static_cast<int>(std::min<size_t>(static_cast<size_t>(threads), chunks));
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mu;
#pragma omp parallel num_threads(team)
  {
    for (;;) {
      const size_t c = next.fetch_add(1, std::memory_order_relaxed);
      if (c >= chunks || failed.load(std::memory_order_relaxed)) break;
      try {
        fn(body, c * chunk, std::min(n, (c + 1) * chunk));
      } catch (...) {
        std::lock_guard lock(error_mu);
        if (!error) error = std::current_exception();
        failed.store(true, std::memory_order_relaxed);
      }
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace team_detail

}  // namespace onnx_core
