// Freezes how many fields each boundary struct has (C++20 aggregate probing; an array member counts once per
// element). tests/sdk/abi_layout.c pins offsets and sizes, but a 4-byte field appended into the tail padding of
// oph_io_def or oph_alias_def changes neither their sizeof nor, unless it is moved, their OPH_*_STRUCT_SIZE:
// this count changes, and the build fails until the constant and abi_layout.c are updated with it.
#include <ophost/ophost_plugin.h>

#include <cstddef>

namespace {

struct any_field {
  template <class T>
  constexpr operator T() const noexcept;  // never called: only probed in requires-expressions
};

template <class T, class... Fields>
constexpr std::size_t field_count() {
  if constexpr (requires { T{Fields{}..., any_field{}}; })
    return field_count<T, Fields..., any_field>();
  else
    return sizeof...(Fields);
}

#define OPH_FROZEN_FIELDS(type, n) static_assert(field_count<type>() == (n), #type " gained or lost a field")

OPH_FROZEN_FIELDS(oph_host_services, 11);
OPH_FROZEN_FIELDS(oph_io_def, 6);
OPH_FROZEN_FIELDS(oph_type_constraint, 4);
OPH_FROZEN_FIELDS(oph_attr_value, 10);
OPH_FROZEN_FIELDS(oph_attr_def, 5);
OPH_FROZEN_FIELDS(oph_alias_def, 4);
OPH_FROZEN_FIELDS(oph_value_info, 5 + OPH_MAX_NDIM);
OPH_FROZEN_FIELDS(oph_infer_context, 10);
OPH_FROZEN_FIELDS(oph_kernel_create_args, 11);
OPH_FROZEN_FIELDS(oph_compute_context, 10);
OPH_FROZEN_FIELDS(oph_op_def, 24);
OPH_FROZEN_FIELDS(oph_device_properties, 16);
OPH_FROZEN_FIELDS(oph_device_backend_def, 17);
OPH_FROZEN_FIELDS(oph_host_info, 6);
OPH_FROZEN_FIELDS(oph_plugin_info, 13);

}  // namespace

int oph_abi_fields_frozen() { return 1; }
