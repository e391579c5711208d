// batchnorm-as-conv: a BatchNormalization conv-bn-folding left (no Conv before it) becomes a 1x1 depthwise Conv
// with weights scale / sqrt(var + eps) and bias B - mean * weight; every case the rewrite does not cover stays a
// BatchNormalization. DenseNet-121's outputs against ONNX Runtime (zoo_outputs) check the numbers end to end.
#include "passes/passes.hpp"
#include "unit/pass_test_util.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace ophost {
namespace {

using namespace pass_test;

struct BnVariant {
  int64_t channels = 16;
  bool training = false;
  bool mean_input = false;   // mean a graph input, not a constant
  bool mask_used = false;    // a second output that is read
  bool blockable = true;     // what can_block_conv answers
};

Model bn_model(const BnVariant& v) {
  Model m = base_model(15);
  m.inputs = {vinfo("x", {1, v.channels, 5, 5})};
  m.outputs = {vinfo("y")};
  const int64_t c = v.channels;
  std::vector<float> scale, bias, mean, var;
  for (int64_t k = 0; k < c; ++k) {
    scale.push_back(0.5f + 0.1f * static_cast<float>(k));
    bias.push_back(-0.25f * static_cast<float>(k));
    mean.push_back(0.05f * static_cast<float>(k));
    var.push_back(1.0f + 0.5f * static_cast<float>(k));
  }
  m.initializers.emplace_back("scale", ftensor({c}, scale));
  m.initializers.emplace_back("bias", ftensor({c}, bias));
  if (v.mean_input) m.inputs.push_back(vinfo("mean", {c}));
  else m.initializers.emplace_back("mean", ftensor({c}, mean));
  m.initializers.emplace_back("var", ftensor({c}, var));
  Node bn = node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"}, "/features/norm0");
  bn.attributes.push_back(fattr("epsilon", 1e-3f));
  if (v.training) {
    Attribute t;
    t.name = "training_mode";
    t.type = OPH_ATTR_INT;
    t.i = 1;
    bn.attributes.push_back(t);
  }
  if (v.mask_used) {
    bn.outputs.push_back("running_mean");
    m.outputs.push_back(vinfo("running_mean"));
  }
  m.nodes = {bn};
  return m;
}

PassHooks bn_hooks(const BnVariant& v) {
  PassHooks h;
  h.infer_shapes = [v](const Model&) {
    return std::map<std::string, InferredValue>{{"x", f32_shape({1, v.channels, 5, 5})}};
  };
  h.can_block_conv = [v](const Model&, const Node& n) {
    EXPECT_EQ(n.op_type, "Conv");
    return v.blockable;
  };
  return h;
}

TEST(BatchNormAsConv, ALeftOverBatchNormalizationBecomesA1x1DepthwiseConv) {
  Model m = bn_model({});
  PassResult r = convert_batchnorm_to_conv(m, bn_hooks({}));
  EXPECT_EQ(r.changed, 1u);
  EXPECT_EQ(r.message, "1 BatchNormalization nodes rewritten to 1x1 depthwise Conv");
  ASSERT_EQ(m.nodes.size(), 1u);
  const Node& c = m.nodes[0];
  EXPECT_EQ(c.op_type, "Conv");
  EXPECT_EQ(c.name, "/features/norm0");
  EXPECT_EQ(c.outputs, (std::vector<std::string>{"y"}));
  ASSERT_EQ(c.inputs.size(), 3u);
  EXPECT_EQ(c.inputs[0], "x");
  ASSERT_NE(attr_of(c, "group"), nullptr);
  EXPECT_EQ(attr_of(c, "group")->i, 16);
  ASSERT_NE(attr_of(c, "kernel_shape"), nullptr);
  EXPECT_EQ(attr_of(c, "kernel_shape")->ints, (std::vector<int64_t>{1, 1}));
  const Tensor* w = init(m, c.inputs[1]);
  const Tensor* b = init(m, c.inputs[2]);
  ASSERT_NE(w, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(std::vector<int64_t>(w->shape().begin(), w->shape().end()), (std::vector<int64_t>{16, 1, 1, 1}));
  for (int k = 0; k < 16; ++k) {
    const float s = (0.5f + 0.1f * k) / std::sqrt(1.0f + 0.5f * k + 1e-3f);
    EXPECT_FLOAT_EQ(w->data_as<float>()[k], s) << k;
    EXPECT_FLOAT_EQ(b->data_as<float>()[k], -0.25f * k - 0.05f * k * s) << k;
  }
}

TEST(BatchNormAsConv, CasesItDoesNotCoverStayBatchNormalization) {
  std::vector<std::pair<std::string, BnVariant>> cases;
  BnVariant v;
  v.channels = 12;
  cases.emplace_back("channels not a multiple of 8", v);
  v = {};
  v.training = true;
  cases.emplace_back("training_mode 1", v);
  v = {};
  v.mean_input = true;
  cases.emplace_back("mean not a constant", v);
  v = {};
  v.mask_used = true;
  cases.emplace_back("a running statistic read", v);
  v = {};
  v.blockable = false;
  cases.emplace_back("no pack runs the Conv blocked", v);
  for (const auto& [what, variant] : cases) {
    Model m = bn_model(variant);
    const size_t inits = m.initializers.size();
    PassResult r = convert_batchnorm_to_conv(m, bn_hooks(variant));
    EXPECT_EQ(r.changed, 0u) << what;
    EXPECT_EQ(op_types(m), (std::vector<std::string>{"BatchNormalization"})) << what;
    EXPECT_EQ(m.initializers.size(), inits) << what;
  }
}

}  // namespace
}  // namespace ophost
