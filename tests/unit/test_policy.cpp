// Plugin path policy (issue 7, point 5): only manifests under the configured roots are read; a library that
// escapes its plugin folder (.., a symbolic link out) is rejected; a world-writable plugin folder, manifest or
// library is rejected with a message; a rejected plugin is never dlopen'ed.
#include "fake_plugin/test_support.hpp"
#include "plugins/plugin_set.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

namespace ophost {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
namespace fs = std::filesystem;
using test::install_plugin;
using test::only;
using test::ScopedEnv;
using test::TempDir;

const fs::path kGood = FAKE_PLUGIN_fakegood;

class Policy : public ::testing::Test {
 protected:
  // Discovers `root` alone; expects exactly one report, rejected, with no dlopen at all. Returns the reason.
  std::string rejected_without_dlopen(const fs::path& root, const std::string& name) {
    const size_t before = dlopen_count();
    PluginSet set = PluginSet::discover(only({root}));
    EXPECT_EQ(dlopen_count(), before) << "a plugin rejected by the path policy must not be dlopen'ed";
    EXPECT_TRUE(set.loaded().empty());
    if (set.reports().size() != 1u) {
      ADD_FAILURE() << set.reports().size() << " reports";
      return {};
    }
    const PluginReport& r = set.reports()[0];
    EXPECT_FALSE(r.loaded);
    EXPECT_EQ(r.name, name);
    EXPECT_THAT(r.reason, StartsWith("plugin '" + name + "' (" + r.manifest.string() + "): "));
    return r.reason;
  }
  TempDir tmp_;
  ScopedEnv no_disable_{"OPHOST_PLUGINS_DISABLE", std::nullopt};
  ScopedEnv no_path_{"OPHOST_PLUGIN_PATH", std::nullopt};
};

TEST_F(Policy, GoodPluginStillLoads) {
  install_plugin(tmp_.path(), "fakegood", kGood, "fakegood");
  PluginSet set = PluginSet::discover(only({tmp_.path()}));
  ASSERT_EQ(set.loaded().size(), 1u) << (set.reports().empty() ? "" : set.reports()[0].reason);
}

TEST_F(Policy, WorldWritablePluginFolderRejected) {
  fs::path dir = install_plugin(tmp_.path(), "fakegood", kGood, "fakegood");
  fs::permissions(dir, fs::perms::others_write, fs::perm_options::add);
  std::string msg = rejected_without_dlopen(tmp_.path(), "fakegood");
  EXPECT_THAT(msg, HasSubstr("plugin folder " + fs::canonical(dir).string() + " is world-writable (mode 0"));
  EXPECT_THAT(msg, HasSubstr("chmod o-w"));
}

TEST_F(Policy, WorldWritableManifestRejected) {
  fs::path dir = install_plugin(tmp_.path(), "fakegood", kGood, "fakegood");
  fs::permissions(dir / kManifestFileName, fs::perms::others_write, fs::perm_options::add);
  EXPECT_THAT(rejected_without_dlopen(tmp_.path(), "fakegood"), HasSubstr("manifest "));
  EXPECT_THAT(rejected_without_dlopen(tmp_.path(), "fakegood"), HasSubstr("is world-writable"));
}

TEST_F(Policy, WorldWritableLibraryRejected) {
  fs::path dir = install_plugin(tmp_.path(), "fakegood", kGood, "fakegood");
  fs::permissions(dir / kGood.filename(), fs::perms::others_write, fs::perm_options::add);
  std::string msg = rejected_without_dlopen(tmp_.path(), "fakegood");
  EXPECT_THAT(msg, HasSubstr("library " + fs::canonical(dir / kGood.filename()).string() + " is world-writable"));
}

TEST_F(Policy, StickyWorldWritableFolderRejectedToo) {
  fs::path dir = install_plugin(tmp_.path(), "fakegood", kGood, "fakegood");
  ASSERT_EQ(::chmod(dir.c_str(), 01777), 0);
  EXPECT_THAT(rejected_without_dlopen(tmp_.path(), "fakegood"), HasSubstr("(mode 1777)"));
}

TEST_F(Policy, PluginFolderSymlinkedFromOutsideTheRootRejected) {
  TempDir elsewhere;
  fs::path real = install_plugin(elsewhere.path(), "fakegood", kGood, "fakegood");
  fs::create_directories(tmp_.path() / "root");
  fs::create_directory_symlink(real, tmp_.path() / "root" / "fakegood");
  std::string msg = rejected_without_dlopen(tmp_.path() / "root", "fakegood");
  EXPECT_THAT(msg, HasSubstr("outside the plugin root"));
  EXPECT_THAT(msg, HasSubstr("only manifests under the configured plugin roots are read"));
}

TEST_F(Policy, ManifestSymlinkedOutOfTheRootRejected) {
  TempDir elsewhere;
  install_plugin(elsewhere.path(), "fakegood", kGood, "fakegood");
  fs::path dir = tmp_.path() / "fakegood";
  fs::create_directories(dir);
  fs::copy_file(kGood, dir / kGood.filename());
  fs::create_symlink(elsewhere.path() / "fakegood" / kManifestFileName, dir / kManifestFileName);
  EXPECT_THAT(rejected_without_dlopen(tmp_.path(), "fakegood"), HasSubstr("outside the plugin root"));
}

TEST_F(Policy, SymlinkWithinTheRootIsFine) {
  fs::path real = install_plugin(tmp_.path(), "real", kGood, "fakegood");
  (void)real;
  TempDir other;
  // Same plugin reached through a link that stays inside the root: loads (once; the second is shadowed).
  fs::create_directory_symlink(tmp_.path() / "real", tmp_.path() / "alias");
  PluginSet set = PluginSet::discover(only({tmp_.path()}));
  EXPECT_EQ(set.loaded().size(), 1u);
}

TEST_F(Policy, LibraryDotDotEscapeRejectedBeforeDlopen) {
  install_plugin(tmp_.path() / "r", "other", kGood, "other");
  install_plugin(tmp_.path() / "r", "fakegood", kGood, "fakegood",
                 [](Manifest& m) { m.library = "../other/libfakegood.so"; });
  TempDir only_one;
  // Keep just the escaping plugin in a root of its own, pointing at a library in a sibling root.
  install_plugin(only_one.path(), "fakegood", kGood, "fakegood", [&](Manifest& m) {
    m.library = "../../../" + (tmp_.path() / "r" / "other" / "libfakegood.so").relative_path().string();
  });
  std::string msg = rejected_without_dlopen(only_one.path(), "fakegood");
  EXPECT_THAT(msg, HasSubstr("outside the plugin folder"));
  // Also when the file outside does not exist: nothing outside the folder is looked up.
  TempDir second;
  install_plugin(second.path(), "fakegood", kGood, "fakegood", [](Manifest& m) { m.library = "../../../etc/nothere.so"; });
  EXPECT_THAT(rejected_without_dlopen(second.path(), "fakegood"), HasSubstr("outside the plugin folder"));
}

TEST_F(Policy, LibrarySymlinkOutRejectedBeforeDlopen) {
  TempDir elsewhere;
  fs::copy_file(kGood, elsewhere.path() / kGood.filename());
  fs::path dir = tmp_.path() / "fakegood";
  fs::create_directories(dir);
  fs::create_symlink(elsewhere.path() / kGood.filename(), dir / kGood.filename());
  Manifest m = test::fake_manifest("fakegood", elsewhere.path() / kGood.filename());
  write_manifest(m, dir / kManifestFileName);
  std::string msg = rejected_without_dlopen(tmp_.path(), "fakegood");
  EXPECT_THAT(msg, HasSubstr("resolves to " + fs::canonical(elsewhere.path() / kGood.filename()).string()));
  EXPECT_THAT(msg, HasSubstr("outside the plugin folder"));
}

TEST_F(Policy, AbsoluteLibraryPathRejectedBeforeDlopen) {
  install_plugin(tmp_.path(), "fakegood", kGood, "fakegood", [](Manifest& m) { m.library = FAKE_PLUGIN_fakegood; });
  EXPECT_THAT(rejected_without_dlopen(tmp_.path(), "fakegood"), HasSubstr("is the absolute path"));
}

TEST_F(Policy, OnlyConfiguredRootsAreSearchedNotTheCurrentDirectory) {
  install_plugin(tmp_.path(), "fakegood", kGood, "fakegood");
  const fs::path old = fs::current_path();
  fs::current_path(tmp_.path());
  PluginSet set = PluginSet::discover(only({}));
  fs::current_path(old);
  EXPECT_TRUE(set.reports().empty());
}

// ---- plugin roots and the folders above them (sshd's StrictModes) ----------------------------------------

TEST_F(Policy, RootWritableByOthersOrGroupRejectsItsPlugins) {
  const fs::path root = tmp_ / "root";
  install_plugin(root, "fakegood", kGood, "fakegood");
  for (fs::perms extra : {fs::perms::others_write, fs::perms::group_write}) {
    fs::permissions(root, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | extra);
    std::string why = rejected_without_dlopen(root, "fakegood");
    EXPECT_THAT(why, HasSubstr("plugin root " + fs::canonical(root).string() + " is writable by"));
    EXPECT_THAT(why, HasSubstr("chmod go-w " + fs::canonical(root).string()));
  }
  // A sticky root is no better: others may still add plugin folders to it.
  fs::permissions(root, fs::perms::all | fs::perms::sticky_bit);
  EXPECT_THAT(rejected_without_dlopen(root, "fakegood"), HasSubstr("writable by others"));
}

TEST_F(Policy, FolderAboveTheRootWritableByOthersRejectsUnlessSticky) {
  const fs::path root = tmp_ / "shared" / "root";
  install_plugin(root, "fakegood", kGood, "fakegood");
  fs::permissions(tmp_ / "shared", fs::perms::all);
  EXPECT_THAT(rejected_without_dlopen(root, "fakegood"),
              HasSubstr("folder above plugin root " + fs::canonical(root).string() + ": " +
                        fs::canonical(tmp_ / "shared").string() + " is writable by others"));
  // Sticky (like /tmp): others cannot replace the root, which is ours.
  fs::permissions(tmp_ / "shared", fs::perms::all | fs::perms::sticky_bit);
  EXPECT_EQ(PluginSet::discover(only({root})).loaded().size(), 1u);
}

TEST_F(Policy, RootOwnedByAnotherUserRejectsItsPlugins) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give the folder to another user";
  const fs::path root = tmp_ / "root";
  install_plugin(root, "fakegood", kGood, "fakegood");
  ASSERT_EQ(::chown(root.c_str(), 65534, 65534), 0);
  EXPECT_THAT(rejected_without_dlopen(root, "fakegood"), HasSubstr("is owned by uid 65534, neither root nor this user"));
}

TEST_F(Policy, InsecurePluginPathsLoadsAnywayWithAWarning) {
  const fs::path root = tmp_ / "root";
  install_plugin(root, "fakegood", kGood, "fakegood");
  fs::permissions(root, fs::perms::all);
  DiscoveryOptions o = only({root});
  o.insecure_plugin_paths = true;
  EXPECT_EQ(PluginSet::discover(o).loaded().size(), 1u);
  EXPECT_THAT(plugin_root_problem(root), HasSubstr("writable by others"));
  fs::permissions(root, fs::perms::owner_all);
  EXPECT_EQ(plugin_root_problem(root), "");
}

// A manifest that is a FIFO: listed as rejected with a reason, never read (it would block discovery) and never
// passed over silently.
TEST_F(Policy, FifoManifestIsRejectedNotSkippedOrRead) {
  fs::path dir = tmp_ / "fifo";
  fs::create_directories(dir);
  ASSERT_EQ(::mkfifo((dir / kManifestFileName).c_str(), 0600), 0);
  std::string why = rejected_without_dlopen(tmp_.path(), "fifo");
  EXPECT_THAT(why, HasSubstr("the manifest is not a regular file"));
}

}  // namespace
}  // namespace ophost
