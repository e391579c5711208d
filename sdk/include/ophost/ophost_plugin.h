/*
 * ophost plugin C ABI, version 1.0.
 *
 * This is the only header a plugin (operator pack or device backend) needs. It includes nothing but
 * <stdint.h>, <stddef.h> and <stdbool.h> and compiles as C99 and as C++.
 *
 * Rules (full text and changelog in sdk/ABI.md):
 *  - One exported symbol per plugin: OPH_PLUGIN_ENTRY_SYMBOL ("oph_plugin_entry_v1"), emitted by
 *    OPH_DEFINE_PLUGIN_ENTRY. Plugins never link against libophost; everything they need comes through
 *    oph_host_services.
 *  - Every boundary struct starts with `size_t struct_size` and is append-only. Its producer writes the
 *    struct's OPH_*_STRUCT_SIZE constant: the end of its last field (OPH_STRUCT_SIZE), not sizeof, which
 *    would count tail padding where a later minor may append a field. A reader checks that a field lies inside
 *    struct_size (OPH_HAS_FIELD) before touching it. A NULL function pointer means "not provided".
 *  - Every array of boundary structs is an array of pointers, so struct_size never has to be a stride.
 *  - Errors are an opaque oph_status*: NULL means OK. A status is created through the host services and is
 *    owned by whoever receives it. No C++ exception ever crosses this boundary.
 *  - Strings are UTF-8, NUL-terminated, and their lifetime is stated on every field.
 *  - Enums are named types (oph_attr_type, ...) but stored in int32_t fields, so their size never depends
 *    on the compiler; each field's comment names its enum.
 *  - Tensors use DLPack's DLTensor layout (oph_tensor), so they can be handed to any DLPack-aware library.
 */
#ifndef OPHOST_PLUGIN_H_
#define OPHOST_PLUGIN_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------------------ */
/* Versions and helpers                                                                                   */
/* ------------------------------------------------------------------------------------------------------ */

#define OPH_ABI_MAJOR 1
#define OPH_ABI_MINOR 1

/* Name of the single exported entry symbol; the ABI major is part of the name. */
#define OPH_PLUGIN_ENTRY_SYMBOL "oph_plugin_entry_v1"

/* True when the struct pointed to by `ptr` (which starts with struct_size) contains `field`. */
#define OPH_HAS_FIELD(type, ptr, field) \
  ((ptr) != NULL && (ptr)->struct_size >= offsetof(type, field) + sizeof(((type*)0)->field))

/* The struct_size a producer writes: the end of the struct's last field, without the tail padding sizeof
 * adds (a field appended later may land in that padding, and must not look present in an older producer's
 * struct). Each boundary struct has a named constant below it, e.g. OPH_IO_DEF_STRUCT_SIZE; a minor that
 * appends a field moves that constant to the new last field. */
#define OPH_STRUCT_SIZE(type, last_field) (offsetof(type, last_field) + sizeof(((type*)0)->last_field))

/* Largest tensor rank carried in oph_value_info. */
#define OPH_MAX_NDIM 16

/* Unknown dimension in shape inference. */
#define OPH_DIM_UNKNOWN (-1)

/* Open upper end of an opset range. */
#define OPH_OPSET_MAX 2147483647

/* ------------------------------------------------------------------------------------------------------ */
/* Status                                                                                                 */
/* ------------------------------------------------------------------------------------------------------ */

/* Opaque error. NULL means OK. Created with oph_host_services.status_create; destroyed by its receiver with
 * oph_host_services.status_destroy. */
typedef struct oph_status oph_status;

/* Status codes (absl / gRPC numbering), stored as int32_t. */
typedef enum oph_status_code {
  OPH_CODE_OK = 0,
  OPH_CODE_CANCELLED = 1,
  OPH_CODE_UNKNOWN = 2,
  OPH_CODE_INVALID_ARGUMENT = 3,
  OPH_CODE_DEADLINE_EXCEEDED = 4,
  OPH_CODE_NOT_FOUND = 5,
  OPH_CODE_ALREADY_EXISTS = 6,
  OPH_CODE_PERMISSION_DENIED = 7,
  OPH_CODE_RESOURCE_EXHAUSTED = 8,
  OPH_CODE_FAILED_PRECONDITION = 9,
  OPH_CODE_ABORTED = 10,
  OPH_CODE_OUT_OF_RANGE = 11,
  OPH_CODE_UNIMPLEMENTED = 12,
  OPH_CODE_INTERNAL = 13,
  OPH_CODE_UNAVAILABLE = 14,
  OPH_CODE_DATA_LOSS = 15,
  OPH_CODE_UNAUTHENTICATED = 16
} oph_status_code;

