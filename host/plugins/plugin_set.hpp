// Plugin discovery and loading (DESIGN.md section 4).
//
//   DiscoveryOptions opt;  opt.plugin_paths = {"/opt/packs"};
//   PluginSet set = PluginSet::discover(opt);   // never throws for a rejected plugin (unless required)
//   for (const auto& p : set.loaded()) for (const oph_op_def* op : p->ops()) registry.add(*p, op);
//   for (const PluginReport& r : set.reports()) ...   // every plugin looked at and what was decided
//
// Roots, in order: opt.plugin_paths, $OPHOST_PLUGIN_PATH (colon-separated), <exe>/../lib/ophost/plugins.
// Never the current directory. Each root is searched one level deep (sub-folders holding ophost-plugin.json,
// sorted by name). $OPHOST_PLUGINS_DISABLE and opt.disabled_plugins hold fnmatch globs of names not to load.
#pragma once

#include "core/unique_fd.hpp"

#include <ophost/error.hpp>
#include <ophost/ophost_plugin.h>
#include <ophost/manifest.hpp>
#include <ophost/pack.hpp>
#include <ophost/plugin_report.hpp>

#include <boost/dll/shared_library.hpp>

#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ophost {

struct DiscoveryOptions {
  std::vector<std::filesystem::path> plugin_paths;
  bool use_env_plugin_path = true;
  bool use_default_plugin_dir = true;
  // The default root; empty = <dir of /proc/self/exe>/../lib/ophost/plugins (tests set it explicitly).
  std::filesystem::path default_plugin_dir;
  // fnmatch globs, added to $OPHOST_PLUGINS_DISABLE.
  std::vector<std::string> disabled_plugins;
  // Names that must load: a rejection (or absence) throws Error naming the reason.
  std::vector<std::string> required_plugins;
  // Load plugins from roots that fail the ownership/permission walk (plugin_root_problem), with a warning.
  bool insecure_plugin_paths = false;
};

// Why plugins under `root` cannot be trusted ("" when they can): the root and every folder above it up to "/"
// must be owned by root or the effective user; none may be writable by group or others, except that a folder
// above the root may be a sticky one (like /tmp: others cannot rename or remove what is not theirs in it).
// The message names the folder, its owner and mode, and the chmod/chown that fixes it.
std::string plugin_root_problem(const std::filesystem::path& root);

// One loaded, validated plugin. Its destructor calls the plugin's release (exactly once) and unloads the
// library.
class LoadedPlugin {
 public:
  ~LoadedPlugin();
  LoadedPlugin(const LoadedPlugin&) = delete;
  LoadedPlugin& operator=(const LoadedPlugin&) = delete;

  const std::string& name() const noexcept { return manifest_.name; }
  const std::string& version() const noexcept { return manifest_.version; }
  const std::string& kind() const noexcept { return manifest_.kind; }
  const Manifest& manifest() const noexcept { return manifest_; }
  const std::filesystem::path& dir() const noexcept { return dir_; }
  const std::filesystem::path& manifest_path() const noexcept { return manifest_path_; }
  const std::filesystem::path& library_path() const noexcept { return library_path_; }
  const oph_plugin_info* info() const noexcept { return info_; }
  // Op and device tables (validated; in table order).
  const std::vector<const oph_op_def*>& ops() const noexcept { return ops_; }
  const std::vector<const oph_device_backend_def*>& devices() const noexcept { return devices_; }

  // Loads `library` (counted by dlopen_count()), runs the handshake and validates the plugin info and its
  // tables. `manifest` may be null (ophost pack manifest): then nothing is compared against a manifest.
  // Throws Error whose message starts with `prefix`.
  // With `file` (an open descriptor of `library`), the file that descriptor refers to is what gets loaded (through
  // /proc/<pid>/fd/N; one descriptor per distinct library file is kept open for the process's life).
  static std::unique_ptr<LoadedPlugin> load(const std::filesystem::path& library, const std::filesystem::path& dir,
                                            const std::filesystem::path& manifest_path, const Manifest* manifest,
                                            const std::string& prefix, UniqueFd file = UniqueFd());

 private:
  LoadedPlugin() = default;
  void release() noexcept;

  Manifest manifest_;
  std::filesystem::path dir_;
  std::filesystem::path manifest_path_;
  std::filesystem::path library_path_;
  std::string dir_string_;  // oph_host_info.plugin_dir; valid until release returns
  oph_host_info host_info_{};
  boost::dll::shared_library library_;
  const oph_plugin_info* info_ = nullptr;
  bool released_ = false;
  std::vector<const oph_op_def*> ops_;
  std::vector<const oph_device_backend_def*> devices_;
};

class PluginSet {
 public:
  PluginSet() = default;
  ~PluginSet();
  PluginSet(PluginSet&&) noexcept = default;
  PluginSet& operator=(PluginSet&&) noexcept;
  PluginSet(const PluginSet&) = delete;
  PluginSet& operator=(const PluginSet&) = delete;

  // Searches the roots, checks and loads every plugin found. A rejected plugin is reported (spdlog warn) and
  // skipped; throws Error only when a required plugin is rejected or missing.
  static PluginSet discover(const DiscoveryOptions& options);

  // Every plugin looked at, in search order (including disabled and shadowed ones).
  const std::vector<PluginReport>& reports() const noexcept { return reports_; }
  // Loaded plugins, in search order.
  const std::vector<std::unique_ptr<LoadedPlugin>>& loaded() const noexcept { return loaded_; }
  const LoadedPlugin* find(std::string_view name) const noexcept;
  // The roots searched, in order (after de-duplication).
  const std::vector<std::filesystem::path>& roots() const noexcept { return roots_; }
  // Device types whose backends were found but not loaded because the device is absent here, with the reason
  // ("no device: none of /dev/nvidiactl, /dev/nvidia0 exists").
  const std::map<std::string, std::string>& inactive_devices() const noexcept { return inactive_devices_; }

 private:
  std::vector<PluginReport> reports_;
  std::vector<std::unique_ptr<LoadedPlugin>> loaded_;
  std::vector<std::filesystem::path> roots_;
  std::map<std::string, std::string> inactive_devices_;
};

// The search roots for `options`, in order (env and default dir included as enabled; not checked to exist).
std::vector<std::filesystem::path> plugin_search_roots(const DiscoveryOptions& options);

// <dir of the running executable>/../lib/ophost/plugins (from /proc/self/exe).
std::filesystem::path default_plugin_dir();

// SHA-256 of the open file `fd`, read from offset 0 with pread (`path` names it in messages).
std::string sha256_fd(int fd, const std::filesystem::path& path);

// This machine's CPU feature flags (from /proc/cpuinfo "flags" / "Features"), sorted.
const std::vector<std::string>& host_cpu_features();

// Number of dlopen calls made by the loader in this process (tests: "no dlopen for a rejected plugin").
std::size_t dlopen_count() noexcept;

}  // namespace ophost
