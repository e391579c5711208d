// ophost-plugin.json: the manifest that sits next to every plugin library (DESIGN.md section 4).
//
// Parsing is strict: every key is known, every value has the right JSON type, unknown keys are rejected at
// every level (the message names the key, its JSON path and the allowed keys), and a JSON syntax error reports
// line:column. Every message starts with `plugin '<name>' (<manifest path>): `, where <name> is the manifest's
// name when it could be read, else the plugin folder's name.
#pragma once

#include <ophost/export.hpp>
#include <ophost/error.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace ophost {

inline constexpr const char* kManifestFileName = "ophost-plugin.json";
inline constexpr int kManifestVersion = 1;

struct ManifestOp {
  std::string domain;  // "" is the standard domain ("ai.onnx" is normalized to "")
  std::string name;
  int32_t since_version = 1;
  int32_t end_version = 2147483647;  // OPH_OPSET_MAX
  std::string device;

  bool operator==(const ManifestOp&) const = default;
};

struct ManifestAbi {
  uint32_t major = 0;
  uint32_t minor_built = 0;
  uint32_t minor_required = 0;
};

struct ManifestPlatform {
  std::string os;    // "linux"
  std::string arch;  // "x86_64", "aarch64", ...
};

struct ManifestRequires {
  std::vector<std::string> devices;
  std::vector<std::string> cpu_features;
};

struct ManifestProvides {
  std::vector<std::string> devices;
  std::vector<ManifestOp> ops;
};

// A device backend's cheap probe, run before its library is loaded (so a machine without the device never maps
// the device's runtime). device_files: the backend is inactive unless at least one of these exists (e.g.
// /dev/nvidiactl, /dev/kfd). libraries: runtime libraries the backend links (e.g. libcudart.so.13): when loading
// fails because one of them is missing, the backend is reported inactive ("runtime not installed"), not rejected.
struct ManifestProbe {
  std::vector<std::string> device_files;
  std::vector<std::string> libraries;
};

struct Manifest {
  int manifest_version = kManifestVersion;
  std::string name;
  std::string version;  // semver
  std::string kind;     // "operator-pack" | "device-backend"
  std::string library;  // relative to the manifest's folder
  std::string sha256;   // lowercase hex of the library file
  ManifestAbi abi;
  ManifestPlatform platform;
  ManifestRequires requires_;  // JSON key "requires"
  ManifestProvides provides;
  ManifestProbe probe;  // JSON key "probe" (optional)
  std::string description;
  std::string license;
};

// Parses manifest text. `path` is used in messages only; `fallback_name` (usually the plugin folder's name)
// names the plugin in messages until the manifest's own name is known. Throws Error(kInvalidArgument).
OPHOST_API Manifest parse_manifest(std::string_view text, const std::filesystem::path& path, std::string_view fallback_name);

// Reads and parses `path` (fallback name: the name of the folder holding it). Throws Error (kNotFound when
// the file cannot be read, kInvalidArgument when it is malformed).
OPHOST_API Manifest read_manifest(const std::filesystem::path& path);

// Pretty JSON (2-space indent, keys in the documented order, trailing newline).
OPHOST_API std::string manifest_to_json(const Manifest& manifest);

// Writes manifest_to_json() to `path` (creating parent folders). Throws Error(kPermissionDenied/kInternal).
OPHOST_API void write_manifest(const Manifest& manifest, const std::filesystem::path& path);

// "plugin 'name' (path): " -- the prefix of every plugin message.
OPHOST_API std::string plugin_message_prefix(std::string_view name, const std::filesystem::path& manifest_path);

// True for MAJOR.MINOR.PATCH[-prerelease][+build] (semver 2.0.0).
OPHOST_API bool is_semver(std::string_view version);

// "" for "ai.onnx", else the domain unchanged.
OPHOST_API std::string normalize_domain(std::string_view domain);

}  // namespace ophost
