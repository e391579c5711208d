// `ophost pack check`: the run check of one CPU op, in a forked child.
//
// The child runs infer + create_kernel + compute on each sample (random inputs of a few shapes, or the author's
// --input files), with every input and output buffer between guard zones and every output poisoned before
// compute (signalling NaN for floats, 0xA5 bytes for the rest). After compute it reports writes outside the
// buffers, output elements never written, inputs changed without MUTATES_INPUT, and MAY_INPLACE declarations
// that do not hold. Each report entry goes to the parent through a pipe as soon as it is made, with the
// sample and stage the child is in, so a crash (a signal) or a hang (killed after --timeout) is reported as a
// finding naming the op and the sample, and the check goes on with the next op. A sample's expected outputs are
// compared with the op's, and the first finite inputs run again with NaN, +inf and -inf (the NaN/Inf probe, a
// note); the value helpers for both are in pack_check_values.cpp.
//
// Over 600 lines: the checker (OpChecker), its guarded buffers and the fork/pipe protocol that carries its report
// share one private buffer type and run function; the buffers and the protocol could move to files of their own
// once the host and the backend test host share one op runner (docs/architecture.md).
#include "pack_check_internal.hpp"

#include <ophost/error.hpp>
#include <ophost/services.hpp>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <new>
#include <optional>
#include <random>
#include <set>
#include <sstream>

namespace ophost::cli::pack {

namespace {

constexpr size_t kGuard = 1024;          // guard bytes before and after every input and output buffer
constexpr uint8_t kGuardByte = 0xFD;     // their value
constexpr size_t kMaxFindingsPerOp = 6;  // enough to act on

// ---- buffers -----------------------------------------------------------------------------------------------

template <class T>
struct Aligned64 {
  using value_type = T;
  Aligned64() = default;
  template <class U>
  Aligned64(const Aligned64<U>&) noexcept {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{64})); }
  void deallocate(T* p, size_t) noexcept { ::operator delete(p, std::align_val_t{64}); }
  friend bool operator==(const Aligned64&, const Aligned64&) { return true; }
};
using Bytes = std::vector<uint8_t, Aligned64<uint8_t>>;

// One tensor with its own storage: [kGuard guard bytes][payload, 64-byte aligned][kGuard guard bytes].
struct Buffer {
  std::vector<int64_t> shape;
  oph_dtype dtype{};
  Bytes storage;
  oph_tensor view{};

  Buffer() = default;
  Buffer(const Buffer& o) : shape(o.shape), dtype(o.dtype), storage(o.storage) { rebind(); }
  Buffer& operator=(const Buffer& o) {
    shape = o.shape;
    dtype = o.dtype;
    storage = o.storage;
    rebind();
    return *this;
  }
  Buffer(Buffer&&) noexcept = default;
  Buffer& operator=(Buffer&&) noexcept = default;

  size_t payload() const { return numel(shape) * elem_bytes(dtype); }
  uint8_t* data() { return storage.data() + kGuard; }
  const uint8_t* data() const { return storage.data() + kGuard; }
  // Guard bytes everywhere (the payload is filled by the caller).
  void allocate() {
    storage.assign(payload() + 2 * kGuard, kGuardByte);
    rebind();
  }
  // The view over this buffer's own payload.
  void rebind() {
    view = oph_tensor{};
    view.data = data();
    view.device = {OPH_DL_CPU, 0};
    view.ndim = static_cast<int32_t>(shape.size());
    view.dtype = dtype;
    view.shape = shape.data();
    view.strides = nullptr;
    view.byte_offset = 0;
  }
};

// One element of the poison pattern: a signalling NaN for floats (arithmetic never produces one), 0xA5 (0x5A)
// bytes for the rest. Variant 1 is a second pattern, to confirm that an element equal to variant 0 really was
// not written (and is not a computed value that happens to equal it).
std::vector<uint8_t> poison_element(oph_dtype d, int variant) {
  auto bytes_of = [](auto v) {
    std::vector<uint8_t> out(sizeof v);
    std::memcpy(out.data(), &v, sizeof v);
    return out;
  };
  if (d.lanes == 1 && d.code == OPH_DTYPE_FLOAT && d.bits == 32) return bytes_of(variant ? 0x7F8A5A5Au : 0x7FA5A5A5u);
  if (d.lanes == 1 && d.code == OPH_DTYPE_FLOAT && d.bits == 64)
    return bytes_of(variant ? uint64_t{0x7FF25A5A5A5A5A5A} : uint64_t{0x7FF4A5A5A5A5A5A5});
  if (d.lanes == 1 && d.code == OPH_DTYPE_FLOAT && d.bits == 16) return bytes_of(uint16_t(variant ? 0x7C5A : 0x7CA5));
  if (d.lanes == 1 && d.code == OPH_DTYPE_BFLOAT && d.bits == 16) return bytes_of(uint16_t(variant ? 0x7F9A : 0x7FA5));
  return std::vector<uint8_t>(elem_bytes(d), variant ? 0x5A : 0xA5);
}

void poison(Buffer& b, int variant) {
  std::vector<uint8_t> e = poison_element(b.dtype, variant);
  if (e.empty()) return;
  size_t n = numel(b.shape);
  for (size_t i = 0; i < n; ++i) std::memcpy(b.data() + i * e.size(), e.data(), e.size());
}

// Indices of the elements still equal to the poison pattern.
std::vector<size_t> poisoned_elements(const Buffer& b, int variant) {
  std::vector<uint8_t> e = poison_element(b.dtype, variant);
  std::vector<size_t> out;
  if (e.empty()) return out;
  size_t n = numel(b.shape);
  for (size_t i = 0; i < n; ++i)
    if (std::memcmp(b.data() + i * e.size(), e.data(), e.size()) == 0) out.push_back(i);
  return out;
}

