// Helpers for the loader tests: temporary plugin roots, installing a built fake plugin variant into a plugin
// folder with a manifest (good, or mutated into a broken one), environment variables.
#pragma once

#include "plugins/plugin_set.hpp"

#include <ophost/manifest.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>

#include <unistd.h>

namespace ophost::test {

namespace fs = std::filesystem;

// A fresh temporary folder, removed with its content.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "ophost-test-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& s) const { return path_ / s; }

 private:
  fs::path path_;
};

// Sets (or unsets, with nullopt) an environment variable for the scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }

 private:
  std::string name_;
  std::optional<std::string> old_;
};

inline void write_text(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

inline std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A correct manifest for a fake operator pack named `name` whose library file is `library` (sha256 filled in
// from `library_file` when it exists).
inline Manifest fake_manifest(const std::string& name, const fs::path& library_file) {
  Manifest m;
  m.name = name;
  m.version = "1.0.0";
  m.kind = "operator-pack";
  m.library = library_file.filename().string();
  std::error_code ec;
  m.sha256 = fs::exists(library_file, ec) ? sha256_file(library_file) : std::string(64, '0');
  m.abi = {OPH_ABI_MAJOR, OPH_ABI_MINOR, 0};
  m.platform = {host_os(), host_arch()};
  m.provides.ops.push_back(ManifestOp{"fake", "echo", 1, OPH_OPSET_MAX, "cpu"});
  m.description = "fake plugin";
  m.license = "Apache-2.0";
  return m;
}

// Copies the built library `built` into <root>/<folder>/ and writes <root>/<folder>/ophost-plugin.json for a
// plugin named `name` (the manifest is mutated by `mutate` before it is written). Returns the plugin folder.
inline fs::path install_plugin(const fs::path& root, const std::string& folder, const fs::path& built,
                               const std::string& name, const std::function<void(Manifest&)>& mutate = {}) {
  fs::path dir = root / folder;
  fs::create_directories(dir);
  fs::copy_file(built, dir / built.filename(), fs::copy_options::overwrite_existing);
  Manifest m = fake_manifest(name, dir / built.filename());
  if (mutate) mutate(m);
  write_manifest(m, dir / kManifestFileName);
  return dir;
}

// Discovery options that search only `roots` (no environment, no default folder).
inline DiscoveryOptions only(std::vector<fs::path> roots) {
  DiscoveryOptions o;
  o.plugin_paths = std::move(roots);
  o.use_env_plugin_path = false;
  o.use_default_plugin_dir = false;
  return o;
}

inline const PluginReport* report_for(const PluginSet& set, const std::string& name) {
  for (const auto& r : set.reports()) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

}  // namespace ophost::test
