/* Freezes the layouts of ABI 1.x (LP64): a reordered, resized or inserted field fails the build, and so does any
 * size change this file does not list: sizeof of every struct and the struct_size constant producers write
 * (OPH_*_STRUCT_SIZE, the end of the last field) are both pinned. Appending a field at the end of a struct (a
 * minor bump) changes only its sizes: add its offset line, update that struct's OPH_FROZEN_SIZE and
 * OPH_FROZEN_STRUCT_SIZE lines, add a line to sdk/ABI.md, and keep every existing offset. */
#include <ophost/ophost_plugin.h>

#include <stddef.h>

#define OPH_FROZEN_OFFSET(type, field, off) _Static_assert(offsetof(type, field) == (off), #type "." #field " moved")
#define OPH_FROZEN_SIZE(type, size) _Static_assert(sizeof(type) == (size), #type " changed size")
#define OPH_FROZEN_STRUCT_SIZE(constant, size) _Static_assert((constant) == (size), #constant " changed")

#if defined(__LP64__)
OPH_FROZEN_SIZE(oph_device, 8);
OPH_FROZEN_SIZE(oph_dtype, 4);
OPH_FROZEN_OFFSET(oph_tensor, data, 0);
OPH_FROZEN_OFFSET(oph_tensor, device, 8);
OPH_FROZEN_OFFSET(oph_tensor, ndim, 16);
OPH_FROZEN_OFFSET(oph_tensor, dtype, 20);
OPH_FROZEN_OFFSET(oph_tensor, shape, 24);
OPH_FROZEN_OFFSET(oph_tensor, strides, 32);
OPH_FROZEN_OFFSET(oph_tensor, byte_offset, 40);
OPH_FROZEN_SIZE(oph_tensor, 48);

OPH_FROZEN_OFFSET(oph_host_services, host, 8);
OPH_FROZEN_OFFSET(oph_host_services, status_create, 16);
OPH_FROZEN_OFFSET(oph_host_services, status_code, 24);
OPH_FROZEN_OFFSET(oph_host_services, status_message, 32);
OPH_FROZEN_OFFSET(oph_host_services, status_destroy, 40);
OPH_FROZEN_OFFSET(oph_host_services, log, 48);
OPH_FROZEN_OFFSET(oph_host_services, parallel_for, 56);
OPH_FROZEN_OFFSET(oph_host_services, scratch_alloc, 64);
OPH_FROZEN_OFFSET(oph_host_services, scratch_free, 72);
OPH_FROZEN_OFFSET(oph_host_services, config_get, 80);
OPH_FROZEN_SIZE(oph_host_services, 88);

OPH_FROZEN_OFFSET(oph_io_def, name, 8);
OPH_FROZEN_OFFSET(oph_io_def, type_var, 16);
OPH_FROZEN_OFFSET(oph_io_def, arity, 24);
OPH_FROZEN_OFFSET(oph_io_def, min_arity, 28);
OPH_FROZEN_OFFSET(oph_io_def, memory, 32);
OPH_FROZEN_SIZE(oph_io_def, 40);

OPH_FROZEN_OFFSET(oph_type_constraint, type_var, 8);
OPH_FROZEN_OFFSET(oph_type_constraint, allowed, 16);
OPH_FROZEN_OFFSET(oph_type_constraint, num_allowed, 24);
OPH_FROZEN_SIZE(oph_type_constraint, 32);

OPH_FROZEN_OFFSET(oph_attr_value, type, 8);
OPH_FROZEN_OFFSET(oph_attr_value, f, 12);
OPH_FROZEN_OFFSET(oph_attr_value, i, 16);
OPH_FROZEN_OFFSET(oph_attr_value, s, 24);
OPH_FROZEN_OFFSET(oph_attr_value, floats, 32);
OPH_FROZEN_OFFSET(oph_attr_value, ints, 40);
OPH_FROZEN_OFFSET(oph_attr_value, strings, 48);
OPH_FROZEN_OFFSET(oph_attr_value, tensor, 56);
OPH_FROZEN_OFFSET(oph_attr_value, count, 64);
OPH_FROZEN_SIZE(oph_attr_value, 72);

OPH_FROZEN_OFFSET(oph_attr_def, name, 8);
OPH_FROZEN_OFFSET(oph_attr_def, type, 16);
OPH_FROZEN_OFFSET(oph_attr_def, required, 20);
OPH_FROZEN_OFFSET(oph_attr_def, default_value, 24);
OPH_FROZEN_SIZE(oph_attr_def, 32); /* default_value is a pointer: oph_attr_value may grow */

OPH_FROZEN_OFFSET(oph_alias_def, input_index, 8);
OPH_FROZEN_OFFSET(oph_alias_def, output_index, 12);
OPH_FROZEN_OFFSET(oph_alias_def, kind, 16);
OPH_FROZEN_SIZE(oph_alias_def, 24);