/* ------------------------------------------------------------------------------------------------------ */
/* Tensors (DLPack layout)                                                                                */
/* ------------------------------------------------------------------------------------------------------ */

/* DLDeviceType values. */
typedef enum oph_dl_device_type {
  OPH_DL_CPU = 1,
  OPH_DL_CUDA = 2,
  OPH_DL_CUDA_HOST = 3,
  OPH_DL_OPENCL = 4,
  OPH_DL_VULKAN = 7,
  OPH_DL_METAL = 8,
  OPH_DL_ROCM = 10,
  OPH_DL_ROCM_HOST = 11,
  OPH_DL_EXT_DEV = 12
} oph_dl_device_type;

/* DLDataTypeCode values. */
typedef enum oph_dtype_code {
  OPH_DTYPE_INT = 0,
  OPH_DTYPE_UINT = 1,
  OPH_DTYPE_FLOAT = 2,
  OPH_DTYPE_OPAQUE = 3,
  OPH_DTYPE_BFLOAT = 4,
  OPH_DTYPE_COMPLEX = 5,
  OPH_DTYPE_BOOL = 6
} oph_dtype_code;

/* Same layout as DLDevice. */
typedef struct oph_device {
  int32_t device_type; /* oph_dl_device_type */
  int32_t device_id;
} oph_device;

/* Same layout as DLDataType. bool is {OPH_DTYPE_BOOL, 8, 1}; ONNX strings are {OPH_DTYPE_OPAQUE, 0, 0}. */
typedef struct oph_dtype {
  uint8_t code; /* oph_dtype_code */
  uint8_t bits;
  uint16_t lanes;
} oph_dtype;

/* Same layout as DLTensor (this struct alone has no struct_size: DLPack froze its layout). `shape` and
 * `strides` are owned by whoever produced the tensor and valid as long as the tensor; strides == NULL means
 * compact row-major. */
typedef struct oph_tensor {
  void* data;
  oph_device device;
  int32_t ndim;
  oph_dtype dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} oph_tensor;

/* ------------------------------------------------------------------------------------------------------ */
/* Host services (passed to the plugin's entry; valid until the plugin's release returns)                 */
/* ------------------------------------------------------------------------------------------------------ */

typedef enum oph_log_level {
  OPH_LOG_TRACE = 0,
  OPH_LOG_DEBUG = 1,
  OPH_LOG_INFO = 2,
  OPH_LOG_WARN = 3,
  OPH_LOG_ERROR = 4
} oph_log_level;

/* Body of a parallel loop: handles indices [begin, end). Must not throw. */
typedef void (*oph_parallel_fn)(void* user_data, size_t begin, size_t end);

