// The intra-op pool behind the SDK's parallel_for: every index exactly once, nested and concurrent calls safe.
#include "core/thread_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace ophost {
namespace {

struct Counts {
  std::vector<std::atomic<int>> hits;
  std::atomic<int> calls{0};
  explicit Counts(size_t n) : hits(n) {}
};

void mark(void* user, size_t b, size_t e) {
  auto* c = static_cast<Counts*>(user);
  c->calls.fetch_add(1);
  for (size_t i = b; i < e; ++i) c->hits[i].fetch_add(1);
}

TEST(ThreadPool, EveryIndexExactlyOnce) {
  ThreadPool pool(4);
  EXPECT_EQ(pool.threads(), 4);
  for (size_t n : {1u, 7u, 1000u, 100003u}) {
    for (size_t grain : {1u, 64u, 5000u}) {
      Counts c(n);
      pool.parallel_for(n, grain, &mark, &c);
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(c.hits[i].load(), 1) << "n=" << n << " grain=" << grain << " i=" << i;
      if (n <= grain) EXPECT_EQ(c.calls.load(), 1) << "small work runs inline in one call";
    }
  }
}

TEST(ThreadPool, UsesWorkerThreads) {
  ThreadPool pool(3);
  std::mutex m;
  std::set<std::thread::id> ids;
  struct U {
    std::mutex* m;
    std::set<std::thread::id>* ids;
  } u{&m, &ids};
  pool.parallel_for(
      64, 1,
      [](void* p, size_t, size_t) {
        auto* u = static_cast<U*>(p);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        std::lock_guard lock(*u->m);
        u->ids->insert(std::this_thread::get_id());
      },
      &u);
  EXPECT_GE(ids.size(), 2u) << "a 3-thread pool should spread 64 sleeping chunks over more than one thread";
}

TEST(ThreadPool, NestedCallRunsInline) {
  ThreadPool pool(4);
  struct Outer {
    ThreadPool* pool;
    std::atomic<int> inner_total{0};
  } o{&pool};
  pool.parallel_for(
      8, 1,
      [](void* p, size_t b, size_t e) {
        auto* o = static_cast<Outer*>(p);
        for (size_t i = b; i < e; ++i) {
          Counts c(100);
          o->pool->parallel_for(100, 1, &mark, &c);
          EXPECT_EQ(c.calls.load(), 1) << "nested parallel_for must run inline";
          for (auto& h : c.hits) o->inner_total += h.load();
        }
      },
      &o);
  EXPECT_EQ(o.inner_total.load(), 800);
}

TEST(ThreadPool, ConcurrentCallersAllComplete) {
  ThreadPool pool(4);
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    callers.emplace_back([&] {
      for (int rep = 0; rep < 50; ++rep) {
        Counts c(4096);
        pool.parallel_for(4096, 128, &mark, &c);
        for (auto& h : c.hits)
          if (h.load() != 1) failures++;
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace ophost
