// ophost pack check DIR: a plugin folder checked the way the loader will check it, and more, for its author.
//
//  1. manifest: parses with the loader's strict schema; library present; sha256, platform and ABI agree
//  2. exported symbols (read from the ELF .dynsym): only oph_plugin_entry_v1; no dependency on libophost
//  3. load + handshake + tables equal to the manifest's provides (the loader's own code)
//  4. every op definition: the loader's validate_op_def (arity, type variables, attribute defaults of the
//     right type, alias indices in range) plus checks the loader does not need (dtypes, alias types)
//  5. an opcheck-style run of every CPU op: random inputs for a few shapes; infer must agree with what compute
//     writes (no writes past the inferred size, every output written, allocate_output shapes equal to the
//     inferred ones), inputs not declared MUTATES_INPUT must be left unchanged, and MAY_INPLACE declarations
//     must hold (the op run with the output in the input's buffer gives the out-of-place result).
#include "common.hpp"
#include "pack_check.hpp"

#include "plugins/manifest.hpp"
#include "plugins/plugin_set.hpp"

#include <ophost/error.hpp>
#include <ophost/services.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>

namespace ophost::cli {

namespace fs = std::filesystem;

namespace {

struct Finding {
  std::string where;  // "manifest", "symbols", "acme::swish [1+] on cpu", ...
  std::string what;   // the problem
  std::string fix;    // what to change
};

class Report {
 public:
  void ok(const std::string& what) { std::cout << "  ok       " << what << "\n"; }
  void note(const std::string& what) { std::cout << "  note     " << what << "\n"; }
  void finding(Finding f) {
    std::cout << "  FINDING  " << f.where << ": " << f.what << "\n           fix: " << f.fix << "\n";
    findings_.push_back(std::move(f));
  }
  size_t count() const { return findings_.size(); }

