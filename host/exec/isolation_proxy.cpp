#include "exec/isolation_proxy.hpp"

#include "exec/run_hooks.hpp"
#include "exec/session_impl.hpp"
#include "exec/isolation_protocol.hpp"
#include "exec/isolation_worker_process.hpp"
#include "registry/registry.hpp"

#include <ophost/services.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <type_traits>

namespace ophost::isolation {

static_assert(std::is_standard_layout_v<ProxyOp>, "ProxyOp must stay standard-layout (proxy_of casts to it)");

IsolatedPacks::IsolatedPacks() = default;
IsolatedPacks::~IsolatedPacks() = default;

namespace {

using Clock = std::chrono::steady_clock;
// Bookkeeping calls (kernel_impl, destroy_kernel) outside a run's deadline.
constexpr auto kQuickCall = std::chrono::seconds(10);

std::atomic<uint64_t> g_next_kernel{1};

// One node's kernel in the worker, as the host sees it.
struct ProxyKernel {
  const ProxyOp* op = nullptr;
  uint64_t id = 0;
  uint64_t generation = 0;          // of the worker that holds the kernel (0: none yet)
  std::string what;                 // "node 'n' (op domain::name)", for messages
  Writer create;                    // the create request, sent again after a restart
  std::vector<const void*> constants;  // per input: the constant's data given at create (sent once), or null
  std::vector<bool> mutates;           // per input: MUTATES_INPUT (copied back after compute)
  Writer request;                      // compute requests (reused)
  std::vector<std::byte> reply;
  std::vector<uint64_t> in_offset, out_offset;
  std::string impl;
};

const ProxyOp& proxy_of(const oph_op_def* def) { return *reinterpret_cast<const ProxyOp*>(def); }

std::span<const int64_t> dims(const oph_tensor& t) {
  return {t.shape, static_cast<size_t>(std::max(0, t.ndim))};
}

const std::byte* bytes_of(const oph_tensor& t) { return static_cast<const std::byte*>(t.data) + t.byte_offset; }

// Bytes of a tensor the worker can be given: compact, numeric, on the CPU.
size_t checked_bytes(const oph_tensor& t, const std::string& what) {
  if (t.dtype.code == OPH_DTYPE_OPAQUE)
    throw Error(Code::kUnimplemented, what + " is a string tensor, which pack isolation does not carry; run this "
                                             "pack in the host's process (leave it out of --isolate-packs)");
  if (t.strides != nullptr) throw Error(Code::kUnimplemented, what + " is strided, which pack isolation does not carry");
  return tensor_bytes(t.dtype, dims(t));
}

void put_tensor(Writer& w, const oph_tensor& t, const std::string& what) {
  const size_t n = checked_bytes(t, what);
  w.dtype(t.dtype);
  w.shape(dims(t));
  w.u64(n);
  w.raw(bytes_of(t), n);
}

void put_value_info(Writer& w, const oph_value_info& v) {
  w.u32(v.present ? 1 : 0);
  if (!v.present) return;
  w.dtype(v.dtype);
  w.i32(v.ndim);
  for (int32_t k = 0; k < v.ndim && k < OPH_MAX_NDIM; ++k) w.i64(v.shape[k]);
}

void put_attr(Writer& w, const oph_attr_value& a, const std::string& what) {
  const bool tensor_missing = a.type == OPH_ATTR_TENSOR && a.tensor == nullptr;
  w.i32(tensor_missing ? OPH_ATTR_UNDEFINED : a.type);
  w.f32(a.f);
  w.i64(a.i);
  w.u64(a.count);
  switch (a.type) {
    case OPH_ATTR_STRING: w.str(std::string_view(a.s ? a.s : "", a.s ? a.count : 0)); break;
    case OPH_ATTR_FLOATS: w.raw(a.floats, a.count * sizeof(float)); break;
    case OPH_ATTR_INTS: w.raw(a.ints, a.count * sizeof(int64_t)); break;
    case OPH_ATTR_STRINGS:
      for (size_t s = 0; s < a.count; ++s) w.str(a.strings[s]);
      break;
    case OPH_ATTR_TENSOR:
      if (a.tensor) put_tensor(w, *a.tensor, what);
      break;
    default: break;
  }
}

// Reply: status code and message; throws nothing, returns the status (null for OK).
oph_status* reply_status(Reader& r) {
  const auto code = static_cast<Code>(r.i32());
  std::string msg = r.str();
  return code == Code::kOk ? nullptr : make_status(code, msg);
}

// Creates `k` in the running worker (the caller holds the worker's mutex).
void create_in_worker(ProxyKernel& k) {
  PackWorker& w = *k.op->worker;
  const uint64_t generation = w.ensure_running();
  std::vector<std::byte> reply = w.call(k.create, "create_kernel of " + k.what, Clock::time_point::max());
  Reader r(reply);
  throw_if_error(reply_status(r), "pack '" + w.pack() + "' (isolated): " + k.what);
  k.generation = generation;
}

oph_status* proxy_create(const oph_kernel_create_args* a, void** out_state) noexcept {
  try {
    const ProxyOp& p = proxy_of(a->op);
    auto k = std::make_unique<ProxyKernel>();
    k->op = &p;
    k->id = g_next_kernel++;
    const std::string node = a->node_name ? a->node_name : "";
    const std::string domain = p.schema->domain.empty() ? "ai.onnx" : p.schema->domain;
    k->what = "node '" + node + "' (op " + domain + "::" + p.schema->name + ")";
    Writer& w = k->create;
    w.u32(static_cast<uint32_t>(Request::kCreate));
    w.u64(k->id);
    w.u32(p.index);
    w.str(p.schema->describe());
    w.str(node);
    w.u32(static_cast<uint32_t>(a->num_inputs));
    k->constants.assign(a->num_inputs, nullptr);
    k->mutates.assign(a->num_inputs, false);
    for (size_t i = 0; i < a->num_inputs; ++i) {
      const oph_value_info& v = *a->inputs[i];
      put_value_info(w, v);
      const bool constant = v.present && v.constant && v.constant->data;
      w.u32(constant ? 1 : 0);
      if (!constant) continue;
      put_tensor(w, *v.constant, k->what + ": constant input " + std::to_string(i));
      k->constants[i] = v.constant->data;
    }
    w.u32(static_cast<uint32_t>(a->num_outputs));
    for (size_t o = 0; o < a->num_outputs; ++o) put_value_info(w, *a->outputs[o]);
    w.u32(static_cast<uint32_t>(a->num_attrs));
    for (size_t i = 0; i < a->num_attrs; ++i) put_attr(w, *a->attrs[i], k->what + ": attribute " + std::to_string(i));
    for (size_t i = 0; i < k->mutates.size(); ++i) k->mutates[i] = p.schema->declares(OPH_ALIAS_MUTATES_INPUT, i);
    std::lock_guard lock(p.worker->mutex());
    create_in_worker(*k);
    *out_state = k.release();
    return nullptr;
  } catch (const Error& e) {
    return make_status(e.code(), e.what());
  } catch (const std::exception& e) {
    return make_status(Code::kInternal, std::string("pack isolation: ") + e.what());
  }
}

// True when input i is the constant the worker was given with create_kernel (it keeps its own copy).
bool is_constant(const ProxyKernel& k, size_t i, const oph_tensor& t) {
  return i < k.constants.size() && k.constants[i] != nullptr && k.constants[i] == t.data;
}

// The compute request for `ctx` (inputs copied into the shared region); returns the region's bytes in use.
size_t write_compute(ProxyKernel& k, const oph_compute_context* ctx) {
  PackWorker& w = *k.op->worker;
  k.in_offset.assign(ctx->num_inputs, 0);
  k.out_offset.assign(ctx->num_outputs, 0);
  size_t used = 0;
  for (size_t i = 0; i < ctx->num_inputs; ++i) {
    const oph_tensor* t = ctx->inputs[i];
    if (!t || is_constant(k, i, *t)) continue;
    k.in_offset[i] = used;
    used += align_up(checked_bytes(*t, k.what + ": input " + std::to_string(i)));
  }
  for (size_t o = 0; o < ctx->num_outputs; ++o) {
    const oph_tensor* t = ctx->outputs[o];
    if (!t || !t->data) continue;
    k.out_offset[o] = used;
    used += align_up(checked_bytes(*t, k.what + ": output " + std::to_string(o)));
  }
  std::byte* shm = w.shm(std::max<size_t>(used, 1));  // mapped even when every tensor is empty: data is never NULL
  Writer& r = k.request;
  r.clear();
  r.u32(static_cast<uint32_t>(Request::kCompute));
  r.u64(k.id);
  r.u64(w.shm_size());
  r.u64(used);
  r.u32(static_cast<uint32_t>(ctx->num_inputs));
  for (size_t i = 0; i < ctx->num_inputs; ++i) {
    const oph_tensor* t = ctx->inputs[i];
    if (!t) {
      r.u32(static_cast<uint32_t>(Place::kAbsent));
    } else if (is_constant(k, i, *t)) {
      r.u32(static_cast<uint32_t>(Place::kConstant));
    } else {
      r.u32(static_cast<uint32_t>(Place::kShm));
      r.dtype(t->dtype);
      r.shape(dims(*t));
      r.u64(k.in_offset[i]);
      std::memcpy(shm + k.in_offset[i], bytes_of(*t), tensor_bytes(t->dtype, dims(*t)));
    }
  }
  r.u32(static_cast<uint32_t>(ctx->num_outputs));
  for (size_t o = 0; o < ctx->num_outputs; ++o) {
    const oph_tensor* t = ctx->outputs[o];
    if (!t) {
      r.u32(static_cast<uint32_t>(Place::kAbsent));
      continue;
    }
    r.u32(static_cast<uint32_t>(t->data ? Place::kShm : Place::kRunTime));
    r.dtype(t->dtype);
    if (!t->data) continue;
    r.shape(dims(*t));
    r.u64(k.out_offset[o]);
  }
  return used;
}

// Copies the outputs (and inputs the op mutates) back from the shared region after a successful compute.
oph_status* read_compute(ProxyKernel& k, const oph_compute_context* ctx, Reader& r) {
  PackWorker& w = *k.op->worker;
  w.remap(r.u64());
  const std::byte* shm = w.shm(0);
  auto region = [&](uint64_t offset, size_t n) {
    if (offset > w.shm_size() || n > w.shm_size() - offset)
      throw Error(Code::kDataLoss, "pack '" + w.pack() + "': its worker placed an output of " + k.what +
                                       " outside the shared region");
    return shm + offset;
  };
  for (size_t o = 0; o < ctx->num_outputs; ++o) {
    oph_tensor* t = ctx->outputs[o];
    if (!t) continue;
    if (t->data && k.out_offset.size() > o) {
      const size_t n = tensor_bytes(t->dtype, dims(*t));
      std::memcpy(static_cast<std::byte*>(t->data) + t->byte_offset, region(k.out_offset[o], n), n);
      continue;
    }
    if (r.u32() == 0) continue;  // not allocated by the kernel: the executor reports the missing output
    const std::vector<int64_t> shape = r.shape();
    const uint64_t offset = r.u64();
    if (oph_status* st = ctx->allocate_output(ctx, o, static_cast<int32_t>(shape.size()), shape.data())) return st;
    const size_t n = tensor_bytes(t->dtype, dims(*t));
    std::memcpy(static_cast<std::byte*>(t->data) + t->byte_offset, region(offset, n), n);
  }
  for (size_t i = 0; i < ctx->num_inputs && i < k.mutates.size(); ++i) {
    const oph_tensor* t = ctx->inputs[i];
    if (!k.mutates[i] || !t || is_constant(k, i, *t)) continue;
    const size_t n = tensor_bytes(t->dtype, dims(*t));
    std::memcpy(const_cast<std::byte*>(bytes_of(*t)), region(k.in_offset[i], n), n);
  }
  return nullptr;
}

oph_status* proxy_compute(void* state, const oph_compute_context* ctx) noexcept {
  auto& k = *static_cast<ProxyKernel*>(state);
  PackWorker& w = *k.op->worker;
  try {
    std::lock_guard lock(w.mutex());
    if (w.ensure_running() != k.generation) create_in_worker(k);  // a new worker after a crash
    write_compute(k, ctx);
    const Deadline& d = current_deadline();
    k.reply = w.call(k.request, k.what, d.at, d.timeout_ms);
    Reader r(k.reply);
    if (oph_status* st = reply_status(r)) return st;  // the kernel's own error
    return read_compute(k, ctx, r);
  } catch (const Error& e) {
    return make_status(e.code(), e.what());
  } catch (const std::exception& e) {
    return make_status(Code::kInternal, "pack '" + w.pack() + "' (isolated), " + k.what + ": " + e.what());
  }
}

void proxy_destroy(void* state) noexcept {
  std::unique_ptr<ProxyKernel> k(static_cast<ProxyKernel*>(state));
  PackWorker& w = *k->op->worker;
  try {
    std::lock_guard lock(w.mutex());
    if (!w.running() || w.generation() != k->generation) return;  // its worker is gone, and the kernel with it
    Writer req;
    req.u32(static_cast<uint32_t>(Request::kDestroy));
    req.u64(k->id);
    w.call(req, "destroy_kernel of " + k->what, Clock::now() + kQuickCall, 0);
  } catch (const std::exception& e) {
    spdlog::warn("{}", e.what());
  }
}

const char* proxy_impl(void* state, bool* is_reference) noexcept {
  auto& k = *static_cast<ProxyKernel*>(state);
  PackWorker& w = *k.op->worker;
  try {
    std::lock_guard lock(w.mutex());
    if (!w.running() || w.generation() != k.generation) return nullptr;
    Writer req;
    req.u32(static_cast<uint32_t>(Request::kImpl));
    req.u64(k.id);
    std::vector<std::byte> reply = w.call(req, "kernel_impl of " + k.what, Clock::now() + kQuickCall, 0);
    Reader r(reply);
    if (oph_status* st = reply_status(r)) {
      consume_status(st);
      return nullptr;
    }
    const bool known = r.u32() != 0;
    if (is_reference) *is_reference = r.u32() != 0;
    k.impl = r.str();
    return known ? k.impl.c_str() : nullptr;
  } catch (const std::exception& e) {
    spdlog::warn("{}", e.what());
    return nullptr;
  }
}

}  // namespace

std::unique_ptr<IsolatedPacks> install_isolation(const PluginSet& plugins, std::vector<PreparedNode>& nodes,
                                                 const SessionOptions& options) {
  // The administrator's list ($OPHOST_ISOLATE_PACKS, comma-separated) adds to the session's.
  std::vector<std::string> requested = options.isolate_packs;
  if (const char* env = std::getenv("OPHOST_ISOLATE_PACKS"); env && *env) {
    for (std::string_view rest = env; !rest.empty();) {
      const size_t comma = std::min(rest.find(','), rest.size());
      if (comma > 0) requested.emplace_back(rest.substr(0, comma));
      rest.remove_prefix(std::min(comma + 1, rest.size()));
    }
  }
  if (requested.empty()) return nullptr;
  std::vector<std::string> loaded;
  for (const auto& p : plugins.loaded())
    if (p->kind() == "operator-pack") loaded.push_back(p->name());
  bool all = false;
  std::set<std::string> names;
  for (const std::string& n : requested) {
    if (n == "*") {
      all = true;
    } else if (std::find(loaded.begin(), loaded.end(), n) == loaded.end()) {
      std::string list;
      for (const auto& l : loaded) list += (list.empty() ? "" : ", ") + l;
      throw Error(Code::kInvalidArgument, "isolate_packs (--isolate-packs, $OPHOST_ISOLATE_PACKS) names '" + n +
                                              "', which is not a loaded operator pack; the loaded packs are: " +
                                              (list.empty() ? "none" : list) + " ('*' isolates them all)");
    }
    names.insert(n);
  }
  auto set = std::make_unique<IsolatedPacks>();
  std::map<const OpSchema*, ProxyOp*> proxies;
  std::map<const LoadedPlugin*, PackWorker*> workers;
  size_t isolated = 0;
  for (PreparedNode& pn : nodes) {
    if (pn.control || pn.is_copy || !pn.entry || !pn.entry->source.plugin) continue;
    const LoadedPlugin& plugin = *pn.entry->source.plugin;
    if (!all && !names.count(plugin.name())) continue;
    if (pn.device != "cpu")
      throw Error(Code::kInvalidArgument, pn.label + ": runs on " + pn.device + ", but pack isolation "
                                          "(--isolate-packs) runs CPU kernels only; leave pack '" + plugin.name() +
                                          "' out of it or place the node on the CPU (--device cpu)");
    ProxyOp*& proxy = proxies[pn.schema];
    if (!proxy) {
      PackWorker*& worker = workers[&plugin];
      if (!worker) {
        // The host loaded this pack from a root that fails the ownership walk only when told to accept that.
        const bool insecure = !plugin_root_problem(plugin.dir().parent_path()).empty();
        set->workers.push_back(worker_for(plugin, insecure));
        worker = set->workers.back().get();
      }
      const auto& ops = plugin.ops();
      const oph_op_def* real = pn.schema->calls.def;
      const auto at = std::find(ops.begin(), ops.end(), real);
      if (at == ops.end()) throw Error(Code::kInternal, pn.label + ": op not in its pack's table");
      ProxyOp& p = set->ops.emplace_back();
      std::memset(&p.def, 0, sizeof p.def);
      std::memcpy(&p.def, real, std::min(real->struct_size, sizeof p.def));  // a 1.0 pack's def is shorter
      p.def.struct_size = OPH_OP_DEF_STRUCT_SIZE;
      p.def.create_kernel = &proxy_create;
      p.def.destroy_kernel = &proxy_destroy;
      p.def.compute = &proxy_compute;
      p.def.kernel_impl = &proxy_impl;
      p.schema = pn.schema;
      p.calls = OpCalls::of(p.def);
      p.worker = worker;
      p.index = static_cast<uint32_t>(at - ops.begin());
      proxy = &p;
    }
    pn.calls = &proxy->calls;
    ++isolated;
  }
  spdlog::debug("pack isolation: {} nodes run in worker processes", isolated);
  return set;
}

}  // namespace ophost::isolation
