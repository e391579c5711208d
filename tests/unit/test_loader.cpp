// Plugin discovery and loading: search order, disabling, shadowing, every pre- and post-dlopen check.
#include "fake_plugin/test_support.hpp"
#include "plugins/plugin_set.hpp"
#include "plugins/verify_cache.hpp"
#include "registry/registry.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <thread>
#include <fstream>

namespace ophost {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
namespace fs = std::filesystem;
using test::install_plugin;
using test::only;
using test::report_for;
using test::ScopedEnv;
using test::TempDir;

const fs::path kGood = FAKE_PLUGIN_fakegood;

// "1.<minor>" of this host.
std::string host_abi() { return "1." + std::to_string(OPH_ABI_MINOR); }

// Loads the single plugin of `root`; returns its report (which must exist).
PluginReport discover_one(const fs::path& root) {
  PluginSet set = PluginSet::discover(only({root}));
  EXPECT_EQ(set.reports().size(), 1u);
  if (set.reports().empty()) return {};
  return set.reports()[0];
}

// A rejected plugin: not loaded, the reason starts with the plugin name and manifest path, and (when
// `before_dlopen`) the library was never dlopen'ed.
std::string rejection(const fs::path& root, const std::string& name, bool before_dlopen) {
  size_t before = dlopen_count();
  PluginReport r = discover_one(root);
  EXPECT_FALSE(r.loaded);
  EXPECT_EQ(r.name, name);
  EXPECT_THAT(r.reason, StartsWith("plugin '" + name + "' (" + r.manifest.string() + "): "));
  if (before_dlopen) {
    EXPECT_EQ(dlopen_count(), before) << "a plugin rejected before dlopen must not be dlopen'ed";
  } else {
    EXPECT_GT(dlopen_count(), before);
  }
  return r.reason;
}

class Loader : public ::testing::Test {
 protected:
  void SetUp() override {}
  TempDir tmp_;
  ScopedEnv no_disable_{"OPHOST_PLUGINS_DISABLE", std::nullopt};
  ScopedEnv no_path_{"OPHOST_PLUGIN_PATH", std::nullopt};
};

TEST_F(Loader, GoodPluginLoadsAndItsOpTableMatches) {
  install_plugin(tmp_.path(), "fakegood", kGood, "fakegood");
  size_t before = dlopen_count();
  PluginSet set = PluginSet::discover(only({tmp_.path()}));
  EXPECT_EQ(dlopen_count(), before + 1);
  ASSERT_EQ(set.reports().size(), 1u);
  const PluginReport& r = set.reports()[0];
  EXPECT_TRUE(r.loaded) << r.reason;
  EXPECT_EQ(r.reason, "");
  EXPECT_EQ(r.name, "fakegood");
  EXPECT_EQ(r.kind, "operator-pack");
  EXPECT_EQ(r.version, "1.0.0");
  EXPECT_EQ(r.library, tmp_ / "fakegood" / "libfakegood.so");
  EXPECT_THAT(r.ops, ElementsAre("fake::echo [1+] on cpu"));

  ASSERT_EQ(set.loaded().size(), 1u);
  const LoadedPlugin& p = *set.loaded()[0];
  EXPECT_EQ(p.name(), "fakegood");
  EXPECT_EQ(p.dir(), tmp_ / "fakegood");
  ASSERT_EQ(p.ops().size(), 1u);
  const oph_op_def* op = p.ops()[0];
  EXPECT_STREQ(op->domain, "fake");
  EXPECT_STREQ(op->name, "echo");
  EXPECT_STREQ(op->device, "cpu");
  EXPECT_EQ(op->since_version, 1);
  EXPECT_EQ(op->end_version, OPH_OPSET_MAX);
  EXPECT_EQ(op->num_inputs, 1u);
  EXPECT_EQ(op->num_attributes, 2u);
  EXPECT_STREQ(op->attributes[0]->name, "scale");
  EXPECT_NE(op->compute, nullptr);
  EXPECT_EQ(p.info()->abi_major, static_cast<uint32_t>(OPH_ABI_MAJOR));
  EXPECT_EQ(set.find("fakegood"), &p);
  EXPECT_EQ(set.find("nope"), nullptr);
}

TEST_F(Loader, ReleaseIsCalledExactlyOnceBeforeUnload) {
  install_plugin(tmp_.path(), "fakegood", kGood, "fakegood");
  fs::path log = tmp_ / "release.log";
  ScopedEnv env("FAKE_PLUGIN_RELEASE_LOG", log.string());
  {
    PluginSet set = PluginSet::discover(only({tmp_.path()}));
    ASSERT_EQ(set.loaded().size(), 1u);
    PluginSet moved = std::move(set);  // moving does not release
    EXPECT_FALSE(fs::exists(log));
  }
  EXPECT_EQ(test::read_text(log), "release fakegood\n");
}

TEST_F(Loader, ReleaseIsCalledForAPluginRejectedAfterTheHandshake) {
  install_plugin(tmp_.path(), "fakebadop", FAKE_PLUGIN_fakebadop, "fakebadop");
  fs::path log = tmp_ / "release.log";
  ScopedEnv env("FAKE_PLUGIN_RELEASE_LOG", log.string());
  PluginSet set = PluginSet::discover(only({tmp_.path()}));
  EXPECT_TRUE(set.loaded().empty());
  EXPECT_EQ(test::read_text(log), "release fakebadop\n");
}

// ---- checks before dlopen -------------------------------------------------------------------------------

TEST_F(Loader, ManifestNotJson) {
  fs::path dir = tmp_ / "brokenjson";
  fs::create_directories(dir);
  test::write_text(dir / "ophost-plugin.json", "{\n  \"name\": \"x\",\n  oops\n}\n");
  std::string msg = rejection(tmp_.path(), "brokenjson", true);  // folder name: the manifest is unreadable
  EXPECT_THAT(msg, HasSubstr("not valid JSON at line 3:3"));
}

TEST_F(Loader, UnknownManifestKey) {
  fs::path dir = install_plugin(tmp_.path(), "fakegood", kGood, "fakegood");
  std::string text = test::read_text(dir / "ophost-plugin.json");
  text.replace(text.find("\"ops\""), 5, "\"opz\": [], \"ops\"");
  test::write_text(dir / "ophost-plugin.json", text);
  std::string msg = rejection(tmp_.path(), "fakegood", true);
  EXPECT_THAT(msg, HasSubstr("unknown key 'provides.opz'; allowed keys: devices, ops"));
}

TEST_F(Loader, AbiMajorMismatchInManifest) {
  install_plugin(tmp_.path(), "fakegood", kGood, "fakegood", [](Manifest& m) { m.abi = {2, 0, 0}; });
  std::string msg = rejection(tmp_.path(), "fakegood", true);
  EXPECT_THAT(msg, HasSubstr("built for ABI 2.0 (major 2) but this host provides ABI " + host_abi()));
  EXPECT_THAT(msg, HasSubstr("rebuild the plugin against SDK " + host_abi()));
}

TEST_F(Loader, MinorRequiredAboveHostInManifest) {
  install_plugin(tmp_.path(), "fakegood", kGood, "fakegood",
                 [](Manifest& m) { m.abi = {1, OPH_ABI_MINOR + 2, OPH_ABI_MINOR + 2}; });
  std::string msg = rejection(tmp_.path(), "fakegood", true);
  EXPECT_THAT(msg, HasSubstr("requires ABI 1." + std::to_string(OPH_ABI_MINOR + 2) + " but this host provides ABI " +
                             host_abi() + "; upgrade ophost or rebuild the plugin against SDK " + host_abi()));
}

TEST_F(Loader, PlatformMismatch) {
  install_plugin(tmp_.path(), "fakegood", kGood, "fakegood", [](Manifest& m) { m.platform.arch = "sparc64"; });
  std::string msg = rejection(tmp_.path(), "fakegood", true);
  EXPECT_THAT(msg, HasSubstr("built for linux/sparc64 but this machine is linux/" + host_arch()));
}

TEST_F(Loader, LibraryMissing) {
  install_plugin(tmp_.path(), "fakegood", kGood, "fakegood", [](Manifest& m) { m.library = "libgone.so"; });
  std::string msg = rejection(tmp_.path(), "fakegood", true);
  EXPECT_THAT(msg, HasSubstr("library " + (tmp_ / "fakegood" / "libgone.so").string() + " (manifest 'library': "
                             "\"libgone.so\") does not exist"));
}

TEST_F(Loader, LibraryOutsideThePluginFolder) {
  install_plugin(tmp_.path(), "other", kGood, "other");
  install_plugin(tmp_.path(), "fakegood", kGood, "fakegood",
                 [](Manifest& m) { m.library = "../other/libfakegood.so"; });
  PluginSet set = PluginSet::discover(only({tmp_.path()}));
  const PluginReport* r = report_for(set, "fakegood");
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(r->loaded);
  EXPECT_THAT(r->reason, HasSubstr("outside the plugin folder"));
}

TEST_F(Loader, Sha256Mismatch) {
  std::string wrong(64, 'a');
  install_plugin(tmp_.path(), "fakegood", kGood, "fakegood", [&](Manifest& m) { m.sha256 = wrong; });
  std::string msg = rejection(tmp_.path(), "fakegood", true);
  EXPECT_THAT(msg, HasSubstr("does not match the manifest: expected " + wrong + ", actual " + sha256_file(kGood)));
  EXPECT_THAT(msg, HasSubstr("rebuild or regenerate the manifest with `ophost pack manifest`"));
}

TEST_F(Loader, CpuFeatureMissing) {
  install_plugin(tmp_.path(), "fakegood", kGood, "fakegood",
                 [](Manifest& m) { m.requires_.cpu_features = {"no_such_cpu_flag"}; });
  std::string msg = rejection(tmp_.path(), "fakegood", true);
  EXPECT_THAT(msg, HasSubstr("requires CPU features this CPU lacks: no_such_cpu_flag"));
}

TEST_F(Loader, CpuFeaturePresentIsAccepted) {
  ASSERT_FALSE(host_cpu_features().empty());
  std::string have = host_cpu_features().front();
  install_plugin(tmp_.path(), "fakegood", kGood, "fakegood", [&](Manifest& m) { m.requires_.cpu_features = {have}; });
  EXPECT_TRUE(discover_one(tmp_.path()).loaded);
}

// ---- dlopen and checks after it ---------------------------------------------------------------------------

TEST_F(Loader, MissingDependencyReportsDlerrorVerbatim) {
  install_plugin(tmp_.path(), "fakemissingdep", FAKE_PLUGIN_fakemissingdep, "fakemissingdep");
  std::string msg = rejection(tmp_.path(), "fakemissingdep", false);
  EXPECT_THAT(msg, HasSubstr("cannot load " + (tmp_ / "fakemissingdep" / "libfakemissingdep.so").string()));
  // dlerror's own text names the missing dependency.
  EXPECT_THAT(msg, HasSubstr("libfake_helper.so: cannot open shared object file: No such file or directory"));
  EXPECT_THAT(msg, Not(HasSubstr("Bad file descriptor")));
}

TEST_F(Loader, LibraryForAnotherArchitectureSaysSo) {
  // fakegood with its ELF header's e_machine set to aarch64 (183) and the manifest's sha256 matching that
  // file: dlopen refuses it ("wrong ELF class" or "No such file or directory"); the message says why.
  fs::path dir = install_plugin(tmp_.path(), "fakearm", kGood, "fakearm");
  const fs::path lib = dir / fs::path(kGood).filename();
  {
    std::fstream f(lib, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(18);  // e_machine, little-endian
    const char aarch64[2] = {char(183), 0};
    f.write(aarch64, 2);
  }
  Manifest m = test::fake_manifest("fakearm", lib);
  write_manifest(m, dir / kManifestFileName);
  std::string msg = rejection(tmp_.path(), "fakearm", false);
  EXPECT_THAT(msg, HasSubstr("cannot load " + lib.string() + ": it is built for aarch64 (ELF machine 183) but "
                             "this host runs x86-64; install the plugin built for x86-64"));
}

TEST_F(Loader, EntrySymbolMissing) {
  install_plugin(tmp_.path(), "fakenoentry", FAKE_PLUGIN_fakenoentry, "fakenoentry");
  std::string msg = rejection(tmp_.path(), "fakenoentry", false);
  EXPECT_THAT(msg, HasSubstr("does not export the entry symbol 'oph_plugin_entry_v1'"));
  EXPECT_THAT(msg, HasSubstr("use OPH_DEFINE_PLUGIN_ENTRY"));
}

TEST_F(Loader, EntryReturnsError) {
  install_plugin(tmp_.path(), "fakeentryerr", FAKE_PLUGIN_fakeentryerr, "fakeentryerr");
  std::string msg = rejection(tmp_.path(), "fakeentryerr", false);
  EXPECT_THAT(msg, HasSubstr("the plugin's entry function failed: fake: license file /nonexistent/fake.lic not found"));
}

TEST_F(Loader, PluginInfoAbiMajorMismatch) {
  install_plugin(tmp_.path(), "fakeabi2", FAKE_PLUGIN_fakeabi2, "fakeabi2");
  std::string msg = rejection(tmp_.path(), "fakeabi2", false);
  EXPECT_THAT(msg, HasSubstr("the library reports ABI major 2 but this host provides ABI " + host_abi()));
}

TEST_F(Loader, PluginInfoMinorRequiredAboveHost) {
  // The manifest claims the host's ABI (passes the pre-dlopen check); the library itself says it needs the next.
  install_plugin(tmp_.path(), "fakeminor", FAKE_PLUGIN_fakeminor, "fakeminor");
  std::string msg = rejection(tmp_.path(), "fakeminor", false);
  EXPECT_THAT(msg, HasSubstr("the library requires ABI 1." + std::to_string(OPH_ABI_MINOR + 1) +
                             " but this host provides ABI " + host_abi() + "; upgrade ophost or rebuild the plugin "
                             "against SDK " + host_abi()));
}

TEST_F(Loader, InvalidOpTable) {
  install_plugin(tmp_.path(), "fakebadop", FAKE_PLUGIN_fakebadop, "fakebadop");
  std::string msg = rejection(tmp_.path(), "fakebadop", false);
  EXPECT_THAT(msg, HasSubstr("op table entry 0 (fake::echo): compute is NULL"));
}

TEST_F(Loader, UnknownTypeVariable) {
  install_plugin(tmp_.path(), "fakebadtv", FAKE_PLUGIN_fakebadtv, "fakebadtv");
  std::string msg = rejection(tmp_.path(), "fakebadtv", false);
  EXPECT_THAT(msg, HasSubstr("inputs[0] ('x') uses type variable 'U', which no type constraint defines"));
}

TEST_F(Loader, NameMismatchWithManifest) {
  install_plugin(tmp_.path(), "fakeother", kGood, "fakeother");
  std::string msg = rejection(tmp_.path(), "fakeother", false);
  EXPECT_THAT(msg, HasSubstr("the library is named 'fakegood' but the manifest says 'fakeother'"));
}

TEST_F(Loader, ProvidesMustEqualTheTables) {
  install_plugin(tmp_.path(), "fakegood", kGood, "fakegood", [](Manifest& m) {
    m.provides.ops.push_back(ManifestOp{"fake", "ghost", 3, 7, "cuda"});
    m.provides.ops[0].since_version = 2;
  });
  std::string msg = rejection(tmp_.path(), "fakegood", false);
  EXPECT_THAT(msg, HasSubstr("ops in the manifest but not in the library: fake::echo [2+] on cpu, "
                             "fake::ghost [3-7] on cuda"));
  EXPECT_THAT(msg, HasSubstr("ops in the library but not in the manifest: fake::echo [1+] on cpu"));
}

TEST_F(Loader, WiderStructsOfANewerMinorAreReadThroughTheirPointers) {
  fs::path lib = FAKE_PLUGIN_fakewide;
  Manifest m = manifest_from_library(lib, "operator-pack");
  fs::path dir = tmp_ / "fakewide";
  fs::create_directories(dir);
  fs::copy_file(lib, dir / lib.filename());
  write_manifest(m, dir / kManifestFileName);
  PluginSet set = PluginSet::discover(only({tmp_.path()}));
  ASSERT_EQ(set.loaded().size(), 1u) << set.reports()[0].reason;
  EXPECT_THAT(set.reports()[0].ops, ElementsAre("fake::echo [1+] on cpu", "ai.onnx::Identity [1-13] on cpu"));
  const oph_op_def* op = set.loaded()[0]->ops()[0];
  ASSERT_EQ(op->num_inputs, 2u);
  EXPECT_GT(op->struct_size, OPH_OP_DEF_STRUCT_SIZE);
  EXPECT_GT(op->inputs[0]->struct_size, OPH_IO_DEF_STRUCT_SIZE);
  EXPECT_GT(op->type_constraints[0]->struct_size, OPH_TYPE_CONSTRAINT_STRUCT_SIZE);
  EXPECT_STREQ(op->inputs[1]->name, "y");
}

TEST_F(Loader, DeviceBackendDescribesItsDevices) {
  for (const char* name : {"fakedev", "fakedevoff"}) {
    fs::path lib = std::string(name) == "fakedev" ? fs::path(FAKE_PLUGIN_fakedev) : fs::path(FAKE_PLUGIN_fakedevoff);
    Manifest m = manifest_from_library(lib, "device-backend");
    EXPECT_EQ(m.provides.devices, std::vector<std::string>{"fakedev"});
    EXPECT_TRUE(m.provides.ops.empty());
    fs::path dir = tmp_ / name;
    fs::create_directories(dir);
    fs::copy_file(lib, dir / lib.filename());
    write_manifest(m, dir / kManifestFileName);
  }
  PluginSet set = PluginSet::discover(only({tmp_.path()}));
  ASSERT_EQ(set.loaded().size(), 2u);
  const PluginReport* on = report_for(set, "fakedev");
  const PluginReport* off = report_for(set, "fakedevoff");
  ASSERT_TRUE(on && off);
  EXPECT_EQ(on->kind, "device-backend");
  EXPECT_THAT(on->devices, ElementsAre("fakedev:0 Fake Accelerator 9000, fk1, 4 multiprocessors, 3.0 GiB, fp16 bf16"));
  EXPECT_THAT(off->devices, ElementsAre("fakedev: inactive (no fake accelerator: fakeGetDeviceCount returned 100)"));
  EXPECT_EQ(set.loaded()[0]->devices().size(), 1u);
}

TEST_F(Loader, RequiredDeviceWithoutBackendRejectsThePack) {
  install_plugin(tmp_.path(), "fakegood", kGood, "fakegood", [](Manifest& m) { m.requires_.devices = {"fakedev"}; });
  PluginReport r = discover_one(tmp_.path());
  EXPECT_FALSE(r.loaded);
  EXPECT_THAT(r.reason, HasSubstr("requires device fakedev but no loaded device backend provides it"));

  // With the backend present the pack loads.
  fs::path lib = FAKE_PLUGIN_fakedev;
  fs::create_directories(tmp_ / "fakedev");
  fs::copy_file(lib, tmp_ / "fakedev" / lib.filename());
  write_manifest(manifest_from_library(lib, "device-backend"), tmp_ / "fakedev" / kManifestFileName);
  PluginSet set = PluginSet::discover(only({tmp_.path()}));
  EXPECT_EQ(set.loaded().size(), 2u);
}

// ---- device probes: a backend whose device is absent is never loaded ----------------------------------------

// A fakedev backend whose manifest probe names `device_file`.
void install_probed_backend(const fs::path& root, const std::string& device_file) {
  fs::path lib = FAKE_PLUGIN_fakedev;
  Manifest m = manifest_from_library(lib, "device-backend");
  m.probe.device_files = {device_file};
  m.probe.libraries = {"libfakedevrt.so.1"};
  fs::create_directories(root / "fakedev");
  fs::copy_file(lib, root / "fakedev" / lib.filename());
  write_manifest(m, root / "fakedev" / kManifestFileName);
}

TEST_F(Loader, BackendWhoseProbeFindsNoDeviceIsInactiveAndNeverLoaded) {
  install_probed_backend(tmp_.path(), (tmp_ / "no-such-device").string());
  // A pack that needs that device: not loaded either, and not a rejection.
  install_plugin(tmp_.path(), "fakegood", kGood, "fakegood", [](Manifest& m) { m.requires_.devices = {"fakedev"}; });
  size_t before = dlopen_count();
  PluginSet set = PluginSet::discover(only({tmp_.path()}));
  EXPECT_EQ(dlopen_count(), before) << "neither the backend nor the pack that needs it may be dlopen'ed";
  EXPECT_TRUE(set.loaded().empty());
  const PluginReport* dev = report_for(set, "fakedev");
  const PluginReport* pack = report_for(set, "fakegood");
  ASSERT_TRUE(dev && pack);
  EXPECT_FALSE(dev->loaded);
  EXPECT_TRUE(dev->inactive);
  EXPECT_THAT(dev->reason, HasSubstr("not loaded: no device: none of " + (tmp_ / "no-such-device").string() +
                                     " exists"));
  EXPECT_THAT(dev->devices, ElementsAre(StartsWith("fakedev: inactive (no device: none of ")));
  EXPECT_TRUE(pack->inactive);
  EXPECT_THAT(pack->reason, HasSubstr("not loaded: needs device 'fakedev', which is inactive here (no device: "));
  ASSERT_EQ(set.inactive_devices().count("fakedev"), 1u);

  // Required, it is an error that says why.
  DiscoveryOptions o = only({tmp_.path()});
  o.required_plugins = {"fakedev"};
  try {
    PluginSet::discover(o);
    FAIL() << "a required backend without its device must be an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("no device: none of"));
    EXPECT_THAT(e.what(), HasSubstr("the plugin is required"));
  }
}

TEST_F(Loader, BackendWhoseProbeFindsItsDeviceLoads) {
  fs::path node = tmp_ / "fake-device-node";
  std::ofstream(node) << "";
  install_probed_backend(tmp_.path(), node.string());
  install_plugin(tmp_.path(), "fakegood", kGood, "fakegood", [](Manifest& m) { m.requires_.devices = {"fakedev"}; });
  PluginSet set = PluginSet::discover(only({tmp_.path()}));
  EXPECT_EQ(set.loaded().size(), 2u);
  EXPECT_TRUE(set.inactive_devices().empty());
  EXPECT_TRUE(report_for(set, "fakedev")->loaded);
}

// ---- sha256 verification: computed once per file version, then taken from the per-user cache ----------------

TEST_F(Loader, LibraryDigestIsComputedOnceThenTakenFromTheCacheUntilTheFileChanges) {
  ScopedEnv on("OPHOST_VERIFY_CACHE", std::nullopt);
  ScopedEnv dir("OPHOST_VERIFY_CACHE_DIR", (tmp_ / "cache").string());
  install_plugin(tmp_.path() / "root", "fakegood", kGood, "fakegood");
  PluginReport first = discover_one(tmp_ / "root");
  ASSERT_TRUE(first.loaded) << first.reason;
  EXPECT_THAT(first.verified, StartsWith("sha256 matches, computed ("));
  EXPECT_THAT(first.verified, HasSubstr("remembered in " + (tmp_ / "cache").string()));
  PluginReport second = discover_one(tmp_ / "root");
  EXPECT_THAT(second.verified, StartsWith("sha256 matches, from the verification cache"));

  // A cache folder others may write is not trusted: every start hashes.
  fs::permissions(tmp_ / "cache", fs::perms::all);
  PluginReport fourth = discover_one(tmp_ / "root");
  EXPECT_THAT(fourth.verified, StartsWith("sha256 matches, computed ("));
  EXPECT_THAT(fourth.verified, Not(HasSubstr("remembered")));
  fs::permissions(tmp_ / "cache", fs::perms::owner_all);

  // Off: hashed every time.
  ScopedEnv off("OPHOST_VERIFY_CACHE", "0");
  EXPECT_THAT(discover_one(tmp_ / "root").verified, Not(HasSubstr("cache")));
}

// On a plain file (a loaded library must not be written in place: it stays mapped until the process exits).
TEST_F(Loader, CachedDigestNeverHidesAChangedFile) {
  ScopedEnv on("OPHOST_VERIFY_CACHE", std::nullopt);
  ScopedEnv dir("OPHOST_VERIFY_CACHE_DIR", (tmp_ / "cache").string());
  const fs::path f = tmp_ / "data.bin";
  std::ofstream(f, std::ios::binary) << std::string(4096, 'a');
  const std::string digest = sha256_file(f);
  EXPECT_THAT(verify_library_sha256(f, digest, "p: "), StartsWith("sha256 matches, computed ("));
  EXPECT_THAT(verify_library_sha256(f, digest, "p: "), StartsWith("sha256 matches, from the verification cache"));
  // Same size, one byte changed in place: the cached entry no longer matches the file's identity.
  {
    std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(100);
    io.put('b');
  }
  try {
    verify_library_sha256(f, digest, "p: ");
    FAIL() << "a changed file was accepted from the cache";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kDataLoss);
    EXPECT_THAT(e.what(), HasSubstr("p: sha256 of " + f.string() + " does not match the manifest: expected " + digest));
  }
  // The same bytes written again: a new file version, hashed again (and the digest matches again).
  std::ofstream(f, std::ios::binary | std::ios::trunc) << std::string(4096, 'a');
  EXPECT_THAT(verify_library_sha256(f, digest, "p: "), StartsWith("sha256 matches, computed ("));
}

// ---- manifest_from_library (ophost pack manifest) ---------------------------------------------------------

TEST_F(Loader, ManifestFromLibraryDescribesTheLibrary) {
  Manifest m = manifest_from_library(kGood, "operator-pack",
                                     ManifestExtras{"desc", "MIT", {"cpu"}, {"sse2"}});
  EXPECT_EQ(m.name, "fakegood");
  EXPECT_EQ(m.version, "1.0.0");
  EXPECT_EQ(m.kind, "operator-pack");
  EXPECT_EQ(m.library, "libfakegood.so");
  EXPECT_EQ(m.sha256, sha256_file(kGood));
  EXPECT_EQ(m.abi.major, 1u);
  EXPECT_EQ(m.platform.os, "linux");
  EXPECT_EQ(m.platform.arch, host_arch());
  EXPECT_EQ(m.provides.ops, (std::vector<ManifestOp>{{"fake", "echo", 1, OPH_OPSET_MAX, "cpu"}}));
  EXPECT_EQ(m.requires_.devices, std::vector<std::string>{"cpu"});
  EXPECT_EQ(m.description, "desc");
  // What it writes is accepted by the loader as is.
  fs::create_directories(tmp_ / "p");
  fs::copy_file(kGood, tmp_ / "p" / "libfakegood.so");
  m.requires_ = {};
  write_manifest(m, tmp_ / "p" / kManifestFileName);
  EXPECT_TRUE(discover_one(tmp_.path()).loaded);
}

TEST_F(Loader, ManifestFromLibraryRejectsBrokenLibraries) {
  EXPECT_THROW(manifest_from_library(kGood, "device-backend"), Error);
  try {
    manifest_from_library(FAKE_PLUGIN_fakebadop, "operator-pack");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("compute is NULL"));
  }
  EXPECT_THROW(manifest_from_library(tmp_ / "nothing.so", "operator-pack"), Error);
}