typedef struct oph_host_services {
  size_t struct_size;
  /* Opaque host pointer; pass it back as `host` to the functions below. */
  void* host;

  /* Creates a status; `message` is copied. Returns NULL when code == OPH_CODE_OK. The receiver owns it. */
  oph_status* (*status_create)(int32_t code /* oph_status_code */, const char* message);
  /* Code and message of a status (message valid until status_destroy). NULL status: OK and "". */
  int32_t (*status_code)(const oph_status* status); /* oph_status_code */
  const char* (*status_message)(const oph_status* status);
  /* Frees a status; NULL is accepted. */
  void (*status_destroy)(oph_status* status);

  /* Writes one line to the host's log, attributed to the plugin `plugin` (may be NULL). */
  void (*log)(void* host, int32_t level /* oph_log_level */, const char* plugin, const char* message);

  /* Runs fn over [0, n) on the host's intra-op pool, in chunks of at least `grain` indices; returns when all
   * chunks are done. Packs must use this instead of starting their own threads. */
  void (*parallel_for)(void* host, size_t n, size_t grain, oph_parallel_fn fn, void* user_data);

  /* Scratch memory from the host pool for `device`; aligned to at least 64 bytes; owned by the caller, free it
   * with scratch_free (from any thread). Returns NULL on exhaustion, and for a device whose memory the host
   * does not pool for scratch (ophost 0.1 serves host memory, OPH_DL_CPU, only). Inside compute it comes from
   * the running session's pool (counted in its statistics and --mem-limit). */
  void* (*scratch_alloc)(void* host, oph_device device, size_t bytes);
  void (*scratch_free)(void* host, oph_device device, void* ptr);

  /* Configuration value `key` for plugin `plugin` (from host options), or NULL when unset. Valid until the
   * plugin's release returns (a later call, for any key, never overwrites a string returned earlier). */
  const char* (*config_get)(void* host, const char* plugin, const char* key);
} oph_host_services;
#define OPH_HOST_SERVICES_STRUCT_SIZE OPH_STRUCT_SIZE(oph_host_services, config_get)

/* ------------------------------------------------------------------------------------------------------ */
/* Operator definition                                                                                    */
/* ------------------------------------------------------------------------------------------------------ */

/* Arity of a formal input or output. */
typedef enum oph_arity { OPH_ARITY_SINGLE = 0, OPH_ARITY_OPTIONAL = 1, OPH_ARITY_VARIADIC = 2 } oph_arity;

/* Where the host delivers an input: device memory of the kernel's device, or host memory (shape-like inputs). */
typedef enum oph_memory { OPH_MEMORY_DEVICE = 0, OPH_MEMORY_HOST = 1 } oph_memory;

typedef struct oph_io_def {
  size_t struct_size;
  const char* name;     /* formal name; static lifetime */
  const char* type_var; /* type variable naming an oph_type_constraint, e.g. "T"; static lifetime */
  int32_t arity;        /* oph_arity */
  int32_t min_arity;    /* VARIADIC only: fewest actual values (>= 1) */
  int32_t memory;       /* oph_memory; inputs only */
} oph_io_def;
#define OPH_IO_DEF_STRUCT_SIZE OPH_STRUCT_SIZE(oph_io_def, memory)

typedef struct oph_type_constraint {
  size_t struct_size;
  const char* type_var;      /* static lifetime */
  const oph_dtype* allowed;  /* array of num_allowed; static lifetime */
  size_t num_allowed;
} oph_type_constraint;
#define OPH_TYPE_CONSTRAINT_STRUCT_SIZE OPH_STRUCT_SIZE(oph_type_constraint, num_allowed)

/* Attribute types: ONNX AttributeProto.AttributeType numbering. */
typedef enum oph_attr_type {
  OPH_ATTR_UNDEFINED = 0, /* absent optional attribute without default */
  OPH_ATTR_FLOAT = 1,
  OPH_ATTR_INT = 2,
  OPH_ATTR_STRING = 3,
  OPH_ATTR_TENSOR = 4,
  OPH_ATTR_FLOATS = 6,
  OPH_ATTR_INTS = 7,
  OPH_ATTR_STRINGS = 8
} oph_attr_type;

/* One attribute value. Which members are meaningful depends on `type`:
 *   FLOAT: f; INT: i; STRING: s (bytes, count = length, also NUL-terminated); TENSOR: tensor (host memory);
 *   FLOATS: floats[count]; INTS: ints[count]; STRINGS: strings[count] (NUL-terminated). */
typedef struct oph_attr_value {
  size_t struct_size;
  int32_t type; /* oph_attr_type */
  float f;
  int64_t i;
  const char* s;
  const float* floats;
  const int64_t* ints;
  const char* const* strings;
  const oph_tensor* tensor;
  size_t count;
} oph_attr_value;
#define OPH_ATTR_VALUE_STRUCT_SIZE OPH_STRUCT_SIZE(oph_attr_value, count)

/* Attribute schema. A required attribute has no default; an optional one either has a default (a value whose
 * type equals `type`) or default_value == NULL (absent: the kernel sees OPH_ATTR_UNDEFINED). The host rejects
 * unknown attributes and attributes of the wrong type before a kernel is created. */
