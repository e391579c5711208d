// Misbehaving packs (issue 7, point 6): fake packs whose kernels throw across the C ABI, return errors, fail in
// create_kernel, ask for an output shape other than their infer() declared, or whose entry function fails. Each
// is reported with the pack, the op and the node; the runtime stays usable and other models keep running.
#include "integration_support.hpp"

#include "../fake_plugin/test_support.hpp"
#include "plugins/plugin_set.hpp"

#include <ophost/manifest.hpp>
#include <ophost/runtime.hpp>

namespace ophost::itest {
namespace {

// Installs the built fake pack `library` as <root>/<name>/ with a manifest written from the library itself.
void install_fake(const fs::path& root, const fs::path& library) {
  const std::string name = library.parent_path().filename().string();
  const fs::path dir = root / name;
  fs::create_directories(dir);
  fs::copy_file(library, dir / library.filename(), fs::copy_options::overwrite_existing);
  write_manifest(manifest_from_library(dir / library.filename(), "operator-pack"), dir / kManifestFileName);
}

// A manifest that says what the pack would provide without loading it (for a pack whose entry fails).
void install_fake_unloadable(const fs::path& root, const fs::path& library) {
  const std::string name = library.parent_path().filename().string();
  test::install_plugin(root, name, library, name);
}

struct World {
  TempDir root, tmp;
  std::unique_ptr<Runtime> runtime;
  fs::path echo_model, relu_model;

  explicit World(const fs::path& library, bool loadable = true,
                 SessionOptions::ExecutionMode mode = SessionOptions::ExecutionMode::kSequential) {
    (void)mode;
    if (loadable) {
      install_fake(root.path(), library);
    } else {
      install_fake_unloadable(root.path(), library);
    }
    RuntimeOptions ro;
    ro.use_env_plugin_path = false;
    ro.use_default_plugin_dir = false;
    ro.plugin_paths = {root.path(), kPluginDir};
    runtime = std::make_unique<Runtime>(ro);
    ModelBuilder echo({{"", 13}, {"fake", 1}});
    echo.input("x", {2, 3}).output("y", {2, 3});
    echo.node("echo", {"x"}, {"y"}, "echo0", "fake");
    echo_model = echo.save(tmp / "echo.onnx");
    relu_model = unary_model("Relu", "", {{"", 13}}).save(tmp / "relu.onnx");
  }

  static std::vector<NamedTensor> inputs() {
    Tensor x(DType::kFloat32, {2, 3});
    for (int i = 0; i < 6; ++i) x.data_as<float>()[i] = static_cast<float>(i) - 2.5f;
    return {{"x", std::move(x)}};
  }

