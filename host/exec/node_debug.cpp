// Value dumps and kernel debug mode (node_debug.hpp).
#include "exec/node_debug.hpp"

#include "passes/passes.hpp"
#include "registry/registry.hpp"

#include <ophost/error.hpp>
#include <ophost/npy.hpp>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>

namespace ophost {

namespace {

std::vector<int64_t> shape_of(const oph_tensor& t) {
  if (t.ndim <= 0 || !t.shape) return {};
  return {t.shape, t.shape + t.ndim};
}

// Bytes of a tensor in host memory, or {nullptr, 0} when it is on a device, unallocated or has no fixed size.
std::pair<std::byte*, size_t> host_bytes(const oph_tensor& t) {
  if (t.device.device_type != OPH_DL_CPU || t.data == nullptr || t.ndim < 0) return {nullptr, 0};
  const DType dt = from_dl(t.dtype);
  const size_t esize = dtype_size(dt);
  if (dt == DType::kUndefined || dt == DType::kString || esize == 0) return {nullptr, 0};
  const size_t n = static_cast<size_t>(shape_numel(shape_of(t)));
  return {static_cast<std::byte*>(t.data) + t.byte_offset, n * esize};
}

bool overlaps(std::pair<std::byte*, size_t> a, std::pair<std::byte*, size_t> b) {
  return a.first && b.first && a.second && b.second && a.first < b.first + b.second && b.first < a.first + a.second;
}

std::string index_text(const std::vector<int64_t>& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size(), 0);
  for (size_t k = shape.size(); k-- > 0;) {
    if (shape[k] > 0) {
      idx[k] = flat % shape[k];
      flat /= shape[k];
    }
  }
  std::string s = "[";
  for (size_t k = 0; k < idx.size(); ++k) s += (k ? "," : "") + std::to_string(idx[k]);
  return s + "]";
}

// The poison pattern of one element: a signalling NaN for floating-point types, 0xA5 bytes for the others.
std::vector<std::byte> poison_pattern(DType dt) {
  const size_t esize = dtype_size(dt);
  std::vector<std::byte> p(esize, std::byte{0xA5});
  auto put = [&](auto bits) { std::memcpy(p.data(), &bits, sizeof bits); };
  switch (dt) {
    case DType::kFloat32: put(uint32_t{0x7FA00000u}); break;
    case DType::kFloat64: put(uint64_t{0x7FF4000000000000ull}); break;
    case DType::kFloat16: put(uint16_t{0x7D00u}); break;
    case DType::kBFloat16: put(uint16_t{0x7FA0u}); break;
    default: break;
  }
  return p;
}

// The guard zone after output o of node pn in a planned run: {first byte, size}, or {nullptr, 0} when the output
// is not an arena buffer (graph outputs, generic runs, devices, zero bytes).
std::pair<std::byte*, size_t> guard_of(const Session::Impl& s, const ExecPlan& plan, const PreparedNode& pn, size_t o,
                                       const oph_tensor& t) {
  if (!plan.planned || o >= pn.outputs.size() || pn.outputs[o] < 0) return {nullptr, 0};
  const int v = pn.outputs[o];
  if (plan.offset[v] == std::numeric_limits<size_t>::max() || s.values[v].device != "cpu") return {nullptr, 0};
  auto out = host_bytes(t);
  if (!out.first || !out.second) return {nullptr, 0};
  return {out.first + out.second, kDebugGuardBytes};
}


}  // namespace

std::string dump_file_stem(const std::string& name) {
  std::string out = name.empty() ? std::string("_") : name;
  for (char& c : out)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-')) c = '_';
  if (out == "." || out == "..") out = "_" + out;
  if (out.size() > 180) {
    uint64_t h = 14695981039346656037ull;
    for (unsigned char c : name) {
      h ^= c;
      h *= 1099511628211ull;
    }
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    out = out.substr(0, 160) + "_" + hex;
  }
  return out;
}

std::string node_op_name(const PreparedNode& pn) {
  return pn.node->domain.empty() ? pn.node->op_type : pn.node->domain + "::" + pn.node->op_type;
}

std::string node_pack_name(const PreparedNode& pn) {
  if (pn.entry) return pn.entry->source.plugin_name;
  return "host";  // If/Loop/Scan and device Copy nodes
}

