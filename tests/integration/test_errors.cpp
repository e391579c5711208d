// Clear errors: every broken model, bad input and bad command line ends with a non-zero exit status (never a
// signal), and the message carries the facts a user needs (file, node, domain::op, opset, the fix).
// Broken models are written here with the ONNX protobuf classes.
#include "integration_support.hpp"

#include <ophost/npy.hpp>

#include <ophost/error.hpp>
#include <ophost/runtime.hpp>

#include <functional>

namespace ophost::itest {
namespace {

using onnx::TensorProto;

RuntimeOptions build_tree_plugins() {
  RuntimeOptions o;
  o.plugin_paths = {kPluginDir};
  o.use_env_plugin_path = false;
  o.use_default_plugin_dir = false;
  return o;
}

// One Runtime for the embedding-API error tests (plugin loading is the slow part).
Runtime& runtime() {
  static Runtime rt(build_tree_plugins());
  return rt;
}

class Errors : public ::testing::Test {
 protected:
  TempDir tmp;

  // `ophost run MODEL --random`, expected to fail cleanly; returns the result.
  ProcResult run_fails(const fs::path& model, std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"run", model.string(), "--random"};
    args.insert(args.end(), extra.begin(), extra.end());
    ProcResult r = ophost(args);
    EXPECT_CLEAN_FAILURE(r);
    // The error is reported on stderr as "ophost run: error: ...", not as an uncaught exception.
    EXPECT_CONTAINS(r.err, "ophost run: error: ");
    EXPECT_NOT_CONTAINS(r.err, "terminate called");
    return r;
  }

