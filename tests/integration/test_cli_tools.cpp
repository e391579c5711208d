// The measuring commands as a user runs them: `ophost bench` (latency quantiles, allocations per run, pool peak,
// --json, --jitter-floor), `ophost run --profile` (Chrome trace with ONNX Runtime's field names + per-op table)
// and `ophost inspect --memory` (planned peak beside the lower bound). Figures are not asserted (they belong to
// docs/benchmarks.md); their presence, consistency and the zero-allocation steady state are.
#include "integration_support.hpp"

#include <nlohmann/json.hpp>
#include <ophost/runtime.hpp>

#include <algorithm>

#include <regex>
#include <set>

namespace ophost::itest {
namespace {

std::vector<std::string> with_plugins(std::vector<std::string> args) {
  args.insert(args.end(), {"--plugin-path", kPluginDir.string()});
  return args;
}

TEST(CliBench, PrintsQuantilesAllocationsAndPoolPeak) {
  ProcResult r = ophost(with_plugins({"bench", (kExamples / "mixed_small.onnx").string(), "--random", "-n", "200"}));
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_CONTAINS(r.out, "runs: 200 after 5 warm-up");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(latency ms: p50 ([0-9.]+)  p90 ([0-9.]+)  p99 ([0-9.]+)  min ([0-9.]+))")))
      << r.describe();
  double p50 = std::stod(m[1]), p90 = std::stod(m[2]), p99 = std::stod(m[3]), mn = std::stod(m[4]);
  EXPECT_LE(mn, p50);
  EXPECT_LE(p50, p90);
  EXPECT_LE(p90, p99);
  EXPECT_CONTAINS(r.out, "jitter p99/p50: ");
  // A static-shape model: nothing allocated in a steady-state run, and the pool peak is the planned arena.
  EXPECT_CONTAINS(r.out, "allocations per run: 0.00   pool peak bytes: 128 (arena planned 128, lower bound 128)");
  // Start-up and footprint beside the latency.
  ASSERT_TRUE(std::regex_search(
      r.out, m, std::regex(R"(start-up ms: plugins ([0-9.]+)  session load ([0-9.]+)   peak RSS: ([0-9.]+) MiB)")))
      << r.describe();
  EXPECT_GT(std::stod(m[3]), 1.0);
}

TEST(CliBench, JsonHasTheSameFiguresAndTheJitterFloor) {
  ProcResult r = ophost(with_plugins(
      {"bench", (kExamples / "broadcast.onnx").string(), "--random", "-n", "300", "--json", "-", "--jitter-floor"}));
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  // The JSON document is the last line of stdout.
  std::string trimmed = r.out.substr(0, r.out.find_last_not_of('\n') + 1);
  std::string last = trimmed.substr(trimmed.rfind('\n') + 1);
  nlohmann::json j = nlohmann::json::parse(last);
  EXPECT_EQ(j.at("runs").get<int>(), 300);
  EXPECT_EQ(j.at("allocations_per_run").get<double>(), 0.0);
  EXPECT_GT(j.at("peak_rss_kib").get<int64_t>(), 1024);
  EXPECT_GE(j.at("load_ms").get<double>(), 0.0);
  EXPECT_LE(j.at("min_ms").get<double>(), j.at("p50_ms").get<double>());
  EXPECT_LE(j.at("p50_ms").get<double>(), j.at("p99_ms").get<double>());
  EXPECT_DOUBLE_EQ(j.at("jitter_p99_p50").get<double>(), j.at("p99_ms").get<double>() / j.at("p50_ms").get<double>());
  // The floor is a real measurement: a ratio of two quantiles of the loop, so at least 1.
  EXPECT_GE(j.at("jitter_floor_p99_p50").get<double>(), 1.0);
  EXPECT_TRUE(j.at("plan").at("planned").get<bool>());
  EXPECT_EQ(j.at("pool").at("max_bytes_in_use").get<int64_t>(), j.at("plan").at("arena_bytes").get<int64_t>());
  EXPECT_CONTAINS(r.out, "jitter floor: a plain loop of ");
}

TEST(CliBench, BadArgumentsAreClearErrors) {
  const std::string model = (kExamples / "mixed_small.onnx").string();
  ProcResult neg = ophost(with_plugins({"bench", model, "--random", "-n", "-3"}));
  EXPECT_CLEAN_FAILURE(neg);
  EXPECT_CONTAINS(neg.err, "-n must be 0 or more");
  ProcResult no_model = ophost(with_plugins({"bench", "--random"}));
  EXPECT_CLEAN_FAILURE(no_model);
  EXPECT_CONTAINS(no_model.err, "missing MODEL");
  ProcResult time0 = ophost(with_plugins({"bench", model, "--random", "--time", "0"}));
  EXPECT_CLEAN_FAILURE(time0);
  EXPECT_CONTAINS(time0.err, "--time more than 0");
}

TEST(CliProfile, ChromeTraceUsesOnnxRuntimeFieldNames) {
  TempDir dir;
  const fs::path trace = dir / "trace.json";
  ProcResult r = ophost(with_plugins({"run", (kExamples / "mixed_small.onnx").string(), "--random", "--profile",
                                      trace.string()}));
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_CONTAINS(r.out, "profile: " + trace.string());
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(op type +calls +total us +avg us +share)"))) << r.out;
  nlohmann::json events = nlohmann::json::parse(read_file(trace));
  ASSERT_TRUE(events.is_array());
  int node_events = 0;
  std::set<std::string> ops;
  for (const nlohmann::json& e : events) {
    if (e.value("cat", "") != "Node") continue;
    ++node_events;
    EXPECT_EQ(e.at("ph"), "X");
    EXPECT_TRUE(e.at("name").get<std::string>().ends_with("_kernel_time")) << e.dump();
    EXPECT_TRUE(e.at("ts").is_number());
    EXPECT_TRUE(e.at("dur").is_number());
    const nlohmann::json& a = e.at("args");
    ops.insert(a.at("op_name").get<std::string>());
    EXPECT_FALSE(a.at("provider").get<std::string>().empty());
    EXPECT_TRUE(a.at("input_type_shape").is_array());
    EXPECT_TRUE(a.at("output_type_shape").is_array());
  }
  // mixed_small runs 5 nodes once (its Identity is removed at load).
  EXPECT_EQ(node_events, 5);
  EXPECT_EQ(ops, (std::set<std::string>{"Add", "relu6_scale", "gelu", "Mul", "Relu"}));
}

TEST(CliInspect, MemoryShowsPlannedPeakBesideLowerBound) {
  ProcResult r = ophost(with_plugins({"inspect", (kExamples / "mixed_small.onnx").string(), "--memory"}));
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(planned peak ([0-9]+) bytes, lower bound ([0-9]+) bytes, ratio ([0-9.]+))")))
      << r.out;
  EXPECT_LE(std::stod(m[3]), 1.10);
  EXPECT_GE(std::stoll(m[1]), std::stoll(m[2]));
}

// `--disable-pass` lists the host's own pass table (graph_passes()), in the order the passes run, with levels.
TEST(CliHelp, DisablePassListsEveryPassOfTheHostsTable) {
  ProcResult r = ophost({"run", "--help"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  size_t at = r.out.find("--disable-pass");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::vector<GraphPassInfo> passes = graph_passes();
  ASSERT_FALSE(passes.empty());
  for (const GraphPassInfo& p : passes) {
    const size_t found = r.out.find(p.name, at);
    ASSERT_NE(found, std::string::npos) << p.name << " missing or out of order in:\n" << r.out;
    at = found + p.name.size();
  }
  EXPECT_NE(std::find_if(passes.begin(), passes.end(), [](const GraphPassInfo& p) {
              return p.name == "layer-norm-fusion" && p.level == 2;
            }), passes.end());
  EXPECT_NE(std::find_if(passes.begin(), passes.end(), [](const GraphPassInfo& p) {
              return p.name == "gelu-fusion" && p.level == 2;
            }), passes.end());
}

}  // namespace
}  // namespace ophost::itest
