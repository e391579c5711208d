// Memory statistics of a session's pool (ONNX Runtime's names): Session::memory_stats().
#pragma once

#include <cstdint>

namespace ophost {

struct MemoryStats {
  int64_t num_allocs = 0;             // allocations served (arena reservations and pool blocks)
  int64_t num_reserves = 0;           // arenas reserved for static plans
  int64_t bytes_in_use = 0;           // bytes handed out now
  int64_t max_bytes_in_use = 0;       // high-water mark of bytes_in_use
  int64_t total_allocated_bytes = 0;  // bytes obtained from the device (including cached blocks)
  int64_t max_alloc_size = 0;         // largest single allocation
  int64_t bytes_limit = 0;            // 0 = unlimited
  int64_t allocs_this_run = 0;        // allocations the last run asked of the system or device (arenas, pool
                                      // blocks not in the cache, tensors handed to the caller)
};

}  // namespace ophost
