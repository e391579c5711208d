/* acme_c: the same swish op written against the plain C ABI (ophost_plugin.h only, C99).
 *
 * acme_c::swish   y = x * sigmoid(beta * x)   (float32, CPU; attribute beta, float, default 1.0)
 */
#include <ophost/ophost_plugin.h>

#include <math.h>
#include <string.h>

static const oph_host_services* g_services; /* set at entry; valid until release */

/* Output 0 has the dtype and shape of input 0. */
static oph_status* swish_infer(const oph_infer_context* ctx) {
  ctx->outputs[0]->dtype = ctx->inputs[0]->dtype;
  ctx->outputs[0]->ndim = ctx->inputs[0]->ndim;
  memcpy(ctx->outputs[0]->shape, ctx->inputs[0]->shape, sizeof ctx->inputs[0]->shape);
  return NULL;
}

/* The state is the resolved beta (attributes arrive in schema order, defaults filled in). */
static oph_status* swish_create(const oph_kernel_create_args* args, void** out_state) {
  float beta = args->attrs[0]->f;
  *out_state = NULL;
  memcpy(out_state, &beta, sizeof beta); /* a float fits in the pointer: no allocation, nothing to destroy */
  return NULL;
}

static oph_status* swish_compute(void* state, const oph_compute_context* ctx) {
  const oph_tensor* x = ctx->inputs[0];
  oph_tensor* y = ctx->outputs[0];
  const float* in = (const float*)((const char*)x->data + x->byte_offset);
  float* out = (float*)((char*)y->data + y->byte_offset);
  float beta;
  size_t n = 1, i;
  int32_t d;
  memcpy(&beta, &state, sizeof beta);
  for (d = 0; d < x->ndim; ++d) n *= (size_t)x->shape[d];
  for (i = 0; i < n; ++i) out[i] = in[i] / (1.0f + expf(-beta * in[i])); /* in place is fine: read, then write */
  return NULL;
}

static const oph_dtype k_f32 = {OPH_DTYPE_FLOAT, 32, 1};
/* Every struct_size is the struct's OPH_*_STRUCT_SIZE (the end of its last field, never sizeof), and every
 * table is an array of pointers. */
static const oph_io_def k_x = {OPH_IO_DEF_STRUCT_SIZE, "X", "T", OPH_ARITY_SINGLE, 0, OPH_MEMORY_DEVICE};
static const oph_io_def k_y = {OPH_IO_DEF_STRUCT_SIZE, "Y", "T", OPH_ARITY_SINGLE, 0, OPH_MEMORY_DEVICE};
static const oph_io_def* const k_inputs[1] = {&k_x};
static const oph_io_def* const k_outputs[1] = {&k_y};
static const oph_type_constraint k_t = {OPH_TYPE_CONSTRAINT_STRUCT_SIZE, "T", &k_f32, 1};
static const oph_type_constraint* const k_types[1] = {&k_t};
static const oph_attr_value k_beta_default = {OPH_ATTR_VALUE_STRUCT_SIZE, OPH_ATTR_FLOAT, 1.0f, 0, NULL, NULL, NULL,
                                              NULL, NULL, 0};
static const oph_attr_def k_beta = {OPH_ATTR_DEF_STRUCT_SIZE, "beta", OPH_ATTR_FLOAT, false, &k_beta_default};
static const oph_attr_def* const k_attrs[1] = {&k_beta};
static const oph_alias_def k_inplace = {OPH_ALIAS_DEF_STRUCT_SIZE, 0, 0, OPH_ALIAS_MAY_INPLACE};
static const oph_alias_def* const k_aliases[1] = {&k_inplace};

static const oph_op_def k_swish = {
    OPH_OP_DEF_STRUCT_SIZE, "acme_c", "swish", 1, OPH_OPSET_MAX, "cpu",
    k_inputs, 1, k_outputs, 1, k_types, 1, k_attrs, 1, k_aliases, 1,
    0 /* flags */, NULL /* user_data */,
    swish_infer, swish_create, NULL /* destroy_kernel: nothing allocated */, swish_compute,
    "y = x * sigmoid(beta * x)", NULL /* kernel_impl: unknown */};
static const oph_op_def* const k_ops[1] = {&k_swish};

static oph_plugin_info k_info;

static oph_status* entry(const oph_host_info* host, const oph_plugin_info** out_info) {
  oph_status* refused;
  if (!oph_entry_check(host, out_info, OPH_PLUGIN_NAME, &refused)) return refused; /* another major, ... */
  g_services = host->services;
  k_info.struct_size = OPH_PLUGIN_INFO_STRUCT_SIZE;
  k_info.abi_major = OPH_ABI_MAJOR;
  k_info.minor_built = OPH_ABI_MINOR;
  k_info.minor_required = 0; /* uses nothing newer than ABI 1.0 */
  k_info.name = OPH_PLUGIN_NAME;       /* from ophost_add_pack(NAME ...) */
  k_info.version = OPH_PLUGIN_VERSION; /* from ophost_add_pack(VERSION ...) */
  k_info.kind = OPH_PLUGIN_KIND_OPERATOR_PACK;
  k_info.ops = k_ops;
  k_info.num_ops = 1;
  k_info.devices = NULL;
  k_info.num_devices = 0;
  k_info.plugin_state = NULL;
  k_info.release = NULL;
  *out_info = &k_info;
  return NULL;
}

OPH_DEFINE_PLUGIN_ENTRY(entry)