typedef struct oph_attr_def {
  size_t struct_size;
  const char* name; /* static lifetime */
  int32_t type;     /* oph_attr_type */
  bool required;
  const oph_attr_value* default_value; /* NULL: no default; static lifetime */
} oph_attr_def;
#define OPH_ATTR_DEF_STRUCT_SIZE OPH_STRUCT_SIZE(oph_attr_def, default_value)

typedef enum oph_alias_kind {
  OPH_ALIAS_MAY_INPLACE = 1,   /* the planner may give output_index the buffer of input_index */
  OPH_ALIAS_MUTATES_INPUT = 2  /* the kernel writes into input_index */
} oph_alias_kind;

typedef struct oph_alias_def {
  size_t struct_size;
  int32_t input_index;
  int32_t output_index;
  int32_t kind; /* oph_alias_kind */
} oph_alias_def;
#define OPH_ALIAS_DEF_STRUCT_SIZE OPH_STRUCT_SIZE(oph_alias_def, kind)

/* Operator flags. */
#define OPH_OP_FLAG_SERIALIZE_COMPUTE ((uint64_t)1) /* compute must not run concurrently on one state */
#define OPH_OP_FLAG_ALLOW_FUSION ((uint64_t)2)      /* the host's passes may fuse this op */

/* What shape inference and kernel creation know about one actual input or output. */
typedef struct oph_value_info {
  size_t struct_size;
  bool present;     /* false: absent optional value */
  oph_dtype dtype;
  int32_t ndim;     /* -1: rank unknown */
  int64_t shape[OPH_MAX_NDIM]; /* OPH_DIM_UNKNOWN for unknown dims */
  /* Inputs only: the value when it is a constant (initializer or folded), in host memory; else NULL. Valid
   * for the duration of the call. */
  const oph_tensor* constant;
} oph_value_info;
#define OPH_VALUE_INFO_STRUCT_SIZE OPH_STRUCT_SIZE(oph_value_info, constant)

/* Arguments of infer(). The host fills inputs and attrs; infer fills outputs[i]->dtype/ndim/shape (and may
 * leave a dim OPH_DIM_UNKNOWN when it depends on data). Arrays are arrays of pointers (never NULL entries).
 * Everything is valid for the duration of the call. */
typedef struct oph_infer_context {
  size_t struct_size;
  const oph_host_services* services;
  const struct oph_op_def* op;
  size_t num_inputs;
  const oph_value_info* const* inputs;
  size_t num_outputs;
  oph_value_info* const* outputs; /* host-owned; outputs[i]->present is preset */
  size_t num_attrs;               /* == op->num_attributes */
  const oph_attr_value* const* attrs; /* in schema order, defaults filled in */
  const char* node_name;
} oph_infer_context;
#define OPH_INFER_CONTEXT_STRUCT_SIZE OPH_STRUCT_SIZE(oph_infer_context, node_name)

/* Arguments of create_kernel(): as infer, with output infos already inferred. */
typedef struct oph_kernel_create_args {
  size_t struct_size;
  const oph_host_services* services;
  const struct oph_op_def* op;
  size_t num_inputs;
  const oph_value_info* const* inputs;
  size_t num_outputs;
  const oph_value_info* const* outputs;
  size_t num_attrs;
  const oph_attr_value* const* attrs;
  const char* node_name;
  oph_device device;
} oph_kernel_create_args;
#define OPH_KERNEL_CREATE_ARGS_STRUCT_SIZE OPH_STRUCT_SIZE(oph_kernel_create_args, device)

struct oph_compute_context;

/* Arguments of compute(). Valid for the duration of the call. */
typedef struct oph_compute_context {
  size_t struct_size;
  const oph_host_services* services;
  size_t num_inputs;
  const oph_tensor* const* inputs; /* NULL entry: absent optional input */
  size_t num_outputs;
  oph_tensor* const* outputs;      /* preallocated by the host; data == NULL when the shape was unknown at
                                      plan time: call allocate_output. NULL entry: output not requested */
  void* stream;                    /* backend stream, NULL on CPU */
  oph_device device;
  /* Allocates outputs[index] with the given shape (copied) from the host pool; the host owns the memory.
   * On success outputs[index] is updated in place. */
  oph_status* (*allocate_output)(const struct oph_compute_context* ctx, size_t index, int32_t ndim,
                                 const int64_t* shape);
  void* host_data; /* host-private */
} oph_compute_context;
#define OPH_COMPUTE_CONTEXT_STRUCT_SIZE OPH_STRUCT_SIZE(oph_compute_context, host_data)

