// The argument structs of a kernel's create_kernel and compute calls, filled the same way by every caller in the
// host (session build, the executor's generic frame, an isolated pack's worker): the struct_size this host
// writes, the process's services unless told otherwise, CPU device 0 unless told otherwise. The arrays are
// vectors (or spans) of pointers, kept alive by the caller for the call.
#pragma once

#include <ophost/ophost_plugin.h>
#include <ophost/services.hpp>


namespace ophost {

template <class Infos, class Attrs>
oph_kernel_create_args kernel_create_args(const oph_op_def* op, const Infos& inputs, const Infos& outputs,
                                          const Attrs& attrs, const char* node_name, oph_device device = {OPH_DL_CPU, 0},
                                          const oph_host_services* services = host_services()) {
  oph_kernel_create_args a{};
  a.struct_size = OPH_KERNEL_CREATE_ARGS_STRUCT_SIZE;
  a.services = services;
  a.op = op;
  a.num_inputs = inputs.size();
  a.inputs = inputs.data();
  a.num_outputs = outputs.size();
  a.outputs = outputs.data();
  a.num_attrs = attrs.size();
  a.attrs = attrs.data();
  a.node_name = node_name;
  a.device = device;
  return a;
}

// A CPU compute call; `allocate_output` serves outputs whose data is NULL, with `host_data` as its context.
template <class Inputs, class Outputs>
oph_compute_context cpu_compute_context(const Inputs& inputs, const Outputs& outputs,
                                        decltype(oph_compute_context::allocate_output) allocate_output, void* host_data,
                                        const oph_host_services* services = host_services()) {
  oph_compute_context c{};
  c.struct_size = OPH_COMPUTE_CONTEXT_STRUCT_SIZE;
  c.services = services;
  c.num_inputs = inputs.size();
  c.inputs = inputs.data();
  c.num_outputs = outputs.size();
  c.outputs = outputs.data();
  c.device = {OPH_DL_CPU, 0};
  c.allocate_output = allocate_output;
  c.host_data = host_data;
  return c;
}

}  // namespace ophost