std::string node_created_by(const PreparedNode& pn) {
  const Node& n = *pn.node;
  if (pn.is_copy) return "placement (device boundary Copy)";
  if (n.domain == kFusedDomain && n.op_type == kFusedConv) {
    auto has = [&](std::initializer_list<std::string_view> names) {
      return std::any_of(n.attributes.begin(), n.attributes.end(), [&](const Attribute& a) {
        return std::find(names.begin(), names.end(), a.name) != names.end();
      });
    };
    std::string by;
    auto add = [&](const char* pass) { by += (by.empty() ? "" : ", ") + std::string(pass); };
    if (n.inputs.size() > 3 && !n.inputs[3].empty()) add("conv-add-fusion");
    if (has({"activation", "output_min", "output_max"})) add("conv-activation-fusion");
    if (has({"output_scale", "output_shift"})) add("conv-affine-folding");
    if (has({"x_blocked", "y_blocked", "z_blocked"})) add("nchwc-layout");
    return by;
  }
  if (n.domain == kFusedDomain &&
      (n.op_type == kLayoutReorder || n.op_type == kBlockedMaxPool || n.op_type == kBlockedAveragePool ||
       n.op_type == kBlockedGlobalAveragePool || n.op_type == kBlockedMul))
    return "nchwc-layout";
  if (n.domain == kFusedDomain && n.op_type == kLayerNormalization) return "layer-norm-fusion";
  if (n.domain == kFusedDomain && n.op_type == kFusedMatMul) return "matmul-bias-fusion";
  if (n.domain == kFusedDomain && n.op_type == kGelu) return "gelu-fusion";
  return {};
}

// ---------------------------------------------------------------------------------------------------------------

ValueDump::ValueDump(const Session::Impl& s, std::filesystem::path dir) : s_(s), dir_(std::move(dir)) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec || !std::filesystem::is_directory(dir_)) {
    throw Error(Code::kInvalidArgument, "dump folder '" + dir_.string() + "' cannot be created: " +
                                            (ec ? ec.message() : std::string("not a directory")) +
                                            " (SessionOptions::dump_dir, ophost run --dump)");
  }
  entries_.resize(s.values.size());
}

std::string host_copy(const Session::Impl& s, int v, const oph_tensor& t, Tensor& out) {
  if (t.device.device_type != OPH_DL_CPU) return "on device '" + s.values[v].device + "', not in host memory";
  const DType dt = from_dl(t.dtype);
  if (dt == DType::kString || dt == DType::kUndefined || dtype_size(dt) == 0)
    return std::string("dtype ") + dtype_name(dt) + " has no host copy";
  std::vector<int64_t> shape = shape_of(t);
  if (t.ndim < 0 || (t.data == nullptr && shape_numel(shape) != 0)) return "not allocated";
  if (s.values[v].blocked_layout) {
    return "kept channel-blocked by the nchwc-layout pass (nChw8c/16c byte order, not NCHW); load with that pass "
           "disabled (SessionOptions::disabled_passes) to see it";
  }
  Tensor copy(dt, std::move(shape));
  auto [p, n] = host_bytes(t);
  if (n) std::memcpy(copy.data(), p, n);
  out = std::move(copy);
  return {};
}

void ValueDump::dump_value(int v, const oph_tensor& t) {
  Entry e;
  e.present = true;
  const DType dt = from_dl(t.dtype);
  e.dtype = dtype_name(dt);
  e.shape = shape_of(t);
  e.device = t.device.device_type == OPH_DL_CPU ? "cpu" : s_.values[v].device;
  Tensor copy;
  if (dt == DType::kBFloat16) {
    e.skipped = std::string("dtype ") + e.dtype + " has no .npy form";
  } else if (e.skipped = host_copy(s_, v, t, copy); e.skipped.empty()) {
    std::string file;
    {
      std::lock_guard lock(mutex_);
      std::string base = dump_file_stem(s_.values[v].name);
      file = base + ".npy";
      for (int k = 2; std::find(used_files_.begin(), used_files_.end(), file) != used_files_.end(); ++k)
        file = base + "~" + std::to_string(k) + ".npy";
      used_files_.push_back(file);
    }
    write_npy(dir_ / file, copy);
    e.file = file;
  }
  std::lock_guard lock(mutex_);
  entries_[v] = std::move(e);
}

void ValueDump::node_done(size_t ni, const oph_compute_context& ctx) {
  const PreparedNode& pn = s_.nodes[ni];
  for (size_t i = 0; i < ctx.num_inputs && i < pn.inputs.size(); ++i) {
    int v = pn.inputs[i];
    if (v < 0 || s_.values[v].graph_input < 0 || !ctx.inputs[i]) continue;
    {
      std::lock_guard lock(mutex_);
      if (entries_[v].present) continue;
      entries_[v].present = true;  // claimed: dumped once
    }
    dump_value(v, *ctx.inputs[i]);
  }
  for (size_t o = 0; o < ctx.num_outputs && o < pn.outputs.size(); ++o) {
    int v = pn.outputs[o];
    if (v >= 0 && ctx.outputs[o]) dump_value(v, *ctx.outputs[o]);
  }
}