typedef struct oph_op_def {
  size_t struct_size;
  const char* domain;   /* "" or "ai.onnx" is the standard domain (onnx-core only); static lifetime */
  const char* name;     /* static lifetime */
  int32_t since_version; /* inclusive opset range */
  int32_t end_version;   /* inclusive; OPH_OPSET_MAX for open */
  const char* device;    /* device type the kernel runs on: "cpu", "cuda", "hip", ... */

  /* Arrays of pointers (no NULL entries); static lifetime. */
  const oph_io_def* const* inputs;
  size_t num_inputs;
  const oph_io_def* const* outputs;
  size_t num_outputs;
  const oph_type_constraint* const* type_constraints;
  size_t num_type_constraints;
  const oph_attr_def* const* attributes;
  size_t num_attributes;
  const oph_alias_def* const* aliases;
  size_t num_aliases;
  uint64_t flags; /* OPH_OP_FLAG_* */
  void* user_data; /* passed through unchanged; owned by the plugin */

  /* Output dtypes and shapes from inputs and attributes. Pure and reentrant. Required. */
  oph_status* (*infer)(const oph_infer_context* ctx);
  /* Builds per-node state once. Optional (NULL: state is NULL). *out_state is owned by the plugin and freed
   * with destroy_kernel. */
  oph_status* (*create_kernel)(const oph_kernel_create_args* args, void** out_state);
  void (*destroy_kernel)(void* state);
  /* Runs the op. The state is read-only unless flags has SERIALIZE_COMPUTE. Required. */
  oph_status* (*compute)(void* state, const oph_compute_context* ctx);
  const char* doc; /* one line, may be NULL; static lifetime */

  /* ABI 1.1. The implementation a node's kernel runs, for `ophost inspect --kernels`, the profile's per-op
   * table and the host's warning about reference code, e.g. "oneDNN jit_dw:avx2". Optional: NULL (or absent,
   * in a 1.0 pack) means unknown. Returns NULL while not known yet (chosen at the first compute when the shapes
   * are known only then). Sets *is_reference to true for a reference/fallback implementation (correct, but
   * typically 10-100x slower than the tuned one). The string belongs to the kernel state and stays valid until
   * the next kernel_impl call on that state or destroy_kernel. The host never calls it during a compute on the
   * same state. */
  const char* (*kernel_impl)(void* state, bool* is_reference);
} oph_op_def;
#define OPH_OP_DEF_STRUCT_SIZE OPH_STRUCT_SIZE(oph_op_def, kernel_impl)
/* What a pack of ABI 1.0 writes (kernel_impl is 1.1); the smallest op def a host accepts. */
#define OPH_OP_DEF_STRUCT_SIZE_1_0 OPH_STRUCT_SIZE(oph_op_def, doc)

/* ------------------------------------------------------------------------------------------------------ */
/* Device backend definition                                                                              */
/* ------------------------------------------------------------------------------------------------------ */

typedef enum oph_copy_kind {
  OPH_COPY_HOST_TO_DEVICE = 0,
  OPH_COPY_DEVICE_TO_HOST = 1,
  OPH_COPY_DEVICE_TO_DEVICE = 2
} oph_copy_kind;

typedef struct oph_device_properties {
  size_t struct_size;
  const char* name;       /* e.g. CPU model name or GPU name; valid until the plugin's release */
  const char* vendor;
  const char* arch;       /* "x86_64", "sm_90", "gfx90a", ... */
  const char* features;   /* space-separated ISA features or capabilities */
  uint64_t total_memory;
  uint64_t free_memory;
  int32_t compute_major;  /* compute capability (CUDA) or 0 */
  int32_t compute_minor;
  int32_t multiprocessors; /* SMs / CUs / CPU cores */
  int32_t threads;        /* hardware threads (CPU) or 0 */
  bool fp16;
  bool bf16;
  bool int8;
  uint64_t alignment;      /* guaranteed alignment of alloc */
  uint64_t max_allocation; /* 0 = unknown */
} oph_device_properties;
#define OPH_DEVICE_PROPERTIES_STRUCT_SIZE OPH_STRUCT_SIZE(oph_device_properties, max_allocation)