 private:
  std::vector<Finding> findings_;
};

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

std::string dtype_str(oph_dtype d) {
  std::string base;
  switch (d.code) {
    case OPH_DTYPE_INT: base = "int"; break;
    case OPH_DTYPE_UINT: base = "uint"; break;
    case OPH_DTYPE_FLOAT: base = "float"; break;
    case OPH_DTYPE_BFLOAT: base = "bfloat"; break;
    case OPH_DTYPE_BOOL: return "bool";
    case OPH_DTYPE_COMPLEX: base = "complex"; break;
    case OPH_DTYPE_OPAQUE: return d.bits == 0 ? "string" : "opaque" + std::to_string(d.bits);
    default: return "dtype(code " + std::to_string(d.code) + ")";
  }
  return base + std::to_string(d.bits) + (d.lanes != 1 ? "x" + std::to_string(d.lanes) : "");
}

bool same_dtype(oph_dtype a, oph_dtype b) { return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes; }

// Dtypes the run check can fill with random values.
bool fillable(oph_dtype d) {
  if (d.lanes != 1) return false;
  switch (d.code) {
    case OPH_DTYPE_FLOAT: return d.bits == 32 || d.bits == 64;
    case OPH_DTYPE_INT:
    case OPH_DTYPE_UINT: return d.bits == 8 || d.bits == 16 || d.bits == 32 || d.bits == 64;
    case OPH_DTYPE_BOOL: return d.bits == 8;
    default: return false;
  }
}

bool known_dtype(oph_dtype d) {
  if (d.lanes == 0) return false;
  switch (d.code) {
    case OPH_DTYPE_INT: case OPH_DTYPE_UINT: return d.bits == 8 || d.bits == 16 || d.bits == 32 || d.bits == 64;
    case OPH_DTYPE_FLOAT: return d.bits == 16 || d.bits == 32 || d.bits == 64;
    case OPH_DTYPE_BFLOAT: return d.bits == 16;
    case OPH_DTYPE_BOOL: return d.bits == 8;
    case OPH_DTYPE_COMPLEX: return d.bits == 64 || d.bits == 128;
    case OPH_DTYPE_OPAQUE: return true;
    default: return false;
  }
}

size_t elem_bytes(oph_dtype d) { return (size_t{d.bits} * d.lanes + 7) / 8; }

size_t numel(const std::vector<int64_t>& s) {
  size_t n = 1;
  for (int64_t d : s) n *= static_cast<size_t>(d);
  return n;
}

const oph_io_def* io_at(const oph_io_def* base, size_t i) { return OPH_ARRAY_AT(oph_io_def, base, base->struct_size, i); }
const oph_attr_def* attr_at(const oph_op_def* op, size_t i) {
  return OPH_ARRAY_AT(oph_attr_def, op->attributes, op->attributes->struct_size, i);
}
const oph_alias_def* alias_at(const oph_op_def* op, size_t i) {
  return OPH_ARRAY_AT(oph_alias_def, op->aliases, op->aliases->struct_size, i);
}
const oph_type_constraint* tc_for(const oph_op_def* op, const char* var) {
  for (size_t i = 0; i < op->num_type_constraints; ++i) {
    const auto* tc = OPH_ARRAY_AT(oph_type_constraint, op->type_constraints, op->type_constraints->struct_size, i);
    if (tc->type_var && var && std::strcmp(tc->type_var, var) == 0) return tc;
  }
  return nullptr;
}

// ---- run check --------------------------------------------------------------------------------------------

constexpr uint8_t kPoison = 0xA5;  // unwritten output bytes
constexpr size_t kGuard = 64;      // poisoned bytes after every output buffer

// One tensor with its own storage (plus the guard).
struct Buffer {
  std::vector<int64_t> shape;
  oph_dtype dtype{};
  std::vector<uint8_t> bytes;  // numel * elem + kGuard
  oph_tensor view{};
  size_t payload() const { return numel(shape) * elem_bytes(dtype); }
  void bind(uint8_t* data) {
    view = oph_tensor{};
    view.data = data;
    view.device = {OPH_DL_CPU, 0};
    view.ndim = static_cast<int32_t>(shape.size());
    view.dtype = dtype;
    view.shape = shape.data();
    view.strides = nullptr;
    view.byte_offset = 0;
  }
  void allocate_poisoned() {
    bytes.assign(payload() + kGuard, kPoison);
    bind(bytes.data());
  }
};

void fill_random(Buffer& b, std::mt19937& rng) {
  size_t n = numel(b.shape);
  b.bytes.assign(b.payload() + kGuard, kPoison);
  uint8_t* p = b.bytes.data();
  std::uniform_real_distribution<double> real(-2.0, 2.0);
  std::uniform_int_distribution<int> small(-5, 5), unsig(0, 10), bit(0, 1);
  for (size_t i = 0; i < n; ++i) {
    const oph_dtype d = b.dtype;
    if (d.code == OPH_DTYPE_FLOAT && d.bits == 32) reinterpret_cast<float*>(p)[i] = static_cast<float>(real(rng));
    else if (d.code == OPH_DTYPE_FLOAT) reinterpret_cast<double*>(p)[i] = real(rng);
    else if (d.code == OPH_DTYPE_BOOL) p[i] = static_cast<uint8_t>(bit(rng));
    else {
      int64_t v = d.code == OPH_DTYPE_INT ? small(rng) : unsig(rng);
      std::memcpy(p + i * elem_bytes(d), &v, elem_bytes(d));  // little-endian truncation
    }
  }
  b.bind(p);
}

struct ComputeState {
  std::vector<Buffer>* outputs;
  std::vector<oph_tensor*>* out_ptrs;
  std::vector<bool>* allocated;
};

oph_status* check_allocate_output(const oph_compute_context* ctx, size_t index, int32_t ndim, const int64_t* shape) {
  auto* st = static_cast<ComputeState*>(ctx->host_data);
  if (index >= st->outputs->size()) {
    return make_status(Code::kOutOfRange, "allocate_output: output " + std::to_string(index) + " does not exist");
  }
  if (ndim < 0 || ndim > OPH_MAX_NDIM) return make_status(Code::kInvalidArgument, "allocate_output: bad rank");
  Buffer& b = (*st->outputs)[index];
  b.shape.assign(shape, shape + ndim);
  for (int64_t d : b.shape)
    if (d < 0) return make_status(Code::kInvalidArgument, "allocate_output: negative dimension");
  b.allocate_poisoned();
  (*st->allocated)[index] = true;
  *(*st->out_ptrs)[index] = b.view;
  return nullptr;
}

struct RunResult {
  bool infer_ok = false;
  std::string infer_error;
  std::vector<Buffer> outputs;
};

class OpChecker {
 public:
  OpChecker(const oph_op_def* op, Report& report, std::string label, uint32_t seed)
      : op_(op), report_(report), label_(std::move(label)), rng_(seed) {}

