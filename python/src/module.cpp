// _ophost: the extension behind `import ophost`. ONNX Runtime's Python session API (InferenceSession,
// SessionOptions, RunOptions, IOBinding, OrtValue, get_available_providers, ...) on ophost's public C++ API
// (host/include/ophost). The names and semantics follow onnxruntime's where they exist; docs/python.md lists
// what differs.
#include "common.hpp"

#include <onnx/onnx_pb.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

namespace fs = std::filesystem;

namespace ophost::python {
namespace {

constexpr const char* kManifest = "ophost-plugin.json";

// ------------------------------------------------------------------------------------------------------------
// Plugins: roots, runtimes
// ------------------------------------------------------------------------------------------------------------

// The package's own plugin folder (<prefix>/lib/ophost/plugins, or the build tree's), set by __init__.py: the
// Python counterpart of the command's <exe>/../lib/ophost/plugins.
fs::path g_default_plugin_dir;

std::vector<std::string> split(const std::string& s, const std::string& seps) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t next = s.find_first_of(seps, pos);
    std::string tok = s.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    if (!tok.empty()) out.push_back(tok);
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  return out;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// A pack registered with SessionOptions.register_custom_ops_library.
struct Pack {
  fs::path folder;   // the folder holding ophost-plugin.json
  std::string name;  // the manifest's name (the folder name when the manifest cannot be read: the host reports why)
};

struct RuntimeConfig {
  std::vector<Pack> packs;
  std::vector<std::string> disabled_plugins;
  bool allow_op_override = false;
  bool insecure_plugin_paths = false;
};

// The host's search order, with the package's folder in place of <exe>/../lib/ophost/plugins: the registered
// packs' folders first (a plugin root is searched one level deep, so a pack folder's parent is the root), then
// $OPHOST_PLUGIN_PATH, then the package's plugin folder.
RuntimeOptions runtime_options(const RuntimeConfig& c) {
  RuntimeOptions r;
  for (const Pack& p : c.packs) {
    r.plugin_paths.push_back(p.folder.parent_path());
    if (std::find(r.required_plugins.begin(), r.required_plugins.end(), p.name) == r.required_plugins.end())
      r.required_plugins.push_back(p.name);
  }
  if (const char* env = std::getenv("OPHOST_PLUGIN_PATH")) {
    for (const std::string& p : split(env, ":")) r.plugin_paths.push_back(fs::absolute(p).lexically_normal());
  }
  if (!g_default_plugin_dir.empty()) r.plugin_paths.push_back(g_default_plugin_dir);
  r.use_env_plugin_path = false;
  r.use_default_plugin_dir = false;
  r.disabled_plugins = c.disabled_plugins;
  r.allow_op_override = c.allow_op_override;
  r.insecure_plugin_paths = c.insecure_plugin_paths;
  return r;
}

// Runtimes are kept for the life of the process, one per distinct configuration (plugins loaded by a session
// may have started threads; the host never unloads them under those).
std::shared_ptr<Runtime> runtime_for(const RuntimeConfig& c) {
  // Without the GIL from here: a thread waiting for the cache's mutex must not hold it while the one
  // constructing a runtime wants it back.
  py::gil_scoped_release nogil;
  RuntimeOptions r = runtime_options(c);
  std::string key;
  for (const auto& p : r.plugin_paths) key += p.string() + '\n';
  key += '|' + join(r.required_plugins, "\n") + '|' + join(r.disabled_plugins, "\n") + '|' +
         (r.allow_op_override ? '1' : '0') + (r.insecure_plugin_paths ? '1' : '0');
  if (const char* env = std::getenv("OPHOST_PLUGINS_DISABLE")) key += std::string("|") + env;
  static std::mutex mutex;
  static auto* cache = new std::map<std::string, std::shared_ptr<Runtime>>();
  std::lock_guard lock(mutex);
  auto it = cache->find(key);
  if (it != cache->end()) return it->second;
  auto rt = std::make_shared<Runtime>(r);
  cache->emplace(key, rt);
  return rt;
}

// The process-wide intra-op pool is sized by a Runtime's construction; an empty one resizes it.
void set_intra_op_threads(int n) {
  static int current = 0;
  if (n <= 0 || n == current) return;
  RuntimeOptions r;
  r.use_env_plugin_path = false;
  r.use_default_plugin_dir = false;
  r.intra_op_threads = n;
  Runtime resize(r);
  current = n;
}

// ------------------------------------------------------------------------------------------------------------
// Providers <-> device types
// ------------------------------------------------------------------------------------------------------------

std::string provider_of(const std::string& device) {
  if (device == "cpu") return "CPUExecutionProvider";
  if (device == "cuda") return "CUDAExecutionProvider";
  if (device == "hip") return "ROCMExecutionProvider";
  std::string p = device;
  if (!p.empty()) p[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(p[0])));
  return p + "ExecutionProvider";
}

std::string device_of(const std::string& provider) {
  if (provider == "CPUExecutionProvider") return "cpu";
  if (provider == "CUDAExecutionProvider" || provider == "TensorrtExecutionProvider") return "cuda";
  if (provider == "ROCMExecutionProvider" || provider == "HIPExecutionProvider" ||
      provider == "MIGraphXExecutionProvider")
    return "hip";
  const std::string suffix = "ExecutionProvider";
  if (provider.size() > suffix.size() && provider.compare(provider.size() - suffix.size(), suffix.size(), suffix) == 0) {
    std::string d = provider.substr(0, provider.size() - suffix.size());
    std::transform(d.begin(), d.end(), d.begin(), [](unsigned char ch) { return std::tolower(ch); });
    return d;
  }
  return provider;  // a device type given directly ("cpu", "cuda")
}

// Device types with an active backend, in discovery order, cpu last (the host's default preference).
std::vector<std::string> available_devices(const Runtime& rt) {
  std::vector<std::string> out;
  for (const PluginReport& r : rt.plugins()) {
    if (r.kind != "device-backend" || r.inactive || !r.reason.empty()) continue;
    for (const std::string& d : r.devices) {
      std::string type = d.substr(0, d.find(':'));
      if (d.find("inactive") != std::string::npos) continue;
      if (!type.empty() && std::find(out.begin(), out.end(), type) == out.end()) out.push_back(type);
    }
  }
  auto cpu = std::find(out.begin(), out.end(), "cpu");
  if (cpu != out.end()) out.erase(cpu);
  out.push_back("cpu");
  return out;
}

// ------------------------------------------------------------------------------------------------------------
// Options
// ------------------------------------------------------------------------------------------------------------

enum class GraphOptimizationLevel : int {
  ORT_DISABLE_ALL = 0,
  ORT_ENABLE_BASIC = 1,
  ORT_ENABLE_EXTENDED = 2,
  ORT_ENABLE_LAYOUT = 3,
  ORT_ENABLE_ALL = 99
};
enum class ExecutionMode : int { ORT_SEQUENTIAL = 0, ORT_PARALLEL = 1 };
enum class ExecutionOrder : int { DEFAULT = 0, PRIORITY_BASED = 1, MEMORY_EFFICIENT = 2 };

struct PySessionOptions {
  int intra_op_num_threads = 0;
  int inter_op_num_threads = 0;
  ExecutionMode execution_mode = ExecutionMode::ORT_SEQUENTIAL;
  ExecutionOrder execution_order = ExecutionOrder::DEFAULT;
  GraphOptimizationLevel graph_optimization_level = GraphOptimizationLevel::ORT_ENABLE_ALL;
  bool enable_profiling = false;
  std::string profile_file_prefix = "ophost_profile";
  int log_severity_level = 2;
  bool log_severity_set = false;
  int log_verbosity_level = 0;
  std::string logid;
  bool enable_cpu_mem_arena = true;
  bool enable_mem_pattern = true;
  bool enable_mem_reuse = true;
  bool use_deterministic_compute = false;
  std::string optimized_model_filepath;
  std::vector<std::pair<std::string, std::string>> config;
  std::vector<Pack> packs;