  // The message of the Error the embedding API throws from Runtime::load (empty when it does not throw).
  std::string load_error(const fs::path& model) {
    try {
      runtime().load(model);
    } catch (const Error& e) {
      return e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "load threw a non-ophost exception: " << e.what();
      return e.what();
    }
    ADD_FAILURE() << "load(" << model << ") did not throw";
    return "";
  }
};

// ---------------------------------------------------------------------------------------------------------------
// Model files

TEST_F(Errors, StandardOpsetNewerThanThePacksKnowIsRefusedUnlessAllowed) {
  const fs::path model = unary_model("Relu", "", {{"", 99}}).save(tmp / "opset99.onnx");
  ProcResult r = run_fails(model, {"--plugin-path", kPluginDir.string()});
  EXPECT_CONTAINS(r.err, "imports ai.onnx opset 99, newer than the newest released ai.onnx opset (23, ONNX 1.18) "
                         "and any op version the loaded packs register (the newest is opset ");
  EXPECT_CONTAINS(r.err, "in pack 'onnx-core'); export the model with opset 23 or lower");
  EXPECT_CONTAINS(r.err, "--allow-newer-opset");
  EXPECT_CONTAINS(load_error(model), "imports ai.onnx opset 99");
  // Allowed: it runs, and says with which semantics.
  ProcResult ok = ophost({"run", model.string(), "--random", "--allow-newer-opset", "--plugin-path",
                          kPluginDir.string()});
  EXPECT_EQ(ok.exit_code, 0) << ok.describe();
  EXPECT_CONTAINS(ok.err, "running it with the newest semantics the packs know (--allow-newer-opset)");
}

TEST_F(Errors, DeclaredOutputTypeMustBeTheProducedOne) {
  ModelBuilder b;
  b.input("x", {4}).output("y", {9, 9}, TensorProto::INT64);
  b.node("Relu", {"x"}, {"y"}, "relu");
  const fs::path model = b.save(tmp / "liar.onnx");
  const std::string msg = load_error(model);
  EXPECT_CONTAINS(msg, "graph output 'y' is declared int64 [9,9] but is produced as float32 [4] by ");
  EXPECT_CONTAINS(msg, "node 'relu' (Relu, opset 13)");
  EXPECT_CONTAINS(msg, "correct the output's declaration");
  // The right type with a stale shape only warns: the produced shape is used.
  ModelBuilder stale;
  stale.input("x", {4}).output("y", {9, 9});
  stale.node("Relu", {"x"}, {"y"}, "relu");
  ProcResult r = ophost({"run", stale.save(tmp / "stale.onnx").string(), "--random", "--plugin-path",
                         kPluginDir.string()});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_CONTAINS(r.err, "graph output 'y' is declared float32 [9,9] but is produced as float32 [4]");
}

TEST_F(Errors, ExpandToANegativeDimensionNamesIt) {
  ModelBuilder b;
  b.input("x", {1, 4}).output("y", {3, 4});
  auto* shape = b.m.mutable_graph()->add_initializer();
  shape->set_name("shape");
  shape->set_data_type(TensorProto::INT64);
  shape->add_dims(2);
  shape->add_int64_data(-3);
  shape->add_int64_data(4);
  b.node("Expand", {"x", "shape"}, {"y"}, "expand");
  const std::string msg = load_error(b.save(tmp / "expand.onnx"));
  EXPECT_CONTAINS(msg, "node 'expand' (Expand, opset 13)");
  EXPECT_CONTAINS(msg, "Expand: shape [-3,4] holds a negative dimension (-3 at index 0); every entry must be >= 0");
}

TEST_F(Errors, RoiAlignWithAHugeBoxIsAnErrorNotAnAllocation) {
  ModelBuilder b({{"", 16}});
  b.input("x", {1, 1, 8, 8}).input("rois", {1, 4}).input("idx", {1}, TensorProto::INT64).output("y", {1, 1, 2, 2});
  auto* n = b.node("RoiAlign", {"x", "rois", "idx"}, {"y"}, "roi");
  ModelBuilder::attr_int(n, "output_height", 2);
  ModelBuilder::attr_int(n, "output_width", 2);
  auto s = runtime().load(b.save(tmp / "roi.onnx"));
  Tensor x(DType::kFloat32, {1, 1, 8, 8}), rois(DType::kFloat32, {1, 4}), idx(DType::kInt64, {1});
  rois.data_as<float>()[2] = 1e30f;
  rois.data_as<float>()[3] = 1e30f;
  std::string msg;
  try {
    s->run({{"x", x}, {"rois", rois}, {"idx", idx}});
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_CONTAINS(msg, "node 'roi' (RoiAlign, opset 16)");
  EXPECT_CONTAINS(msg, "would need more than 2^24 samples");
  EXPECT_CONTAINS(msg, "check the rois, or set sampling_ratio");
}

TEST_F(Errors, ModelFileMissing) {
  fs::path missing = tmp / "no_such_model.onnx";
  ProcResult r = run_fails(missing);
  EXPECT_CONTAINS(r.err, missing.string());
  std::string msg = load_error(missing);
  EXPECT_CONTAINS(msg, missing.string());
}

TEST_F(Errors, FileIsNotOnnx) {
  fs::path garbage = tmp / "garbage.onnx";
  write_file(garbage, std::string("\xff\xfe\x01this is not a protobuf\x00\x13\x37", 27));
  ProcResult r = run_fails(garbage);
  EXPECT_CONTAINS(r.err, garbage.string());
  EXPECT_CONTAINS(r.err, "not an ONNX model");
}

TEST_F(Errors, EmptyFileIsNotAModel) {
  fs::path empty = tmp / "empty.onnx";
  write_file(empty, "");
  ProcResult r = run_fails(empty);
  EXPECT_CONTAINS(r.err, empty.string());
}

// ---------------------------------------------------------------------------------------------------------------
// Op resolution with near-miss hints

TEST_F(Errors, OpNameWithWrongCaseSuggestsTheRealOne) {
  fs::path model = unary_model("Relu6_Scale", "myops", {{"", 13}, {"myops", 1}}).save(tmp / "case.onnx");
  ProcResult r = run_fails(model);
  EXPECT_CONTAINS(r.err, model.string());
  EXPECT_CONTAINS(r.err, "node 'n'");
  EXPECT_CONTAINS(r.err, "myops::Relu6_Scale");
  EXPECT_CONTAINS(r.err, "opset 1");
  EXPECT_CONTAINS(r.err, "myops::relu6_scale");  // the suggestion
  std::string api = load_error(model);
  EXPECT_FALSE(api.empty());
  EXPECT_CONTAINS(r.err, api);  // the command prints the embedding API's message as is
}

TEST_F(Errors, OpInWrongDomainSuggestsTheRightDomain) {
  fs::path model = unary_model("relu6_scale", "myop", {{"", 13}, {"myop", 1}}).save(tmp / "domain.onnx");
  ProcResult r = run_fails(model);
  EXPECT_CONTAINS(r.err, "node 'n'");
  EXPECT_CONTAINS(r.err, "myop::relu6_scale");
  EXPECT_CONTAINS(r.err, "opset 1");
  EXPECT_CONTAINS(r.err, "domain 'myops'");
}

TEST_F(Errors, CustomOpInStandardDomainSuggestsItsDomain) {
  fs::path model = unary_model("gelu", "", {{"", 13}}).save(tmp / "std_gelu.onnx");
  ProcResult r = run_fails(model);
  EXPECT_CONTAINS(r.err, "node 'n'");
  EXPECT_CONTAINS(r.err, "gelu");
  EXPECT_CONTAINS(r.err, "opset 13");
  EXPECT_CONTAINS(r.err, "'myops'");
}

TEST_F(Errors, HintIsSeparatedFromTheMainMessage) {
  // "...: no loaded pack provides this op" must not run straight into the hint ("...this opdid you mean").
  fs::path model = unary_model("Relu6_Scale", "myops", {{"", 13}, {"myops", 1}}).save(tmp / "case.onnx");
  std::string msg = load_error(model);
  EXPECT_CONTAINS(msg, "no loaded pack provides this op");
  EXPECT_NOT_CONTAINS(msg, "provides this opdid");
  EXPECT_NOT_CONTAINS(msg, "provides this op'");
}

TEST_F(Errors, StandardOpNoPackProvides) {
  // A standard op onnx-core does not serve (an image-processing op nobody here implements).
  ModelBuilder b({{"", 18}});
  b.input("x", {1, 4, 4}).input("w", {1, 1, 3, 3}).output("y", {1, 1, 2, 2});
  b.node("Col2Im", {"x", "w"}, {"y"}, "conv0");
  fs::path model = b.save(tmp / "conv.onnx");
  ProcResult r = run_fails(model);
  EXPECT_CONTAINS(r.err, "node 'conv0'");
  EXPECT_CONTAINS(r.err, "Col2Im");
  EXPECT_CONTAINS(r.err, "opset 18");
  EXPECT_CONTAINS(r.err, "no loaded pack provides this op");
}

TEST_F(Errors, StandardOpAtAnOpsetNoPackServes) {
  // onnx-core serves Pow from opset 7; the model imports opset 6.
  ModelBuilder b({{"", 6}});
  b.input("a", {2, 3}).input("b", {2, 3}).output("y", {2, 3});
  b.node("Pow", {"a", "b"}, {"y"}, "pow0");
  fs::path model = b.save(tmp / "pow6.onnx");
  ProcResult r = run_fails(model);
  EXPECT_CONTAINS(r.err, "node 'pow0'");
  EXPECT_CONTAINS(r.err, "Pow");
  EXPECT_CONTAINS(r.err, "opset 6");
  EXPECT_CONTAINS(r.err, "[7-11]");  // the ranges that exist
  EXPECT_CONTAINS(r.err, "onnx-core");
}

// DESIGN §5: errors suggest "the pack that would provide it". When the pack serving the op is installed but
// disabled (or rejected), the op-not-found message must say so instead of only "no loaded pack provides this
// op".
TEST_F(Errors, OpOfADisabledPackNamesThePack) {
  ProcResult r = ophost({"run", (kExamples / "relu6_defaults.onnx").string(), "--random"},
                        RunOptions{{}, {{"OPHOST_PLUGINS_DISABLE", "myops"}}});
  EXPECT_CLEAN_FAILURE(r);
  EXPECT_CONTAINS(r.err, "myops::relu6_scale");
  EXPECT_CONTAINS(r.err, "'myops'");  // the pack, not just the domain
  EXPECT_CONTAINS(r.err, "disabled");
}

TEST_F(Errors, OpOfARejectedPackNamesThePackAndWhy) {
  // A copy of myops with a wrong sha256, found first: it is rejected and shadows the good one.
  fs::path root = tmp / "root";
  fs::create_directories(root / "myops");
  for (const auto& e : fs::directory_iterator(kPluginDir / "myops"))
    if (e.is_regular_file()) fs::copy_file(e.path(), root / "myops" / e.path().filename());  // not .debug/
  std::string manifest = read_file(root / "myops" / "ophost-plugin.json");
  auto pos = manifest.find("\"sha256\": \"");
  ASSERT_NE(pos, std::string::npos);
  manifest.replace(pos + 11, 64, std::string(64, 'e'));
  write_file(root / "myops" / "ophost-plugin.json", manifest);
  ProcResult r = ophost({"run", (kExamples / "relu6_defaults.onnx").string(), "--random", "--plugin-path",
                         root.string()});
  EXPECT_CLEAN_FAILURE(r);
  EXPECT_CONTAINS(r.err, "myops::relu6_scale");
  // The run's error itself (not only the loader's warning line) points at the rejected pack.
  std::string error_line = r.err.substr(r.err.find("ophost run: error: "));
  EXPECT_CONTAINS(error_line, "'myops'");
  EXPECT_CONTAINS(error_line, "sha256");
}

TEST_F(Errors, StandardDomainMayBeSpelledAiOnnx) {
  ModelBuilder b({{"ai.onnx", 14}});
  b.input("x", {2}).output("y", {2});
  b.node("Relu", {"x"}, {"y"}, "relu", "ai.onnx");
  fs::path model = b.save(tmp / "aionnx.onnx");
  ProcResult r = ophost({"run", model.string(), "--random"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_CONTAINS(r.out, "output y: float32 [2]");
}

TEST_F(Errors, MissingOpsetImportForCustomDomain) {
  fs::path model = unary_model("relu6_scale", "myops", {{"", 13}}).save(tmp / "noimport.onnx");
  ProcResult r = run_fails(model);
  EXPECT_CONTAINS(r.err, "node 'n'");
  EXPECT_CONTAINS(r.err, "myops::relu6_scale");
  EXPECT_CONTAINS(r.err, "opset_import");
  EXPECT_CONTAINS(r.err, "myops");
}

// ---------------------------------------------------------------------------------------------------------------
// Attributes and arity

TEST_F(Errors, AttributeOfWrongType) {
  ModelBuilder b = unary_model("relu6_scale", "myops", {{"", 13}, {"myops", 1}});
  ModelBuilder::attr_int(b.m.mutable_graph()->mutable_node(0), "scale", 2);
  fs::path model = b.save(tmp / "attr_int.onnx");
  ProcResult r = run_fails(model);
  EXPECT_CONTAINS(r.err, "node 'n'");
  EXPECT_CONTAINS(r.err, "myops::relu6_scale");
  EXPECT_CONTAINS(r.err, "'scale'");
  EXPECT_CONTAINS(r.err, "int");
  EXPECT_CONTAINS(r.err, "float");
  EXPECT_CONTAINS(r.err, "myops");  // the pack
}

TEST_F(Errors, UnknownAttribute) {
  ModelBuilder b = unary_model("relu6_scale", "myops", {{"", 13}, {"myops", 1}});
  ModelBuilder::attr_float(b.m.mutable_graph()->mutable_node(0), "sclae", 2.0f);
  fs::path model = b.save(tmp / "attr_unknown.onnx");
  ProcResult r = run_fails(model);
  EXPECT_CONTAINS(r.err, "node 'n'");
  EXPECT_CONTAINS(r.err, "unknown attribute 'sclae'");
  EXPECT_CONTAINS(r.err, "scale");  // what the op accepts
}

TEST_F(Errors, RequiredInputMissing) {
  ModelBuilder b({{"", 13}});
  b.input("a", {2, 3}).output("y", {2, 3});
  b.node("Add", {"a"}, {"y"}, "add_one");
  fs::path model = b.save(tmp / "add1.onnx");
  ProcResult r = run_fails(model);
  EXPECT_CONTAINS(r.err, "node 'add_one'");
  EXPECT_CONTAINS(r.err, "Add");
  EXPECT_CONTAINS(r.err, "required input 1");
}

TEST_F(Errors, TooManyInputs) {
  ModelBuilder b({{"", 13}});
  b.input("a", {2, 3}).output("y", {2, 3});
  b.node("Relu", {"a", "a"}, {"y"}, "relu2");
  fs::path model = b.save(tmp / "relu2.onnx");
  ProcResult r = run_fails(model);
  EXPECT_CONTAINS(r.err, "node 'relu2'");
  EXPECT_CONTAINS(r.err, "has 2 inputs");
}

TEST_F(Errors, InputTypeRejectedByOpConstraint) {
  // myops::relu6_scale is float32 only.
  ModelBuilder b({{"", 13}, {"myops", 1}});
  b.input("x", {2, 3}, TensorProto::INT64).output("y", {2, 3}, TensorProto::INT64);
  b.node("relu6_scale", {"x"}, {"y"}, "n", "myops");
  fs::path model = b.save(tmp / "int_relu6.onnx");
  ProcResult r = run_fails(model);
  EXPECT_CONTAINS(r.err, "node 'n'");
  EXPECT_CONTAINS(r.err, "int64");
}

// ---------------------------------------------------------------------------------------------------------------
// Inputs at run time (embedding API)

class RunInputs : public ::testing::Test {
 protected:
  void SetUp() override {
    session_ = runtime().load(kExamples / "mixed_small.onnx");
    x_ = read_npy(kExamples / "mixed_small.input.x.npy");
  }
  std::string run_error(const std::vector<NamedTensor>& feeds) {
    try {
      session_->run(feeds);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Code::kInvalidArgument) << e.what();
      return e.what();
    }
    ADD_FAILURE() << "run did not throw";
    return "";
  }
  std::unique_ptr<Session> session_;
  Tensor x_;
};

TEST_F(RunInputs, WrongDtype) {
  std::string msg = run_error({{"x", Tensor(DType::kFloat64, {2, 8})}});
  EXPECT_CONTAINS(msg, "'x'");
  EXPECT_CONTAINS(msg, "float64");
  EXPECT_CONTAINS(msg, "float32");
}

TEST_F(RunInputs, WrongRank) {
  std::string msg = run_error({{"x", Tensor(DType::kFloat32, {16})}});
  EXPECT_CONTAINS(msg, "'x'");
  EXPECT_CONTAINS(msg, "rank 1");
  EXPECT_CONTAINS(msg, "[2,8]");
}

TEST_F(RunInputs, WrongDimension) {
  std::string msg = run_error({{"x", Tensor(DType::kFloat32, {2, 9})}});
  EXPECT_CONTAINS(msg, "'x'");
  EXPECT_CONTAINS(msg, "[2,9]");
  EXPECT_CONTAINS(msg, "dimension 1");
}

TEST_F(RunInputs, MissingInput) {
  std::string msg = run_error({});
  EXPECT_CONTAINS(msg, "missing input 'x'");
}

TEST_F(RunInputs, ExtraInput) {
  std::string msg = run_error({{"x", x_}, {"bogus", x_}});
  EXPECT_CONTAINS(msg, "unknown input 'bogus'");
  EXPECT_CONTAINS(msg, "x");  // the inputs the model has
}

// A graph input that also has an initializer (ONNX IR >= 4): an overridable initializer, listed apart from the
// required inputs; the model's value is used unless a run feeds one, and no pass folds it into a constant
// (Relu of an initializer would otherwise be folded at load and the fed value ignored).
namespace {
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ophost::Error thrown";
  return "";
}

fs::path initializer_input_model(const fs::path& dir, int64_t ir_version) {
  ModelBuilder b({{"", 13}}, ir_version);
  b.input("w", {2, 3}).output("y", {2, 3});
  auto* init = b.m.mutable_graph()->add_initializer();
  init->set_name("w");
  init->set_data_type(onnx::TensorProto::FLOAT);
  init->add_dims(2);
  init->add_dims(3);
  for (int i = 0; i < 6; ++i) init->add_float_data(static_cast<float>(i) - 2);
  b.node("Relu", {"w"}, {"y"}, "n");
  return b.save(dir / "m.onnx");
}
}  // namespace

TEST(RunInputsWithInitializer, OverridableInitializerIsTheDefaultUnlessFed) {
  TempDir tmp;
  auto session = runtime().load(initializer_input_model(tmp.path(), 8));
  EXPECT_TRUE(session->inputs().empty());
  ASSERT_EQ(session->overridable_initializers().size(), 1u);
  EXPECT_EQ(session->overridable_initializers()[0].name, "w");
  EXPECT_EQ(session->overridable_initializers()[0].shape, (std::vector<int64_t>{2, 3}));
  // Left out: Relu of the model's value (-2 .. 3).
  auto out = session->run({});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].tensor.data_as<float>()[0], 0.0f);
  EXPECT_EQ(out[0].tensor.data_as<float>()[5], 3.0f);
  // Fed: Relu of the fed value.
  Tensor w(DType::kFloat32, {2, 3});
  for (int i = 0; i < 6; ++i) w.data_as<float>()[i] = 10.0f * static_cast<float>(i);
  out = session->run({{"w", w}});
  EXPECT_EQ(out[0].tensor.data_as<float>()[5], 50.0f);
  // And the default again on the next run.
  out = session->run({});
  EXPECT_EQ(out[0].tensor.data_as<float>()[5], 3.0f);
  // Checked like any input.
  const std::string dup = error_of([&] { session->run({{"w", w}, {"w", w}}); });
  EXPECT_CONTAINS(dup, "input 'w' given more than once");
  const std::string wrong = error_of([&] { session->run({{"w", Tensor(DType::kInt64, {2, 3})}}); });
  EXPECT_CONTAINS(wrong, "'w'");
  EXPECT_CONTAINS(error_of([&] { session->run({{"v", w}}); }), "w (overridable initializer)");
}

