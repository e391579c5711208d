// Debugging hooks of the executor loop (called from RunHooks, run_hooks.hpp; nothing here runs when they are off):
//  - ValueDump: SessionOptions::dump_dir, every value a run produces as .npy plus index.json (ophost run --dump,
//    compared by ophost diff); host_copy, the copy of a value it writes, is also what a run's NodeObserver gets;
//  - kernel checks: SessionOptions::debug_kernels, outputs poisoned before compute and checked after it for
//    elements never written, inputs copied before and compared after (writes into undeclared inputs).
#pragma once

#include "exec/session_impl.hpp"

#include <cstddef>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

namespace ophost {

// One run's dump into a folder: created (with its parents) by the constructor, a .npy per value as nodes finish,
// index.json at the end (or, when the run fails, with "complete": false and what was written so far).
class ValueDump {
 public:
  ValueDump(const Session::Impl& s, std::filesystem::path dir);
  ValueDump(const ValueDump&) = delete;
  ValueDump& operator=(const ValueDump&) = delete;
  // After node ni's compute: its outputs (and the graph inputs it reads, the first time). Thread-safe.
  void node_done(size_t ni, const oph_compute_context& ctx);
  // Writes index.json. Throws Error naming the file when it cannot be written.
  void write_index(bool complete);

 private:
  struct Entry {
    bool present = false;
    std::string file;     // relative to the folder; "" when skipped
    std::string skipped;  // why no file was written
    std::string dtype;
    std::vector<int64_t> shape;
    std::string device;
  };
  void dump_value(int v, const oph_tensor& t);

  const Session::Impl& s_;
  std::filesystem::path dir_;
  std::mutex mutex_;
  std::vector<Entry> entries_;   // per value
  std::vector<std::string> used_files_;
};

// dump_file_stem (a value's file name in a dump) is public: <ophost/runtime.hpp>.

// A host-memory copy of `t`, the tensor of value `v` of session `s` in a running node's call, for the dump and a
// run's node observer: fills `out` and returns "", or leaves `out` alone and returns why there is no copy ("on
// device 'D', not in host memory", "dtype string has no host copy", "not allocated", "kept channel-blocked by the
// nchwc-layout pass ...": such bytes would read as garbage in NCHW order).
std::string host_copy(const Session::Impl& s, int v, const oph_tensor& t, Tensor& out);

// "domain::op" ("Op" alone for the standard domain), the pack ("host" for control flow and copies), and the pass
// that made the node when that can be told from the node ("" otherwise).
std::string node_op_name(const PreparedNode& pn);
std::string node_pack_name(const PreparedNode& pn);
std::string node_created_by(const PreparedNode& pn);

// Kernel debug mode: bytes of the guard zone the static memory plan leaves after every arena buffer
// (Session::Impl::make_plan), filled with 0xA5 before the producing node's compute and checked after it.
inline constexpr size_t kDebugGuardBytes = 1024;

// Kernel debug mode for one node call: before() poisons the outputs (and their guard zones in a planned run) and
// copies the inputs, after() checks all three.
struct KernelCheck {
  std::vector<std::vector<std::byte>> input_copies;  // per input; empty when not checked
  std::vector<char> input_shared;                    // per input: an output of this call shares its bytes
  void before(const Session::Impl& s, const ExecPlan& plan, size_t ni, const oph_compute_context& ctx);
  // Throws Error(kInternal) "debug-kernels: <node label>: ..." listing every finding of this call.
  void after(const Session::Impl& s, const ExecPlan& plan, size_t ni, const oph_compute_context& ctx) const;
};

}  // namespace ophost