  // Another model in the same runtime loads and gives the right answer.
  void expect_other_model_runs() const {
    auto s = runtime->load(relu_model);
    auto out = s->run(inputs());
    ASSERT_EQ(out.size(), 1u);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(out[0].tensor.data_as<float>()[i], std::max(0.0f, i - 2.5f));
  }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "a non-ophost exception escaped: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return {};
}

// The node, the op and the pack (with its path) are all named.
void expect_names_node_op_pack(const std::string& msg, const std::string& pack) {
  EXPECT_CONTAINS(msg, "node 'echo0'");
  EXPECT_CONTAINS(msg, "fake::echo");
  EXPECT_CONTAINS(msg, "pack '" + pack + "'");
}

// A failing run leaves the session usable: the same error again (no deadlock, no leaked arena), and other
// sessions unaffected.
void expect_run_failure(const fs::path& library, const std::string& pack, const std::string& what) {
  World w(library);
  auto s = w.runtime->load(w.echo_model);
  for (int attempt = 0; attempt < 3; ++attempt) {
    const std::string msg = error_of([&] { s->run(World::inputs()); });
    expect_names_node_op_pack(msg, pack);
    EXPECT_CONTAINS(msg, what);
  }
  w.expect_other_model_runs();
  // The failing session is still there and still fails cleanly after the other model ran.
  EXPECT_CONTAINS(error_of([&] { s->run(World::inputs()); }), what);
}

#ifdef FAKE_PLUGIN_fakecopy
TEST(MisbehavingPack, WellBehavedTwinRuns) {
  World w(FAKE_PLUGIN_fakecopy);
  auto s = w.runtime->load(w.echo_model);
  auto out = s->run(World::inputs());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(std::vector<int64_t>(out[0].tensor.shape().begin(), out[0].tensor.shape().end()), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(out[0].tensor.data_as<float>()[5], 2.5f);
}
#endif

#ifdef FAKE_PLUGIN_fakethrow
TEST(MisbehavingPack, ThrowsFromCompute) {
  expect_run_failure(FAKE_PLUGIN_fakethrow, "fakethrow",
                     "compute threw a C++ exception across the C ABI: fake: something went wrong inside the kernel");
}
#endif

#ifdef FAKE_PLUGIN_fakecomputeerr
TEST(MisbehavingPack, ComputeReturnsError) {
  expect_run_failure(FAKE_PLUGIN_fakecomputeerr, "fakecomputeerr", "fake: the kernel reports failure (by design)");
}
#endif

#ifdef FAKE_PLUGIN_fakebadshape
TEST(MisbehavingPack, OutputShapeDifferentFromInfer) {
  expect_run_failure(FAKE_PLUGIN_fakebadshape, "fakebadshape",
                     "allocate_output: output 0 asked for shape [3,3] but infer() said [2,3]");
}
#endif

#ifdef FAKE_PLUGIN_fakekernelerr
TEST(MisbehavingPack, CreateKernelFails) {
  World w(FAKE_PLUGIN_fakekernelerr);
  for (int attempt = 0; attempt < 2; ++attempt) {
    const std::string msg = error_of([&] { w.runtime->load(w.echo_model); });
    expect_names_node_op_pack(msg, "fakekernelerr");
    EXPECT_CONTAINS(msg, "create_kernel failed");
    EXPECT_CONTAINS(msg, "weights for this node could not be prepared");
  }
  w.expect_other_model_runs();
}
#endif

#ifdef FAKE_PLUGIN_fakekernelthrow
TEST(MisbehavingPack, CreateKernelThrows) {
  World w(FAKE_PLUGIN_fakekernelthrow);
  const std::string msg = error_of([&] { w.runtime->load(w.echo_model); });
  expect_names_node_op_pack(msg, "fakekernelthrow");
  EXPECT_CONTAINS(msg, "create_kernel threw a C++ exception across the C ABI");
  w.expect_other_model_runs();
}
#endif

#ifdef FAKE_PLUGIN_fakeentryerr
TEST(MisbehavingPack, EntryFunctionFails) {
  World w(FAKE_PLUGIN_fakeentryerr, /*loadable=*/false);
  const PluginReport* rep = nullptr;
  for (const auto& r : w.runtime->plugins())
    if (r.name == "fakeentryerr") rep = &r;
  ASSERT_NE(rep, nullptr);
  EXPECT_FALSE(rep->loaded);
  EXPECT_CONTAINS(rep->reason, "plugin 'fakeentryerr'");
  EXPECT_CONTAINS(rep->reason, "the plugin's entry function failed: fake: license file /nonexistent/fake.lic");
  // A model using its op names the node, the op, and the pack that would serve it with why it did not load.
  const std::string msg = error_of([&] { w.runtime->load(w.echo_model); });
  EXPECT_CONTAINS(msg, "echo0");
  EXPECT_CONTAINS(msg, "fake::echo");
  EXPECT_CONTAINS(msg, "plugin 'fakeentryerr'");
  EXPECT_CONTAINS(msg, "entry function failed");
  w.expect_other_model_runs();
}
#endif

}  // namespace
}  // namespace ophost::itest