  // Returns the number of findings added.
  size_t run() {
    size_t before = report_.count();
    if (std::string(op_->device) != "cpu") {
      report_.note(label_ + ": run check skipped (only CPU kernels can be run here)");
      return 0;
    }
    // Formals -> actual inputs/outputs.
    for (size_t i = 0; i < op_->num_inputs; ++i) {
      const oph_io_def* io = io_at(op_->inputs, i);
      if (io->memory == OPH_MEMORY_HOST) {
        report_.note(label_ + ": run check skipped (input '" + std::string(io->name) +
                     "' is a host-memory, shape-like input; random values are not meaningful for it)");
        return 0;
      }
      size_t n = io->arity == OPH_ARITY_VARIADIC ? static_cast<size_t>(std::max(1, io->min_arity)) : 1;
      for (size_t k = 0; k < n; ++k) in_formal_.push_back(io);
    }
    for (size_t i = 0; i < op_->num_outputs; ++i) {
      const oph_io_def* io = io_at(op_->outputs, i);
      size_t n = io->arity == OPH_ARITY_VARIADIC ? static_cast<size_t>(std::max(1, io->min_arity)) : 1;
      for (size_t k = 0; k < n; ++k) out_formal_.push_back(io);
    }
    // Attributes: defaults; a required one without default stops the run check.
    for (size_t i = 0; i < op_->num_attributes; ++i) {
      const oph_attr_def* a = attr_at(op_, i);
      if (a->required) {
        report_.note(label_ + ": run check skipped (attribute '" + std::string(a->name) +
                     "' is required, so there is no value to run with)");
        return 0;
      }
      oph_attr_value v = a->default_value;
      v.struct_size = sizeof(oph_attr_value);
      attrs_.push_back(v);
    }
    // Type assignments: each allowed dtype of the first input's type variable (others: their first fillable).
    std::vector<std::map<std::string, oph_dtype>> assignments;
    std::map<std::string, oph_dtype> base;
    std::string first_var = in_formal_.empty() ? "" : in_formal_[0]->type_var;
    for (size_t i = 0; i < op_->num_type_constraints; ++i) {
      const auto* tc = OPH_ARRAY_AT(oph_type_constraint, op_->type_constraints, op_->type_constraints->struct_size, i);
      for (size_t k = 0; k < tc->num_allowed; ++k)
        if (fillable(tc->allowed[k])) { base[tc->type_var] = tc->allowed[k]; break; }
    }
    if (const auto* tc = first_var.empty() ? nullptr : tc_for(op_, first_var.c_str())) {
      for (size_t k = 0; k < tc->num_allowed && assignments.size() < 4; ++k) {
        if (!fillable(tc->allowed[k])) continue;
        auto a = base;
        a[first_var] = tc->allowed[k];
        assignments.push_back(a);
      }
    }
    if (assignments.empty()) assignments.push_back(base);
    for (const oph_io_def* io : in_formal_) {
      if (!assignments[0].count(io->type_var)) {
        report_.note(label_ + ": run check skipped (type variable '" + std::string(io->type_var) +
                     "' allows no dtype the checker can fill with random values)");
        return 0;
      }
    }

    const std::vector<std::vector<int64_t>> shapes = {{}, {1}, {7}, {3, 3}, {2, 3, 5}, {1, 4, 1, 33}};
    size_t ran = 0, inplace_runs = 0;
    std::vector<std::string> rejected;
    std::vector<std::string> dtypes_run;
    for (const auto& types : assignments) {
      for (const auto& shape : shapes) {
        if (report_.count() - before >= 6) break;  // enough to act on
        std::string probe = (in_formal_.empty() ? "" : dtype_str(types.at(in_formal_[0]->type_var)) + " ") +
                            shape_str(shape);
        std::vector<Buffer> inputs(in_formal_.size());
        for (size_t i = 0; i < inputs.size(); ++i) {
          inputs[i].shape = shape;
          inputs[i].dtype = types.at(in_formal_[i]->type_var);
          fill_random(inputs[i], rng_);
        }
        RunResult r = run_once(inputs, probe, std::nullopt);
        if (!r.infer_ok) {
          rejected.push_back(probe + ": " + r.infer_error);
          continue;
        }
        ++ran;
        if (std::find(dtypes_run.begin(), dtypes_run.end(), probe.substr(0, probe.find(' '))) == dtypes_run.end())
          dtypes_run.push_back(probe.substr(0, probe.find(' ')));
        for (size_t a = 0; a < op_->num_aliases; ++a) {
          const oph_alias_def* al = alias_at(op_, a);
          if (al->kind != OPH_ALIAS_MAY_INPLACE) continue;
          if (check_inplace(*al, inputs, r, probe)) ++inplace_runs;
        }
      }
    }
    if (ran == 0) {
      report_.note(label_ + ": run check could not run: infer rejected every probe (" +
                   (rejected.empty() ? std::string("none") : rejected.front()) +
                   (rejected.size() > 1 ? ", ..." : "") + ")");
    } else if (report_.count() == before) {
      report_.ok(label_ + ": run check (" + std::to_string(ran) + " runs, " + join(dtypes_run, ", ") +
                 (inplace_runs ? ", " + std::to_string(inplace_runs) + " in place" : "") +
                 "): infer agrees with compute, inputs untouched" + (inplace_runs ? ", MAY_INPLACE holds" : ""));
    }
    return report_.count() - before;
  }

 private:
  bool mutates(size_t input) const {
    for (size_t a = 0; a < op_->num_aliases; ++a) {
      const oph_alias_def* al = alias_at(op_, a);
      if (al->kind == OPH_ALIAS_MUTATES_INPUT && static_cast<size_t>(al->input_index) == input) return true;
    }
    return false;
  }

  void find(const std::string& probe, std::string what, std::string fix) {
    std::string key = what.substr(0, 60);
    if (!reported_.insert(key).second) return;  // one finding per kind of problem
    report_.finding({label_ + " (" + probe + ")", std::move(what), std::move(fix)});
  }

