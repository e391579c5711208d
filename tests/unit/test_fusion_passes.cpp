// The fusion rewrites for chains exporters write out: layer-norm-fusion (ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/
// Div/Mul/Add -> com.ophost::LayerNormalization) and conv-activation-fusion's SiLU (Conv -> Mul(c, Sigmoid(c))
// -> FusedConv Swish): the pattern fused, each variant that does not compute the same thing left alone. The
// numbers of the fused graphs are checked against numpy in tests/data/onnx_core (fusion_cases.py) and against
// the unfused graph in tests/integration/test_fusion_numerics.cpp.
#include "passes/passes.hpp"
#include "unit/pass_test_util.hpp"

#include <gtest/gtest.h>

#include <set>

namespace ophost {
namespace {

using namespace pass_test;

// ----- layer-norm-fusion -----

struct LnVariant {
  int64_t opset = 14;
  std::vector<int64_t> x_shape = {2, 3, 8};
  std::vector<int64_t> axes = {-1};
  float exponent = 2.0f;
  std::vector<int64_t> gamma_shape = {8};
  bool gamma_input = false;   // gamma a graph input, not a constant
  bool affine = true;         // Mul gamma, Add beta after the Div
  std::string extra_output;   // an intermediate that is also a graph output
  std::string extra_reader;   // an intermediate that another node reads too
};

Attribute iattrs(const std::string& name, std::vector<int64_t> v) {
  Attribute a;
  a.name = name;
  a.type = OPH_ATTR_INTS;
  a.ints = std::move(v);
  return a;
}

// x -> ReduceMean -> mean; d = x - mean; p = d^e; var = ReduceMean(p); s = Sqrt(var + eps); n = d / s;
// y = n * gamma + beta (gamma and beta in the second operand slot of Mul, the first of Add).
Model ln_model(const LnVariant& v) {
  Model m = base_model(v.opset);
  m.inputs = {vinfo("x", v.x_shape)};
  m.outputs = {vinfo("y")};
  std::mt19937 rng(5);
  m.initializers.emplace_back("two", ftensor({}, {v.exponent}));
  m.initializers.emplace_back("eps", ftensor({1}, {1e-5f}));
  if (v.gamma_input) m.inputs.push_back(vinfo("gamma", v.gamma_shape));
  else m.initializers.emplace_back("gamma", random_tensor(v.gamma_shape, rng));
  m.initializers.emplace_back("beta", random_tensor(v.gamma_shape, rng));
  auto reduce = [&](const std::string& in, const std::string& out) {
    Node n = node("ReduceMean", {in}, {out});
    if (v.opset >= 18) n.inputs.push_back("axes");
    else n.attributes.push_back(iattrs("axes", v.axes));
    return n;
  };
  if (v.opset >= 18) m.initializers.emplace_back("axes", itensor(v.axes));
  m.nodes = {reduce("x", "mean"),
             node("Sub", {"x", "mean"}, {"d"}),
             node("Pow", {"d", "two"}, {"p"}),
             reduce("p", "var"),
             node("Add", {"var", "eps"}, {"ve"}),
             node("Sqrt", {"ve"}, {"s"}),
             node("Div", {"d", "s"}, {v.affine ? "n" : "y"})};
  if (v.affine) m.nodes.push_back(node("Mul", {"n", "gamma"}, {"g"}));
  if (v.affine) m.nodes.push_back(node("Add", {"beta", "g"}, {"y"}));
  if (!v.extra_output.empty()) m.outputs.push_back(vinfo(v.extra_output));
  if (!v.extra_reader.empty()) {
    m.nodes.push_back(node("Neg", {v.extra_reader}, {"other"}));
    m.outputs.push_back(vinfo("other"));
  }
  return m;
}

// A pack serves the fused op (or not); x's shape as inference gives it.
PassHooks ln_hooks(const LnVariant& v, bool served = true, std::vector<std::string>* asked = nullptr) {
  PassHooks h = fusing_hooks(served, asked);
  h.infer_shapes = [v](const Model&) { return std::map<std::string, InferredValue>{{"x", f32_shape(v.x_shape)}}; };
  return h;
}

const Node& only_node(const Model& m) {
  EXPECT_EQ(m.nodes.size(), 1u) << ::testing::PrintToString(op_types(m));
  return m.nodes.at(0);
}

TEST(LayerNormFusion, TheWrittenOutChainBecomesOneNodeWithLayerNormalization17sAttributes) {
  LnVariant v;
  Model m = ln_model(v);
  std::vector<std::string> asked;
  PassResult r = fuse_layer_norm(m, ln_hooks(v, true, &asked));
  EXPECT_EQ(r.changed, 1u) << r.message;
  EXPECT_EQ(r.message, "1 LayerNormalization chains fused");
  const Node& f = only_node(m);
  EXPECT_EQ(f.domain, kFusedDomain);
  EXPECT_EQ(f.op_type, kLayerNormalization);
  EXPECT_EQ(f.inputs, (std::vector<std::string>{"x", "gamma", "beta"}));
  EXPECT_EQ(f.outputs, (std::vector<std::string>{"y"}));
  ASSERT_NE(attr_of(f, "axis"), nullptr);
  EXPECT_EQ(attr_of(f, "axis")->i, -1);
  ASSERT_NE(attr_of(f, "epsilon"), nullptr);
  EXPECT_FLOAT_EQ(attr_of(f, "epsilon")->f, 1e-5f);
  EXPECT_EQ(m.opset_imports.at(kFusedDomain), 1);
  // The hook was asked about the fused op and all nine nodes.
  EXPECT_EQ(asked, (std::vector<std::string>{"LayerNormalization", "ReduceMean", "Sub", "Pow", "ReduceMean", "Add",
                                             "Sqrt", "Div", "Mul", "Add"}));
}

TEST(LayerNormFusion, AxesAsAnInputFromOpset18AndSeveralTrailingAxes) {
  LnVariant v;
  v.opset = 18;
  v.axes = {2, 1};  // positive, unsorted: dims 1 and 2 of a rank-3 x, the trailing two
  v.gamma_shape = {1, 3, 8};
  Model m = ln_model(v);
  EXPECT_EQ(fuse_layer_norm(m, ln_hooks(v)).changed, 1u);
  const Node& f = only_node(m);
  EXPECT_EQ(attr_of(f, "axis")->i, -2);
  EXPECT_EQ(f.inputs[1], "gamma");
}

TEST(LayerNormFusion, WithoutMulAndAddScaleIsAConstantOne) {
  LnVariant v;
  v.affine = false;
  Model m = ln_model(v);
  EXPECT_EQ(fuse_layer_norm(m, ln_hooks(v)).changed, 1u);
  const Node& f = only_node(m);
  ASSERT_EQ(f.inputs.size(), 2u);  // X, Scale; no B
  const Tensor* one = init(m, f.inputs[1]);
  ASSERT_NE(one, nullptr);
  ASSERT_EQ(one->numel(), 1);
  EXPECT_EQ(one->data_as<float>()[0], 1.0f);
  EXPECT_EQ(f.outputs[0], "y");
}

TEST(LayerNormFusion, VariantsThatAreNotALayerNormalizationAreLeftAlone) {
  struct Case {
    const char* what;
    LnVariant v;
  };
  std::vector<Case> cases;
  auto add = [&](const char* what, auto edit) {
    LnVariant v;
    edit(v);
    cases.push_back({what, v});
  };
  add("d = x - mean read by another node too", [](LnVariant& v) { v.extra_reader = "d"; });
  add("mean read by another node too", [](LnVariant& v) { v.extra_reader = "mean"; });
  add("the variance a graph output", [](LnVariant& v) { v.extra_output = "var"; });
  add("gamma not a constant", [](LnVariant& v) { v.gamma_input = true; });
  add("axis 1 of 3 (not the trailing dims)", [](LnVariant& v) { v.axes = {1}; v.gamma_shape = {3, 1}; });
  add("axes 0 and 2 (not contiguous)", [](LnVariant& v) { v.axes = {0, 2}; v.gamma_shape = {8}; });
  add("exponent 3", [](LnVariant& v) { v.exponent = 3.0f; });
  add("gamma over the outer dims too", [](LnVariant& v) { v.gamma_shape = {2, 1, 8}; });
  add("gamma of another length", [](LnVariant& v) { v.gamma_shape = {4}; });
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Model m = ln_model(c.v);
    const size_t before = m.nodes.size();
    PassResult r = fuse_layer_norm(m, ln_hooks(c.v));
    EXPECT_EQ(r.changed, 0u) << r.message;
    EXPECT_EQ(m.nodes.size(), before);
    EXPECT_EQ(m.opset_imports.count(kFusedDomain), 0u);
  }
}

TEST(LayerNormFusion, TheNormalizedValueAGraphOutputEndsTheChainBeforeTheScale) {
  LnVariant v;
  v.extra_output = "n";
  Model m = ln_model(v);
  EXPECT_EQ(fuse_layer_norm(m, ln_hooks(v)).changed, 1u);
  EXPECT_EQ(op_types(m), (std::vector<std::string>{"LayerNormalization", "Mul", "Add"}));
  EXPECT_EQ(m.nodes[0].outputs[0], "n");
  EXPECT_EQ(m.nodes[0].inputs.size(), 2u);  // Scale 1, no B: gamma and beta stay with the Mul and Add
}

TEST(LayerNormFusion, NeedsAPackAndKnownShapesAndNoClashingComOphostVersion) {
  LnVariant v;
  Model m = ln_model(v);
  PassResult r = fuse_layer_norm(m, ln_hooks(v, false));
  EXPECT_EQ(r.changed, 0u);
  EXPECT_EQ(r.message, "0 LayerNormalization chains fused; 1 left: no pack serves com.ophost::LayerNormalization for them");
  EXPECT_EQ(m.nodes.size(), 9u);

  // Shapes unknown (inference failed): the gamma/axis checks cannot be made.
  Model m2 = ln_model(v);
  PassHooks unknown = ln_hooks(v);
  unknown.infer_shapes = [](const Model&) { return std::map<std::string, InferredValue>{}; };
  PassResult r2 = fuse_layer_norm(m2, unknown);
  EXPECT_EQ(r2.changed, 0u);
  EXPECT_NE(r2.message.find("1 left: not a LayerNormalization over known trailing dims"), std::string::npos)
      << r2.message;
  EXPECT_EQ(m2.nodes.size(), 9u);

  Model m3 = ln_model(v);
  m3.opset_imports[kFusedDomain] = 2;
  PassResult r3 = fuse_layer_norm(m3, ln_hooks(v));
  EXPECT_EQ(r3.changed, 0u);
  EXPECT_NE(r3.message.find("imports domain com.ophost at version 2"), std::string::npos) << r3.message;
}

TEST(LayerNormFusion, TwoChainsInARowBothFuse) {
  // y1 = LN(x); y = LN(y1) (a transformer's post-norm blocks read the previous block's output).
  LnVariant v;
  Model m = ln_model(v);
  Model second = ln_model(v);
  for (Node& n : second.nodes) {
    for (std::string& in : n.inputs)
      if (in == "x") in = "y";
      else if (in != "two" && in != "eps" && in != "gamma" && in != "beta") in += "_2";
    for (std::string& out : n.outputs) out = out == "y" ? "z" : out + "_2";
    n.name += "_2";
    m.nodes.push_back(n);
  }
  m.outputs = {vinfo("z")};
  PassHooks h = ln_hooks(v);
  h.infer_shapes = [v](const Model&) {
    return std::map<std::string, InferredValue>{{"x", f32_shape(v.x_shape)}, {"y", f32_shape(v.x_shape)}};
  };
  EXPECT_EQ(fuse_layer_norm(m, h).changed, 2u);
  ASSERT_EQ(m.nodes.size(), 2u);
  EXPECT_EQ(m.nodes[0].inputs[0], "x");
  EXPECT_EQ(m.nodes[0].outputs[0], "y");
  EXPECT_EQ(m.nodes[1].inputs[0], "y");
  EXPECT_EQ(m.nodes[1].outputs[0], "z");
}

// ----- conv-activation-fusion: SiLU written out -----

// x -> Conv -> c; y = Mul(c, Sigmoid(c)) (operands swapped when `swapped`).
Model silu_model(bool swapped) {
  Model m = base_model(14);
  m.inputs = {vinfo("x", {1, 1, 3, 3})};
  m.outputs = {vinfo("y")};
  m.initializers.emplace_back("w", ftensor({1, 1, 1, 1}, {2}));
  m.nodes = {node("Conv", {"x", "w"}, {"c"}, "conv"), node("Sigmoid", {"c"}, {"s"}),
             node("Mul", swapped ? std::vector<std::string>{"s", "c"} : std::vector<std::string>{"c", "s"}, {"y"})};
  return m;
}

PassHooks conv_hooks(bool yes) {
  PassHooks h;
  h.can_fuse_conv = [yes](const Model&, const Node&, const Node&) { return yes; };
  return h;
}

TEST(SiluFusion, ConvThenMulBySigmoidBecomesFusedConvSwishInEitherOperandOrder) {
  for (bool swapped : {false, true}) {
    SCOPED_TRACE(swapped ? "Mul(s, c)" : "Mul(c, s)");
    Model m = silu_model(swapped);
    PassResult r = fuse_conv_activation(m, conv_hooks(true));
    EXPECT_EQ(r.changed, 1u) << r.message;
    EXPECT_NE(r.message.find("SiLU written out as Mul(x, Sigmoid(x)) 1"), std::string::npos) << r.message;
    const Node& f = only_node(m);
    EXPECT_EQ(f.op_type, kFusedConv);
    EXPECT_EQ(f.name, "conv");
    EXPECT_EQ(f.outputs[0], "y");
    ASSERT_NE(attr_of(f, "activation"), nullptr);
    EXPECT_EQ(attr_of(f, "activation")->s, "Swish");
    EXPECT_EQ(attr_of(f, "activation_params"), nullptr);
  }
}

TEST(SiluFusion, OtherReadersGraphOutputsAndOtherOpsAreLeftAlone) {
  struct Case {
    const char* what;
    Model m;
  };
  std::vector<Case> cases;
  {
    Model m = silu_model(false);
    m.nodes.push_back(node("Neg", {"c"}, {"other"}));
    m.outputs.push_back(vinfo("other"));
    cases.push_back({"the Conv's output read by a third node", m});
  }
  {
    Model m = silu_model(false);
    m.nodes.push_back(node("Neg", {"s"}, {"other"}));
    m.outputs.push_back(vinfo("other"));
    cases.push_back({"the Sigmoid's output read by another node", m});
  }
  {
    Model m = silu_model(false);
    m.outputs.push_back(vinfo("c"));
    cases.push_back({"the Conv's output a graph output", m});
  }
  {
    Model m = silu_model(false);
    m.outputs.push_back(vinfo("s"));
    cases.push_back({"the Sigmoid's output a graph output", m});
  }
  {
    Model m = silu_model(false);
    m.inputs.push_back(vinfo("x2", {1, 1, 3, 3}));
    m.nodes[1].inputs[0] = "x2";  // Mul(c, Sigmoid(x2)): a gate, not SiLU
    m.nodes.push_back(node("Neg", {"c"}, {"other"}));
    cases.push_back({"Sigmoid of another value", m});
  }
  {
    Model m = silu_model(false);
    m.nodes[1].op_type = "Tanh";
    cases.push_back({"Tanh instead of Sigmoid", m});
  }
  for (Case& c : cases) {
    SCOPED_TRACE(c.what);
    const std::vector<std::string> before = op_types(c.m);
    PassResult r = fuse_conv_activation(c.m, conv_hooks(true));
    EXPECT_EQ(op_types(c.m), before) << r.message;
    for (const Node& n : c.m.nodes)
      if (const Attribute* a = attr_of(n, "activation")) EXPECT_NE(a->s, "Swish");
  }
  Model m = silu_model(false);
  EXPECT_EQ(fuse_conv_activation(m, conv_hooks(false)).changed, 0u);
  EXPECT_EQ(m.nodes.size(), 3u) << "no pack serves FusedConv: nothing fuses";
}

TEST(SiluFusion, AFusedConvWithAResidualTakesTheSiluToo) {
  Model m = silu_model(false);
  m.inputs.push_back(vinfo("z", {1, 1, 3, 3}));
  Node& conv = m.nodes[0];
  conv.domain = kFusedDomain;
  conv.op_type = kFusedConv;
  conv.inputs = {"x", "w", "", "z"};
  PassResult r = fuse_conv_activation(m, conv_hooks(true));
  EXPECT_EQ(r.changed, 1u) << r.message;
  const Node& f = only_node(m);
  EXPECT_EQ(f.inputs[3], "z");
  EXPECT_EQ(attr_of(f, "activation")->s, "Swish");
}

}  // namespace
}  // namespace ophost