  const std::string* config_value(const std::string& key) const {
    for (const auto& [k, v] : config)
      if (k == key) return &v;
    return nullptr;
  }
};

spdlog::level::level_enum spd_level(int severity) {
  switch (severity) {
    case 0: return spdlog::level::debug;
    case 1: return spdlog::level::info;
    case 2: return spdlog::level::warn;
    case 3: return spdlog::level::err;
    default: return spdlog::level::critical;
  }
}

[[noreturn]] void invalid(const std::string& message) { raise(g_exc.invalid_argument, message, "INVALID_ARGUMENT"); }

// The pack folder for a path given to register_custom_ops_library: the folder itself (holding
// ophost-plugin.json), or the folder of a library whose manifest lies next to it and names it.
Pack resolve_pack(const std::string& given) {
  fs::path p = fs::absolute(given).lexically_normal();
  std::error_code ec;
  if (!fs::exists(p, ec)) {
    raise(g_exc.no_such_file,
          "register_custom_ops_library: " + p.string() + " does not exist; give a pack folder (the folder holding " +
              kManifest + " and its library) or the library inside one",
          "NOT_FOUND");
  }
  fs::path folder = fs::is_directory(p, ec) ? p : p.parent_path();
  fs::path manifest = folder / kManifest;
  if (!fs::exists(manifest, ec)) {
    invalid("register_custom_ops_library: " + p.string() + (folder == p ? " has no " : " has no " ) + kManifest +
            (folder == p ? "" : " next to it") +
            ": ophost loads a pack only through its manifest (name, ABI version, sha256 of the library, the ops "
            "it provides), so the same checks apply as for installed packs. Give the pack folder as built "
            "(e.g. build/lib/ophost/plugins/<pack>) or write the manifest with `ophost pack manifest`");
  }
  Pack pack{folder, folder.filename().string()};
  try {
    std::ifstream in(manifest);
    nlohmann::json j = nlohmann::json::parse(in);
    if (j.contains("name") && j["name"].is_string()) pack.name = j["name"].get<std::string>();
    if (folder != p && j.contains("library") && j["library"].is_string()) {
      fs::path lib = (folder / j["library"].get<std::string>()).lexically_normal();
      if (!fs::equivalent(lib, p, ec)) {
        invalid("register_custom_ops_library: " + p.string() + " is not the library of the pack in " +
                folder.string() + " (its " + kManifest + " names " + lib.string() +
                "); give the pack folder or that library");
      }
    }
  } catch (const nlohmann::json::exception&) {
    // Unreadable manifest: the host reports it (line:col) when the pack is required at discovery.
  }
  return pack;
}

RuntimeConfig runtime_config(const PySessionOptions* so) {
  RuntimeConfig c;
  if (!so) return c;
  c.packs = so->packs;
  if (auto v = so->config_value("ophost.disabled_plugins")) c.disabled_plugins = split(*v, ",:");
  if (auto v = so->config_value("ophost.allow_op_override")) c.allow_op_override = *v == "1" || *v == "true";
  if (auto v = so->config_value("ophost.insecure_plugin_paths")) c.insecure_plugin_paths = *v == "1" || *v == "true";
  return c;
}

uint64_t parse_u64(const std::string& key, const std::string& v) {
  try {
    size_t used = 0;
    unsigned long long x = std::stoull(v, &used);
    if (used != v.size() || v.empty() || v[0] == '-') throw std::invalid_argument(v);
    return x;
  } catch (const std::exception&) {
    invalid("session config entry '" + key + "': '" + v + "' is not a non-negative integer");
  }
}

bool parse_bool(const std::string& key, const std::string& v) {
  if (v == "1" || v == "true" || v == "True") return true;
  if (v == "0" || v == "false" || v == "False") return false;
  invalid("session config entry '" + key + "': '" + v + "' is not 0/1");
}

SessionOptions session_options(const PySessionOptions* so, const std::vector<std::string>& devices) {
  SessionOptions s;
  s.devices = devices;
  if (!so) return s;
  s.profile = so->enable_profiling;
  s.execution_mode = so->execution_mode == ExecutionMode::ORT_PARALLEL ? SessionOptions::ExecutionMode::kParallel
                                                                       : SessionOptions::ExecutionMode::kSequential;
  if (so->inter_op_num_threads < 0) invalid("SessionOptions.inter_op_num_threads must be >= 0");
  if (so->intra_op_num_threads < 0) invalid("SessionOptions.intra_op_num_threads must be >= 0");
  s.inter_op_threads = so->inter_op_num_threads;
  int level = static_cast<int>(so->graph_optimization_level);
  s.opt_level = level >= 3 ? 3 : level < 0 ? 0 : level;
  if (!so->optimized_model_filepath.empty()) {
    raise(g_exc.not_implemented,
          "SessionOptions.optimized_model_filepath is not supported: ophost optimizes at load and does not write "
          "the optimized model; leave it empty",
          "NOT_IMPLEMENTED");
  }
  static const std::vector<std::string> runtime_keys = {"ophost.disabled_plugins", "ophost.allow_op_override",
                                                        "ophost.insecure_plugin_paths"};
  for (const auto& [k, v] : so->config) {
    if (k.rfind("ophost.", 0) != 0) continue;  // onnxruntime's keys: accepted and ignored
    if (k == "ophost.mem_limit") s.mem_limit = parse_u64(k, v);
    else if (k == "ophost.mem_pool_size") s.mem_pool_size = parse_u64(k, v);
    else if (k == "ophost.check_numerics") s.check_numerics = parse_bool(k, v);
    else if (k == "ophost.dump_dir") s.dump_dir = v;
    else if (k == "ophost.debug_kernels") s.debug_kernels = parse_bool(k, v);
    else if (k == "ophost.disabled_passes") s.disabled_passes = split(v, ",");
    else if (k == "ophost.max_tensor_bytes") s.max_tensor_bytes = parse_u64(k, v);
    else if (k == "ophost.max_fold_bytes") s.max_fold_bytes = parse_u64(k, v);
    else if (k == "ophost.max_loop_iterations") s.max_loop_iterations = static_cast<int64_t>(parse_u64(k, v));
    else if (k == "ophost.max_subgraph_depth") s.max_subgraph_depth = static_cast<int>(parse_u64(k, v));
    else if (k == "ophost.devices") s.devices = split(v, ",");
    else if (k == "ophost.isolate_packs") s.isolate_packs = split(v, ",");
    else if (std::find(runtime_keys.begin(), runtime_keys.end(), k) == runtime_keys.end()) {
      invalid("unknown session config entry '" + k +
              "'; ophost's are ophost.mem_limit, ophost.mem_pool_size, ophost.check_numerics, ophost.dump_dir, "
              "ophost.debug_kernels, "
              "ophost.disabled_passes, ophost.max_tensor_bytes, ophost.max_fold_bytes, ophost.max_loop_iterations, "
              "ophost.max_subgraph_depth, ophost.devices, ophost.isolate_packs, ophost.disabled_plugins, "
              "ophost.allow_op_override, ophost.insecure_plugin_paths");
    }
  }
  return s;
}

struct PyRunOptions {
  int log_severity_level = 2;
  int log_verbosity_level = 0;
  std::string logid;
  bool terminate = false;
  bool only_execute_path_to_fetches = false;
  std::map<std::string, std::string> config;
};

// ------------------------------------------------------------------------------------------------------------
// Model file facts the public API does not give: symbolic dim names and metadata
// ------------------------------------------------------------------------------------------------------------

struct ProtoValue {
  bool has_shape = false;
  std::vector<std::pair<int64_t, std::string>> dims;  // (value or -1, dim_param)
};

struct ModelMeta {
  std::string producer_name, graph_name, domain, description, graph_description;
  int64_t version = 0;
  std::map<std::string, std::string> custom_metadata_map;
};

struct ModelFacts {
  std::map<std::string, ProtoValue> values;  // graph inputs and outputs
  ModelMeta meta;
};

ModelFacts model_facts(const std::string& bytes) {
  ModelFacts f;
  onnx::ModelProto m;
  if (!m.ParseFromString(bytes)) return f;  // the host has reported (or will report) why
  f.meta.producer_name = m.producer_name();
  f.meta.graph_name = m.graph().name();
  f.meta.domain = m.domain();
  f.meta.description = m.doc_string();
  f.meta.graph_description = m.graph().doc_string();
  f.meta.version = m.model_version();
  for (const auto& p : m.metadata_props()) f.meta.custom_metadata_map[p.key()] = p.value();
  auto add = [&](const onnx::ValueInfoProto& v) {
    ProtoValue pv;
    if (v.type().has_tensor_type() && v.type().tensor_type().has_shape()) {
      pv.has_shape = true;
      for (const auto& d : v.type().tensor_type().shape().dim())
        pv.dims.emplace_back(d.has_dim_value() ? d.dim_value() : -1, d.has_dim_param() ? d.dim_param() : "");
    }
    f.values[v.name()] = std::move(pv);
  };
  for (const auto& v : m.graph().input()) add(v);
  for (const auto& v : m.graph().output()) add(v);
  return f;
}

NodeArg node_arg(const ValueInfo& vi, const ModelFacts& f) {
  NodeArg a;
  a.name = vi.name;
  a.dtype = vi.dtype;
  a.dims = vi.shape;
  auto it = f.values.find(vi.name);
  const ProtoValue* pv = it != f.values.end() && it->second.has_shape ? &it->second : nullptr;
  a.has_shape = pv != nullptr || !vi.shape.empty();
  for (size_t k = 0; k < vi.shape.size(); ++k) {
    if (vi.shape[k] >= 0) a.shape.push_back(py::int_(vi.shape[k]));
    else if (pv && pv->dims.size() == vi.shape.size() && !pv->dims[k].second.empty()) a.shape.push_back(py::str(pv->dims[k].second));
    else a.shape.push_back(py::none());
  }
  return a;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// ------------------------------------------------------------------------------------------------------------
// InferenceSession
// ------------------------------------------------------------------------------------------------------------

struct PySession {
  std::shared_ptr<Runtime> runtime;
  std::unique_ptr<Session> session;
  std::vector<NodeArg> inputs, outputs, overridable;  // overridable: Session::overridable_initializers()
  ModelMeta meta;
  std::vector<std::string> providers;
  py::object sess_options;  // the SessionOptions given (or a default one)
  std::string model_path;
  bool profiling = false;
  std::string profile_prefix;
  int64_t profiling_start_ns = 0;

  // An input or overridable initializer a run may feed.
  const NodeArg* input(const std::string& name) const {
    for (const auto* list : {&inputs, &overridable})
      for (const NodeArg& a : *list)
        if (a.name == name) return &a;
    return nullptr;
  }

  std::string input_names() const {
    std::vector<std::string> n;
    for (const auto& a : inputs) n.push_back(a.name);
    return n.empty() ? "(none)" : join(n, ", ");
  }
  std::string output_names() const {
    std::vector<std::string> n;
    for (const auto& a : outputs) n.push_back(a.name);
    return join(n, ", ");
  }

  std::vector<size_t> output_indices(py::handle names) const {
    std::vector<size_t> idx;
    if (names.is_none()) {
      for (size_t i = 0; i < outputs.size(); ++i) idx.push_back(i);
      return idx;
    }
    if (py::isinstance<py::str>(names)) {
      raise(g_exc.invalid_type, "output_names must be a list of names or None, got a str", "INVALID_ARGUMENT");
    }
    for (py::handle h : names) {
      std::string n = py::str(h);
      auto it = std::find_if(outputs.begin(), outputs.end(), [&](const NodeArg& a) { return a.name == n; });
      if (it == outputs.end()) invalid("invalid output name '" + n + "'; the model's outputs are: " + output_names());
      idx.push_back(static_cast<size_t>(it - outputs.begin()));
    }
    return idx;
  }

  std::vector<NamedTensor> feeds(py::handle input_feed) const {
    if (!py::isinstance<py::dict>(input_feed)) {
      raise(g_exc.invalid_type,
            std::string("input_feed must be a dict {input name: numpy.ndarray or OrtValue}, got ") +
                Py_TYPE(input_feed.ptr())->tp_name,
            "INVALID_ARGUMENT");
    }
    std::vector<NamedTensor> f;
    auto d = py::reinterpret_borrow<py::dict>(input_feed);
    f.reserve(d.size());
    for (auto [k, v] : d) {
      std::string name = py::str(k);
      const NodeArg* a = input(name);
      if (!a) invalid("invalid input name '" + name + "'; the model's inputs are: " + input_names());
      f.push_back({name, tensor_from_object("input '" + name + "'", v, a)});
    }
    return f;
  }

  // `on_node`: None, or InferenceSession.run's per-node callback (run_observed, node_observer.cpp).
  std::vector<NamedTensor> run_tensors(const std::vector<NamedTensor>& in, py::handle on_node) {
    std::vector<NamedTensor> out;
    if (!on_node.is_none()) {
      out = run_observed(*session, in, on_node);
    } else {
      py::gil_scoped_release nogil;
      out = session->run(in);
    }
    // Ctrl-C pressed during the run arrives now.
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    return out;
  }

  py::list run(py::handle output_names, py::handle input_feed, py::handle /*run_options*/, py::handle on_node) {
    std::vector<size_t> idx = output_indices(output_names);
    std::vector<NamedTensor> in = feeds(input_feed);
    std::vector<NamedTensor> out = run_tensors(in, on_node);
    py::list result(idx.size());
    for (size_t i = 0; i < idx.size(); ++i) result[i] = array_from_tensor(out[idx[i]].tensor);
    return result;
  }

  py::list run_with_ort_values(py::handle output_names, py::handle input_feed, py::handle /*run_options*/,
                               py::handle on_node) {
    std::vector<size_t> idx = output_indices(output_names);
    std::vector<NamedTensor> in = feeds(input_feed);
    std::vector<NamedTensor> out = run_tensors(in, on_node);
    py::list result(idx.size());
    for (size_t i = 0; i < idx.size(); ++i) result[i] = py::cast(OrtValue{out[idx[i]].tensor, py::none()});
    return result;
  }

  std::string end_profiling() {
    if (!profiling) return "";
    profiling = false;
    auto now = std::chrono::system_clock::now();
    std::time_t t = std::chrono::system_clock::to_time_t(now);
    std::tm tm{};
    localtime_r(&t, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%d_%H-%M-%S", &tm);
    std::string file = profile_prefix + "_" + stamp + ".json";
    for (int n = 1; fs::exists(file); ++n) file = profile_prefix + "_" + stamp + "_" + std::to_string(n) + ".json";
    py::gil_scoped_release nogil;
    session->write_profile(file);
    return file;
  }
};

std::unique_ptr<PySession> make_session(py::object path_or_bytes, py::object sess_options, py::object providers,
                                        py::object provider_options, py::kwargs kwargs) {
  (void)provider_options;
  (void)kwargs;
  auto s = std::make_unique<PySession>();
  if (sess_options.is_none()) sess_options = py::cast(PySessionOptions{});
  const PySessionOptions* so = &sess_options.cast<const PySessionOptions&>();
  s->sess_options = sess_options;

  set_intra_op_threads(so->intra_op_num_threads);
  s->runtime = runtime_for(runtime_config(so));
  std::vector<std::string> avail = available_devices(*s->runtime);

  // providers: names (or (name, options) pairs) in preference order; unavailable ones are dropped with a
  // warning, as onnxruntime does.
  std::vector<std::string> devices;
  if (!providers.is_none()) {
    for (py::handle h : providers) {
      py::handle name = h;
      if (py::isinstance<py::tuple>(h) || py::isinstance<py::list>(h)) name = py::reinterpret_borrow<py::sequence>(h)[0];
      std::string p = py::str(name);
      std::string d = device_of(p);
      if (std::find(avail.begin(), avail.end(), d) == avail.end()) {
        std::vector<std::string> names;
        for (const auto& a : avail) names.push_back(provider_of(a));
        PyErr_WarnEx(PyExc_UserWarning,
                     ("Specified provider '" + p + "' is not in available provider names. Available providers: '" +
                      join(names, ", ") + "'")
                         .c_str(),
                     1);
        continue;
      }
      if (std::find(devices.begin(), devices.end(), d) == devices.end()) devices.push_back(d);
    }
  }
  for (const auto& d : devices.empty() ? avail : devices) s->providers.push_back(provider_of(d));
  SessionOptions opts = session_options(so, devices);
  s->profiling = opts.profile;
  s->profile_prefix = so->profile_file_prefix;

  std::string bytes;
  bool from_bytes = false;
  fs::path path;
  if (py::isinstance<py::bytes>(path_or_bytes) || py::isinstance<py::bytearray>(path_or_bytes) ||
      py::isinstance<py::memoryview>(path_or_bytes)) {
    PyObject* b = PyBytes_FromObject(path_or_bytes.ptr());
    if (!b) throw py::error_already_set();
    bytes = py::reinterpret_steal<py::bytes>(b).cast<std::string>();
    from_bytes = true;
  } else if (py::isinstance<py::str>(path_or_bytes) || py::hasattr(path_or_bytes, "__fspath__")) {
    path = py::module_::import("os").attr("fspath")(path_or_bytes).cast<std::string>();
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) {
      raise(g_exc.no_such_file, "Load model from " + path.string() + " failed: file doesn't exist", "NOT_FOUND");
    }
    s->model_path = path.string();
  } else {
    raise(g_exc.invalid_type,
          std::string("InferenceSession: path_or_bytes must be a path (str or os.PathLike) or the model's bytes, "
                      "got ") + Py_TYPE(path_or_bytes.ptr())->tp_name,
          "INVALID_ARGUMENT");
  }

  {
    py::gil_scoped_release nogil;
    spdlog::level::level_enum saved = spdlog::get_level();
    if (so->log_severity_set) spdlog::set_level(spd_level(so->log_severity_level));
    struct Restore {
      spdlog::level::level_enum level;
      bool on;
      ~Restore() {
        if (on) spdlog::set_level(level);
      }
    } restore{saved, so->log_severity_set};
    if (from_bytes) {
      s->session = s->runtime->load_from_bytes(std::as_bytes(std::span(bytes.data(), bytes.size())), opts, "<bytes>");
    } else {
      s->session = s->runtime->load(path, opts);
      bytes = read_file(path);
    }
  }
  s->profiling_start_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  ModelFacts facts = model_facts(bytes);
  s->meta = std::move(facts.meta);
  for (const ValueInfo& v : s->session->inputs()) s->inputs.push_back(node_arg(v, facts));
  for (const ValueInfo& v : s->session->outputs()) s->outputs.push_back(node_arg(v, facts));
  for (const ValueInfo& v : s->session->overridable_initializers()) s->overridable.push_back(node_arg(v, facts));
  return s;
}

// ------------------------------------------------------------------------------------------------------------
// IOBinding
// ------------------------------------------------------------------------------------------------------------

struct PyIOBinding {
  PySession* session;
  py::object session_ref;  // keeps the session alive
  std::vector<NamedTensor> inputs;
  std::vector<py::object> input_owners;
  // One slot per graph output, in graph order (what Session::run writes into); `bound` in binding order.
  std::vector<NamedTensor> outputs;
  std::vector<size_t> bound;
  // A caller's buffer an output is bound to (an OrtValue or buffer_ptr), or none.
  std::vector<void*> user_buffer;
  std::vector<DType> user_dtype;
  std::vector<std::vector<int64_t>> user_shape;
  std::vector<py::object> output_owners;

  explicit PyIOBinding(py::object sess) : session(&sess.cast<PySession&>()), session_ref(std::move(sess)) {
    for (const NodeArg& a : session->outputs) outputs.push_back({a.name, Tensor()});
    user_buffer.assign(outputs.size(), nullptr);
    user_dtype.assign(outputs.size(), DType::kUndefined);
    user_shape.resize(outputs.size());
    output_owners.resize(outputs.size());
  }

  void set_user_buffer(size_t o, DType dt, std::vector<int64_t> shape, void* ptr) {
    outputs[o].tensor = borrow(dt, shape, reinterpret_cast<uintptr_t>(ptr));
    user_buffer[o] = ptr;
    user_dtype[o] = dt;
    user_shape[o] = std::move(shape);
  }

  void set_input(const std::string& name, Tensor t, py::object owner) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].name == name) {
        inputs[i].tensor = std::move(t);
        input_owners[i] = std::move(owner);
        return;
      }
    }
    inputs.push_back({name, std::move(t)});
    input_owners.push_back(std::move(owner));
  }

  const NodeArg& input_arg(const std::string& name) const {
    const NodeArg* a = session->input(name);
    if (!a) invalid("invalid input name '" + name + "'; the model's inputs are: " + session->input_names());
    return *a;
  }

  size_t output_index(const std::string& name) const {
    for (size_t i = 0; i < session->outputs.size(); ++i)
      if (session->outputs[i].name == name) return i;
    invalid("invalid output name '" + name + "'; the model's outputs are: " + session->output_names());
  }

  void bind_cpu_input(const std::string& name, py::handle array) {
    const NodeArg& a = input_arg(name);
    set_input(name, tensor_from_object("input '" + name + "'", array, &a), py::none());
  }

  static void check_device(const std::string& device_type) {
    std::string d = device_type;
    std::transform(d.begin(), d.end(), d.begin(), [](unsigned char c) { return std::tolower(c); });
    if (d != "cpu") {
      raise(g_exc.not_implemented,
            "device_type '" + device_type + "': ophost's Python API binds host (cpu) buffers only; bind a cpu "
            "buffer and let the session copy to the device",
            "NOT_IMPLEMENTED");
    }
  }

  static Tensor borrow(DType dtype, const std::vector<int64_t>& shape, uintptr_t ptr) {
    if (!ptr) invalid("buffer_ptr is 0");
    if (dtype == DType::kUndefined || dtype == DType::kString) invalid("element_type must be a numeric dtype");
    // Not owned: the caller keeps the buffer alive while it is bound (as with onnxruntime).
    std::shared_ptr<std::byte> buf(reinterpret_cast<std::byte*>(ptr), [](std::byte*) {});
    return Tensor::wrap(dtype, shape, std::move(buf));
  }

  void bind_input(const std::string& name, const std::string& device_type, int /*device_id*/, py::handle element_type,
                  const std::vector<int64_t>& shape, uintptr_t buffer_ptr) {
    check_device(device_type);
    input_arg(name);
    set_input(name, borrow(dtype_from_object(element_type), shape, buffer_ptr), py::none());
  }

  void bind_ortvalue_input(const std::string& name, py::object value) {
    const NodeArg& a = input_arg(name);
    Tensor t = tensor_from_object("input '" + name + "'", value, &a);
    set_input(name, std::move(t), value);
  }

  void mark_bound(size_t o) {
    if (std::find(bound.begin(), bound.end(), o) == bound.end()) bound.push_back(o);
  }

  void bind_output(const std::string& name, const std::string& device_type, int /*device_id*/, py::handle element_type,
                   py::object shape, uintptr_t buffer_ptr) {
    check_device(device_type);
    size_t o = output_index(name);
    if (buffer_ptr) {
      if (shape.is_none()) invalid("bind_output('" + name + "'): a buffer_ptr needs its shape");
      set_user_buffer(o, dtype_from_object(element_type), shape.cast<std::vector<int64_t>>(),
                      reinterpret_cast<void*>(buffer_ptr));
    } else {
      outputs[o].tensor = Tensor();
      user_buffer[o] = nullptr;
    }
    output_owners[o] = py::none();
    mark_bound(o);
  }

  void bind_ortvalue_output(const std::string& name, py::object value) {
    size_t o = output_index(name);
    OrtValue& v = value.cast<OrtValue&>();
    if (v.tensor.empty() || v.tensor.dtype() == DType::kString || !v.tensor.data()) {
      invalid("bind_ortvalue_output('" + name + "'): the OrtValue holds no numeric tensor");
    }
    // The session writes into the OrtValue's buffer through a tensor of its own over it.
    set_user_buffer(o, v.tensor.dtype(), std::vector<int64_t>(v.tensor.shape().begin(), v.tensor.shape().end()),
                    v.tensor.data());
    output_owners[o] = value;
    mark_bound(o);
  }

  void clear_inputs() {
    inputs.clear();
    input_owners.clear();
  }
  void clear_outputs() {
    for (auto& o : outputs) o.tensor = Tensor();
    bound.clear();
    user_buffer.assign(outputs.size(), nullptr);
    for (auto& o : output_owners) o = py::none();
  }

  void run() {
    if (bound.empty())
      for (size_t o = 0; o < outputs.size(); ++o) bound.push_back(o);
    // Graph inputs the caller bound at a misaligned address are copied (kernels expect 64-byte alignment).
    bool misaligned = false;
    for (const NamedTensor& in : inputs)
      if (in.tensor.data() && reinterpret_cast<uintptr_t>(in.tensor.data()) % 64 != 0) misaligned = true;
    std::vector<NamedTensor> copies;
    if (misaligned)
      for (const NamedTensor& in : inputs) copies.push_back({in.name, aligned_for_run(in.tensor)});
    {
      py::gil_scoped_release nogil;
      session->session->run(misaligned ? copies : inputs, outputs);
    }
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    // An output bound to the caller's buffer whose dtype or shape differs from what the run produced was
    // written to a new tensor instead: rebind the caller's buffer and say so.
    for (size_t o = 0; o < outputs.size(); ++o) {
      if (!user_buffer[o] || outputs[o].tensor.data() == user_buffer[o]) continue;
      std::string got = std::string(dtype_name(outputs[o].tensor.dtype())) + " " + shape_to_string(outputs[o].tensor.shape());
      std::string had = std::string(dtype_name(user_dtype[o])) + " " + shape_to_string(user_shape[o]);
      outputs[o].tensor = borrow(user_dtype[o], user_shape[o], reinterpret_cast<uintptr_t>(user_buffer[o]));
      invalid("output '" + outputs[o].name + "' is bound to a " + had + " buffer, but the run produced " + got +
              "; bind a buffer of that dtype and shape, or bind the output by name only (bind_output(name))");
    }
  }

  py::list get_outputs() {
    py::list l;
    for (size_t o : bound) {
      if (!output_owners[o].is_none()) l.append(output_owners[o]);
      else l.append(py::cast(OrtValue{outputs[o].tensor, py::none()}));
    }
    return l;
  }

  py::list copy_outputs_to_cpu() {
    py::list l;
    for (size_t o : bound) {
      const Tensor& t = outputs[o].tensor;
      l.append(array_from_tensor(t.empty() ? t : t.clone()));
    }
    return l;
  }
};