  // infer + create_kernel + compute on `inputs`. When `inplace` is set ({input, output}), the output buffer is
  // the input's buffer (already holding the input values) and nothing is checked but the status.
  RunResult run_once(std::vector<Buffer>& inputs, const std::string& probe,
                     std::optional<std::pair<size_t, size_t>> inplace) {
    RunResult r;
    const oph_host_services* services = host_services();
    std::vector<oph_value_info> in_infos(inputs.size()), out_infos(out_formal_.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      oph_value_info& v = in_infos[i];
      v.struct_size = sizeof v;
      v.present = true;
      v.dtype = inputs[i].dtype;
      v.ndim = static_cast<int32_t>(inputs[i].shape.size());
      std::copy(inputs[i].shape.begin(), inputs[i].shape.end(), v.shape);
    }
    for (auto& v : out_infos) {
      v.struct_size = sizeof v;
      v.present = true;
      v.ndim = -2;  // infer must set it
    }
    oph_infer_context ic{};
    ic.struct_size = sizeof ic;
    ic.services = services;
    ic.op = op_;
    ic.num_inputs = in_infos.size();
    ic.inputs = in_infos.data();
    ic.num_outputs = out_infos.size();
    ic.outputs = out_infos.data();
    ic.num_attrs = attrs_.size();
    ic.attrs = attrs_.data();
    ic.node_name = "pack_check";
    Code code = Code::kOk;
    std::string err = consume_status(op_->infer(&ic), &code);
    if (!err.empty() || code != Code::kOk) {
      r.infer_error = err.empty() ? "error" : err;
      return r;
    }
    r.infer_ok = true;
    // What infer said.
    r.outputs.resize(out_infos.size());
    std::vector<bool> known(out_infos.size(), true);
    for (size_t o = 0; o < out_infos.size(); ++o) {
      const oph_value_info& v = out_infos[o];
      const oph_io_def* io = out_formal_[o];
      if (v.ndim == -2 || !known_dtype(v.dtype)) {
        find(probe, "infer did not set output " + std::to_string(o) + " ('" + io->name + "'): " +
                        (v.ndim == -2 ? "ndim left unset" : "dtype " + dtype_str(v.dtype) + " is not a valid dtype"),
             "set the dtype and shape of every output in infer (C++: ctx.set_output(i, dtype, shape), or "
             ".infer(oph::same_as_input(0)))");
        return r;
      }
      if (v.ndim > OPH_MAX_NDIM || v.ndim < -1) {
        find(probe, "infer returned rank " + std::to_string(v.ndim) + " for output " + std::to_string(o),
             "use a rank in [0, OPH_MAX_NDIM], or -1 for an unknown rank");
        return r;
      }
      if (const auto* tc = tc_for(op_, io->type_var)) {
        bool allowed = false;
        for (size_t k = 0; k < tc->num_allowed; ++k) allowed = allowed || same_dtype(tc->allowed[k], v.dtype);
        if (!allowed) {
          find(probe, "infer gave output " + std::to_string(o) + " ('" + io->name + "') dtype " + dtype_str(v.dtype) +
                          ", which its type variable '" + io->type_var + "' does not allow",
               "add " + dtype_str(v.dtype) + " to the constraint of '" + std::string(io->type_var) +
                   "' or give the output another type variable");
        }
      }
      Buffer& b = r.outputs[o];
      b.dtype = v.dtype;
      if (v.ndim < 0) {
        known[o] = false;
      } else {
        for (int32_t d = 0; d < v.ndim; ++d) {
          if (v.shape[d] < 0) known[o] = false;
          b.shape.push_back(v.shape[d]);
        }
      }
      if (known[o]) b.allocate_poisoned();
    }
    std::vector<std::vector<int64_t>> inferred(out_infos.size());
    for (size_t o = 0; o < out_infos.size(); ++o) inferred[o] = r.outputs[o].shape;

    // Kernel.
    void* state = nullptr;
    if (op_->create_kernel) {
      oph_kernel_create_args ka{};
      ka.struct_size = sizeof ka;
      ka.services = services;
      ka.op = op_;
      ka.num_inputs = in_infos.size();
      ka.inputs = in_infos.data();
      ka.num_outputs = out_infos.size();
      ka.outputs = out_infos.data();
      ka.num_attrs = attrs_.size();
      ka.attrs = attrs_.data();
      ka.node_name = "pack_check";
      ka.device = {OPH_DL_CPU, 0};
      std::string e = consume_status(op_->create_kernel(&ka, &state));
      if (!e.empty()) {
        find(probe, "create_kernel failed after infer accepted the inputs: " + e,
             "reject these inputs in infer (with a message), or accept them in create_kernel");
        r.infer_ok = false;
        return r;
      }
    }

    // Inputs: copies to compare against afterwards.
    std::vector<std::vector<uint8_t>> before(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) before[i] = inputs[i].bytes;
    std::vector<const oph_tensor*> in_ptrs(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) in_ptrs[i] = &inputs[i].view;
    std::vector<oph_tensor> out_views(r.outputs.size());
    std::vector<oph_tensor*> out_ptrs(r.outputs.size());
    for (size_t o = 0; o < r.outputs.size(); ++o) {
      if (known[o]) {
        out_views[o] = r.outputs[o].view;
      } else {
        out_views[o] = oph_tensor{};
        out_views[o].dtype = r.outputs[o].dtype;
        out_views[o].device = {OPH_DL_CPU, 0};
      }
      out_ptrs[o] = &out_views[o];
    }
    if (inplace) {
      auto [i, o] = *inplace;
      r.outputs[o].bytes = inputs[i].bytes;  // the shared buffer starts as the input
      r.outputs[o].bind(r.outputs[o].bytes.data());
      out_views[o] = r.outputs[o].view;
      inputs[i].bind(r.outputs[o].bytes.data());
    }
    std::vector<bool> allocated(r.outputs.size(), false);
    ComputeState cs{&r.outputs, &out_ptrs, &allocated};
    oph_compute_context cc{};
    cc.struct_size = sizeof cc;
    cc.services = services;
    cc.num_inputs = in_ptrs.size();
    cc.inputs = in_ptrs.data();
    cc.num_outputs = out_ptrs.size();
    cc.outputs = out_ptrs.data();
    cc.stream = nullptr;
    cc.device = {OPH_DL_CPU, 0};
    cc.allocate_output = &check_allocate_output;
    cc.host_data = &cs;
    std::string e = consume_status(op_->compute(state, &cc));
    if (op_->destroy_kernel && state) op_->destroy_kernel(state);
    if (inplace) {
      inputs[inplace->first].bind(inputs[inplace->first].bytes.data());
      if (!e.empty()) {
        find(probe, "compute failed when output " + std::to_string(inplace->second) + " shares input " +
                        std::to_string(inplace->first) + "'s buffer (MAY_INPLACE): " + e,
             "remove the MAY_INPLACE alias, or support in-place operation in compute");
        r.infer_ok = false;
      }
      return r;
    }
    if (!e.empty()) {
      find(probe, "compute failed on inputs infer accepted: " + e,
           "reject these inputs in infer with the same message (the host then reports it before running), or "
           "handle them in compute");
      r.infer_ok = false;
      return r;
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].bytes != before[i] && !mutates(i)) {
        size_t k = 0;
        while (k < before[i].size() && inputs[i].bytes[k] == before[i][k]) ++k;
        find(probe, "compute modified input " + std::to_string(i) + " ('" + in_formal_[i]->name +
                        "'), which is declared read-only (first changed byte: " + std::to_string(k) + ")",
             "write only to outputs, or declare the input MUTATES_INPUT (C++: .alias(" + std::to_string(i) +
                 ", <output>, OPH_ALIAS_MUTATES_INPUT)) so the planner gives the op its own copy");
      }
    }
    for (size_t o = 0; o < r.outputs.size(); ++o) {
      Buffer& b = r.outputs[o];
      const std::string oname = "output " + std::to_string(o) + " ('" + out_formal_[o]->name + "')";
      if (!known[o]) {
        if (!allocated[o]) {
          find(probe, oname + " has a shape unknown to infer but compute did not call allocate_output",
               "call ctx->allocate_output(ctx, " + std::to_string(o) + ", ndim, shape) before writing it");
          continue;
        }
        const auto& inf = inferred[o];
        bool rank_known = out_infos[o].ndim >= 0;
        bool agrees = !rank_known || inf.size() == b.shape.size();
        for (size_t d = 0; agrees && rank_known && d < inf.size(); ++d) agrees = inf[d] < 0 || inf[d] == b.shape[d];
        if (!agrees) {
          find(probe, oname + ": compute allocated shape " + shape_str(b.shape) + " but infer said " + shape_str(inf),
               "make infer and compute compute the same shape (use OPH_DIM_UNKNOWN only for the dims that depend "
               "on data)");
        }
      } else if (allocated[o]) {
        find(probe, oname + ": compute called allocate_output although infer gave a full shape " + shape_str(b.shape),
             "write into the preallocated output (the host plans its memory from infer's shape)");
      }
      size_t payload = b.payload();
      bool guard_ok = std::all_of(b.bytes.begin() + static_cast<std::ptrdiff_t>(payload), b.bytes.end(),
                                  [](uint8_t v) { return v == kPoison; });
      if (!guard_ok) {
        find(probe, oname + ": compute wrote past the end of the buffer (" + std::to_string(payload) +
                        " bytes for shape " + shape_str(b.shape) + " " + dtype_str(b.dtype) + " from infer)",
             "make infer return the shape compute writes, or write only size() elements");
      }
      if (payload >= 16 && std::all_of(b.bytes.begin(), b.bytes.begin() + static_cast<std::ptrdiff_t>(payload),
                                       [](uint8_t v) { return v == kPoison; })) {
        find(probe, oname + " was not written by compute",
             "write every element of every requested output (an output the model does not use has a NULL entry)");
      }
    }
    return r;
  }