void fill_random(Buffer& b, std::mt19937& rng) {
  b.allocate();
  std::uniform_real_distribution<double> real(-2.0, 2.0);
  std::uniform_int_distribution<int> small(-5, 5), unsig(0, 10), bit(0, 1);
  const oph_dtype d = b.dtype;
  uint8_t* p = b.data();
  for (size_t i = 0, n = numel(b.shape); i < n; ++i) {
    if (d.code == OPH_DTYPE_FLOAT && d.bits == 32) {
      float v = static_cast<float>(real(rng));
      std::memcpy(p + 4 * i, &v, 4);
    } else if (d.code == OPH_DTYPE_FLOAT) {
      double v = real(rng);
      std::memcpy(p + 8 * i, &v, 8);
    } else if (d.code == OPH_DTYPE_BOOL) {
      p[i] = static_cast<uint8_t>(bit(rng));
    } else {
      int64_t v = d.code == OPH_DTYPE_INT ? small(rng) : unsig(rng);
      std::memcpy(p + i * elem_bytes(d), &v, elem_bytes(d));  // little-endian truncation
    }
  }
}

Buffer from_sample(const SampleInput& s) {
  Buffer b;
  b.shape = s.shape;
  b.dtype = s.dtype;
  b.allocate();
  std::copy(s.bytes.begin(), s.bytes.end(), b.data());
  return b;
}

// Writes outside [data, data + payload): what the guard zones show.
// {what, kind of damage} for each side.
std::vector<std::pair<std::string, std::string>> guard_damage(const Buffer& b, const std::string& name) {
  std::vector<std::pair<std::string, std::string>> out;
  const size_t payload = b.payload();
  const std::string holds = "the buffer holds " + std::to_string(payload) + " bytes: " + dtype_str(b.dtype) + " " +
                            shape_str(b.shape);
  size_t k = 0;
  while (k < kGuard && b.storage[k] == kGuardByte) ++k;
  if (k < kGuard) {
    size_t before = kGuard - k;
    out.emplace_back("compute wrote " + std::string(before == kGuard ? "at least " : "") + std::to_string(before) +
                         " bytes before the start of " + name + " (the furthest corrupted byte at start-" +
                         std::to_string(before) + "; " + holds + ")",
                     "before the start of " + name);
  }
  const uint8_t* after = b.storage.data() + kGuard + payload;
  size_t first = kGuard, last = 0;
  for (size_t i = 0; i < kGuard; ++i) {
    if (after[i] != kGuardByte) {
      first = std::min(first, i);
      last = i;
    }
  }
  if (first < kGuard) {
    out.emplace_back("compute wrote " + std::string(last + 1 == kGuard ? "at least " : "") +
                         std::to_string(last + 1) + " bytes past the end of " + name + " (first corrupted byte at end+" +
                         std::to_string(first) + "; " + holds + ")",
                     "past the end of " + name);
  }
  return out;
}

// ---- the host side of compute --------------------------------------------------------------------------------

// parallel_for without threads: the chunks run one after another on the calling thread. The child is a fork
// of the command, so the host's pool may have workers that do not exist in it; serial chunks also make a crash
// point at the kernel, not at a worker.
void serial_parallel_for(void*, size_t n, size_t grain, oph_parallel_fn fn, void* user) {
  if (n == 0 || !fn) return;
  size_t chunk = std::max<size_t>({grain, 1, (n + 3) / 4});
  for (size_t begin = 0; begin < n; begin += chunk) fn(user, begin, std::min(n, begin + chunk));
}

const oph_host_services* check_services() {
  static const oph_host_services services = [] {
    oph_host_services s = *host_services();
    s.parallel_for = &serial_parallel_for;
    return s;
  }();
  return &services;
}

// "" for OK; else the status message, or what the status says without one.
std::string status_error(oph_status* status) {
  Code code = Code::kOk;
  std::string message = consume_status(status, &code);
  if (code == Code::kOk && message.empty()) return "";
  return message.empty() ? "(the status has no message; code " + std::to_string(static_cast<int>(code)) + ")"
                         : message;
}

struct ComputeState {
  std::vector<Buffer>* outputs;
  std::vector<oph_tensor*>* out_ptrs;
  std::vector<bool>* allocated;
  int poison_variant;
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
  b.allocate();
  poison(b, st->poison_variant);
  (*st->allocated)[index] = true;
  *(*st->out_ptrs)[index] = b.view;
  return nullptr;
}

// ---- the checker (runs in the child) -------------------------------------------------------------------------

struct RunResult {
  enum class Outcome { kRan, kInferRejected, kInferInvalid, kKernelFailed, kComputeFailed };
  Outcome outcome = Outcome::kRan;
  std::string infer_error;
  std::string compute_error;  // kComputeFailed: the status message
  std::vector<Buffer> outputs;
  std::vector<bool> filled;  // outputs with a buffer (shape from infer, or allocate_output called)
};

// "float32 [7]" when every input has that dtype and shape, else each input's.
std::string describe_sample(const std::vector<Buffer>& inputs) {
  if (inputs.empty()) return "no inputs";
  bool same = std::all_of(inputs.begin(), inputs.end(), [&](const Buffer& b) {
    return same_dtype(b.dtype, inputs[0].dtype) && b.shape == inputs[0].shape;
  });
  std::vector<std::string> parts;
  for (size_t i = 0; i < (same ? 1 : inputs.size()); ++i)
    parts.push_back(dtype_str(inputs[i].dtype) + " " + shape_str(inputs[i].shape));
  return join(parts, ", ");
}

using StageFn = std::function<void(const std::string& sample, const std::string& stage)>;

class OpChecker {
 public:
  OpChecker(const oph_op_def* op, Report& report, std::string label, const RunSpec& spec, StageFn stage)
      : op_(op), report_(report), label_(std::move(label)), spec_(spec), rng_(spec.seed), stage_(std::move(stage)) {}

