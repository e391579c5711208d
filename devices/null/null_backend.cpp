// The "null" device backend: a skeleton for backend authors.
//
// It compiles, loads, passes the host's handshake and manifest checks, and then reports itself *inactive*
// ("null backend: a skeleton for backend authors; it has no device"), so `ophost plugins -v` lists it as
// inactive. Every other function returns OPH_CODE_UNAVAILABLE: nothing here pretends to work.
//
// To start a real backend, copy this folder (see README.md next to this file) and replace each TODO with
// calls into your device runtime. The CPU backend (devices/cpu/cpu_backend.cpp) is a complete, small example
// of a working backend.
//
// Rules every backend follows (sdk/include/ophost/ophost_plugin.h has the full text):
//  * Include only <ophost/ophost_plugin.h> from the SDK and never link libophost: everything the host offers
//    comes through the oph_host_services table passed to the entry function.
//  * No C++ exception may cross the boundary. Every function below is noexcept; a real backend wraps any
//    code that can throw (std::string, std::vector, a C++ device runtime) in try/catch and turns the
//    exception into a status.
//  * Errors are statuses created with services->status_create(code, message); NULL means OK. Messages start
//    with the backend's name and say what failed with which values, e.g.
//    "cuda: cudaMalloc of 1073741824 bytes on device 0 failed: out of memory (2)".
//  * Strings handed to the host (inactive reason, property strings) must stay valid until release() returns.
#include <ophost/ophost_plugin.h>

#include <cstdio>
#include <new>

// ophost_add_plugin() defines OPH_PLUGIN_NAME and OPH_PLUGIN_VERSION from its NAME and VERSION arguments, so
// the handshake always agrees with the manifest it writes. The fallbacks only matter outside that helper.
#ifndef OPH_PLUGIN_NAME
#define OPH_PLUGIN_NAME "null"
#endif
#ifndef OPH_PLUGIN_VERSION
#define OPH_PLUGIN_VERSION "0.0.0"
#endif

