#include "exec/memory_plan.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

namespace ophost {

namespace {
size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }
}  // namespace

MemoryPlan plan_memory(const std::vector<PlanBuffer>& buffers, size_t alignment) {
  MemoryPlan plan;
  const size_t n = buffers.size();
  plan.offsets.assign(n, 0);
  std::vector<size_t> size(n);
  int steps = 0;
  for (size_t i = 0; i < n; ++i) {
    size[i] = align_up(buffers[i].bytes, alignment);
    steps = std::max(steps, buffers[i].last + 1);
  }

  // Lower bound: the largest live total at any step.
  std::vector<size_t> live(static_cast<size_t>(steps) + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    if (!size[i]) continue;
    for (int s = buffers[i].first; s <= buffers[i].last; ++s) live[static_cast<size_t>(s)] += size[i];
  }
  plan.lower_bound = live.empty() ? 0 : *std::max_element(live.begin(), live.end());

  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (size[a] != size[b]) return size[a] > size[b];
    return buffers[a].first < buffers[b].first;
  });

  std::vector<size_t> placed;
  placed.reserve(n);
  std::vector<std::pair<size_t, size_t>> busy;  // [offset, end) of overlapping placed buffers
  for (size_t i : order) {
    if (!size[i]) continue;
    busy.clear();
    for (size_t j : placed) {
      bool overlap = buffers[j].first <= buffers[i].last && buffers[i].first <= buffers[j].last;
      if (overlap) busy.emplace_back(plan.offsets[j], plan.offsets[j] + size[j]);
    }
    std::sort(busy.begin(), busy.end());
    // Best fit: the smallest gap that holds the buffer; else after the last busy range.
    size_t best = std::numeric_limits<size_t>::max(), best_gap = std::numeric_limits<size_t>::max();
    size_t cursor = 0;
    for (const auto& [b, e] : busy) {
      if (b > cursor && b - cursor >= size[i] && b - cursor < best_gap) {
        best = cursor;
        best_gap = b - cursor;
      }
      cursor = std::max(cursor, e);
    }
    if (best == std::numeric_limits<size_t>::max()) best = cursor;
    plan.offsets[i] = best;
    plan.peak = std::max(plan.peak, best + size[i]);
    placed.push_back(i);
  }
  return plan;
}

}  // namespace ophost
