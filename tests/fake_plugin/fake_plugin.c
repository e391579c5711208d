/*
 * One fake plugin source, compiled into several variants (see CMakeLists.txt) to exercise the loader.
 * Uses only the C ABI header. Variant switches:
 *   FAKE_NO_ENTRY            no oph_plugin_entry_v1 symbol
 *   FAKE_ENTRY_ERROR         the entry returns an error status
 *   FAKE_EVIL_CONSTRUCTOR    a library constructor appends "evil" to $FAKE_EVIL_MARKER when loaded (a swapped-in
 *                            library: the loader must never run it)
 *   FAKE_ABI_MAJOR=n         plugin_info.abi_major = n
 *   FAKE_MINOR_REQUIRED_BUMP plugin_info.minor_required = OPH_ABI_MINOR + 1
 *   FAKE_NULL_COMPUTE        the op's compute is NULL
 *   FAKE_BAD_TYPE_VAR        an input names a type variable no constraint defines
 *   FAKE_USE_HELPER          calls into libfake_helper.so (a dependency not on the loader's path)
 *   FAKE_WIDE_STRUCTS        boundary structs larger than this host's (as a newer minor would write them)
 *   FAKE_MIN_STRUCTS         an older producer: its op def ends at the last 1.0 field (`doc`, before 1.1's
 *                            kernel_impl); io and alias defs end at their last field, below the host's sizeof
 *                            (like every producer's); compute copies x
 *   FAKE_MISBEHAVE           with fake_misbehave.cpp: create_kernel / compute come from that C++ file, which
 *                            misbehaves as one of its FAKE_MB_* switches says (see there)
 *   FAKE_DEVICE              a device backend ("fakedev") instead of an operator pack
 *   FAKE_DEVICE_INACTIVE     with FAKE_DEVICE: enumerate reports no device
 * Environment: FAKE_PLUGIN_RELEASE_LOG=<file> appends "release <name>\n" to <file> when release is called.
 */
#include <ophost/ophost_plugin.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef OPH_PLUGIN_NAME
#define OPH_PLUGIN_NAME "fakegood"
#endif
#ifndef OPH_PLUGIN_VERSION
#define OPH_PLUGIN_VERSION "1.0.0"
#endif
#ifndef FAKE_ABI_MAJOR
#define FAKE_ABI_MAJOR OPH_ABI_MAJOR
#endif

#ifdef FAKE_USE_HELPER
extern int fake_helper_value(void);
#endif

static const oph_host_services* g_services;

/* The host is the producer of what it hands an op: each struct_size must be exactly the struct's
 * OPH_*_STRUCT_SIZE (this plugin is built with the host's header), never sizeof with its tail padding. */
static oph_status* host_struct_size_error(const oph_host_services* s, const char* what) {
  char msg[128] = "fake: the host wrote a wrong struct_size in ";
  strncat(msg, what, sizeof msg - strlen(msg) - 1);
  return s->status_create(OPH_CODE_INTERNAL, msg);
}
#define FAKE_CHECK_SIZE(s, what, got, want) \
  if ((got) != (want)) return host_struct_size_error((s), (what))

static oph_status* echo_infer(const oph_infer_context* ctx) {
  size_t i;
  FAKE_CHECK_SIZE(ctx->services, "oph_infer_context", ctx->struct_size, OPH_INFER_CONTEXT_STRUCT_SIZE);
  FAKE_CHECK_SIZE(ctx->services, "oph_host_services", ctx->services->struct_size, OPH_HOST_SERVICES_STRUCT_SIZE);
  for (i = 0; i < ctx->num_inputs; ++i)
    FAKE_CHECK_SIZE(ctx->services, "an input's oph_value_info", ctx->inputs[i]->struct_size, OPH_VALUE_INFO_STRUCT_SIZE);
  for (i = 0; i < ctx->num_outputs; ++i)
    FAKE_CHECK_SIZE(ctx->services, "an output's oph_value_info", ctx->outputs[i]->struct_size, OPH_VALUE_INFO_STRUCT_SIZE);
  for (i = 0; i < ctx->num_attrs; ++i)
    FAKE_CHECK_SIZE(ctx->services, "an oph_attr_value", ctx->attrs[i]->struct_size, OPH_ATTR_VALUE_STRUCT_SIZE);
  if (ctx->num_inputs < 1 || ctx->num_outputs < 1) {
    return ctx->services->status_create(OPH_CODE_INVALID_ARGUMENT, "echo needs one input and one output");
  }
  ctx->outputs[0]->dtype = ctx->inputs[0]->dtype;
  ctx->outputs[0]->ndim = ctx->inputs[0]->ndim;
  for (i = 0; i < OPH_MAX_NDIM; ++i) ctx->outputs[0]->shape[i] = ctx->inputs[0]->shape[i];
  return NULL;
}

