// The passes for reduced-precision models (host/passes/qdq_fusion.cpp, float16_promotion.cpp) on small models built
// in C++: what each rewrites and what it must leave alone. Numbers are checked end to end by
// tests/data/onnx_core/make_quant_cases.py (qdq_* cases) and the zoo's float16 / int8 variants.
#include "passes/passes.hpp"
#include "unit/pass_test_util.hpp"

#include <gtest/gtest.h>

#include <cstring>

namespace ophost {
namespace {

using namespace pass_test;

Tensor typed(DType dt, std::vector<int64_t> shape, std::vector<int32_t> values) {
  Tensor t(dt, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) {
    if (dt == DType::kInt8) t.data_as<int8_t>()[i] = static_cast<int8_t>(values[i]);
    else if (dt == DType::kUint8) t.data_as<uint8_t>()[i] = static_cast<uint8_t>(values[i]);
    else t.data_as<int32_t>()[i] = values[i];
  }
  return t;
}

Attribute iattr(const std::string& name, int64_t v) {
  Attribute a;
  a.name = name;
  a.type = OPH_ATTR_INT;
  a.i = v;
  return a;
}

// x -> Q -> Cast(uint8) -> DQ -> Conv(DQ(W int8 per channel), B) -> Relu -> Q(y_zp) -> y_q, as PyTorch exports.
Model qdq_conv(int32_t y_zp) {
  Model m = base_model(13);
  m.inputs = {vinfo("x", {1, 2, 4, 4})};
  m.outputs = {vinfo("yq", {1, 3, 4, 4}, DType::kUint8)};
  m.initializers.emplace_back("xs", ftensor({}, {0.5f}));
  m.initializers.emplace_back("xz", typed(DType::kUint8, {}, {128}));
  m.initializers.emplace_back("W", typed(DType::kInt8, {3, 2, 1, 1}, {1, -2, 3, -4, 5, 127}));
  m.initializers.emplace_back("ws", ftensor({3}, {0.25f, 0.125f, 0.5f}));
  m.initializers.emplace_back("wz", typed(DType::kInt8, {3}, {0, 0, 0}));
  m.initializers.emplace_back("B", ftensor({3}, {0.125f * 3, -0.0625f * 5, 0.25f * 7}));  // x_scale * w_scale * k
  m.initializers.emplace_back("ys", ftensor({}, {0.1f}));
  m.initializers.emplace_back("yz", typed(DType::kUint8, {}, {y_zp}));
  Node cast = node("Cast", {"xq"}, {"xc"});
  cast.attributes.push_back(iattr("to", 2));
  Node wdq = node("DequantizeLinear", {"W", "ws", "wz"}, {"wf"});
  wdq.attributes.push_back(iattr("axis", 0));
  m.nodes = {node("QuantizeLinear", {"x", "xs", "xz"}, {"xq"}),
             cast,
             node("DequantizeLinear", {"xc", "xs", "xz"}, {"xf"}),
             wdq,
             node("Conv", {"xf", "wf", "B"}, {"c"}, "/layer/Conv"),
             node("Relu", {"c"}, {"r"}),
             node("QuantizeLinear", {"r", "ys", "yz"}, {"yq"})};
  return m;
}

TEST(QdqFusion, DequantizeConvReluQuantizeBecomesQLinearConvWithAnInt32Bias) {
  Model m = qdq_conv(0);
  PassResult r = fuse_qdq(m);
  EXPECT_EQ(r.changed, 2u) << r.message;  // the Cast and the chain
  const Node* f = nullptr;
  for (const Node& n : m.nodes)
    if (n.op_type == "QLinearConv") f = &n;
  ASSERT_NE(f, nullptr) << r.message;
  EXPECT_EQ(f->name, "/layer/QLinearConv");
  ASSERT_EQ(f->inputs.size(), 9u);
  EXPECT_EQ(f->inputs[0], "xq");  // the quantized input itself, the no-op Cast gone
  EXPECT_EQ(f->inputs[3], "W");
  EXPECT_EQ(f->outputs[0], "yq");
  const Tensor* b = init(m, f->inputs[8]);
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(b->dtype(), DType::kInt32);
  EXPECT_EQ(b->data_as<int32_t>()[0], 3);
  EXPECT_EQ(b->data_as<int32_t>()[1], -5);
  EXPECT_EQ(b->data_as<int32_t>()[2], 7);
  for (const Node& n : m.nodes) {
    EXPECT_NE(n.op_type, "Relu");
    EXPECT_NE(n.op_type, "Conv");
    EXPECT_NE(n.op_type, "Cast");
  }
  // The activation's DequantizeLinear (no reader left) and the weights' stay for dead-node elimination.
  EXPECT_EQ(m.nodes.front().op_type, "QuantizeLinear");
}

TEST(QdqFusion, ReluIsKeptUnfusedWhenTheOutputZeroPointIsNotTheTypesLowest) {
  Model m = qdq_conv(10);  // Q would not clamp at 0 by itself: Relu must stay, so nothing fuses
  PassResult r = fuse_qdq(m);
  size_t convs = 0;
  for (const Node& n : m.nodes) convs += n.op_type == "Conv";
  EXPECT_EQ(convs, 1u) << r.message;
}

TEST(QdqFusion, PerChannelWeightsOnTheWrongAxisAreNotFused) {
  Model m = qdq_conv(0);
  for (Node& n : m.nodes)
    if (n.op_type == "DequantizeLinear" && n.inputs[0] == "W") n.attributes = {iattr("axis", 1)};
  fuse_qdq(m);
  size_t convs = 0;
  for (const Node& n : m.nodes) convs += n.op_type == "Conv";
  EXPECT_EQ(convs, 1u);
}

TEST(QdqFusion, ABiasOutsideInt32IsNotFused) {
  Model m = qdq_conv(0);
  for (auto& [name, t] : m.initializers)
    if (name == "B") t.data_as<float>()[0] = 1e12f;
  fuse_qdq(m);
  size_t convs = 0;
  for (const Node& n : m.nodes) convs += n.op_type == "Conv";
  EXPECT_EQ(convs, 1u);
}

TEST(Float16Promotion, AHalfPrecisionGraphRunsInFloat32WithCastsOnlyAtItsEdges) {
  Model m = base_model(13);
  m.inputs = {vinfo("x", {2}, DType::kFloat16)};
  m.outputs = {vinfo("y", {2}, DType::kFloat16)};
  Tensor w(DType::kFloat16, {2});
  w.data_as<uint16_t>()[0] = 0x3c00;  // 1.0
  w.data_as<uint16_t>()[1] = 0xc000;  // -2.0
  m.initializers.emplace_back("w", std::move(w));
  Tensor bf(DType::kBFloat16, {1});
  bf.data_as<uint16_t>()[0] = 0x4040;  // 3.0
  m.initializers.emplace_back("k", std::move(bf));
  Node cast = node("Cast", {"k"}, {"kc"});
  cast.attributes.push_back(iattr("to", 10));
  m.nodes = {node("Mul", {"x", "w"}, {"a"}), cast, node("Add", {"a", "kc"}, {"y"})};
  PassResult r = promote_float16(m);
  EXPECT_GT(r.changed, 0u) << r.message;
  ASSERT_EQ(init(m, "w")->dtype(), DType::kFloat32);
  EXPECT_EQ(init(m, "w")->data_as<float>()[0], 1.0f);
  EXPECT_EQ(init(m, "w")->data_as<float>()[1], -2.0f);
  ASSERT_EQ(init(m, "k")->dtype(), DType::kFloat32);
  EXPECT_EQ(init(m, "k")->data_as<float>()[0], 3.0f);
  // The graph's interface is unchanged; one Cast in, one Cast out.
  EXPECT_EQ(m.inputs[0].dtype, DType::kFloat16);
  EXPECT_EQ(m.outputs[0].dtype, DType::kFloat16);
  ASSERT_EQ(m.nodes.size(), 5u);
  EXPECT_EQ(m.nodes.front().op_type, "Cast");
  EXPECT_EQ(m.nodes.front().inputs[0], "x");
  EXPECT_EQ(attr_of(m.nodes.front(), "to")->i, 1);
  EXPECT_EQ(m.nodes.back().op_type, "Cast");
  EXPECT_EQ(m.nodes.back().outputs[0], "y");
  EXPECT_EQ(attr_of(m.nodes.back(), "to")->i, 10);
  EXPECT_EQ(attr_of(m.nodes[2], "to")->i, 1);  // the graph's own Cast to float16 now casts to float32
  EXPECT_EQ(m.nodes[1].inputs[0], m.nodes.front().outputs[0]);
}

TEST(Float16Promotion, AFloat32GraphIsUntouched) {
  Model m = base_model(13);
  m.inputs = {vinfo("x", {2})};
  m.outputs = {vinfo("y", {2})};
  m.nodes = {node("Neg", {"x"}, {"y"})};
  EXPECT_EQ(promote_float16(m).changed, 0u);
  EXPECT_EQ(m.nodes.size(), 1u);
}

}  // namespace
}  // namespace ophost