// The command lists it and takes it with --input like any input.
TEST(RunInputsWithInitializer, InspectListsItAndRunTakesIt) {
  TempDir tmp;
  const fs::path model = initializer_input_model(tmp.path(), 8);
  ProcResult r = ophost({"inspect", model.string()});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_CONTAINS(r.out, "input  w: float32 [2,3] (overridable initializer");
  Tensor w(DType::kFloat32, {2, 3});
  for (int i = 0; i < 6; ++i) w.data_as<float>()[i] = 7.0f;
  write_npy(tmp / "w.npy", w);
  r = ophost({"run", model.string(), "--input", "w=" + (tmp / "w.npy").string(), "--output-dir", tmp.path().string()});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(read_npy(tmp / "y.npy").data_as<float>()[0], 7.0f);
  r = ophost({"run", model.string(), "--output-dir", tmp.path().string()});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(read_npy(tmp / "y.npy").data_as<float>()[5], 3.0f);
}

// Before IR 4 every initializer had to be listed as an input: such initializers are constants (as in ONNX
// Runtime), and feeding one says so.
TEST(RunInputsWithInitializer, BeforeIr4FeedingAnInitializerSaysItIsAConstant) {
  TempDir tmp;
  auto session = runtime().load(initializer_input_model(tmp.path(), 3));
  EXPECT_TRUE(session->overridable_initializers().empty());
  const std::string msg = error_of([&] { session->run({{"w", Tensor(DType::kFloat32, {2, 3})}}); });
  EXPECT_CONTAINS(msg, "input 'w' is an initializer the model also lists as a graph input; with IR version 3");
  EXPECT_CONTAINS(msg, "leave it out");
  EXPECT_CONTAINS(msg, "The model's inputs are: (none)");
  auto out = session->run({});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].tensor.data_as<float>()[5], 3.0f);
}

