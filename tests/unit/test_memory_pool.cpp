// The memory pool's size-class cache and the host's scratch memory built on it (SDK scratch_alloc/scratch_free).
#include "core/thread_pool.hpp"
#include "memory/pool.hpp"

#include <ophost/services.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace ophost {
namespace {

TEST(MemoryPool, SizeClassesAreCachedAndReused) {
  MemoryPool pool(system_allocator());
  bool fresh = false;
  void* a = pool.allocate(1000, "a", &fresh);
  EXPECT_TRUE(fresh);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  EXPECT_EQ(pool.stats().bytes_in_use, 1024);  // rounded up to its power-of-two class
  pool.deallocate(a);
  EXPECT_EQ(pool.stats().bytes_in_use, 0);
  void* b = pool.allocate(900, "b", &fresh);  // same class: the cached block, nothing new from the device
  EXPECT_FALSE(fresh);
  EXPECT_EQ(b, a);
  EXPECT_EQ(pool.stats().total_allocated_bytes, 1024);
  EXPECT_EQ(pool.stats().num_allocs, 2);
  pool.deallocate(b);
}

TEST(MemoryPool, LimitIsAClearError) {
  MemoryPool pool(system_allocator(), 4096);
  void* a = pool.allocate(4096, "first");
  try {
    pool.allocate(100, "value 'y'");
    FAIL() << "expected an out-of-memory error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kResourceExhausted);
    EXPECT_NE(std::string(e.what()).find("value 'y' needs 256 bytes"), std::string::npos) << e.what();
  }
  pool.deallocate(a);
}

TEST(Scratch, ComesFromTheRunningSessionsPoolAndGoesBack) {
  const oph_host_services* s = host_services();
  const oph_device cpu{OPH_DL_CPU, 0};
  MemoryPool pool(system_allocator());
  {
    ScratchPoolScope scope(&pool);
    void* p = s->scratch_alloc(s->host, cpu, 5000);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    std::memset(p, 0xab, 5000);  // all of it is usable
    EXPECT_GT(pool.stats().bytes_in_use, 5000);
    s->scratch_free(s->host, cpu, p);
    EXPECT_EQ(pool.stats().bytes_in_use, 0);
    int64_t device_bytes = pool.stats().total_allocated_bytes;
    void* q = s->scratch_alloc(s->host, cpu, 4500);  // same size class (8 KiB with its header): the cache
    EXPECT_EQ(pool.stats().total_allocated_bytes, device_bytes);
    s->scratch_free(s->host, cpu, q);
  }
  // Outside a run: a process-wide pool; the session pool sees nothing.
  int64_t before = pool.stats().num_allocs;
  void* p = s->scratch_alloc(s->host, cpu, 100);
  ASSERT_NE(p, nullptr);
  s->scratch_free(s->host, cpu, p);
  EXPECT_EQ(pool.stats().num_allocs, before);
  // Host memory only.
  EXPECT_EQ(s->scratch_alloc(s->host, oph_device{OPH_DL_CUDA, 0}, 100), nullptr);
}

// Scratch taken inside a parallel_for body on the intra-op workers belongs to the caller's session pool, and a
// block freed on another thread than the one that took it still goes back to its pool.
TEST(Scratch, ParallelForWorkersUseTheCallersPool) {
  struct Ctx {
    const oph_host_services* s;
    std::vector<void*> blocks;
  } ctx{host_services(), std::vector<void*>(64, nullptr)};
  MemoryPool pool(system_allocator());
  ThreadPool tp(3);
  {
    ScratchPoolScope scope(&pool);
    tp.parallel_for(64, 1, [](void* user, size_t begin, size_t end) {
      auto* c = static_cast<Ctx*>(user);
      for (size_t i = begin; i < end; ++i) c->blocks[i] = c->s->scratch_alloc(c->s->host, {OPH_DL_CPU, 0}, 300);
    }, &ctx);
  }
  EXPECT_EQ(pool.stats().num_allocs, 64);
  for (void* b : ctx.blocks) ctx.s->scratch_free(ctx.s->host, {OPH_DL_CPU, 0}, b);
  EXPECT_EQ(pool.stats().bytes_in_use, 0);
}

}  // namespace
}  // namespace ophost
