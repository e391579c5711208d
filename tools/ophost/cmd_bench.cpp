// ophost bench MODEL: latency distribution, allocations per run and pool peak, in the same process.
#include "common.hpp"

#include <ophost/error.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>

namespace ophost::cli {

namespace {
// The process's peak resident set (VmHWM in /proc/self/status), KiB; -1 when unknown.
long peak_rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return -1;
}
}  // namespace
namespace {

// The floor's loop: a read-modify-write walk over 16 KiB that stays in L1, the friendliest memory access there
// is. (A register-only loop would understate the floor: on the shared VMs a loop that touches even L1 shows a
// p99 of 1.6-1.9x its p50 at a few hundred nanoseconds, a register-only one ~1.05x.)
float g_floor_buffer[4096];
uint64_t spin(uint64_t iters) {
  for (uint64_t i = 0; i < iters; ++i) {
    float& f = g_floor_buffer[i & 4095];
    f = f * 0.5f + 1.0f;
  }
  asm volatile("" : : "r"(g_floor_buffer) : "memory");  // the stores are observable: no loop is removed
  return iters;
}

// Loop iterations that take `seconds`: the fastest of a few timed calls, scaled.
uint64_t spin_iterations_for(double seconds) {
  constexpr uint64_t kProbe = 1u << 16;
  double best = 1e9;
  for (int i = 0; i < 7; ++i) {
    auto a = std::chrono::steady_clock::now();
    spin(kProbe);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
  }
  return std::max<uint64_t>(1, static_cast<uint64_t>(seconds / best * static_cast<double>(kProbe)));
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  CommonOptions common;
  std::string model, json_out;
  std::vector<std::string> inputs, shapes;
  bool random = false;
  int warmup = 5, iterations = 0;
  double seconds = 2.0;
  bool bandwidth = false, jitter_floor = false;
  po::options_description visible("Options", 110, 55);
  visible.add_options()("help,h", "show this help")(
      "warmup", po::value(&warmup)->default_value(5), "untimed runs first")(
      "iterations,n", po::value(&iterations)->default_value(0), "timed runs (0: run for --time seconds)")(
      "time", po::value(&seconds)->default_value(2.0), "time budget in seconds when --iterations is 0")(
      "json", po::value(&json_out), "also write the results as JSON to FILE (- for stdout)")(
      "bandwidth", po::bool_switch(&bandwidth),
      "also report GB/s moved (input + output bytes per run) against a memcpy of the same bytes measured now")(
      "jitter-floor", po::bool_switch(&jitter_floor),
      "also time a plain CPU loop as long as one run, in ~20 ms blocks alternating with the runs, and report its "
      "p99/p50: the jitter this machine adds to any code of that length (the excess over it is the runtime's)");
  add_input_options(visible, inputs, random, shapes);
  add_common_options(visible, common);
  po::options_description all;
  all.add(visible).add_options()("model", po::value(&model));
  po::positional_options_description pos;
  pos.add("model", 1);
  po::variables_map vm;
  if (!parse(argc, argv, visible, all, pos, vm,
             "Usage: ophost bench MODEL [--random | --input NAME=FILE.npy ...] [--threads N] [-n N | --time S]\n\n"
             "Runs MODEL repeatedly after a warm-up and prints p50/p90/p99/min latency, the jitter (p99/p50),\n"
             "allocations per run and the pool's peak bytes. Inputs as for `ophost run`.\n")) {
    return kExitOk;
  }
  if (model.empty()) throw po::error("missing MODEL");
  if (warmup < 0 || iterations < 0 || !(seconds > 0)) throw po::error("--warmup and -n must be 0 or more, --time more than 0");
  setup_logging(common.log_level, "warn");

  using clock = std::chrono::steady_clock;
  const auto t_start = clock::now();
  Runtime runtime(runtime_options(common));
  const auto t_plugins = clock::now();
  auto session = runtime.load(model, session_options(common));
  const auto t_loaded = clock::now();
  const double plugins_ms = std::chrono::duration<double, std::milli>(t_plugins - t_start).count();
  const double load_ms = std::chrono::duration<double, std::milli>(t_loaded - t_plugins).count();
  std::vector<NamedTensor> feeds = prepare_inputs(*session, inputs, random, shapes, common.max_tensor_bytes);
  std::vector<NamedTensor> outputs;
  std::vector<double> warm_ms;
  warm_ms.reserve(static_cast<size_t>(warmup));
  for (int i = 0; i < warmup; ++i) {
    auto a = clock::now();
    session->run(feeds, outputs);
    warm_ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - a).count());
  }
  std::sort(warm_ms.begin(), warm_ms.end());
  double warm_median_s = warm_ms.empty() ? 0.0 : warm_ms[warm_ms.size() / 2] * 1e-3;
  // The machine's own jitter floor: a spin loop as long as the fastest of 101 more untimed runs (the minimum is
  // what a burst of noise during calibration cannot inflate).
  uint64_t spin_iters = 0;
  if (jitter_floor) {
    std::vector<double> cal;
    for (int i = 0; i < 101; ++i) {
      auto a = clock::now();
      session->run(feeds, outputs);
      cal.push_back(std::chrono::duration<double>(clock::now() - a).count());
    }
    spin_iters = spin_iterations_for(*std::min_element(cal.begin(), cal.end()));
  }

  // Latency slots are sized and touched before timing: a first-touch page fault every 512 runs would otherwise
  // land between two timed runs and show up in the tail.
  size_t expected = iterations ? static_cast<size_t>(iterations)
                               : static_cast<size_t>(std::min(1e7, seconds / std::max(warm_median_s, 1e-7) * 1.5)) + 16;
  std::vector<double> ms(expected, 0.0), floor_ms(jitter_floor ? expected : 0, 0.0);
  size_t runs = 0;
  int64_t allocs = 0;
  auto record = [](std::vector<double>& v, size_t i, double x) {
    if (i < v.size()) v[i] = x;
    else v.push_back(x);
  };
  // With --jitter-floor, blocks of runs alternate with as many loops: both see the same seconds of this machine.
  // A block lasts about 20 ms (at least 64 runs) so that the first run after a switch, slower with the loop's
  // branch history and caches, is far less than 1% of the runs and cannot set p99.
  const size_t kBlock = std::max<size_t>(64, static_cast<size_t>(0.02 / std::max(warm_median_s, 1e-9)));
  size_t floor_runs = 0;
  auto start = clock::now();
  for (bool done = false; !done;) {
    for (size_t k = 0; k < kBlock && !done; ++k) {
      auto a = clock::now();
      session->run(feeds, outputs);
      auto b = clock::now();
      record(ms, runs, std::chrono::duration<double, std::milli>(b - a).count());
      allocs += session->memory_stats().allocs_this_run;
      ++runs;
      done = iterations ? runs >= static_cast<size_t>(iterations)
                        : std::chrono::duration<double>(b - start).count() >= seconds && runs >= 10;
    }
    for (size_t k = 0; jitter_floor && k < kBlock && floor_runs < runs; ++k) {
      auto c = clock::now();
      spin(spin_iters);
      record(floor_ms, floor_runs++, std::chrono::duration<double, std::milli>(clock::now() - c).count());
    }
  }
  ms.resize(runs);
  if (jitter_floor) floor_ms.resize(floor_runs);
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  auto quantile = [](const std::vector<double>& v, double p) {
    return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
  };
  auto q = [&](double p) { return quantile(sorted, p); };
  std::sort(floor_ms.begin(), floor_ms.end());
  double floor_jitter = jitter_floor ? quantile(floor_ms, 0.99) / quantile(floor_ms, 0.5) : 0.0;
  double mean = 0;
  for (double v : ms) mean += v;
  mean /= static_cast<double>(ms.size());
  MemoryStats st = session->memory_stats();
  std::vector<std::vector<int64_t>> in_shapes;
  for (const ValueInfo& in : session->inputs()) {
    for (const NamedTensor& f : feeds)
      if (f.name == in.name) in_shapes.emplace_back(f.tensor.shape().begin(), f.tensor.shape().end());
  }
  MemoryPlanReport plan = session->memory_plan(in_shapes);
  double per_run_allocs = static_cast<double>(allocs) / static_cast<double>(ms.size());
  size_t nodes = session->node_count();

  std::printf("model: %s (%zu nodes)\n", model.c_str(), nodes);
  std::printf("runs: %zu after %d warm-up, intra-op threads %d\n", ms.size(), warmup,
              common.threads ? common.threads : 0);
  std::printf("latency ms: p50 %.4f  p90 %.4f  p99 %.4f  min %.4f  mean %.4f\n", q(0.5), q(0.9), q(0.99),
              sorted.front(), mean);
  std::printf("per node: p50 %.1f ns\n", nodes ? q(0.5) * 1e6 / static_cast<double>(nodes) : 0.0);
  std::printf("jitter p99/p50: %.3f\n", q(0.99) / q(0.5));
  if (jitter_floor) {
    std::printf("jitter floor: a plain loop of %.4f ms (p50), %zu times between the runs: p99/p50 %.3f; model/floor %.3f\n",
                quantile(floor_ms, 0.5), floor_ms.size(), floor_jitter, q(0.99) / q(0.5) / floor_jitter);
  }
  std::printf("allocations per run: %.2f   pool peak bytes: %lld (arena planned %zu, lower bound %zu%s)\n",
              per_run_allocs, static_cast<long long>(st.max_bytes_in_use), plan.arena_bytes, plan.lower_bound,
              plan.planned ? "" : ", shapes dynamic: not planned");
  const long peak_rss_kb = peak_rss_kib();
  std::printf("start-up ms: plugins %.1f  session load %.1f   peak RSS: %.1f MiB (whole process, VmHWM)\n",
              plugins_ms, load_ms, static_cast<double>(peak_rss_kb) / 1024.0);
  finish_profile(*session, common);
  double model_gbs = 0, memcpy_gbs = 0;
  if (bandwidth) {
    // Bytes an elementwise model must move: every input read once, every output written once.
    size_t moved = 0, largest = 0;
    for (const NamedTensor& f : feeds) moved += f.tensor.nbytes(), largest = std::max(largest, f.tensor.nbytes());
    for (const NamedTensor& o : outputs) moved += o.tensor.nbytes();
    // Baseline: memcpy of the largest input (read + write = 2x its bytes), median of as many runs.
    std::vector<char> src(largest, 1), dst(largest, 0);
    std::vector<double> cp;
    for (int i = 0; i < std::max(5, static_cast<int>(ms.size())); ++i) {
      auto a = clock::now();
      std::memcpy(dst.data(), src.data(), largest);
      cp.push_back(std::chrono::duration<double>(clock::now() - a).count());
      src[static_cast<size_t>(i) % largest] = static_cast<char>(i);  // keep the copies observable
    }
    std::sort(cp.begin(), cp.end());
    memcpy_gbs = 2.0 * static_cast<double>(largest) / cp[cp.size() / 2] / 1e9;
    model_gbs = static_cast<double>(moved) / (q(0.5) / 1e3) / 1e9;
    std::printf("bandwidth: model %.2f GB/s (%zu bytes in+out per run), memcpy %.2f GB/s (same run), ratio %.2f\n",
                model_gbs, moved, memcpy_gbs, model_gbs / memcpy_gbs);
  }
  if (!json_out.empty()) {
    nlohmann::json j = {{"model", model},
                        {"nodes", nodes},
                        {"runs", ms.size()},
                        {"warmup", warmup},
                        {"threads", common.threads},
                        {"p50_ms", q(0.5)},
                        {"p90_ms", q(0.9)},
                        {"p99_ms", q(0.99)},
                        {"min_ms", sorted.front()},
                        {"mean_ms", mean},
                        {"per_node_ns", nodes ? q(0.5) * 1e6 / static_cast<double>(nodes) : 0.0},
                        {"jitter_p99_p50", q(0.99) / q(0.5)},
                        {"jitter_floor_p99_p50", floor_jitter},
                        {"allocations_per_run", per_run_allocs},
                        {"plugins_ms", plugins_ms},
                        {"load_ms", load_ms},
                        {"peak_rss_kib", peak_rss_kb},
                        {"bandwidth_gbs", model_gbs},
                        {"memcpy_gbs", memcpy_gbs},
                        {"pool", {{"num_allocs", st.num_allocs},
                                  {"num_reserves", st.num_reserves},
                                  {"max_bytes_in_use", st.max_bytes_in_use},
                                  {"total_allocated_bytes", st.total_allocated_bytes},
                                  {"max_alloc_size", st.max_alloc_size}}},
                        {"plan", {{"planned", plan.planned},
                                  {"arena_bytes", plan.arena_bytes},
                                  {"lower_bound", plan.lower_bound}}}};
    if (json_out == "-") {
      std::cout << j.dump() << "\n";
    } else {
      std::ofstream f(json_out);
      if (!f) throw Error(Code::kInvalidArgument, "cannot write --json file '" + json_out + "'");
      f << j.dump(2) << "\n";
    }
  }
  return kExitOk;
}

}  // namespace ophost::cli
