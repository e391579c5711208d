// The fusion passes for chains exporters write out give the numbers of the unfused graph: each case of
// tests/data/onnx_core/fusion_cases.py loaded with every pass and with the fusing pass disabled, the fused op
// present only in the first, outputs equal within float rounding. (make_cases.py checks both against numpy.)
#include "integration_support.hpp"

#include <ophost/npy.hpp>
#include <ophost/runtime.hpp>

#include <algorithm>
#include <cmath>

namespace ophost::itest {
namespace {

struct FusionCase {
  const char* model;     // in tests/data/onnx_core/cases
  std::vector<std::string> disabled;  // the pass that fuses it (and any that would rewrite the unfused graph)
  const char* fused_op;               // what it fuses to, as KernelInfo::op names it
  size_t fused_nodes;                 // nodes running with every pass (no LayoutReorder around a FusedConv)
  size_t unfused_nodes;               // nodes running without (Constant nodes folded)
};

void PrintTo(const FusionCase& c, std::ostream* os) { *os << c.model; }

class FusionNumerics : public ::testing::TestWithParam<FusionCase> {};

std::vector<std::string> ops_of(const Session& s) {
  std::vector<std::string> o;
  for (const KernelInfo& k : s.kernels()) o.push_back(k.op);
  return o;
}

TEST_P(FusionNumerics, FusedAndUnfusedGraphsAgree) {
  const FusionCase& c = GetParam();
  const fs::path dir = OPHOST_ONNX_CORE_CASES;
  const fs::path model = dir / (std::string(c.model) + ".onnx");
  const std::vector<NamedTensor> in = {{"X", read_npy(dir / (std::string(c.model) + ".in.X.npy"))}};
  auto rt = build_tree_runtime();
  SessionOptions unfused_opts;
  unfused_opts.disabled_passes = c.disabled;
  auto fused = rt->load(model);
  auto unfused = rt->load(model, unfused_opts);
  const std::vector<std::string> fused_ops = ops_of(*fused), unfused_ops = ops_of(*unfused);
  EXPECT_NE(std::find(fused_ops.begin(), fused_ops.end(), c.fused_op), fused_ops.end())
      << ::testing::PrintToString(fused_ops);
  EXPECT_EQ(std::find(unfused_ops.begin(), unfused_ops.end(), c.fused_op), unfused_ops.end())
      << ::testing::PrintToString(unfused_ops);
  EXPECT_EQ(fused_ops.size(), c.fused_nodes) << ::testing::PrintToString(fused_ops);
  EXPECT_EQ(unfused_ops.size(), c.unfused_nodes) << ::testing::PrintToString(unfused_ops);

  std::vector<NamedTensor> a, b;
  fused->run(in, a);
  unfused->run(in, b);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  const Tensor& y = a[0].tensor;
  const Tensor& want = b[0].tensor;
  ASSERT_TRUE(std::equal(y.shape().begin(), y.shape().end(), want.shape().begin(), want.shape().end()));
  float peak = 0, worst = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    peak = std::max(peak, std::fabs(want.data_as<float>()[i]));
    worst = std::max(worst, std::fabs(y.data_as<float>()[i] - want.data_as<float>()[i]));
  }
  ASSERT_GT(peak, 0.0f);
  EXPECT_LE(worst / peak, 1e-5f) << "max abs diff " << worst << ", max |unfused| " << peak;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, FusionNumerics,
    ::testing::Values(
        FusionCase{"layer_norm_decomposed_opset14", {"layer-norm-fusion"}, "com.ophost::LayerNormalization", 1, 9},
        FusionCase{"layer_norm_decomposed_2axes_opset18", {"layer-norm-fusion"}, "com.ophost::LayerNormalization", 1,
                   9},
        // Add bias, Gelu, MatMul; unfused: Div, Erf, Add, Mul, Mul (erf) or Mul, Pow, Mul, Add, Mul, Tanh, Add, Mul.
        FusionCase{"gelu_decomposed_erf_opset14", {"gelu-fusion"}, "com.ophost::Gelu", 3, 7},
        FusionCase{"gelu_decomposed_tanh_opset14", {"gelu-fusion"}, "com.ophost::Gelu", 3, 10},
        // The two Convs exchange a channel-blocked value (nchwc-layout), X and y stay plain: two nodes in all.
        FusionCase{"fused_conv_silu", {"conv-activation-fusion", "nchwc-layout"}, "com.ophost::FusedConv", 2, 6},
        // Conv+Relu, Conv+Add(Z)+Relu; blocked between them. Unfused: Conv, Relu, Conv, Add, Relu.
        FusionCase{"fused_conv3x3_residual", {"conv-activation-fusion", "conv-add-fusion", "nchwc-layout"},
                   "com.ophost::FusedConv", 2, 5},
        FusionCase{"fused_conv1x1_232ch", {"conv-activation-fusion", "nchwc-layout"}, "com.ophost::FusedConv", 2, 4},
        FusionCase{"fused_conv1x1_58ch_sum", {"conv-activation-fusion", "conv-add-fusion"}, "com.ophost::FusedConv", 1,
                   3}),
    [](const ::testing::TestParamInfo<FusionCase>& i) { return std::string(i.param.model); });

}  // namespace
}  // namespace ophost::itest
