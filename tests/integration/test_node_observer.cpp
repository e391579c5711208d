// Session::run with a NodeObserver (the embedding API's per-node hook): every node of the main graph observed
// once, in execution order, with the values a dump_dir run writes (sequential and parallel execution, static and
// data-dependent shapes); If bodies not observed; an observer's exception fails the run naming the node; plain
// runs unaffected.
#include "integration_support.hpp"

#include <ophost/npy.hpp>
#include <ophost/runtime.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <set>
#include <stdexcept>

namespace ophost::itest {
namespace {

using Mode = SessionOptions::ExecutionMode;

std::unique_ptr<Runtime> runtime() {
  RuntimeOptions ro;
  ro.use_env_plugin_path = false;
  ro.plugin_paths = {kPluginDir};
  ro.use_default_plugin_dir = false;
  return std::make_unique<Runtime>(ro);
}

Tensor floats(std::vector<int64_t> shape, float start, float step) {
  Tensor t(DType::kFloat32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = start + step * static_cast<float>(i);
  return t;
}

bool same_tensor(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && std::equal(a.shape().begin(), a.shape().end(), b.shape().begin(), b.shape().end()) &&
         a.nbytes() == b.nbytes() && (a.nbytes() == 0 || std::memcmp(a.data(), b.data(), a.nbytes()) == 0);
}

// x f32[2,3] -> Relu (relu) and Neg (neg), two independent nodes -> Add (add) -> Mul with x (mul) -> y.
fs::path diamond_model(const fs::path& dir) {
  ModelBuilder b;
  b.input("x", {2, 3}).output("y", {2, 3});
  b.node("Relu", {"x"}, {"a"}, "relu");
  b.node("Neg", {"x"}, {"b"}, "neg");
  b.node("Add", {"a", "b"}, {"c"}, "add");
  b.node("Mul", {"c", "x"}, {"y"}, "mul");
  return b.save(dir / "diamond.onnx");
}

struct Case {
  std::string what;
  fs::path model;
  std::vector<NamedTensor> inputs;
  Mode mode;
};

std::vector<Case> cases(const fs::path& dir) {
  std::vector<Case> out;
  const std::vector<NamedTensor> mixed = {{"x", read_npy(kExamples / "mixed_small.input.x.npy")}};
  const std::vector<NamedTensor> diamond = {{"x", floats({2, 3}, -2.5f, 1.0f)}};
  for (Mode mode : {Mode::kSequential, Mode::kParallel}) {
    const std::string m = mode == Mode::kSequential ? " sequential" : " parallel";
    out.push_back({"mixed_small" + m, kExamples / "mixed_small.onnx", mixed, mode});
    out.push_back({"diamond" + m, diamond_model(dir), diamond, mode});
  }
  return out;
}

TEST(NodeObserver, SeesEveryNodeInExecutionOrderWithTheValuesOfADump) {
  TempDir tmp;
  auto rt = runtime();
  for (const Case& c : cases(tmp.path())) {
    SCOPED_TRACE(c.what);
    SessionOptions so;
    so.execution_mode = c.mode;
    so.inter_op_threads = 3;
    SessionOptions dumping = so;
    dumping.dump_dir = (tmp / "dump").string();
    fs::remove_all(tmp / "dump");
    rt->load(c.model, dumping)->run(c.inputs);
    const nlohmann::json index = nlohmann::json::parse(read_file(tmp / "dump" / "index.json"));

    auto session = rt->load(c.model, so);
    std::vector<NodeOutputs> seen;
    std::vector<NamedTensor> out = session->run(c.inputs, [&](const NodeOutputs& n) { seen.push_back(n); });

    const std::vector<KernelInfo> kernels = session->kernels();
    ASSERT_EQ(seen.size(), kernels.size()) << "one call per node";
    ASSERT_EQ(index["nodes"].size(), kernels.size());
    std::set<size_t> indices;
    for (size_t k = 0; k < seen.size(); ++k) {
      const NodeOutputs& n = seen[k];
      if (c.mode == Mode::kSequential) EXPECT_EQ(n.index, k) << "sequential runs call in execution order";
      ASSERT_LT(n.index, kernels.size());
      EXPECT_TRUE(indices.insert(n.index).second) << "node " << n.index << " observed twice";
      const KernelInfo& ki = kernels[n.index];
      EXPECT_EQ(n.node, ki.node);
      EXPECT_EQ(n.op, ki.op);
      EXPECT_EQ(n.pack, ki.pack);
      EXPECT_EQ(n.device, "cpu");
      EXPECT_NE(n.op, "Identity") << "nodes after optimisation: Identity is eliminated";
      const nlohmann::json& dn = index["nodes"][n.index];
      EXPECT_EQ(dn["name"], n.node);
      EXPECT_EQ(dn["op"], n.op);
      EXPECT_EQ(dn["pack"], n.pack);
      EXPECT_TRUE(n.skipped.empty());
      ASSERT_EQ(n.outputs.size(), dn["outputs"].size());
      for (size_t o = 0; o < n.outputs.size(); ++o) {
        EXPECT_EQ(n.outputs[o].name, dn["outputs"][o]);
        auto v = std::find_if(index["values"].begin(), index["values"].end(),
                              [&](const nlohmann::json& j) { return j["name"] == n.outputs[o].name; });
        ASSERT_NE(v, index["values"].end()) << n.outputs[o].name;
        ASSERT_TRUE((*v)["file"].is_string()) << n.outputs[o].name;
        EXPECT_TRUE(same_tensor(n.outputs[o].tensor, read_npy(tmp / "dump" / (*v)["file"].get<std::string>())))
            << "value '" << n.outputs[o].name << "' differs from the dump";
      }
    }
    // The graph output as the last node computed it is what run() returned.
    auto last =
        std::find_if(seen.begin(), seen.end(), [&](const NodeOutputs& n) { return n.index == seen.size() - 1; });
    ASSERT_NE(last, seen.end());
    ASSERT_EQ(out.size(), 1u);
    ASSERT_EQ(last->outputs.size(), 1u);
    EXPECT_EQ(last->outputs[0].name, out[0].name);
    EXPECT_TRUE(same_tensor(last->outputs[0].tensor, out[0].tensor));
    EXPECT_TRUE(same_tensor(out[0].tensor, session->run(c.inputs)[0].tensor));
  }
}

TEST(NodeObserver, ParallelRunsCallOneAtATime) {
  TempDir tmp;
  auto rt = runtime();
  SessionOptions so;
  so.execution_mode = Mode::kParallel;
  so.inter_op_threads = 3;
  auto session = rt->load(diamond_model(tmp.path()), so);
  std::atomic<int> inside{0}, overlaps{0}, calls{0};
  for (int r = 0; r < 50; ++r) {
    session->run({{"x", floats({2, 3}, -2.5f, 1.0f)}}, [&](const NodeOutputs&) {
      if (inside.fetch_add(1) != 0) ++overlaps;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      inside.fetch_sub(1);
      ++calls;
    });
  }
  EXPECT_EQ(calls.load(), 50 * 4);
  EXPECT_EQ(overlaps.load(), 0) << "observer calls overlapped";
}

// Shapes known only while running (NonZero): the generic run path observes the same way.
TEST(NodeObserver, SeesDataDependentShapes) {
  TempDir tmp;
  ModelBuilder b;
  b.input("x", {2, 3}).output("y", {2}, onnx::TensorProto::INT64);
  b.node("Relu", {"x"}, {"r"}, "relu");
  b.node("NonZero", {"r"}, {"idx"}, "nonzero");
  b.node("Shape", {"idx"}, {"y"}, "shape");
  auto rt = runtime();
  SessionOptions so;
  so.opt_level = 0;  // keep Shape a node
  auto session = rt->load(b.save(tmp / "nonzero.onnx"), so);
  Tensor x = floats({2, 3}, -2.5f, 1.0f);  // -2.5 -1.5 -0.5 0.5 1.5 2.5: three positive
  std::vector<NodeOutputs> seen;
  auto out = session->run({{"x", x}}, [&](const NodeOutputs& n) { seen.push_back(n); });
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[1].node, "nonzero");
  ASSERT_EQ(seen[1].outputs.size(), 1u);
  const Tensor& idx = seen[1].outputs[0].tensor;
  ASSERT_EQ(idx.dtype(), DType::kInt64);
  EXPECT_EQ(std::vector<int64_t>(idx.shape().begin(), idx.shape().end()), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(std::vector<int64_t>(idx.data_as<int64_t>(), idx.data_as<int64_t>() + 6),
            (std::vector<int64_t>{1, 1, 1, 0, 1, 2}));
  EXPECT_TRUE(same_tensor(seen[2].outputs[0].tensor, out[0].tensor));
}

// x f32[2,3], c bool[] -> Relu (relu) -> If(c) (branch): then Add(a, a) (then_add), else Neg(x) (else_neg) -> y.
fs::path if_model(const fs::path& dir) {
  ModelBuilder b;
  b.input("x", {2, 3}).input("c", {}, onnx::TensorProto::BOOL).output("y", {2, 3});
  b.node("Relu", {"x"}, {"a"}, "relu");
  auto* n = b.node("If", {"c"}, {"y"}, "branch");
  auto branch = [&](const char* attr, const char* name, const char* op, std::vector<std::string> ins,
                    const char* out) {
    auto* a = n->add_attribute();
    a->set_name(attr);
    a->set_type(onnx::AttributeProto::GRAPH);
    onnx::GraphProto* g = a->mutable_g();
    g->set_name(attr);
    auto* o = g->add_output();
    o->set_name(out);
    o->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    auto* bn = g->add_node();
    bn->set_op_type(op);
    bn->set_name(name);
    for (const auto& i : ins) bn->add_input(i);
    bn->add_output(out);
  };
  branch("then_branch", "then_add", "Add", {"a", "a"}, "t");
  branch("else_branch", "else_neg", "Neg", {"x"}, "e");
  return b.save(dir / "if.onnx");
}

TEST(NodeObserver, IfBodyNodesAreNotObservedTheIfNodeIs) {
  TempDir tmp;
  auto rt = runtime();
  const fs::path model = if_model(tmp.path());
  for (Mode mode : {Mode::kSequential, Mode::kParallel}) {
    SessionOptions so;
    so.execution_mode = mode;
    auto session = rt->load(model, so);
    for (bool cond : {true, false}) {
      SCOPED_TRACE(std::string(mode == Mode::kSequential ? "sequential" : "parallel") + (cond ? " then" : " else"));
      Tensor c(DType::kBool, {});
      *c.data_as<uint8_t>() = cond;
      const std::vector<NamedTensor> in = {{"x", floats({2, 3}, -2.5f, 1.0f)}, {"c", c}};
      std::vector<NodeOutputs> seen;
      auto out = session->run(in, [&](const NodeOutputs& n) { seen.push_back(n); });
      ASSERT_EQ(seen.size(), 2u) << "relu and branch only, not then_add / else_neg";
      EXPECT_EQ(seen[0].node, "relu");
      EXPECT_EQ(seen[1].node, "branch");
      EXPECT_EQ(seen[1].op, "If");
      ASSERT_EQ(seen[1].outputs.size(), 1u);
      EXPECT_EQ(seen[1].outputs[0].name, "y");
      EXPECT_TRUE(same_tensor(seen[1].outputs[0].tensor, out[0].tensor));
      const float first = cond ? 0.f : 2.5f;  // then: Relu(-2.5) * 2, else: -(-2.5)
      EXPECT_EQ(out[0].tensor.data_as<float>()[0], first);
    }
  }
}

TEST(NodeObserver, ExceptionFailsTheRunNamingTheNode) {
  TempDir tmp;
  auto rt = runtime();
  const fs::path model = diamond_model(tmp.path());
  const std::vector<NamedTensor> in = {{"x", floats({2, 3}, -2.5f, 1.0f)}};
  for (Mode mode : {Mode::kSequential, Mode::kParallel}) {
    SCOPED_TRACE(mode == Mode::kSequential ? "sequential" : "parallel");
    SessionOptions so;
    so.execution_mode = mode;
    auto session = rt->load(model, so);
    const auto ref = session->run(in);

    // Another std::exception: Error(kAborted) naming the node and saying what it threw; no later call.
    int calls = 0;
    std::string first;
    try {
      session->run(in, [&](const NodeOutputs& n) {
        ++calls;
        first = n.node;
        throw std::runtime_error("stop at " + n.node);
      });
      ADD_FAILURE() << "the run did not fail";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Code::kAborted);
      EXPECT_CONTAINS(e.what(), "node '" + first + "'");
      EXPECT_CONTAINS(e.what(), "the node observer threw: stop at " + first);
    }
    EXPECT_EQ(calls, 1) << "no call after the observer threw";

    // An ophost::Error propagates as it is.
    try {
      session->run(in, [&](const NodeOutputs& n) {
        if (n.node == "add") throw Error(Code::kNotFound, "observer: no such thing");
      });
      ADD_FAILURE() << "the run did not fail";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Code::kNotFound);
      EXPECT_STREQ(e.what(), "observer: no such thing");
    }

    // Something that is not a std::exception.
    try {
      session->run(in, [&](const NodeOutputs&) { throw 42; });
      ADD_FAILURE() << "the run did not fail";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Code::kAborted);
      EXPECT_CONTAINS(e.what(), "not a std::exception");
    }