#ifdef FAKE_PACKED_MANIFEST
TEST_F(Loader, PluginBuiltWithOphostAddPluginLoads) {
  fs::path dir = fs::path(FAKE_PACKED_MANIFEST).parent_path();
  PluginSet set = PluginSet::discover(only({dir.parent_path()}));
  const PluginReport* r = report_for(set, "fakepacked");
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->loaded) << r->reason;
}
#endif

// ---- discovery: roots, order, disabling, shadowing ---------------------------------------------------------

TEST_F(Loader, SearchOrderIsPluginPathThenEnvThenDefaultDir) {
  fs::path a = tmp_ / "cli", b = tmp_ / "env1", c = tmp_ / "env2", d = tmp_ / "default";
  install_plugin(a, "fakegood", kGood, "fakegood");
  install_plugin(b, "fakegood", kGood, "fakegood");
  install_plugin(c, "fakegood", kGood, "fakegood");
  install_plugin(d, "fakegood", kGood, "fakegood");
  install_plugin(d, "fakedup", FAKE_PLUGIN_fakedup, "fakedup");
  ScopedEnv env("OPHOST_PLUGIN_PATH", b.string() + "::" + c.string() + ":");
  DiscoveryOptions o;
  o.plugin_paths = {a};
  o.default_plugin_dir = d;
  PluginSet set = PluginSet::discover(o);
  EXPECT_THAT(set.roots(), ElementsAre(a, b, c, d));
  ASSERT_EQ(set.reports().size(), 5u);
  EXPECT_EQ(set.reports()[0].manifest, a / "fakegood" / "ophost-plugin.json");
  EXPECT_TRUE(set.reports()[0].loaded);
  for (int i : {1, 2, 4}) {
    EXPECT_FALSE(set.reports()[i].loaded);
    EXPECT_THAT(set.reports()[i].reason, HasSubstr("shadowed by " + (a / "fakegood" / "ophost-plugin.json").string()));
  }
  EXPECT_EQ(set.reports()[1].manifest.parent_path().parent_path(), b);
  EXPECT_EQ(set.reports()[2].manifest.parent_path().parent_path(), c);
  // Inside one root, entries are sorted by name: fakedup before fakegood.
  EXPECT_EQ(set.reports()[3].name, "fakedup");
  EXPECT_TRUE(set.reports()[3].loaded);
  EXPECT_EQ(set.loaded().size(), 2u);
  ASSERT_NE(set.find("fakegood"), nullptr);
  EXPECT_EQ(set.find("fakegood")->dir(), a / "fakegood");

  // Switching the env and default roots off leaves the explicit path only.
  o.use_env_plugin_path = false;
  o.use_default_plugin_dir = false;
  EXPECT_THAT(PluginSet::discover(o).roots(), ElementsAre(a));
}