  void run() {
    in_formal_ = actual_inputs(op_);
    out_formal_ = actual_outputs(op_);
    if (!resolve_attributes() || !inputs_fillable()) return;
    std::vector<std::vector<Buffer>> samples = spec_.inputs.empty() ? generic_samples() : given_sample();
    if (samples.empty()) return;
    size_t ran = 0, inplace_runs = 0;
    bool compute_failed = false;
    std::vector<std::string> rejected, dtypes_run;
    std::optional<std::pair<std::vector<Buffer>, RunResult>> probe_base;  // for the NaN/Inf probe
    for (auto& inputs : samples) {
      if (report_.count() >= kMaxFindingsPerOp) break;
      const std::string probe = describe_sample(inputs);
      RunResult r = run_once(inputs, probe, std::nullopt, 0, true);
      if (r.outcome == RunResult::Outcome::kInferRejected) rejected.push_back(probe + ": " + r.infer_error);
      compute_failed = compute_failed || r.outcome == RunResult::Outcome::kComputeFailed;
      if (r.outcome != RunResult::Outcome::kRan) continue;
      ++ran;
      std::string dt = inputs.empty() ? "no inputs" : dtype_str(inputs[0].dtype);
      if (std::find(dtypes_run.begin(), dtypes_run.end(), dt) == dtypes_run.end()) dtypes_run.push_back(dt);
      check_unwritten(inputs, probe, r);
      compare_expected(probe, r);
      for (size_t a = 0; a < op_->num_aliases; ++a) {
        const oph_alias_def* al = op_->aliases[a];
        if (al->kind == OPH_ALIAS_MAY_INPLACE && check_inplace(*al, inputs, r, probe)) ++inplace_runs;
      }
      if (!probe_base && all_finite(inputs)) probe_base.emplace(inputs, std::move(r));
    }
    if (probe_base && report_.count() < kMaxFindingsPerOp) nan_probe(probe_base->first, probe_base->second);
    summarize(ran, inplace_runs, compute_failed, rejected, dtypes_run);
  }

 private:
  // Defaults, then --attr values; false (with a not-run note) when a required attribute has no value.
  bool resolve_attributes() {
    std::vector<std::string> missing;
    for (size_t i = 0; i < op_->num_attributes; ++i) {
      const oph_attr_def* a = op_->attributes[i];
      if (auto it = spec_.attrs.find(i); it != spec_.attrs.end()) {
        attrs_.push_back(it->second.view());
        continue;
      }
      if (a->required) missing.push_back(a->name);
      oph_attr_value v{};  // no default: the kernel sees OPH_ATTR_UNDEFINED
      if (a->default_value) std::memcpy(&v, a->default_value, std::min(a->default_value->struct_size, sizeof v));
      v.struct_size = OPH_ATTR_VALUE_STRUCT_SIZE;
      attrs_.push_back(v);
    }
    if (missing.empty()) return true;
    std::vector<std::string> args;
    for (const auto& m : missing) args.push_back("--attr " + m + "=VALUE");
    report_.not_run(label_ + ": not run: attribute" + (missing.size() > 1 ? "s '" : " '") + join(missing, "', '") +
                    (missing.size() > 1 ? "' are" : "' is") + " required; pass " + join(args, " ") +
                    " (with --op " + op_name(op_) + "), or give " + (missing.size() > 1 ? "them" : "it") +
                    " in the pack's " + kSamplesFileName);
    return false;
  }

  // Inputs the checker cannot make up (host-memory, shape-like inputs; dtypes it cannot fill) need --input.
  bool inputs_fillable() {
    for (size_t i = 0; i < in_formal_.size(); ++i) {
      const oph_io_def* io = in_formal_[i];
      if (spec_.inputs.count(i)) continue;
      if (io->memory == OPH_MEMORY_HOST) {
        report_.not_run(label_ + ": not run: input " + std::to_string(i) + " '" + io->name +
                        "' is a host-memory (shape-like) input, for which random values mean nothing; pass --input " +
                        io->name + "=FILE.npy (with --op " + op_name(op_) + "), or give its values in the pack's " +
                        kSamplesFileName);
        return false;
      }
    }
    return true;
  }

  // The dtype of each type variable: the first one the checker can fill (the first input's: each such one).
  std::vector<std::map<std::string, oph_dtype>> type_assignments() {
    std::vector<std::map<std::string, oph_dtype>> assignments;
    std::map<std::string, oph_dtype> base;
    for (size_t i = 0; i < op_->num_type_constraints; ++i) {
      const oph_type_constraint* tc = op_->type_constraints[i];
      for (size_t k = 0; k < tc->num_allowed; ++k)
        if (fillable(tc->allowed[k])) { base[tc->type_var] = tc->allowed[k]; break; }
    }
    std::string first_var = in_formal_.empty() ? "" : in_formal_[0]->type_var;
    if (const auto* tc = first_var.empty() ? nullptr : tc_for(op_, first_var.c_str())) {
      for (size_t k = 0; k < tc->num_allowed && assignments.size() < 4; ++k) {
        if (!fillable(tc->allowed[k])) continue;
        auto a = base;
        a[first_var] = tc->allowed[k];
        assignments.push_back(a);
      }
    }
    if (assignments.empty()) assignments.push_back(base);
    return assignments;
  }

  bool types_fillable(const std::map<std::string, oph_dtype>& types) {
    for (size_t i = 0; i < in_formal_.size(); ++i) {
      if (types.count(in_formal_[i]->type_var)) continue;
      report_.not_run(label_ + ": not run: type variable '" + std::string(in_formal_[i]->type_var) + "' of input " +
                      std::to_string(i) + " '" + in_formal_[i]->name +
                      "' allows no dtype the checker can fill with random values; pass --input " +
                      in_formal_[i]->name + "=FILE.npy (with --op " + op_name(op_) + ")");
      return false;
    }
    return true;
  }

