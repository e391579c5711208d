// The C++ embedding API: a Runtime owns the discovered plugins; a Session owns one loaded, prepared model.
// The `ophost` command is built on exactly the public headers (this one, npy.hpp, manifest.hpp, pack.hpp).
//
//   ophost::Runtime rt({});                              // discovers and loads plugins
//   auto session = rt.load("model.onnx");                // parse, resolve, infer, create kernels
//   auto outputs = session->run({{"x", tensor}});        // named tensors in, named tensors out
#pragma once

#include <ophost/error.hpp>
#include <ophost/export.hpp>
#include <ophost/memory_stats.hpp>
#include <ophost/plugin_report.hpp>
#include <ophost/tensor.hpp>

#include <filesystem>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
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
  // Plugin roots and every folder above them must be owned by root or this user and not writable by group or
  // others (a sticky folder such as /tmp is fine above a root); otherwise the root's plugins are rejected. With
  // this set they are loaded anyway and a warning is logged.
  bool insecure_plugin_paths = false;
  // Threads of the process-wide intra-op pool offered to kernels as parallel_for (the caller counts as one);
  // 0 keeps the current pool (default: hardware concurrency).
  int intra_op_threads = 0;
};

struct ValueInfo {
  std::string name;
  DType dtype = DType::kUndefined;
  std::vector<int64_t> shape;  // -1 for unknown/symbolic dims
};

// A value the static plan puts in the buffer of one of its node's inputs (MAY_INPLACE).
struct InplaceValue {
  std::string value;  // the node's output
  std::string input;  // the input whose buffer it takes over
  std::string node;
  std::string op;     // "domain::op_type" ("" domain shown as the op type alone)
};

// What the static memory plan of the model's declared shapes looks like.
struct MemoryPlanReport {
  bool planned = false;        // false: some shape is only known at run time
  size_t arena_bytes = 0;      // planned peak
  size_t lower_bound = 0;      // largest live byte total at any step
  size_t values = 0;           // values placed in the arena
  size_t inplace = 0;          // outputs sharing their input's buffer (MAY_INPLACE)
  std::vector<InplaceValue> inplace_values;  // which ones, in execution order
};

// Half of the machine's physical memory in bytes (0 when it cannot be read): SessionOptions::mem_limit's default.
OPHOST_API size_t default_mem_limit() noexcept;