TEST_F(Loader, NeverTheCurrentDirectory) {
  fs::path cwd_root = tmp_ / "cwd";
  install_plugin(cwd_root, "fakegood", kGood, "fakegood");
  fs::path old = fs::current_path();
  fs::current_path(cwd_root);
  // Empty entries in OPHOST_PLUGIN_PATH (which mean "." in PATH-style lists) are ignored.
  ScopedEnv env("OPHOST_PLUGIN_PATH", ":");
  DiscoveryOptions o;
  o.default_plugin_dir = tmp_ / "nonexistent";
  PluginSet set = PluginSet::discover(o);
  fs::current_path(old);
  EXPECT_TRUE(set.reports().empty());
  EXPECT_THAT(set.roots(), ElementsAre(tmp_ / "nonexistent"));
}

TEST_F(Loader, DefaultDirIsNextToTheExecutable) {
  fs::path exe = fs::read_symlink("/proc/self/exe");
  EXPECT_EQ(default_plugin_dir(), (exe.parent_path().parent_path() / "lib" / "ophost" / "plugins").lexically_normal());
}

TEST_F(Loader, MissingRootIsNotAnError) {
  PluginSet set = PluginSet::discover(only({tmp_ / "does-not-exist"}));
  EXPECT_TRUE(set.reports().empty());
  EXPECT_TRUE(set.loaded().empty());
}

