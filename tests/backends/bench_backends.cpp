// Copy and elementwise bandwidth of one device backend, through the C ABI (mini_host.hpp):
//   H2D, D2H, D2D copies of 256 MiB (pageable host memory: the ABI has no pinned allocation), timed with the
//   backend's events on one stream; myops::relu6_scale on 16M float32 (64 MiB in, 64 MiB out) compared with
//   a D2D copy of the same bytes (the memcpy bound of an elementwise op: read once, write once).
// Usage: ophost_backend_bench [cpu|cuda|hip] [--mib N]. Prints one line per measurement:
//   <backend> <what> <bytes moved> <ms> <GB/s>
// Exit 0 on success, 2 when the backend is inactive (the reason is printed), 1 on error.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mini_host.hpp"

namespace {

using minihost::Backend;

struct Timer {
  Backend& b;
  void* stream;
  void *e0 = nullptr, *e1 = nullptr;
  std::chrono::steady_clock::time_point t0;
  Timer(Backend& be, void* s) : b(be), stream(s) {
    const auto* d = b.def();
    if (d->event_create) {
      minihost::check(d->event_create(d->backend, 0, &e0), "event_create");
      minihost::check(d->event_create(d->backend, 0, &e1), "event_create");
    }
  }
  ~Timer() {
    const auto* d = b.def();
    if (e0) d->event_destroy(d->backend, 0, e0);
    if (e1) d->event_destroy(d->backend, 0, e1);
  }
  void start() {
    const auto* d = b.def();
    if (e0) minihost::check(d->event_record(d->backend, 0, e0, stream), "event_record");
    t0 = std::chrono::steady_clock::now();
  }
  double stop_ms() {
    const auto* d = b.def();
    if (!e1) {
      b.sync(stream);
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
    minihost::check(d->event_record(d->backend, 0, e1, stream), "event_record");
    minihost::check(d->event_synchronize(d->backend, 0, e1), "event_synchronize");
    float ms = 0;
    minihost::check(d->event_elapsed_ms(d->backend, 0, e0, e1, &ms), "event_elapsed_ms");
    return ms;
  }
};

void report(const std::string& dev, const char* what, double bytes, double ms) {
  std::printf("%-5s %-22s %12.0f %10.3f %8.1f\n", dev.c_str(), what, bytes, ms, bytes / (ms * 1e-3) / 1e9);
}

// Best of `reps` timings of f().
template <class F>
double best_ms(Timer& t, int reps, F&& f) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    t.start();
    f();
    best = std::min(best, t.stop_ms());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dev = argc > 1 ? argv[1] : "cuda";
  size_t copy_mib = 256;
  for (int i = 2; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--mib") == 0) copy_mib = std::strtoull(argv[i + 1], nullptr, 10);
  const std::string pack = dev == "cpu" ? "myops" : "myops-" + dev;
  try {
    Backend b(dev);
    if (!b.active()) {
      std::printf("%s: inactive (%s)\n", dev.c_str(), b.reason().c_str());
      return 2;
    }
    oph_device_properties p{};
    p.struct_size = sizeof p;
    minihost::check(b.def()->get_properties(b.def()->backend, 0, &p), "get_properties");
    std::printf("# %s:0 %s (%s), %d SMs/CUs/cores, %.1f GiB\n", dev.c_str(), p.name, p.arch ? p.arch : "",
                p.multiprocessors, static_cast<double>(p.total_memory) / (1ull << 30));
    void* stream = b.stream_create();
    Timer t(b, stream);
    const int reps = dev == "cpu" ? 3 : 10;

    // Copies.
    const size_t bytes = copy_mib << 20;
    std::vector<uint8_t> host(bytes, 1), back(bytes);
    void* d0 = b.alloc(bytes);
    void* d1 = b.alloc(bytes);
    b.copy(OPH_COPY_HOST_TO_DEVICE, d0, host.data(), bytes, stream);  // warm-up (first-touch, lazy init)
    b.sync(stream);
    report(dev, "copy H2D (pageable)", bytes,
           best_ms(t, reps, [&] { b.copy(OPH_COPY_HOST_TO_DEVICE, d0, host.data(), bytes, stream); }));
    report(dev, "copy D2H (pageable)", bytes,
           best_ms(t, reps, [&] { b.copy(OPH_COPY_DEVICE_TO_HOST, back.data(), d0, bytes, stream); }));
    report(dev, "copy D2D (read+write)", 2.0 * bytes,
           best_ms(t, reps, [&] { b.copy(OPH_COPY_DEVICE_TO_DEVICE, d1, d0, bytes, stream); }));
    b.free(d0);
    b.free(d1);

    // relu6_scale on 16M float32 vs a D2D copy of the same 64 MiB.
    minihost::Plugin myops(pack);
    if (!myops.ok()) throw std::runtime_error(pack + ": " + myops.error());
    const ophost::OpSchema* op = myops.find_op("myops", "relu6_scale", dev, 1);
    if (!op) throw std::runtime_error(pack + " has no relu6_scale on " + dev);
    const size_t n = size_t{16} << 20;
    std::vector<int64_t> shape{static_cast<int64_t>(n)};
    minihost::HostTensor x;
    x.shape = shape;
    x.bytes.resize(n * sizeof(float));
    for (size_t i = 0; i < n; ++i) reinterpret_cast<float*>(x.bytes.data())[i] = static_cast<float>(i % 17) - 8.0f;
    minihost::Kernel k(*op, {x}, {{"scale", 0.5f}, {"max_val", 6.0f}}, b.device());
    minihost::DeviceTensor dx(b, x.dtype, shape, x.bytes.size()), dy(b, x.dtype, shape, x.bytes.size());
    b.copy(OPH_COPY_HOST_TO_DEVICE, dx.ptr, x.bytes.data(), x.bytes.size(), stream);
    std::vector<oph_tensor*> ins{&dx.t}, outs{&dy.t};
    k.launch(stream, ins, outs);  // warm-up
    b.sync(stream);
    const double moved = 2.0 * n * sizeof(float);
    double ms_copy = best_ms(t, reps, [&] { b.copy(OPH_COPY_DEVICE_TO_DEVICE, dy.ptr, dx.ptr, n * sizeof(float), stream); });
    double ms_op = best_ms(t, reps, [&] { k.launch(stream, ins, outs); });
    report(dev, "D2D copy 64 MiB", moved, ms_copy);
    report(dev, "relu6_scale 16M f32", moved, ms_op);
    std::printf("%-5s %-22s %.0f%% of D2D copy bandwidth\n", dev.c_str(), "relu6_scale/copy", 100.0 * ms_copy / ms_op);
    // Spot-check the result.
    std::vector<float> y(n);
    b.copy(OPH_COPY_DEVICE_TO_HOST, y.data(), dy.ptr, n * sizeof(float), stream);
    b.sync(stream);
    for (size_t i = 0; i < n; i += 4099) {
      float v = std::min(std::max((static_cast<float>(i % 17) - 8.0f) * 0.5f, 0.0f), 6.0f);
      if (y[i] != v) throw std::runtime_error("relu6_scale result wrong at " + std::to_string(i));
    }
    b.stream_destroy(stream);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", dev.c_str(), e.what());
    return 1;
  }
  return 0;
}
