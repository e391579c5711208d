/* Compiles the SDK's C header as strict C99 (with -Wall -Wextra -pedantic -Werror) and uses every macro. */
#include <ophost/ophost_plugin.h>

static oph_status* entry_impl(const oph_host_info* host, const oph_plugin_info** out_info) {
  (void)host;
  (void)out_info;
  return NULL;
}
OPH_DEFINE_PLUGIN_ENTRY(entry_impl)

int oph_header_c_check(const oph_op_def* op, const oph_host_info* host) {
  const oph_io_def* second = op->inputs[1];
  const oph_attr_def* attr = op->attributes[0];
  oph_attr_type type = (oph_attr_type)attr->type;
  const oph_plugin_info* info = NULL;
  oph_status* refused = NULL;
  int ok = oph_entry_check(host, &info, "header_c", &refused);
  return OPH_HAS_FIELD(oph_op_def, op, doc) + (second->arity == OPH_ARITY_SINGLE) + OPH_MAX_NDIM + OPH_DIM_UNKNOWN +
         (type == OPH_ATTR_INT) + (attr->default_value != NULL) + ok + (refused == NULL) +
         (int)(OPH_STRUCT_SIZE(oph_io_def, memory) == OPH_IO_DEF_STRUCT_SIZE);
}
