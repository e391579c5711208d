// The operator registry: every kernel the loaded packs provide, keyed by (domain, name, device) with inclusive
// opset ranges. The standard domain is "" ("ai.onnx" is normalized to "").
//
//   OpRegistry reg;
//   reg.add_all(plugins);                                   // throws on a conflict between two packs
//   const OpEntry* e = reg.resolve("myops", "relu6_scale", 1, "cpu");
//   if (!e) throw Error(kNotFound, "... " + reg.hint("myops", "relu6_scale", 1, "cpu"));
#pragma once

#include "plugins/plugin_set.hpp"

#include <ophost/op_schema.hpp>
#include <ophost/ophost_plugin.h>

#include <cstdint>
#include <filesystem>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace ophost {

// Where an op came from (the plugin is null for ops registered directly, e.g. in tests or host built-ins).
struct OpSource {
  std::string plugin_name;
  std::filesystem::path manifest_path;
  const LoadedPlugin* plugin = nullptr;
};

// One registered op: its schema (made once, when the op was added; shared by copies of the registry) and the
// pack it came from.
struct OpEntry {
  std::shared_ptr<const OpSchema> schema;
  OpSource source;

  bool contains(int64_t opset) const noexcept { return schema->contains(opset); }
  // "domain::name [since-end] on device"
  std::string describe() const { return schema->describe(); }
};

class OpRegistry {
 public:
  // Registers one op of a loaded plugin: validates its definition (validate_op_def; an invalid one is an
  // Error(kInvalidArgument) naming the plugin) and converts it into an OpSchema. Two packs serving the same
  // (domain, name, device) over overlapping ranges is an Error(kAlreadyExists) naming both packs, both
  // manifests, the op and both ranges -- unless allow_override: then a warning is logged and the later
  // registration wins where the ranges overlap.
  void add(const LoadedPlugin& plugin, const oph_op_def* op, bool allow_override = false);
  void add(const OpSource& source, const oph_op_def* op, bool allow_override = false);
  // Every op of every loaded plugin, in load order.
  void add_all(const PluginSet& plugins, bool allow_override = false);

  // The entry whose range contains `opset` for (domain, name, device), or nullptr.
  const OpEntry* resolve(std::string_view domain, std::string_view name, int64_t opset,
                         std::string_view device) const;
  // Every entry for (domain, name) on any device and range, in registration order.
  std::vector<const OpEntry*> candidates(std::string_view domain, std::string_view name) const;
  // Devices with a kernel for (domain, name) at `opset`, sorted.
  std::vector<std::string> devices_for(std::string_view domain, std::string_view name, int64_t opset) const;

  // Near misses for an unresolved (domain, name, opset, device), phrased as fixes: other opset ranges for this
  // op, other devices, the same name in other domains, case-insensitive name matches. "" when nothing is near.
  std::string hint(std::string_view domain, std::string_view name, int64_t opset, std::string_view device) const;

  size_t size() const noexcept;
  // All entries (registration order within a key; keys sorted).
  std::vector<const OpEntry*> all() const;

 private:
  using Key = std::tuple<std::string, std::string, std::string>;  // domain, name, device
  // Per key, in registration order; resolve() scans from the back so a later override wins.
  std::map<Key, std::deque<OpEntry>> entries_;  // deque: entry pointers stay valid across add()
};

}  // namespace ophost