TEST_F(RunInputs, DuplicateInput) {
  std::string msg = run_error({{"x", x_}, {"x", x_}});
  EXPECT_CONTAINS(msg, "'x'");
  EXPECT_CONTAINS(msg, "more than once");
}

TEST_F(RunInputs, SessionStillWorksAfterRejectedInputs) {
  run_error({{"x", Tensor(DType::kFloat64, {2, 8})}});
  auto out = session_->run({{"x", x_}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].name, "y");
  EXPECT_EQ(out[0].tensor.dtype(), DType::kFloat32);
}

// ---------------------------------------------------------------------------------------------------------------
// Inputs on the command line

TEST_F(Errors, CommandInputWithoutEquals) {
  ProcResult r = ophost({"run", (kExamples / "mixed_small.onnx").string(), "--input", "x"});
  EXPECT_CLEAN_FAILURE(r);
  EXPECT_CONTAINS(r.err, "--input");
  EXPECT_CONTAINS(r.err, "NAME=");
  EXPECT_CONTAINS(r.err, "'x'");
}

TEST_F(Errors, CommandInputFileMissing) {
  fs::path npy = tmp / "nope.npy";
  ProcResult r = ophost({"run", (kExamples / "mixed_small.onnx").string(), "--input", "x=" + npy.string()});
  EXPECT_CLEAN_FAILURE(r);
  EXPECT_CONTAINS(r.err, npy.string());
}