    // The session runs on as before.
    EXPECT_TRUE(same_tensor(session->run(in)[0].tensor, ref[0].tensor));
  }
}

// The C++ observer copies every host dtype with a fixed size, bfloat16 included (Python lists it as skipped).
TEST(NodeObserver, CopiesBFloat16Outputs) {
  TempDir tmp;
  ModelBuilder b;
  b.input("x", {4}).output("y", {4});
  ModelBuilder::attr_int(b.node("Cast", {"x"}, {"h"}, "to_bf16"), "to", onnx::TensorProto::BFLOAT16);
  ModelBuilder::attr_int(b.node("Cast", {"h"}, {"y"}, "to_f32"), "to", onnx::TensorProto::FLOAT);
  SessionOptions so;
  so.opt_level = 0;  // keep the casts
  auto rt = runtime();
  auto session = rt->load(b.save(tmp / "bf16.onnx"), so);
  Tensor x(DType::kFloat32, {4});
  const float xs[] = {1.f, 2.5f, -3.f, 4.f};
  std::copy(std::begin(xs), std::end(xs), x.data_as<float>());
  std::vector<NodeOutputs> seen;
  session->run({{"x", x}}, [&](const NodeOutputs& n) { seen.push_back(n); });
  ASSERT_EQ(seen.size(), 2u);
  ASSERT_EQ(seen[0].outputs.size(), 1u);
  EXPECT_TRUE(seen[0].skipped.empty());
  const Tensor& h = seen[0].outputs[0].tensor;
  ASSERT_EQ(h.dtype(), DType::kBFloat16);
  EXPECT_EQ(std::vector<uint16_t>(h.data_as<uint16_t>(), h.data_as<uint16_t>() + 4),
            (std::vector<uint16_t>{0x3F80, 0x4020, 0xC040, 0x4080}));
}

