#include "exec/placement.hpp"

#include "registry/registry.hpp"

#include <ophost/services.hpp>

#include <spdlog/spdlog.h>

#include <deque>

namespace ophost {

namespace {

// The host's own Copy op: its state says how to copy; infer keeps dtype and shape.
struct CopyState {
  const oph_device_backend_def* backend;  // the device side's backend
  int32_t kind;                           // OPH_COPY_*
};

oph_status* copy_infer(const oph_infer_context* c) {
  c->outputs[0]->dtype = c->inputs[0]->dtype;
  c->outputs[0]->ndim = c->inputs[0]->ndim;
  for (int32_t k = 0; k < c->inputs[0]->ndim && k < OPH_MAX_NDIM; ++k) c->outputs[0]->shape[k] = c->inputs[0]->shape[k];
  return nullptr;
}

oph_status* copy_compute(void* state, const oph_compute_context* c) {
  const auto* st = static_cast<const CopyState*>(state);
  const oph_tensor* in = c->inputs[0];
  oph_tensor* out = c->outputs[0];
  size_t n = 1;
  for (int32_t k = 0; k < in->ndim; ++k) n *= static_cast<size_t>(in->shape[k]);
  size_t bytes = n * ((static_cast<size_t>(in->dtype.bits) * in->dtype.lanes + 7) / 8);
  if (bytes == 0) return nullptr;
  const void* src = static_cast<const char*>(in->data) + in->byte_offset;
  void* dst = static_cast<char*>(out->data) + out->byte_offset;
  // stream NULL: synchronous, so host readers after a device-to-host copy see the data.
  return st->backend->copy(st->backend->backend, 0, st->kind, dst, src, bytes, nullptr);
}

const oph_io_def kCopyIoDef = {OPH_IO_DEF_STRUCT_SIZE, "X", "T", OPH_ARITY_SINGLE, 1, OPH_MEMORY_DEVICE};
const oph_io_def* const kCopyIo[1] = {&kCopyIoDef};
const oph_op_def kCopyOp = {OPH_OP_DEF_STRUCT_SIZE, "ophost", "Copy", 1, OPH_OPSET_MAX, "any", kCopyIo, 1, kCopyIo, 1,
                            nullptr, 0, nullptr, 0, nullptr, 0, 0, nullptr, copy_infer, nullptr, nullptr,
                            copy_compute, "copy between host and device memory"};

const OpEntry& copy_entry() {
  static const OpEntry e = [] {
    OpSource host;
    host.plugin_name = "ophost (host)";
    return OpEntry{std::make_shared<const OpSchema>(OpSchema::from_def(kCopyOp)), host};
  }();
  return e;
}

}  // namespace

std::map<std::string, DeviceTarget> device_targets(const PluginSet* plugins) {
  std::map<std::string, DeviceTarget> t;
  t["cpu"] = DeviceTarget{"cpu", nullptr, OPH_DL_CPU, true, {}};
  if (!plugins) return t;
  // Backends not loaded because their device is absent (manifest probe): known, unusable, with the reason.
  for (const auto& [type, why] : plugins->inactive_devices()) t[type] = DeviceTarget{type, nullptr, 0, false, why};
  for (const auto& plugin : plugins->loaded()) {
    for (const oph_device_backend_def* d : plugin->devices()) {
      std::string type = d->device_type;
      if (type == "cpu") {
        t["cpu"].backend = d;
        continue;
      }
      DeviceTarget& dt = t[type];
      if (dt.usable) continue;  // the first usable backend of a type serves it
      dt.type = type;
      dt.backend = d;
      dt.dl_type = d->dl_device_type;
      int32_t count = 0;
      const char* reason = nullptr;
      oph_status* st = d->enumerate(d->backend, &count, &reason);
      if (st) {
        dt.reason = "enumerate failed: " + consume_status(st);
      } else if (count <= 0) {
        dt.reason = reason ? reason : "no device";
      } else {
        dt.usable = true;
        dt.reason.clear();
      }
    }
  }
  return t;
}

std::vector<std::string> placement_order(const std::vector<std::string>& requested,
                                         const std::map<std::string, DeviceTarget>& targets) {
  if (requested.empty()) return {"cpu"};
  std::vector<std::string> order;
  for (const std::string& d : requested) {
    auto it = targets.find(d);
    if (it == targets.end()) {
      std::string known;
      for (const auto& [name, t] : targets) known += (known.empty() ? "" : ", ") + name;
      throw Error(Code::kFailedPrecondition, "device '" + d + "' was requested but no loaded backend provides it "
                                             "(devices: " + known + "); check `ophost plugins -v`");
    }
    if (!it->second.usable) {
      throw Error(Code::kFailedPrecondition, "device '" + d + "' was requested but its backend is inactive: " +
                                                 it->second.reason);
    }
    order.push_back(d);
  }
  return order;
}

size_t insert_copies(Session::Impl& s, const std::map<std::string, DeviceTarget>& targets) {
  bool any_device = false;
  for (const PreparedNode& pn : s.nodes) any_device = any_device || pn.device != "cpu";
  if (!any_device) return 0;

  // Where each value lives before copies: its producer's device, host for inputs and constants.
  for (ValueSlot& v : s.values) {
    v.device = "cpu";
    v.dl_type = OPH_DL_CPU;
  }
  for (const PreparedNode& pn : s.nodes) {
    for (int v : pn.outputs) {
      if (v < 0) continue;
      s.values[v].device = pn.device;
      s.values[v].dl_type = pn.dl_type;
    }
  }
  std::vector<PreparedNode> out;
  out.reserve(s.nodes.size() * 2);
  std::map<std::pair<int, std::string>, int> copies;  // (value, device) -> value on that device
  size_t inserted = 0, uploaded = 0;
  auto copy_of = [&](int v, const std::string& dev) -> int {
    auto key = std::make_pair(v, dev);
    if (auto it = copies.find(key); it != copies.end()) return it->second;
    const DeviceTarget& target = targets.at(dev);
    const ValueSlot src = s.values[v];  // copy: push_back below may reallocate
    int nv = static_cast<int>(s.values.size());
    ValueSlot slot;
    slot.name = src.name + "@" + dev;
    slot.device = dev;
    slot.dl_type = target.dl_type;
    if (src.constant && dev != "cpu") {
      // A constant a device node reads: uploaded once, now.
      const Tensor& t = *src.constant;
      void* p = nullptr;
      throw_if_error(target.backend->alloc(target.backend->backend, 0, std::max<size_t>(t.nbytes(), 1), 256, &p),
                     "uploading constant '" + src.name + "' to " + dev);
      slot.device_constant = p;
      s.values.push_back(slot);  // owned from here on: free_device_constants releases it
      if (t.nbytes()) {
        throw_if_error(target.backend->copy(target.backend->backend, 0, OPH_COPY_HOST_TO_DEVICE, p, t.data(),
                                            t.nbytes(), nullptr),
                       "uploading constant '" + src.name + "' to " + dev);
      }
      s.values[nv].constant = src.constant;  // host copy, for infer() and shapes
      ++uploaded;
    } else {
      s.values.push_back(slot);
      PreparedNode cp;
      cp.is_copy = true;
      cp.entry = &copy_entry();
      cp.schema = cp.entry->schema.get();
      cp.calls = &cp.schema->calls;
      cp.device = dev;
      cp.dl_type = target.dl_type;
      const bool to_host = dev == "cpu";
      const DeviceTarget& side = to_host ? targets.at(src.device) : target;
      auto state = std::make_unique<CopyState>(CopyState{
          side.backend, to_host ? OPH_COPY_DEVICE_TO_HOST
                                : (src.device == "cpu" ? OPH_COPY_HOST_TO_DEVICE : OPH_COPY_DEVICE_TO_DEVICE)});
      cp.state = state.get();
      s.copy_states.push_back(std::shared_ptr<void>(std::move(state)));
      Node& n = s.synthetic_nodes.emplace_back();
      n.name = "Copy_" + src.name + "_to_" + dev;
      n.domain = "ophost";
      n.op_type = "Copy";
      n.inputs = {src.name};
      n.outputs = {slot.name};
      cp.node = &n;
      cp.label = s.model.path.string() + ": node '" + n.name + "' (ophost::Copy " + src.device + " -> " + dev + ")";
      cp.inputs = {v};
      cp.outputs = {nv};
      out.push_back(std::move(cp));
      ++inserted;
    }
    copies.emplace(key, nv);
    return nv;
  };
  for (PreparedNode& pn : s.nodes) {
    for (size_t i = 0; i < pn.inputs.size(); ++i) {
      int v = pn.inputs[i];
      if (v < 0) continue;
      const IoSchema* formal = pn.schema->formal_input(i);
      const bool host_input = formal && formal->host_memory;
      const std::string need = host_input ? std::string("cpu") : pn.device;
      if (s.values[v].device != need) pn.inputs[i] = copy_of(v, need);
    }
    out.push_back(std::move(pn));
  }
  // Graph outputs are returned in host memory.
  for (int& v : s.output_values) {
    if (s.values[v].device == "cpu") continue;
    s.values[v].graph_output = false;
    v = copy_of(v, "cpu");
    s.values[v].graph_output = true;
  }
  s.nodes = std::move(out);
  // Producers, consumers and last uses for the new order.
  for (ValueSlot& v : s.values) {
    v.producer = -1;
    v.consumers.clear();
    v.last_use = -1;
  }
  for (size_t ni = 0; ni < s.nodes.size(); ++ni) {
    for (int v : s.nodes[ni].inputs) {
      if (v < 0) continue;
      s.values[v].consumers.push_back(static_cast<int>(ni));
      s.values[v].last_use = static_cast<int>(ni);
    }
    for (int v : s.nodes[ni].outputs)
      if (v >= 0) s.values[v].producer = static_cast<int>(ni);
  }
  s.copy_count = inserted;
  spdlog::info("placement: {} Copy nodes inserted at device boundaries, {} constants uploaded once", inserted,
               uploaded);
  return inserted;
}

void free_device_constants(Session::Impl& s, const std::map<std::string, DeviceTarget>& targets) {
  for (ValueSlot& v : s.values) {
    if (!v.device_constant) continue;
    auto it = targets.find(v.device);
    if (it != targets.end() && it->second.backend) it->second.backend->free(it->second.backend->backend, 0, v.device_constant);
    v.device_constant = nullptr;
  }
}

}  // namespace ophost
