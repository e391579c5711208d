// ophost::Runtime and ophost::Session: the embedding API over discovery, registry and execution.
#include <ophost/manifest.hpp>
#include <ophost/runtime.hpp>

#include "core/thread_pool.hpp"
#include "exec/node_debug.hpp"
#include "exec/run_hooks.hpp"
#include "exec/session_impl.hpp"
#include "model/model.hpp"
#include "passes/passes.hpp"
#include "plugins/plugin_set.hpp"
#include "registry/registry.hpp"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include <chrono>
#include <mutex>

namespace ophost {

namespace {
// Embedders get the host's log on stderr at warn level (or $OPHOST_LOG_LEVEL) unless they set up a logger named
// "ophost" themselves (the ophost command does).
void ensure_logging() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (spdlog::get("ophost")) return;
    auto logger = spdlog::stderr_logger_mt("ophost");
    logger->set_pattern("[ophost] [%l] %v");
    const char* env = std::getenv("OPHOST_LOG_LEVEL");
    logger->set_level(env && *env ? spdlog::level::from_str(env) : spdlog::level::warn);
    spdlog::set_default_logger(logger);
  });
}

// A run with SessionOptions::check_numerics' checks of the graph inputs and outputs around it.
void run_checked(Session::Impl& impl, const std::vector<NamedTensor>& inputs, std::vector<NamedTensor>& outputs,
                 const NodeObserver* observer) {
  if (impl.check_numerics) {
    for (const NamedTensor& in : inputs) check_finite(in.tensor.view(), "graph input '" + in.name + "'");
  }
  impl.run(inputs, outputs, observer);
  if (impl.check_numerics) {
    for (const NamedTensor& out : outputs) check_finite(out.tensor.view(), "graph output '" + out.name + "'");
  }
}
}  // namespace

struct OPHOST_LOCAL Runtime::Impl {
  std::shared_ptr<PluginSet> plugins;
  std::vector<PluginReport> reports;
  OpRegistry registry;
  std::vector<std::string> conflicts;
};

Runtime::Runtime(RuntimeOptions options) : impl_(std::make_unique<Impl>()) {
  ensure_logging();
  auto t0 = std::chrono::steady_clock::now();
  if (options.intra_op_threads < 0) {
    throw Error(Code::kInvalidArgument, "intra_op_threads must be >= 0 (0 = default), got " +
                                            std::to_string(options.intra_op_threads));
  }
  if (options.intra_op_threads > 0) ThreadPool::set_global_threads(options.intra_op_threads);
  spdlog::info("threads: intra-op pool of {} (caller included)", ThreadPool::global().threads());
  DiscoveryOptions d;
  d.plugin_paths = options.plugin_paths;
  d.use_env_plugin_path = options.use_env_plugin_path;
  d.use_default_plugin_dir = options.use_default_plugin_dir;
  d.disabled_plugins = options.disabled_plugins;
  d.required_plugins = options.required_plugins;
  d.insecure_plugin_paths = options.insecure_plugin_paths;
  impl_->plugins = std::make_shared<PluginSet>(PluginSet::discover(d));
  impl_->reports = impl_->plugins->reports();

  // Register ops pack by pack; a pack whose ops conflict with an earlier pack is not registered and the
  // conflict is kept (load() refuses to run until it is resolved).
  size_t packs = 0;
  for (const auto& plugin : impl_->plugins->loaded()) {
    if (plugin->ops().empty()) continue;
    OpRegistry trial = impl_->registry;
    try {
      for (const oph_op_def* op : plugin->ops()) trial.add(*plugin, op, options.allow_op_override);
      impl_->registry = std::move(trial);
      ++packs;
    } catch (const Error& e) {
      std::string msg = std::string(e.what()) + "; remove one of the two packs, disable one with "
                        "OPHOST_PLUGINS_DISABLE=<name>, or allow the later one to override with --allow-op-override";
      spdlog::error("{}", msg);
      impl_->conflicts.push_back(msg);
      for (PluginReport& r : impl_->reports) {
        if (r.name == plugin->name() && r.loaded) {
          r.loaded = false;
          r.reason = msg;
        }
      }
    }
  }
  auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  spdlog::info("registry: {} ops from {} packs ({:.1f} ms for discovery and registration)", impl_->registry.size(),
               packs, ms);
}

