// Every example model (examples/models/*.onnx) through the embedding API and through `ophost run`, compared with
// the float64 numpy references stored beside it.
#include "integration_support.hpp"

#include <ophost/npy.hpp>

#include <ophost/error.hpp>
#include <ophost/runtime.hpp>

#include <algorithm>
#include <cmath>
#include <regex>

namespace ophost::itest {
namespace {

// The Runtime used by the embedding-API tests: exactly the build tree's plugin folder.
RuntimeOptions build_tree_plugins() {
  RuntimeOptions o;
  o.plugin_paths = {kPluginDir};
  o.use_env_plugin_path = false;
  o.use_default_plugin_dir = false;
  return o;
}

std::vector<fs::path> example_models() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(kExamples)) {
    if (e.is_regular_file() && e.path().extension() == ".onnx") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// `<model>.<kind>.<name>.npy` files beside the model, as name -> path.
std::map<std::string, fs::path> side_files(const fs::path& model, const std::string& kind) {
  std::map<std::string, fs::path> out;
  const std::string prefix = model.stem().string() + "." + kind + ".";
  for (const auto& e : fs::directory_iterator(model.parent_path())) {
    std::string f = e.path().filename().string();
    if (f.starts_with(prefix) && f.ends_with(".npy")) {
      out[f.substr(prefix.size(), f.size() - prefix.size() - 4)] = e.path();
    }
  }
  return out;
}

std::vector<int64_t> dims(const Tensor& t) { return {t.shape().begin(), t.shape().end()}; }

double element(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat32: return t.data_as<float>()[i];
    case DType::kFloat64: return t.data_as<double>()[i];
    case DType::kInt32: return t.data_as<int32_t>()[i];
    case DType::kInt64: return static_cast<double>(t.data_as<int64_t>()[i]);
    case DType::kInt8: return t.data_as<int8_t>()[i];
    case DType::kUint8:
    case DType::kBool: return t.data_as<uint8_t>()[i];
    default: throw std::runtime_error(std::string("compare: unsupported dtype ") + dtype_name(t.dtype()));
  }
}

// Same dtype and shape, |got-ref| <= 1e-5 + 1e-4*|ref| everywhere (NaN only where the reference has NaN).
::testing::AssertionResult tensors_close(const std::string& what, const Tensor& got, const Tensor& ref) {
  if (got.dtype() != ref.dtype()) {
    return ::testing::AssertionFailure() << what << ": dtype " << dtype_name(got.dtype()) << ", reference "
                                         << dtype_name(ref.dtype());
  }
  if (dims(got) != dims(ref)) {
    return ::testing::AssertionFailure() << what << ": shape " << shape_to_string(got.shape()) << ", reference "
                                         << shape_to_string(ref.shape());
  }
  int64_t worst = -1, bad = 0;
  double worst_excess = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    double g = element(got, i), r = element(ref, i);
    double tol = 1e-5 + 1e-4 * std::fabs(r);
    bool ok = (std::isnan(r) && std::isnan(g)) || std::fabs(g - r) <= tol;
    if (!ok) {
      ++bad;
      double excess = std::isnan(g - r) ? INFINITY : std::fabs(g - r) / tol;
      if (worst < 0 || excess > worst_excess) worst = i, worst_excess = excess;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << bad << " of " << ref.numel()
                                       << " elements out of tolerance; worst at flat index " << worst << ": got "
                                       << element(got, worst) << ", reference " << element(ref, worst)
                                       << " (|diff| " << std::fabs(element(got, worst) - element(ref, worst))
                                       << ")";
}

TEST(Examples, DirectoryHoldsModelsWithInputsAndReferences) {
  auto models = example_models();
  ASSERT_GE(models.size(), 4u) << "examples/models should hold the example models (" << kExamples << ")";
  for (const auto& m : models) {
    EXPECT_FALSE(side_files(m, "input").empty()) << m << " has no <model>.input.<name>.npy";
    EXPECT_FALSE(side_files(m, "output").empty()) << m << " has no <model>.output.<name>.npy";
  }
}

class ExampleModel : public ::testing::TestWithParam<fs::path> {};

TEST_P(ExampleModel, EmbeddingApiMatchesReference) {
  const fs::path model = GetParam();
  Runtime rt(build_tree_plugins());
  ASSERT_TRUE(rt.conflicts().empty()) << rt.conflicts().front();
  std::unique_ptr<Session> session;
  try {
    session = rt.load(model);
  } catch (const Error& e) {
    FAIL() << "load(" << model << ") threw: " << e.what();
  }

  auto input_files = side_files(model, "input");
  ASSERT_EQ(session->inputs().size(), input_files.size()) << "one .npy per graph input";
  std::vector<NamedTensor> feeds;
  for (const ValueInfo& in : session->inputs()) {
    auto it = input_files.find(in.name);
    ASSERT_NE(it, input_files.end()) << "no input file for graph input '" << in.name << "'";
    feeds.push_back({in.name, read_npy(it->second)});
  }

  std::vector<NamedTensor> outputs;
  try {
    outputs = session->run(feeds);
  } catch (const Error& e) {
    FAIL() << "run(" << model << ") threw: " << e.what();
  }

  auto refs = side_files(model, "output");
  ASSERT_EQ(outputs.size(), refs.size()) << "outputs vs reference files";
  ASSERT_EQ(outputs.size(), session->outputs().size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    EXPECT_EQ(outputs[i].name, session->outputs()[i].name) << "outputs come back in graph order";
    auto it = refs.find(outputs[i].name);
    ASSERT_NE(it, refs.end()) << "output '" << outputs[i].name << "' has no reference file";
    Tensor ref = read_npy(it->second);
    EXPECT_TRUE(tensors_close(model.filename().string() + " output '" + outputs[i].name + "'", outputs[i].tensor,
                              ref));
    // The declared output info agrees with what came back.
    EXPECT_EQ(session->outputs()[i].dtype, outputs[i].tensor.dtype());
  }

  // A second run on the same session gives identical results (no state leaks between runs).
  std::vector<NamedTensor> again = session->run(feeds);
  ASSERT_EQ(again.size(), outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    ASSERT_EQ(again[i].tensor.nbytes(), outputs[i].tensor.nbytes());
    EXPECT_EQ(0, std::memcmp(again[i].tensor.data(), outputs[i].tensor.data(), outputs[i].tensor.nbytes()))
        << "second run of " << model << " differs for output '" << outputs[i].name << "'";
  }
}

std::string param_name(const ::testing::TestParamInfo<fs::path>& info) {
  std::string s = info.param.stem().string();
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(All, ExampleModel, ::testing::ValuesIn(example_models()), param_name);

// `ophost run` for every example: each output is listed with name, dtype and shape; written .npy files match.
TEST_P(ExampleModel, CommandWritesOutputsMatchingReference) {
  const fs::path model = GetParam();
  TempDir out;
  std::vector<std::string> args{"run", model.string()};
  for (const auto& [name, file] : side_files(model, "input")) {
    args.push_back("--input");
    args.push_back(name + "=" + file.string());
  }
  args.push_back("--output-dir");
  args.push_back((out / "outs").string());
  ProcResult r = ophost(args);
  ASSERT_EQ(r.exit_code, 0) << r.describe();

  for (const auto& [name, ref_file] : side_files(model, "output")) {
    Tensor ref = read_npy(ref_file);
    // "output <name>: float32 [2,8]  min ..."
    std::string line = "output " + name + ": " + dtype_name(ref.dtype()) + " " + shape_to_string(ref.shape());
    EXPECT_CONTAINS(r.out, line);
    fs::path written = out / "outs" / (name + ".npy");
    ASSERT_TRUE(fs::exists(written)) << written << " not written\n" << r.describe();
    EXPECT_CONTAINS(r.out, "wrote " + written.string());
    EXPECT_TRUE(tensors_close("ophost run " + model.filename().string() + " -> " + written.string(),
                              read_npy(written), ref));
  }
  std::smatch m;
  EXPECT_TRUE(std::regex_search(r.out, m, std::regex(R"(\ntime: plugins [0-9.]+ ms, load [0-9.]+ ms, run [0-9.]+ ms)")))
      << r.describe();
}

TEST(ExamplesCommand, RunPrintsInputsOutputsAndTime) {
  const fs::path model = kExamples / "mixed_small.onnx";
  ProcResult r = ophost({"run", model.string(), "--input", "x=" + (kExamples / "mixed_small.input.x.npy").string()});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_CONTAINS(r.out, "model: " + model.string());
  EXPECT_CONTAINS(r.out, "input  x: float32 [2,8]");
  EXPECT_CONTAINS(r.out, "output y: float32 [2,8]");
  EXPECT_CONTAINS(r.out, "time: ");
  // Nothing alarming on stderr for a good run.
  EXPECT_NOT_CONTAINS(r.err, "error");
  EXPECT_NOT_CONTAINS(r.err, "rejected");
}

TEST(ExamplesCommand, RandomInputsRunWithoutInputFiles) {
  ProcResult r = ophost({"run", (kExamples / "broadcast.onnx").string(), "--random"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  for (const char* out : {"add", "sub", "mul", "div", "div_s"}) {
    EXPECT_CONTAINS(r.out, std::string("output ") + out + ": float32 ");
  }
  EXPECT_CONTAINS(r.out, "output add: float32 [2,3,4]");
  EXPECT_CONTAINS(r.out, "output div: float32 [2,3,4]");
}

// Default plugin folder of the embedding API: <exe>/../lib/ophost/plugins, where <exe> is this test program,
// which the build puts into bin/ beside the ophost command.
TEST(ExamplesEmbedding, DefaultPluginDirOfTheExecutableIsUsed) {
  if (fs::canonical("/proc/self/exe").parent_path() != fs::canonical(kOphost).parent_path()) {
    GTEST_SKIP() << "the test program is not in the ophost command's bin/ folder";
  }
  RuntimeOptions o;
  o.use_env_plugin_path = false;
  Runtime rt(o);
  std::vector<std::string> loaded;
  for (const auto& p : rt.plugins())
    if (p.loaded) loaded.push_back(p.name);
  for (const char* want : {"cpu", "myops", "onnx-core"}) {
    EXPECT_NE(std::find(loaded.begin(), loaded.end(), want), loaded.end()) << want << " not loaded by default";
  }
}

}  // namespace
}  // namespace ophost::itest

namespace ophost::itest {
namespace {

// examples/models is generated by make_models.py, which promises byte-identical output: the committed files
// must be what the committed script writes (a stale reference would make the comparisons above meaningless).
TEST(ExamplesGenerator, CommittedFilesAreWhatTheScriptWrites) {
#ifndef OPHOST_PYTHON3
  GTEST_SKIP() << "no python3 found at configure time";
#else
  ProcResult probe = run_process(OPHOST_PYTHON3, {"-c", "import numpy, onnx"});
  if (probe.exit_code != 0) {
    GTEST_SKIP() << OPHOST_PYTHON3 << " lacks numpy or onnx (Debian: python3-numpy python3-onnx): " << probe.err;
  }
  TempDir out;
  ProcResult r = run_process(OPHOST_PYTHON3, {(kExamples / "make_models.py").string(), out.path().string()});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(out.path())) {
    ++n;
    fs::path committed = kExamples / e.path().filename();
    ASSERT_TRUE(fs::exists(committed)) << "make_models.py writes " << e.path().filename()
                                       << ", which is not committed";
    EXPECT_TRUE(read_file(committed) == read_file(e.path()))
        << committed << " differs from what make_models.py writes; rerun it";
  }
  size_t committed = 0;
  for (const auto& e : fs::directory_iterator(kExamples)) {
    auto ext = e.path().extension();
    if (ext == ".onnx" || ext == ".npy") ++committed;
  }
  EXPECT_EQ(n, committed) << "committed .onnx/.npy files that make_models.py does not write";
#endif
}

// The comparison itself: it must catch what it is there to catch.
TEST(ExamplesCompare, ToleranceDtypeAndShapeAreEnforced) {
  Tensor ref(DType::kFloat32, {2, 2});
  for (int i = 0; i < 4; ++i) ref.data_as<float>()[i] = 100.0f * static_cast<float>(i);
  Tensor got = ref.clone();
  EXPECT_TRUE(tensors_close("same", got, ref));
  got.data_as<float>()[3] = 300.0f * (1.0f + 5e-5f);  // inside 1e-5 + 1e-4*|ref|
  EXPECT_TRUE(tensors_close("inside", got, ref));
  got.data_as<float>()[2] = 200.0f * (1.0f + 3e-4f);  // outside
  auto r = tensors_close("outside", got, ref);
  EXPECT_FALSE(r);
  EXPECT_CONTAINS(r.message(), "worst at flat index 2");
  got = ref.clone();
  got.data_as<float>()[0] = 2e-5f;  // |ref| = 0: only the absolute part applies
  EXPECT_FALSE(tensors_close("abs", got, ref));
  got.data_as<float>()[0] = NAN;
  EXPECT_FALSE(tensors_close("nan", got, ref));
  EXPECT_FALSE(tensors_close("shape", Tensor(DType::kFloat32, {4}), ref));
  EXPECT_FALSE(tensors_close("dtype", Tensor(DType::kFloat64, {2, 2}), ref));
}

// Symbolic dimensions: one session, several input shapes, results computed here.
TEST(ExamplesEmbedding, SymbolicBatchDimensionRunsAtSeveralShapes) {
  TempDir tmp;
  ModelBuilder b({{"", 13}, {"myops", 1}});
  auto* in = b.m.mutable_graph()->add_input();
  ModelBuilder::set_type(in, "x", onnx::TensorProto::FLOAT, {0, 3});
  in->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("N");
  auto* out = b.m.mutable_graph()->add_output();
  ModelBuilder::set_type(out, "y", onnx::TensorProto::FLOAT, {0, 3});
  out->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("N");
  b.node("Add", {"x", "c"}, {"a"}, "add");
  ModelBuilder::attr_float(b.node("relu6_scale", {"a"}, {"y"}, "relu6", "myops"), "scale", 3.0f);
  auto* c = b.m.mutable_graph()->add_initializer();
  c->set_name("c");
  c->set_data_type(onnx::TensorProto::FLOAT);
  c->add_dims(3);
  for (float v : {0.5f, -0.25f, 1.0f}) c->add_float_data(v);
  fs::path model = b.save(tmp / "dyn.onnx");

  Runtime rt(build_tree_plugins());
  auto session = rt.load(model);
  ASSERT_EQ(session->inputs().size(), 1u);
  EXPECT_EQ(session->inputs()[0].shape, (std::vector<int64_t>{-1, 3}));
  const float cv[3] = {0.5f, -0.25f, 1.0f};
  for (int64_t n : {1, 4, 2, 0, 7}) {
    Tensor x(DType::kFloat32, {n, 3});
    for (int64_t i = 0; i < n * 3; ++i) x.data_as<float>()[i] = 0.37f * static_cast<float>(i) - 2.0f;
    std::vector<NamedTensor> outs;
    try {
      outs = session->run({{"x", x}});
    } catch (const Error& e) {
      FAIL() << "N=" << n << ": " << e.what();
    }
    ASSERT_EQ(outs.size(), 1u);
    ASSERT_EQ(dims(outs[0].tensor), (std::vector<int64_t>{n, 3})) << "N=" << n;
    for (int64_t i = 0; i < n * 3; ++i) {
      float want = std::clamp((x.data_as<float>()[i] + cv[i % 3]) * 3.0f, 0.0f, 6.0f);
      EXPECT_NEAR(outs[0].tensor.data_as<float>()[i], want, 1e-6f) << "N=" << n << " i=" << i;
    }
  }
}

// Shapes that only fail once the actual inputs are known: a clean error naming the node, not a crash.
TEST(ExamplesEmbedding, RunTimeBroadcastMismatchIsAnError) {
  TempDir tmp;
  ModelBuilder b({{"", 13}});
  for (const char* name : {"a", "b"}) {
    auto* in = b.m.mutable_graph()->add_input();
    ModelBuilder::set_type(in, name, onnx::TensorProto::FLOAT, {0});
    in->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param(
        std::string("D") + name);
  }
  b.m.mutable_graph()->add_output()->set_name("y");
  b.node("Add", {"a", "b"}, {"y"}, "add_ab");
  fs::path model = b.save(tmp / "dynadd.onnx");
  Runtime rt(build_tree_plugins());
  auto session = rt.load(model);
  Tensor a(DType::kFloat32, {3}), b3(DType::kFloat32, {3}), b4(DType::kFloat32, {4});
  EXPECT_EQ(dims(session->run({{"a", a}, {"b", b3}})[0].tensor), (std::vector<int64_t>{3}));
  try {
    session->run({{"a", a}, {"b", b4}});
    FAIL() << "Add of [3] and [4] must fail";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), "add_ab");
    EXPECT_CONTAINS(e.what(), "[3]");
    EXPECT_CONTAINS(e.what(), "[4]");
  }
  // And the session is still usable.
  EXPECT_EQ(dims(session->run({{"a", a}, {"b", b3}})[0].tensor), (std::vector<int64_t>{3}));
}

}  // namespace
}  // namespace ophost::itest