TEST_F(Errors, CommandInputFileIsNotNpy) {
  fs::path npy = tmp / "bad.npy";
  write_file(npy, "definitely not numpy");
  ProcResult r = ophost({"run", (kExamples / "mixed_small.onnx").string(), "--input", "x=" + npy.string()});
  EXPECT_CLEAN_FAILURE(r);
  EXPECT_CONTAINS(r.err, npy.string());
}

TEST_F(Errors, CommandInputNotGiven) {
  ProcResult r = ophost({"run", (kExamples / "mixed_small.onnx").string()});
  EXPECT_CLEAN_FAILURE(r);
  EXPECT_CONTAINS(r.err, "input 'x'");
  EXPECT_CONTAINS(r.err, "--input x=");
  EXPECT_CONTAINS(r.err, "--random");
}

TEST_F(Errors, CommandInputWithUnknownName) {
  ProcResult r = ophost({"run", (kExamples / "mixed_small.onnx").string(), "--input",
                         "x=" + (kExamples / "mixed_small.input.x.npy").string(), "--input",
                         "q=" + (kExamples / "mixed_small.input.x.npy").string()});
  EXPECT_CLEAN_FAILURE(r);
  EXPECT_CONTAINS(r.err, "unknown input 'q'");
}

TEST_F(Errors, CommandInputOfWrongShape) {
  // broadcast's b is [4]; feed it the [2,8] tensor of mixed_small.
  ProcResult r = ophost({"run", (kExamples / "broadcast.onnx").string(), "--random", "--input",
                         "b=" + (kExamples / "mixed_small.input.x.npy").string()});
  EXPECT_CLEAN_FAILURE(r);
  EXPECT_CONTAINS(r.err, "input 'b'");
  EXPECT_CONTAINS(r.err, "[2,8]");
}