Runtime::~Runtime() = default;

const std::vector<PluginReport>& Runtime::plugins() const noexcept { return impl_->reports; }
const std::vector<std::string>& Runtime::conflicts() const noexcept { return impl_->conflicts; }
const std::vector<std::filesystem::path>& Runtime::plugin_roots() const noexcept { return impl_->plugins->roots(); }

void set_intra_op_threads(int threads) { ThreadPool::set_global_threads(threads); }

std::vector<GraphPassInfo> graph_passes() {
  std::vector<GraphPassInfo> out;
  for (const PassInfo& p : all_passes()) out.push_back({p.name, p.level, p.summary});
  return out;
}

size_t default_mem_limit() noexcept {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<size_t>(pages) / 2 * static_cast<size_t>(page);
}

namespace {
ModelLimits limits_of(const SessionOptions& options) {
  ModelLimits l;
  l.max_tensor_bytes = options.max_tensor_bytes;
  l.max_subgraph_depth = options.max_subgraph_depth;
  l.max_loop_iterations = options.max_loop_iterations;
  return l;
}

}  // namespace

std::unique_ptr<Session> Runtime::load_from_bytes(std::span<const std::byte> model, const SessionOptions& options,
                                                  const std::string& display_name) {
  if (!impl_->conflicts.empty()) throw Error(Code::kAlreadyExists, impl_->conflicts.front());
  Model m = load_model_from_bytes(model, {}, display_name, limits_of(options));
  auto impl = build_session(impl_->plugins, impl_->registry, std::move(m), options);
  impl->check_numerics = options.check_numerics;
  impl->dump_dir = options.dump_dir;  // here, not in build_session: If/Loop/Scan bodies do not dump
  return std::make_unique<Session>(std::move(impl));
}