// ------------------------------------------------------------------------------------------------------------
// Logging
// ------------------------------------------------------------------------------------------------------------

void setup_logging() {
  // Same look as the command's log; level from $OPHOST_LOG_LEVEL, else warnings and errors (onnxruntime's
  // default severity).
  if (!spdlog::get("ophost")) {
    auto logger = spdlog::stderr_color_mt("ophost");
    logger->set_pattern("[ophost] [%^%l%$] %v");
    spdlog::set_default_logger(logger);
  }
  spdlog::level::level_enum lvl = spdlog::level::warn;
  if (const char* env = std::getenv("OPHOST_LOG_LEVEL"); env && *env) {
    auto l = spdlog::level::from_str(env);
    if (l != spdlog::level::off || std::string(env) == "off") lvl = l;
  }
  spdlog::set_level(lvl);
}

PyObject* new_exception(py::module_& m, const char* name, const char* doc, py::tuple bases) {
  std::string full = std::string("ophost.") + name;
  PyObject* e = PyErr_NewExceptionWithDoc(full.c_str(), doc, bases.ptr(), nullptr);
  if (!e) throw py::error_already_set();
  m.add_object(name, py::handle(e));
  return e;
}

}  // namespace
}  // namespace ophost::python

using namespace ophost;
using namespace ophost::python;