struct SessionOptions {
  // Device preference; empty = all available in discovery order with "cpu" last.
  std::vector<std::string> devices;
  // Pool limit in bytes (0 = none): exceeding it is a clear out-of-memory error naming the node and sizes. The
  // default is half of this machine's physical memory (default_mem_limit()), so a hostile or mistaken model
  // fails with a message instead of taking the machine.
  size_t mem_limit = default_mem_limit();
  // Bytes the CPU pool reserves at session start (0 = just the static plan's arena): arenas of later input
  // shapes that fit are served from it without asking the device again.
  size_t mem_pool_size = 0;
  // Record every node's kernel time (Chrome trace, ONNX Runtime's field names); see Session::write_profile.
  bool profile = false;
  // Sequential walks the prepared calls in order (lowest overhead). Parallel runs independent nodes on
  // inter_op_threads threads (the caller included; 0 = 2): atomic readiness counts, the first ready successor
  // runs inline, the rest go to the workers. Both give identical outputs.
  enum class ExecutionMode { kSequential, kParallel };
  ExecutionMode execution_mode = ExecutionMode::kSequential;
  int inter_op_threads = 0;
  // Largest tensor, in bytes, the model may hold or need (initializers, attribute tensors, any value whose
  // inferred shape is fully known): a bigger one fails load (or the run that would need it) with a message.
  uint64_t max_tensor_bytes = uint64_t{4} << 30;
  // Bytes of new constants that constant folding may create beyond the size of the model's own initializers:
  // a model whose folding would need more is rejected at load with a message (predicted from the inferred
  // shapes before anything is computed). Outputs of a single node over 64 MiB are never folded (they stay
  // nodes and run at each run).
  uint64_t max_fold_bytes = uint64_t{64} << 20;
  // Deepest nesting of subgraphs (If/Loop/Scan bodies) accepted at load.
  int max_subgraph_depth = 8;
  // Most iterations one Loop node may run in one run: a Loop that would run more (no trip count and a
  // condition that stays true, or a hostile trip count) fails the run with a message instead of spinning.
  int64_t max_loop_iterations = int64_t{1} << 20;
  // Wall-clock budget of one run in milliseconds (0 = none): checked before every node and every Loop/Scan
  // iteration, bodies included; a run past it fails with Code::kDeadlineExceeded naming the node it stopped
  // before. A kernel already running is not interrupted, unless its pack is isolated (isolate_packs): then its
  // worker process is killed at the deadline.
  int64_t run_timeout_ms = 0;
  // Checks every floating-point graph input before a run and every node's floating-point outputs after it
  // runs: a NaN or infinity is an error naming the node, the value and the first offending element.
  bool check_numerics = false;
  // Folder to dump every value the run produces into (empty: off; `ophost run --dump DIR`): after
  // optimisation, each node output as DIR/<value name, characters other than [A-Za-z0-9._-] as '_'>.npy, the
  // graph inputs too, and DIR/index.json (per value: name, file, producing node, op, pack, device, shape, dtype;
  // the nodes in execution order with their inputs and outputs). Values inside If/Loop/Scan bodies are not
  // dumped, nor values on another device than the CPU (index.json lists them with the reason). Each run
  // rewrites the folder's files. Compare two dumps with `ophost diff`.
  std::string dump_dir;
  // Kernel debug mode (`ophost run --debug-kernels`): every output is poisoned before its node's compute
  // (signalling NaN for floating-point types, 0xA5 bytes for the others) and checked after it for elements the
  // kernel never wrote; every input is copied before and compared after, catching writes into an input the op
  // does not declare MUTATES_INPUT (an output that shares its input's buffer through MAY_INPLACE is allowed), and
  // (planned runs) 1024 guard bytes after each arena buffer catch writes past its end.
  // A finding fails the run naming the node, op, pack, value and first element. Off: no cost.
  bool debug_kernels = false;
  // A model importing a standard opset (ai.onnx, ai.onnx.ml) newer than every released one (and than every op
  // version the loaded packs register) is refused at load, naming the newest; true runs it anyway with the
  // newest semantics the packs know, with a warning.
  bool allow_newer_opset = false;
  // Graph optimisation level, 0 (none) to 3 (all, the default): 1 identity/Dropout elimination, dead-node
  // elimination, constant folding; 2 adds Conv+BatchNormalization folding, Conv+Add/activation fusion and
  // LayerNormalization fusion; 3 adds Conv+per-channel Mul/Add and Pad+Conv folding and channel-blocked layouts.
  // Each pass logs what it changed at info level; graph_passes() lists them.
  int opt_level = 3;
  // Operator packs whose kernels run in a worker process of their own (`ophost run --isolate-packs`; "*" = every
  // loaded operator pack; docs/security.md): a crash, abort, exit() or heap corruption in such a pack fails only
  // the run in progress ("pack 'P' crashed (SIGSEGV) in node 'N' (op D::O)"), a kernel still running past
  // run_timeout_ms is killed, and the next run starts a new worker. Tensors cross through shared memory (one copy
  // in, one copy out per node); CPU kernels of numeric tensors only. A name that is not a loaded operator pack is
  // an error at load. $OPHOST_ISOLATE_PACKS (comma-separated, set by an administrator) adds to this list. Both
  // empty (the default): every pack runs in the host's process, at no cost.
  std::vector<std::string> isolate_packs;
  // Pass names not to run even when the level enables them (e.g. "constant-folding"); an unknown name is an
  // error at load.
  std::vector<std::string> disabled_passes;
};

// Per-op-type totals of a profile. `implementations`: the distinct kernel implementations of the nodes of this
// type (see KernelInfo), comma-separated; empty when no pack reports one.
struct OpProfile {
  std::string op_type;
  int64_t calls = 0;
  double total_us = 0;
  std::string implementations;
};

// Which kernel serves one node: the op, its pack and device, and the implementation the kernel reports
// (oph_op_def.kernel_impl, ABI 1.1; e.g. "oneDNN jit_dw:avx2"). `implementation` is empty when the pack does not
// say, or when the kernel chooses at its first run (shapes known only then): ask again after a run.
struct KernelInfo {
  std::string node;
  std::string op;       // "domain::op_type" ("" domain shown as the op type alone)
  std::string pack;
  std::string device;
  std::string implementation;
  bool reference = false;  // a reference/fallback implementation (slow): the session warns at load
};

// What a run's node observer (Session::run with a NodeObserver) is given after one node of the main graph has
// computed: the node as it runs after optimisation (a fused node appears as the fused op; device boundary Copy
// nodes appear too) and host-memory copies of its outputs. Only valid during the observer call: keep what you need
// (copying a Tensor out of it is cheap and shares a buffer that belongs to nothing else: not to the run, whose
// buffers are reused by later nodes and runs).
struct NodeOutputs {
  size_t index = 0;    // position in execution order (Session::kernels() lists the nodes in that order)
  std::string node;    // the node's name
  std::string op;      // "domain::op_type" ("" domain shown as the op type alone), as in KernelInfo
  std::string pack;    // the pack whose kernel ran it ("ophost (host)": If/Loop/Scan, Copy), as in KernelInfo
  std::string device;  // where it ran
  // Copies of the node's outputs in host memory, named by value, in the node's output order (an optional output
  // the node does not produce is left out).
  std::vector<NamedTensor> outputs;
  // "<value name>: <reason>" for each output not copied: on another device than the CPU, a dtype without a host
  // copy (string), not allocated, or kept channel-blocked by the nchwc-layout pass (bytes not in NCHW order;
  // SessionOptions::disabled_passes {"nchwc-layout"} shows them, as dump_dir does).
  std::vector<std::string> skipped;
};