std::unique_ptr<Session> Runtime::load(const std::filesystem::path& model, const SessionOptions& options) {
  if (!impl_->conflicts.empty()) throw Error(Code::kAlreadyExists, impl_->conflicts.front());
  auto t0 = std::chrono::steady_clock::now();
  Model m = load_model(model, limits_of(options));
  auto t1 = std::chrono::steady_clock::now();
  spdlog::info("model: {} (ir_version {}, {} nodes, {} initializers, producer '{}') parsed in {:.1f} ms",
               model.string(), m.ir_version, m.nodes.size(), m.initializers.size(), m.producer_name,
               std::chrono::duration<double, std::milli>(t1 - t0).count());
  // Only on the error path: which plugin that did not load would have served a missing op.
  auto unloaded = [this](const std::string& domain, const std::string& op, int64_t opset) -> std::string {
    for (const PluginReport& r : impl_->reports) {
      if (r.loaded || r.manifest.empty()) continue;
      try {
        Manifest mf = read_manifest(r.manifest);
        for (const ManifestOp& mo : mf.provides.ops) {
          if (normalize_domain(mo.domain) == domain && mo.name == op && opset >= mo.since_version &&
              opset <= mo.end_version) {
            return "plugin '" + r.name + "' (" + r.manifest.string() + ") provides it but was not loaded: " +
                   r.reason;
          }
        }
      } catch (const std::exception&) {
        // unreadable manifest: it cannot tell us anything
      }
    }
    return {};
  };
  auto impl = build_session(impl_->plugins, impl_->registry, std::move(m), options, unloaded);
  impl->check_numerics = options.check_numerics;
  impl->dump_dir = options.dump_dir;  // here, not in build_session: If/Loop/Scan bodies do not dump
  try {
    impl->reserve_static_arena();
  } catch (const Error& e) {
    // Not fatal at load: the session exists, and each run reports the same out-of-memory error clearly.
    spdlog::warn("{}", e.what());
  }
  spdlog::info("session prepared in {:.1f} ms",
               std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count());
  return std::make_unique<Session>(std::move(impl));
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;
const std::vector<ValueInfo>& Session::inputs() const noexcept { return impl_->input_infos; }
const std::vector<ValueInfo>& Session::outputs() const noexcept { return impl_->output_infos; }
const std::vector<ValueInfo>& Session::overridable_initializers() const noexcept {
  return impl_->overridable_infos;
}
std::vector<NamedTensor> Session::run(const std::vector<NamedTensor>& inputs) {
  std::vector<NamedTensor> outputs;
  run(inputs, outputs);
  return outputs;
}
void Session::run(const std::vector<NamedTensor>& inputs, std::vector<NamedTensor>& outputs) {
  run_checked(*impl_, inputs, outputs, nullptr);
}
std::vector<NamedTensor> Session::run(const std::vector<NamedTensor>& inputs, const NodeObserver& observer) {
  std::vector<NamedTensor> outputs;
  run_checked(*impl_, inputs, outputs, observer ? &observer : nullptr);
  return outputs;
}
MemoryStats Session::memory_stats() const {
  MemoryStats s = impl_->pool->stats();
  s.allocs_this_run = impl_->last_run_allocs.load(std::memory_order_relaxed);
  return s;
}
size_t Session::node_count() const noexcept { return impl_->nodes.size(); }
size_t Session::copy_count() const noexcept { return impl_->copy_count; }
std::vector<KernelInfo> Session::kernels() const { return kernel_infos(*impl_); }
std::map<std::string, size_t> Session::nodes_per_device() const {
  std::map<std::string, size_t> m;
  for (const PreparedNode& pn : impl_->nodes)
    if (!pn.is_copy) ++m[pn.device];
  return m;
}

namespace {

MemoryPlanReport plan_report(const Session::Impl& s, const ExecPlan& p) {
  MemoryPlanReport r;
  r.planned = p.planned;
  if (!p.planned) return r;
  r.arena_bytes = p.arena_bytes;
  r.lower_bound = p.lower_bound;
  r.values = p.placed;
  r.inplace = p.inplace;
  for (const auto& [out, in] : p.inplace_values) {
    const PreparedNode& pn = s.nodes[static_cast<size_t>(s.values[out].producer)];
    r.inplace_values.push_back({s.values[out].name, s.values[in].name, pn.node->name, node_op_name(pn)});
  }
  return r;
}

}  // namespace

MemoryPlanReport Session::memory_plan(const std::vector<std::vector<int64_t>>& given_shapes) const {
  // Shapes of inputs(), optionally followed by those of overridable_initializers() (else their defaults').
  const Model& m = impl_->model;
  std::vector<std::vector<int64_t>> input_shapes = given_shapes;
  if (input_shapes.size() == m.required_inputs()) {
    for (const Tensor& t : m.input_defaults) input_shapes.emplace_back(t.shape().begin(), t.shape().end());
  }
  if (input_shapes.size() != impl_->input_values.size()) {
    throw Error(Code::kInvalidArgument, "memory_plan: " + std::to_string(given_shapes.size()) + " shapes for " +
                                            std::to_string(m.required_inputs()) + " inputs");
  }
  std::vector<ValueMeta> in_meta;
  for (size_t i = 0; i < input_shapes.size(); ++i) {
    ValueMeta vm;
    vm.dtype = m.inputs[i].dtype;
    vm.rank_known = true;
    vm.shape = input_shapes[i];
    in_meta.push_back(std::move(vm));
  }
  return plan_report(*impl_, *impl_->make_plan(input_shapes, impl_->infer_all(in_meta)));
}

MemoryPlanReport Session::memory_plan() const {
  if (const auto& p = impl_->static_exec; p && p->planned) return plan_report(*impl_, *p);
  return {};
}

}  // namespace ophost
