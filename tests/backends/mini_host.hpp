// A minimal host for driving device backends and operator packs directly, shared by the backend op suite
// (test_backend_ops.cpp) and the GPU benchmark (bench_backends.cpp): a plugin loaded from the build tree with
// the loader's own checks (ophost::PluginLibrary, no manifest), its ops converted once into schemas, an op found
// by (domain, name, device, opset) and run through libophost's op runner (ophost::OpRunner: attributes, infer,
// create_kernel, compute) on a backend stream, with device buffers allocated and filled through the backend's
// own alloc/copy. No manifest checks (the loader tests cover them).
#pragma once

#include "plugin_library.hpp"

#include <ophost/error.hpp>
#include <ophost/manifest.hpp>
#include <ophost/op_runner.hpp>
#include <ophost/op_schema.hpp>
#include <ophost/ophost_plugin.h>
#include <ophost/pack.hpp>
#include <ophost/services.hpp>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

// Equality of DLPack dtypes (the SDK's C++ layer defines the same; this file does not include that layer).
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
    try {
      lib_ = ophost::PluginLibrary::load(lib, {}, nullptr, "plugin " + name + ": ");
    } catch (const ophost::Error& e) {
      error_ = e.what();
      return;
    }
    for (const oph_op_def* op : lib_->ops()) schemas_.push_back(ophost::OpSchema::from_def(*op));
  }

  bool ok() const { return lib_ != nullptr; }
  const std::string& error() const { return error_; }
  const std::string& name() const { return name_; }
  // The device tables (validated; empty when not loaded).
  const std::vector<const oph_device_backend_def*>& devices() const {
    static const std::vector<const oph_device_backend_def*> none;
    return lib_ ? lib_->devices() : none;
  }

  // The op serving (domain, name) on `device` at `opset`, or NULL.
  const ophost::OpSchema* find_op(const std::string& domain, const std::string& op, const std::string& device,
                                  int32_t opset) const {
    for (const ophost::OpSchema& s : schemas_)
      if (s.domain == ophost::normalize_domain(domain) && s.name == op && s.device == device && s.contains(opset))
        return &s;
    return nullptr;
  }

 private:
  std::string name_, error_;
  std::unique_ptr<ophost::PluginLibrary> lib_;  // releases the plugin
  std::vector<ophost::OpSchema> schemas_;       // point into the plugin: destroyed first
};

// A device backend plugin with its first device.
class Backend {
 public:
  explicit Backend(const std::string& plugin) : plugin_(plugin) {
    if (!plugin_.ok()) {
      reason_ = plugin_.error();
      return;
    }
    if (plugin_.devices().empty()) {
      reason_ = plugin + " has no device table";
      return;
    }
    dev_ = plugin_.devices()[0];
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

// The attribute values by name, as the op runner takes them (a float or an int each).
inline std::vector<ophost::NamedAttr> named_attrs(const std::map<std::string, AttrValue>& attrs) {
  std::vector<ophost::NamedAttr> out;
  for (const auto& [name, value] : attrs) {
    ophost::NamedAttr& a = out.emplace_back();
    a.name = name;
    a.value.struct_size = OPH_ATTR_VALUE_STRUCT_SIZE;
    if (const auto* f = std::get_if<float>(&value)) {
      a.value.type = OPH_ATTR_FLOAT;
      a.value.f = *f;
    } else {
      a.value.type = OPH_ATTR_INT;
      a.value.i = std::get<int64_t>(value);
    }
  }
  return out;
}

// A prepared kernel: attributes resolved, output shapes inferred, state created (all through ophost::OpRunner,
// which throws ophost::Error naming the op on any failure).
class Kernel {
 public:
  Kernel(const ophost::OpSchema& op, const std::vector<HostTensor>& inputs,
         const std::map<std::string, AttrValue>& attrs, oph_device device)
      : runner_(op, named_attrs(attrs), {nullptr, "test_node"}) {
    std::vector<oph_value_info> in;
    for (const HostTensor& t : inputs) in.push_back(ophost::value_info(t.dtype, t.shape));
    outs_ = runner_.infer(in);
    kernel_ = runner_.create_kernel(in, outs_, device);
  }

  size_t num_outputs() const { return outs_.size(); }
  const oph_value_info& output_info(size_t i) const { return outs_.at(i); }
  // Launches the kernel on `stream` with device tensors (no synchronization).
  void launch(void* stream, const std::vector<oph_tensor*>& ins, const std::vector<oph_tensor*>& outs) const {
    const std::vector<const oph_tensor*> in(ins.begin(), ins.end());
    ophost::ComputeArgs args;
    args.inputs = in;
    args.outputs = outs;
    args.stream = stream;
    kernel_.compute(args);
  }

 private:
  ophost::OpRunner runner_;
  std::vector<oph_value_info> outs_;
  ophost::OpKernel kernel_;  // destroyed first
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

// Runs `op` once on backend `b`: inputs copied in, computed on a fresh stream, outputs copied back.
inline std::vector<HostTensor> run(const ophost::OpSchema& op, Backend& b, const std::vector<HostTensor>& inputs,
                                   const std::map<std::string, AttrValue>& attrs) {
  Kernel k(op, inputs, attrs, b.device());
  const size_t num_outputs = k.num_outputs();
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
    if (o.ndim < 0) throw std::runtime_error(op.describe() + ": output rank unknown after infer");
    result[i].dtype = o.dtype;
    result[i].shape.assign(o.shape, o.shape + o.ndim);
    result[i].bytes.resize(result[i].numel() * result[i].elem_size());
    dout.push_back(std::make_unique<DeviceTensor>(b, o.dtype, result[i].shape, result[i].bytes.size()));
    outs.push_back(&dout.back()->t);
  }
  k.launch(stream, ins, outs);
  for (size_t i = 0; i < num_outputs; ++i)
    b.copy(OPH_COPY_DEVICE_TO_HOST, result[i].bytes.data(), dout[i]->ptr, result[i].bytes.size(), stream);
  b.sync(stream);
  return result;
}

}  // namespace minihost
