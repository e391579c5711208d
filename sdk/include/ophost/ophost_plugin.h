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
 *  - Every boundary struct starts with `size_t struct_size` and is append-only. A reader checks that a field
 *    lies inside struct_size (OPH_HAS_FIELD) before touching it. A NULL function pointer means "not provided".
 *  - Arrays of boundary structs are walked with the element's own struct_size as the stride (OPH_ARRAY_AT), so
 *    a pack built against an older minor (smaller structs) is read correctly by a newer host.
 *  - Errors are an opaque oph_status*: NULL means OK. A status is created through the host services and is
 *    owned by whoever receives it. No C++ exception ever crosses this boundary.
 *  - Strings are UTF-8, NUL-terminated, and their lifetime is stated on every field.
 *  - Enums are stored as int32_t.
 *  - Tensors use DLPack's DLTensor layout (oph_tensor), so they can be handed to any DLPack-aware library.
 */
#ifndef OPHOST_PLUGIN_H_
#define OPHOST_PLUGIN_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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

/* Element `i` of an array of boundary structs whose elements are `stride` bytes apart (the struct_size of the
 * first element, written by the producer). */
#define OPH_ARRAY_AT(type, base, stride, i) ((const type*)((const char*)(base) + (size_t)(stride) * (size_t)(i)))

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
enum {
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
};

/* ------------------------------------------------------------------------------------------------------ */
/* Tensors (DLPack layout)                                                                                */
/* ------------------------------------------------------------------------------------------------------ */

/* DLDeviceType values. */
enum {
  OPH_DL_CPU = 1,
  OPH_DL_CUDA = 2,
  OPH_DL_CUDA_HOST = 3,
  OPH_DL_OPENCL = 4,
  OPH_DL_VULKAN = 7,
  OPH_DL_METAL = 8,
  OPH_DL_ROCM = 10,
  OPH_DL_ROCM_HOST = 11,
  OPH_DL_EXT_DEV = 12
};

/* DLDataTypeCode values. */
enum {
  OPH_DTYPE_INT = 0,
  OPH_DTYPE_UINT = 1,
  OPH_DTYPE_FLOAT = 2,
  OPH_DTYPE_OPAQUE = 3,
  OPH_DTYPE_BFLOAT = 4,
  OPH_DTYPE_COMPLEX = 5,
  OPH_DTYPE_BOOL = 6
};

/* Same layout as DLDevice. */
typedef struct oph_device {
  int32_t device_type; /* OPH_DL_* */
  int32_t device_id;
} oph_device;

