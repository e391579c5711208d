// If, Loop and Scan run by the host: bodies reading values of the enclosing graph, shapes that differ between
// branches or iterations, passes that rename a captured value, iteration caps and load-time errors. Models are
// built here with the ONNX protobuf classes; expected values are computed by the test itself.
#include "integration_support.hpp"

#include <ophost/runtime.hpp>

#include <cmath>
#include <numeric>

namespace ophost::itest {
namespace {

using onnx::AttributeProto;
using onnx::TensorProto;

void set_type(onnx::ValueInfoProto* vi, const std::string& name, int32_t elem, const std::vector<int64_t>* shape) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  if (!shape) return;
  auto* sh = tt->mutable_shape();
  for (int64_t d : *shape) sh->add_dim()->set_dim_value(d);
}

// A subgraph built node by node (inputs and outputs typed, shapes optional).
struct Graph {
  onnx::GraphProto g;
  explicit Graph(const std::string& name) { g.set_name(name); }
  Graph& input(const std::string& name, int32_t elem, std::optional<std::vector<int64_t>> shape = std::nullopt) {
    set_type(g.add_input(), name, elem, shape ? &*shape : nullptr);
    return *this;
  }
  Graph& output(const std::string& name, int32_t elem, std::optional<std::vector<int64_t>> shape = std::nullopt) {
    set_type(g.add_output(), name, elem, shape ? &*shape : nullptr);
    return *this;
  }
  onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& ins,
                        const std::vector<std::string>& outs) {
    auto* n = g.add_node();
    n->set_op_type(op);
    n->set_name(op + "_" + std::to_string(g.node_size()));
    for (const auto& i : ins) n->add_input(i);
    for (const auto& o : outs) n->add_output(o);
    return n;
  }
  // A float or int64 constant node.
  void constant(const std::string& out, const std::vector<int64_t>& dims, const std::vector<float>& values) {
    auto* a = node("Constant", {}, {out})->add_attribute();
    a->set_name("value");
    a->set_type(AttributeProto::TENSOR);
    auto* t = a->mutable_t();
    t->set_data_type(TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
  }
  void constant_i64(const std::string& out, int64_t v) {
    auto* a = node("Constant", {}, {out})->add_attribute();
    a->set_name("value");
    a->set_type(AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(TensorProto::INT64);
    a->mutable_t()->add_int64_data(v);
  }
};

void attr_graph(onnx::NodeProto* n, const std::string& name, const Graph& body) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(AttributeProto::GRAPH);
  *a->mutable_g() = body.g;
}

void attr_ints(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

Tensor floats(std::vector<int64_t> shape, std::vector<float> v) {
  Tensor t(DType::kFloat32, std::move(shape));
  std::copy(v.begin(), v.end(), t.data_as<float>());
  return t;
}

Tensor scalar_bool(bool b) {
  Tensor t(DType::kBool, {});
  *t.data_as<uint8_t>() = b;
  return t;
}

Tensor scalar_i64(int64_t v) {
  Tensor t(DType::kInt64, {});
  *t.data_as<int64_t>() = v;
  return t;
}

std::vector<float> values(const Tensor& t) {
  return std::vector<float>(t.data_as<float>(), t.data_as<float>() + t.numel());
}

std::vector<int64_t> dims(const Tensor& t) { return {t.shape().begin(), t.shape().end()}; }

// x f32[2,3], c bool[] -> a = Relu(x) -> If(c): then a + w (w an initializer of the outer graph), else Neg(x)
// (reads x, a graph input of the outer graph) -> y.
ModelBuilder if_model() {
  ModelBuilder b;
  b.input("x", {2, 3}).input("c", {}, TensorProto::BOOL).output("y", {2, 3});
  auto* w = b.m.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(TensorProto::FLOAT);
  w->add_dims(3);
  for (float v : {10.f, 20.f, 30.f}) w->add_float_data(v);
  b.node("Relu", {"x"}, {"a"}, "relu");
  Graph then_g("then");
  then_g.output("t", TensorProto::FLOAT);
  then_g.node("Add", {"a", "w"}, {"t"});
  Graph else_g("else");
  else_g.output("e", TensorProto::FLOAT);
  else_g.node("Neg", {"x"}, {"e"});
  auto* n = b.node("If", {"c"}, {"y"}, "branch");
  attr_graph(n, "then_branch", then_g);
  attr_graph(n, "else_branch", else_g);
  return b;
}

TEST(ControlFlow, IfRunsTheChosenBranchWithOuterValues) {
  TempDir dir;
  auto rt = build_tree_runtime();
  auto session = rt->load(if_model().save(dir / "if.onnx"));
  const std::vector<float> x = {-1, 2, -3, 4, -5, 6};
  for (bool c : {true, false}) {
    std::vector<NamedTensor> out;
    session->run({{"x", floats({2, 3}, x)}, {"c", scalar_bool(c)}}, out);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(dims(out[0].tensor), (std::vector<int64_t>{2, 3}));
    std::vector<float> want;
    for (size_t i = 0; i < x.size(); ++i)
      want.push_back(c ? std::max(x[i], 0.f) + 10.f * static_cast<float>(i % 3 + 1) : -x[i]);
    EXPECT_EQ(values(out[0].tensor), want) << "cond " << c;
  }
}

TEST(ControlFlow, IfBranchesOfDifferentShapes) {
  // then: x unchanged [2,3]; else: ReduceSum over all axes -> [1,1]: the output shape is known only per run.
  ModelBuilder b;
  b.input("x", {2, 3}).input("c", {}, TensorProto::BOOL);
  auto* out = b.m.mutable_graph()->add_output();
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(TensorProto::FLOAT);
  Graph then_g("then");
  then_g.output("t", TensorProto::FLOAT);
  then_g.node("Relu", {"x"}, {"t"});
  Graph else_g("else");
  else_g.output("e", TensorProto::FLOAT);
  else_g.node("ReduceSum", {"x"}, {"e"});
  auto* n = b.node("If", {"c"}, {"y"}, "branch");
  attr_graph(n, "then_branch", then_g);
  attr_graph(n, "else_branch", else_g);
  TempDir dir;
  auto rt = build_tree_runtime();
  auto session = rt->load(b.save(dir / "if_shapes.onnx"));
  std::vector<NamedTensor> o;
  session->run({{"x", floats({2, 3}, {1, 2, 3, 4, 5, 6})}, {"c", scalar_bool(false)}}, o);
  EXPECT_EQ(dims(o[0].tensor), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(values(o[0].tensor), std::vector<float>{21});
  session->run({{"x", floats({2, 3}, {1, 2, 3, 4, 5, 6})}, {"c", scalar_bool(true)}}, o);
  EXPECT_EQ(dims(o[0].tensor), (std::vector<int64_t>{2, 3}));
}

TEST(ControlFlow, CapturedValueRenamedByIdentityEliminationStillBinds) {
  // x -> Identity -> xi; the branch reads xi. Identity elimination rewires the If's implicit input to x; the
  // body must still receive it (bodies bind captured values by position).
  ModelBuilder b;
  b.input("x", {3}).input("c", {}, TensorProto::BOOL).output("y", {3});
  b.node("Identity", {"x"}, {"xi"}, "id");
  Graph then_g("then");
  then_g.output("t", TensorProto::FLOAT);
  then_g.node("Add", {"xi", "xi"}, {"t"});
  Graph else_g("else");
  else_g.output("e", TensorProto::FLOAT);
  else_g.node("Mul", {"xi", "xi"}, {"e"});
  auto* n = b.node("If", {"c"}, {"y"}, "branch");
  attr_graph(n, "then_branch", then_g);
  attr_graph(n, "else_branch", else_g);
  TempDir dir;
  auto rt = build_tree_runtime();
  for (int level : {0, 3}) {
    SessionOptions so;
    so.opt_level = level;
    auto session = rt->load(b.save(dir / "if_identity.onnx"), so);
    std::vector<NamedTensor> o;
    session->run({{"x", floats({3}, {1, 2, 3})}, {"c", scalar_bool(false)}}, o);
    EXPECT_EQ(values(o[0].tensor), (std::vector<float>{1, 4, 9})) << "opt level " << level;
  }
}

// Loop: M trip count input, cond input; carried s (f32[3]) += x (outer) * (i+1); scan output = s after each
// iteration; body cond output = i < stop_at (a Less on an outer int64 value).
ModelBuilder loop_model(bool with_cond_from_body) {
  ModelBuilder b;
  b.input("x", {3}).input("M", {}, TensorProto::INT64).input("s0", {3}).input("stop", {}, TensorProto::INT64);
  b.output("s", {3});
  auto* so = b.m.mutable_graph()->add_output();
  so->set_name("steps");
  so->mutable_type()->mutable_tensor_type()->set_elem_type(TensorProto::FLOAT);
  Graph body("body");
  body.input("i", TensorProto::INT64, std::vector<int64_t>{}).input("cond_in", TensorProto::BOOL);
  body.input("s_in", TensorProto::FLOAT);
  body.output("cond_out", TensorProto::BOOL).output("s_out", TensorProto::FLOAT).output("step", TensorProto::FLOAT);
  body.constant_i64("one", 1);
  body.node("Add", {"i", "one"}, {"i1"});
  body.node("Cast", {"i1"}, {"i1f"})->add_attribute()->CopyFrom([] {
    AttributeProto a;
    a.set_name("to");
    a.set_type(AttributeProto::INT);
    a.set_i(TensorProto::FLOAT);
    return a;
  }());
  body.node("Mul", {"x", "i1f"}, {"xi"});
  body.node("Add", {"s_in", "xi"}, {"s_out"});
  body.node("Identity", {"s_out"}, {"step"});
  if (with_cond_from_body) body.node("Less", {"i1", "stop"}, {"cond_out"});
  else body.node("Identity", {"cond_in"}, {"cond_out"});
  auto* n = b.node("Loop", {"M", "", "s0"}, {"s", "steps"}, "loop");
  attr_graph(n, "body", body);
  return b;
}

TEST(ControlFlow, LoopCarriesValuesAndStacksScanOutputs) {
  TempDir dir;
  auto rt = build_tree_runtime();
  auto session = rt->load(loop_model(true).save(dir / "loop.onnx"));
  const std::vector<float> x = {1, 2, 3};
  struct Case {
    int64_t m, stop, iterations;
  };
  for (Case c : {Case{5, 100, 5}, Case{5, 3, 3}, Case{0, 100, 0}}) {
    std::vector<NamedTensor> o;
    session->run({{"x", floats({3}, x)}, {"M", scalar_i64(c.m)}, {"s0", floats({3}, {0, 0, 0})},
                  {"stop", scalar_i64(c.stop)}},
                 o);
    ASSERT_EQ(o.size(), 2u);
    // s = x * (1 + 2 + ... + n)
    const float tri = static_cast<float>(c.iterations * (c.iterations + 1) / 2);
    EXPECT_EQ(values(o[0].tensor), (std::vector<float>{x[0] * tri, x[1] * tri, x[2] * tri})) << "M " << c.m;
    EXPECT_EQ(dims(o[1].tensor), (std::vector<int64_t>{c.iterations, 3})) << "M " << c.m;
    if (c.iterations > 0) {
      const float two = 3;  // after 2 iterations: 1 + 2
      EXPECT_EQ(o[1].tensor.data_as<float>()[3 + 1], x[1] * two);
    }
  }
}

TEST(ControlFlow, LoopThatNeverEndsStopsAtTheIterationCap) {
  // No trip count given (M = ""), and a condition the body passes through unchanged: it never ends.
  ModelBuilder b = loop_model(false);
  auto* loop = b.m.mutable_graph()->mutable_node(0);
  loop->set_input(0, "");
  TempDir dir;
  auto rt = build_tree_runtime();
  SessionOptions so;
  so.max_loop_iterations = 1000;
  auto session = rt->load(b.save(dir / "forever.onnx"), so);
  std::vector<NamedTensor> o;
  try {
    session->run({{"x", floats({3}, {1, 2, 3})}, {"M", scalar_i64(1)}, {"s0", floats({3}, {0, 0, 0})},
                  {"stop", scalar_i64(1)}},
                 o);
    FAIL() << "expected the iteration cap";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kResourceExhausted);
    EXPECT_CONTAINS(e.what(), "node 'loop' (Loop");
    EXPECT_CONTAINS(e.what(), "1000 iterations");
    EXPECT_CONTAINS(e.what(), "--max-loop-iterations");
  }
}

TEST(ControlFlow, ScanReverseAlongAxisOne) {
  // Running sum over axis 1 of x f32[2,4], scanned in reverse: y[:, t] = sum(x[:, t:]) (output reversed back).
  ModelBuilder b({{"", 16}});
  b.input("x", {2, 4}).input("init", {2}).output("final", {2}).output("y", {2, 4});
  Graph body("body");
  body.input("acc", TensorProto::FLOAT).input("col", TensorProto::FLOAT);
  body.output("acc_out", TensorProto::FLOAT).output("y_t", TensorProto::FLOAT);
  body.node("Add", {"acc", "col"}, {"acc_out"});
  body.node("Identity", {"acc_out"}, {"y_t"});
  auto* n = b.node("Scan", {"init", "x"}, {"final", "y"}, "scan");
  attr_graph(n, "body", body);
  ModelBuilder::attr_int(n, "num_scan_inputs", 1);
  attr_ints(n, "scan_input_axes", {1});
  attr_ints(n, "scan_input_directions", {1});
  attr_ints(n, "scan_output_axes", {1});
  attr_ints(n, "scan_output_directions", {1});
  TempDir dir;
  auto rt = build_tree_runtime();
  auto session = rt->load(b.save(dir / "scan.onnx"));
  std::vector<NamedTensor> o;
  session->run({{"x", floats({2, 4}, {1, 2, 3, 4, 10, 20, 30, 40})}, {"init", floats({2}, {0, 0})}}, o);
  EXPECT_EQ(values(o[0].tensor), (std::vector<float>{10, 100}));
  EXPECT_EQ(dims(o[1].tensor), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(values(o[1].tensor), (std::vector<float>{10, 9, 7, 4, 100, 90, 70, 40}));
}

TEST(ControlFlow, ParallelModeAndProfilingRunTheBodies) {
  TempDir dir;
  auto rt = build_tree_runtime();
  SessionOptions so;
  so.execution_mode = SessionOptions::ExecutionMode::kParallel;
  so.profile = true;
  auto session = rt->load(if_model().save(dir / "if.onnx"), so);
  std::vector<NamedTensor> o;
  session->run({{"x", floats({2, 3}, {1, 2, 3, 4, 5, 6})}, {"c", scalar_bool(true)}}, o);
  EXPECT_EQ(values(o[0].tensor), (std::vector<float>{11, 22, 33, 14, 25, 36}));
  std::vector<KernelInfo> kernels = session->kernels();
  auto it = std::find_if(kernels.begin(), kernels.end(), [](const KernelInfo& k) { return k.node == "branch"; });
  ASSERT_NE(it, kernels.end());
  EXPECT_EQ(it->pack, "ophost (host)");
  EXPECT_CONTAINS(it->implementation, "then_branch 1 node");
}

TEST(ControlFlow, LoadErrorsNameTheNodeAndTheFix) {
  TempDir dir;
  auto rt = build_tree_runtime();
  {  // a branch reading a value defined nowhere
    ModelBuilder b = if_model();
    auto* then_g = b.m.mutable_graph()->mutable_node(1)->mutable_attribute(0)->mutable_g();
    then_g->mutable_node(0)->set_input(1, "nowhere");
    try {
      rt->load(b.save(dir / "undefined.onnx"));
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_CONTAINS(e.what(), "node 'branch' (If)");
      EXPECT_CONTAINS(e.what(), "its subgraph reads 'nowhere', which is not defined");
    }
  }
  {  // If without else_branch
    ModelBuilder b = if_model();
    b.m.mutable_graph()->mutable_node(1)->mutable_attribute()->RemoveLast();
    try {
      rt->load(b.save(dir / "no_else.onnx"));
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_CONTAINS(e.what(), "node 'branch' (If, opset 13) run by the host");
      EXPECT_CONTAINS(e.what(), "attribute 'else_branch' (a graph) is required");
    }
  }
  {  // a branch with the wrong number of outputs
    ModelBuilder b = if_model();
    auto* else_g = b.m.mutable_graph()->mutable_node(1)->mutable_attribute(1)->mutable_g();
    set_type(else_g->add_output(), "x", TensorProto::FLOAT, nullptr);
    try {
      rt->load(b.save(dir / "outputs.onnx"));
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_CONTAINS(e.what(), "else_branch gives 2 outputs but the node has 1 output");
    }
  }
  {  // a branch whose node fails: the message names the body and the node inside it
    ModelBuilder b = if_model();
    auto* then_g = b.m.mutable_graph()->mutable_node(1)->mutable_attribute(0)->mutable_g();
    then_g->mutable_node(0)->set_op_type("NoSuchOp");
    try {
      rt->load(b.save(dir / "bad_body.onnx"));
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_CONTAINS(e.what(), "node 'branch' (If, opset 13) run by the host: then_branch:");
      EXPECT_CONTAINS(e.what(), "NoSuchOp");
    }
  }
}

}  // namespace
}  // namespace ophost::itest
