// Tools for plugin authors, as `ophost pack manifest` and `ophost pack check` use them: a plugin library loaded
// and checked by the loader's own code (without discovery, registry or sessions), its manifest generated from
// it, and the checks the loader applies to op tables.
//
//   auto lib = ophost::PluginLibrary::load("build/mypack/libmypack.so", "build/mypack/ophost-plugin.json",
//                                          &manifest, "mypack: ");
//   for (const oph_op_def* op : lib->ops()) std::cout << ophost::describe_op(*op) << "\n";
#pragma once

#include <ophost/export.hpp>
#include <ophost/manifest.hpp>
#include <ophost/ophost_plugin.h>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ophost {

// One plugin library loaded with the loader's checks: dlopen, handshake, plugin info and op and device tables
// validated (and, with a manifest, compared with its "provides"). The destructor calls the plugin's release.
class OPHOST_API PluginLibrary {
 public:
  // Throws Error whose message starts with `prefix` (plugin_message_prefix()). `manifest` may be null: then
  // nothing is compared against a manifest. The plugin is told its folder is the manifest's (the library's when
  // `manifest_path` is empty).
  static std::unique_ptr<PluginLibrary> load(const std::filesystem::path& library,
                                             const std::filesystem::path& manifest_path, const Manifest* manifest,
                                             const std::string& prefix);
  ~PluginLibrary();
  PluginLibrary(const PluginLibrary&) = delete;
  PluginLibrary& operator=(const PluginLibrary&) = delete;

  // Op and device tables (validated; in table order).
  const std::vector<const oph_op_def*>& ops() const noexcept;
  const std::vector<const oph_device_backend_def*>& devices() const noexcept;

  struct Impl;
  explicit PluginLibrary(std::unique_ptr<Impl> impl);  // made by load()

 private:
  std::unique_ptr<Impl> impl_;
};

// Extra fields for manifest_from_library (the rest comes from the library itself).
struct ManifestExtras {
  std::string description;
  std::string license;
  std::vector<std::string> requires_devices;
  std::vector<std::string> cpu_features;
  std::vector<std::string> probe_device_files;  // manifest "probe" (device backends)
  std::vector<std::string> probe_libraries;
};

// For `ophost pack manifest`: loads `library` without a manifest, runs the handshake, validates the tables and
// returns a manifest describing it: name/version/abi from the plugin info, ops/devices from the tables, sha256
// of the file, platform of this machine, `library` = the file name (the manifest goes next to the library).
// `kind` must match the plugin's. Throws Error.
OPHOST_API Manifest manifest_from_library(const std::filesystem::path& library, std::string_view kind,
                                          const ManifestExtras& extras = {});

// Lowercase hex SHA-256 of a file. Throws Error(kNotFound) when it cannot be read.
OPHOST_API std::string sha256_file(const std::filesystem::path& path);

// This machine: "linux" and uname's machine ("x86_64", "aarch64", ...), as manifests' "platform" says them.
OPHOST_API std::string host_os();
OPHOST_API std::string host_arch();

// "domain::name [since-end] on device" ("ai.onnx" shown for the standard domain; end "max" when open).
OPHOST_API std::string describe_op(const oph_op_def& op);
OPHOST_API std::string describe_op(const ManifestOp& op);

// The loader's checks of a plugin's op table entry / device table entry; "" when fine, else the problem.
OPHOST_API std::string validate_op_def(const oph_op_def* op);
OPHOST_API std::string validate_device_def(const oph_device_backend_def* dev);

}  // namespace ophost