  // Random inputs of rank 0 to 4 (all inputs of one sample share its shape), for each dtype of the first input.
  std::vector<std::vector<Buffer>> generic_samples() {
    const std::vector<std::vector<int64_t>> shapes = {{}, {1}, {7}, {3, 3}, {2, 3, 5}, {1, 4, 1, 33}};
    std::vector<std::vector<Buffer>> samples;
    auto assignments = type_assignments();
    if (!types_fillable(assignments[0])) return samples;
    for (const auto& types : assignments) {
      for (const auto& shape : shapes) {
        std::vector<Buffer> inputs(in_formal_.size());
        for (size_t i = 0; i < inputs.size(); ++i) {
          inputs[i].shape = shape;
          inputs[i].dtype = types.at(in_formal_[i]->type_var);
          fill_random(inputs[i], rng_);
        }
        samples.push_back(std::move(inputs));
      }
    }
    return samples;
  }

  // The --input files; inputs not given are random, with the first given input's shape and the dtype of their
  // type variable (the given input's, when they share it).
  std::vector<std::vector<Buffer>> given_sample() {
    const SampleInput& first = spec_.inputs.begin()->second;
    std::map<std::string, oph_dtype> types;
    for (const auto& [i, s] : spec_.inputs) types[in_formal_[i]->type_var] = s.dtype;
    std::map<std::string, oph_dtype> base = type_assignments()[0];
    for (auto& [var, d] : base) types.emplace(var, d);
    std::vector<Buffer> inputs(in_formal_.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (auto it = spec_.inputs.find(i); it != spec_.inputs.end()) {
        if (it->second.random) {  // a samples file's {"dtype", "shape"}
          inputs[i].shape = it->second.shape;
          inputs[i].dtype = it->second.dtype;
          fill_random(inputs[i], rng_);
        } else {
          inputs[i] = from_sample(it->second);
        }
        continue;
      }
      if (!types.count(in_formal_[i]->type_var) && !types_fillable(types)) return {};
      inputs[i].shape = first.shape;
      inputs[i].dtype = types.at(in_formal_[i]->type_var);
      fill_random(inputs[i], rng_);
    }
    std::vector<std::vector<Buffer>> samples;
    samples.push_back(std::move(inputs));
    return samples;
  }

  void summarize(size_t ran, size_t inplace_runs, bool compute_failed, const std::vector<std::string>& rejected,
                 const std::vector<std::string>& dtypes_run) {
    if (ran == 0 && report_.count() == 0 && !compute_failed) {
      std::string why = rejected.empty() ? std::string("nothing to run")
                                         : rejected.front() + (rejected.size() > 1 ? "; ..." : "");
      if (spec_.inputs.empty()) {
        report_.not_run(label_ + ": not run: infer rejected every probe (" + why +
                        "); pass inputs of shapes the op accepts with --input NAME=FILE.npy (with --op " +
                        op_name(op_) + "), or give them in the pack's " + kSamplesFileName);
      } else {
        report_.not_run(label_ + ": not run: infer rejected " +
                        (spec_.source.empty() ? "the given inputs" : "the sample's inputs") + " (" + why +
                        ")");
      }
    } else if (ran > 0 && report_.count() == 0) {
      // The label names the sample when the spec came from the samples file.
      std::string runs = !spec_.inputs.empty() ? (spec_.source.empty() ? "the given inputs" : "the sample's inputs")
                         : std::to_string(ran) + " runs, " + join(dtypes_run, ", ") +
                               (spec_.source.empty() ? "" : ", the sample's attributes");
      if (!spec_.outputs.empty()) runs += ", outputs equal the expected ones";
      report_.ok(label_ + ": run check (" + runs +
                 (inplace_runs ? ", " + std::to_string(inplace_runs) + " in place" : "") +
                 "): infer agrees with compute, every output element written, no writes outside the buffers, "
                 "inputs untouched" + (inplace_runs ? ", MAY_INPLACE holds" : ""));
    }
  }

  bool mutates(size_t input) const {
    for (size_t a = 0; a < op_->num_aliases; ++a) {
      const oph_alias_def* al = op_->aliases[a];
      if (al->kind == OPH_ALIAS_MUTATES_INPUT && static_cast<size_t>(al->input_index) == input) return true;
    }
    return false;
  }

  // One finding per kind of problem (`key`; by default the start of `what`), on the first sample that shows it.
  void find(const std::string& probe, std::string what, std::string fix, std::string key = "") {
    if (quiet_) return;
    if (key.empty()) key = what.substr(0, 60);
    if (!reported_.insert(key).second) return;
    report_.finding(label_ + " (" + probe + ")", std::move(what), std::move(fix));
  }

  std::string output_name(size_t o) const { return "output " + std::to_string(o) + " ('" + out_formal_[o]->name + "')"; }
  std::string input_name(size_t i) const { return "input " + std::to_string(i) + " ('" + in_formal_[i]->name + "')"; }