PYBIND11_MODULE(_ophost, m) {
  m.doc() = "ophost: ONNX models through ophost's plugin host, with ONNX Runtime's Python session API.";
  setup_logging();

  // --- exceptions ---------------------------------------------------------------------------------------------
  g_exc.base = new_exception(m, "OphostError",
                             "Base of every error the host reports. str(e) is the host's message (what failed, where: "
                             "file, node, op, pack; and the fix); e.code is its status code name "
                             "(e.g. 'INVALID_ARGUMENT').",
                             py::make_tuple(py::handle(PyExc_RuntimeError)));
  py::handle base(g_exc.base);
  g_exc.fail = new_exception(m, "Fail", "A failure the host reports (onnxruntime's FAIL): plugins, model, run.",
                             py::make_tuple(base));
  g_exc.invalid_argument = new_exception(
      m, "InvalidArgument", "A bad argument: an unknown input or output name, a wrong shape, a bad option value.",
      py::make_tuple(base, py::handle(PyExc_ValueError)));
  g_exc.invalid_type = new_exception(m, "InvalidType",
                                     "An input of the wrong type or dtype (also a TypeError and an InvalidArgument).",
                                     py::make_tuple(py::handle(g_exc.invalid_argument), py::handle(PyExc_TypeError)));
  g_exc.no_such_file = new_exception(m, "NoSuchFile", "A model or pack path that does not exist.",
                                     py::make_tuple(base, py::handle(PyExc_FileNotFoundError)));
  g_exc.not_implemented = new_exception(m, "NotImplemented", "Something ophost does not do (yet).",
                                        py::make_tuple(base));
  g_exc.invalid_graph = new_exception(m, "InvalidGraph", "A model file that cannot be read as ONNX.",
                                      py::make_tuple(base));
  g_exc.runtime_exception = new_exception(m, "RuntimeException",
                                          "A failure while running: out of memory, an internal error.",
                                          py::make_tuple(base));
  g_exc.ep_fail = new_exception(m, "EPFail", "A device (execution provider) that is unavailable.",
                                py::make_tuple(base));
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ophost::Error& e) {
      try {
        raise(exception_for(e.code()), e.what(), code_name(e.code()));
      } catch (py::error_already_set& set) {
        set.restore();
      }
    }
  });

  // --- enums ------------------------------------------------------------------------------------------------
  py::enum_<GraphOptimizationLevel>(m, "GraphOptimizationLevel",
                                    "Graph optimisation level (ophost levels 0-3): ORT_DISABLE_ALL = 0 (none), "
                                    "ORT_ENABLE_BASIC = 1 (identity/dead-node elimination, constant folding), "
                                    "ORT_ENABLE_EXTENDED = 2 (adds Conv+BatchNormalization folding, "
                                    "Conv+activation fusion and LayerNormalization fusion), ORT_ENABLE_LAYOUT and ORT_ENABLE_ALL = 3 (adds "
                                    "Conv+Mul/Add folding; the default).")
      .value("ORT_DISABLE_ALL", GraphOptimizationLevel::ORT_DISABLE_ALL)
      .value("ORT_ENABLE_BASIC", GraphOptimizationLevel::ORT_ENABLE_BASIC)
      .value("ORT_ENABLE_EXTENDED", GraphOptimizationLevel::ORT_ENABLE_EXTENDED)
      .value("ORT_ENABLE_LAYOUT", GraphOptimizationLevel::ORT_ENABLE_LAYOUT)
      .value("ORT_ENABLE_ALL", GraphOptimizationLevel::ORT_ENABLE_ALL);
  py::enum_<ExecutionMode>(m, "ExecutionMode",
                           "ORT_SEQUENTIAL runs the prepared calls in order (lowest overhead); ORT_PARALLEL runs "
                           "independent nodes on inter_op_num_threads threads. Both give identical outputs.")
      .value("ORT_SEQUENTIAL", ExecutionMode::ORT_SEQUENTIAL)
      .value("ORT_PARALLEL", ExecutionMode::ORT_PARALLEL);
  py::enum_<ExecutionOrder>(m, "ExecutionOrder", "Accepted for compatibility; ophost keeps its own order.")
      .value("DEFAULT", ExecutionOrder::DEFAULT)
      .value("PRIORITY_BASED", ExecutionOrder::PRIORITY_BASED)
      .value("MEMORY_EFFICIENT", ExecutionOrder::MEMORY_EFFICIENT);

  // --- SessionOptions ---------------------------------------------------------------------------------------
  py::class_<PySessionOptions>(m, "SessionOptions",
                               "Options of an InferenceSession (onnxruntime's names). Plugins are found as the "
                               "ophost command finds them ($OPHOST_PLUGIN_PATH, then the package's "
                               "lib/ophost/plugins), plus the packs given to register_custom_ops_library.")
      .def(py::init<>())
      .def_readwrite("intra_op_num_threads", &PySessionOptions::intra_op_num_threads,
                     "Threads of the intra-op pool offered to kernels (caller included); 0 = keep the current "
                     "pool (default: hardware concurrency). The pool is process-wide: the last session created "
                     "with a value > 0 sets it for all.")
      .def_readwrite("inter_op_num_threads", &PySessionOptions::inter_op_num_threads,
                     "Threads running independent nodes in ORT_PARALLEL mode, caller included (0 = 2).")
      .def_readwrite("execution_mode", &PySessionOptions::execution_mode, "ExecutionMode.ORT_SEQUENTIAL (default) "
                     "or ExecutionMode.ORT_PARALLEL.")
      .def_readwrite("execution_order", &PySessionOptions::execution_order, "Accepted; has no effect.")
      .def_property(
          "graph_optimization_level", [](const PySessionOptions& o) { return o.graph_optimization_level; },
          [](PySessionOptions& o, py::object v) {
            if (py::isinstance<GraphOptimizationLevel>(v)) o.graph_optimization_level = v.cast<GraphOptimizationLevel>();
            else {
              int x = v.cast<int>();
              if (x != 0 && x != 1 && x != 2 && x != 3 && x != 99)
                invalid("graph_optimization_level must be a GraphOptimizationLevel (0, 1, 2, 3 or 99), got " + std::to_string(x));
              o.graph_optimization_level = static_cast<GraphOptimizationLevel>(x);
            }
          },
          "GraphOptimizationLevel.ORT_DISABLE_ALL ... ORT_ENABLE_ALL (default), or its int value.")
      .def_readwrite("enable_profiling", &PySessionOptions::enable_profiling,
                     "Record every node's kernel time; InferenceSession.end_profiling() writes the Chrome trace "
                     "(onnxruntime's field names) and returns its file name.")
      .def_readwrite("profile_file_prefix", &PySessionOptions::profile_file_prefix,
                     "Profile file name prefix: <prefix>_<date>_<time>.json in the current folder.")
      .def_property(
          "log_severity_level", [](const PySessionOptions& o) { return o.log_severity_level; },
          [](PySessionOptions& o, int v) {
            if (v < 0 || v > 4) invalid("log_severity_level must be 0 (verbose) .. 4 (fatal), got " + std::to_string(v));
            o.log_severity_level = v;
            o.log_severity_set = true;
          },
          "0 verbose, 1 info, 2 warning (default), 3 error, 4 fatal: the host's log level while this session "
          "loads (the log is process-wide; see set_default_logger_severity).")
      .def_readwrite("log_verbosity_level", &PySessionOptions::log_verbosity_level, "Accepted; has no effect.")
      .def_readwrite("logid", &PySessionOptions::logid, "Accepted; has no effect.")
      .def_readwrite("enable_cpu_mem_arena", &PySessionOptions::enable_cpu_mem_arena,
                     "Accepted; ophost always plans an arena for static shapes.")
      .def_readwrite("enable_mem_pattern", &PySessionOptions::enable_mem_pattern, "Accepted; has no effect.")
      .def_readwrite("enable_mem_reuse", &PySessionOptions::enable_mem_reuse, "Accepted; has no effect.")
      .def_readwrite("use_deterministic_compute", &PySessionOptions::use_deterministic_compute,
                     "Accepted; ophost's runs are deterministic for a given thread count.")
      .def_readwrite("optimized_model_filepath", &PySessionOptions::optimized_model_filepath,
                     "Not supported: a non-empty value makes InferenceSession raise NotImplemented.")
      .def(
          "add_session_config_entry",
          [](PySessionOptions& o, const std::string& key, const std::string& value) {
            for (auto& kv : o.config)
              if (kv.first == key) {
                kv.second = value;
                return;
              }
            o.config.emplace_back(key, value);
          },
          py::arg("key"), py::arg("value"),
          "Set a configuration entry. Keys starting 'ophost.' are ophost's own (an unknown one is an error when "
          "the session is created): mem_limit, mem_pool_size (bytes), check_numerics (0/1), dump_dir (folder: every "
          "value of each run as .npy plus index.json, compared by `ophost diff`), debug_kernels (0/1: poisoned "
          "outputs, unwritten elements and writes into inputs reported), disabled_passes "
          "(comma-separated pass names), max_tensor_bytes, max_fold_bytes, max_loop_iterations, "
          "max_subgraph_depth, devices (comma-separated), isolate_packs (comma-separated pack names or '*': their "
          "kernels run in a worker process, see docs/security.md), disabled_plugins (globs), allow_op_override (0/1), "
          "insecure_plugin_paths (0/1). onnxruntime's keys are accepted and ignored.")
      .def(
          "get_session_config_entry",
          [](const PySessionOptions& o, const std::string& key) {
            if (auto v = o.config_value(key)) return *v;
            invalid("SessionOptions has no config entry '" + key + "'");
          },
          py::arg("key"), "The value set with add_session_config_entry (InvalidArgument when unset).")
      .def(
          "register_custom_ops_library",
          [](PySessionOptions& o, py::object path) {
            std::string p = py::module_::import("os").attr("fspath")(path).cast<std::string>();
            Pack pack = resolve_pack(p);
            std::vector<Pack> packs = o.packs;
            if (std::none_of(packs.begin(), packs.end(), [&](const Pack& x) { return x.folder == pack.folder; }))
              packs.push_back(pack);
            // Discover now so a pack that fails its checks is reported here, with the host's message.
            RuntimeConfig c = runtime_config(&o);
            c.packs = packs;
            runtime_for(c);
            o.packs = std::move(packs);
          },
          py::arg("library_path"),
          "Register an operator pack: its folder (holding ophost-plugin.json and the library it names) or the "
          "library inside such a folder. The pack goes through the same manifest, sha256 and ABI checks as "
          "installed plugins; one that fails them raises here with the host's message. The folder's parent is "
          "searched first, before $OPHOST_PLUGIN_PATH and the installed plugins (so other packs beside it are "
          "found too, and a pack of the same name elsewhere is shadowed).")
      .def_property_readonly(
          "custom_ops_libraries",
          [](const PySessionOptions& o) {
            std::vector<std::string> v;
            for (const Pack& p : o.packs) v.push_back(p.folder.string());
            return v;
          },
          "Pack folders registered with register_custom_ops_library, in order.")
      .def("add_free_dimension_override_by_name",
           [](PySessionOptions&, const std::string&, int64_t) {
             raise(g_exc.not_implemented,
                   "add_free_dimension_override_by_name is not supported yet: pass inputs of the shape you want",
                   "NOT_IMPLEMENTED");
           })
      .def("add_initializer",
           [](PySessionOptions&, const std::string&, py::object) {
             raise(g_exc.not_implemented, "add_initializer is not supported yet", "NOT_IMPLEMENTED");
           });

  // --- RunOptions -------------------------------------------------------------------------------------------
  py::class_<PyRunOptions>(m, "RunOptions", "Per-run options (accepted for compatibility; runs take none yet).")
      .def(py::init<>())
      .def_readwrite("log_severity_level", &PyRunOptions::log_severity_level)
      .def_readwrite("log_verbosity_level", &PyRunOptions::log_verbosity_level)
      .def_readwrite("logid", &PyRunOptions::logid)
      .def_readwrite("terminate", &PyRunOptions::terminate, "Accepted; a run cannot be cancelled yet.")
      .def_readwrite("only_execute_path_to_fetches", &PyRunOptions::only_execute_path_to_fetches)
      .def("add_run_config_entry",
           [](PyRunOptions& o, const std::string& k, const std::string& v) { o.config[k] = v; })
      .def("get_run_config_entry", [](const PyRunOptions& o, const std::string& k) {
        auto it = o.config.find(k);
        if (it == o.config.end()) invalid("RunOptions has no config entry '" + k + "'");
        return it->second;
      });

  // --- NodeArg, ModelMetadata -------------------------------------------------------------------------------
  py::class_<NodeArg>(m, "NodeArg", "A graph input or output: name, shape and type.")
      .def_readonly("name", &NodeArg::name, "The value's name.")
      .def_property_readonly(
          "shape",
          [](const NodeArg& a) {
            py::list l;
            for (const auto& d : a.shape) l.append(d);
            return l;
          },
          "Dimensions: an int where fixed, the symbolic name (str) where the model names it, None where open.")
      .def_property_readonly("type", &NodeArg::type, "onnxruntime's type string, e.g. 'tensor(float)'.")
      .def("__repr__", [](const NodeArg& a) {
        return "NodeArg(name='" + a.name + "', type='" + a.type() + "', shape=" +
               py::repr(py::cast(a).attr("shape")).cast<std::string>() + ")";
      });

  py::class_<ModelMeta>(m, "ModelMetadata", "The model file's metadata.")
      .def_readonly("producer_name", &ModelMeta::producer_name)
      .def_readonly("graph_name", &ModelMeta::graph_name)
      .def_readonly("domain", &ModelMeta::domain)
      .def_readonly("description", &ModelMeta::description)
      .def_readonly("graph_description", &ModelMeta::graph_description)
      .def_readonly("version", &ModelMeta::version)
      .def_readonly("custom_metadata_map", &ModelMeta::custom_metadata_map);

  // --- OrtValue ---------------------------------------------------------------------------------------------
  py::class_<OrtValue>(m, "OrtValue",
                       "A tensor in host memory. ortvalue_from_numpy shares the array's buffer when it is "
                       "C-contiguous; .numpy() is a view of the buffer (no copy); DLPack both ways.")
      .def_static(
          "ortvalue_from_numpy",
          [](py::array a, const std::string& device_type, int /*device_id*/) {
            PyIOBinding::check_device(device_type);
            bool swapped = false;
            DType dt = dtype_of(a.dtype(), &swapped);
            check_array("ortvalue_from_numpy", a, dt, swapped, nullptr);
            if (dt == DType::kString || a.size() == 0 || !(a.flags() & py::array::c_style))
              return OrtValue{copy_array(a, dt), py::none()};
            // Shares the buffer (as onnxruntime does on the CPU): writes to the array show in the value.
            std::shared_ptr<std::byte> buf(static_cast<std::byte*>(const_cast<void*>(a.data())), [](std::byte*) {});
            return OrtValue{Tensor::wrap(dt, std::vector<int64_t>(a.shape(), a.shape() + a.ndim()), buf), a};
          },
          py::arg("numpy_obj"), py::arg("device_type") = "cpu", py::arg("device_id") = 0,
          "An OrtValue over a NumPy array: the same buffer when it is C-contiguous (writes to either show in "
          "both), a copy otherwise.")
      .def_static(
          "ortvalue_from_shape_and_type",
          [](const std::vector<int64_t>& shape, py::handle element_type, const std::string& device_type, int) {
            PyIOBinding::check_device(device_type);
            DType dt = dtype_from_object(element_type);
            if (dt == DType::kUndefined) invalid("ortvalue_from_shape_and_type: unknown element_type");
            return OrtValue{Tensor(dt, shape), py::none()};
          },
          py::arg("shape"), py::arg("element_type"), py::arg("device_type") = "cpu", py::arg("device_id") = 0,
          "A new zero-filled tensor of this shape and element type (numpy.float32, 'float32', 'tensor(float)').")
      .def_static(
          "from_dlpack",
          [](py::object data, bool /*is_bool_tensor*/) { return OrtValue{from_dlpack(data), data}; },
          py::arg("data"), py::arg("is_bool_tensor") = false,
          "An OrtValue over a DLPack tensor (an object with __dlpack__, or a 'dltensor' capsule): no copy "
          "when C-contiguous.")
      .def("numpy", [](const OrtValue& v) { return array_from_tensor(v.tensor); },
           "A NumPy array over the value's buffer (no copy; it keeps the buffer alive).")
      .def("shape", [](const OrtValue& v) { return std::vector<int64_t>(v.tensor.shape().begin(), v.tensor.shape().end()); })
      .def("data_type", [](const OrtValue& v) { return std::string(ort_type(v.tensor.dtype())); },
           "onnxruntime's type string, e.g. 'tensor(float)'.")
      .def("element_type", [](const OrtValue& v) { return numpy_dtype(v.tensor.dtype()).attr("type"); },
           "The NumPy scalar type of the elements.")
      .def("device_name", [](const OrtValue&) { return std::string("cpu"); })
      .def("is_tensor", [](const OrtValue& v) { return !v.tensor.empty(); })
      .def("has_value", [](const OrtValue& v) { return !v.tensor.empty(); })
      .def("data_ptr", [](const OrtValue& v) { return reinterpret_cast<uintptr_t>(v.tensor.data()); })
      .def(
          "update_inplace",
          [](OrtValue& v, py::array a) {
            bool swapped = false;
            DType dt = dtype_of(a.dtype(), &swapped);
            NodeArg e;
            e.dtype = v.tensor.dtype();
            e.has_shape = true;
            for (int64_t d : v.tensor.shape()) e.shape.push_back(py::int_(d));
            check_array("update_inplace", a, dt, swapped, &e);
            Tensor src = copy_array(a, dt);
            if (dt == DType::kString) v.tensor.strings() = src.strings();
            else if (src.nbytes()) std::memcpy(v.tensor.data(), src.data(), src.nbytes());
          },
          py::arg("np_arr"), "Copy a NumPy array of the same dtype and shape into the value's buffer.")
      .def(
          "__dlpack__",
          [](const OrtValue& v, py::object /*stream*/) { return to_dlpack(v.tensor); }, py::arg("stream") = py::none(),
          "A DLPack capsule over the value's buffer (no copy).")
      .def("__dlpack_device__", [](const OrtValue&) { return py::make_tuple(static_cast<int>(OPH_DL_CPU), 0); })
      .def("to_dlpack", [](const OrtValue& v) { return to_dlpack(v.tensor); })
      .def("__repr__", [](const OrtValue& v) {
        return std::string("OrtValue(") + ort_type(v.tensor.dtype()) + " " + shape_to_string(v.tensor.shape()) + ")";
      });

  // --- IOBinding --------------------------------------------------------------------------------------------
  py::class_<PyIOBinding>(m, "IOBinding",
                          "Inputs and outputs bound once to a session (InferenceSession.io_binding()). Outputs "
                          "bound to an OrtValue or a buffer are written in place; outputs bound by name keep "
                          "their tensors between runs, so repeated runs of static shapes allocate nothing "
                          "(unless their OrtValues from get_outputs() are still held).")
      .def(py::init([](py::object session) { return std::make_unique<PyIOBinding>(std::move(session)); }),
           py::arg("session"))
      .def("bind_cpu_input", &PyIOBinding::bind_cpu_input, py::arg("name"), py::arg("arr_on_cpu"),
           "Bind a NumPy array to an input (shared when C-contiguous and 64-byte aligned, else copied now).")
      .def("bind_input", &PyIOBinding::bind_input, py::arg("name"), py::arg("device_type"), py::arg("device_id"),
           py::arg("element_type"), py::arg("shape"), py::arg("buffer_ptr"),
           "Bind a raw host buffer (device_type 'cpu'): the caller keeps it alive while bound.")
      .def("bind_ortvalue_input", &PyIOBinding::bind_ortvalue_input, py::arg("name"), py::arg("ortvalue"))
      .def("bind_output", &PyIOBinding::bind_output, py::arg("name"), py::arg("device_type") = "cpu",
           py::arg("device_id") = 0, py::arg("element_type") = py::none(), py::arg("shape") = py::none(),
           py::arg("buffer_ptr") = 0,
           "Bind an output by name (the session allocates it once and reuses it), or to a raw host buffer "
           "(element_type, shape and buffer_ptr), which the run writes in place.")
      .def("bind_ortvalue_output", &PyIOBinding::bind_ortvalue_output, py::arg("name"), py::arg("ortvalue"),
           "Bind an output to an OrtValue of its dtype and shape: runs write into it.")
      .def("clear_binding_inputs", &PyIOBinding::clear_inputs)
      .def("clear_binding_outputs", &PyIOBinding::clear_outputs)
      .def("synchronize_inputs", [](PyIOBinding&) {}, "No-op (host memory only).")
      .def("synchronize_outputs", [](PyIOBinding&) {}, "No-op (host memory only).")
      .def("get_outputs", &PyIOBinding::get_outputs,
           "The bound outputs as OrtValues, in binding order (views of the binding's buffers).")
      .def("copy_outputs_to_cpu", &PyIOBinding::copy_outputs_to_cpu,
           "The bound outputs as NumPy arrays (copies), in binding order.");

  // --- InferenceSession -------------------------------------------------------------------------------------
  bind_node_outputs(m);
  py::class_<PySession>(m, "InferenceSession",
                        "A loaded, prepared model: ONNX Runtime's InferenceSession on ophost.\n\n"
                        "InferenceSession(path_or_bytes, sess_options=None, providers=None, provider_options=None)\n"
                        "  path_or_bytes: the .onnx file (str or os.PathLike; external data beside it) or its bytes.\n"
                        "  sess_options: a SessionOptions (threads, optimisation level, profiling, custom packs).\n"
                        "  providers: preference list, e.g. ['CUDAExecutionProvider', 'CPUExecutionProvider'] (or "
                        "ophost device types 'cuda', 'cpu'); providers without an active device backend are "
                        "dropped with a warning; None = every available device, CPU last.\n"
                        "  provider_options: accepted and ignored.\n"
                        "Errors are OphostError subclasses carrying the host's message.")
      .def(py::init(&make_session), py::arg("path_or_bytes"), py::arg("sess_options") = py::none(),
           py::arg("providers") = py::none(), py::arg("provider_options") = py::none())
      .def("run", &PySession::run, py::arg("output_names"), py::arg("input_feed"), py::arg("run_options") = py::none(),
           py::arg("on_node") = py::none(),
           "run(output_names, input_feed, run_options=None, on_node=None) -> list of numpy.ndarray\n\n"
           "  output_names: names of the outputs wanted, in the order wanted; None = all, in graph order.\n"
           "  input_feed: {input name: numpy.ndarray or OrtValue}; every graph input exactly once. Arrays of the "
           "model's dtype are read in place when C-contiguous and 64-byte aligned, else copied (strided and "
           "Fortran-ordered ones included); a wrong dtype raises InvalidType (a TypeError), a wrong shape or a "
           "byte-swapped array InvalidArgument (a ValueError), naming the input, its dtype and shape.\n"
           "  run_options: a RunOptions (accepted; has no effect).\n"
           "  on_node: None, or a callable called as on_node(info) after each node of the main graph has computed, "
           "info an ophost.NodeOutputs (index, node, op, pack, device, outputs {value name: numpy.ndarray copy}, "
           "skipped): nodes as they run after optimisation (fused nodes as what runs), not those inside "
           "If/Loop/Scan bodies. Calls are one at a time, on the thread that ran the node (a worker thread in "
           "ORT_PARALLEL mode), with the GIL held for the call. An exception it raises stops the run and is "
           "re-raised from run() unchanged. Copying every output makes such a run slower.\n"
           "The GIL is released while the model runs: threads may share one session.")
      .def("run_with_ort_values", &PySession::run_with_ort_values, py::arg("output_names"),
           py::arg("input_dict_ort_values"), py::arg("run_options") = py::none(), py::arg("on_node") = py::none(),
           "As run(), with OrtValues (or arrays) in and OrtValues out; on_node as for run().")
      .def("get_inputs", [](const PySession& s) { return s.inputs; }, "The graph inputs (NodeArg), in order.")
      .def("get_outputs", [](const PySession& s) { return s.outputs; }, "The graph outputs (NodeArg), in order.")
      .def("get_overridable_initializers", [](const PySession& s) { return s.overridable; },
           "Initializers the graph also lists as inputs (ONNX IR >= 4), which run() may feed by name (NodeArg).")
      .def("get_modelmeta", [](const PySession& s) { return s.meta; }, "The model's metadata (ModelMetadata).")
      .def("get_providers", [](const PySession& s) { return s.providers; },
           "The providers (devices) this session may place nodes on, in preference order.")
      .def("get_provider_options",
           [](const PySession& s) {
             py::dict d;
             for (const auto& p : s.providers) d[py::str(p)] = py::dict();
             return d;
           })
      .def("get_session_options", [](const PySession& s) { return s.sess_options; })
      .def("end_profiling", &PySession::end_profiling,
           "Write the profile (Chrome trace with onnxruntime's field names) to <profile_file_prefix>_<date>_<time>"
           ".json and return that file name; '' when profiling is off or already ended.")
      .def("get_profiling_start_time_ns", [](const PySession& s) { return s.profiling_start_ns; })
      .def("io_binding", [](py::object self) { return std::make_unique<PyIOBinding>(self); },
           "A new IOBinding for this session.")
      .def(
          "run_with_iobinding", [](PySession&, PyIOBinding& b, py::object) { b.run(); }, py::arg("iobinding"),
          py::arg("run_options") = py::none(), "Run with the binding's inputs, writing its outputs.")
      .def(
          "memory_stats",
          [](const PySession& s) {
            MemoryStats st = s.session->memory_stats();
            py::dict d;
            d["num_allocs"] = st.num_allocs;
            d["num_reserves"] = st.num_reserves;
            d["bytes_in_use"] = st.bytes_in_use;
            d["max_bytes_in_use"] = st.max_bytes_in_use;
            d["total_allocated_bytes"] = st.total_allocated_bytes;
            d["max_alloc_size"] = st.max_alloc_size;
            d["bytes_limit"] = st.bytes_limit;
            d["allocs_this_run"] = st.allocs_this_run;
            return d;
          },
          "ophost: the session pool's statistics (onnxruntime's names) and allocs_this_run, the allocations "
          "the last run asked of the system (0 in a steady state of static shapes with bound outputs).")
      .def(
          "get_kernels",
          [](const PySession& s) {
            py::list l;
            for (const KernelInfo& k : s.session->kernels()) {
              py::dict d;
              d["node"] = k.node;
              d["op"] = k.op;
              d["pack"] = k.pack;
              d["device"] = k.device;
              d["implementation"] = k.implementation;
              d["reference"] = k.reference;
              l.append(d);
            }
            return l;
          },
          "ophost: which pack, device and implementation serves each node, in execution order.")
      .def_property_readonly("_model_path", [](const PySession& s) { return s.model_path; });

  // --- functions --------------------------------------------------------------------------------------------
  m.def(
      "_set_default_plugin_dir", [](const std::string& p) { g_default_plugin_dir = fs::path(p).lexically_normal(); },
      "Set by the package at import: its lib/ophost/plugins.");
  m.def("_default_plugin_dir", [] { return g_default_plugin_dir.string(); });
  m.def(
      "get_available_providers",
      [] {
        std::vector<std::string> out;
        for (const auto& d : available_devices(*runtime_for({}))) out.push_back(provider_of(d));
        return out;
      },
      "Providers with an active device backend ('CPUExecutionProvider' last; 'CUDAExecutionProvider' / "
      "'ROCMExecutionProvider' only when such a device is present).");
  m.def("get_all_providers", [] {
    return std::vector<std::string>{"CUDAExecutionProvider", "ROCMExecutionProvider", "CPUExecutionProvider"};
  });
  m.def(
      "get_device",
      [] {
        for (const auto& d : available_devices(*runtime_for({})))
          if (d == "cuda" || d == "hip") return std::string("GPU");
        return std::string("CPU");
      },
      "'GPU' when a CUDA or HIP device is active, else 'CPU'.");
  m.def(
      "set_default_logger_severity", [](int v) {
        if (v < 0 || v > 4) invalid("severity must be 0 (verbose) .. 4 (fatal)");
        spdlog::set_level(spd_level(v));
      },
      py::arg("severity"), "Process-wide host log level: 0 verbose, 1 info, 2 warning, 3 error, 4 fatal.");
  m.def(
      "plugins",
      [](py::object sess_options) {
        const PySessionOptions* so = sess_options.is_none() ? nullptr : &sess_options.cast<const PySessionOptions&>();
        py::list l;
        for (const PluginReport& r : runtime_for(runtime_config(so))->plugins()) {
          py::dict d;
          d["name"] = r.name;
          d["manifest"] = r.manifest.string();
          d["library"] = r.library.string();
          d["kind"] = r.kind;
          d["version"] = r.version;
          d["loaded"] = r.loaded;
          d["inactive"] = r.inactive;
          d["reason"] = r.reason;
          d["ops"] = r.ops;
          d["devices"] = r.devices;
          l.append(d);
        }
        return l;
      },
      py::arg("sess_options") = py::none(),
      "ophost: every plugin discovery looked at (as `ophost plugins -v`), with the packs registered in "
      "sess_options.");
  m.def(
      "from_dlpack", [](py::object data) { return OrtValue{from_dlpack(data), data}; }, py::arg("data"),
      "An OrtValue over a DLPack tensor (numpy arrays, torch tensors, ...): no copy when C-contiguous.");
  m.attr("__version__") = OPHOST_VERSION;
}