namespace {

// TODO(your backend): the device type users select with `--device <type>` and kernels name in
// oph_op_def.device, and the matching DLPack device type (OPH_DL_CUDA, OPH_DL_ROCM, ... or OPH_DL_EXT_DEV
// for a device DLPack does not know).
constexpr const char* kDeviceType = "null";
constexpr int32_t kDlDeviceType = OPH_DL_EXT_DEV;

constexpr const char* kInactiveReason = "null backend: a skeleton for backend authors; it has no device";

// Everything the backend owns. One instance per call of the entry function, freed by release(). A real
// backend keeps its runtime handles here (loaded driver library, per-device contexts, cached property
// strings, ...). Do not use globals: the host may load the plugin more than once.
struct Backend {
  const oph_host_services* services = nullptr;  // valid until release() returns
  oph_device_backend_def def{};
  const oph_device_backend_def* devices[1] = {nullptr};
  oph_plugin_info plugin{};
};

// Makes the "UNAVAILABLE" status every device function of this skeleton returns.
oph_status* unavailable(const Backend* b, const char* what) noexcept {
  // status_create copies the message, so a stack buffer is fine. Format with snprintf (no exceptions) and
  // name the failing call and its values.
  char buf[160];
  std::snprintf(buf, sizeof buf, "null backend: %s is unavailable: it has no device (a skeleton only)", what);
  return b->services->status_create(OPH_CODE_UNAVAILABLE, buf);
}

// ---------------------------------------------------------------------------------------------------------
// Devices

// Required. Sets *out_count to the number of usable devices. A backend whose runtime or hardware is missing
// is not an error: it returns NULL (OK) with *out_count = 0 and *out_inactive_reason set to one line naming
// the cause, e.g. "no CUDA device: cudaGetDeviceCount returned 100" or "libcuda.so.1 not found". The host
// shows that line in `ophost plugins -v` and only fails when the user explicitly asked for this device.
// Return a status only when enumeration itself broke in an unexpected way.
oph_status* null_enumerate(void* backend, int32_t* out_count, const char** out_inactive_reason) noexcept {
  auto* b = static_cast<Backend*>(backend);
  if (!out_count) return b->services->status_create(OPH_CODE_INVALID_ARGUMENT, "null backend: out_count is NULL");
  // TODO(your backend): ask the runtime how many devices there are (cudaGetDeviceCount, hipGetDeviceCount,
  // ...). Enumerate once and cache the answer; the host may call this more than once.
  *out_count = 0;
  if (out_inactive_reason) *out_inactive_reason = kInactiveReason;  // static string: valid long enough
  return nullptr;
}

// Required. Fills *out_props for device `device_id` (0 <= id < count). The host sets out_props->struct_size
// to the size of the layout it knows: write only fields that lie inside it (OPH_HAS_FIELD), because an older
// host passes a smaller struct. Fill name, vendor, arch ("sm_90", "gfx90a"), features, total/free memory
// (free memory is read fresh on each call), compute capability, multiprocessors, fp16/bf16/int8 support, the
// alignment alloc guarantees and max_allocation. Strings stay valid until release().
oph_status* null_get_properties(void* backend, int32_t device_id, oph_device_properties* out_props) noexcept {
  (void)device_id;
  (void)out_props;
  // TODO(your backend): validate device_id, query the runtime (cudaGetDeviceProperties, cudaMemGetInfo, ...).
  return unavailable(static_cast<Backend*>(backend), "get_properties");
}

// ---------------------------------------------------------------------------------------------------------
// Memory. The host's memory pool and arenas sit on top of these raw calls: they are called rarely (at session
// start and when a pool grows), so they may be slow, but they must be thread-safe.

// Required. Allocates `bytes` (0 is allowed and returns a valid, freeable pointer) of device memory aligned
// to at least max(alignment, properties.alignment). On exhaustion return OPH_CODE_RESOURCE_EXHAUSTED with the
// size in the message: the host turns it into an out-of-memory error naming the node.
oph_status* null_alloc(void* backend, int32_t device_id, size_t bytes, size_t alignment, void** out_ptr) noexcept {
  (void)device_id;
  (void)bytes;
  (void)alignment;
  if (out_ptr) *out_ptr = nullptr;
  // TODO(your backend): cudaMalloc / hipMalloc / your allocator; set *out_ptr on success.
  return unavailable(static_cast<Backend*>(backend), "alloc");
}

// Required. Frees memory from alloc(); NULL must be accepted. Cannot fail (log through services->log if the
// runtime reports an error).
void null_free(void* backend, int32_t device_id, void* ptr) noexcept {
  (void)backend;
  (void)device_id;
  (void)ptr;
  // TODO(your backend): cudaFree / hipFree.
}

// Required. Copies `bytes` between host and device memory; kind is OPH_COPY_HOST_TO_DEVICE,
// OPH_COPY_DEVICE_TO_HOST or OPH_COPY_DEVICE_TO_DEVICE. With stream == NULL the copy is complete when the
// function returns; with a stream it is queued on that stream (cudaMemcpyAsync) and the host synchronizes
// before it reads the result. Host memory handed to a copy may be pageable.
oph_status* null_copy(void* backend, int32_t device_id, int32_t kind, void* dst, const void* src, size_t bytes,
                      void* stream) noexcept {
  (void)device_id;
  (void)kind;
  (void)dst;
  (void)src;
  (void)bytes;
  (void)stream;
  // TODO(your backend): cudaMemcpy(Async) with the matching direction.
  return unavailable(static_cast<Backend*>(backend), "copy");
}

// ---------------------------------------------------------------------------------------------------------
// Streams and events. All optional: leave a pointer NULL in the table and the host treats the device as
// synchronous (streams) or untimed (events). The executor runs each device's kernels in order on a stream it
// creates; the profiler records an event before and after each kernel and reads the time between them.

// Creates an in-order queue of work for device_id (cudaStreamCreateWithFlags(..., cudaStreamNonBlocking)).
oph_status* null_stream_create(void* backend, int32_t device_id, void** out_stream) noexcept {
  (void)device_id;
  if (out_stream) *out_stream = nullptr;
  // TODO(your backend): create the stream and store it in *out_stream.
  return unavailable(static_cast<Backend*>(backend), "stream_create");
}

// Destroys a stream from stream_create (after its work is done).
void null_stream_destroy(void* backend, int32_t device_id, void* stream) noexcept {
  (void)backend;
  (void)device_id;
  (void)stream;
  // TODO(your backend): cudaStreamDestroy.
}

// Blocks until all work queued on `stream` (NULL: the device's default stream) has finished; returns the
// first asynchronous error as a status (kernel faults show up here).
oph_status* null_stream_synchronize(void* backend, int32_t device_id, void* stream) noexcept {
  (void)device_id;
  (void)stream;
  // TODO(your backend): cudaStreamSynchronize.
  return unavailable(static_cast<Backend*>(backend), "stream_synchronize");
}

// Creates a timing event (cudaEventCreate, with timing enabled).
oph_status* null_event_create(void* backend, int32_t device_id, void** out_event) noexcept {
  (void)device_id;
  if (out_event) *out_event = nullptr;
  // TODO(your backend): create the event and store it in *out_event.
  return unavailable(static_cast<Backend*>(backend), "event_create");
}

void null_event_destroy(void* backend, int32_t device_id, void* event) noexcept {
  (void)backend;
  (void)device_id;
  (void)event;
  // TODO(your backend): cudaEventDestroy.
}

// Records `event` on `stream`: it completes when all work queued before it has finished.
oph_status* null_event_record(void* backend, int32_t device_id, void* event, void* stream) noexcept {
  (void)device_id;
  (void)event;
  (void)stream;
  // TODO(your backend): cudaEventRecord.
  return unavailable(static_cast<Backend*>(backend), "event_record");
}

// Blocks until `event` has completed.
oph_status* null_event_synchronize(void* backend, int32_t device_id, void* event) noexcept {
  (void)device_id;
  (void)event;
  // TODO(your backend): cudaEventSynchronize.
  return unavailable(static_cast<Backend*>(backend), "event_synchronize");
}

// Milliseconds between two recorded, completed events (>= 0 when `end` was recorded after `start`).
oph_status* null_event_elapsed_ms(void* backend, int32_t device_id, void* start, void* end, float* out_ms) noexcept {
  (void)device_id;
  (void)start;
  (void)end;
  if (out_ms) *out_ms = 0.0f;
  // TODO(your backend): cudaEventElapsedTime.
  return unavailable(static_cast<Backend*>(backend), "event_elapsed_ms");
}

// ---------------------------------------------------------------------------------------------------------
// Handshake

// Called once by the host before it unloads the library: free everything the backend owns. After it returns
// the host no longer uses the plugin info, the device table or any string the plugin handed out.
void null_release(void* plugin_state) noexcept {
  // TODO(your backend): release contexts and runtime handles (with no device work still pending).
  delete static_cast<Backend*>(plugin_state);
}

// The entry function (exported as oph_plugin_entry_v1 by OPH_DEFINE_PLUGIN_ENTRY below). It receives the
// host's ABI version and services and answers with the plugin info: name and version (equal to the
// manifest's), the ABI minor it was built with and the lowest host minor it needs, and its device table.
// Keep it cheap: discovery runs it for every plugin at every start. It should not touch the device beyond
// what enumerate needs; a missing driver is an *inactive* answer from enumerate, not an entry failure.
oph_status* null_entry(const oph_host_info* host, const oph_plugin_info** out_info) noexcept {
  // The host's services, ABI major and out_info, checked by the SDK's helper (a broken host gets NULL back:
  // without a status factory nothing can be reported).
  oph_status* refused = nullptr;
  if (!oph_entry_check(host, out_info, OPH_PLUGIN_NAME, &refused)) return refused;
  const oph_host_services* services = host->services;

  auto* b = new (std::nothrow) Backend();
  if (!b) return services->status_create(OPH_CODE_RESOURCE_EXHAUSTED, "null backend: out of memory");
  b->services = services;
  // TODO(your backend): load or initialise the device runtime here only if that is cheap and cannot fail
  // hard; otherwise do it lazily in enumerate and report "inactive" with the reason when it is missing.

  oph_device_backend_def& d = b->def;
  d.struct_size = OPH_DEVICE_BACKEND_DEF_STRUCT_SIZE;  // the end of its last field as this plugin was built
  d.device_type = kDeviceType;
  d.dl_device_type = kDlDeviceType;
  d.backend = b;  // handed back as the first argument of every function below
  d.enumerate = null_enumerate;
  d.get_properties = null_get_properties;
  d.alloc = null_alloc;
  d.free = null_free;
  d.copy = null_copy;
  d.stream_create = null_stream_create;
  d.stream_destroy = null_stream_destroy;
  d.stream_synchronize = null_stream_synchronize;
  d.event_create = null_event_create;
  d.event_destroy = null_event_destroy;
  d.event_record = null_event_record;
  d.event_synchronize = null_event_synchronize;
  d.event_elapsed_ms = null_event_elapsed_ms;
  b->devices[0] = &b->def;

  oph_plugin_info& p = b->plugin;
  p.struct_size = OPH_PLUGIN_INFO_STRUCT_SIZE;
  p.abi_major = OPH_ABI_MAJOR;
  p.minor_built = OPH_ABI_MINOR;
  p.minor_required = 0;  // raise it only when you use a field or service added in a later minor
  p.name = OPH_PLUGIN_NAME;
  p.version = OPH_PLUGIN_VERSION;
  p.kind = OPH_PLUGIN_KIND_DEVICE_BACKEND;
  p.ops = nullptr;  // a device backend has no operators; kernels for it live in operator packs
  p.num_ops = 0;
  p.devices = b->devices;
  p.num_devices = 1;
  p.plugin_state = b;
  p.release = null_release;

  *out_info = &b->plugin;
  return nullptr;
}

}  // namespace

OPH_DEFINE_PLUGIN_ENTRY(null_entry)
