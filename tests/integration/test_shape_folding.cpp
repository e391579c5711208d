// Constant folding follows shapes through the nodes it keeps in one sweep (PassHooks::infer_node): the window
// reshapes PyTorch exports (Swin-T: Shape -> Gather -> Unsqueeze -> Concat -> Reshape, then Shape of that Reshape
// for the next one) fold completely for a model of static input shape, and the folded graph computes what the
// unfolded one does.
#include "integration_support.hpp"

#include <ophost/runtime.hpp>

#include <algorithm>

namespace ophost::itest {
namespace {

void int64_init(ModelBuilder& b, const std::string& name, const std::vector<int64_t>& v) {
  auto* t = b.m.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(v.size()));
  for (int64_t x : v) t->add_int64_data(x);
}

// x [2, 12, 8] through `levels` rounds of: s = Shape(h); d0 = Gather(s, 0); d1 = Gather(s, 1); d2 = Gather(s, 2);
// h' = Reshape(Transpose(h), Concat(Unsqueeze(d0), Unsqueeze(d2), Unsqueeze(d1)))... each level's shape read
// from the previous level's Reshape, as an exporter writes view() of a computed size.
fs::path shape_chain(const fs::path& dir, int levels) {
  ModelBuilder b({{"", 13}});
  b.input("x", {2, 12, 8});
  int64_init(b, "i0", {0});
  int64_init(b, "i1", {1});
  int64_init(b, "i2", {2});
  int64_init(b, "ax", {0});
  std::string h = "x";
  for (int l = 0; l < levels; ++l) {
    const std::string p = "l" + std::to_string(l) + "_";
    b.node("Shape", {h}, {p + "s"}, p + "shape");
    for (int k = 0; k < 3; ++k) {
      const std::string d = p + "d" + std::to_string(k);
      b.node("Gather", {p + "s", "i" + std::to_string(k)}, {d}, d + "_gather");
    }
    auto* t = b.node("Transpose", {h}, {p + "t"}, p + "transpose");
    auto* perm = t->add_attribute();
    perm->set_name("perm");
    perm->set_type(onnx::AttributeProto::INTS);
    for (int64_t v : {0, 2, 1}) perm->add_ints(v);
    b.node("Concat", {p + "d0", p + "d2", p + "d1"}, {p + "shape_t"}, p + "concat");
    ModelBuilder::attr_int(b.m.mutable_graph()->mutable_node(b.m.graph().node_size() - 1), "axis", 0);
    b.node("Reshape", {p + "t", p + "shape_t"}, {p + "h"}, p + "reshape");
    b.node("Relu", {p + "h"}, {p + "r"}, p + "relu");
    h = p + "r";
  }
  b.node("Identity", {h}, {"y"}, "out");
  b.output("y", {});
  return b.save(dir / "shape_chain.onnx");
}

std::vector<std::string> ops_of(const Session& s) {
  std::vector<std::string> o;
  for (const KernelInfo& k : s.kernels()) o.push_back(k.op);
  return o;
}

TEST(ShapeFolding, ReshapesOfComputedShapesFoldInOneSweep) {
  TempDir dir;
  const fs::path model = shape_chain(dir.path(), 6);
  auto rt = build_tree_runtime();
  auto folded = rt->load(model);
  SessionOptions none;
  none.opt_level = 0;
  auto plain = rt->load(model, none);
  const std::vector<std::string> ops = ops_of(*folded);
  // Every Shape/Gather/Concat folded: six Transpose -> Reshape -> Relu levels remain.
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "Shape"), 0) << ::testing::PrintToString(ops);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "Gather"), 0) << ::testing::PrintToString(ops);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "Concat"), 0) << ::testing::PrintToString(ops);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "Reshape"), 6) << ::testing::PrintToString(ops);
  EXPECT_GT(ops_of(*plain).size(), ops.size() + 6 * 5 - 1);

  Tensor x(DType::kFloat32, {2, 12, 8});
  for (int64_t i = 0; i < x.numel(); ++i) x.data_as<float>()[i] = static_cast<float>((i * 37) % 101) - 50.0f;
  std::vector<NamedTensor> a, b;
  folded->run({{"x", x}}, a);
  plain->run({{"x", x}}, b);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  ASSERT_TRUE(std::equal(a[0].tensor.shape().begin(), a[0].tensor.shape().end(), b[0].tensor.shape().begin(),
                         b[0].tensor.shape().end()));
  for (int64_t i = 0; i < b[0].tensor.numel(); ++i)
    ASSERT_EQ(a[0].tensor.data_as<float>()[i], b[0].tensor.data_as<float>()[i]) << "element " << i;

  // All of it in the first sweep (the second finds nothing left): the log line says how many.
  ProcResult r = ophost({"inspect", model.string(), "--log-level", "info"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE((r.out + r.err).find("Shape/Size of known shapes) in 2 sweeps"), std::string::npos) << r.out + r.err;
}

}  // namespace
}  // namespace ophost::itest