typedef struct oph_device_backend_def {
  size_t struct_size;
  const char* device_type; /* "cpu", "cuda", "hip", ...; static lifetime */
  int32_t dl_device_type;  /* oph_dl_device_type */
  void* backend;           /* opaque backend state, passed back as first argument; owned by the plugin */

  /* Number of usable devices. 0 with *out_inactive_reason set (valid until release) means inactive, e.g.
   * "no CUDA device: cudaGetDeviceCount returned 100". Required. */
  oph_status* (*enumerate)(void* backend, int32_t* out_count, const char** out_inactive_reason);
  /* Fills *out_props (the host sets out_props->struct_size). Required. */
  oph_status* (*get_properties)(void* backend, int32_t device_id, oph_device_properties* out_props);
  /* Raw memory; the host's pool sits on top. Required. */
  oph_status* (*alloc)(void* backend, int32_t device_id, size_t bytes, size_t alignment, void** out_ptr);
  void (*free)(void* backend, int32_t device_id, void* ptr);
  /* Copies `bytes`; asynchronous on `stream` when stream != NULL. Required. */
  oph_status* (*copy)(void* backend, int32_t device_id, int32_t kind /* oph_copy_kind */, void* dst, const void* src, size_t bytes,
                      void* stream);
  /* Streams and events; all optional (NULL: synchronous device, no timing). */
  oph_status* (*stream_create)(void* backend, int32_t device_id, void** out_stream);
  void (*stream_destroy)(void* backend, int32_t device_id, void* stream);
  oph_status* (*stream_synchronize)(void* backend, int32_t device_id, void* stream);
  oph_status* (*event_create)(void* backend, int32_t device_id, void** out_event);
  void (*event_destroy)(void* backend, int32_t device_id, void* event);
  oph_status* (*event_record)(void* backend, int32_t device_id, void* event, void* stream);
  oph_status* (*event_synchronize)(void* backend, int32_t device_id, void* event);
  oph_status* (*event_elapsed_ms)(void* backend, int32_t device_id, void* start, void* end, float* out_ms);
} oph_device_backend_def;
#define OPH_DEVICE_BACKEND_DEF_STRUCT_SIZE OPH_STRUCT_SIZE(oph_device_backend_def, event_elapsed_ms)

/* ------------------------------------------------------------------------------------------------------ */
/* Handshake                                                                                              */
/* ------------------------------------------------------------------------------------------------------ */

typedef enum oph_plugin_kind { OPH_PLUGIN_KIND_OPERATOR_PACK = 1, OPH_PLUGIN_KIND_DEVICE_BACKEND = 2 } oph_plugin_kind;

/* What the host tells the plugin. Valid until the plugin's release returns. */
typedef struct oph_host_info {
  size_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;
  const oph_host_services* services;
  const char* host_version; /* semver of libophost */
  const char* plugin_dir;   /* folder holding the plugin's manifest */
} oph_host_info;
#define OPH_HOST_INFO_STRUCT_SIZE OPH_STRUCT_SIZE(oph_host_info, plugin_dir)

/* What the plugin tells the host. Owned by the plugin; valid until release(plugin_state) returns. */
typedef struct oph_plugin_info {
  size_t struct_size;
  uint32_t abi_major;
  uint32_t minor_built;    /* OPH_ABI_MINOR the plugin was compiled with */
  uint32_t minor_required; /* lowest host minor the plugin works with */
  const char* name;        /* must equal the manifest's name */
  const char* version;     /* must equal the manifest's version */
  int32_t kind;            /* oph_plugin_kind */
  const oph_op_def* const* ops; /* array of num_ops pointers */
  size_t num_ops;
  const oph_device_backend_def* const* devices; /* array of num_devices pointers */
  size_t num_devices;
  void* plugin_state;
  /* Called once before the library is unloaded; may be NULL. */
  void (*release)(void* plugin_state);
} oph_plugin_info;
#define OPH_PLUGIN_INFO_STRUCT_SIZE OPH_STRUCT_SIZE(oph_plugin_info, release)

