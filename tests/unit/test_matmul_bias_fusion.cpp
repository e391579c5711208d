// matmul-bias-fusion: MatMul(A, constant W) followed by Add of a constant 1-D bias -> com.ophost::FusedMatMul;
// every variant that would not compute the same thing (or would change the output's shape) is left alone. The
// numbers of the fused op are checked against float64 in tests/data/onnx_core/check_matmul_packed.py.
#include "passes/passes.hpp"
#include "unit/pass_test_util.hpp"

#include <gtest/gtest.h>

namespace ophost {
namespace {

using namespace pass_test;

struct MmVariant {
  std::vector<int64_t> w_shape = {8, 4};
  std::vector<int64_t> bias_shape = {4};
  bool bias_first = false;   // Add(bias, h) instead of Add(h, bias)
  bool w_input = false;      // W a graph input, not a constant
  bool bias_input = false;   // bias a graph input
  bool h_output = false;     // h also a graph output
  bool h_second_reader = false;
};

Model mm_model(const MmVariant& v) {
  Model m = base_model(14);
  m.inputs = {vinfo("a", {2, 3, v.w_shape[0]})};
  m.outputs = {vinfo("y")};
  std::mt19937 rng(3);
  if (v.w_input) m.inputs.push_back(vinfo("w", v.w_shape));
  else m.initializers.emplace_back("w", random_tensor(v.w_shape, rng));
  if (v.bias_input) m.inputs.push_back(vinfo("bias", v.bias_shape));
  else m.initializers.emplace_back("bias", random_tensor(v.bias_shape, rng));
  m.nodes = {node("MatMul", {"a", "w"}, {"h"}, "/fc/MatMul"),
             node("Add", v.bias_first ? std::vector<std::string>{"bias", "h"} : std::vector<std::string>{"h", "bias"},
                  {"y"}, "/fc/Add")};
  if (v.h_output) m.outputs.push_back(vinfo("h"));
  if (v.h_second_reader) {
    m.nodes.push_back(node("Neg", {"h"}, {"other"}));
    m.outputs.push_back(vinfo("other"));
  }
  return m;
}

PassHooks mm_hooks(bool served = true, std::vector<std::string>* asked = nullptr) {
  return fusing_hooks(served, asked);
}

TEST(MatMulBiasFusion, MatMulThenAddOfABiasBecomesFusedMatMul) {
  for (bool bias_first : {false, true}) {
    MmVariant v;
    v.bias_first = bias_first;
    Model m = mm_model(v);
    std::vector<std::string> asked;
    PassResult r = fuse_matmul_bias(m, mm_hooks(true, &asked));
    EXPECT_EQ(r.changed, 1u);
    EXPECT_EQ(r.message, "1 MatMul + Add pairs fused");
    ASSERT_EQ(m.nodes.size(), 1u);
    const Node& f = m.nodes[0];
    EXPECT_EQ(f.domain, kFusedDomain);
    EXPECT_EQ(f.op_type, kFusedMatMul);
    EXPECT_EQ(f.name, "/fc/MatMul");
    EXPECT_EQ(f.inputs, (std::vector<std::string>{"a", "w", "bias"}));
    EXPECT_EQ(f.outputs, (std::vector<std::string>{"y"}));
    EXPECT_EQ(m.opset_imports.at(kFusedDomain), 1);
    EXPECT_EQ(asked, (std::vector<std::string>{"FusedMatMul", "MatMul", "Add"}));
  }
}

TEST(MatMulBiasFusion, VariantsThatWouldNotComputeTheSameAreLeftAlone) {
  std::vector<std::pair<std::string, MmVariant>> cases;
  MmVariant v;
  v.bias_shape = {1, 4};  // would add a dim to a 1-D product: only rank-1 biases
  cases.emplace_back("bias [1, N]", v);
  v = {};
  v.bias_shape = {8};
  cases.emplace_back("bias of the wrong length", v);
  v = {};
  v.bias_shape = {1};
  cases.emplace_back("one-value bias", v);
  v = {};
  v.w_input = true;
  cases.emplace_back("W not a constant", v);
  v = {};
  v.bias_input = true;
  cases.emplace_back("bias not a constant", v);
  v = {};
  v.w_shape = {2, 4, 4};
  v.bias_shape = {4};
  cases.emplace_back("W of rank 3", v);
  v = {};
  v.h_output = true;
  cases.emplace_back("h a graph output", v);
  v = {};
  v.h_second_reader = true;
  cases.emplace_back("h read twice", v);
  for (const auto& [what, variant] : cases) {
    Model m = mm_model(variant);
    const size_t before = m.nodes.size();
    PassResult r = fuse_matmul_bias(m, mm_hooks());
    EXPECT_EQ(r.changed, 0u) << what;
    EXPECT_EQ(m.nodes.size(), before) << what;
    EXPECT_EQ(m.nodes[0].op_type, "MatMul") << what;
  }
}

TEST(MatMulBiasFusion, NeedsAPackAndNoClashingComOphostVersion) {
  Model m = mm_model({});
  PassResult r = fuse_matmul_bias(m, mm_hooks(false));
  EXPECT_EQ(r.message, "0 MatMul + Add pairs fused; 1 left: no pack serves com.ophost::FusedMatMul for them");
  EXPECT_EQ(op_types(m), (std::vector<std::string>{"MatMul", "Add"}));
  Model m2 = mm_model({});
  m2.opset_imports["com.ophost"] = 2;
  PassResult r2 = fuse_matmul_bias(m2, mm_hooks());
  EXPECT_EQ(r2.changed, 0u);
  EXPECT_NE(r2.message.find("imports domain com.ophost at version 2"), std::string::npos) << r2.message;
}

TEST(MatMulBiasFusion, ChainedLinearLayersAllFuse) {
  // a -> Linear -> Linear -> Linear: each pair fuses; the second's A is the first's fused output.
  Model m = base_model(14);
  m.inputs = {vinfo("a", {5, 8})};
  m.outputs = {vinfo("y2")};
  std::mt19937 rng(9);
  std::string in = "a";
  for (int i = 0; i < 3; ++i) {
    const std::string s = std::to_string(i);
    m.initializers.emplace_back("w" + s, random_tensor({8, 8}, rng));
    m.initializers.emplace_back("b" + s, random_tensor({8}, rng));
    m.nodes.push_back(node("MatMul", {in, "w" + s}, {"h" + s}));
    m.nodes.push_back(node("Add", {"h" + s, "b" + s}, {"y" + s}));
    in = "y" + s;
  }
  PassResult r = fuse_matmul_bias(m, mm_hooks());
  EXPECT_EQ(r.changed, 3u);
  ASSERT_EQ(op_types(m), (std::vector<std::string>{"FusedMatMul", "FusedMatMul", "FusedMatMul"}));
  EXPECT_EQ(m.nodes[1].inputs, (std::vector<std::string>{"y0", "w1", "b1"}));
  EXPECT_EQ(m.nodes[2].outputs, (std::vector<std::string>{"y2"}));
}

}  // namespace
}  // namespace ophost
