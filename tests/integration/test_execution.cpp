// Execution core through the embedding API: static memory plan, zero allocations in a steady state, one
// session run from many threads, out-of-memory errors.
#include "integration_support.hpp"

#include <ophost/npy.hpp>

#include <ophost/runtime.hpp>

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <thread>

// Counts every operator new in this process (plugins included: they resolve operator new to this binary's).
// Not under AddressSanitizer, whose own operator new/delete must stay paired (the pool statistics still check
// the steady state there).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define OPHOST_COUNT_NEW 0
#else
#define OPHOST_COUNT_NEW 1
#endif
static std::atomic<int64_t> g_news{0};
#if OPHOST_COUNT_NEW
void* operator new(std::size_t n) {
  g_news.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
// The nothrow form too (devices/null uses it): otherwise it comes from the sanitizer runtime while the delete
// above frees it with free(), which ASan reports as alloc-dealloc-mismatch.
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  g_news.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n ? n : 1);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#endif

namespace ophost::itest {
namespace {

struct Example {
  std::unique_ptr<Runtime> runtime;
  std::unique_ptr<Session> session;
  std::vector<NamedTensor> inputs;
};

Example load_example(const std::string& name, SessionOptions options = {}) {
  Example e;
  RuntimeOptions ro;
  ro.use_env_plugin_path = false;
  ro.plugin_paths = {kPluginDir};
  ro.use_default_plugin_dir = false;
  e.runtime = std::make_unique<Runtime>(ro);
  e.session = e.runtime->load(kExamples / (name + ".onnx"), options);
  for (const ValueInfo& in : e.session->inputs())
    e.inputs.push_back({in.name, read_npy(kExamples / (name + ".input." + in.name + ".npy"))});
  return e;
}

TEST(Execution, StaticPlanWithinTenPercentOfLowerBound) {
  for (const char* name : {"mixed_small", "mixed_ir9", "relu6_defaults", "broadcast"}) {
    Example e = load_example(name);
    MemoryPlanReport p = e.session->memory_plan();
    ASSERT_TRUE(p.planned) << name;
    EXPECT_LE(static_cast<double>(p.arena_bytes), 1.10 * static_cast<double>(p.lower_bound)) << name;
    EXPECT_GE(p.arena_bytes, p.lower_bound) << name << ": a plan can never beat the lower bound";
  }
}

TEST(Execution, InPlaceChainNeedsOneBuffer) {
  // x -> Add(c) x 50: every Add may run in place, so the arena holds one [1,16] buffer.
  TempDir tmp;
  ModelBuilder b({{"", 13}});
  b.input("x", {1, 16}).output("y", {1, 16});
  auto* c = b.m.mutable_graph()->add_initializer();
  c->set_name("c");
  c->set_data_type(onnx::TensorProto::FLOAT);
  c->add_dims(1);
  c->add_dims(16);
  for (int i = 0; i < 16; ++i) c->add_float_data(1.0f);
  std::string prev = "x";
  for (int i = 0; i < 50; ++i) {
    std::string out = i == 49 ? "y" : "t" + std::to_string(i);
    b.node("Add", {prev, "c"}, {out}, "add" + std::to_string(i));
    prev = out;
  }
  fs::path model = b.save(tmp.path() / "chain.onnx");
  Runtime rt({{kPluginDir}, false, false});
  auto s = rt.load(model);
  MemoryPlanReport p = s->memory_plan();
  ASSERT_TRUE(p.planned);
  EXPECT_EQ(p.arena_bytes, 64u);
  EXPECT_EQ(p.inplace, 48u);
  // Which ones: t1..t48, each in the buffer of the value before it (t0 is written beside the graph input x,
  // y is the caller's tensor).
  ASSERT_EQ(p.inplace_values.size(), 48u);
  for (size_t i = 0; i < 48; ++i) {
    EXPECT_EQ(p.inplace_values[i].value, "t" + std::to_string(i + 1));
    EXPECT_EQ(p.inplace_values[i].input, "t" + std::to_string(i));
    EXPECT_EQ(p.inplace_values[i].node, "add" + std::to_string(i + 1));
    EXPECT_EQ(p.inplace_values[i].op, "Add");
  }
  Tensor x(DType::kFloat32, {1, 16});
  auto out = s->run({{"x", x}});
  for (int i = 0; i < 16; ++i) EXPECT_FLOAT_EQ(out[0].tensor.data_as<float>()[i], 50.0f);
}

TEST(Execution, SteadyStateRunAllocatesNothing) {
  Example e = load_example("mixed_small");
  std::vector<NamedTensor> outputs;
  e.session->run(e.inputs, outputs);  // first run: binds the arena, allocates the outputs
  e.session->run(e.inputs, outputs);
  MemoryStats before = e.session->memory_stats();
  int64_t news_before = g_news.load();
  for (int i = 0; i < 20; ++i) e.session->run(e.inputs, outputs);
  int64_t news = g_news.load() - news_before;
  MemoryStats after = e.session->memory_stats();
  EXPECT_EQ(after.allocs_this_run, 0);
  EXPECT_EQ(after.num_allocs, before.num_allocs) << "the pool served allocations in a steady state";
  EXPECT_EQ(after.num_reserves, 1);
  if (OPHOST_COUNT_NEW) EXPECT_EQ(news, 0) << "operator new was called during steady-state runs";
  Tensor ref = read_npy(kExamples / "mixed_small.output.y.npy");
  for (int64_t i = 0; i < ref.numel(); ++i)
    EXPECT_NEAR(outputs[0].tensor.data_as<float>()[i], ref.data_as<float>()[i], 1e-5);
}

TEST(Execution, OneSessionFromEightThreads) {
  Example e = load_example("broadcast");
  std::vector<NamedTensor> ref = e.session->run(e.inputs);
  std::atomic<int> mismatches{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      std::vector<NamedTensor> out;
      for (int i = 0; i < 50; ++i) {
        try {
          e.session->run(e.inputs, out);
        } catch (...) {
          ++errors;
          return;
        }
        for (size_t o = 0; o < out.size(); ++o) {
          if (std::memcmp(out[o].tensor.data(), ref[o].tensor.data(), ref[o].tensor.nbytes()) != 0) ++mismatches;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_LE(e.session->memory_stats().num_reserves, 8) << "at most one arena per concurrent run";
}

TEST(Execution, MemLimitGivesClearErrorAndSessionStaysUsable) {
  SessionOptions tiny;
  tiny.mem_limit = 16;  // below any arena
  Example e = load_example("mixed_small", tiny);  // its arena holds intermediate values (outputs do not count)
  try {
    e.session->run(e.inputs);
    FAIL() << "expected an out-of-memory error";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), Code::kResourceExhausted);
    std::string msg = err.what();
    EXPECT_CONTAINS(msg, "out of memory");
    EXPECT_CONTAINS(msg, "limit 16");
    EXPECT_CONTAINS(msg, "--mem-limit");
    EXPECT_CONTAINS(msg, "node '");
  }
  // The same session answers again with the same clear error (no crash, no corrupted state).
  EXPECT_THROW(e.session->run(e.inputs), Error);
  // And a session without the limit in the same runtime works.
  auto ok = e.runtime->load(kExamples / "mixed_small.onnx");
  EXPECT_NO_THROW(ok->run(e.inputs));
}


// Eight independent branches whose intermediate buffers the memory plan reuses across branches: parallel mode must
// order reuse after every reader (identical outputs run after run).
fs::path wide_model(const fs::path& dir) {
  ModelBuilder b({{"", 13}});
  b.input("x", {4, 64}).output("y", {4, 64});
  auto* c = b.m.mutable_graph()->add_initializer();
  c->set_name("c");
  c->set_data_type(onnx::TensorProto::FLOAT);
  c->add_dims(64);
  for (int i = 0; i < 64; ++i) c->add_float_data(0.01f * static_cast<float>(i));
  std::vector<std::string> ends;
  for (int br = 0; br < 8; ++br) {
    std::string p = "b" + std::to_string(br);
    b.node("Mul", {"x", "c"}, {p + "_m"}, p + "_mul");
    b.node("Add", {p + "_m", "x"}, {p + "_a"}, p + "_add");
    b.node("Relu", {p + "_a"}, {p + "_r"}, p + "_relu");
    b.node("Sub", {p + "_r", "c"}, {p + "_s"}, p + "_sub");
    b.node("Mul", {p + "_s", p + "_m"}, {p + "_e"}, p + "_mul2");
    ends.push_back(p + "_e");
  }
  std::string acc = ends[0];
  for (size_t i = 1; i < ends.size(); ++i) {
    std::string out = i + 1 == ends.size() ? "y" : "acc" + std::to_string(i);
    b.node("Add", {acc, ends[i]}, {out}, "sum" + std::to_string(i));
    acc = out;
  }
  return b.save(dir / "wide.onnx");
}

TEST(Execution, ParallelModeGivesIdenticalOutputs) {
  TempDir tmp;
  fs::path model = wide_model(tmp.path());
  Runtime rt({{kPluginDir}, false, false});
  auto seq = rt.load(model);
  SessionOptions par;
  par.execution_mode = SessionOptions::ExecutionMode::kParallel;
  par.inter_op_threads = 4;
  auto ps = rt.load(model, par);
  Tensor x(DType::kFloat32, {4, 64});
  for (int64_t i = 0; i < x.numel(); ++i) x.data_as<float>()[i] = 0.05f * static_cast<float>(i % 37) - 0.7f;
  auto ref = seq->run({{"x", x}});
  std::vector<NamedTensor> out;
  for (int i = 0; i < 300; ++i) {
    ps->run({{"x", x}}, out);
    ASSERT_EQ(std::memcmp(out[0].tensor.data(), ref[0].tensor.data(), ref[0].tensor.nbytes()), 0) << "run " << i;
  }
  // And from several callers at once.
  std::atomic<int> bad{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&] {
      std::vector<NamedTensor> o;
      for (int i = 0; i < 50; ++i) {
        ps->run({{"x", x}}, o);
        if (std::memcmp(o[0].tensor.data(), ref[0].tensor.data(), ref[0].tensor.nbytes()) != 0) ++bad;
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(bad.load(), 0);
  for (const char* name : {"mixed_small", "broadcast"}) {
    Example e = load_example(name);
    Example p = load_example(name, par);
    auto a = e.session->run(e.inputs);
    auto b = p.session->run(p.inputs);
    ASSERT_EQ(a.size(), b.size());
    for (size_t o = 0; o < a.size(); ++o)
      EXPECT_EQ(std::memcmp(a[o].tensor.data(), b[o].tensor.data(), a[o].tensor.nbytes()), 0) << name;
  }
}

// --profile records every node whatever the execution path: sequential, parallel (events from the workers) and
// the generic path of data-dependent shapes (NonZero's output is known only while running).
TEST(Execution, ProfileRecordsEveryNodeInEveryExecutionPath) {
  TempDir tmp;
  fs::path wide = wide_model(tmp.path());
  ModelBuilder nz({{"", 13}});
  nz.input("x", {4, 64}).output("y", {2}, onnx::TensorProto::INT64);
  nz.node("Relu", {"x"}, {"r"}, "relu");
  nz.node("NonZero", {"r"}, {"idx"}, "nonzero");
  nz.node("Shape", {"idx"}, {"y"}, "shape");
  fs::path dynamic = nz.save(tmp.path() / "nonzero.onnx");
  Tensor x(DType::kFloat32, {4, 64});
  for (int64_t i = 0; i < x.numel(); ++i) x.data_as<float>()[i] = 0.05f * static_cast<float>(i % 37) - 0.7f;

  Runtime rt({{kPluginDir}, false, false});
  struct Case {
    const char* what;
    fs::path model;
    SessionOptions::ExecutionMode mode;
  };
  for (const Case& c : {Case{"sequential", wide, SessionOptions::ExecutionMode::kSequential},
                        Case{"parallel", wide, SessionOptions::ExecutionMode::kParallel},
                        Case{"data-dependent shapes", dynamic, SessionOptions::ExecutionMode::kSequential}}) {
    SCOPED_TRACE(c.what);
    SessionOptions o;
    o.profile = true;
    o.execution_mode = c.mode;
    o.inter_op_threads = 3;
    o.opt_level = 0;  // keep Shape a node
    auto s = rt.load(c.model, o);
    const int runs = 3;
    for (int i = 0; i < runs; ++i) s->run({{"x", x}});
    std::vector<OpProfile> totals = s->write_profile(tmp.path() / "trace.json");
    int64_t calls = 0;
    for (const OpProfile& p : totals) calls += p.calls;
    EXPECT_EQ(calls, static_cast<int64_t>(s->node_count()) * runs);
  }
}

// The executor's per-node hooks in every run path: a NaN/inf check that names the node that wrote it (not the
// graph output it reaches), and the node lifecycle at debug log level.
namespace hooks {
// x f32[4] -> Sub(x, x) = 0 -> Reciprocal = +inf -> Relu -> y; `dynamic` adds NonZero(x) (a shape known only
// while running, so the run takes the generic path); `in_if` puts the chain inside an If's then_branch.
fs::path model(const fs::path& dir, const std::string& kind) {
  ModelBuilder b({{"", 13}});
  b.input("x", {4}).output("y", {4});
  if (kind == "if") {
    b.input("c", {}, onnx::TensorProto::BOOL);
    onnx::GraphProto then_g, else_g;
    then_g.set_name("then");
    else_g.set_name("else");
    auto add = [](onnx::GraphProto& g, const char* op, std::vector<std::string> in, const char* out, const char* name) {
      auto* n = g.add_node();
      n->set_op_type(op);
      n->set_name(name);
      for (auto& i : in) n->add_input(i);
      n->add_output(out);
    };
    add(then_g, "Sub", {"x", "x"}, "z", "sub");
    add(then_g, "Reciprocal", {"z"}, "r", "recip");
    add(then_g, "Relu", {"r"}, "t", "relu");
    then_g.add_output()->set_name("t");
    then_g.mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    add(else_g, "Identity", {"x"}, "e", "same");
    else_g.add_output()->set_name("e");
    else_g.mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    auto* n = b.node("If", {"c"}, {"y"}, "branch");
    for (auto [name, g] : {std::pair{"then_branch", &then_g}, std::pair{"else_branch", &else_g}}) {
      auto* a = n->add_attribute();
      a->set_name(name);
      a->set_type(onnx::AttributeProto::GRAPH);
      *a->mutable_g() = *g;
    }
    return b.save(dir / "hooks_if.onnx");
  }
  b.node("Sub", {"x", "x"}, {"z"}, "sub");
  b.node("Reciprocal", {"z"}, {"r"}, "recip");
  b.node("Relu", {"r"}, {"y"}, "relu");
  if (kind == "dynamic") {
    auto* o = b.m.mutable_graph()->add_output();
    o->set_name("nz");
    o->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
    b.node("NonZero", {"x"}, {"nz"}, "nonzero");
  }
  return b.save(dir / ("hooks_" + kind + ".onnx"));
}
}  // namespace hooks

TEST(Execution, HooksRunInEveryExecutionPath) {
  TempDir tmp;
  Runtime rt({{kPluginDir}, false, false});
  struct Case {
    const char* what;
    std::string kind;
    SessionOptions::ExecutionMode mode;
  };
  const auto seq = SessionOptions::ExecutionMode::kSequential, par = SessionOptions::ExecutionMode::kParallel;
  for (const Case& c : {Case{"sequential", "static", seq}, Case{"parallel", "static", par},
                        Case{"data-dependent shapes", "dynamic", seq}, Case{"If body", "if", seq},
                        Case{"If body, parallel", "if", par}}) {
    SCOPED_TRACE(c.what);
    fs::path file = hooks::model(tmp.path(), c.kind);
    std::vector<NamedTensor> in = {{"x", Tensor(DType::kFloat32, {4})}};
    for (int i = 0; i < 4; ++i) in[0].tensor.data_as<float>()[i] = static_cast<float>(i + 1);
    if (c.kind == "if") {
      Tensor cond(DType::kBool, {});
      *cond.data_as<uint8_t>() = 1;
      in.push_back({"c", cond});
    }
    SessionOptions o;
    o.execution_mode = c.mode;
    o.check_numerics = true;
    auto s = rt.load(file, o);
    std::string err;
    try {
      s->run(in);
    } catch (const Error& e) {
      err = e.what();
    }
    EXPECT_CONTAINS(err, "check-numerics: ");
    EXPECT_CONTAINS(err, "node 'recip' (Reciprocal, opset 13) from pack 'onnx-core'");
    EXPECT_CONTAINS(err, "output 'r' holds +inf at [0] (element 0 of 4, float32 [4])");

    // Lifecycle checks at debug level: every node goes Running -> Finished, values are Released.
    o.check_numerics = false;
    auto quiet = rt.load(file, o);
    auto logger = spdlog::default_logger();
    auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(4096);
    logger->sinks().push_back(sink);
    const auto level = logger->level();
    logger->set_level(spdlog::level::debug);
    quiet->run(in);
    logger->set_level(level);
    logger->sinks().pop_back();
    int finished = 0, released = 0;
    for (const std::string& line : sink->last_formatted()) {
      finished += line.find("Running -> Finished") != std::string::npos;
      released += line.find("Released after node") != std::string::npos;
    }
    const int nodes = c.kind == "if" ? 1 + 3 : c.kind == "dynamic" ? 4 : 3;  // If: the node and its branch's 3
    EXPECT_EQ(finished, nodes);
    EXPECT_GE(released, 2);  // z and r
  }
}

// Shapes known only while running (NonZero): intermediate values take blocks of the session pool's size classes
// and give them back when released, so once the shapes repeat a run asks the system only for the output it hands
// to the caller.
TEST(Execution, DataDependentShapesReuseThePoolsCachedBlocks) {
  TempDir tmp;
  ModelBuilder b({{"", 13}});
  b.input("x", {4, 64}).output("y", {2}, onnx::TensorProto::INT64);
  b.node("Relu", {"x"}, {"r"}, "relu");
  b.node("NonZero", {"r"}, {"idx"}, "nonzero");
  b.node("Transpose", {"idx"}, {"t"}, "transpose");
  b.node("Shape", {"t"}, {"y"}, "shape");
  fs::path model = b.save(tmp.path() / "nonzero_chain.onnx");
  Runtime rt({{kPluginDir}, false, false});
  SessionOptions o;
  o.opt_level = 0;
  auto s = rt.load(model, o);
  EXPECT_FALSE(s->memory_plan().planned);
  Tensor x(DType::kFloat32, {4, 64});
  int64_t positive = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    x.data_as<float>()[i] = (i % 3 == 0) ? 1.0f : -1.0f;
    positive += i % 3 == 0;
  }
  std::vector<NamedTensor> out;
  s->run({{"x", x}}, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].tensor.data_as<int64_t>()[0], positive);
  EXPECT_EQ(out[0].tensor.data_as<int64_t>()[1], 2);
  MemoryStats first = s->memory_stats();
  EXPECT_EQ(first.bytes_in_use, 0) << "every intermediate goes back to the pool after the run";
  for (int i = 0; i < 5; ++i) {
    s->run({{"x", x}}, out);
    MemoryStats st = s->memory_stats();
    EXPECT_EQ(st.total_allocated_bytes, first.total_allocated_bytes) << "run " << i << ": the cache serves it";
    EXPECT_EQ(st.num_allocs, first.num_allocs + 3 * (i + 1)) << "relu, nonzero and transpose outputs";
    EXPECT_EQ(st.bytes_in_use, 0);
    EXPECT_EQ(st.allocs_this_run, 1) << "only the graph output the caller keeps";
  }
  EXPECT_EQ(out[0].tensor.data_as<int64_t>()[0], positive);
}

TEST(Execution, ParallelModeReportsKernelErrors) {
  // Integer division by zero inside one branch: the error names the node; the session stays usable.
  TempDir tmp;
  ModelBuilder b({{"", 13}});
  b.input("a", {4}, onnx::TensorProto::INT64).input("d", {4}, onnx::TensorProto::INT64);
  b.output("q", {4}, onnx::TensorProto::INT64).output("s", {4}, onnx::TensorProto::INT64);
  b.node("Div", {"a", "d"}, {"q"}, "the_div");
  b.node("Add", {"a", "d"}, {"s"}, "the_add");
  fs::path model = b.save(tmp.path() / "div.onnx");
  Runtime rt({{kPluginDir}, false, false});
  SessionOptions par;
  par.execution_mode = SessionOptions::ExecutionMode::kParallel;
  par.inter_op_threads = 3;
  auto s = rt.load(model, par);
  Tensor a(DType::kInt64, {4}), zero(DType::kInt64, {4}), one(DType::kInt64, {4});
  for (int i = 0; i < 4; ++i) {
    a.data_as<int64_t>()[i] = 10 + i;
    one.data_as<int64_t>()[i] = 1;
  }
  try {
    s->run({{"a", a}, {"d", zero}});
    FAIL() << "expected a division-by-zero error";
  } catch (const Error& e) {
    EXPECT_CONTAINS(std::string(e.what()), "the_div");
    EXPECT_CONTAINS(std::string(e.what()), "division by zero");
  }
  auto ok = s->run({{"a", a}, {"d", one}});
  EXPECT_EQ(ok[0].tensor.data_as<int64_t>()[3], 13);
}


TEST(Execution, TwoRuntimesShareLoadedPacks) {
  // Both runtimes dlopen the same libraries (one image, shared statics): releasing one must not pull the packs
  // out from under the other.
  auto first = std::make_unique<Example>(load_example("mixed_small"));
  Example second = load_example("mixed_small");
  auto ref = first->session->run(first->inputs);
  first.reset();
  auto again = second.session->run(second.inputs);
  ASSERT_EQ(again.size(), ref.size());
  EXPECT_EQ(std::memcmp(again[0].tensor.data(), ref[0].tensor.data(), ref[0].tensor.nbytes()), 0);
  Example third = load_example("mixed_small");  // loading again after a release works too
  EXPECT_NO_THROW(third.session->run(third.inputs));
}


TEST(Execution, MemPoolSizeReservesAheadAndArenasReuseIt) {
  SessionOptions o;
  o.mem_pool_size = 1 << 20;
  Example e = load_example("mixed_small", o);
  e.session->run(e.inputs);
  e.session->run(e.inputs);
  MemoryStats st = e.session->memory_stats();
  EXPECT_EQ(st.num_reserves, 1) << "the static arena must come out of the block reserved ahead";
  EXPECT_EQ(st.total_allocated_bytes, 1 << 20);
  EXPECT_GT(st.max_bytes_in_use, 0);
}

}  // namespace
}  // namespace ophost::itest