static oph_status* echo_compute(void* state, const oph_compute_context* ctx) {
  (void)state;
  FAKE_CHECK_SIZE(ctx->services, "oph_compute_context", ctx->struct_size, OPH_COMPUTE_CONTEXT_STRUCT_SIZE);
#ifdef FAKE_USE_HELPER
  if (fake_helper_value() != 42) return ctx->services->status_create(OPH_CODE_INTERNAL, "helper");
#endif
#ifdef FAKE_MIN_STRUCTS
  if (ctx->num_outputs >= 1 && ctx->outputs[0] && ctx->inputs[0]) {
    const oph_tensor* x = ctx->inputs[0];
    size_t n = 4, d;
    for (d = 0; d < (size_t)x->ndim; ++d) n *= (size_t)x->shape[d];
    memmove((char*)ctx->outputs[0]->data + ctx->outputs[0]->byte_offset, (const char*)x->data + x->byte_offset, n);
  }
#endif
  return NULL;
}

#ifdef FAKE_EVIL_CONSTRUCTOR
__attribute__((constructor)) static void fake_evil_constructor(void) {
  const char* path = getenv("FAKE_EVIL_MARKER");
  if (!path) return;
  FILE* f = fopen(path, "a");
  if (!f) return;
  fputs("evil\n", f);
  fclose(f);
}
#endif

static const oph_dtype k_float32 = {OPH_DTYPE_FLOAT, 32, 1};

#ifdef FAKE_WIDE_STRUCTS
/* A newer minor appends fields: the host reads each element through its pointer and ignores what lies past the
 * fields it knows. */
typedef struct { oph_io_def base; uint64_t appended[3]; } wide_io;
typedef struct { oph_type_constraint base; uint64_t appended; } wide_tc;
typedef struct { oph_op_def base; uint64_t appended[5]; } wide_op;
#define WIDE_IO_SIZE OPH_STRUCT_SIZE(wide_io, appended)
static const wide_io k_x = {{WIDE_IO_SIZE, "x", "T", OPH_ARITY_SINGLE, 0, OPH_MEMORY_DEVICE}, {7, 7, 7}};
static const wide_io k_y = {{WIDE_IO_SIZE, "y", "T", OPH_ARITY_OPTIONAL, 0, OPH_MEMORY_DEVICE}, {7, 7, 7}};
static const wide_io k_out = {{WIDE_IO_SIZE, "out", "T", OPH_ARITY_SINGLE, 0, OPH_MEMORY_DEVICE}, {7, 7, 7}};
static const wide_tc k_t = {{OPH_STRUCT_SIZE(wide_tc, appended), "T", &k_float32, 1}, 9};
static const oph_io_def* const k_inputs[2] = {&k_x.base, &k_y.base};
static const oph_io_def* const k_outputs[1] = {&k_out.base};
static const oph_type_constraint* const k_constraints[1] = {&k_t.base};
#define NUM_INPUTS 2
#else
/* FAKE_MIN_STRUCTS writes the same io and alias sizes as every producer (the end of the last 1.0 field, below
 * the host's sizeof: tail padding is never claimed); what makes it an older producer is its op def below. */
static const oph_io_def k_x = {OPH_IO_DEF_STRUCT_SIZE, "x",
#ifdef FAKE_BAD_TYPE_VAR
                               "U",
#else
                               "T",
#endif
                               OPH_ARITY_SINGLE, 0, OPH_MEMORY_DEVICE};