  // Infer on `inputs`: the output buffers (poisoned), or the outcome that stops the run.
  RunResult infer(const std::vector<Buffer>& inputs, const std::string& probe, std::vector<oph_value_info>& in_infos,
                  std::vector<oph_value_info>& out_infos, int variant) {
    RunResult r;
    in_infos.assign(inputs.size(), oph_value_info{});
    out_infos.assign(out_formal_.size(), oph_value_info{});
    for (size_t i = 0; i < inputs.size(); ++i) {
      oph_value_info& v = in_infos[i];
      v.struct_size = OPH_VALUE_INFO_STRUCT_SIZE;
      v.present = true;
      v.dtype = inputs[i].dtype;
      v.ndim = static_cast<int32_t>(inputs[i].shape.size());
      std::copy(inputs[i].shape.begin(), inputs[i].shape.end(), v.shape);
    }
    for (auto& v : out_infos) {
      v.struct_size = OPH_VALUE_INFO_STRUCT_SIZE;
      v.present = true;
      v.ndim = -2;  // infer must set it
    }
    oph_infer_context ic{};
    std::vector<oph_value_info*> in_ptrs = pointers_to(in_infos), out_ptrs = pointers_to(out_infos);
    std::vector<oph_attr_value*> attr_ptrs = pointers_to(attrs_);
    ic.struct_size = OPH_INFER_CONTEXT_STRUCT_SIZE;
    ic.services = check_services();
    ic.op = op_;
    ic.num_inputs = in_infos.size();
    ic.inputs = in_ptrs.data();
    ic.num_outputs = out_infos.size();
    ic.outputs = out_ptrs.data();
    ic.num_attrs = attrs_.size();
    ic.attrs = attr_ptrs.data();
    ic.node_name = "pack_check";
    if (std::string err = status_error(op_->infer(&ic)); !err.empty()) {
      r.outcome = RunResult::Outcome::kInferRejected;
      r.infer_error = err;
      return r;
    }
    r.outputs.resize(out_infos.size());
    r.filled.assign(out_infos.size(), false);
    for (size_t o = 0; o < out_infos.size(); ++o) {
      const oph_value_info& v = out_infos[o];
      const oph_io_def* io = out_formal_[o];
      if (v.ndim == -2 || !known_dtype(v.dtype)) {
        find(probe, "infer did not set " + output_name(o) + ": " +
                        (v.ndim == -2 ? "ndim left unset" : "dtype " + dtype_str(v.dtype) + " is not a valid dtype"),
             "set the dtype and shape of every output in infer (C++: ctx.set_output(i, dtype, shape), or "
             ".infer(oph::same_as_input(0)))");
        r.outcome = RunResult::Outcome::kInferInvalid;
        return r;
      }
      if (v.ndim > OPH_MAX_NDIM || v.ndim < -1) {
        find(probe, "infer returned rank " + std::to_string(v.ndim) + " for output " + std::to_string(o),
             "use a rank in [0, OPH_MAX_NDIM], or -1 for an unknown rank");
        r.outcome = RunResult::Outcome::kInferInvalid;
        return r;
      }
      if (const auto* tc = tc_for(op_, io->type_var)) {
        bool allowed = false;
        for (size_t k = 0; k < tc->num_allowed; ++k) allowed = allowed || same_dtype(tc->allowed[k], v.dtype);
        if (!allowed) {
          find(probe, "infer gave " + output_name(o) + " dtype " + dtype_str(v.dtype) + ", which its type variable '" +
                          io->type_var + "' does not allow",
               "add " + dtype_str(v.dtype) + " to the constraint of '" + std::string(io->type_var) +
                   "' or give the output another type variable",
               "infer dtype " + std::to_string(o));
        }
      }
      Buffer& b = r.outputs[o];
      b.dtype = v.dtype;
      bool known = v.ndim >= 0;
      for (int32_t d = 0; d < v.ndim; ++d) {
        known = known && v.shape[d] >= 0;
        b.shape.push_back(v.shape[d]);
      }
      if (known) {
        b.allocate();
        poison(b, variant);
        r.filled[o] = true;
      }
    }
    return r;
  }

