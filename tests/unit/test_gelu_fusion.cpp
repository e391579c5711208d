// gelu-fusion (host/passes/gelu_fusion.cpp): GELU written out (Div sqrt(2) / Mul 1/sqrt(2), Erf, Add 1 and the
// products with x and 0.5 in each order exporters use; the tanh approximation with Pow 3 or x * (x * x)) becomes
// one com.ophost::Gelu; each variant that does not compute GELU, or whose intermediates are read elsewhere, is left
// alone. The numbers of the fused graphs: tests/data/onnx_core (fusion_cases.py) and
// tests/integration/test_fusion_numerics.cpp.
#include "passes/passes.hpp"
#include "unit/pass_test_util.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

namespace ophost {
namespace {

using namespace pass_test;

enum class Head { kErfDiv, kErfMul, kTanhPow, kTanhCube };
// How y = x * a * 0.5 is written: (x * a) * 0.5 (PyTorch), (x * 0.5) * a, x * (a * 0.5).
enum class Tail { kXaHalf, kXhalfA, kXAhalf };

struct GeluVariant {
  Head head = Head::kErfDiv;
  Tail tail = Tail::kXaHalf;
  bool swapped = false;      // constants first in Mul/Add, products' operands the other way round
  bool half_as_div = false;  // Div(v, 2) for Mul(v, 0.5)
  std::map<std::string, float> values = {{"sqrt2", 1.41421356f}, {"rsqrt2", 0.70710677f}, {"one", 1.0f},
                                         {"half", 0.5f},         {"two", 2.0f},           {"three", 3.0f},
                                         {"coef", 0.044715f},    {"k", 0.7978845608f}};
  std::vector<int64_t> const_shape = {};  // every constant's shape (one element)
  std::string extra_output;               // an intermediate that is also a graph output
  std::string extra_reader;               // an intermediate that another node reads too
};

// Mul/Add of v and constant c, in the variant's operand order.
Node with_const(const GeluVariant& v, const char* op, const std::string& in, const std::string& c,
                const std::string& out) {
  return node(op, v.swapped ? std::vector<std::string>{c, in} : std::vector<std::string>{in, c}, {out});
}
// Binary `op` of two values, in the variant's operand order.
Node pair(const GeluVariant& v, const char* op, const std::string& a, const std::string& b, const std::string& out) {
  return node(op, v.swapped ? std::vector<std::string>{b, a} : std::vector<std::string>{a, b}, {out});
}
Node halve(const GeluVariant& v, const std::string& in, const std::string& out) {
  return v.half_as_div ? node("Div", {in, "two"}, {out}) : with_const(v, "Mul", in, "half", out);
}

// x [2, 8] -> GELU -> y. Values: d (Div/Mul), xx, p, q, s, u (tanh head), e (Erf/Tanh), a (Add 1), m (the first
// product of the tail), y.
Model gelu_model(const GeluVariant& v) {
  Model m = base_model(14);
  m.inputs = {vinfo("x", {2, 8})};
  m.outputs = {vinfo("y")};
  for (const auto& [name, value] : v.values) {
    Tensor t(DType::kFloat32, v.const_shape);
    t.data_as<float>()[0] = value;
    m.initializers.emplace_back(name, std::move(t));
  }
  if (v.tail == Tail::kXhalfA) m.nodes.push_back(halve(v, "x", "m"));
  switch (v.head) {
    case Head::kErfDiv: m.nodes.push_back(node("Div", {"x", "sqrt2"}, {"d"}, "/mlp/act/Div")); break;
    case Head::kErfMul: m.nodes.push_back(with_const(v, "Mul", "x", "rsqrt2", "d")); break;
    case Head::kTanhPow: m.nodes.push_back(node("Pow", {"x", "three"}, {"p"})); break;
    case Head::kTanhCube:
      m.nodes.push_back(node("Mul", {"x", "x"}, {"xx"}));
      m.nodes.push_back(pair(v, "Mul", "x", "xx", "p"));
      break;
  }
  if (v.head == Head::kTanhPow || v.head == Head::kTanhCube) {
    m.nodes.push_back(with_const(v, "Mul", "p", "coef", "q"));
    m.nodes.push_back(pair(v, "Add", "x", "q", "s"));
    m.nodes.push_back(with_const(v, "Mul", "s", "k", "u"));
    m.nodes.push_back(node("Tanh", {"u"}, {"e"}, "/mlp/act/Tanh"));
  } else {
    m.nodes.push_back(node("Erf", {"d"}, {"e"}, "/mlp/act/Erf"));
  }
  m.nodes.push_back(with_const(v, "Add", "e", "one", "a"));
  switch (v.tail) {
    case Tail::kXaHalf:
      m.nodes.push_back(pair(v, "Mul", "x", "a", "m"));
      m.nodes.push_back(halve(v, "m", "y"));
      break;
    case Tail::kXhalfA: m.nodes.push_back(pair(v, "Mul", "m", "a", "y")); break;
    case Tail::kXAhalf:
      m.nodes.push_back(halve(v, "a", "m"));
      m.nodes.push_back(pair(v, "Mul", "x", "m", "y"));
      break;
  }
  if (!v.extra_output.empty()) m.outputs.push_back(vinfo(v.extra_output));
  if (!v.extra_reader.empty()) {
    m.nodes.push_back(node("Neg", {v.extra_reader}, {"other"}));
    m.outputs.push_back(vinfo("other"));
  }
  return m;
}

// A pack serves the fused op (or not); x's rank as inference gives it (unknown when `x_known` is false).
PassHooks gelu_hooks(bool served = true, std::vector<std::string>* asked = nullptr, bool x_known = true) {
  PassHooks h = fusing_hooks(served, asked);
  h.infer_shapes = [x_known](const Model&) {
    std::map<std::string, InferredValue> s;
    if (x_known) s["x"] = f32_shape({2, 8});
    return s;
  };
  return h;
}

std::string describe(const GeluVariant& v) {
  const char* heads[] = {"Div sqrt2, Erf", "Mul 1/sqrt2, Erf", "Pow 3, Tanh", "x*(x*x), Tanh"};
  const char* tails[] = {"(x*a)*0.5", "(x*0.5)*a", "x*(a*0.5)"};
  return std::string(heads[static_cast<int>(v.head)]) + "; " + tails[static_cast<int>(v.tail)] +
         (v.swapped ? "; operands swapped" : "") + (v.half_as_div ? "; Div 2 for Mul 0.5" : "");
}

TEST(GeluFusion, EveryWrittenOutFormBecomesOneComOphostGelu) {
  for (Head head : {Head::kErfDiv, Head::kErfMul, Head::kTanhPow, Head::kTanhCube})
    for (Tail tail : {Tail::kXaHalf, Tail::kXhalfA, Tail::kXAhalf})
      for (bool swapped : {false, true})
        for (bool half_as_div : {false, true}) {
          GeluVariant v;
          v.head = head;
          v.tail = tail;
          v.swapped = swapped;
          v.half_as_div = half_as_div;
          SCOPED_TRACE(describe(v));
          Model m = gelu_model(v);
          const size_t before = m.nodes.size();
          std::vector<std::string> asked;
          PassResult r = fuse_gelu(m, gelu_hooks(true, &asked));
          const bool tanh = head == Head::kTanhPow || head == Head::kTanhCube;
          EXPECT_EQ(r.changed, 1u) << r.message;
          EXPECT_EQ(r.message, tanh ? "1 Gelu chains fused (1 of them the tanh approximation)" : "1 Gelu chains fused");
          ASSERT_EQ(m.nodes.size(), 1u) << ::testing::PrintToString(op_types(m));
          const Node& f = m.nodes[0];
          EXPECT_EQ(f.domain, kFusedDomain);
          EXPECT_EQ(f.op_type, kGelu);
          EXPECT_EQ(f.name, "/mlp/act/Gelu");  // the Erf's or Tanh's module path
          EXPECT_EQ(f.inputs, (std::vector<std::string>{"x"}));
          EXPECT_EQ(f.outputs, (std::vector<std::string>{"y"}));
          ASSERT_NE(attr_of(f, "approximate"), nullptr);
          EXPECT_EQ(attr_of(f, "approximate")->type, OPH_ATTR_STRING);
          EXPECT_EQ(attr_of(f, "approximate")->s, tanh ? "tanh" : "none");
          EXPECT_EQ(m.opset_imports.at(kFusedDomain), 1);
          // The hook was asked about the fused op and every node of the chain.
          ASSERT_EQ(asked.size(), before + 1);
          EXPECT_EQ(asked[0], "Gelu");
        }
}

TEST(GeluFusion, PyTorchsChainAsTheHookSeesIt) {
  GeluVariant v;
  Model m = gelu_model(v);
  std::vector<std::string> asked;
  EXPECT_EQ(fuse_gelu(m, gelu_hooks(true, &asked)).changed, 1u);
  EXPECT_EQ(asked, (std::vector<std::string>{"Gelu", "Div", "Erf", "Add", "Mul", "Mul"}));
}

TEST(GeluFusion, VariantsThatAreNotAGeluAreLeftAlone) {
  struct Case {
    const char* what;
    GeluVariant v;
  };
  std::vector<Case> cases;
  auto add = [&](const char* what, auto edit) {
    GeluVariant v;
    edit(v);
    cases.push_back({what, v});
  };
  add("divisor 1.414 (not sqrt 2 within 1e-6)", [](GeluVariant& v) { v.values["sqrt2"] = 1.414f; });
  add("multiplier 0.7071 (not 1/sqrt 2)", [](GeluVariant& v) { v.head = Head::kErfMul; v.values["rsqrt2"] = 0.7071f; });
  add("Add 1.00001", [](GeluVariant& v) { v.values["one"] = 1.00001f; });
  add("Mul 0.49999", [](GeluVariant& v) { v.values["half"] = 0.49999f; });
  add("Div 2.0001", [](GeluVariant& v) { v.half_as_div = true; v.values["two"] = 2.0001f; });
  add("Pow 2 (not x^3)", [](GeluVariant& v) { v.head = Head::kTanhPow; v.values["three"] = 2.0f; });
  add("coefficient 0.0447", [](GeluVariant& v) { v.head = Head::kTanhPow; v.values["coef"] = 0.0447f; });
  add("scale 0.8 (not sqrt(2/pi))", [](GeluVariant& v) { v.head = Head::kTanhCube; v.values["k"] = 0.8f; });
  add("Div's quotient read by another node", [](GeluVariant& v) { v.extra_reader = "d"; });
  add("Erf's output read by another node", [](GeluVariant& v) { v.extra_reader = "e"; });
  add("1 + erf read by another node", [](GeluVariant& v) { v.extra_reader = "a"; });
  add("x * a read by another node", [](GeluVariant& v) { v.extra_reader = "m"; });
  add("x * 0.5 read by another node", [](GeluVariant& v) { v.tail = Tail::kXhalfA; v.extra_reader = "m"; });
  add("a * 0.5 read by another node", [](GeluVariant& v) { v.tail = Tail::kXAhalf; v.extra_reader = "m"; });
  add("x^3 read by another node", [](GeluVariant& v) { v.head = Head::kTanhPow; v.extra_reader = "p"; });
  add("x * x read by another node", [](GeluVariant& v) { v.head = Head::kTanhCube; v.extra_reader = "xx"; });
  add("x + 0.044715 x^3 read by another node", [](GeluVariant& v) { v.head = Head::kTanhPow; v.extra_reader = "s"; });
  add("the tanh's argument read by another node", [](GeluVariant& v) { v.head = Head::kTanhPow; v.extra_reader = "u"; });
  add("Erf's output a graph output", [](GeluVariant& v) { v.extra_output = "e"; });
  add("1 + erf a graph output", [](GeluVariant& v) { v.extra_output = "a"; });
  add("x * a a graph output", [](GeluVariant& v) { v.extra_output = "m"; });
  add("the Div's quotient a graph output", [](GeluVariant& v) { v.extra_output = "d"; });
  add("constants of rank 3, x of rank 2 (the output would broadcast)", [](GeluVariant& v) { v.const_shape = {1, 1, 1}; });
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Model m = gelu_model(c.v);
    const std::vector<std::string> before = op_types(m);
    PassResult r = fuse_gelu(m, gelu_hooks());
    EXPECT_EQ(r.changed, 0u) << r.message;
    EXPECT_EQ(op_types(m), before);
    EXPECT_EQ(m.opset_imports.count(kFusedDomain), 0u);
  }
}

TEST(GeluFusion, OtherStructuresAreLeftAlone) {
  struct Case {
    const char* what;
    Model m;
  };
  std::vector<Case> cases;
  {
    Model m = gelu_model({});
    m.nodes[0].inputs = {"sqrt2", "x"};  // sqrt(2) / x
    cases.push_back({"Div with x as the divisor", m});
  }
  {
    Model m = gelu_model({});
    m.inputs.push_back(vinfo("z", {2, 8}));
    m.nodes[3].inputs = {"z", "a"};  // z * (1 + erf(x / sqrt 2)) * 0.5: a gate on another value
    cases.push_back({"the product with another value than x", m});
  }
  {
    Model m = gelu_model({});
    m.nodes[2].op_type = "Sub";  // erf - 1
    cases.push_back({"Sub instead of Add", m});
  }
  {
    GeluVariant v;
    v.head = Head::kTanhPow;
    Model m = gelu_model(v);
    m.inputs.push_back(vinfo("z", {2, 8}));
    m.nodes[2].inputs = {"z", "q"};  // z + 0.044715 x^3
    cases.push_back({"the tanh form's Add of another value", m});
  }
  {
    Model m = gelu_model({});
    std::erase_if(m.initializers, [](const auto& i) { return i.first == "half"; });
    m.inputs.push_back(vinfo("half"));
    cases.push_back({"0.5 a graph input, not a constant", m});
  }
  {
    Model m = gelu_model({});
    m.nodes[1].domain = "com.example";
    cases.push_back({"Erf of another domain", m});
  }
  for (Case& c : cases) {
    SCOPED_TRACE(c.what);
    const std::vector<std::string> before = op_types(c.m);
    PassResult r = fuse_gelu(c.m, gelu_hooks());
    EXPECT_EQ(r.changed, 0u) << r.message;
    EXPECT_EQ(op_types(c.m), before);
  }
}

TEST(GeluFusion, ConstantsOfRankAboveZeroNeedXsRank) {
  GeluVariant v;
  v.const_shape = {1, 1};
  Model known = gelu_model(v);
  EXPECT_EQ(fuse_gelu(known, gelu_hooks()).changed, 1u) << "x has rank 2: [1, 1] constants do not broadcast it";
  Model unknown = gelu_model(v);
  EXPECT_EQ(fuse_gelu(unknown, gelu_hooks(true, nullptr, false)).changed, 0u);
  EXPECT_EQ(unknown.nodes.size(), 5u);
  // Rank-0 constants (PyTorch's) need no inference.
  Model scalar = gelu_model({});
  EXPECT_EQ(fuse_gelu(scalar, gelu_hooks(true, nullptr, false)).changed, 1u);
}

TEST(GeluFusion, NeedsAPackAndNoClashingComOphostVersion) {
  Model m = gelu_model({});
  PassResult r = fuse_gelu(m, gelu_hooks(false));
  EXPECT_EQ(r.changed, 0u);
  EXPECT_EQ(r.message, "0 Gelu chains fused; 1 left: no pack serves com.ophost::Gelu for them");
  EXPECT_EQ(m.nodes.size(), 5u);

  Model m2 = gelu_model({});
  m2.opset_imports[kFusedDomain] = 2;
  PassResult r2 = fuse_gelu(m2, gelu_hooks());
  EXPECT_EQ(r2.changed, 0u);
  EXPECT_NE(r2.message.find("imports domain com.ophost at version 2"), std::string::npos) << r2.message;
  EXPECT_EQ(m2.nodes.size(), 5u);
}

TEST(GeluFusion, TwoChainsInARowBothFuse) {
  // y = gelu(x); z = gelu(y) (the second reads the first's output as its x: three readers).
  Model m = gelu_model({});
  Model second = gelu_model({});
  for (Node& n : second.nodes) {
    for (std::string& in : n.inputs)
      if (in == "x") in = "y";
      else if (!init(m, in)) in += "_2";
    for (std::string& out : n.outputs) out = out == "y" ? "z" : out + "_2";
    n.name += "_2";
    m.nodes.push_back(n);
  }
  m.outputs = {vinfo("z")};
  EXPECT_EQ(fuse_gelu(m, gelu_hooks()).changed, 2u);
  ASSERT_EQ(m.nodes.size(), 2u);
  EXPECT_EQ(m.nodes[0].inputs[0], "x");
  EXPECT_EQ(m.nodes[0].outputs[0], "y");
  EXPECT_EQ(m.nodes[1].inputs[0], "y");
  EXPECT_EQ(m.nodes[1].outputs[0], "z");
}

}  // namespace
}  // namespace ophost
