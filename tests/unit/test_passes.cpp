// Graph passes (host/passes): each pass on small models built in C++, checking the rewrite (and, for the
// folding passes, the numbers).
#include "passes/passes.hpp"
#include "unit/pass_test_util.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

namespace ophost {
namespace {

using namespace pass_test;

// ----- identity-elimination -----

TEST(Passes, IdentityInsideTheGraphIsRemovedAndConsumersRewired) {
  Model m = base_model();
  m.inputs = {vinfo("x", {2})};
  m.outputs = {vinfo("y")};
  m.nodes = {node("Relu", {"x"}, {"a"}), node("Identity", {"a"}, {"b"}), node("Neg", {"b"}, {"y"})};
  PassResult r = eliminate_identities(m);
  EXPECT_EQ(r.changed, 1u);
  ASSERT_EQ(op_types(m), (std::vector<std::string>{"Relu", "Neg"}));
  EXPECT_EQ(m.nodes[1].inputs[0], "a");
}

TEST(Passes, IdentityFeedingAGraphOutputKeepsTheOutputName) {
  Model m = base_model();
  m.inputs = {vinfo("x", {2})};
  m.outputs = {vinfo("y")};
  m.nodes = {node("Relu", {"x"}, {"a"}), node("Neg", {"a"}, {"n"}), node("Identity", {"a"}, {"y"})};
  eliminate_identities(m);
  ASSERT_EQ(op_types(m), (std::vector<std::string>{"Relu", "Neg"}));
  EXPECT_EQ(m.nodes[0].outputs[0], "y");  // the producer writes the graph output directly
  EXPECT_EQ(m.nodes[1].inputs[0], "y");   // and its other readers follow
}

TEST(Passes, IdentityCopyingAGraphInputToAnOutputStays) {
  Model m = base_model();
  m.inputs = {vinfo("x", {2})};
  m.outputs = {vinfo("y")};
  m.nodes = {node("Identity", {"x"}, {"y"})};
  EXPECT_EQ(eliminate_identities(m).changed, 0u);
  EXPECT_EQ(m.nodes.size(), 1u);
}

TEST(Passes, InferenceDropoutIsRemovedTrainingOrMaskUseIsNot) {
  Model m = base_model();
  m.inputs = {vinfo("x", {2})};
  m.outputs = {vinfo("y"), vinfo("z"), vinfo("w"), vinfo("v"), vinfo("u")};
  Tensor yes(DType::kBool, {});
  *static_cast<uint8_t*>(yes.data()) = 1;
  m.initializers.emplace_back("train", yes);
  m.initializers.emplace_back("zero", ftensor({}, {0.0f}));
  m.initializers.emplace_back("tenth", ftensor({}, {0.1f}));
  m.nodes = {node("Dropout", {"x"}, {"a", "mask_unused"}),        // inference: removed
             node("Neg", {"a"}, {"y"}),
             node("Dropout", {"x", "", "train"}, {"b"}),          // training mode, default ratio 0.5: kept
             node("Neg", {"b"}, {"z"}),
             node("Dropout", {"x"}, {"c", "mask"}),               // mask read: kept
             node("Add", {"c", "mask"}, {"w"}),
             node("Dropout", {"x", "zero", "train"}, {"d"}),      // training mode with ratio 0 (PyTorch's
             node("Neg", {"d"}, {"v"}),                           // F.dropout(p=0.0, training=True)): removed
             node("Dropout", {"x", "tenth", "train"}, {"e"}),     // training mode with ratio 0.1: kept
             node("Neg", {"e"}, {"u"})};
  PassResult r = eliminate_identities(m);
  EXPECT_EQ(r.changed, 2u);
  EXPECT_EQ(op_types(m), (std::vector<std::string>{"Neg", "Dropout", "Neg", "Dropout", "Add", "Neg", "Dropout",
                                                   "Neg"}));
  EXPECT_EQ(m.nodes[0].inputs[0], "x");
  EXPECT_EQ(m.nodes[5].inputs[0], "x");
}

TEST(Passes, DropoutWhoseTrainingModeAndRatioAreConstantNodesIsJudgedByTheirValues) {
  // PyTorch writes training_mode and ratio as Constant nodes; identity-elimination runs before constant-folding
  // makes them initializers, so it reads the nodes' value tensors.
  Model m = base_model();
  m.inputs = {vinfo("x", {2})};
  m.outputs = {vinfo("y"), vinfo("z")};
  auto constant = [](const std::string& out, Tensor t) {
    Node c = node("Constant", {}, {out});
    Attribute a;
    a.name = "value";
    a.type = OPH_ATTR_TENSOR;
    a.t = std::move(t);
    c.attributes.push_back(std::move(a));
    return c;
  };
  Tensor yes(DType::kBool, {});
  *static_cast<uint8_t*>(yes.data()) = 1;
  m.nodes = {constant("train", yes), constant("zero", ftensor({}, {0.0f})), constant("half", ftensor({}, {0.5f})),
             node("Dropout", {"x", "zero", "train"}, {"a", "mask_unused"}),  // ratio 0: removed
             node("Neg", {"a"}, {"y"}),
             node("Dropout", {"x", "half", "train"}, {"b"}),                 // ratio 0.5: kept
             node("Neg", {"b"}, {"z"})};
  EXPECT_EQ(eliminate_identities(m).changed, 1u);
  EXPECT_EQ(op_types(m), (std::vector<std::string>{"Constant", "Constant", "Constant", "Neg", "Dropout", "Neg"}));
  EXPECT_EQ(m.nodes[3].inputs[0], "x");
}

// ----- dead-node-elimination -----

TEST(Passes, DeadNodesAndUnreadInitializersGo) {
  Model m = base_model();
  m.inputs = {vinfo("x", {2})};
  m.outputs = {vinfo("y")};
  m.initializers.emplace_back("c", ftensor({2}, {1, 2}));
  m.initializers.emplace_back("unused", ftensor({2}, {1, 2}));
  m.nodes = {node("Add", {"x", "c"}, {"a"}), node("Neg", {"a"}, {"y"}), node("Relu", {"a"}, {"dead1"}),
             node("Exp", {"dead1"}, {"dead2"})};
  PassResult r = eliminate_dead_nodes(m);
  EXPECT_EQ(op_types(m), (std::vector<std::string>{"Add", "Neg"}));
  EXPECT_EQ(r.changed, 3u);  // two nodes, one initializer
  EXPECT_NE(init(m, "c"), nullptr);
  EXPECT_EQ(init(m, "unused"), nullptr);
}

// ----- constant-folding -----

// A fake evaluator: Add of two float tensors of equal shape; ConstantOfShape-like "Big" giving a large tensor.
PassHooks fake_hooks(std::map<std::string, InferredValue> shapes = {}) {
  PassHooks h;
  h.evaluate = [](const Model&, const Node& n,
                  const std::vector<const Tensor*>& in) -> std::optional<std::vector<Tensor>> {
    if (n.op_type == "Add") {
      Tensor t(DType::kFloat32, std::vector<int64_t>(in[0]->shape().begin(), in[0]->shape().end()));
      for (int64_t i = 0; i < t.numel(); ++i)
        t.data_as<float>()[i] = in[0]->data_as<float>()[i] + in[1]->data_as<float>()[i];
      return std::vector<Tensor>{t};
    }
    if (n.op_type == "Tile") return std::vector<Tensor>{Tensor(DType::kFloat32, {1024, 1024})};
    return std::nullopt;
  };
  h.infer_shapes = [shapes](const Model&) { return shapes; };
  return h;
}

TEST(Passes, ConstantSubgraphFoldsToInitializers) {
  Model m = base_model();
  m.inputs = {vinfo("x", {2})};
  m.outputs = {vinfo("y")};
  m.initializers.emplace_back("a", ftensor({2}, {1, 2}));
  m.initializers.emplace_back("b", ftensor({2}, {10, 20}));
  m.nodes = {node("Add", {"a", "b"}, {"c"}), node("Add", {"c", "c"}, {"d"}), node("Add", {"x", "d"}, {"y"})};
  PassResult r = fold_constants(m, fake_hooks());
  EXPECT_EQ(r.changed, 2u);
  ASSERT_EQ(m.nodes.size(), 1u);
  const Tensor* d = init(m, "d");
  ASSERT_NE(d, nullptr);
  EXPECT_FLOAT_EQ(d->data_as<float>()[0], 22);
  EXPECT_FLOAT_EQ(d->data_as<float>()[1], 44);
}

TEST(Passes, RandomOpsAndOutputsOverTheCapAreNotFolded) {
  Model m = base_model();
  m.inputs = {vinfo("x", {2})};
  m.outputs = {vinfo("y"), vinfo("r"), vinfo("big")};
  m.initializers.emplace_back("a", ftensor({2}, {1, 2}));
  m.initializers.emplace_back("reps", ftensor({2}, {1, 1}));
  m.nodes = {node("RandomUniformLike", {"a"}, {"r"}), node("Tile", {"a", "reps"}, {"big"}),
             node("Add", {"x", "a"}, {"y"})};
  PassResult r = fold_constants(m, fake_hooks(), /*size_cap=*/1 << 20);
  EXPECT_EQ(r.changed, 0u);
  EXPECT_EQ(m.nodes.size(), 3u);
  EXPECT_NE(r.message.find("1 kept over the size cap"), std::string::npos) << r.message;
}

// Bounded work at load: ten Tile nodes of 4 MiB each (under the 64 MiB per-node cap) against a 16 MiB budget.
Model tile_chain(int tiles) {
  Model m = base_model();
  m.inputs = {vinfo("x", {2})};
  m.initializers.emplace_back("a", ftensor({2}, {1, 2}));
  m.initializers.emplace_back("reps", ftensor({2}, {1, 1}));
  for (int i = 0; i < tiles; ++i) {
    std::string out = "t" + std::to_string(i);
    m.nodes.push_back(node("Tile", {"a", "reps"}, {out}, "tile" + std::to_string(i)));
    m.outputs.push_back(vinfo(out));
  }
  return m;
}

TEST(Passes, FoldingOverTheBudgetIsRejectedBeforeAnythingIsComputed) {
  Model m = tile_chain(10);
  std::map<std::string, InferredValue> shapes;
  for (int i = 0; i < 10; ++i) shapes["t" + std::to_string(i)] = {{1024, 1024}, DType::kFloat32};
  PassHooks h = fake_hooks(shapes);
  int evaluated = 0;
  auto inner = h.evaluate;
  h.evaluate = [&](const Model& mm, const Node& n, const std::vector<const Tensor*>& in) {
    ++evaluated;
    return inner(mm, n, in);
  };
  try {
    fold_constants(m, h, /*size_cap=*/64 << 20, /*extra_budget=*/16 << 20);
    FAIL() << "expected the fold budget to reject the model";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kResourceExhausted);
    std::string msg = e.what();
    // 4 nodes (16 MiB) fit; the fifth crosses the budget.
    EXPECT_NE(msg.find("test.onnx: constant folding would create 16 MiB in 4 nodes, and node 'tile4' (Tile) "
                       "would add 4 MiB"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("--max-fold-bytes"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--disable-pass constant-folding"), std::string::npos) << msg;
  }
  EXPECT_EQ(evaluated, 0) << "the prediction must reject before any node is computed";
}

TEST(Passes, FoldingOverTheBudgetIsCaughtWhileEvaluatingWhenShapesAreUnknown) {
  Model m = tile_chain(10);
  try {
    fold_constants(m, fake_hooks(), /*size_cap=*/64 << 20, /*extra_budget=*/16 << 20);
    FAIL() << "expected the fold budget to reject the model";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("constant folding created 16 MiB in 4 nodes, and node 'tile4'"),
              std::string::npos)
        << e.what();
  }
}

TEST(Passes, FoldBudgetGrowsWithTheModelsInitializers) {
  // 20 MiB of initializers: 16 MiB extra + 20 MiB = 36 MiB, enough for eight 4 MiB tiles.
  Model m = tile_chain(8);
  m.initializers.emplace_back("weights", Tensor(DType::kFloat32, {5, 1024, 1024}));
  PassResult r = fold_constants(m, fake_hooks(), /*size_cap=*/64 << 20, /*extra_budget=*/16 << 20);
  EXPECT_EQ(r.changed, 8u);
  EXPECT_TRUE(m.nodes.empty());
}

TEST(Passes, OutputsKnownToBeOverTheCapAreNotComputed) {
  Model m = tile_chain(1);
  PassHooks h = fake_hooks({{"t0", {{1024, 1024}, DType::kFloat32}}});
  h.evaluate = [](const Model&, const Node& n, const std::vector<const Tensor*>&)
      -> std::optional<std::vector<Tensor>> { ADD_FAILURE() << "evaluated " << n.name; return std::nullopt; };
  PassResult r = fold_constants(m, h, /*size_cap=*/1 << 20);
  EXPECT_EQ(r.changed, 0u);
  EXPECT_NE(r.message.find("1 kept over the size cap"), std::string::npos) << r.message;
}

TEST(Passes, ShapeFoldsOnlyWhenTheShapeIsFullyKnown) {
  Model m = base_model();
  m.inputs = {vinfo("x", {2, 3}), vinfo("s", {-1, 3})};
  m.outputs = {vinfo("y"), vinfo("z"), vinfo("n")};
  Attribute start;
  start.name = "start";
  start.type = OPH_ATTR_INT;
  start.i = -1;
  Node tail = node("Shape", {"x"}, {"z"});
  tail.attributes.push_back(start);
  m.nodes = {node("Shape", {"x"}, {"y"}), tail, node("Shape", {"s"}, {"sym"}), node("Size", {"x"}, {"n"}),
             node("Neg", {"sym"}, {"unused"})};
  m.outputs.push_back(vinfo("unused"));
  PassResult r = fold_constants(m, fake_hooks({{"x", {{2, 3}, DType::kFloat32}}, {"s", {{-1, 3}, DType::kFloat32}}}));
  EXPECT_EQ(r.changed, 3u);
  EXPECT_EQ(op_types(m), (std::vector<std::string>{"Shape", "Neg"}));  // Shape of the symbolic input stays
  const Tensor* y = init(m, "y");
  ASSERT_NE(y, nullptr);
  ASSERT_EQ(y->numel(), 2);
  EXPECT_EQ(y->data_as<int64_t>()[0], 2);
  EXPECT_EQ(y->data_as<int64_t>()[1], 3);
  const Tensor* z = init(m, "z");
  ASSERT_NE(z, nullptr);
  ASSERT_EQ(z->numel(), 1);
  EXPECT_EQ(z->data_as<int64_t>()[0], 3);
  EXPECT_EQ(init(m, "n")->data_as<int64_t>()[0], 6);
}

// ----- conv-bn-folding and conv-affine-folding (checked numerically) -----

// Naive NCHW convolution, stride 1, no padding, group 1.
std::vector<float> conv2d(const Tensor& x, const Tensor& w, const Tensor* b) {
  auto xs = x.shape();
  auto ws = w.shape();
  const int64_t C = xs[1], H = xs[2], W = xs[3], OC = ws[0], KH = ws[2], KW = ws[3];
  const int64_t OH = H - KH + 1, OW = W - KW + 1;
  std::vector<float> y(static_cast<size_t>(OC * OH * OW));
  for (int64_t o = 0; o < OC; ++o)
    for (int64_t i = 0; i < OH; ++i)
      for (int64_t j = 0; j < OW; ++j) {
        double acc = b ? b->data_as<float>()[o] : 0.0;
        for (int64_t c = 0; c < C; ++c)
          for (int64_t p = 0; p < KH; ++p)
            for (int64_t q = 0; q < KW; ++q)
              acc += double(x.data_as<float>()[(c * H + i + p) * W + j + q]) *
                     w.data_as<float>()[((o * C + c) * KH + p) * KW + q];
        y[static_cast<size_t>((o * OH + i) * OW + j)] = static_cast<float>(acc);
      }
  return y;
}

TEST(Passes, ConvBatchNormFoldsNumerically) {
  std::mt19937 rng(7);
  const int64_t C = 3, OC = 4;
  Model m = base_model(15);
  m.inputs = {vinfo("x", {1, C, 5, 5})};
  m.outputs = {vinfo("y")};
  Tensor w = random_tensor({OC, C, 3, 3}, rng), b = random_tensor({OC}, rng);
  Tensor scale = random_tensor({OC}, rng, 0.5f, 2), beta = random_tensor({OC}, rng);
  Tensor mean = random_tensor({OC}, rng), var = random_tensor({OC}, rng, 0.1f, 3);
  for (auto& [n, t] : std::vector<std::pair<std::string, Tensor>>{
           {"w", w}, {"b", b}, {"scale", scale}, {"beta", beta}, {"mean", mean}, {"var", var}})
    m.initializers.emplace_back(n, t);
  Node bn = node("BatchNormalization", {"c", "scale", "beta", "mean", "var"}, {"y"});
  bn.attributes.push_back(fattr("epsilon", 1e-3f));
  m.nodes = {node("Conv", {"x", "w", "b"}, {"c"}, "conv"), bn};
  PassResult r = fold_conv_batchnorm(m);
  EXPECT_EQ(r.changed, 1u);
  ASSERT_EQ(op_types(m), (std::vector<std::string>{"Conv"}));
  EXPECT_EQ(m.nodes[0].outputs[0], "y");
  const Tensor* w2 = init(m, m.nodes[0].inputs[1]);
  const Tensor* b2 = init(m, m.nodes[0].inputs[2]);
  ASSERT_TRUE(w2 && b2);

  Tensor x = random_tensor({1, C, 5, 5}, rng);
  std::vector<float> ref = conv2d(x, w, &b);
  const size_t per = ref.size() / OC;
  for (int64_t o = 0; o < OC; ++o)
    for (size_t k = 0; k < per; ++k) {
      float& v = ref[o * per + k];
      v = scale.data_as<float>()[o] * (v - mean.data_as<float>()[o]) / std::sqrt(var.data_as<float>()[o] + 1e-3f) +
          beta.data_as<float>()[o];
    }
  std::vector<float> got = conv2d(x, *w2, b2);
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(got[i], ref[i], 1e-5f * (1 + std::fabs(ref[i]))) << i;
}

TEST(Passes, ConvBatchNormNotFoldedWhenTheConvOutputHasOtherReaders) {
  Model m = base_model(15);
  m.inputs = {vinfo("x", {1, 1, 3, 3})};
  m.outputs = {vinfo("y"), vinfo("c")};
  for (const char* n : {"scale", "beta", "mean", "var"}) m.initializers.emplace_back(n, ftensor({1}, {1}));
  m.initializers.emplace_back("w", ftensor({1, 1, 1, 1}, {2}));
  m.nodes = {node("Conv", {"x", "w"}, {"c"}), node("BatchNormalization", {"c", "scale", "beta", "mean", "var"}, {"y"})};
  EXPECT_EQ(fold_conv_batchnorm(m).changed, 0u);
  EXPECT_EQ(m.nodes.size(), 2u);
}

TEST(Passes, ConvPerChannelMulAddFoldsNumerically) {
  std::mt19937 rng(11);
  const int64_t C = 2, OC = 3;
  Model m = base_model(11);
  m.inputs = {vinfo("x", {1, C, 4, 4})};
  m.outputs = {vinfo("y")};
  Tensor w = random_tensor({OC, C, 1, 1}, rng), mul = random_tensor({1, OC, 1, 1}, rng),
         add = random_tensor({OC, 1, 1}, rng);
  m.initializers.emplace_back("w", w);
  m.initializers.emplace_back("mul", mul);
  m.initializers.emplace_back("add", add);
  m.nodes = {node("Conv", {"x", "w"}, {"c"}, "conv"), node("Mul", {"mul", "c"}, {"d"}), node("Add", {"d", "add"}, {"y"})};
  PassResult r = fold_conv_affine(m);
  EXPECT_EQ(r.changed, 2u);
  ASSERT_EQ(op_types(m), (std::vector<std::string>{"Conv"}));
  Tensor x = random_tensor({1, C, 4, 4}, rng);
  std::vector<float> ref = conv2d(x, w, nullptr);
  const size_t per = ref.size() / OC;
  for (int64_t o = 0; o < OC; ++o)
    for (size_t k = 0; k < per; ++k) ref[o * per + k] = ref[o * per + k] * mul.data_as<float>()[o] + add.data_as<float>()[o];
  std::vector<float> got = conv2d(x, *init(m, m.nodes[0].inputs[1]), init(m, m.nodes[0].inputs[2]));
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(got[i], ref[i], 1e-5f * (1 + std::fabs(ref[i])));
}

TEST(Passes, ConvAddThatBroadcastsSpatiallyIsNotFolded) {
  Model m = base_model(11);
  m.inputs = {vinfo("x", {1, 1, 2, 2})};
  m.outputs = {vinfo("y")};
  m.initializers.emplace_back("w", ftensor({1, 1, 1, 1}, {2}));
  m.initializers.emplace_back("add", ftensor({2, 2}, {1, 2, 3, 4}));  // per pixel, not per channel
  m.nodes = {node("Conv", {"x", "w"}, {"c"}), node("Add", {"c", "add"}, {"y"})};
  EXPECT_EQ(fold_conv_affine(m).changed, 0u);
}

// ----- conv-activation-fusion -----

TEST(Passes, ConvActivationFusesOnlyWhereAPackOptsIn) {
  auto make = [] {
    Model m = base_model(13);
    m.inputs = {vinfo("x", {1, 1, 3, 3})};
    m.outputs = {vinfo("y"), vinfo("z")};
    m.initializers.emplace_back("w", ftensor({1, 1, 1, 1}, {2}));
    m.initializers.emplace_back("lo", ftensor({}, {0}));
    m.initializers.emplace_back("hi", ftensor({}, {6}));
    Node hs = node("HardSigmoid", {"c"}, {"y"});
    hs.attributes.push_back(fattr("alpha", 0.25f));
    m.nodes = {node("Conv", {"x", "w"}, {"c"}, "conv1"), hs, node("Conv", {"x", "w"}, {"d"}, "conv2"),
               node("Clip", {"d", "lo", "hi"}, {"z"})};
    return m;
  };
  PassHooks yes;
  yes.can_fuse_conv = [](const Model&, const Node&, const Node&) { return true; };
  Model m = make();
  PassResult r = fuse_conv_activation(m, yes);
  EXPECT_EQ(r.changed, 2u);
  ASSERT_EQ(m.nodes.size(), 2u);
  EXPECT_EQ(m.opset_imports.at(kFusedDomain), 1);
  const Node& f = m.nodes[0];
  EXPECT_EQ(f.domain, kFusedDomain);
  EXPECT_EQ(f.op_type, kFusedConv);
  EXPECT_EQ(f.outputs[0], "y");
  ASSERT_EQ(f.attributes.size(), 2u);
  EXPECT_EQ(f.attributes[0].s, "HardSigmoid");
  EXPECT_EQ(f.attributes[1].floats, (std::vector<float>{0.25f, 0.5f}));
  EXPECT_EQ(m.nodes[1].attributes[1].floats, (std::vector<float>{0.0f, 6.0f}));

  PassHooks no;
  no.can_fuse_conv = [](const Model&, const Node&, const Node&) { return false; };
  Model m2 = make();
  EXPECT_EQ(fuse_conv_activation(m2, no).changed, 0u);
  EXPECT_EQ(m2.nodes.size(), 4u);
  EXPECT_EQ(m2.opset_imports.count(kFusedDomain), 0u);
}

// HardSwish as exporters before opset 14 write it (PaddlePaddle: x * Clip(x + 3, 0, 6) / 6), followed by a
// scalar affine (PP-OCRv4's learnable affine blocks): one FusedConv with the activation and output scale/shift.
Model hardswish_chain_model(bool extra_reader) {
  Model m = base_model(11);
  m.inputs = {vinfo("x", {1, 1, 3, 3})};
  m.outputs = {vinfo("y")};
  if (extra_reader) m.outputs.push_back(vinfo("c"));
  m.initializers.emplace_back("w", ftensor({1, 1, 1, 1}, {2}));
  m.initializers.emplace_back("three", ftensor({}, {3}));
  m.initializers.emplace_back("zero", ftensor({}, {0}));
  m.initializers.emplace_back("six", ftensor({}, {6}));
  m.initializers.emplace_back("s", ftensor({1}, {0.5f}));
  m.initializers.emplace_back("b", ftensor({}, {0.25f}));
  m.nodes = {node("Conv", {"x", "w"}, {"c"}, "conv"),   node("Add", {"c", "three"}, {"a"}),
             node("Clip", {"a", "zero", "six"}, {"k"}), node("Mul", {"k", "c"}, {"m"}),
             node("Div", {"m", "six"}, {"h"}),          node("Mul", {"s", "h"}, {"p"}),
             node("Add", {"p", "b"}, {"y"})};
  return m;
}

TEST(Passes, HardSwishWrittenOutAndTheScalarAffineAfterItFuseIntoTheConv) {
  PassHooks yes;
  yes.can_fuse_conv = [](const Model&, const Node&, const Node&) { return true; };
  Model m = hardswish_chain_model(false);
  PassResult r = fuse_conv_activation(m, yes);
  EXPECT_EQ(r.changed, 3u) << r.message;  // one chain, two affine nodes
  EXPECT_NE(r.message.find("HardSwish written out as Add/Clip/Mul/Div 1"), std::string::npos) << r.message;
  ASSERT_EQ(m.nodes.size(), 1u);
  const Node& f = m.nodes[0];
  EXPECT_EQ(f.op_type, kFusedConv);
  EXPECT_EQ(f.outputs[0], "y");
  std::map<std::string, const Attribute*> at;
  for (const Attribute& a : f.attributes) at[a.name] = &a;
  ASSERT_TRUE(at.count("activation") && at.count("output_scale") && at.count("output_shift"));
  EXPECT_EQ(at["activation"]->s, "HardSwish");
  EXPECT_FLOAT_EQ(at["output_scale"]->f, 0.5f);
  EXPECT_FLOAT_EQ(at["output_shift"]->f, 0.25f);

  // The Conv's output read by something else too: nothing is fused.
  Model kept = hardswish_chain_model(true);
  PassResult r2 = fuse_conv_activation(kept, yes);
  EXPECT_EQ(r2.changed, 0u) << r2.message;
  EXPECT_EQ(kept.nodes.size(), 7u);

  // No pack opts in: nothing either.
  PassHooks no;
  no.can_fuse_conv = [](const Model&, const Node&, const Node&) { return false; };
  Model m3 = hardswish_chain_model(false);
  EXPECT_EQ(fuse_conv_activation(m3, no).changed, 0u);
}

// Conv -> LeakyRelu -> Max(y, -0.4) (TensorFlow's lower bound, the zoo's embedding_model) -> Min(y, hi): the
// bounds fold into the FusedConv; a Min below the Max's bound (no clamp) and a Max with a tensor stay nodes.
Model clamp_chain_model(float hi, bool tensor_bound = false) {
  Model m = base_model(13);
  m.inputs = {vinfo("x", {1, 1, 3, 3})};
  m.outputs = {vinfo("y")};
  m.initializers.emplace_back("w", ftensor({1, 1, 1, 1}, {2}));
  m.initializers.emplace_back("lo", tensor_bound ? ftensor({2}, {-0.4f, -0.3f}) : ftensor({1, 1, 1, 1}, {-0.4f}));
  m.initializers.emplace_back("hi", ftensor({}, {hi}));
  Node act = node("LeakyRelu", {"c"}, {"a"});
  Attribute alpha;
  alpha.name = "alpha";
  alpha.type = OPH_ATTR_FLOAT;
  alpha.f = 0.2f;
  act.attributes.push_back(alpha);
  m.nodes = {node("Conv", {"x", "w"}, {"c"}, "conv"), act, node("Max", {"a", "lo"}, {"b"}),
             node("Min", {"hi", "b"}, {"y"})};
  return m;
}

TEST(Passes, ScalarMaxAndMinAfterAFusedConvFoldIntoItsOutputBounds) {
  PassHooks yes;
  yes.can_fuse_conv = [](const Model&, const Node&, const Node&) { return true; };
  Model m = clamp_chain_model(6.0f);
  PassResult r = fuse_conv_activation(m, yes);
  EXPECT_EQ(r.changed, 3u) << r.message;
  EXPECT_NE(r.message.find("2 scalar Max/Min after them folded into the output bounds"), std::string::npos) << r.message;
  ASSERT_EQ(m.nodes.size(), 1u);
  std::map<std::string, const Attribute*> at;
  for (const Attribute& a : m.nodes[0].attributes) at[a.name] = &a;
  ASSERT_TRUE(at.count("output_min") && at.count("output_max"));
  EXPECT_FLOAT_EQ(at["output_min"]->f, -0.4f);
  EXPECT_FLOAT_EQ(at["output_max"]->f, 6.0f);
  EXPECT_EQ(m.nodes[0].outputs[0], "y");

  // Min(Max(y, -0.4), -1) is -1 everywhere, not a clamp to [-0.4, -1]: the Min stays a node.
  Model crossed = clamp_chain_model(-1.0f);
  EXPECT_EQ(fuse_conv_activation(crossed, yes).changed, 2u);
  ASSERT_EQ(crossed.nodes.size(), 2u);
  EXPECT_EQ(crossed.nodes[1].op_type, "Min");

  // A per-element bound is not a scalar: LeakyRelu fuses, Max and Min stay.
  Model tensor_bound = clamp_chain_model(6.0f, true);
  EXPECT_EQ(fuse_conv_activation(tensor_bound, yes).changed, 1u);
  EXPECT_EQ(tensor_bound.nodes.size(), 3u);
}

TEST(Passes, CustomDomainActivationsAreNeverFusedByName) {
  Model m = base_model(13);
  m.opset_imports["myops"] = 1;
  m.inputs = {vinfo("x", {1, 1, 3, 3})};
  m.outputs = {vinfo("y")};
  m.initializers.emplace_back("w", ftensor({1, 1, 1, 1}, {2}));
  Node act = node("Relu", {"c"}, {"y"});
  act.domain = "myops";
  m.nodes = {node("Conv", {"x", "w"}, {"c"}), act};
  PassHooks yes;
  yes.can_fuse_conv = [](const Model&, const Node&, const Node&) { return true; };
  EXPECT_EQ(fuse_conv_activation(m, yes).changed, 0u);
}

// ----- conv-add-fusion -----

TEST(Passes, ConvAddBecomesFusedConvWithZAndTheReluAfterItFusesToo) {
  Model m = base_model(13);
  m.inputs = {vinfo("x", {1, 8, 4, 4})};
  m.outputs = {vinfo("y"), vinfo("v")};
  m.initializers.emplace_back("w", ftensor({8, 8, 1, 1}, std::vector<float>(64, 0.5f)));
  m.initializers.emplace_back("bias", ftensor({1, 8, 1, 1}, std::vector<float>(8, 1.0f)));
  // c1 + x (a residual, then Relu); c2 + c3 (both Conv outputs: the later Conv takes the other as Z);
  // c4 + bias (broadcasts: not a Z).
  m.nodes = {node("Conv", {"x", "w"}, {"c1"}, "conv1"), node("Add", {"c1", "x"}, {"a"}),
             node("Relu", {"a"}, {"y"}),                 node("Conv", {"x", "w"}, {"c2"}, "conv2"),
             node("Conv", {"x", "w"}, {"c3"}, "conv3"),  node("Add", {"c2", "c3"}, {"s"}),
             node("Conv", {"s", "w"}, {"c4"}, "conv4"),  node("Add", {"c4", "bias"}, {"v"})};
  std::map<std::string, InferredValue> shapes;
  for (const char* v : {"x", "c1", "a", "y", "c2", "c3", "s", "c4", "v"}) shapes[v] = f32_shape({1, 8, 4, 4});
  shapes["bias"] = f32_shape({1, 8, 1, 1});
  PassHooks h = fake_hooks(shapes);
  h.can_fuse_conv = [](const Model&, const Node&, const Node&) { return true; };
  PassResult r = fuse_conv_add(m, h);
  EXPECT_EQ(r.changed, 2u) << r.message;
  EXPECT_EQ(op_types(m), (std::vector<std::string>{kFusedConv, "Relu", "Conv", kFusedConv, "Conv", "Add"}));
  EXPECT_EQ(m.nodes[0].inputs, (std::vector<std::string>{"x", "w", "", "x"}));
  EXPECT_EQ(m.nodes[0].outputs[0], "a");
  EXPECT_EQ(m.nodes[3].name, "conv3");
  EXPECT_EQ(m.nodes[3].inputs, (std::vector<std::string>{"x", "w", "", "c2"}));
  EXPECT_EQ(m.nodes[3].outputs[0], "s");

  EXPECT_EQ(fuse_conv_activation(m, h).changed, 1u);
  ASSERT_EQ(op_types(m), (std::vector<std::string>{kFusedConv, "Conv", kFusedConv, "Conv", "Add"}));
  EXPECT_EQ(m.nodes[0].outputs[0], "y");
  ASSERT_NE(attr_of(m.nodes[0], "activation"), nullptr);
  EXPECT_EQ(attr_of(m.nodes[0], "activation")->s, "Relu");

  // Without a pack that serves the fused op, or without shapes, nothing changes.
  Model m2 = base_model(13);
  m2.nodes = {node("Conv", {"x", "w"}, {"c1"}), node("Add", {"c1", "x"}, {"y"})};
  m2.initializers.emplace_back("w", ftensor({8, 8, 1, 1}, std::vector<float>(64, 0.5f)));
  PassHooks no = fake_hooks(shapes);
  no.can_fuse_conv = [](const Model&, const Node&, const Node&) { return false; };
  EXPECT_EQ(fuse_conv_add(m2, no).changed, 0u);
  h.infer_shapes = [](const Model&) { return std::map<std::string, InferredValue>{}; };
  EXPECT_EQ(fuse_conv_add(m2, h).changed, 0u);
}

// ----- pad-conv-folding -----


TEST(Passes, ZeroSpatialPadFoldsIntoTheConvsPads) {
  auto make = [](std::vector<int64_t> pads, float value) {
    Model m = base_model(13);
    m.inputs = {vinfo("x", {1, 8, 5, 5})};
    m.outputs = {vinfo("y")};
    m.initializers.emplace_back("pads", itensor(std::move(pads)));
    m.initializers.emplace_back("v", ftensor({}, {value}));
    m.initializers.emplace_back("w", ftensor({8, 8, 3, 3}, std::vector<float>(576, 0.1f)));
    Node conv = node("Conv", {"p", "w"}, {"y"}, "conv");
    Attribute a;
    a.name = "pads";
    a.type = OPH_ATTR_INTS;
    a.ints = {1, 0, 0, 1};
    conv.attributes.push_back(a);
    m.nodes = {node("Pad", {"x", "pads", "v"}, {"p"}), conv};
    return m;
  };
  // TF's SAME for stride 2: one row and column at the end.
  Model m = make({0, 0, 0, 0, 0, 0, 1, 1}, 0.0f);
  EXPECT_EQ(fold_pad_into_conv(m).changed, 1u);
  ASSERT_EQ(op_types(m), (std::vector<std::string>{"Conv"}));
  EXPECT_EQ(m.nodes[0].inputs[0], "x");
  EXPECT_EQ(attr_of(m.nodes[0], "pads")->ints, (std::vector<int64_t>{1, 0, 1, 2}));
  // Not zeros, a padded channel axis, cropping: the Pad stays.
  for (Model other : {make({0, 0, 0, 0, 0, 0, 1, 1}, 1.0f), make({0, 1, 0, 0, 0, 0, 1, 1}, 0.0f),
                      make({0, 0, -1, 0, 0, 0, 1, 1}, 0.0f)}) {
    EXPECT_EQ(fold_pad_into_conv(other).changed, 0u);
    EXPECT_EQ(other.nodes.size(), 2u);
  }
}

TEST(Passes, ZeroPadIsRemovedAndSpatialPadFoldsIntoAnAveragePoolCountingPads) {
  auto make = [](std::vector<int64_t> pads, int64_t ceil_mode, int64_t opset = 13) {
    Model m = base_model(opset);
    m.inputs = {vinfo("x", {1, 8, 6, 6})};
    m.outputs = {vinfo("y"), vinfo("z")};
    m.initializers.emplace_back("pads", itensor(std::move(pads)));
    Node pool = node("AveragePool", {"p"}, {"y"}, "pool");
    Attribute k;
    k.name = "kernel_shape";
    k.type = OPH_ATTR_INTS;
    k.ints = {3, 3};
    pool.attributes.push_back(k);
    Attribute c;
    c.name = "ceil_mode";
    c.type = OPH_ATTR_INT;
    c.i = ceil_mode;
    pool.attributes.push_back(c);
    m.nodes = {node("Pad", {"x", "pads"}, {"p"}), pool, node("Relu", {"x"}, {"z"})};
    return m;
  };
  // PyTorch's avg_pool2d(padding=1): the Pad becomes the pool's pads, counted in every window's divisor.
  Model m = make({0, 0, 1, 1, 0, 0, 1, 1}, 0);
  EXPECT_EQ(fold_pad_into_conv(m).changed, 1u);
  ASSERT_EQ(op_types(m), (std::vector<std::string>{"AveragePool", "Relu"}));
  EXPECT_EQ(m.nodes[0].inputs[0], "x");
  EXPECT_EQ(attr_of(m.nodes[0], "pads")->ints, (std::vector<int64_t>{1, 1, 1, 1}));
  ASSERT_NE(attr_of(m.nodes[0], "count_include_pad"), nullptr);
  EXPECT_EQ(attr_of(m.nodes[0], "count_include_pad")->i, 1);
  // ceil_mode (a last window may reach past the padding), opset 1-6 (no count_include_pad): the Pad stays.
  for (Model other : {make({0, 0, 1, 1, 0, 0, 1, 1}, 1), make({0, 0, 1, 1, 0, 0, 1, 1}, 0, 6)}) {
    EXPECT_EQ(fold_pad_into_conv(other).changed, 0u);
    EXPECT_EQ(other.nodes.size(), 3u);
  }
  // All-zero pads: a copy, removed whatever reads it (here a ceil_mode pool), the readers read x.
  Model z = make({0, 0, 0, 0, 0, 0, 0, 0}, 1);
  EXPECT_EQ(fold_pad_into_conv(z).changed, 1u);
  ASSERT_EQ(op_types(z), (std::vector<std::string>{"AveragePool", "Relu"}));
  EXPECT_EQ(z.nodes[0].inputs[0], "x");
  EXPECT_EQ(z.nodes[0].outputs[0], "y");
  EXPECT_EQ(attr_of(z.nodes[0], "count_include_pad"), nullptr);
  // ... unless its output is a graph output.
  Model g = make({0, 0, 0, 0, 0, 0, 0, 0}, 0);
  g.outputs.push_back(vinfo("p"));
  EXPECT_EQ(fold_pad_into_conv(g).changed, 0u);
}

// ----- nchwc-layout -----

// x [1,3,8,8] -> conv0 (16 ch) -> Relu -> conv1 (16) -> Add(conv1, relu) -> MaxPool; the Add also feeds
// conv2 (12 ch, never blocked) -> graph output.
Model nchwc_model() {
  Model m = base_model(13);
  m.inputs = {vinfo("x", {1, 3, 8, 8})};
  m.outputs = {vinfo("p"), vinfo("z")};
  m.initializers.emplace_back("w0", ftensor({16, 3, 1, 1}, std::vector<float>(48, 0.1f)));
  m.initializers.emplace_back("w1", ftensor({16, 16, 1, 1}, std::vector<float>(256, 0.1f)));
  m.initializers.emplace_back("w2", ftensor({12, 16, 1, 1}, std::vector<float>(192, 0.1f)));
  m.nodes = {node("Conv", {"x", "w0"}, {"c0"}, "conv0"), node("Relu", {"c0"}, {"r"}),
             node("Conv", {"r", "w1"}, {"c1"}, "conv1"), node("Add", {"c1", "r"}, {"s"}),
             node("MaxPool", {"s"}, {"p"}),              node("Conv", {"s", "w2"}, {"z"}, "conv2")};
  return m;
}

std::map<std::string, InferredValue> nchwc_shapes() {
  std::map<std::string, InferredValue> s;
  s["x"] = f32_shape({1, 3, 8, 8});
  for (const char* v : {"c0", "r", "c1", "s"}) s[v] = f32_shape({1, 16, 8, 8});
  s["p"] = f32_shape({1, 16, 4, 4});
  s["z"] = f32_shape({1, 12, 8, 8});
  return s;
}

TEST(Passes, NchwcLayoutKeepsChainsBlockedAndReordersAtTheEdges) {
  Model m = nchwc_model();
  PassHooks h = fake_hooks(nchwc_shapes());
  h.can_block_conv = [](const Model&, const Node&) { return true; };
  PassResult r = assign_nchwc_layout(m, h);
  EXPECT_EQ(r.changed, 4u) << r.message;  // 3 convolutions, 1 reorder
  ASSERT_EQ(op_types(m), (std::vector<std::string>{kFusedConv, "Relu", kFusedConv, "Add", kLayoutReorder,
                                                   "MaxPool", kFusedConv}));
  EXPECT_EQ(m.opset_imports.at(kFusedDomain), 1);
  auto flag = [](const Node& n, const char* name) {
    const Attribute* a = attr_of(n, name);
    return a && a->type == OPH_ATTR_INT && a->i == 1;
  };
  // conv0: plain graph input in, blocked out.
  EXPECT_FALSE(flag(m.nodes[0], "x_blocked"));
  EXPECT_TRUE(flag(m.nodes[0], "y_blocked"));
  // conv1: blocked in and out; Relu and Add run on the blocked values unchanged.
  EXPECT_TRUE(flag(m.nodes[2], "x_blocked"));
  EXPECT_TRUE(flag(m.nodes[2], "y_blocked"));
  EXPECT_EQ(m.nodes[3].inputs, (std::vector<std::string>{"c1", "r"}));
  // MaxPool reads a plain copy of s; conv2 reads s blocked and writes its 12 channels (and the graph output)
  // plain.
  EXPECT_EQ(m.nodes[4].inputs, (std::vector<std::string>{"s"}));
  EXPECT_EQ(attr_of(m.nodes[4], "to")->s, "plain");
  EXPECT_EQ(m.nodes[5].inputs[0], m.nodes[4].outputs[0]);
  EXPECT_EQ(m.nodes[6].inputs[0], "s");
  EXPECT_TRUE(flag(m.nodes[6], "x_blocked"));
  EXPECT_FALSE(flag(m.nodes[6], "y_blocked"));
  EXPECT_EQ(m.nodes[6].outputs[0], "z");
}

// The same graph exported with a dynamic batch and spatial size (the zoo's embedding_model: [?,76,32,1]): the
// channel counts alone decide what stays blocked; the Add of two tensors whose shapes are not known to match
// reads plain copies.
TEST(Passes, NchwcLayoutBlocksValuesOfUnknownBatchAndSpatialSize) {
  Model m = nchwc_model();
  std::map<std::string, InferredValue> shapes = nchwc_shapes();
  for (auto& [name, v] : shapes) v.dims[0] = v.dims[2] = v.dims[3] = -1;
  PassHooks h = fake_hooks(shapes);
  h.can_block_conv = [](const Model&, const Node&) { return true; };
  PassResult r = assign_nchwc_layout(m, h);
  EXPECT_EQ(r.changed, 3u) << r.message;  // conv0 and conv1 blocked, 1 reorder
  ASSERT_EQ(op_types(m), (std::vector<std::string>{kFusedConv, "Relu", kFusedConv, kLayoutReorder, "Add",
                                                   "MaxPool", "Conv"}));
  auto flag = [](const Node& n, const char* name) {
    const Attribute* a = attr_of(n, name);
    return a && a->type == OPH_ATTR_INT && a->i == 1;
  };
  EXPECT_TRUE(flag(m.nodes[0], "y_blocked"));  // conv0 -> Relu -> conv1 stay blocked
  EXPECT_TRUE(flag(m.nodes[2], "x_blocked"));
  EXPECT_FALSE(flag(m.nodes[2], "y_blocked"));  // its only reader, the Add, does not take it blocked
  EXPECT_EQ(m.nodes[3].inputs, (std::vector<std::string>{"r"}));
  EXPECT_EQ(m.nodes[4].inputs, (std::vector<std::string>{"c1", m.nodes[3].outputs[0]}));
}

TEST(Passes, NchwcLayoutConcatenatesBlockedChannelsOnlyInWholeBlocksOf16) {
  // x -> conv a (16 ch), conv b (16 ch or 8 ch) -> Concat(axis 1) -> conv c -> y
  auto make = [](int64_t b_channels) {
    Model m = base_model(13);
    m.inputs = {vinfo("x", {1, 16, 4, 4})};
    m.outputs = {vinfo("y")};
    m.initializers.emplace_back("wa", ftensor({16, 16, 1, 1}, std::vector<float>(256, 0.1f)));
    m.initializers.emplace_back("wb", ftensor({b_channels, 16, 1, 1}, std::vector<float>(16 * b_channels, 0.1f)));
    m.initializers.emplace_back("wc", ftensor({16, 16 + b_channels, 1, 1}, std::vector<float>(16 * (16 + b_channels), 0.1f)));
    Node cat = node("Concat", {"a", "b"}, {"k"});
    Attribute axis;
    axis.name = "axis";
    axis.type = OPH_ATTR_INT;
    axis.i = 1;
    cat.attributes.push_back(axis);
    m.nodes = {node("Conv", {"x", "wa"}, {"a"}), node("Conv", {"x", "wb"}, {"b"}), cat, node("Conv", {"k", "wc"}, {"y"})};
    std::map<std::string, InferredValue> shapes = {{"x", f32_shape({1, 16, 4, 4})}, {"a", f32_shape({1, 16, 4, 4})},
                                                   {"b", f32_shape({1, b_channels, 4, 4})},
                                                   {"k", f32_shape({1, 16 + b_channels, 4, 4})},
                                                   {"y", f32_shape({1, 16, 4, 4})}};
    return std::make_pair(m, shapes);
  };
  for (int64_t bc : {16, 8}) {
    auto [m, shapes] = make(bc);
    PassHooks h = fake_hooks(shapes);
    h.can_block_conv = [](const Model&, const Node&) { return true; };
    assign_nchwc_layout(m, h);
    if (bc == 16) {
      // Both inputs blocked, the Concat unchanged, the last Conv reads its output blocked.
      EXPECT_EQ(op_types(m), (std::vector<std::string>{kFusedConv, kFusedConv, "Concat", kFusedConv}));
      EXPECT_NE(attr_of(m.nodes[3], "x_blocked"), nullptr);
    } else {
      // 8 channels: not a whole block of 16; everything stays plain.
      EXPECT_EQ(op_types(m), (std::vector<std::string>{"Conv", "Conv", "Concat", "Conv"}));
    }
  }
}

TEST(Passes, NchwcLayoutRunsMaxPoolBlockedWhereThePackServesIt) {
  Model m = nchwc_model();
  m.outputs = {vinfo("q"), vinfo("z")};
  m.nodes.insert(m.nodes.begin() + 5, node("Relu", {"p"}, {"q"}));  // the pooled value, then a graph output
  auto shapes = nchwc_shapes();
  shapes["q"] = shapes["p"];
  PassHooks h = fake_hooks(shapes);
  h.can_block_conv = [](const Model&, const Node&) { return true; };
  h.can_block_op = [](const Model&, const Node&, const char* op) { return std::string(op) == kBlockedMaxPool; };
  assign_nchwc_layout(m, h);
  // MaxPool reads s blocked and writes p blocked; the Relu writing the graph output q reads a plain copy of p.
  ASSERT_EQ(op_types(m), (std::vector<std::string>{kFusedConv, "Relu", kFusedConv, "Add", kBlockedMaxPool,
                                                   kLayoutReorder, "Relu", kFusedConv}));
  EXPECT_EQ(m.nodes[4].domain, kFusedDomain);
  EXPECT_EQ(m.nodes[4].inputs[0], "s");
  EXPECT_EQ(m.nodes[5].inputs[0], "p");
  EXPECT_EQ(m.nodes[6].inputs[0], m.nodes[5].outputs[0]);
}

TEST(Passes, NchwcLayoutRunsAveragePoolBlockedUnlessItsLastWindowWouldDivideDifferently) {
  auto make = [](int64_t count_include_pad, int64_t ceil_mode) {
    Model m = nchwc_model();
    m.outputs = {vinfo("q"), vinfo("z")};
    m.nodes.insert(m.nodes.begin() + 5, node("Relu", {"p"}, {"q"}));  // the pooled value is no graph output
    m.nodes[4].op_type = "AveragePool";
    for (auto [name, v] : {std::pair{"count_include_pad", count_include_pad}, std::pair{"ceil_mode", ceil_mode}}) {
      Attribute a;
      a.name = name;
      a.type = OPH_ATTR_INT;
      a.i = v;
      m.nodes[4].attributes.push_back(a);
    }
    return m;
  };
  auto hooks = [] {
    auto shapes = nchwc_shapes();
    shapes["q"] = shapes["p"];
    PassHooks h = fake_hooks(shapes);
    h.can_block_conv = [](const Model&, const Node&) { return true; };
    h.can_block_op = [](const Model&, const Node&, const char* op) { return std::string(op) == kBlockedAveragePool; };
    return h;
  };
  for (auto [cip, ceil] : {std::pair{0, 0}, std::pair{0, 1}, std::pair{1, 0}}) {
    Model m = make(cip, ceil);
    assign_nchwc_layout(m, hooks());
    EXPECT_EQ(op_types(m)[4], kBlockedAveragePool) << "count_include_pad " << cip << ", ceil_mode " << ceil;
  }
  // Both set: a window past the end padding divides by its clipped size in ONNX, by the kernel's in oneDNN.
  Model m = make(1, 1);
  assign_nchwc_layout(m, hooks());
  const auto ops = op_types(m);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), kBlockedAveragePool), 0);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "AveragePool"), 1);
}

