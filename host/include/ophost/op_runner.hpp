// One op run outside any session, the way the executor runs one node: attribute values resolved against the
// op's schema (defaults, then the caller's values), infer, create_kernel and compute through the pack's C ABI,
// the kernel state destroyed with its owner. `ophost pack check` and the backend test host
// (tests/backends/mini_host.hpp) run ops through it; a pack author's own harness can too. Like PJRT's and
// IREE's C++ wrappers it holds no tensors: the caller owns every buffer and passes views.
//
//   const ophost::OpSchema relu = ophost::OpSchema::from_def(*def);      // def: from a loaded pack
//   ophost::OpRunner runner(relu, {{"alpha", alpha_value}});              // unknown name / wrong type: Error
//   std::vector<oph_value_info> in = {ophost::value_info(f32, shape)};
//   std::vector<oph_value_info> out = runner.infer(in);                   // refused or malformed: Error
//   ophost::OpKernel kernel = runner.create_kernel(in, out);              // destroy_kernel in ~OpKernel
//   kernel.compute({.inputs = in_tensors, .outputs = out_tensors});       // oph_tensor pointers
//
// Every call comes in two forms: the plain one throws ophost::Error naming the op; the try_ one returns what the
// pack said (CallStatus, InferResult), for a caller that goes on after a failure (pack check reports it).
//
// Lifetimes: the schema (and the pack it came from) must outlive the runner and every kernel made by it. The
// data an attribute value points to (strings, lists, tensor) must stay valid while the runner lives (the pack
// sees it during infer and create_kernel only). The services table must outlive the runner and its kernels.
// Everything passed to a call (value infos, tensors, the allocate_output context) is read during that call only.
// A runner is immutable after construction: its calls may run on several threads when the pack's infer and
// create_kernel are reentrant (the ABI requires it of infer); a kernel computes on one thread at a time unless
// the op allows more (it does unless its schema says serialize_compute).
#pragma once

#include <ophost/error.hpp>
#include <ophost/export.hpp>
#include <ophost/op_schema.hpp>
#include <ophost/ophost_plugin.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ophost {

// What one call into the pack returned: OK, or its status code and message.
struct CallStatus {
  Code code = Code::kOk;
  std::string message;  // the pack's message; "(the status has no message; code N)" when it gave none

  bool ok() const noexcept { return code == Code::kOk; }
  // Throws Error(code, context + ": " + message) unless ok().
  void throw_if_error(std::string_view context) const {
    if (!ok()) throw Error(code, std::string(context) + ": " + message);
  }
};

// An attribute value given by name. The value's pointers (s, floats, ints, strings, tensor) are the caller's:
// they must stay valid while the runner lives.
struct NamedAttr {
  std::string name;
  oph_attr_value value{};  // type: one of OPH_ATTR_*, the attribute's declared type
};

// What infer made of one output.
enum class InferredOutput {
  kOk,
  kNotSet,           // ndim left at the host's sentinel (-2): infer never set the output
  kInvalidDtype,     // a dtype no ONNX type maps to (is_onnx_dtype)
  kInvalidRank,      // ndim above OPH_MAX_NDIM or below -1
  kDtypeNotAllowed,  // a dtype the output's type variable does not allow
};

// The outcome of infer: the op refused the inputs (status not OK), or it answered (outputs, each judged).
struct InferResult {
  CallStatus status;                    // not OK: infer rejected the inputs; outputs and checks are then empty
  std::vector<oph_value_info> outputs;  // as infer left them, one per output of the runner
  std::vector<InferredOutput> checks;   // one per output

  bool rejected() const noexcept { return !status.ok(); }
  // The first output whose check is not kOk, or checks.size().
  size_t first_fault() const noexcept {
    size_t o = 0;
    while (o < checks.size() && checks[o] == InferredOutput::kOk) ++o;
    return o;
  }
  // The answer is well formed: every check kOk (false when rejected).
  bool ok() const noexcept { return !rejected() && first_fault() == checks.size(); }
};

// What compute is called with. Every pointer is read during the call only.
struct ComputeArgs {
  std::span<const oph_tensor* const> inputs;  // one per input; NULL: an absent optional input
  std::span<oph_tensor* const> outputs;       // one per output; NULL: not requested; data NULL: the kernel calls
                                              // allocate_output (the shape was unknown to infer)
  void* stream = nullptr;                     // the backend's stream; NULL on CPU
  // Serves allocate_output (NULL: compute fails if it needs it); reads its context from ctx->host_data.
  decltype(oph_compute_context::allocate_output) allocate_output = nullptr;
  void* host_data = nullptr;
};

