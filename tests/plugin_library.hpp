// Where the build tree puts a plugin's library: it mirrors the install tree (executables in bin/, plugins in
// lib/ophost/plugins/<name>/), and ophost_add_plugin names the file lib<name>.so, lib<name>-backend.so for a
// device backend. Shared by the test programs that dlopen a plugin directly.
#pragma once

#include <filesystem>
#include <string>

namespace ophost::testing {

inline std::filesystem::path plugin_library(const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::read_symlink("/proc/self/exe").parent_path().parent_path() / "lib" / "ophost" / "plugins" / name;
  const fs::path backend = dir / ("lib" + name + "-backend.so");
  return fs::exists(backend) ? backend : dir / ("lib" + name + ".so");
}

}  // namespace ophost::testing
