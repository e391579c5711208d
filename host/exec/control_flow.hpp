// Control flow: If, Loop and Scan as ops the host runs itself. Each body (a subgraph attribute) is a session of
// its own, built from the body's Model with the enclosing session's packs and options, and run through the
// same Session::Impl::run as any model. Values of enclosing scopes that a body reads are the node's implicit
// inputs (Node::implicit_inputs), bound to the body's extra graph inputs by position.
//
// Lifetime: a ControlFlowKernel belongs to its session (Session::Impl::control_kernels). Bodies are built at
// the first infer() (the session's build always runs one), while the registry the session was built with is
// alive; seal() is called when the build ends, after which a body that was never built is an error.
#pragma once

#include "exec/session_impl.hpp"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ophost {

class OpRegistry;

// True for the standard-domain If, Loop and Scan.
bool is_control_flow(const Node& node);

// The registry-like entry of a host control-flow op (pack "ophost (host)"), for labels and profiles.
const OpEntry& control_flow_entry(const std::string& op_type);

class ControlFlowKernel {
 public:
  struct Env {
    std::shared_ptr<const PluginSet> plugins;
    const OpRegistry* registry = nullptr;  // valid until seal()
    SessionOptions options;
    std::filesystem::path file;  // the model file (bodies' messages name it)
    ModelLimits limits;
  };
  // Checks the node's attributes and arity against the op's definition at `opset`; throws Error naming `label`.
  ControlFlowKernel(const Node& node, int64_t opset, Env env, std::string label);
  ~ControlFlowKernel();
  ControlFlowKernel(const ControlFlowKernel&) = delete;
  ControlFlowKernel& operator=(const ControlFlowKernel&) = delete;

  // Output metadata from the metadata of every input (formal and implicit; nullptr for an absent optional
  // input). Builds the bodies on the first call.
  std::vector<ValueMeta> infer(const std::vector<const ValueMeta*>& inputs) const;
  // Runs the node (the C ABI compute of the host op). Never throws.
  oph_status* compute(const oph_compute_context* ctx) const noexcept;
  // "then_branch: 28 nodes, else_branch: 1 node"; *reference is set when a body node runs reference code.
  const char* describe(bool* reference) const;
  void seal() noexcept;

  struct Body;

 private:
  void build_bodies(const std::vector<const ValueMeta*>& inputs) const;
  void run_if(const oph_compute_context* ctx) const;
  void run_loop(const oph_compute_context* ctx) const;
  void run_scan(const oph_compute_context* ctx) const;
  std::vector<ValueMeta> infer_if(const std::vector<const ValueMeta*>& inputs) const;
  std::vector<ValueMeta> infer_loop(const std::vector<const ValueMeta*>& inputs) const;
  std::vector<ValueMeta> infer_scan(const std::vector<const ValueMeta*>& inputs) const;

  std::string op_type_;
  int64_t opset_;
  std::string label_;
  size_t formal_inputs_;
  size_t num_outputs_;
  mutable Env env_;
  mutable std::mutex build_mutex_;
  mutable std::vector<std::unique_ptr<Body>> bodies_;  // If: then, else; Loop/Scan: body
  // Scan attributes (normalised): number of scan inputs, per-scan-input axis and direction, per-scan-output
  // axis and direction.
  int64_t num_scan_inputs_ = 0;
  std::vector<int64_t> scan_in_axes_, scan_in_reverse_, scan_out_axes_, scan_out_reverse_;
  mutable std::string description_;
};

}  // namespace ophost
