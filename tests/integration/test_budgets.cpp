// Budgets a run cannot exceed: the per-tensor cap on shapes known only while running, the default memory limit,
// the per-run deadline, and the --random input sizes of the command. Each refusal names the option to change.
#include "integration_support.hpp"
#include "../peak_rss.hpp"

#include <ophost/runtime.hpp>

#include <chrono>
#include <fstream>

namespace ophost::itest {
namespace {

Tensor i64s(std::vector<int64_t> v) {
  Tensor t(DType::kInt64, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data_as<int64_t>());
  return t;
}

std::string run_error(Session& s, const std::vector<NamedTensor>& in, Code* code = nullptr) {
  try {
    s.run(in);
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "";
}

TEST(Budgets, TensorCapAppliesToShapesKnownOnlyWhileRunning) {
  // Expand to a shape read from an input at run time: inference cannot size it, the kernel asks when running.
  ModelBuilder b;
  b.input("x", {1}).input("shape", {2}, onnx::TensorProto::INT64);
  auto* out = b.m.mutable_graph()->add_output();
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  b.node("Expand", {"x", "shape"}, {"y"}, "expand");
  TempDir dir;
  auto rt = build_tree_runtime();
  SessionOptions so;
  so.max_tensor_bytes = 1 << 20;
  auto s = rt->load(b.save(dir / "expand.onnx"), so);
  Tensor x(DType::kFloat32, {1});
  auto ok = s->run({{"x", x}, {"shape", i64s({256, 256})}});  // 256 KiB: within the cap
  EXPECT_EQ(ok[0].tensor.numel(), 256 * 256);
  Code code{};
  const std::string err = run_error(*s, {{"x", x}, {"shape", i64s({1024, 1024})}}, &code);
  EXPECT_EQ(code, Code::kResourceExhausted);
  EXPECT_CONTAINS(err, "node 'expand' (Expand, opset 13)");
  EXPECT_CONTAINS(err, "output 0 'y' would be float32 [1024,1024], 4 MiB (4194304 bytes), over the tensor size "
                       "limit of 1 MiB (SessionOptions::max_tensor_bytes, ophost --max-tensor-bytes)");
  // A shape whose size overflows is refused the same way, not allocated.
  EXPECT_CONTAINS(run_error(*s, {{"x", x}, {"shape", i64s({int64_t{1} << 40, int64_t{1} << 40})}}),
                  "more bytes than a 64-bit size can count");
}

// Constant folding runs a node whose inputs are constants through a small session of its own: that session has
// the caps too (and the per-node folding cap below them). A ConstantOfShape of 2 GiB whose size inference could
// not predict (the rest of the graph did not infer) was allocated at load under a 64 MiB cap (an op fuzz find).
TEST(Budgets, ConstantFoldingAllocatesWithinTheTensorCap) {
  ModelBuilder b;
  b.input("x", {1}).output("y", {1});
  auto* n = b.m.mutable_graph()->add_initializer();
  n->set_name("n");
  n->set_data_type(onnx::TensorProto::INT64);
  n->add_dims(1);
  n->add_int64_data(int64_t{1} << 28);  // int64 [2^28]: 2 GiB
  b.node("ConstantOfShape", {"n"}, {"big"}, "big");
  b.node("Shape", {"big"}, {"s"}, "shape");
  b.node("Reshape", {"x", "s"}, {"y"}, "reshape");
  TempDir dir;
  auto rt = build_tree_runtime();
  SessionOptions so;
  so.max_tensor_bytes = 64 << 20;
  ophost::testing::reset_peak_rss();
  const long before = ophost::testing::peak_rss_kib();
  try {
    rt->load(b.save(dir / "fold_big.onnx"), so);
    ADD_FAILURE() << "a 2 GiB value loaded under a 64 MiB cap";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), "over the tensor size limit of 64 MiB");
  }
  EXPECT_LT(ophost::testing::peak_rss_kib() - before, 256 * 1024) << "peak RSS grew past 256 MiB while loading";
}

TEST(Budgets, MemoryLimitDefaultsToHalfOfPhysicalMemory) {
  const size_t half = default_mem_limit();
  EXPECT_GT(half, size_t{0});
  EXPECT_EQ(SessionOptions{}.mem_limit, half);
  TempDir dir;
  auto rt = build_tree_runtime();
  auto s = rt->load(unary_model("Relu", "", {{"", 13}}).save(dir / "relu.onnx"));
  EXPECT_EQ(s->memory_stats().bytes_limit, static_cast<int64_t>(half));
  SessionOptions none;
  none.mem_limit = 0;
  EXPECT_EQ(rt->load(dir / "relu.onnx", none)->memory_stats().bytes_limit, 0);
}

// A Loop with no trip count whose condition stays true: only the deadline ends it.
fs::path endless_loop(const fs::path& dir) {
  ModelBuilder b;
  b.input("s0", {1}).output("s", {1});
  onnx::GraphProto body;
  body.set_name("body");
  for (auto [name, elem] : {std::pair{"i", onnx::TensorProto::INT64}, std::pair{"c", onnx::TensorProto::BOOL},
                            std::pair{"s_in", onnx::TensorProto::FLOAT}}) {
    auto* in = body.add_input();
    in->set_name(name);
    in->mutable_type()->mutable_tensor_type()->set_elem_type(elem);
  }
  for (auto [name, elem] : {std::pair{"c_out", onnx::TensorProto::BOOL}, std::pair{"s_out", onnx::TensorProto::FLOAT}}) {
    auto* out = body.add_output();
    out->set_name(name);
    out->mutable_type()->mutable_tensor_type()->set_elem_type(elem);
  }
  auto* id = body.add_node();
  id->set_op_type("Identity");
  id->add_input("c");
  id->add_output("c_out");
  auto* relu = body.add_node();
  relu->set_op_type("Relu");
  relu->add_input("s_in");
  relu->add_output("s_out");
  auto* loop = b.node("Loop", {"", "", "s0"}, {"s"}, "forever");
  auto* a = loop->add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = body;
  return b.save(dir / "forever.onnx");
}

TEST(Budgets, RunTimeoutStopsALongRunNamingTheOption) {
  TempDir dir;
  auto rt = build_tree_runtime();
  for (auto mode : {SessionOptions::ExecutionMode::kSequential, SessionOptions::ExecutionMode::kParallel}) {
    SessionOptions so;
    so.execution_mode = mode;
    so.max_loop_iterations = int64_t{1} << 40;
    so.run_timeout_ms = 100;
    auto s = rt->load(endless_loop(dir.path()), so);
    Tensor s0(DType::kFloat32, {1});
    Code code{};
    const auto t0 = std::chrono::steady_clock::now();
    const std::string err = run_error(*s, {{"s0", s0}}, &code);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(code, Code::kDeadlineExceeded) << err;
    EXPECT_CONTAINS(err, "node 'forever' (Loop, opset 13) run by the host");
    EXPECT_CONTAINS(err, "not started: the run passed its deadline of 100 ms");
    EXPECT_CONTAINS(err, "ophost --run-timeout");
    EXPECT_LT(seconds, 5.0);
  }
  // Without a deadline the same session shape runs to the iteration cap instead.
  SessionOptions capped;
  capped.max_loop_iterations = 1000;
  auto s = rt->load(endless_loop(dir.path()), capped);
  Tensor s0(DType::kFloat32, {1});
  Code code{};
  EXPECT_CONTAINS(run_error(*s, {{"s0", s0}}, &code), "1000 iterations");
  EXPECT_EQ(code, Code::kResourceExhausted);
}

TEST(Budgets, RandomInputsBeyondTheTensorCapAreRefusedByTheCommand) {
  TempDir dir;
  ModelBuilder b;
  b.input("x", {1, 16}).output("y", {1, 16});
  b.m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)
      ->set_dim_param("N");  // an open batch dimension, given with --shape
  b.node("Relu", {"x"}, {"y"}, "relu");
  const fs::path model = b.save(dir / "open.onnx");
  ProcResult r = ophost({"run", model.string(), "--random", "--shape", "x=100000000000,16", "--plugin-path",
                         kPluginDir.string()});
  EXPECT_NE(r.exit_code, 0) << r.describe();
  EXPECT_CONTAINS(r.err, "--random input 'x' of shape [100000000000,16] would be 6400000000000 bytes");
  EXPECT_CONTAINS(r.err, "(--max-tensor-bytes)");
}