OPH_FROZEN_OFFSET(oph_value_info, present, 8);
OPH_FROZEN_OFFSET(oph_value_info, dtype, 10);
OPH_FROZEN_OFFSET(oph_value_info, ndim, 16);
OPH_FROZEN_OFFSET(oph_value_info, shape, 24);
OPH_FROZEN_OFFSET(oph_value_info, constant, 152);
OPH_FROZEN_SIZE(oph_value_info, 160);

OPH_FROZEN_OFFSET(oph_infer_context, services, 8);
OPH_FROZEN_OFFSET(oph_infer_context, op, 16);
OPH_FROZEN_OFFSET(oph_infer_context, num_inputs, 24);
OPH_FROZEN_OFFSET(oph_infer_context, inputs, 32);
OPH_FROZEN_OFFSET(oph_infer_context, num_outputs, 40);
OPH_FROZEN_OFFSET(oph_infer_context, outputs, 48);
OPH_FROZEN_OFFSET(oph_infer_context, num_attrs, 56);
OPH_FROZEN_OFFSET(oph_infer_context, attrs, 64);
OPH_FROZEN_OFFSET(oph_infer_context, node_name, 72);
OPH_FROZEN_SIZE(oph_infer_context, 80);

OPH_FROZEN_OFFSET(oph_kernel_create_args, node_name, 72);
OPH_FROZEN_OFFSET(oph_kernel_create_args, device, 80);
OPH_FROZEN_SIZE(oph_kernel_create_args, 88);

OPH_FROZEN_OFFSET(oph_compute_context, services, 8);
OPH_FROZEN_OFFSET(oph_compute_context, num_inputs, 16);
OPH_FROZEN_OFFSET(oph_compute_context, inputs, 24);
OPH_FROZEN_OFFSET(oph_compute_context, num_outputs, 32);
OPH_FROZEN_OFFSET(oph_compute_context, outputs, 40);
OPH_FROZEN_OFFSET(oph_compute_context, stream, 48);
OPH_FROZEN_OFFSET(oph_compute_context, device, 56);
OPH_FROZEN_OFFSET(oph_compute_context, allocate_output, 64);
OPH_FROZEN_OFFSET(oph_compute_context, host_data, 72);
OPH_FROZEN_SIZE(oph_compute_context, 80);

OPH_FROZEN_OFFSET(oph_op_def, domain, 8);
OPH_FROZEN_OFFSET(oph_op_def, name, 16);
OPH_FROZEN_OFFSET(oph_op_def, since_version, 24);
OPH_FROZEN_OFFSET(oph_op_def, end_version, 28);
OPH_FROZEN_OFFSET(oph_op_def, device, 32);
OPH_FROZEN_OFFSET(oph_op_def, inputs, 40);
OPH_FROZEN_OFFSET(oph_op_def, num_inputs, 48);
OPH_FROZEN_OFFSET(oph_op_def, outputs, 56);
OPH_FROZEN_OFFSET(oph_op_def, num_outputs, 64);
OPH_FROZEN_OFFSET(oph_op_def, type_constraints, 72);
OPH_FROZEN_OFFSET(oph_op_def, num_type_constraints, 80);
OPH_FROZEN_OFFSET(oph_op_def, attributes, 88);
OPH_FROZEN_OFFSET(oph_op_def, num_attributes, 96);
OPH_FROZEN_OFFSET(oph_op_def, aliases, 104);
OPH_FROZEN_OFFSET(oph_op_def, num_aliases, 112);
OPH_FROZEN_OFFSET(oph_op_def, flags, 120);
OPH_FROZEN_OFFSET(oph_op_def, user_data, 128);
OPH_FROZEN_OFFSET(oph_op_def, infer, 136);
OPH_FROZEN_OFFSET(oph_op_def, create_kernel, 144);
OPH_FROZEN_OFFSET(oph_op_def, destroy_kernel, 152);
OPH_FROZEN_OFFSET(oph_op_def, compute, 160);
OPH_FROZEN_OFFSET(oph_op_def, doc, 168);
OPH_FROZEN_OFFSET(oph_op_def, kernel_impl, 176); /* 1.1 */
OPH_FROZEN_SIZE(oph_op_def, 184);

OPH_FROZEN_OFFSET(oph_device_properties, name, 8);
OPH_FROZEN_OFFSET(oph_device_properties, total_memory, 40);
OPH_FROZEN_OFFSET(oph_device_properties, compute_major, 56);
OPH_FROZEN_OFFSET(oph_device_properties, multiprocessors, 64);
OPH_FROZEN_OFFSET(oph_device_properties, fp16, 72);
OPH_FROZEN_OFFSET(oph_device_properties, alignment, 80);
OPH_FROZEN_OFFSET(oph_device_properties, max_allocation, 88);
OPH_FROZEN_SIZE(oph_device_properties, 96);