void ValueDump::write_index(bool complete) {
  using nlohmann::json;
  std::lock_guard lock(mutex_);
  json j;
  j["format"] = "ophost-dump 1";
  j["model"] = s_.model.path.string();
  j["complete"] = complete;
  j["note"] = "values produced inside If/Loop/Scan bodies are not dumped (only the node's outputs); values on "
              "another device than the CPU are listed with 'skipped'; constants are not dumped";
  json nodes = json::array();
  auto value_json = [&](int v, int node) {
    const Entry& e = entries_[v];
    json x;
    x["name"] = s_.values[v].name;
    x["file"] = e.file.empty() ? json(nullptr) : json(e.file);
    if (!e.skipped.empty()) x["skipped"] = e.skipped;
    x["node_index"] = node;
    if (node >= 0) {
      const PreparedNode& pn = s_.nodes[node];
      x["node"] = pn.node->name;
      x["op"] = node_op_name(pn);
      x["pack"] = node_pack_name(pn);
    } else {
      x["node"] = nullptr;
      x["op"] = "graph input";
      x["pack"] = nullptr;
    }
    x["device"] = e.device;
    x["shape"] = e.shape;
    x["dtype"] = e.dtype;
    return x;
  };
  json values = json::array();
  for (size_t v = 0; v < s_.values.size(); ++v)
    if (entries_[v].present && s_.values[v].producer < 0) values.push_back(value_json(static_cast<int>(v), -1));
  for (size_t ni = 0; ni < s_.nodes.size(); ++ni) {
    const PreparedNode& pn = s_.nodes[ni];
    json n;
    n["index"] = ni;
    n["name"] = pn.node->name;
    n["op"] = node_op_name(pn);
    n["pack"] = node_pack_name(pn);
    n["device"] = pn.device;
    if (std::string by = node_created_by(pn); !by.empty()) n["created_by"] = by;
    json ins = json::array(), outs = json::array();
    for (int v : pn.inputs) ins.push_back(v < 0 ? std::string() : s_.values[v].name);
    for (int v : pn.outputs) outs.push_back(v < 0 ? std::string() : s_.values[v].name);
    n["inputs"] = ins;
    n["outputs"] = outs;
    nodes.push_back(std::move(n));
    for (int v : pn.outputs)
      if (v >= 0 && entries_[v].present) values.push_back(value_json(v, static_cast<int>(ni)));
  }
  j["nodes"] = std::move(nodes);
  j["values"] = std::move(values);
  const auto path = dir_ / "index.json";
  std::ofstream f(path);
  f << j.dump(1) << "\n";
  if (!f) throw Error(Code::kDataLoss, "cannot write " + path.string() + " (SessionOptions::dump_dir)");
}

// ---------------------------------------------------------------------------------------------------------------

void KernelCheck::before(const Session::Impl& s, const ExecPlan& plan, size_t ni, const oph_compute_context& ctx) {
  const PreparedNode& pn = s.nodes[ni];
  input_copies.assign(ctx.num_inputs, {});
  input_shared.assign(ctx.num_inputs, 0);
  for (size_t o = 0; o < ctx.num_outputs; ++o) {
    if (!ctx.outputs[o]) continue;
    if (auto g = guard_of(s, plan, pn, o, *ctx.outputs[o]); g.first) std::memset(g.first, 0xA5, g.second);
    auto out = host_bytes(*ctx.outputs[o]);
    if (!out.first || !out.second) continue;
    bool shared = false;
    for (size_t i = 0; i < ctx.num_inputs; ++i) {
      if (ctx.inputs[i] && overlaps(out, host_bytes(*ctx.inputs[i]))) {
        input_shared[i] = 1;  // in place (MAY_INPLACE): the input's bytes are the output's to write
        shared = true;
      }
    }
    if (shared) continue;
    const std::vector<std::byte> pat = poison_pattern(from_dl(ctx.outputs[o]->dtype));
    for (size_t b = 0; b + pat.size() <= out.second; b += pat.size()) std::memcpy(out.first + b, pat.data(), pat.size());
  }
  for (size_t i = 0; i < ctx.num_inputs; ++i) {
    if (!ctx.inputs[i] || input_shared[i] || pn.schema->declares(OPH_ALIAS_MUTATES_INPUT, i)) continue;
    auto in = host_bytes(*ctx.inputs[i]);
    if (in.first && in.second) input_copies[i].assign(in.first, in.first + in.second);
  }
}