  // Runs again with output o in input i's buffer and compares with the out-of-place result `ref`.
  bool check_inplace(const oph_alias_def& al, std::vector<Buffer>& inputs, const RunResult& ref,
                     const std::string& probe) {
    size_t i = static_cast<size_t>(al.input_index), o = static_cast<size_t>(al.output_index);
    if (i >= inputs.size() || o >= ref.outputs.size()) return false;
    const Buffer& out = ref.outputs[o];
    if (!same_dtype(out.dtype, inputs[i].dtype) || out.shape != inputs[i].shape) {
      find(probe, "MAY_INPLACE input " + std::to_string(i) + " -> output " + std::to_string(o) + " but the output is " +
                      dtype_str(out.dtype) + " " + shape_str(out.shape) + " while the input is " +
                      dtype_str(inputs[i].dtype) + " " + shape_str(inputs[i].shape),
           "the planner only shares buffers of equal size: remove the alias or keep the output's dtype and shape "
           "equal to the input's");
      return false;
    }
    std::vector<Buffer> again = inputs;
    for (auto& b : again) b.bind(b.bytes.data());
    RunResult r = run_once(again, probe, std::make_pair(i, o));
    if (!r.infer_ok) return false;
    const Buffer& got = r.outputs[o];
    size_t payload = out.payload();
    if (std::memcmp(got.bytes.data(), out.bytes.data(), payload) != 0) {
      size_t k = 0;
      while (k < payload && got.bytes[k] == out.bytes[k]) ++k;
      size_t e = elem_bytes(out.dtype) ? k / elem_bytes(out.dtype) : k;
      std::string vals;
      if (out.dtype.code == OPH_DTYPE_FLOAT && out.dtype.bits == 32) {
        vals = " (" + std::to_string(reinterpret_cast<const float*>(got.bytes.data())[e]) + " in place vs " +
               std::to_string(reinterpret_cast<const float*>(out.bytes.data())[e]) + " out of place)";
      }
      find(probe, "MAY_INPLACE input " + std::to_string(i) + " -> output " + std::to_string(o) +
                      " does not hold: with the output in the input's buffer, element " + std::to_string(e) +
                      " differs" + vals,
           "remove the alias (C++: drop .may_inplace(" + std::to_string(i) + ", " + std::to_string(o) +
               ")), or make compute read each input element before writing the output element at the same index");
    }
    return true;
  }