static const oph_io_def k_out = {OPH_IO_DEF_STRUCT_SIZE, "out", "T", OPH_ARITY_SINGLE, 0, OPH_MEMORY_DEVICE};
static const oph_type_constraint k_t = {OPH_TYPE_CONSTRAINT_STRUCT_SIZE, "T", &k_float32, 1};
static const oph_io_def* const k_inputs[1] = {&k_x};
static const oph_io_def* const k_outputs[1] = {&k_out};
static const oph_type_constraint* const k_constraints[1] = {&k_t};
#define NUM_INPUTS 1
#endif

static const oph_attr_value k_scale_default = {OPH_ATTR_VALUE_STRUCT_SIZE, OPH_ATTR_INT, 0.0f, 1,    NULL,
                                               NULL,                       NULL,         NULL, NULL, 0};
static const oph_attr_def k_scale = {OPH_ATTR_DEF_STRUCT_SIZE, "scale", OPH_ATTR_INT, false, &k_scale_default};
static const oph_attr_def k_tag = {OPH_ATTR_DEF_STRUCT_SIZE, "tag", OPH_ATTR_STRING, false, NULL}; /* no default */
static const oph_attr_def* const k_attrs[2] = {&k_scale, &k_tag};
static const oph_alias_def k_alias = {OPH_ALIAS_DEF_STRUCT_SIZE, 0, 0, OPH_ALIAS_MAY_INPLACE};
static const oph_alias_def* const k_aliases[1] = {&k_alias};

/* FAKE_MIN_STRUCTS: the op def of a 1.0 pack ends at `doc` (1.1 appended kernel_impl). */
#if defined(FAKE_MIN_STRUCTS)
#define OP_DEF_SIZE OPH_OP_DEF_STRUCT_SIZE_1_0
#elif defined(FAKE_WIDE_STRUCTS)
#define OP_DEF_SIZE OPH_STRUCT_SIZE(wide_op, appended)
#else
#define OP_DEF_SIZE OPH_OP_DEF_STRUCT_SIZE
#endif
#define ECHO_DEF(since, end)                                                                              \
  {OP_DEF_SIZE, "fake", "echo", (since), (end), "cpu", k_inputs, NUM_INPUTS, k_outputs, 1,                \
   k_constraints, 1, k_attrs, 2, k_aliases, 1, 0, NULL, echo_infer, CREATE_FN, DESTROY_FN, COMPUTE_FN,   \
   "copies its input"}

#ifdef FAKE_MISBEHAVE
/* fake_misbehave.cpp (C++: it may throw) */
oph_status* fake_mb_create_kernel(const oph_kernel_create_args* args, void** out_state);
void fake_mb_destroy_kernel(void* state);
oph_status* fake_mb_compute(void* state, const oph_compute_context* ctx);
#define CREATE_FN fake_mb_create_kernel
#define DESTROY_FN fake_mb_destroy_kernel
#define COMPUTE_FN fake_mb_compute
#else
#define CREATE_FN NULL
#define DESTROY_FN NULL
#endif

#ifdef FAKE_NULL_COMPUTE
#define COMPUTE_FN NULL
#elif !defined(COMPUTE_FN)
#define COMPUTE_FN echo_compute
#endif

#ifdef FAKE_WIDE_STRUCTS
static const wide_op k_echo_wide = {ECHO_DEF(1, OPH_OPSET_MAX), {1, 2, 3, 4, 5}};
static const wide_op k_echo2_wide = {
    {OP_DEF_SIZE, "", "Identity", 1, 13, "cpu", k_inputs, 1, k_outputs, 1, k_constraints, 1, NULL, 0, NULL,
     0, 0, NULL, echo_infer, NULL, NULL, echo_compute, NULL},
    {1, 2, 3, 4, 5}};
static const oph_op_def* const k_ops[2] = {&k_echo_wide.base, &k_echo2_wide.base};
#define NUM_OPS 2
#else
static const oph_op_def k_echo = ECHO_DEF(1, OPH_OPSET_MAX);
static const oph_op_def* const k_ops[1] = {&k_echo};
#define NUM_OPS 1
#endif

