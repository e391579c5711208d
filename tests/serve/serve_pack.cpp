// Test pack for `ophost serve` (tests/serve): ops that fail or take time on purpose.
//
//   srv::fail_negative  y = x; fails the run (an error naming the op's reason) when x[0] < 0, so the warm-up
//                       (zeros) passes and a request can make the pack fail
//   srv::sleep          y = x after sleeping `ms` milliseconds (requests in flight for the drain and queue tests)
#include <ophost/ophost_plugin.hpp>

#include <chrono>
#include <cstdint>
#include <thread>

namespace oph = ophost::sdk;

namespace {

void fail_negative(oph::In<float> x, oph::Out<float> y) {
  if (x.size() > 0 && x[0] < 0.0f) throw oph::Error(OPH_CODE_INTERNAL, "srv::fail_negative: x[0] is negative");
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i];
}

void sleep_op(oph::In<float> x, oph::Out<float> y, int64_t ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i];
}

}  // namespace

OPH_PACK(pack) {
  pack.op("srv", "fail_negative").infer(oph::same_as_input(0)).fn<fail_negative>();
  pack.op("srv", "sleep").attr("ms", int64_t{0}).infer(oph::same_as_input(0)).fn<sleep_op>();
}