/* Same layout as DLDataType. bool is {OPH_DTYPE_BOOL, 8, 1}; ONNX strings are {OPH_DTYPE_OPAQUE, 0, 0}. */
typedef struct oph_dtype {
  uint8_t code; /* OPH_DTYPE_* */
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

enum {
  OPH_LOG_TRACE = 0,
  OPH_LOG_DEBUG = 1,
  OPH_LOG_INFO = 2,
  OPH_LOG_WARN = 3,
  OPH_LOG_ERROR = 4
};

/* Body of a parallel loop: handles indices [begin, end). Must not throw. */
typedef void (*oph_parallel_fn)(void* user_data, size_t begin, size_t end);

typedef struct oph_host_services {
  size_t struct_size;
  /* Opaque host pointer; pass it back as `host` to the functions below. */
  void* host;

  /* Creates a status; `message` is copied. Returns NULL when code == OPH_CODE_OK. The receiver owns it. */
  oph_status* (*status_create)(int32_t code, const char* message);
  /* Code and message of a status (message valid until status_destroy). NULL status: OK and "". */
  int32_t (*status_code)(const oph_status* status);
  const char* (*status_message)(const oph_status* status);
  /* Frees a status; NULL is accepted. */
  void (*status_destroy)(oph_status* status);

  /* Writes one line to the host's log, attributed to the plugin `plugin` (may be NULL). */
  void (*log)(void* host, int32_t level, const char* plugin, const char* message);

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
   * plugin's release returns. */
  const char* (*config_get)(void* host, const char* plugin, const char* key);
} oph_host_services;

/* ------------------------------------------------------------------------------------------------------ */
/* Operator definition                                                                                    */
/* ------------------------------------------------------------------------------------------------------ */

/* Arity of a formal input or output. */
enum { OPH_ARITY_SINGLE = 0, OPH_ARITY_OPTIONAL = 1, OPH_ARITY_VARIADIC = 2 };

/* Where the host delivers an input: device memory of the kernel's device, or host memory (shape-like inputs). */
enum { OPH_MEMORY_DEVICE = 0, OPH_MEMORY_HOST = 1 };

typedef struct oph_io_def {
  size_t struct_size;
  const char* name;     /* formal name; static lifetime */
  const char* type_var; /* type variable naming an oph_type_constraint, e.g. "T"; static lifetime */
  int32_t arity;        /* OPH_ARITY_* */
  int32_t min_arity;    /* VARIADIC only: fewest actual values (>= 1) */
  int32_t memory;       /* OPH_MEMORY_*; inputs only */
} oph_io_def;

typedef struct oph_type_constraint {
  size_t struct_size;
  const char* type_var;      /* static lifetime */
  const oph_dtype* allowed;  /* array of num_allowed; static lifetime */
  size_t num_allowed;
} oph_type_constraint;

/* Attribute types: ONNX AttributeProto.AttributeType numbering. */
enum {
  OPH_ATTR_UNDEFINED = 0, /* absent optional attribute without default */
  OPH_ATTR_FLOAT = 1,
  OPH_ATTR_INT = 2,
  OPH_ATTR_STRING = 3,
  OPH_ATTR_TENSOR = 4,
  OPH_ATTR_FLOATS = 6,
  OPH_ATTR_INTS = 7,
  OPH_ATTR_STRINGS = 8
};

/* One attribute value. Which members are meaningful depends on `type`:
 *   FLOAT: f; INT: i; STRING: s (bytes, count = length, also NUL-terminated); TENSOR: tensor (host memory);
 *   FLOATS: floats[count]; INTS: ints[count]; STRINGS: strings[count] (NUL-terminated). */
typedef struct oph_attr_value {
  size_t struct_size;
  int32_t type; /* OPH_ATTR_* */
  float f;
  int64_t i;
  const char* s;
  const float* floats;
  const int64_t* ints;
  const char* const* strings;
  const oph_tensor* tensor;
  size_t count;
} oph_attr_value;

/* Attribute schema. A required attribute has no default; an optional one either has a default (type equal to
 * `type`) or default_value.type == OPH_ATTR_UNDEFINED (absent: the kernel sees OPH_ATTR_UNDEFINED). The host
 * rejects unknown attributes and attributes of the wrong type before a kernel is created. */
typedef struct oph_attr_def {
  size_t struct_size;
  const char* name; /* static lifetime */
  int32_t type;     /* OPH_ATTR_* */
  bool required;
  oph_attr_value default_value; /* static lifetime */
} oph_attr_def;

enum {
  OPH_ALIAS_MAY_INPLACE = 1,   /* the planner may give output_index the buffer of input_index */
  OPH_ALIAS_MUTATES_INPUT = 2  /* the kernel writes into input_index */
};

typedef struct oph_alias_def {
  size_t struct_size;
  int32_t input_index;
  int32_t output_index;
  int32_t kind; /* OPH_ALIAS_* */
} oph_alias_def;

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

/* Arguments of infer(). The host fills inputs and attrs; infer fills outputs[i].dtype/ndim/shape (and may
 * leave a dim OPH_DIM_UNKNOWN when it depends on data). Everything is valid for the duration of the call. */
typedef struct oph_infer_context {
  size_t struct_size;
  const oph_host_services* services;
  const struct oph_op_def* op;
  size_t num_inputs;
  const oph_value_info* inputs;
  size_t num_outputs;
  oph_value_info* outputs; /* host-owned; outputs[i].present is preset */
  size_t num_attrs;        /* == op->num_attributes */
  const oph_attr_value* attrs; /* in schema order, defaults filled in */
  const char* node_name;
} oph_infer_context;

/* Arguments of create_kernel(): as infer, with output infos already inferred. */
typedef struct oph_kernel_create_args {
  size_t struct_size;
  const oph_host_services* services;
  const struct oph_op_def* op;
  size_t num_inputs;
  const oph_value_info* inputs;
  size_t num_outputs;
  const oph_value_info* outputs;
  size_t num_attrs;
  const oph_attr_value* attrs;
  const char* node_name;
  oph_device device;
} oph_kernel_create_args;

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

typedef struct oph_op_def {
  size_t struct_size;
  const char* domain;   /* "" or "ai.onnx" is the standard domain (onnx-core only); static lifetime */
  const char* name;     /* static lifetime */
  int32_t since_version; /* inclusive opset range */
  int32_t end_version;   /* inclusive; OPH_OPSET_MAX for open */
  const char* device;    /* device type the kernel runs on: "cpu", "cuda", "hip", ... */

  const oph_io_def* inputs;   /* array, stride inputs[0].struct_size */
  size_t num_inputs;
  const oph_io_def* outputs;
  size_t num_outputs;
  const oph_type_constraint* type_constraints;
  size_t num_type_constraints;
  const oph_attr_def* attributes;
  size_t num_attributes;
  const oph_alias_def* aliases;
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

/* ------------------------------------------------------------------------------------------------------ */
/* Device backend definition                                                                              */
/* ------------------------------------------------------------------------------------------------------ */

enum { OPH_COPY_HOST_TO_DEVICE = 0, OPH_COPY_DEVICE_TO_HOST = 1, OPH_COPY_DEVICE_TO_DEVICE = 2 };

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

typedef struct oph_device_backend_def {
  size_t struct_size;
  const char* device_type; /* "cpu", "cuda", "hip", ...; static lifetime */
  int32_t dl_device_type;  /* OPH_DL_* */
  void* backend;           /* opaque backend state, passed back as first argument; owned by the plugin */

  /* Number of usable devices. 0 with *out_inactive_reason set (valid until release) means inactive, e.g.
   * "no CUDA device: cudaGetDeviceCount returned 100". Required. */
  oph_status* (*enumerate)(void* backend, int32_t* out_count, const char** out_inactive_reason);
  /* Fills *out_props (the host sets out_props->struct_size). Required. */
  oph_status* (*get_properties)(void* backend, int32_t device_id, oph_device_properties* out_props);
  /* Raw memory; the host's pool sits on top. Required. */
  oph_status* (*alloc)(void* backend, int32_t device_id, size_t bytes, size_t alignment, void** out_ptr);
  void (*free)(void* backend, int32_t device_id, void* ptr);
  /* Copies `bytes`; asynchronous on `stream` when stream != NULL. kind is OPH_COPY_*. Required. */
  oph_status* (*copy)(void* backend, int32_t device_id, int32_t kind, void* dst, const void* src, size_t bytes,
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

/* ------------------------------------------------------------------------------------------------------ */
/* Handshake                                                                                              */
/* ------------------------------------------------------------------------------------------------------ */

enum { OPH_PLUGIN_KIND_OPERATOR_PACK = 1, OPH_PLUGIN_KIND_DEVICE_BACKEND = 2 };

/* What the host tells the plugin. Valid until the plugin's release returns. */
typedef struct oph_host_info {
  size_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;
  const oph_host_services* services;
  const char* host_version; /* semver of libophost */
  const char* plugin_dir;   /* folder holding the plugin's manifest */
} oph_host_info;

/* What the plugin tells the host. Owned by the plugin; valid until release(plugin_state) returns. */
typedef struct oph_plugin_info {
  size_t struct_size;
  uint32_t abi_major;
  uint32_t minor_built;    /* OPH_ABI_MINOR the plugin was compiled with */
  uint32_t minor_required; /* lowest host minor the plugin works with */
  const char* name;        /* must equal the manifest's name */
  const char* version;     /* must equal the manifest's version */
  int32_t kind;            /* OPH_PLUGIN_KIND_* */
  const oph_op_def* const* ops; /* array of num_ops pointers */
  size_t num_ops;
  const oph_device_backend_def* const* devices; /* array of num_devices pointers */
  size_t num_devices;
  void* plugin_state;
  /* Called once before the library is unloaded; may be NULL. */
  void (*release)(void* plugin_state);
} oph_plugin_info;

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

/* The checks a hand-written entry starts with (the C++ layer's OPH_PACK does them itself). Returns 1 when the
 * entry may go on. Returns 0 when it must return `*out_status` at once: NULL when the host passed no status
 * factory (a broken host: nothing can be reported), else an error owned by the host naming `plugin`: a host
 * of another ABI major, or a NULL out_info. A header-only helper, not part of the ABI. */
static inline int oph_entry_check(const oph_host_info* host, const oph_plugin_info** out_info, const char* plugin,
                                  oph_status** out_status) {
  const oph_host_services* services;
  char msg[160];
  int n;
  *out_status = NULL;
  if (!host || !OPH_HAS_FIELD(oph_host_info, host, services) || !host->services ||
      !OPH_HAS_FIELD(oph_host_services, host->services, status_create) || !host->services->status_create)
    return 0;
  services = host->services;
  if (host->abi_major != OPH_ABI_MAJOR) {
    n = snprintf(msg, sizeof msg, "%s: built for plugin ABI major %d, the host offers %u", plugin ? plugin : "plugin",
                 OPH_ABI_MAJOR, (unsigned)host->abi_major);
    (void)n;
    *out_status = services->status_create(OPH_CODE_FAILED_PRECONDITION, msg);
    return 0;
  }
  if (!out_info) {
    n = snprintf(msg, sizeof msg, "%s: out_info is NULL", plugin ? plugin : "plugin");
    (void)n;
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