/* ---- device backend variant ---- */
#ifdef FAKE_DEVICE
static oph_status* dev_enumerate(void* backend, int32_t* out_count, const char** out_reason) {
  (void)backend;
#ifdef FAKE_DEVICE_INACTIVE
  *out_count = 0;
  *out_reason = "no fake accelerator: fakeGetDeviceCount returned 100";
#else
  *out_count = 1;
  *out_reason = NULL;
#endif
  return NULL;
}
static oph_status* dev_props(void* backend, int32_t id, oph_device_properties* p) {
  (void)backend;
  if (id != 0) return g_services->status_create(OPH_CODE_OUT_OF_RANGE, "no such device");
  p->name = "Fake Accelerator 9000";
  p->vendor = "ophost tests";
  p->arch = "fk1";
  p->features = "fp16 bf16";
  p->total_memory = (uint64_t)3 << 30;
  p->free_memory = (uint64_t)2 << 30;
  p->multiprocessors = 4;
  p->fp16 = true;
  p->alignment = 256;
  return NULL;
}
static oph_status* dev_alloc(void* b, int32_t id, size_t bytes, size_t alignment, void** out) {
  (void)b; (void)id; (void)alignment;
  *out = malloc(bytes ? bytes : 1);
  return NULL;
}
static void dev_free(void* b, int32_t id, void* p) { (void)b; (void)id; free(p); }
static oph_status* dev_copy(void* b, int32_t id, int32_t kind, void* dst, const void* src, size_t n, void* s) {
  (void)b; (void)id; (void)kind; (void)s;
  memcpy(dst, src, n);
  return NULL;
}
static const oph_device_backend_def k_device = {
    OPH_DEVICE_BACKEND_DEF_STRUCT_SIZE, "fakedev", OPH_DL_EXT_DEV, NULL, dev_enumerate, dev_props, dev_alloc, dev_free,
    dev_copy, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
static const oph_device_backend_def* const k_devices[1] = {&k_device};
#endif

static void plugin_release(void* state) {
  const char* path = getenv("FAKE_PLUGIN_RELEASE_LOG");
  (void)state;
  if (path && *path) {
    FILE* f = fopen(path, "a");
    if (f) {
      fprintf(f, "release %s\n", OPH_PLUGIN_NAME);
      fclose(f);
    }
  }
}

static oph_plugin_info k_info;

static oph_status* fake_entry(const oph_host_info* host, const oph_plugin_info** out_info) {
  g_services = host->services;
#ifdef FAKE_ENTRY_ERROR
  return host->services->status_create(OPH_CODE_FAILED_PRECONDITION,
                                       "fake: license file /nonexistent/fake.lic not found");
#else
  if (host->abi_major != OPH_ABI_MAJOR) {
    return host->services->status_create(OPH_CODE_FAILED_PRECONDITION, "unsupported host ABI");
  }
  FAKE_CHECK_SIZE(host->services, "oph_host_info", host->struct_size, OPH_HOST_INFO_STRUCT_SIZE);
  memset(&k_info, 0, sizeof k_info);
  k_info.struct_size = OPH_PLUGIN_INFO_STRUCT_SIZE;
  k_info.abi_major = FAKE_ABI_MAJOR;
  k_info.minor_built = OPH_ABI_MINOR;
#ifdef FAKE_MINOR_REQUIRED_BUMP
  k_info.minor_built = OPH_ABI_MINOR + 1;
  k_info.minor_required = OPH_ABI_MINOR + 1;
#else
  k_info.minor_required = 0;
#endif
  k_info.name = OPH_PLUGIN_NAME;
  k_info.version = OPH_PLUGIN_VERSION;
#ifdef FAKE_DEVICE
  k_info.kind = OPH_PLUGIN_KIND_DEVICE_BACKEND;
  k_info.devices = k_devices;
  k_info.num_devices = 1;
  (void)k_ops;
#else
  k_info.kind = OPH_PLUGIN_KIND_OPERATOR_PACK;
  k_info.ops = k_ops;
  k_info.num_ops = NUM_OPS;
#endif
  k_info.plugin_state = NULL;
  k_info.release = plugin_release;
  if (host->services->log) host->services->log(host->services->host, OPH_LOG_DEBUG, OPH_PLUGIN_NAME, "entry called");
  *out_info = &k_info;
  return NULL;
#endif
}

#ifdef FAKE_NO_ENTRY
/* Exports something, but not the entry symbol. */
OPH_EXPORT oph_status* oph_plugin_entry_v0(const oph_host_info* host, const oph_plugin_info** out_info) {
  return fake_entry(host, out_info);
}
#else
OPH_DEFINE_PLUGIN_ENTRY(fake_entry)
#endif
