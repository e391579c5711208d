// Placement and Copy nodes without a GPU: the fakedev backend (host memory behind a device type) and the
// fakedevops pack (Add and Relu on fakedev; it checks it is handed fakedev tensors and context).
#include "integration_support.hpp"

#include "plugins/plugin_set.hpp"

#include <ophost/manifest.hpp>
#include <ophost/runtime.hpp>

#if defined(OPHOST_PLACEMENT_PLUGIN_DIR) && defined(FAKE_PLUGIN_fakedev) && defined(FAKE_PLUGIN_fakedevoff)

namespace ophost::itest {
namespace {

// A plugin root holding the fakedev (or fakedevoff) backend with its manifest.
fs::path backend_root(const TempDir& tmp, const char* name, const char* lib) {
  fs::path dir = tmp.path() / "backends" / name;
  fs::create_directories(dir);
  fs::copy_file(lib, dir / fs::path(lib).filename());
  write_manifest(manifest_from_library(dir / fs::path(lib).filename(), "device-backend"), dir / kManifestFileName);
  return tmp.path() / "backends";
}

// x -> Relu -> Add(c) -> myops::relu6_scale -> Relu -> y, x also feeds a second Add: Relu and Add can run on
// fakedev, relu6_scale only on cpu.
fs::path mixed_model(const fs::path& dir) {
  ModelBuilder b({{"", 14}, {"myops", 1}});
  b.input("x", {2, 8}).output("y", {2, 8}).output("z", {2, 8});
  auto* c = b.m.mutable_graph()->add_initializer();
  c->set_name("c");
  c->set_data_type(onnx::TensorProto::FLOAT);
  c->add_dims(2);
  c->add_dims(8);
  for (int i = 0; i < 16; ++i) c->add_float_data(0.25f * static_cast<float>(i % 5) - 0.3f);
  b.node("Relu", {"x"}, {"r"}, "relu1");
  b.node("Add", {"r", "c"}, {"a"}, "add1");
  auto* n = b.node("relu6_scale", {"a"}, {"s"}, "r6", "myops");
  ModelBuilder::attr_float(n, "scale", 3.0f);
  b.node("Relu", {"s"}, {"y"}, "relu2");
  b.node("Add", {"x", "c"}, {"z"}, "add2");  // x shared: one Copy for both fakedev readers
  return b.save(dir / "mixed.onnx");
}

Tensor input() {
  Tensor x(DType::kFloat32, {2, 8});
  for (int i = 0; i < 16; ++i) x.data_as<float>()[i] = 0.37f * static_cast<float>(i) - 2.5f;
  return x;
}

// A runtime that finds the fakedev backend, the fakedevops pack and this build's plugins, in that order.
RuntimeOptions fakedev_options(const TempDir& tmp) {
  RuntimeOptions ro;
  ro.plugin_paths = {backend_root(tmp, "fakedev", FAKE_PLUGIN_fakedev), OPHOST_PLACEMENT_PLUGIN_DIR, kPluginDir};
  ro.use_env_plugin_path = false;
  ro.use_default_plugin_dir = false;
  return ro;
}

TEST(Placement, PreferredDeviceWithFallbackAndSharedCopies) {
  TempDir tmp;
  fs::path model = mixed_model(tmp.path());
  RuntimeOptions ro = fakedev_options(tmp);
  Runtime rt(ro);
  auto cpu = rt.load(model);
  SessionOptions dev;
  dev.devices = {"fakedev", "cpu"};
  auto placed = rt.load(model, dev);
  auto per = placed->nodes_per_device();
  EXPECT_EQ(per["fakedev"], 4u) << "relu1, add1, relu2, add2";
  EXPECT_EQ(per["cpu"], 1u) << "relu6_scale has no fakedev kernel: falls back to cpu";
  // x -> fakedev (shared by relu1 and add2), a -> cpu, s -> fakedev, y and z -> cpu; c is uploaded once.
  EXPECT_EQ(placed->copy_count(), 5u);
  EXPECT_EQ(cpu->copy_count(), 0u);
  Tensor x = input();
  auto ref = cpu->run({{"x", x}});
  std::vector<NamedTensor> out;
  for (int i = 0; i < 3; ++i) placed->run({{"x", x}}, out);
  ASSERT_EQ(out.size(), ref.size());
  for (size_t o = 0; o < ref.size(); ++o) {
    ASSERT_EQ(out[o].tensor.nbytes(), ref[o].tensor.nbytes());
    EXPECT_EQ(std::memcmp(out[o].tensor.data(), ref[o].tensor.data(), ref[o].tensor.nbytes()), 0) << out[o].name;
  }
  EXPECT_EQ(placed->memory_stats().allocs_this_run, 0) << "copies and device arenas allocate nothing per run";
  // The same through the command line: inspect shows the placement and the copies.
  ProcResult r = ophost({"inspect", model.string(), "--device", "fakedev,cpu", "--plugin-path",
                         ro.plugin_paths[0].string(), "--plugin-path", OPHOST_PLACEMENT_PLUGIN_DIR});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_CONTAINS(r.out, "4 on fakedev");
  EXPECT_CONTAINS(r.out, "1 on cpu");
  EXPECT_CONTAINS(r.out, "5 Copy nodes");
}

TEST(Placement, RequestedDeviceMustBeUsable) {
  TempDir tmp;
  fs::path model = mixed_model(tmp.path());
  RuntimeOptions ro;
  ro.plugin_paths = {backend_root(tmp, "fakedevoff", FAKE_PLUGIN_fakedevoff), kPluginDir};
  ro.use_env_plugin_path = false;
  ro.use_default_plugin_dir = false;
  Runtime rt(ro);
  SessionOptions dev;
  dev.devices = {"fakedev", "cpu"};
  try {
    rt.load(model, dev);
    FAIL() << "an inactive requested device must be an error";
  } catch (const Error& e) {
    EXPECT_CONTAINS(std::string(e.what()), "device 'fakedev' was requested but its backend is inactive");
    EXPECT_CONTAINS(std::string(e.what()), "fakeGetDeviceCount returned 100");
  }
  dev.devices = {"nosuchdevice"};
  try {
    rt.load(model, dev);
    FAIL() << "an unknown requested device must be an error";
  } catch (const Error& e) {
    EXPECT_CONTAINS(std::string(e.what()), "device 'nosuchdevice' was requested but no loaded backend provides it");
  }
  ProcResult r = ophost({"run", model.string(), "--random", "--device", "cuda"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_CONTAINS(r.err, "device 'cuda' was requested");
}

// A run's node observer sees every node, Copy nodes included; outputs on fakedev are listed as skipped, those in
// host memory are copied.
TEST(Placement, NodeObserverSkipsValuesOnADevice) {
  TempDir tmp;
  fs::path model = mixed_model(tmp.path());
  Runtime rt(fakedev_options(tmp));
  SessionOptions dev;
  dev.devices = {"fakedev", "cpu"};
  auto placed = rt.load(model, dev);
  std::vector<NodeOutputs> seen;
  auto out = placed->run({{"x", input()}}, [&](const NodeOutputs& n) { seen.push_back(n); });
  const std::vector<KernelInfo> kernels = placed->kernels();
  ASSERT_EQ(seen.size(), kernels.size());
  size_t on_device = 0, on_cpu = 0;
  for (size_t k = 0; k < seen.size(); ++k) {
    const NodeOutputs& n = seen[k];
    SCOPED_TRACE(n.node);
    EXPECT_EQ(n.index, k);
    EXPECT_EQ(n.node, kernels[k].node);
    EXPECT_EQ(n.device, kernels[k].device);
    if (n.device == "fakedev") {
      ++on_device;
      EXPECT_TRUE(n.outputs.empty());
      ASSERT_EQ(n.skipped.size(), 1u);
      EXPECT_CONTAINS(n.skipped[0], "on device 'fakedev', not in host memory");
    } else {
      ++on_cpu;
      EXPECT_TRUE(n.skipped.empty());
      EXPECT_EQ(n.outputs.size(), 1u);
    }
  }
  // relu1, add1, relu2, add2 and the copies of x and s to fakedev; relu6_scale and the copies of a, y, z to cpu.
  EXPECT_EQ(on_device, 6u);
  EXPECT_EQ(on_cpu, 4u);
  for (const NamedTensor& o : out) {
    auto it = std::find_if(seen.begin(), seen.end(), [&](const NodeOutputs& n) {
      return !n.outputs.empty() && n.outputs[0].tensor.nbytes() == o.tensor.nbytes() &&
             std::memcmp(n.outputs[0].tensor.data(), o.tensor.data(), o.tensor.nbytes()) == 0;
    });
    EXPECT_NE(it, seen.end()) << "graph output '" << o.name << "' was not observed in host memory";
  }
}

}  // namespace
}  // namespace ophost::itest

#endif