// Called after each node of a run (Session::run(inputs, observer)); see NodeOutputs. An exception it throws fails
// the run: an ophost::Error as it is, another std::exception (or anything else) as Error(kAborted) naming the
// node.
using NodeObserver = std::function<void(const NodeOutputs&)>;

class Session;

// The file name (without ".npy") of value `name` in a dump (SessionOptions::dump_dir): characters other than
// [A-Za-z0-9._-] as '_'; a name longer than 180 characters keeps its first 160 and gets "_" and the 16 hex digits
// of its FNV-1a 64 hash (file names are limited to 255 bytes). `ophost diff` finds values by it;
// tools/dev/expose_all_values.py renames a peer's values the same way.
OPHOST_API std::string dump_file_stem(const std::string& name);

// Sets the thread count of the process-wide intra-op pool (what RuntimeOptions::intra_op_threads does; <= 0:
// hardware concurrency). Call before sessions run: `ophost pack check` uses 1, so its forked children need no
// worker threads.
OPHOST_API void set_intra_op_threads(int threads);

// One graph pass SessionOptions::opt_level runs: its name (for disabled_passes), the lowest level that runs it
// and one line on what it rewrites. graph_passes() lists every pass in the order sessions run them.
struct GraphPassInfo {
  std::string name;
  int level = 0;
  std::string summary;
};
OPHOST_API std::vector<GraphPassInfo> graph_passes();

class OPHOST_API Runtime {
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
  // Same, from the bytes of an ONNX file in memory. `display_name` starts every error message; external data is
  // rejected (there is no model folder).
  std::unique_ptr<Session> load_from_bytes(std::span<const std::byte> model, const SessionOptions& options = {},
                                           const std::string& display_name = "<memory>");

  struct Impl;
 private:
  std::unique_ptr<Impl> impl_;
};

class OPHOST_API Session {
 public:
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // The graph inputs a run must be given (valid while the session lives).
  const std::vector<ValueInfo>& inputs() const noexcept;
  const std::vector<ValueInfo>& outputs() const noexcept;
  // Overridable initializers (ONNX IR >= 4: an initializer the main graph also lists as an input, ONNX Runtime's
  // get_overridable_initializers): a run may feed them by name, else the model's value is used. They are graph
  // inputs, not constants, so no optimisation folds them. Valid while the session lives.
  const std::vector<ValueInfo>& overridable_initializers() const noexcept;

  // Runs the model. Every input of inputs() must be given exactly once, an overridable initializer at most once;
  // outputs are returned in graph order.
  std::vector<NamedTensor> run(const std::vector<NamedTensor>& inputs);
  // Same, writing into `outputs`: tensors already there with the right dtype and shape are reused (a steady
  // state of static shapes then allocates nothing); others are replaced. Safe to call from several threads.
  void run(const std::vector<NamedTensor>& inputs, std::vector<NamedTensor>& outputs);
  // Same as run(inputs), calling `observer` after every node of the main graph has computed (what
  // SessionOptions::dump_dir writes, in memory): after optimisation, so fused nodes appear as what runs; nodes
  // inside If/Loop/Scan bodies are not observed (the If/Loop/Scan node's own outputs are). The observer runs on
  // the thread that ran the node (the caller's, or an inter-op worker in parallel execution mode, where nodes may
  // complete out of index order); calls are never concurrent. It must not run this session again. Each call copies
  // the node's outputs, so an observed run is slower; an empty observer is a plain run, and a plain run pays
  // nothing for this. An exception from the observer stops the run (no later node starts, no later call is made)
  // and propagates (see NodeObserver).
  std::vector<NamedTensor> run(const std::vector<NamedTensor>& inputs, const NodeObserver& observer);

  MemoryStats memory_stats() const;
  MemoryPlanReport memory_plan() const;
  // The static plan for these graph-input shapes (in input order), computed without running.
  MemoryPlanReport memory_plan(const std::vector<std::vector<int64_t>>& input_shapes) const;
  // Profiling (SessionOptions::profile): writes the recorded events as Chrome-trace JSON (fields as ONNX
  // Runtime writes them: cat, name "<node>_kernel_time", ph, ts, dur, args.op_name, args.provider,
  // args.input_type_shape, args.output_type_shape) and returns per-op-type totals, largest first.
  std::vector<OpProfile> write_profile(const std::filesystem::path& file) const;

  // Placement: nodes per device (Copy nodes excluded) and the number of Copy nodes inserted at device
  // boundaries (constants uploaded at load are not copies).
  std::map<std::string, size_t> nodes_per_device() const;
  size_t copy_count() const noexcept;
  // One entry per node (Copy nodes included), in execution order. Not to be called while a run is in progress.
  std::vector<KernelInfo> kernels() const;

  // Number of nodes that run (Constant nodes folded at load excluded).
  size_t node_count() const noexcept;

  struct Impl;
  explicit Session(std::unique_ptr<Impl> impl);
 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace ophost