// Values nchwc-layout keeps channel-blocked are not NCHW bytes: reported as skipped, saying how to see them.
TEST(NodeObserver, ChannelBlockedValuesAreSkippedWithTheReason) {
  const fs::path model = fs::path(OPHOST_ONNX_CORE_CASES) / "nchwc_conv_chain.onnx";
  const std::vector<NamedTensor> in = {{"X", read_npy(fs::path(OPHOST_ONNX_CORE_CASES) / "nchwc_conv_chain.in.X.npy")}};
  auto rt = runtime();
  auto blocked = rt->load(model);
  SessionOptions plain;
  plain.disabled_passes = {"nchwc-layout"};
  auto unblocked = rt->load(model, plain);
  auto ops = [](const Session& s) {
    std::vector<std::string> o;
    for (const KernelInfo& k : s.kernels()) o.push_back(k.op);
    return o;
  };
  // nchwc-layout turns its MaxPool into com.ophost::BlockedMaxPool where a pack runs blocked layouts.
  if (ops(*blocked) == ops(*unblocked)) GTEST_SKIP() << "no pack here runs channel-blocked layouts";
  std::vector<NodeOutputs> seen;
  auto out = blocked->run(in, [&](const NodeOutputs& n) { seen.push_back(n); });
  size_t skipped = 0;
  for (const NodeOutputs& n : seen) {
    for (const std::string& why : n.skipped) {
      ++skipped;
      EXPECT_CONTAINS(why, "kept channel-blocked by the nchwc-layout pass");
    }
  }
  EXPECT_GT(skipped, 0u);
  EXPECT_TRUE(same_tensor(seen.back().outputs.at(0).tensor, out[0].tensor)) << "graph outputs are plain";

  seen.clear();
  auto out_plain = unblocked->run(in, [&](const NodeOutputs& n) { seen.push_back(n); });
  for (const NodeOutputs& n : seen) EXPECT_TRUE(n.skipped.empty()) << n.node;
  ASSERT_EQ(out_plain.size(), 1u);
}

