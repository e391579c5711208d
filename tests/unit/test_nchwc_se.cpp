// nchwc-layout on a squeeze-and-excitation block (EfficientNet, MobileNetV3): the GlobalAveragePool and the
// Mul by the [N, C, 1, 1] scale run on the blocked value (com.ophost::BlockedGlobalAveragePool / BlockedMul), so
// the block needs no LayoutReorder; shapes the blocked ops do not cover keep the plain ops and their reorders.
// EfficientNet-B0's and MobileNetV3's outputs against ONNX Runtime (zoo_outputs) check the kernels' numbers.
#include "passes/passes.hpp"
#include "unit/pass_test_util.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace ophost {
namespace {

using namespace pass_test;

// x -> dw conv (16 ch, 8x8) -> d; g = GAP(d); r = conv1x1(g) 16->8; e = conv1x1(r) 8->16; s = Sigmoid(e);
// m = Mul(d, s) (or Mul(s, d)); y = conv1x1(m) 16->16 (graph output written plain).
Model se_model(bool scale_first) {
  Model m = base_model(13);
  m.inputs = {vinfo("x", {1, 16, 8, 8})};
  m.outputs = {vinfo("y")};
  m.initializers.emplace_back("wd", ftensor({16, 1, 3, 3}, std::vector<float>(144, 0.1f)));
  m.initializers.emplace_back("wr", ftensor({8, 16, 1, 1}, std::vector<float>(128, 0.1f)));
  m.initializers.emplace_back("we", ftensor({16, 8, 1, 1}, std::vector<float>(128, 0.1f)));
  m.initializers.emplace_back("wy", ftensor({16, 16, 1, 1}, std::vector<float>(256, 0.1f)));
  Node dw = node("Conv", {"x", "wd"}, {"d"}, "dw");
  Attribute g;
  g.name = "group";
  g.type = OPH_ATTR_INT;
  g.i = 16;
  dw.attributes.push_back(g);
  m.nodes = {dw,
             node("GlobalAveragePool", {"d"}, {"g"}, "gap"),
             node("Conv", {"g", "wr"}, {"r"}, "reduce"),
             node("Conv", {"r", "we"}, {"e"}, "expand"),
             node("Sigmoid", {"e"}, {"s"}, "sigmoid"),
             node("Mul", scale_first ? std::vector<std::string>{"s", "d"} : std::vector<std::string>{"d", "s"},
                  {"m"}, "scale"),
             node("Conv", {"m", "wy"}, {"y"}, "project")};
  return m;
}

PassHooks se_hooks(int64_t scale_batch = 1, bool served = true) {
  PassHooks h;
  h.infer_shapes = [scale_batch](const Model&) {
    std::map<std::string, InferredValue> s;
    s["x"] = f32_shape({1, 16, 8, 8});
    s["d"] = f32_shape({1, 16, 8, 8});
    s["g"] = f32_shape({1, 16, 1, 1});
    s["r"] = f32_shape({1, 8, 1, 1});
    s["e"] = f32_shape({scale_batch, 16, 1, 1});
    s["s"] = f32_shape({scale_batch, 16, 1, 1});
    s["m"] = f32_shape({1, 16, 8, 8});
    s["y"] = f32_shape({1, 16, 8, 8});
    return s;
  };
  h.can_block_conv = [](const Model&, const Node&) { return true; };
  h.can_block_op = [served](const Model&, const Node&, const char*) { return served; };
  return h;
}

TEST(NchwcSe, TheSqueezeAndExcitationBlockStaysBlocked) {
  for (bool scale_first : {false, true}) {
    Model m = se_model(scale_first);
    PassResult r = assign_nchwc_layout(m, se_hooks());
    EXPECT_NE(r.message.find("2 SE pool/scale ops on blocked layouts, 0 LayoutReorder nodes"), std::string::npos)
        << r.message;
    ASSERT_EQ(op_types(m), (std::vector<std::string>{kFusedConv, kBlockedGlobalAveragePool, kFusedConv, kFusedConv,
                                                     "Sigmoid", kBlockedMul, kFusedConv}));
    const Node& mul = m.nodes[5];
    EXPECT_EQ(mul.domain, kFusedDomain);
    EXPECT_EQ(mul.inputs, (std::vector<std::string>{"d", "s"}));  // X (blocked) first, then the scale
    EXPECT_EQ(m.nodes[1].domain, kFusedDomain);
    EXPECT_EQ(m.nodes[1].inputs, (std::vector<std::string>{"d"}));
    EXPECT_TRUE(m.blocked_values.count("d"));
    EXPECT_TRUE(m.blocked_values.count("m"));
    EXPECT_FALSE(m.blocked_values.count("g"));  // [1, 16, 1, 1]: written plain
    ASSERT_NE(attr_of(m.nodes[6], "x_blocked"), nullptr);
  }
}

TEST(NchwcSe, WithoutAPackForTheBlockedOpsTheBlockReadsPlainCopies) {
  Model m = se_model(false);
  PassResult r = assign_nchwc_layout(m, se_hooks(1, false));
  const std::vector<std::string> ops = op_types(m);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), std::string(kBlockedMul)), 0);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), std::string(kBlockedGlobalAveragePool)), 0);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), std::string("GlobalAveragePool")), 1);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), std::string("Mul")), 1);
  EXPECT_GE(std::count(ops.begin(), ops.end(), std::string(kLayoutReorder)), 1) << r.message;
}

TEST(NchwcSe, AScaleOfAnotherBatchIsLeftToThePlainMul) {
  Model m = se_model(false);
  PassResult r = assign_nchwc_layout(m, se_hooks(2));  // s [2, 16, 1, 1] against x [1, ...]: broadcasting grows
  const std::vector<std::string> ops = op_types(m);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), std::string(kBlockedMul)), 0) << r.message;
  EXPECT_EQ(std::count(ops.begin(), ops.end(), std::string("Mul")), 1);
}

}  // namespace
}  // namespace ophost
