// OpRunner and OpKernel (ophost/op_runner.hpp): one op's infer, create_kernel and compute outside any session,
// with the argument structs the executor fills (exec/abi_calls.hpp).
#include <ophost/op_runner.hpp>

#include <ophost/services.hpp>
#include <ophost/tensor.hpp>

#include "exec/abi_calls.hpp"

#include <algorithm>
#include <utility>

namespace ophost {

namespace {

const char* describe(InferredOutput check) {
  switch (check) {
    case InferredOutput::kOk: return "is well formed";
    case InferredOutput::kNotSet: return "was never set (dtype and shape)";
    case InferredOutput::kInvalidDtype: return "has a dtype no ONNX type maps to";
    case InferredOutput::kInvalidRank: return "has a rank outside [-1, OPH_MAX_NDIM]";
    case InferredOutput::kDtypeNotAllowed: return "has a dtype its type variable does not allow";
  }
  return "is malformed";
}

InferredOutput judge(const oph_value_info& v, const IoSchema* formal) {
  if (v.ndim == -2) return InferredOutput::kNotSet;
  if (!is_onnx_dtype(v.dtype)) return InferredOutput::kInvalidDtype;
  if (v.ndim > OPH_MAX_NDIM || v.ndim < -1) return InferredOutput::kInvalidRank;
  if (formal && !formal->allowed.empty() &&
      std::none_of(formal->allowed.begin(), formal->allowed.end(), [&](const oph_dtype& d) {
        return d.code == v.dtype.code && d.bits == v.dtype.bits && d.lanes == v.dtype.lanes;
      })) {
    return InferredOutput::kDtypeNotAllowed;
  }
  return InferredOutput::kOk;
}

}  // namespace

CallStatus take_status(oph_status* status) {
  Code code = Code::kOk;
  std::string message = consume_status(status, &code);
  if (code == Code::kOk && message.empty()) return {};
  if (code == Code::kOk) code = Code::kUnknown;
  if (message.empty()) message = "(the status has no message; code " + std::to_string(static_cast<int>(code)) + ")";
  return {code, std::move(message)};
}

oph_value_info value_info(oph_dtype dtype, std::span<const int64_t> shape) {
  if (shape.size() > OPH_MAX_NDIM) {
    throw Error(Code::kInvalidArgument, "value_info: rank " + std::to_string(shape.size()) + " is above OPH_MAX_NDIM (" +
                                            std::to_string(OPH_MAX_NDIM) + ")");
  }
  oph_value_info v{};
  v.struct_size = OPH_VALUE_INFO_STRUCT_SIZE;
  v.present = true;
  v.dtype = dtype;
  v.ndim = static_cast<int32_t>(shape.size());
  std::copy(shape.begin(), shape.end(), v.shape);
  return v;
}

// ---- OpKernel ----------------------------------------------------------------------------------------------

OpKernel::~OpKernel() { reset(); }

OpKernel::OpKernel(OpKernel&& other) noexcept
    : schema_(std::exchange(other.schema_, nullptr)),
      services_(std::exchange(other.services_, nullptr)),
      state_(std::exchange(other.state_, nullptr)),
      device_(other.device_) {}

OpKernel& OpKernel::operator=(OpKernel&& other) noexcept {
  if (this != &other) {
    reset();
    schema_ = std::exchange(other.schema_, nullptr);
    services_ = std::exchange(other.services_, nullptr);
    state_ = std::exchange(other.state_, nullptr);
    device_ = other.device_;
  }
  return *this;
}

void OpKernel::reset() noexcept {
  if (schema_ && state_ && schema_->calls.destroy_kernel) schema_->calls.destroy_kernel(state_);
  schema_ = nullptr;
  services_ = nullptr;
  state_ = nullptr;
}

CallStatus OpKernel::try_compute(const ComputeArgs& args) const {
  if (!schema_) throw Error(Code::kFailedPrecondition, "OpKernel::compute: the kernel is empty (never created, moved "
                                                       "from or reset); make it with OpRunner::create_kernel");
  const oph_compute_context ctx =
      compute_context(args.inputs, args.outputs, args.stream, device_, args.allocate_output, args.host_data, services_);
  return take_status(schema_->calls.compute(state_, &ctx));
}

void OpKernel::compute(const ComputeArgs& args) const {
  try_compute(args).throw_if_error(schema_->describe() + ": compute failed");
}

// ---- OpRunner ----------------------------------------------------------------------------------------------

OpRunner::OpRunner(const OpSchema& schema, const std::vector<NamedAttr>& attrs) : OpRunner(schema, attrs, Options{}) {}

OpRunner::OpRunner(const OpSchema& schema, const std::vector<NamedAttr>& attrs, Options options)
    : schema_(&schema), options_(std::move(options)), out_formals_(schema.actual_outputs()) {
  if (!options_.services) options_.services = host_services();
  const std::string label = schema.describe();
  attrs_.resize(schema.attrs.size());
  std::vector<bool> given(schema.attrs.size(), false);
  for (const NamedAttr& a : attrs) {
    const size_t i = schema.check_attr(a.name, a.value.type, label);
    attrs_[i] = a.value;
    attrs_[i].struct_size = OPH_ATTR_VALUE_STRUCT_SIZE;
    given[i] = true;
  }
  for (size_t i = 0; i < attrs_.size(); ++i)
    if (!given[i]) attrs_[i] = schema.attr_default(i, label);
  pointers_to(attrs_, attr_ptrs_);
}

InferResult OpRunner::try_infer(std::span<const oph_value_info> inputs) const {
  InferResult r;
  std::vector<oph_value_info> outputs(out_formals_.size());
  for (oph_value_info& v : outputs) {
    v.struct_size = OPH_VALUE_INFO_STRUCT_SIZE;
    v.present = true;
    v.ndim = -2;  // sentinel: infer must set it
  }
  std::vector<const oph_value_info*> in_ptrs;
  std::vector<oph_value_info*> out_ptrs;
  pointers_to(inputs, in_ptrs);
  pointers_to(outputs, out_ptrs);
  const oph_infer_context ctx = infer_context(schema_->calls.def, in_ptrs, out_ptrs, attr_ptrs_,
                                              options_.node_name.c_str(), options_.services);
  r.status = take_status(schema_->calls.infer(&ctx));
  if (r.rejected()) return r;
  r.outputs = std::move(outputs);
  for (size_t o = 0; o < r.outputs.size(); ++o) r.checks.push_back(judge(r.outputs[o], out_formals_[o]));
  return r;
}

std::vector<oph_value_info> OpRunner::infer(std::span<const oph_value_info> inputs) const {
  InferResult r = try_infer(inputs);
  r.status.throw_if_error(schema_->describe() + ": infer rejected the inputs");
  if (const size_t o = r.first_fault(); o < r.checks.size()) {
    throw Error(Code::kInternal, schema_->describe() + ": infer gave output " + std::to_string(o) + " '" +
                                     out_formals_[o]->name + "' that " + describe(r.checks[o]) +
                                     "; this is a bug in the pack");
  }
  return std::move(r.outputs);
}

CallStatus OpRunner::try_create_kernel(std::span<const oph_value_info> inputs, std::span<const oph_value_info> outputs,
                                       oph_device device, OpKernel& kernel) const {
  void* state = nullptr;
  if (schema_->calls.create_kernel) {
    std::vector<const oph_value_info*> in_ptrs, out_ptrs;
    pointers_to(inputs, in_ptrs);
    pointers_to(outputs, out_ptrs);
    const oph_kernel_create_args args = kernel_create_args(schema_->calls.def, in_ptrs, out_ptrs, attr_ptrs_,
                                                           options_.node_name.c_str(), device, options_.services);
    CallStatus s = take_status(schema_->calls.create_kernel(&args, &state));
    if (!s.ok()) return s;  // a state the pack set before failing is its own
  }
  kernel.reset();
  kernel.schema_ = schema_;
  kernel.services_ = options_.services;
  kernel.state_ = state;
  kernel.device_ = device;
  return {};
}

OpKernel OpRunner::create_kernel(std::span<const oph_value_info> inputs, std::span<const oph_value_info> outputs,
                                 oph_device device) const {
  OpKernel kernel;
  try_create_kernel(inputs, outputs, device, kernel).throw_if_error(schema_->describe() + ": create_kernel failed");
  return kernel;
}

}  // namespace ophost