TEST(Passes, NchwcLayoutNeedsAPackAndNeverBlocksAGraphOutput) {
  Model m = nchwc_model();
  PassHooks no = fake_hooks(nchwc_shapes());
  no.can_block_conv = [](const Model&, const Node&) { return false; };
  EXPECT_EQ(assign_nchwc_layout(m, no).changed, 0u);
  EXPECT_EQ(op_types(m), op_types(nchwc_model()));

  // The Add's output is a graph output now: the Add is no longer layout-oblivious, so its inputs are read
  // plain (conv1 writes plain; r gets a plain copy).
  Model m2 = nchwc_model();
  m2.outputs.push_back(vinfo("s"));
  PassHooks h = fake_hooks(nchwc_shapes());
  h.can_block_conv = [](const Model&, const Node&) { return true; };
  assign_nchwc_layout(m2, h);
  ASSERT_EQ(op_types(m2), (std::vector<std::string>{kFusedConv, "Relu", kFusedConv, kLayoutReorder, "Add",
                                                    "MaxPool", "Conv"}));
  EXPECT_TRUE(attr_of(m2.nodes[2], "x_blocked") != nullptr);
  EXPECT_EQ(attr_of(m2.nodes[2], "y_blocked"), nullptr);
  EXPECT_EQ(m2.nodes[4].inputs, (std::vector<std::string>{"c1", m2.nodes[3].outputs[0]}));
}