void KernelCheck::after(const Session::Impl& s, const ExecPlan& plan, size_t ni, const oph_compute_context& ctx) const {
  const PreparedNode& pn = s.nodes[ni];
  std::vector<std::string> findings;
  auto value_name = [&](const std::vector<int>& vs, size_t k) {
    return k < vs.size() && vs[k] >= 0 ? s.values[vs[k]].name : std::to_string(k);
  };
  for (size_t o = 0; o < ctx.num_outputs; ++o) {
    if (!ctx.outputs[o]) continue;
    if (auto g = guard_of(s, plan, pn, o, *ctx.outputs[o]); g.first) {
      size_t k = 0, first = g.second, last = 0;
      for (size_t b = 0; b < g.second; ++b) {
        if (g.first[b] != std::byte{0xA5}) {
          if (first == g.second) first = b;
          last = b;
          ++k;
        }
      }
      if (k) {
        const auto shape = shape_of(*ctx.outputs[o]);
        const size_t esize = dtype_size(from_dl(ctx.outputs[o]->dtype));
        const int64_t numel = shape_numel(shape);
        findings.push_back("wrote past the end of output '" + value_name(pn.outputs, o) + "' (" +
                           dtype_name(from_dl(ctx.outputs[o]->dtype)) + " " + shape_to_string(shape) + ", " +
                           std::to_string(static_cast<size_t>(numel) * esize) + " bytes): " + std::to_string(k) +
                           " of the " + std::to_string(g.second) + " guard bytes after it changed, from byte " +
                           std::to_string(first) + " to " + std::to_string(last) + " past the end (element " +
                           std::to_string(numel + static_cast<int64_t>(first / std::max<size_t>(esize, 1))) +
                           " and on)");
      }
    }
    auto out = host_bytes(*ctx.outputs[o]);
    if (!out.first || !out.second) continue;
    bool shared = false;
    for (size_t i = 0; i < ctx.num_inputs && !shared; ++i)
      shared = ctx.inputs[i] && input_shared[i] && overlaps(out, host_bytes(*ctx.inputs[i]));
    if (shared) continue;
    const DType dt = from_dl(ctx.outputs[o]->dtype);
    const std::vector<std::byte> pat = poison_pattern(dt);
    const int64_t m = static_cast<int64_t>(out.second / pat.size());
    int64_t k = 0, first = -1;
    for (int64_t e = 0; e < m; ++e) {
      if (std::memcmp(out.first + e * pat.size(), pat.data(), pat.size()) == 0) {
        if (first < 0) first = e;
        ++k;
      }
    }
    if (k) {
      auto shape = shape_of(*ctx.outputs[o]);
      findings.push_back("output '" + value_name(pn.outputs, o) + "' (" + dtype_name(dt) + " " +
                         shape_to_string(shape) + ") has " + std::to_string(k) + " of " + std::to_string(m) +
                         " elements never written, first at index " + std::to_string(first) + " " +
                         index_text(shape, first) + " (compute must write every element of the shape infer() gave)");
    }
  }
  for (size_t i = 0; i < ctx.num_inputs; ++i) {
    if (input_copies[i].empty() || !ctx.inputs[i]) continue;
    auto in = host_bytes(*ctx.inputs[i]);
    if (in.second != input_copies[i].size()) continue;
    const size_t esize = dtype_size(from_dl(ctx.inputs[i]->dtype));
    int64_t k = 0, first = -1;
    for (size_t e = 0; e * esize < in.second; ++e) {
      if (std::memcmp(in.first + e * esize, input_copies[i].data() + e * esize, esize) != 0) {
        if (first < 0) first = static_cast<int64_t>(e);
        ++k;
      }
    }
    if (k) {
      auto shape = shape_of(*ctx.inputs[i]);
      findings.push_back("wrote into input " + std::to_string(i) + " '" + value_name(pn.inputs, i) + "' (" +
                         dtype_name(from_dl(ctx.inputs[i]->dtype)) + " " + shape_to_string(shape) + "): " +
                         std::to_string(k) + " of " + std::to_string(in.second / esize) +
                         " elements changed, first at index " + std::to_string(first) + " " +
                         index_text(shape, first) +
                         " (inputs are read-only unless the op declares MUTATES_INPUT for it, or MAY_INPLACE and "
                         "the planner gave the output its buffer)");
    }
  }
  if (findings.empty()) return;
  std::string msg = "debug-kernels: " + pn.label + ": ";
  for (size_t f = 0; f < findings.size(); ++f) msg += (f ? "; " : "") + findings[f];
  throw Error(Code::kInternal, msg);
}

}  // namespace ophost