TEST_F(Loader, DisabledByGlobsFromEnvAndOptions) {
  install_plugin(tmp_.path(), "fakegood", kGood, "fakegood");
  install_plugin(tmp_.path(), "fakedup", FAKE_PLUGIN_fakedup, "fakedup");
  install_plugin(tmp_.path(), "keepme", FAKE_PLUGIN_fakedup, "fakedup2",
                 [](Manifest& m) { m.name = "fakedup2"; });  // would be rejected (name mismatch) if loaded
  {
    ScopedEnv env("OPHOST_PLUGINS_DISABLE", "fake*d,nothing:fakedup?");
    size_t before = dlopen_count();
    PluginSet set = PluginSet::discover(only({tmp_.path()}));
    EXPECT_EQ(dlopen_count(), before + 1);  // only fakedup
    const PluginReport* g = report_for(set, "fakegood");
    ASSERT_NE(g, nullptr);
    EXPECT_FALSE(g->loaded);
    EXPECT_THAT(g->reason, HasSubstr("disabled by pattern 'fake*d' (OPHOST_PLUGINS_DISABLE)"));
    const PluginReport* d2 = report_for(set, "fakedup2");
    ASSERT_NE(d2, nullptr);
    EXPECT_THAT(d2->reason, HasSubstr("disabled by pattern 'fakedup?'"));
    EXPECT_TRUE(report_for(set, "fakedup")->loaded);
  }
  DiscoveryOptions o = only({tmp_.path()});
  o.disabled_plugins = {"*dup*"};
  PluginSet set = PluginSet::discover(o);
  EXPECT_THAT(report_for(set, "fakedup")->reason, HasSubstr("disabled by pattern '*dup*' (disabled_plugins option)"));
  EXPECT_TRUE(report_for(set, "fakegood")->loaded);
  EXPECT_EQ(set.loaded().size(), 1u);
}

