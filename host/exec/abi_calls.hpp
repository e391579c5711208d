// The argument structs of an op's infer, create_kernel and compute calls, filled the same way by every caller in
// the host (shape inference, session build, the executor's generic frame, an isolated pack's worker, the op
// runner): the struct_size this host writes, the process's services unless told otherwise, CPU device 0 unless
// told otherwise. The arrays are vectors (or spans) of pointers, kept alive by the caller for the call.
#pragma once

#include <ophost/ophost_plugin.h>
#include <ophost/services.hpp>

#include <vector>

namespace ophost {

// The C view of `items` handed to a pack: an array of pointers to its elements, kept in `ptrs`.
template <class Items, class P>
P* const* pointers_to(Items& items, std::vector<P*>& ptrs) {
  ptrs.clear();
  for (auto& item : items) ptrs.push_back(&item);
  return ptrs.data();
}

// The fields infer's context and create_kernel's arguments share (the two structs name them alike).
template <class Args, class Inputs, class Outputs, class Attrs>
Args op_call_args(size_t struct_size, const oph_op_def* op, const Inputs& inputs, const Outputs& outputs,
                  const Attrs& attrs, const char* node_name, const oph_host_services* services) {
  Args a{};
  a.struct_size = struct_size;
  a.services = services;
  a.op = op;
  a.num_inputs = inputs.size();
  a.inputs = inputs.data();
  a.num_outputs = outputs.size();
  a.outputs = outputs.data();
  a.num_attrs = attrs.size();
  a.attrs = attrs.data();
  a.node_name = node_name;
  return a;
}

template <class Inputs, class Outputs, class Attrs>
oph_infer_context infer_context(const oph_op_def* op, const Inputs& inputs, const Outputs& outputs,
                                const Attrs& attrs, const char* node_name,
                                const oph_host_services* services = host_services()) {
  return op_call_args<oph_infer_context>(OPH_INFER_CONTEXT_STRUCT_SIZE, op, inputs, outputs, attrs, node_name,
                                         services);
}

template <class Infos, class Attrs>
oph_kernel_create_args kernel_create_args(const oph_op_def* op, const Infos& inputs, const Infos& outputs,
                                          const Attrs& attrs, const char* node_name, oph_device device = {OPH_DL_CPU, 0},
                                          const oph_host_services* services = host_services()) {
  auto a = op_call_args<oph_kernel_create_args>(OPH_KERNEL_CREATE_ARGS_STRUCT_SIZE, op, inputs, outputs, attrs,
                                                node_name, services);
  a.device = device;
  return a;
}

// A compute call on `device` (`stream`: the backend's, NULL on CPU); `allocate_output` serves outputs whose data
// is NULL, with `host_data` as its context.
template <class Inputs, class Outputs>
oph_compute_context compute_context(const Inputs& inputs, const Outputs& outputs, void* stream, oph_device device,
                                    decltype(oph_compute_context::allocate_output) allocate_output, void* host_data,
                                    const oph_host_services* services = host_services()) {
  oph_compute_context c{};
  c.struct_size = OPH_COMPUTE_CONTEXT_STRUCT_SIZE;
  c.services = services;
  c.num_inputs = inputs.size();
  c.inputs = inputs.data();
  c.num_outputs = outputs.size();
  c.outputs = outputs.data();
  c.stream = stream;
  c.device = device;
  c.allocate_output = allocate_output;
  c.host_data = host_data;
  return c;
}

// A CPU compute call.
template <class Inputs, class Outputs>
oph_compute_context cpu_compute_context(const Inputs& inputs, const Outputs& outputs,
                                        decltype(oph_compute_context::allocate_output) allocate_output, void* host_data,
                                        const oph_host_services* services = host_services()) {
  return compute_context(inputs, outputs, nullptr, {OPH_DL_CPU, 0}, allocate_output, host_data, services);
}

}  // namespace ophost
