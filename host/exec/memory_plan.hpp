// Static memory planning: liveness over the execution order and best-fit offsets in one arena.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ophost {

struct PlanBuffer {
  size_t bytes = 0;  // 0: needs no space
  int first = 0;     // execution step that writes it
  int last = 0;      // last step that reads it (inclusive); >= first
};

struct MemoryPlan {
  std::vector<size_t> offsets;  // per buffer, multiple of `alignment`
  size_t peak = 0;              // arena size needed
  size_t lower_bound = 0;       // largest total of live (aligned) bytes at any step
};

// Assigns each buffer an offset so that buffers alive at the same step never overlap. Greedy by size (largest
// first), each placed at the best-fitting gap among already-placed buffers whose lifetimes overlap.
MemoryPlan plan_memory(const std::vector<PlanBuffer>& buffers, size_t alignment = 64);

}  // namespace ophost