// ---------------------------------------------------------------------------------------------------------------
// Command line usage

TEST(Usage, UnknownCommandExits2) {
  ProcResult r = ophost({"bogus-command"});
  EXPECT_EQ(r.signal, 0) << r.describe();
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_CONTAINS(r.err, "unknown command 'bogus-command'");
  EXPECT_CONTAINS(r.err, "Usage: ophost <command>");
}

TEST(Usage, NoArgumentsPrintsUsageAndExits2) {
  ProcResult r = ophost({});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_CONTAINS(r.all(), "Usage: ophost <command>");
}

TEST(Usage, TopLevelHelp) {
  for (const char* h : {"--help", "-h", "help"}) {
    ProcResult r = ophost({h});
    EXPECT_EQ(r.exit_code, 0) << h << "\n" << r.describe();
    EXPECT_CONTAINS(r.out, "Usage: ophost <command>");
    EXPECT_CONTAINS(r.out, "run MODEL");
    EXPECT_CONTAINS(r.out, "plugins");
  }
}

TEST(Usage, RunHelp) {
  ProcResult r = ophost({"run", "--help"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_CONTAINS(r.out, "Usage: ophost run MODEL");
  EXPECT_CONTAINS(r.out, "--input");
  EXPECT_CONTAINS(r.out, "--output-dir");
  EXPECT_CONTAINS(r.out, "--plugin-path");
}

TEST(Usage, PluginsHelp) {
  ProcResult r = ophost({"plugins", "--help"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_CONTAINS(r.out, "Usage: ophost plugins");
  EXPECT_CONTAINS(r.out, "--verbose");
  EXPECT_CONTAINS(r.out, "--plugin-path");
}

TEST(Usage, PackHelp) {
  ProcResult r = ophost({"pack", "--help"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_CONTAINS(r.all(), "ophost pack manifest");
}

TEST(Usage, RunWithoutModelExits2) {
  ProcResult r = ophost({"run"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_CONTAINS(r.err, "missing MODEL");
}

TEST(Usage, UnknownOptionExits2) {
  ProcResult r = ophost({"run", (kExamples / "mixed_small.onnx").string(), "--frobnicate"});
  EXPECT_EQ(r.signal, 0) << r.describe();
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_CONTAINS(r.err, "frobnicate");
}

TEST(Usage, UnknownLogLevel) {
  ProcResult r = ophost({"plugins", "--log-level", "loud"});
  EXPECT_EQ(r.signal, 0) << r.describe();
  EXPECT_GT(r.exit_code, 0) << r.describe();
  EXPECT_CONTAINS(r.err, "'loud'");
}

TEST(Usage, Version) {
  ProcResult r = ophost({"--version"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_CONTAINS(r.out, "plugin ABI 1.");
}

}  // namespace
}  // namespace ophost::itest