// A kernel's state: what create_kernel made, destroyed (destroy_kernel) with this object. Move-only. An empty
// kernel (default-constructed, moved from, reset) holds nothing and cannot compute.
class OPHOST_API OpKernel {
 public:
  OpKernel() = default;
  ~OpKernel();
  OpKernel(OpKernel&& other) noexcept;
  OpKernel& operator=(OpKernel&& other) noexcept;
  OpKernel(const OpKernel&) = delete;
  OpKernel& operator=(const OpKernel&) = delete;

  // Made by create_kernel (its state may still be NULL: the op has no create_kernel, or made none).
  bool created() const noexcept { return schema_ != nullptr; }
  void* state() const noexcept { return state_; }
  oph_device device() const noexcept { return device_; }
  // Destroys the state now (destroy_kernel) and leaves the kernel empty.
  void reset() noexcept;

  // Runs compute on the device the kernel was created for. try_compute returns the pack's status; compute
  // throws Error(its code, "<op>: compute failed: <message>"). Both throw Error(kFailedPrecondition) on an
  // empty kernel.
  CallStatus try_compute(const ComputeArgs& args) const;
  void compute(const ComputeArgs& args) const;

 private:
  friend class OpRunner;
  const OpSchema* schema_ = nullptr;
  const oph_host_services* services_ = nullptr;
  void* state_ = nullptr;
  oph_device device_{OPH_DL_CPU, 0};
};

class OPHOST_API OpRunner {
 public:
  struct Options {
    // The table the pack's calls receive; NULL: host_services(). Must outlive the runner and its kernels.
    const oph_host_services* services = nullptr;
    // What infer and create_kernel see as the node's name.
    std::string node_name = "op_runner";
  };

  // Resolves the attribute values in schema order: each given one checked against the schema (throws
  // Error(kInvalidArgument) "<op>: unknown attribute 'x'; the op accepts: ..." or "<op>: attribute 'x' is int
  // but the op declares it float"), the rest from their defaults (throws "<op>: required attribute 'x' (float)
  // is missing" for a required one). <op> is schema.describe().
  explicit OpRunner(const OpSchema& schema, const std::vector<NamedAttr>& attrs = {});
  OpRunner(const OpSchema& schema, const std::vector<NamedAttr>& attrs, Options options);
  OpRunner(OpRunner&&) noexcept = default;
  OpRunner(const OpRunner&) = delete;
  OpRunner& operator=(const OpRunner&) = delete;
  OpRunner& operator=(OpRunner&&) = delete;

  const OpSchema& schema() const noexcept { return *schema_; }
  // The resolved values, in schema order (what infer and create_kernel receive).
  std::span<const oph_attr_value> attrs() const noexcept { return attrs_; }
  // How many outputs infer fills: one per actual output of the schema (OpSchema::actual_outputs).
  size_t num_outputs() const noexcept { return out_formals_.size(); }

  // infer on these input infos (one per input, present set). try_infer returns what the pack did; infer throws
  // Error(the pack's code, "<op>: infer rejected the inputs: <message>") or Error(kInternal, "<op>: infer gave
  // output 0 'Y' ...") for a malformed answer, and returns the output infos.
  InferResult try_infer(std::span<const oph_value_info> inputs) const;
  std::vector<oph_value_info> infer(std::span<const oph_value_info> inputs) const;

  // create_kernel for one infer's input and output infos, on `device` (compute runs there too). create_kernel
  // throws Error(the pack's code, "<op>: create_kernel failed: <message>"); try_create_kernel returns the
  // pack's status and sets `kernel` only when it is OK. Without a create_kernel in the op the state is NULL.
  OpKernel create_kernel(std::span<const oph_value_info> inputs, std::span<const oph_value_info> outputs,
                         oph_device device = {OPH_DL_CPU, 0}) const;
  CallStatus try_create_kernel(std::span<const oph_value_info> inputs, std::span<const oph_value_info> outputs,
                               oph_device device, OpKernel& kernel) const;

 private:
  const OpSchema* schema_;
  Options options_;
  std::vector<oph_attr_value> attrs_;
  std::vector<const oph_attr_value*> attr_ptrs_;  // into attrs_
  std::vector<const IoSchema*> out_formals_;     // into the schema
};

// The info of a present value of `dtype` and `shape` (each dim >= 0, or OPH_DIM_UNKNOWN), for infer and
// create_kernel. Throws Error(kInvalidArgument) for a rank above OPH_MAX_NDIM.
OPHOST_API oph_value_info value_info(oph_dtype dtype, std::span<const int64_t> shape);

// Takes ownership of `status` (may be NULL): OK, or its code and message. A status with code OK is OK when it
// has no message (status_create never makes one), else an error with code kUnknown.
OPHOST_API CallStatus take_status(oph_status* status);

}  // namespace ophost
