// Test pack for pack isolation (tests/isolation, --isolate-packs): good ops, and ops that take their process
// down in each of the ways the host must survive when the pack is isolated.
//
//   crash::scale     y = alpha * x + b   (attribute alpha, b usually a constant input)     correct
//   crash::positive  y = the elements of x that are > 0, shape [k] known only while running  correct
//   crash::fail      returns an error status                                               a clean kernel error
//   crash::segv      writes through a null pointer                                         SIGSEGV
//   crash::abort     std::abort()                                                          SIGABRT
//   crash::heap      writes 8 MiB past a 64-byte malloc'd block, then allocates            heap corruption
//   crash::exit42    std::exit(42)                                                         exit status 42
//   crash::hang      loops forever                                                         killed at --run-timeout
//   crash::segv_create  writes through a null pointer in create_kernel (at load)          SIGSEGV
//   crash::shrink    y = x, then truncates the worker's shared region (descriptor 4) to 0 bytes: the host must not
//                    fault reading y from its mapping (the region is sealed against shrinking)
#include <ophost/ophost_plugin.hpp>

#include <cstdlib>
#include <cstring>
#include <vector>

#include <unistd.h>

namespace oph = ophost::sdk;

namespace {

void scale(const oph::KernelContext& ctx) {
  oph::In<float> x = ctx.input<float>(0), b = ctx.input<float>(1);
  oph::Out<float> y = ctx.output<float>(0);
  const float alpha = ctx.attr<float>("alpha");
  for (size_t i = 0; i < x.size(); ++i) y[i] = alpha * x[i] + b[i % b.size()];
}

void positive(const oph::KernelContext& ctx) {
  oph::In<float> x = ctx.input<float>(0);
  std::vector<float> keep;
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i] > 0.0f) keep.push_back(x[i]);
  const int64_t n = static_cast<int64_t>(keep.size());
  oph::TensorRef y = ctx.allocate_output(0, std::span<const int64_t>(&n, 1));
  if (n) std::memcpy(y.data(), keep.data(), keep.size() * sizeof(float));
}

void fail(const oph::KernelContext&) {
  throw oph::Error(OPH_CODE_INVALID_ARGUMENT, "crash::fail always fails (a clean error)");
}

void segv(const oph::KernelContext&) {
  volatile int* p = nullptr;
  *p = 1;
}

void abort_now(const oph::KernelContext&) { std::abort(); }

// 8 MiB of 'A' over everything after a 64-byte block: the write leaves the heap (SIGSEGV), or it overwrites the
// top chunk's header and the next allocation from it finds "malloc(): corrupted top size" (SIGABRT). (A free()
// of the small block alone goes to the thread cache unchecked: the corruption would surface later, elsewhere.)
void heap(const oph::KernelContext& ctx) {
  auto* block = static_cast<char*>(std::malloc(64));
  volatile size_t past = size_t{8} << 20;  // volatile: the compiler does not warn about what the test is for
  std::memset(block, 0x41, 64 + past);
  asm volatile("" : : "r"(block) : "memory");  // the stores are observable: the compiler keeps them
  void* more = std::malloc(100 << 10);
  asm volatile("" : : "r"(more) : "memory");
  std::free(more);
  std::free(block);
  ctx.output<float>(0).data()[0] = 0.0f;
}

void exit42(const oph::KernelContext&) { std::exit(42); }

void shrink(const oph::KernelContext& ctx) {
  oph::In<float> x = ctx.input<float>(0);
  oph::Out<float> y = ctx.output<float>(0);
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i];
  [[maybe_unused]] int rc = ::ftruncate(4, 0);  // after the output is written: the host reads it next
}

void hang(const oph::KernelContext&) {
  for (;;) asm volatile("" ::: "memory");
}

struct SegvAtCreate {
  explicit SegvAtCreate(const oph::KernelInit&) {
    volatile int* p = nullptr;
    *p = 1;
  }
  void compute(oph::KernelContext&) {}
};

}  // namespace

OPH_PACK(pack) {
  pack.op("crash", "scale")
      .input("X", "T")
      .input("B", "T")
      .output("Y", "T")
      .types("T", {oph::dtypes::f32})
      .attr("alpha", 1.0f)
      .infer(oph::same_as_input(0))
      .compute(scale);
  pack.op("crash", "positive")
      .input("X", "T")
      .output("Y", "T")
      .types("T", {oph::dtypes::f32})
      .infer([](oph::InferContext& c) { c.set_output(0, c.input_dtype(0), {OPH_DIM_UNKNOWN}); })
      .compute(positive);
  for (auto [name, fn] : {std::pair{"fail", &fail}, std::pair{"segv", &segv}, std::pair{"abort", &abort_now},
                          std::pair{"heap", &heap}, std::pair{"exit42", &exit42}, std::pair{"hang", &hang},
                          std::pair{"shrink", &shrink}}) {
    pack.op("crash", name).input("X", "T").output("Y", "T").types("T", {oph::dtypes::f32}).infer(oph::same_as_input(0)).compute(fn);
  }
  pack.op("crash", "segv_create")
      .input("X", "T")
      .output("Y", "T")
      .types("T", {oph::dtypes::f32})
      .infer(oph::same_as_input(0))
      .kernel<SegvAtCreate>();
}