  const oph_op_def* op_;
  Report& report_;
  std::string label_;
  std::mt19937 rng_;
  std::vector<const oph_io_def*> in_formal_, out_formal_;
  std::vector<oph_attr_value> attrs_;
  std::set<std::string> reported_;
};

// Definition checks the loader does not make (it needs none of them to load the op safely).
void check_definition_extras(const oph_op_def* op, const std::string& label, Report& report) {
  size_t before = report.count();
  for (size_t i = 0; i < op->num_type_constraints; ++i) {
    const auto* tc = OPH_ARRAY_AT(oph_type_constraint, op->type_constraints, op->type_constraints->struct_size, i);
    for (size_t k = 0; k < tc->num_allowed; ++k) {
      if (!known_dtype(tc->allowed[k])) {
        report.finding({label, "type variable '" + std::string(tc->type_var) + "' allows " +
                                   dtype_str(tc->allowed[k]) + " (code " + std::to_string(tc->allowed[k].code) +
                                   ", bits " + std::to_string(tc->allowed[k].bits) + ", lanes " +
                                   std::to_string(tc->allowed[k].lanes) + "), which no ONNX type maps to",
                        "use the SDK's dtypes (C++: oph::dtypes::f32, ...; C: {OPH_DTYPE_FLOAT, 32, 1})"});
      }
    }
  }
  for (size_t a = 0; a < op->num_aliases; ++a) {
    const oph_alias_def* al = alias_at(op, a);
    const oph_io_def* in = io_at(op->inputs, static_cast<size_t>(al->input_index));
    const oph_io_def* out = io_at(op->outputs, static_cast<size_t>(al->output_index));
    if (al->kind == OPH_ALIAS_MAY_INPLACE && std::strcmp(in->type_var, out->type_var) != 0) {
      report.finding({label, "MAY_INPLACE input " + std::to_string(al->input_index) + " ('" + in->name +
                                 "', type " + in->type_var + ") -> output " + std::to_string(al->output_index) +
                                 " ('" + out->name + "', type " + out->type_var +
                                 "): the two have different type variables, so their sizes may differ",
                      "give both the same type variable, or remove the alias"});
    }
  }
  for (size_t i = 0; i < op->num_inputs; ++i) {
    const oph_io_def* io = io_at(op->inputs, i);
    if (io->name[0] == '\0') {
      report.finding({label, "input " + std::to_string(i) + " has an empty name",
                      "name every input (C++: .input_names({...})); the names appear in error messages"});
    }
  }
  if (report.count() == before) {
    report.ok(label + ": definition (" + std::to_string(op->num_inputs) + " inputs, " +
              std::to_string(op->num_outputs) + " outputs, " + std::to_string(op->num_attributes) + " attributes, " +
              std::to_string(op->num_aliases) + " aliases)");
  }
}

