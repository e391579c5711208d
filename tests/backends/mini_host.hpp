// A minimal host for driving device backends and operator packs directly through the C ABI, shared by the
// backend op suite (test_backend_ops.cpp) and the GPU benchmark (bench_backends.cpp): dlopen a plugin from
// the build tree, run the handshake with libophost's services table, find an op by (domain, name, device,
// opset), infer its output shapes, create the kernel and run it on a backend stream with device buffers
// allocated and filled through the backend's own alloc/copy. No manifest checks (the loader tests cover them).
#pragma once

#include "plugin_library.hpp"

#include <ophost/ophost_plugin.h>
#include <ophost/services.hpp>

#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

// Equality of DLPack dtypes (the SDK's C++ layer defines the same; this file uses only the C header).
inline bool operator==(oph_dtype a, oph_dtype b) noexcept {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

namespace minihost {

namespace fs = std::filesystem;

using ophost::testing::plugin_library;

inline std::string take(oph_status* s) { return ophost::consume_status(s); }

inline void check(oph_status* s, const std::string& what) {
  if (s) throw std::runtime_error(what + ": " + take(s));
}

class Plugin {
 public:
  // Empty error() on success; otherwise why it could not be loaded.
  explicit Plugin(const std::string& name) : name_(name) {
    fs::path lib = plugin_library(name);
    if (!fs::exists(lib)) {
      error_ = "plugin " + name + " is not built (" + lib.string() + " missing)";
      return;
    }
    handle_ = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
      error_ = std::string("dlopen failed: ") + dlerror();
      return;
    }
    auto entry = reinterpret_cast<oph_plugin_entry_fn>(dlsym(handle_, OPH_PLUGIN_ENTRY_SYMBOL));
    if (!entry) {
      error_ = std::string(OPH_PLUGIN_ENTRY_SYMBOL) + " not exported by " + lib.string();
      return;
    }
    dir_ = lib.parent_path().string();
    host_.struct_size = OPH_HOST_INFO_STRUCT_SIZE;
    host_.abi_major = OPH_ABI_MAJOR;
    host_.abi_minor = OPH_ABI_MINOR;
    host_.services = ophost::host_services();
    host_.host_version = "0.0.0-test";
    host_.plugin_dir = dir_.c_str();
    if (oph_status* s = entry(&host_, &info_)) {
      error_ = "entry failed: " + take(s);
      info_ = nullptr;
    }
  }
  ~Plugin() {
    if (info_ && info_->release) info_->release(info_->plugin_state);
    if (handle_) dlclose(handle_);
  }
  Plugin(const Plugin&) = delete;
  Plugin& operator=(const Plugin&) = delete;

  bool ok() const { return info_ != nullptr; }
  const std::string& error() const { return error_; }
  const oph_plugin_info* info() const { return info_; }
  const std::string& name() const { return name_; }

  // The op serving (domain, name) on `device` at `opset`, or NULL.
  const oph_op_def* find_op(const std::string& domain, const std::string& op, const std::string& device,
                            int32_t opset) const {
    if (!info_) return nullptr;
    for (size_t i = 0; i < info_->num_ops; ++i) {
      const oph_op_def* d = info_->ops[i];
      if (domain == d->domain && op == d->name && device == d->device && d->since_version <= opset &&
          opset <= d->end_version)
        return d;
    }
    return nullptr;
  }

 private:
  std::string name_, error_, dir_;
  void* handle_ = nullptr;
  oph_host_info host_{};
  const oph_plugin_info* info_ = nullptr;
};

// A device backend plugin with its first device.
class Backend {
 public:
  explicit Backend(const std::string& plugin) : plugin_(plugin) {
    if (!plugin_.ok()) {
      reason_ = plugin_.error();
      return;
    }
    if (plugin_.info()->num_devices < 1) {
      reason_ = plugin + " has no device table";
      return;
    }
    dev_ = plugin_.info()->devices[0];
    const char* why = nullptr;
    if (oph_status* s = dev_->enumerate(dev_->backend, &count_, &why)) {
      reason_ = "enumerate failed: " + take(s);
      count_ = 0;
      return;
    }
    if (count_ == 0) reason_ = why ? why : "no device (no reason given)";
  }
  bool active() const { return dev_ && count_ > 0; }
  const std::string& reason() const { return reason_; }
  const oph_device_backend_def* def() const { return dev_; }
  int32_t count() const { return count_; }
  oph_device device() const { return {dev_->dl_device_type, 0}; }
  std::string type() const { return dev_ ? dev_->device_type : "?"; }

  void* alloc(size_t bytes) {
    void* p = nullptr;
    check(dev_->alloc(dev_->backend, 0, bytes, 0, &p), type() + " alloc");
    return p;
  }
  void free(void* p) { dev_->free(dev_->backend, 0, p); }
  void copy(int32_t kind, void* dst, const void* src, size_t bytes, void* stream) {
    check(dev_->copy(dev_->backend, 0, kind, dst, src, bytes, stream), type() + " copy");
  }
  void* stream_create() {
    void* s = nullptr;
    if (dev_->stream_create) check(dev_->stream_create(dev_->backend, 0, &s), type() + " stream_create");
    return s;
  }
  void stream_destroy(void* s) {
    if (dev_->stream_destroy && s) dev_->stream_destroy(dev_->backend, 0, s);
  }
  void sync(void* s) {
    if (dev_->stream_synchronize) check(dev_->stream_synchronize(dev_->backend, 0, s), type() + " stream_synchronize");
  }

 private:
  Plugin plugin_;
  const oph_device_backend_def* dev_ = nullptr;
  int32_t count_ = 0;
  std::string reason_;
};

// A host-side tensor (float32, int32 or int64).
struct HostTensor {
  oph_dtype dtype{OPH_DTYPE_FLOAT, 32, 1};
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  size_t numel() const {
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    return n;
  }
  size_t elem_size() const { return dtype.bits / 8; }
  template <class T>
  T* data() { return reinterpret_cast<T*>(bytes.data()); }
  template <class T>
  const T* data() const { return reinterpret_cast<const T*>(bytes.data()); }
  template <class T>
  static HostTensor make(oph_dtype dt, std::vector<int64_t> shape, const std::vector<T>& values) {
    HostTensor t;
    t.dtype = dt;
    t.shape = std::move(shape);
    t.bytes.resize(values.size() * sizeof(T));
    std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
    return t;
  }
};

using AttrValue = std::variant<float, int64_t>;

// Attribute values in schema order: defaults, overridden by `attrs`.
inline std::vector<oph_attr_value> resolve_attrs(const oph_op_def* op, const std::map<std::string, AttrValue>& attrs) {
  std::vector<oph_attr_value> out;
  for (size_t i = 0; i < op->num_attributes; ++i) {
    const oph_attr_def* d = op->attributes[i];
    oph_attr_value v{};  // no default: OPH_ATTR_UNDEFINED
    if (d->default_value) v = *d->default_value;
    v.struct_size = OPH_ATTR_VALUE_STRUCT_SIZE;
    if (auto it = attrs.find(d->name); it != attrs.end()) {
      v.type = d->type;
      if (auto* f = std::get_if<float>(&it->second)) v.f = *f;
      if (auto* n = std::get_if<int64_t>(&it->second)) v.i = *n;
    }
    out.push_back(v);
  }
  for (const auto& [name, value] : attrs) {
    bool known = false;
    for (size_t i = 0; i < op->num_attributes; ++i)
      known |= name == op->attributes[i]->name;
    if (!known) throw std::runtime_error(std::string(op->name) + " has no attribute " + name);
  }
  return out;
}

// A prepared kernel: output shapes inferred, state created.
class Kernel {
 public:
  Kernel(const oph_op_def* op, const std::vector<HostTensor>& inputs, const std::map<std::string, AttrValue>& attrs,
         oph_device device, size_t num_outputs = 1)
      : op_(op), attrs_(resolve_attrs(op, attrs)) {
    std::vector<oph_value_info> in(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      in[i].struct_size = OPH_VALUE_INFO_STRUCT_SIZE;
      in[i].present = true;
      in[i].dtype = inputs[i].dtype;
      in[i].ndim = static_cast<int32_t>(inputs[i].shape.size());
      std::copy(inputs[i].shape.begin(), inputs[i].shape.end(), in[i].shape);
    }
    outs_.resize(num_outputs);
    for (auto& o : outs_) {
      o.struct_size = OPH_VALUE_INFO_STRUCT_SIZE;
      o.present = true;
    }
    std::vector<const oph_value_info*> in_ptrs;
    std::vector<oph_value_info*> out_ptrs;
    std::vector<const oph_attr_value*> attr_ptrs;
    for (const auto& v : in) in_ptrs.push_back(&v);
    for (auto& v : outs_) out_ptrs.push_back(&v);
    for (const auto& v : attrs_) attr_ptrs.push_back(&v);
    oph_infer_context ic{};
    ic.struct_size = OPH_INFER_CONTEXT_STRUCT_SIZE;
    ic.services = ophost::host_services();
    ic.op = op;
    ic.num_inputs = in.size();
    ic.inputs = in_ptrs.data();
    ic.num_outputs = outs_.size();
    ic.outputs = out_ptrs.data();
    ic.num_attrs = attrs_.size();
    ic.attrs = attr_ptrs.data();
    ic.node_name = "test_node";
    check(op->infer(&ic), std::string(op->name) + " infer");
    oph_kernel_create_args ca{};
    ca.struct_size = OPH_KERNEL_CREATE_ARGS_STRUCT_SIZE;
    ca.services = ophost::host_services();
    ca.op = op;
    ca.num_inputs = in.size();
    ca.inputs = in_ptrs.data();
    ca.num_outputs = outs_.size();
    ca.outputs = out_ptrs.data();
    ca.num_attrs = attrs_.size();
    ca.attrs = attr_ptrs.data();
    ca.node_name = "test_node";
    ca.device = device;
    if (op->create_kernel) check(op->create_kernel(&ca, &state_), std::string(op->name) + " create_kernel");
  }
  ~Kernel() {
    if (op_->destroy_kernel && state_) op_->destroy_kernel(state_);
  }
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;

  const oph_value_info& output_info(size_t i) const { return outs_[i]; }
  void* state() const { return state_; }
  const oph_op_def* op() const { return op_; }

 private:
  const oph_op_def* op_;
  std::vector<oph_attr_value> attrs_;
  std::vector<oph_value_info> outs_;
  void* state_ = nullptr;
};

// Device buffers for one call, freed with the object.
struct DeviceTensor {
  Backend* backend = nullptr;
  void* ptr = nullptr;
  std::vector<int64_t> shape;
  oph_tensor t{};
  DeviceTensor(Backend& b, oph_dtype dt, std::vector<int64_t> s, size_t bytes) : backend(&b), shape(std::move(s)) {
    ptr = b.alloc(bytes);
    t.data = ptr;
    t.device = b.device();
    t.ndim = static_cast<int32_t>(shape.size());
    t.dtype = dt;
    t.shape = shape.data();
    t.strides = nullptr;
    t.byte_offset = 0;
  }
  ~DeviceTensor() { backend->free(ptr); }
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;
};

// Launches the kernel on `stream` with device tensors (no synchronization).
inline void launch(Kernel& k, Backend& b, void* stream, const std::vector<oph_tensor*>& ins,
                   const std::vector<oph_tensor*>& outs) {
  oph_compute_context cc{};
  cc.struct_size = OPH_COMPUTE_CONTEXT_STRUCT_SIZE;
  cc.services = ophost::host_services();
  cc.num_inputs = ins.size();
  cc.inputs = ins.data();
  cc.num_outputs = outs.size();
  cc.outputs = outs.data();
  cc.stream = stream;
  cc.device = b.device();
  cc.allocate_output = nullptr;
  check(k.op()->compute(k.state(), &cc), std::string(k.op()->name) + " compute on " + b.type());
}

// Runs `op` once on backend `b`: inputs copied in, computed on a fresh stream, outputs copied back.
inline std::vector<HostTensor> run(const oph_op_def* op, Backend& b, const std::vector<HostTensor>& inputs,
                                   const std::map<std::string, AttrValue>& attrs, size_t num_outputs = 1) {
  Kernel k(op, inputs, attrs, b.device(), num_outputs);
  void* stream = b.stream_create();
  struct StreamGuard {
    Backend& b;
    void* s;
    ~StreamGuard() { b.stream_destroy(s); }
  } guard{b, stream};
  std::vector<std::unique_ptr<DeviceTensor>> din, dout;
  std::vector<oph_tensor*> ins, outs;
  for (const HostTensor& h : inputs) {
    din.push_back(std::make_unique<DeviceTensor>(b, h.dtype, h.shape, h.bytes.size()));
    b.copy(OPH_COPY_HOST_TO_DEVICE, din.back()->ptr, h.bytes.data(), h.bytes.size(), stream);
    ins.push_back(&din.back()->t);
  }
  std::vector<HostTensor> result(num_outputs);
  for (size_t i = 0; i < num_outputs; ++i) {
    const oph_value_info& o = k.output_info(i);
    if (o.ndim < 0) throw std::runtime_error(std::string(op->name) + ": output rank unknown after infer");
    result[i].dtype = o.dtype;
    result[i].shape.assign(o.shape, o.shape + o.ndim);
    result[i].bytes.resize(result[i].numel() * result[i].elem_size());
    dout.push_back(std::make_unique<DeviceTensor>(b, o.dtype, result[i].shape, result[i].bytes.size()));
    outs.push_back(&dout.back()->t);
  }
  launch(k, b, stream, ins, outs);
  for (size_t i = 0; i < num_outputs; ++i)
    b.copy(OPH_COPY_DEVICE_TO_HOST, result[i].bytes.data(), dout[i]->ptr, result[i].bytes.size(), stream);
  b.sync(stream);
  return result;
}

}  // namespace minihost