TEST(NodeObserver, PlainRunsAreUnaffected) {
  auto rt = runtime();
  auto session = rt->load(kExamples / "mixed_small.onnx");
  const std::vector<NamedTensor> in = {{"x", read_npy(kExamples / "mixed_small.input.x.npy")}};
  const Tensor want = read_npy(kExamples / "mixed_small.output.y.npy");
  std::vector<NamedTensor> out;
  session->run(in, out);
  const Tensor plain = out[0].tensor.clone();
  for (int64_t i = 0; i < want.numel(); ++i)
    EXPECT_NEAR(plain.data_as<float>()[i], want.data_as<float>()[i], 1e-5f) << "element " << i;

  size_t calls = 0;
  EXPECT_TRUE(same_tensor(session->run(in, [&](const NodeOutputs&) { ++calls; })[0].tensor, plain));
  EXPECT_EQ(calls, session->node_count());
  EXPECT_TRUE(same_tensor(session->run(in, NodeObserver{})[0].tensor, plain)) << "an empty observer: a plain run";

  // Plain runs after observed ones: still a steady state that allocates nothing.
  session->run(in, out);
  const MemoryStats before = session->memory_stats();
  for (int i = 0; i < 5; ++i) session->run(in, out);
  const MemoryStats after = session->memory_stats();
  EXPECT_EQ(after.allocs_this_run, 0);
  EXPECT_EQ(after.num_allocs, before.num_allocs);
  EXPECT_TRUE(same_tensor(out[0].tensor, plain));
}

}  // namespace
}  // namespace ophost::itest