/* The entry function. On success sets *out_info and returns NULL. On failure returns a status (created with
 * host->services->status_create) and leaves *out_info untouched. */
typedef oph_status* (*oph_plugin_entry_fn)(const oph_host_info* host, const oph_plugin_info** out_info);

#if defined(_WIN32)
#define OPH_EXPORT __declspec(dllexport)
#else
#define OPH_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
#define OPH_EXTERN_C extern "C"
#else
#define OPH_EXTERN_C
#endif

/* Appends NUL-terminated `text` to the message being built in buf[*len] (capacity cap, truncating). A
 * header-only helper of oph_entry_check, which must not need <stdio.h>. */
static inline void oph_msg_append_(char* buf, size_t cap, size_t* len, const char* text) {
  while (*text && *len + 1 < cap) buf[(*len)++] = *text++;
  buf[*len] = '\0';
}

/* Appends the decimal digits of `value` (see oph_msg_append_). */
static inline void oph_msg_append_uint_(char* buf, size_t cap, size_t* len, uint32_t value) {
  char digits[11];
  size_t n = sizeof digits - 1;
  digits[n] = '\0';
  do {
    digits[--n] = (char)('0' + value % 10u);
    value /= 10u;
  } while (value != 0u && n > 0);
  oph_msg_append_(buf, cap, len, digits + n);
}

/* The checks a hand-written entry starts with (the C++ layer's OPH_PACK calls it too). Returns 1 when the
 * entry may go on. Returns 0 when it must return `*out_status` at once: NULL when the host passed no status
 * factory (a broken host: nothing can be reported), else an error owned by the host naming `plugin`: a host
 * of another ABI major, or a NULL out_info. A header-only helper, not part of the ABI. */
static inline int oph_entry_check(const oph_host_info* host, const oph_plugin_info** out_info, const char* plugin,
                                  oph_status** out_status) {
  const oph_host_services* services;
  char msg[160];
  size_t len = 0;
  *out_status = NULL;
  msg[0] = '\0';
  if (!host || !OPH_HAS_FIELD(oph_host_info, host, services) || !host->services ||
      !OPH_HAS_FIELD(oph_host_services, host->services, status_create) || !host->services->status_create)
    return 0;
  services = host->services;
  oph_msg_append_(msg, sizeof msg, &len, plugin ? plugin : "plugin");
  if (host->abi_major != OPH_ABI_MAJOR) {
    oph_msg_append_(msg, sizeof msg, &len, ": built for plugin ABI major ");
    oph_msg_append_uint_(msg, sizeof msg, &len, (uint32_t)OPH_ABI_MAJOR);
    oph_msg_append_(msg, sizeof msg, &len, ", the host offers ");
    oph_msg_append_uint_(msg, sizeof msg, &len, host->abi_major);
    *out_status = services->status_create(OPH_CODE_FAILED_PRECONDITION, msg);
    return 0;
  }
  if (!out_info) {
    oph_msg_append_(msg, sizeof msg, &len, ": out_info is NULL");
    *out_status = services->status_create(OPH_CODE_INVALID_ARGUMENT, msg);
    return 0;
  }
  return 1;
}

/* Emits the plugin's entry symbol and forwards to `impl`, a function with the oph_plugin_entry_fn signature.
 * Use exactly once per plugin:  OPH_DEFINE_PLUGIN_ENTRY(my_entry)  */
#define OPH_DEFINE_PLUGIN_ENTRY(impl)                                                                   \
  OPH_EXTERN_C OPH_EXPORT oph_status* oph_plugin_entry_v1(const oph_host_info* host,                    \
                                                          const oph_plugin_info** out_info);            \
  OPH_EXTERN_C OPH_EXPORT oph_status* oph_plugin_entry_v1(const oph_host_info* host,                    \
                                                          const oph_plugin_info** out_info) {           \
    return (impl)(host, out_info);                                                                      \
  }

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OPHOST_PLUGIN_H_ */