  // infer + create_kernel + compute on `inputs`, outputs poisoned with `variant`. When `inplace` is set
  // ({input, output}), the output buffer is the input's buffer (already holding the input values) and only the
  // status and the guards are checked. With `report` false nothing is reported (a confirming re-run).
  RunResult run_once(std::vector<Buffer>& inputs, const std::string& probe,
                     std::optional<std::pair<size_t, size_t>> inplace, int variant, bool report) {
    quiet_ = !report;
    stage_(probe, "infer");
    std::vector<oph_value_info> in_infos, out_infos;
    RunResult r = infer(inputs, probe, in_infos, out_infos, variant);
    if (r.outcome != RunResult::Outcome::kRan) return r;
    std::vector<std::vector<int64_t>> inferred(r.outputs.size());
    for (size_t o = 0; o < r.outputs.size(); ++o) inferred[o] = r.outputs[o].shape;

    void* state = nullptr;
    if (op_->create_kernel) {
      stage_(probe, "create_kernel");
      oph_kernel_create_args ka{};
      std::vector<oph_value_info*> in_info_ptrs = pointers_to(in_infos), out_info_ptrs = pointers_to(out_infos);
      std::vector<oph_attr_value*> attr_ptrs = pointers_to(attrs_);
      ka.struct_size = OPH_KERNEL_CREATE_ARGS_STRUCT_SIZE;
      ka.services = check_services();
      ka.op = op_;
      ka.num_inputs = in_infos.size();
      ka.inputs = in_info_ptrs.data();
      ka.num_outputs = out_infos.size();
      ka.outputs = out_info_ptrs.data();
      ka.num_attrs = attrs_.size();
      ka.attrs = attr_ptrs.data();
      ka.node_name = "pack_check";
      ka.device = {OPH_DL_CPU, 0};
      if (std::string e = status_error(op_->create_kernel(&ka, &state)); !e.empty()) {
        find(probe, "create_kernel failed after infer accepted the inputs: " + e,
             "reject these inputs in infer (with a message), or accept them in create_kernel", "create_kernel failed");
        r.outcome = RunResult::Outcome::kKernelFailed;
        return r;
      }
    }

    std::vector<Bytes> before(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) before[i] = inputs[i].storage;
    std::vector<const oph_tensor*> in_ptrs(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) in_ptrs[i] = &inputs[i].view;
    std::vector<oph_tensor> out_views(r.outputs.size());
    std::vector<oph_tensor*> out_ptrs(r.outputs.size());
    for (size_t o = 0; o < r.outputs.size(); ++o) {
      if (r.filled[o]) {
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
      r.outputs[o].storage = inputs[i].storage;  // the shared buffer starts as the input
      r.outputs[o].rebind();
      out_views[o] = r.outputs[o].view;
      inputs[i].view.data = r.outputs[o].data();
    }
    std::vector<bool> allocated(r.outputs.size(), false);
    ComputeState cs{&r.outputs, &out_ptrs, &allocated, variant};
    oph_compute_context cc{};
    cc.struct_size = OPH_COMPUTE_CONTEXT_STRUCT_SIZE;
    cc.services = check_services();
    cc.num_inputs = in_ptrs.size();
    cc.inputs = in_ptrs.data();
    cc.num_outputs = out_ptrs.size();
    cc.outputs = out_ptrs.data();
    cc.stream = nullptr;
    cc.device = {OPH_DL_CPU, 0};
    cc.allocate_output = &check_allocate_output;
    cc.host_data = &cs;
    stage_(probe, inplace ? "compute, output " + std::to_string(inplace->second) + " in input " +
                                std::to_string(inplace->first) + "'s buffer (MAY_INPLACE)"
                          : "compute");
    std::string e = status_error(op_->compute(state, &cc));
    if (op_->destroy_kernel && state) {
      stage_(probe, "destroy_kernel");
      op_->destroy_kernel(state);
    }
    for (size_t o = 0; o < r.outputs.size(); ++o) r.filled[o] = r.filled[o] || allocated[o];
    if (inplace) {
      inputs[inplace->first].rebind();
      check_guards(probe, r.outputs[inplace->second], output_name(inplace->second));
      if (!e.empty()) {
        find(probe, "compute failed when output " + std::to_string(inplace->second) + " shares input " +
                        std::to_string(inplace->first) + "'s buffer (MAY_INPLACE): " + e,
             "remove the MAY_INPLACE alias, or support in-place operation in compute");
        r.outcome = RunResult::Outcome::kComputeFailed;
      }
      return r;
    }
    if (!e.empty()) {
      r.compute_error = e;
      find(probe, "compute failed: " + e + " (infer had accepted these inputs)",
           "reject these inputs in infer with the same message (the host then reports it before running), or "
           "handle them in compute",
           "compute failed");
      r.outcome = RunResult::Outcome::kComputeFailed;
      return r;
    }
    check_inputs(probe, inputs, before);
    check_outputs(probe, r, inferred, allocated, out_infos);
    return r;
  }

  // The sample's expected outputs (RunSpec::outputs) against this run's (pack_check_values.cpp).
  void compare_expected(const std::string& probe, const RunResult& r) {
    for (const auto& [o, want] : spec_.outputs) {
      if (o >= r.outputs.size() || !r.filled[o]) continue;
      const Buffer& got = r.outputs[o];
      if (std::string what = expected_mismatch(output_name(o), got.dtype, got.shape, got.data(), want, spec_);
          !what.empty()) {
        find(probe, std::move(what),
             "make compute give the pack's reference, or correct the expected output in the samples file where the "
             "reference is wrong (a sample's \"atol\" / \"rtol\" only where the difference is rounding)",
             "expected " + std::to_string(o));
      }
    }
  }

  // Inputs the NaN/Inf probe can take: float32 / float64 with an element, in device memory (not shape-like).
  bool probeable(size_t i, const Buffer& b) const {
    return b.dtype.lanes == 1 && b.dtype.code == OPH_DTYPE_FLOAT && (b.dtype.bits == 32 || b.dtype.bits == 64) &&
           numel(b.shape) > 0 && in_formal_[i]->memory != OPH_MEMORY_HOST;
  }

  static bool all_finite(const std::vector<Buffer>& inputs) {
    return std::none_of(inputs.begin(), inputs.end(), [](const Buffer& b) {
      return has_nonfinite(b.dtype, b.data(), numel(b.shape));
    });
  }

  // The NaN/Inf probe: the first inputs that ran (all finite) again with NaN, +inf and -inf in turn at element 0
  // of each float input; a note says what each did to the outputs (compared with `base`, the run without them).
  // Informational: NaN semantics are the pack's to choose, and a sample's expected outputs are what holds it to
  // them. Writes outside the buffers and crashes are still found.
  void nan_probe(const std::vector<Buffer>& inputs, const RunResult& base) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!probeable(i, inputs[i])) continue;
      const std::string at = input_name(i) + " " + index_str(inputs[i].shape, 0);
      std::vector<std::string> effects;
      for (int which = 0; which < 3; ++which) {
        std::vector<Buffer> probe_inputs = inputs;
        set_special(inputs[i].dtype, probe_inputs[i].data(), 0, which);
        const std::string probe = describe_sample(inputs) + ", " + kSpecialNames[which] + " at " + at;
        RunResult r = run_once(probe_inputs, probe, std::nullopt, 0, false);
        quiet_ = false;
        effects.push_back(std::string(kSpecialNames[which]) + " -> " + probe_effect(r, base, inputs[i].shape));
        if (r.outcome != RunResult::Outcome::kRan) continue;
        for (size_t k = 0; k < probe_inputs.size(); ++k) check_guards(probe, probe_inputs[k], input_name(k));
        for (size_t o = 0; o < r.outputs.size(); ++o)
          if (r.filled[o]) check_guards(probe, r.outputs[o], output_name(o));
      }
      report_.note(label_ + ": NaN/Inf probe at " + at + ": " + join(effects, "; "));
    }
  }

  // "Y[0] nan", "compute failed: <message>", "no output changed". An output of the probed input's shape shows its
  // element 0 (the probed one) also when it did not change.
  std::string probe_effect(const RunResult& r, const RunResult& base, const std::vector<int64_t>& probed) const {
    if (r.outcome == RunResult::Outcome::kComputeFailed) return "compute failed: " + r.compute_error;
    if (r.outcome != RunResult::Outcome::kRan) return "not run";
    std::vector<std::string> changes;
    for (size_t o = 0; o < r.outputs.size() && o < base.outputs.size(); ++o) {
      const Buffer &now = r.outputs[o], &was = base.outputs[o];
      if (!r.filled[o] || !base.filled[o]) continue;
      if (!same_dtype(now.dtype, was.dtype) || now.shape != was.shape) {
        changes.push_back(std::string(out_formal_[o]->name) + " is " + dtype_str(now.dtype) + " " +
                          shape_str(now.shape) + " (was " + dtype_str(was.dtype) + " " + shape_str(was.shape) + ")");
        continue;
      }
      std::string c = describe_changes(out_formal_[o]->name, now.dtype, now.shape, was.data(), now.data(),
                                       now.shape == probed ? std::optional<size_t>(0) : std::nullopt);
      if (!c.empty()) changes.push_back(std::move(c));
    }
    return changes.empty() ? "no output changed" : join(changes, ", ");
  }

  void check_guards(const std::string& probe, const Buffer& b, const std::string& name) {
    for (auto& [what, key] : guard_damage(b, name)) {
      find(probe, std::move(what),
           "write only the elements of the shape infer gave (for an output), or make infer give the shape compute "
           "writes; never write into or past an input",
           key);
    }
  }

  void check_inputs(const std::string& probe, const std::vector<Buffer>& inputs, const std::vector<Bytes>& before) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      check_guards(probe, inputs[i], input_name(i));
      if (mutates(i)) continue;
      const size_t payload = inputs[i].payload();
      const uint8_t* now = inputs[i].data();
      const uint8_t* was = before[i].data() + kGuard;
      if (std::memcmp(now, was, payload) == 0) continue;
      size_t k = 0;
      while (k < payload && now[k] == was[k]) ++k;
      size_t es = std::max<size_t>(1, elem_bytes(inputs[i].dtype));
      find(probe, "compute modified " + input_name(i) + ", which is declared read-only (first changed element: " +
                      std::to_string(k / es) + ", byte " + std::to_string(k) + ")",
           "write only to outputs, or declare the input MUTATES_INPUT (C++: .alias(" + std::to_string(i) +
               ", <output>, OPH_ALIAS_MUTATES_INPUT)) so the planner gives the op its own copy");
    }
  }

  void check_outputs(const std::string& probe, const RunResult& r, const std::vector<std::vector<int64_t>>& inferred,
                     const std::vector<bool>& allocated, const std::vector<oph_value_info>& out_infos) {
    for (size_t o = 0; o < r.outputs.size(); ++o) {
      const Buffer& b = r.outputs[o];
      const std::string oname = output_name(o);
      bool known = out_infos[o].ndim >= 0 &&
                   std::all_of(inferred[o].begin(), inferred[o].end(), [](int64_t d) { return d >= 0; });
      if (!known) {
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
      if (r.filled[o]) check_guards(probe, b, oname);
    }
  }

  // Output elements still poisoned after compute, confirmed by a second run with the other pattern (so a
  // computed value that happens to equal the pattern is not reported).
  void check_unwritten(std::vector<Buffer>& inputs, const std::string& probe, const RunResult& r) {
    std::vector<std::vector<size_t>> suspect(r.outputs.size());
    bool any = false;
    for (size_t o = 0; o < r.outputs.size(); ++o) {
      if (r.filled[o]) suspect[o] = poisoned_elements(r.outputs[o], 0);
      any = any || !suspect[o].empty();
    }
    if (!any) return;
    std::vector<Buffer> again = inputs;
    RunResult r2 = run_once(again, probe, std::nullopt, 1, false);
    quiet_ = false;
    if (r2.outcome != RunResult::Outcome::kRan) return;
    for (size_t o = 0; o < r.outputs.size() && o < r2.outputs.size(); ++o) {
      if (suspect[o].empty() || !r2.filled[o] || r2.outputs[o].shape != r.outputs[o].shape) continue;
      std::vector<size_t> second = poisoned_elements(r2.outputs[o], 1);
      std::vector<size_t> never;
      std::set_intersection(suspect[o].begin(), suspect[o].end(), second.begin(), second.end(),
                            std::back_inserter(never));
      if (never.empty()) continue;
      find(probe, "output " + std::to_string(o) + " '" + out_formal_[o]->name + "': " + std::to_string(never.size()) +
                      " of " + std::to_string(numel(r.outputs[o].shape)) + " elements never written (first at index " +
                      std::to_string(never.front()) + "; infer gave " + dtype_str(r.outputs[o].dtype) + " " +
                      shape_str(r.outputs[o].shape) + ")",
           "write every element of the shape infer gives, or make infer give the shape compute writes (the host "
           "would pass the unwritten elements on as whatever its arena held)",
           "unwritten " + std::to_string(o));
    }
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
           "equal to the input's",
           "inplace size " + std::to_string(i) + " " + std::to_string(o));
      return false;
    }
    std::vector<Buffer> again = inputs;
    RunResult r = run_once(again, probe, std::make_pair(i, o), 0, true);
    if (r.outcome != RunResult::Outcome::kRan) return false;
    const Buffer& got = r.outputs[o];
    size_t payload = out.payload();
    if (std::memcmp(got.data(), out.data(), payload) != 0) {
      size_t k = 0;
      while (k < payload && got.data()[k] == out.data()[k]) ++k;
      size_t e = elem_bytes(out.dtype) ? k / elem_bytes(out.dtype) : k;
      std::string vals;
      if (out.dtype.code == OPH_DTYPE_FLOAT && out.dtype.bits == 32) {
        float in_place = 0, out_of_place = 0;
        std::memcpy(&in_place, got.data() + 4 * e, 4);
        std::memcpy(&out_of_place, out.data() + 4 * e, 4);
        vals = " (" + std::to_string(in_place) + " in place vs " + std::to_string(out_of_place) + " out of place)";
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
  const RunSpec& spec_;
  std::mt19937 rng_;
  StageFn stage_;
  std::vector<const oph_io_def*> in_formal_, out_formal_;
  std::vector<oph_attr_value> attrs_;
  std::set<std::string> reported_;
  bool quiet_ = false;
};

// ---- child <-> parent ------------------------------------------------------------------------------------------

// Records on the pipe: one kind byte, then three length-prefixed strings. Kinds: the report's entry kinds,
// 'S' (sample, stage: what the child is about to do) and 'D' (done).
constexpr char kStage = 'S';
constexpr char kDone = 'D';

void write_all(int fd, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) _exit(3);  // the parent is gone
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void send(int fd, char kind, const std::string& a = "", const std::string& b = "", const std::string& c = "") {
  std::string rec(1, kind);
  for (const std::string* s : {&a, &b, &c}) {
    uint32_t n = static_cast<uint32_t>(s->size());
    rec.append(reinterpret_cast<const char*>(&n), sizeof n);
    rec += *s;
  }
  write_all(fd, rec.data(), rec.size());
}

// Parses complete records from the front of `buf`; leaves an incomplete tail.
template <class F>
void parse_records(std::string& buf, F&& on_record) {
  size_t pos = 0;
  while (true) {
    size_t p = pos + 1;
    std::string fields[3];
    bool complete = p <= buf.size();
    for (int f = 0; f < 3 && complete; ++f) {
      uint32_t n = 0;
      if (p + sizeof n > buf.size()) { complete = false; break; }
      std::memcpy(&n, buf.data() + p, sizeof n);
      p += sizeof n;
      if (p + n > buf.size()) { complete = false; break; }
      fields[f] = buf.substr(p, n);
      p += n;
    }
    if (!complete) break;
    on_record(buf[pos], fields[0], fields[1], fields[2]);
    pos = p;
  }
  buf.erase(0, pos);
}

[[noreturn]] void child_main(int fd, const oph_op_def* op, const std::string& label, const RunSpec& spec) {
  // Fatal signals end the child with that signal, so the parent names it ("crashed (SIGSEGV)"), also where a
  // sanitizer runtime installed handlers that would print a report and exit with status 1 instead.
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) ::signal(sig, SIG_DFL);
  Report report;
  report.forward_to([fd](const Entry& e) { send(fd, static_cast<char>(e.kind), e.where, e.what, e.fix); });
  try {
    OpChecker(op, report, label, spec, [fd](const std::string& sample, const std::string& stage) {
      send(fd, kStage, sample, stage);
    }).run();
  } catch (const std::exception& e) {
    report.finding(label, std::string("the run check stopped: ") + e.what(),
                   "an exception escaped from the pack into the host: catch it in the pack and return a status");
  }
  send(fd, kDone);
  std::fflush(nullptr);  // what the pack printed
  _exit(0);  // no destructors or atexit handlers of the parent's state
}

