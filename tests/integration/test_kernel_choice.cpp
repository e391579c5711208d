// Which implementation each node runs, on every ISA level this machine has (`ophost inspect --kernels`), and a
// clean exit after kernels that ran on oneDNN's OpenMP team (the libraries stay mapped under its threads).
#include "integration_support.hpp"

#include <fstream>
#include <iterator>
#include <regex>

namespace ophost::itest {
namespace {

const fs::path kCases = OPHOST_ONNX_CORE_CASES;

std::vector<std::string> inspect_kernels(const std::string& model) {
  return {"inspect", (kCases / model).string(), "--kernels", "--fail-on-reference", "--plugin-path",
          kPluginDir.string()};
}

// oneDNN's ISA cap: native, and AVX2 (the level every x86-64-v3 machine has; a layout tuned for AVX-512 must
// not fall back to reference code there).
class KernelChoice : public ::testing::TestWithParam<const char*> {
 protected:
  RunOptions isa() const {
    RunOptions o;
    if (std::string(GetParam()) != "native") o.env["ONEDNN_MAX_CPU_ISA"] = GetParam();
    return o;
  }
};

TEST_P(KernelChoice, ConvolutionsIncludingDepthwiseRunTunedKernels) {
  for (const char* model : {"conv_depthwise_3x3.onnx", "conv_depthwise_5x5_s2.onnx", "conv_3x3_pad.onnx",
                            "conv_1x1.onnx", "conv_groups2.onnx"}) {
    ProcResult r = ophost(inspect_kernels(model), isa());
    ASSERT_EQ(r.exit_code, 0) << model << " at " << GetParam() << ": " << r.describe();
    EXPECT_CONTAINS(r.out, "oneDNN ");
    EXPECT_CONTAINS(r.out, ", 0 run reference code");
    EXPECT_EQ(r.out.find("REFERENCE"), std::string::npos) << r.out;
  }
}

TEST_P(KernelChoice, DepthwiseUsesTheIsasOwnKernel) {
  ProcResult r = ophost(inspect_kernels("conv_depthwise_3x3.onnx"), isa());
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(oneDNN (\S+))"))) << r.out;
  // oneDNN names its depthwise jit kernels jit_dw (and jit_uni_dw) after the ISA they were written for.
  EXPECT_NE(m[1].str().find("dw"), std::string::npos) << "depthwise did not get a depthwise kernel: " << r.out;
  if (std::string(GetParam()) == "AVX2") EXPECT_NE(m[1].str().find("avx2"), std::string::npos) << r.out;
}

// Dilation 5 with padding 5 (M-LSD): at AVX2 oneDNN's jit kernel refuses padding wider than the kernel, and
// im2col + sgemm ran instead, 1.8x slower; onnx-core pads X in its reorder so that the jit kernel runs. The
// output is checked against numpy by the onnx_core_conv_cases_avx2 test.
TEST_P(KernelChoice, DilatedConvWithWidePaddingRunsAJitKernelNotIm2col) {
  ProcResult r = ophost(inspect_kernels("conv_dilated_wide_pad_clamp.onnx"), isa());
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_CONTAINS(r.out, "oneDNN ");  // jit:avx2 at AVX2, brgconv on AVX-512
  EXPECT_EQ(r.out.find("gemm"), std::string::npos) << r.out;
  EXPECT_CONTAINS(r.out, "com.ophost::FusedConv");  // LeakyRelu, Max and Min folded into it
  EXPECT_CONTAINS(r.out, "kernels: 1 nodes");
}

// RNN/GRU/LSTM steps with the default activations run Highway kernels dispatched at run time to the best target
// within oneDNN's cap: AVX3 (AVX-512) where the CPU has AVX-512 and nothing caps it, AVX2 under the AVX2 cap.
TEST_P(KernelChoice, RecurrentLayersRunHighwayKernelsWithinTheIsaCap) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  const std::string info((std::istreambuf_iterator<char>(cpuinfo)), std::istreambuf_iterator<char>());
  const bool avx512 = info.find(" avx512f") != std::string::npos && info.find(" avx512bw") != std::string::npos &&
                      info.find(" avx512dq") != std::string::npos && info.find(" avx512vl") != std::string::npos;
  const std::string expected = std::string(GetParam()) == "AVX2" || !avx512 ? "AVX2" : "AVX3";
  for (const char* model : {"rnn_lstm_h37.onnx", "rnn_gru_h37_lbr.onnx", "rnn_simple_h37_bidir.onnx"}) {
    ProcResult r = ophost(inspect_kernels(model), isa());
    ASSERT_EQ(r.exit_code, 0) << model << " at " << GetParam() << ": " << r.describe();
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(oneDNN sgemm \+ Highway (\S+))"))) << r.out;
    EXPECT_EQ(m[1].str(), expected) << model << " at " << GetParam() << ": " << r.out;
  }
  // Other activations than the defaults run the scalar loop, and say so.
  ProcResult r = ophost(inspect_kernels("rnn_lstm_h37_bidir_mixed_acts.onnx"), isa());
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_CONTAINS(r.out, "oneDNN sgemm + scalar loops (activations other than the defaults)");
}

INSTANTIATE_TEST_SUITE_P(Isa, KernelChoice, ::testing::Values("native", "AVX2"));

TEST(KernelChoiceCli, FailOnReferenceNeedsKernels) {
  ProcResult r = ophost({"inspect", (kCases / "conv_1x1.onnx").string(), "--fail-on-reference", "--plugin-path",
                         kPluginDir.string()});
  EXPECT_CLEAN_FAILURE(r);
  EXPECT_CONTAINS(r.err, "--fail-on-reference needs --kernels");
}

// oneDNN runs Conv on an OpenMP team whose threads outlive the call; unmapping the pack (and with it libgomp)
// at exit under them crashed the process after its output was printed (SIGSEGV, exit 139). Plugins now stay
// mapped until the process exits.
TEST(CleanExit, AfterKernelsOnOneDnnsThreadTeamEveryRunExitsZero) {
  for (int i = 0; i < 10; ++i) {
    ProcResult r = ophost({"run", (kCases / "conv_3x3_pad.onnx").string(), "--random", "--threads", "2",
                           "--plugin-path", kPluginDir.string()});
    ASSERT_EQ(r.exit_code, 0) << "run " << i << ": " << r.describe();
    ASSERT_EQ(r.signal, 0) << r.describe();
  }
}

}  // namespace
}  // namespace ophost::itest
