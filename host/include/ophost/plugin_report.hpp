// What plugin discovery decided about one plugin: Runtime::plugins() (`ophost plugins` prints these).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace ophost {

// One plugin the discovery looked at, and what was decided about it.
struct PluginReport {
  std::string name;              // manifest name, or the folder name when the manifest was unreadable
  std::filesystem::path manifest;  // path of ophost-plugin.json
  std::filesystem::path library;   // resolved library path ("" when unknown)
  std::string kind;              // "operator-pack" | "device-backend" | ""
  std::string version;
  bool loaded = false;
  // Not loaded, and that is information, not a failure: a device backend whose device is absent here (its
  // manifest's probe found no device node, or its runtime library is not installed), or a pack that needs only
  // such a device. `reason` says which; `devices` lists "<type>: inactive (<reason>)".
  bool inactive = false;
  std::string reason;            // why it was rejected or is inactive (empty when loaded)
  std::string verified;          // how the library's sha256 was checked ("" when it was not loaded)
  std::vector<std::string> ops;  // "domain::name@since-end on device"
  std::vector<std::string> devices;  // device descriptions, "cpu: <name> ..." or "cuda: inactive (<reason>)"
};

}  // namespace ophost