TEST_F(Loader, RequiredPluginRejectedOrMissingThrows) {
  install_plugin(tmp_.path(), "fakegood", kGood, "fakegood", [](Manifest& m) { m.sha256 = std::string(64, 'b'); });
  DiscoveryOptions o = only({tmp_.path()});
  o.required_plugins = {"fakegood"};
  try {
    PluginSet::discover(o);
    FAIL() << "a required plugin was rejected silently";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("sha256"));
    EXPECT_THAT(e.what(), HasSubstr("the plugin is required"));
  }
  o.required_plugins = {"absent"};
  try {
    PluginSet::discover(o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kNotFound);
    EXPECT_THAT(e.what(), HasSubstr("plugin 'absent' is required but was not found"));
  }
  // Not required: never fatal.
  o.required_plugins.clear();
  EXPECT_NO_THROW(PluginSet::discover(o));
}

TEST_F(Loader, DuplicateOpAcrossTwoPacksNamesBoth) {
  fs::path g = install_plugin(tmp_.path(), "fakegood", kGood, "fakegood");
  fs::path d = install_plugin(tmp_.path(), "fakedup", FAKE_PLUGIN_fakedup, "fakedup");
  PluginSet set = PluginSet::discover(only({tmp_.path()}));
  ASSERT_EQ(set.loaded().size(), 2u);
  OpRegistry reg;
  try {
    reg.add_all(set);
    FAIL() << "conflict not detected";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_EQ(e.code(), Code::kAlreadyExists);
    EXPECT_THAT(msg, HasSubstr("fake::echo on cpu"));
    EXPECT_THAT(msg, HasSubstr("'fakedup' (" + (d / "ophost-plugin.json").string() + ") for opsets [1+]"));
    EXPECT_THAT(msg, HasSubstr("'fakegood' (" + (g / "ophost-plugin.json").string() + ") for opsets [1+]"));
  }
  OpRegistry reg2;
  reg2.add_all(set, /*allow_override=*/true);
  const OpEntry* e = reg2.resolve("fake", "echo", 5, "cpu");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->source.plugin_name, "fakegood");  // loaded later (sorted: fakedup, fakegood) and overrides
  EXPECT_EQ(e->source.plugin, set.find("fakegood"));
}

}  // namespace
}  // namespace ophost
