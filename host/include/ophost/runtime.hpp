// The C++ embedding API: a Runtime owns the discovered plugins; a Session owns one loaded, prepared model.
// The `ophost` command is built on exactly this API.
//
//   ophost::Runtime rt({});                              // discovers and loads plugins
//   auto session = rt.load("model.onnx");                // parse, resolve, infer, create kernels
//   auto outputs = session->run({{"x", tensor}});        // named tensors in, named tensors out
#pragma once

#include <ophost/error.hpp>
#include <ophost/tensor.hpp>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace ophost {

struct RuntimeOptions {
  // Plugin roots searched first, in order (each root is searched one level deep).
  std::vector<std::filesystem::path> plugin_paths;
  // Also search $OPHOST_PLUGIN_PATH (colon-separated) and <exe>/../lib/ophost/plugins.
  bool use_env_plugin_path = true;
  bool use_default_plugin_dir = true;
  // Glob patterns of plugin names not to load (added to $OPHOST_PLUGINS_DISABLE).
  std::vector<std::string> disabled_plugins;
  // Plugin names that must load: a rejected one makes the constructor throw with the reason.
  std::vector<std::string> required_plugins;
  // Two packs serving the same (domain, op, device) over overlapping opsets is an error (load() throws and
  // names both); with this set the later pack wins and a warning is logged.
  bool allow_op_override = false;
  // Threads of the process-wide intra-op pool offered to kernels as parallel_for (the caller counts as one);
  // 0 keeps the current pool (default: hardware concurrency).
  int intra_op_threads = 0;
};

// One plugin the discovery looked at, and what was decided about it.
struct PluginReport {
  std::string name;              // manifest name, or the folder name when the manifest was unreadable
  std::filesystem::path manifest;  // path of ophost-plugin.json
  std::filesystem::path library;   // resolved library path ("" when unknown)
  std::string kind;              // "operator-pack" | "device-backend" | ""
  std::string version;
  bool loaded = false;
  std::string reason;            // why it was rejected (empty when loaded)
  std::vector<std::string> ops;  // "domain::name@since-end on device"
  std::vector<std::string> devices;  // device descriptions, "cpu: <name> ..." or "cuda: inactive (<reason>)"
};

struct ValueInfo {
  std::string name;
  DType dtype = DType::kUndefined;
  std::vector<int64_t> shape;  // -1 for unknown/symbolic dims
};

struct SessionOptions {
  // Device preference; empty = all available in discovery order with "cpu" last.
  std::vector<std::string> devices;
};

class Session;

class Runtime {
 public:
  // Discovers plugins and loads every plugin that passes its checks. Never throws for a rejected plugin (see
  // plugins()); throws Error only for unusable options.
  explicit Runtime(RuntimeOptions options = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Everything discovery looked at, in search order.
  const std::vector<PluginReport>& plugins() const noexcept;

  // The plugin roots searched, in order (whether or not they exist).
  const std::vector<std::filesystem::path>& plugin_roots() const noexcept;

  // Conflicts between packs found while registering ops (empty when none). While any exists, load() throws.
  const std::vector<std::string>& conflicts() const noexcept;

  // Loads and prepares a model. Throws Error with a message naming file, node, op and fix.
  std::unique_ptr<Session> load(const std::filesystem::path& model, const SessionOptions& options = {});

  struct Impl;
 private:
  std::unique_ptr<Impl> impl_;
};

class Session {
 public:
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const std::vector<ValueInfo>& inputs() const noexcept;
  const std::vector<ValueInfo>& outputs() const noexcept;

  // Runs the model. Every graph input must be given exactly once; outputs are returned in graph order.
  std::vector<NamedTensor> run(const std::vector<NamedTensor>& inputs);

  struct Impl;
  explicit Session(std::unique_ptr<Impl> impl);
 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace ophost