// ----- the pipeline -----

TEST(Passes, LevelsAndDisabledPasses) {
  auto make = [] {
    Model m = base_model();
    m.inputs = {vinfo("x", {2})};
    m.outputs = {vinfo("y")};
    m.nodes = {node("Identity", {"x"}, {"a"}), node("Neg", {"a"}, {"y"}), node("Exp", {"a"}, {"dead"})};
    return m;
  };
  Model m0 = make();
  EXPECT_TRUE(run_passes(m0, PassOptions{0, {}}, {}).empty());
  EXPECT_EQ(m0.nodes.size(), 3u);

  Model m1 = make();
  run_passes(m1, PassOptions{1, {}}, {});
  EXPECT_EQ(op_types(m1), (std::vector<std::string>{"Neg"}));

  Model m2 = make();
  run_passes(m2, PassOptions{3, {"identity-elimination"}}, {});
  EXPECT_EQ(op_types(m2), (std::vector<std::string>{"Identity", "Neg"}));

  Model m3 = make();
  EXPECT_THROW(run_passes(m3, PassOptions{3, {"no-such-pass"}}, {}), Error);
  EXPECT_THROW(run_passes(m3, PassOptions{4, {}}, {}), Error);
  for (const PassInfo& p : all_passes()) {
    EXPECT_GE(p.level, 1);
    EXPECT_LE(p.level, 3);
  }
}

}  // namespace
}  // namespace ophost