OPH_FROZEN_OFFSET(oph_device_backend_def, device_type, 8);
OPH_FROZEN_OFFSET(oph_device_backend_def, dl_device_type, 16);
OPH_FROZEN_OFFSET(oph_device_backend_def, backend, 24);
OPH_FROZEN_OFFSET(oph_device_backend_def, enumerate, 32);
OPH_FROZEN_OFFSET(oph_device_backend_def, get_properties, 40);
OPH_FROZEN_OFFSET(oph_device_backend_def, alloc, 48);
OPH_FROZEN_OFFSET(oph_device_backend_def, free, 56);
OPH_FROZEN_OFFSET(oph_device_backend_def, copy, 64);
OPH_FROZEN_OFFSET(oph_device_backend_def, stream_create, 72);
OPH_FROZEN_OFFSET(oph_device_backend_def, event_elapsed_ms, 128);
OPH_FROZEN_SIZE(oph_device_backend_def, 136);

OPH_FROZEN_OFFSET(oph_host_info, abi_major, 8);
OPH_FROZEN_OFFSET(oph_host_info, abi_minor, 12);
OPH_FROZEN_OFFSET(oph_host_info, services, 16);
OPH_FROZEN_OFFSET(oph_host_info, host_version, 24);
OPH_FROZEN_OFFSET(oph_host_info, plugin_dir, 32);
OPH_FROZEN_SIZE(oph_host_info, 40);

OPH_FROZEN_OFFSET(oph_plugin_info, abi_major, 8);
OPH_FROZEN_OFFSET(oph_plugin_info, minor_built, 12);
OPH_FROZEN_OFFSET(oph_plugin_info, minor_required, 16);
OPH_FROZEN_OFFSET(oph_plugin_info, name, 24);
OPH_FROZEN_OFFSET(oph_plugin_info, version, 32);
OPH_FROZEN_OFFSET(oph_plugin_info, kind, 40);
OPH_FROZEN_OFFSET(oph_plugin_info, ops, 48);
OPH_FROZEN_OFFSET(oph_plugin_info, num_ops, 56);
OPH_FROZEN_OFFSET(oph_plugin_info, devices, 64);
OPH_FROZEN_OFFSET(oph_plugin_info, num_devices, 72);
OPH_FROZEN_OFFSET(oph_plugin_info, plugin_state, 80);
OPH_FROZEN_OFFSET(oph_plugin_info, release, 88);
OPH_FROZEN_SIZE(oph_plugin_info, 96);

/* What producers write in struct_size: the end of the last field, without tail padding (io and alias defs:
 * 36 and 20, while their sizeof is 40 and 24). */
OPH_FROZEN_STRUCT_SIZE(OPH_HOST_SERVICES_STRUCT_SIZE, 88);
OPH_FROZEN_STRUCT_SIZE(OPH_IO_DEF_STRUCT_SIZE, 36);
OPH_FROZEN_STRUCT_SIZE(OPH_TYPE_CONSTRAINT_STRUCT_SIZE, 32);
OPH_FROZEN_STRUCT_SIZE(OPH_ATTR_VALUE_STRUCT_SIZE, 72);
OPH_FROZEN_STRUCT_SIZE(OPH_ATTR_DEF_STRUCT_SIZE, 32);
OPH_FROZEN_STRUCT_SIZE(OPH_ALIAS_DEF_STRUCT_SIZE, 20);
OPH_FROZEN_STRUCT_SIZE(OPH_VALUE_INFO_STRUCT_SIZE, 160);
OPH_FROZEN_STRUCT_SIZE(OPH_INFER_CONTEXT_STRUCT_SIZE, 80);
OPH_FROZEN_STRUCT_SIZE(OPH_KERNEL_CREATE_ARGS_STRUCT_SIZE, 88);
OPH_FROZEN_STRUCT_SIZE(OPH_COMPUTE_CONTEXT_STRUCT_SIZE, 80);
OPH_FROZEN_STRUCT_SIZE(OPH_OP_DEF_STRUCT_SIZE_1_0, 176);
OPH_FROZEN_STRUCT_SIZE(OPH_OP_DEF_STRUCT_SIZE, 184); /* 1.1: kernel_impl */
OPH_FROZEN_STRUCT_SIZE(OPH_DEVICE_PROPERTIES_STRUCT_SIZE, 96);
OPH_FROZEN_STRUCT_SIZE(OPH_DEVICE_BACKEND_DEF_STRUCT_SIZE, 136);
OPH_FROZEN_STRUCT_SIZE(OPH_HOST_INFO_STRUCT_SIZE, 40);
OPH_FROZEN_STRUCT_SIZE(OPH_PLUGIN_INFO_STRUCT_SIZE, 96);

/* Named enum types exist (fields stay int32_t) and keep their values. */
_Static_assert(sizeof(oph_attr_type) > 0 && OPH_ATTR_STRINGS == 8, "oph_attr_type");
_Static_assert(sizeof(oph_status_code) > 0 && OPH_CODE_UNAUTHENTICATED == 16, "oph_status_code");
_Static_assert(sizeof(oph_alias_kind) > 0 && OPH_ALIAS_MUTATES_INPUT == 2, "oph_alias_kind");

_Static_assert(OPH_ABI_MAJOR == 1, "ABI major changed: freeze a new layout file");
#endif

int oph_abi_layout_frozen(void) { return 1; }