std::string signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGABRT: return "SIGABRT";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    default: return "signal " + std::to_string(sig);
  }
}

// "30", "0.5"
std::string seconds(double s) {
  std::ostringstream out;
  out << s;
  return out.str();
}

struct ChildEnd {
  bool done = false;
  bool timed_out = false;
  int status = 0;
  std::string sample = "before the first sample", stage;
};

// Reads the child's records into `report` until it exits, or kills it after `timeout_s`.
ChildEnd follow_child(pid_t pid, int fd, double timeout_s, Report& report) {
  ChildEnd end;
  std::string buf;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      end.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd p{fd, POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    char chunk[4096];
    ssize_t got = ::read(fd, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // EOF: the child exited (or closed the pipe)
    buf.append(chunk, static_cast<size_t>(got));
    parse_records(buf, [&](char kind, std::string& a, std::string& b, std::string& c) {
      if (kind == kStage) {
        end.sample = std::move(a);
        end.stage = std::move(b);
      } else if (kind == kDone) {
        end.done = true;
      } else {
        report.add({static_cast<Entry::Kind>(kind), std::move(a), std::move(b), std::move(c)});
      }
    });
  }
  while (::waitpid(pid, &end.status, 0) < 0 && errno == EINTR) {
  }
  return end;
}

void report_child_end(const ChildEnd& end, const oph_op_def* op, const std::string& label, const RunSpec& spec,
                      Report& report) {
  const std::string on = " on sample " + end.sample + (end.stage.empty() ? "" : " (in " + end.stage + ")");
  if (end.timed_out) {
    report.finding(label, "op " + op_name(op) + " did not finish within " + seconds(spec.timeout_s) + " s" + on +
                              "; killed",
                   "make sure compute terminates for every input infer accepts (or pass a larger --timeout if it is "
                   "just slow on this sample)");
  } else if (WIFSIGNALED(end.status)) {
    report.finding(label, "op " + op_name(op) + " crashed (" + signal_name(WTERMSIG(end.status)) + ")" + on,
                   "run the op under a debugger or AddressSanitizer on this sample (ophost pack check --op " +
                       op_name(op) + " ...); a write outside a buffer or a bad pointer is the usual cause");
  } else if (!end.done) {
    report.finding(label, "op " + op_name(op) + " ended the process (exit status " +
                              std::to_string(WIFEXITED(end.status) ? WEXITSTATUS(end.status) : -1) + ")" + on,
                   "never call exit() or abort() in a pack: return an error status (C++: throw oph::Error)");
  }
}

}  // namespace

void run_check_isolated(const oph_op_def* op, const std::string& label, const RunSpec& spec, Report& report) {
  int fds[2];
  if (::pipe(fds) != 0) throw Error(Code::kInternal, std::string("pack check: pipe() failed: ") + std::strerror(errno));
  std::cout.flush();
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw Error(Code::kInternal, std::string("pack check: fork() failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[0]);
    child_main(fds[1], op, label, spec);
  }
  ::close(fds[1]);
  ChildEnd end = follow_child(pid, fds[0], spec.timeout_s, report);
  ::close(fds[0]);
  report_child_end(end, op, label, spec, report);
}

}  // namespace ophost::cli::pack