TEST(Budgets, RecurrentHiddenSizeIsCheckedAgainstRBeforeAnythingIsSized) {
  // LSTM with R for hidden size 2 but hidden_size 2^28: refused at load, before a 2^28-wide output is sized.
  ModelBuilder b;
  b.input("x", {1, 1, 2}).output("y", {1, 1, 1, 2});
  auto add_init = [&](const char* name, std::vector<int64_t> dims) {
    auto* t = b.m.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    int64_t n = 1;
    for (int64_t d : dims) {
      t->add_dims(d);
      n *= d;
    }
    for (int64_t i = 0; i < n; ++i) t->add_float_data(0.1f);
  };
  add_init("W", {1, 8, 2});
  add_init("R", {1, 8, 2});
  auto* n = b.node("LSTM", {"x", "W", "R"}, {"y"}, "lstm");
  ModelBuilder::attr_int(n, "hidden_size", int64_t{1} << 28);
  TempDir dir;
  auto rt = build_tree_runtime();
  try {
    rt->load(b.save(dir / "lstm.onnx"));
    FAIL() << "expected a load error";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), "node 'lstm' (LSTM, opset 13)");
    EXPECT_CONTAINS(e.what(), "hidden_size 268435456 disagrees with R's shape [1,8,2]");
  }
}

}  // namespace
}  // namespace ophost::itest
