/* Compiles the SDK's C header as strict C99 (with -Wall -Wextra -pedantic -Werror) and uses every macro. */
#include <ophost/ophost_plugin.h>

static oph_status* entry_impl(const oph_host_info* host, const oph_plugin_info** out_info) {
  (void)host;
  (void)out_info;
  return NULL;
}
OPH_DEFINE_PLUGIN_ENTRY(entry_impl)

int oph_header_c_check(const oph_op_def* op) {
  const oph_io_def* second = OPH_ARRAY_AT(oph_io_def, op->inputs, op->inputs[0].struct_size, 1);
  return OPH_HAS_FIELD(oph_op_def, op, doc) + (second->arity == OPH_ARITY_SINGLE) + OPH_MAX_NDIM + OPH_DIM_UNKNOWN;
}