std::string abi_str(uint32_t major, uint32_t minor) { return std::to_string(major) + "." + std::to_string(minor); }

}  // namespace

int cmd_pack_check(int argc, char** argv) {
  std::string dir_arg, log_level;
  uint32_t seed = 1;
  bool no_run = false;
  po::options_description visible("Options", 110, 55);
  visible.add_options()("help,h", "show this help")("seed", po::value(&seed)->default_value(1),
                                                       "seed of the random inputs")(
      "no-run", po::bool_switch(&no_run), "skip the run check (definitions only)")(
      "log-level", po::value(&log_level), "log level");
  po::options_description all("All");
  all.add(visible).add_options()("dir", po::value(&dir_arg)->required(), "plugin folder");
  po::positional_options_description pos;
  pos.add("dir", 1);
  po::variables_map vm;
  if (!parse(argc, argv, visible, all, pos, vm,
             "Usage: ophost pack check DIR [--seed N] [--no-run]\n\n"
             "Checks the plugin folder DIR (ophost-plugin.json + its library) for its author: the manifest\n"
             "schema, sha256, platform and ABI; the library's exported symbols (only oph_plugin_entry_v1);\n"
             "loading and the handshake; every op definition; and, for every CPU op, a run with random inputs of\n"
             "a few shapes: infer must agree with what compute writes, inputs not declared MUTATES_INPUT must be\n"
             "left unchanged, and MAY_INPLACE declarations must hold. Each finding says what to change.\n"
             "Exit status: 0 when clean, 1 with findings.\n")) {
    return kExitOk;
  }
  setup_logging(log_level, "error");
  Report report;
  fs::path dir = dir_arg;
  fs::path manifest_path = dir / kManifestFileName;
  std::cout << "ophost pack check " << dir.string() << " (host ABI " << abi_str(OPH_ABI_MAJOR, OPH_ABI_MINOR)
            << ")\n";

  // 1. Manifest.
  std::optional<Manifest> manifest;
  if (!fs::is_directory(dir)) {
    throw Error(Code::kNotFound, dir.string() + " is not a folder (give the plugin folder, the one that holds " +
                                     kManifestFileName + ")");
  }
  try {
    manifest = read_manifest(manifest_path);
    report.ok("manifest " + manifest_path.string() + ": schema (" + manifest->name + " " + manifest->version + ", " +
              manifest->kind + ")");
  } catch (const Error& e) {
    report.finding({"manifest", e.what(),
                    fs::exists(manifest_path)
                        ? "fix the manifest, or regenerate it from the library with `ophost pack manifest` "
                          "(ophost_add_pack does this after every build)"
                        : "write it with `ophost pack manifest --library LIB --kind operator-pack --out " +
                              manifest_path.string() + "` (ophost_add_pack does this after every build)"});
  }
  fs::path library;
  if (manifest) {
    library = dir / manifest->library;
  } else {
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".so" && library.empty()) library = e.path();
    if (!library.empty()) report.note("checking " + library.string() + " (the only .so in the folder)");
  }
  if (library.empty() || !fs::is_regular_file(library)) {
    report.finding({"library", library.empty() ? "no library found in " + dir.string()
                                               : "the manifest names " + library.string() + ", which does not exist",
                    "put the built library next to the manifest, with the name in its \"library\" field"});
    std::cout << "result: " << report.count() << " finding(s)\n";
    return kExitError;
  }
  if (manifest) {
    bool ok = true;
    std::string sha = sha256_file(library);
    if (sha != manifest->sha256) {
      ok = false;
      report.finding({"manifest", "sha256 of " + library.filename().string() + " is " + sha + " but the manifest says " +
                                      manifest->sha256 + " (the library was rebuilt or replaced)",
                      "regenerate the manifest after every build (`ophost pack manifest`, as ophost_add_pack does); "
                      "do not strip or patch the library afterwards"});
    }
    if (manifest->platform.os != host_os() || manifest->platform.arch != host_arch()) {
      ok = false;
      report.finding({"manifest", "platform " + manifest->platform.os + "/" + manifest->platform.arch +
                                      " but this host is " + host_os() + "/" + host_arch(),
                      "build the pack for " + host_os() + "/" + host_arch()});
    }
    const ManifestAbi& abi = manifest->abi;
    if (abi.major != OPH_ABI_MAJOR) {
      ok = false;
      report.finding({"ABI", "the manifest says ABI major " + std::to_string(abi.major) + " but this host provides " +
                                 abi_str(OPH_ABI_MAJOR, OPH_ABI_MINOR),
                      "rebuild the pack against an SDK of ABI major " + std::to_string(OPH_ABI_MAJOR)});
    } else if (abi.minor_required > OPH_ABI_MINOR) {
      ok = false;
      report.finding({"ABI", "the pack requires ABI " + abi_str(abi.major, abi.minor_required) +
                                 " but this host provides " + abi_str(OPH_ABI_MAJOR, OPH_ABI_MINOR),
                      "lower minor_required to the oldest minor whose features the pack uses, or check with a newer "
                      "ophost"});
    } else if (abi.minor_required > abi.minor_built) {
      ok = false;
      report.finding({"ABI", "minor_required " + std::to_string(abi.minor_required) + " is above minor_built " +
                                 std::to_string(abi.minor_built),
                      "minor_required can be at most the minor the pack was built with"});
    }
    if (ok) {
      report.ok("library " + library.filename().string() + ": sha256 matches, platform " + host_os() + "/" +
                host_arch() + ", ABI " + abi_str(abi.major, abi.minor_built) + " (requires " +
                abi_str(abi.major, abi.minor_required) + ")");
    }
  }

  // 2. Exported symbols and dependencies.
  try {
    ElfDynamicInfo elf = read_elf_dynamic(library);
    std::vector<std::string> extra;
    bool has_entry = false;
    for (const auto& s : elf.exported) {
      if (s == OPH_PLUGIN_ENTRY_SYMBOL) has_entry = true;
      else extra.push_back(s);
    }
    std::sort(extra.begin(), extra.end());
    extra.erase(std::unique(extra.begin(), extra.end()), extra.end());
    if (elf.machine != host_elf_machine()) {
      report.finding({"library", "built for ELF machine " + std::to_string(elf.machine) + ", not this host's (" +
                                     std::to_string(host_elf_machine()) + ")",
                      "build the pack with this platform's compiler"});
    }
    if (!has_entry) {
      report.finding({"symbols", std::string("the library does not export ") + OPH_PLUGIN_ENTRY_SYMBOL,
                      "define the entry once with OPH_PACK(pack) (C++) or OPH_DEFINE_PLUGIN_ENTRY(fn) (C)"});
    }
    if (!extra.empty()) {
      std::vector<std::string> shown(extra.begin(), extra.begin() + static_cast<std::ptrdiff_t>(std::min<size_t>(8, extra.size())));
      report.finding({"symbols", "the library exports " + std::to_string(extra.size()) + " symbol(s) besides " +
                                     OPH_PLUGIN_ENTRY_SYMBOL + ": " + join(shown, ", ") +
                                     (extra.size() > shown.size() ? ", ..." : ""),
                      "build with -fvisibility=hidden and a version script exporting only the entry "
                      "(ophost_add_pack does both); exported symbols can clash with the host's or other packs'"});
    }
    for (const auto& n : elf.needed) {
      if (n.rfind("libophost.so", 0) == 0) {
        report.finding({"symbols", "the library links against " + n,
                        "do not link libophost: everything a plugin needs comes through oph_host_services "
                        "(link only ophost::sdk)"});
      }
    }
    if (has_entry && extra.empty()) {
      report.ok(std::string("exported symbols: ") + OPH_PLUGIN_ENTRY_SYMBOL + " only; needs " +
                (elf.needed.empty() ? std::string("nothing") : join(elf.needed, ", ")));
    }
  } catch (const Error& e) {
    report.finding({"library", e.what(), "give the folder of a Linux shared library built for this platform"});
  }

  // 3. Load, handshake and tables (the loader's own code); without the manifest when it is unusable.
  std::unique_ptr<LoadedPlugin> plugin;
  std::string prefix = plugin_message_prefix(manifest ? manifest->name : dir.filename().string(), manifest_path);
  try {
    plugin = LoadedPlugin::load(library, dir, manifest_path, manifest ? &*manifest : nullptr, prefix);
    report.ok("loads: handshake, op and device tables valid" +
              std::string(manifest ? ", equal to the manifest's provides" : ""));
  } catch (const Error& e) {
    report.finding({"load", e.what(),
                    "the message says what the loader rejected; after changing the library, rebuild it and "
                    "regenerate the manifest"});
    if (manifest) {
      try {
        plugin = LoadedPlugin::load(library, dir, manifest_path, nullptr, prefix);
        report.note("loaded again without comparing against the manifest, to check the ops");
      } catch (const Error&) {
      }
    }
  }
  if (plugin) {
    size_t op_findings_before = report.count();
    for (const oph_op_def* op : plugin->ops()) {
      std::string label = describe_op(*op);
      // The loader already ran validate_op_def; run it again in case it is ever relaxed at load time.
      if (std::string e = validate_op_def(op); !e.empty()) {
        report.finding({label, e, "fix the op definition"});
        continue;
      }
      check_definition_extras(op, label, report);
      if (!no_run) OpChecker(op, report, label, seed).run();
    }
    for (const oph_device_backend_def* dev : plugin->devices()) {
      report.ok(std::string("device backend '") + dev->device_type + "': definition");
    }
    (void)op_findings_before;
  }

  if (report.count() == 0) {
    std::cout << "result: clean\n";
    return kExitOk;
  }
  std::cout << "result: " << report.count() << " finding(s)\n";
  return kExitError;
}

}  // namespace ophost::cli
