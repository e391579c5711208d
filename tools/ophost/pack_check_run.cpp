// `ophost pack check`: the run check of one CPU op (run_check; run_check_isolated runs it in a forked child,
// pack_check_child.cpp).
//
// The check runs each sample (random inputs of a few shapes, or the author's --input files) through the op
// runner (ophost/op_runner.hpp: infer, create_kernel, compute, destroy_kernel), with every input and output
// buffer between guard zones and every output poisoned before compute (pack_check_buffers.*). After compute it
// reports writes outside the buffers, output elements never written, inputs changed without MUTATES_INPUT, and
// MAY_INPLACE declarations that do not hold. A sample's expected outputs are compared with the op's, and the
// first finite inputs run again with NaN, +inf and -inf (the NaN/Inf probe, a note); the value helpers for both
// are in pack_check_values.cpp.
#include "pack_check_buffers.hpp"
#include "pack_check_internal.hpp"

#include <ophost/op_runner.hpp>

#include <algorithm>
#include <cstring>
#include <optional>
#include <random>
#include <set>

namespace ophost::cli::pack {

namespace {

constexpr size_t kMaxFindingsPerOp = 6;  // enough to act on
constexpr oph_device kCpu = {OPH_DL_CPU, 0};

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

class OpChecker {
 public:
  OpChecker(const OpSchema& op, Report& report, std::string label, const RunSpec& spec, StageFn stage)
      : op_(op), report_(report), label_(std::move(label)), spec_(spec), rng_(spec.seed), stage_(std::move(stage)),
        in_formal_(op.actual_inputs()), out_formal_(op.actual_outputs()) {}

  void run() {
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
      for (const AliasSchema& al : op_.aliases)
        if (al.kind == OPH_ALIAS_MAY_INPLACE && check_inplace(al, inputs, r, probe)) ++inplace_runs;
      if (!probe_base && all_finite(inputs)) probe_base.emplace(inputs, std::move(r));
    }
    if (probe_base && report_.count() < kMaxFindingsPerOp) nan_probe(probe_base->first, probe_base->second);
    summarize(ran, inplace_runs, compute_failed, rejected, dtypes_run);
  }

 private:
  // The op runner with the --attr values (the rest take their defaults); false (with a not-run note) when a
  // required attribute has no value.
  bool resolve_attributes() {
    std::vector<std::string> missing;
    std::vector<NamedAttr> given;
    for (size_t i = 0; i < op_.attrs.size(); ++i) {
      if (auto it = spec_.attrs.find(i); it != spec_.attrs.end()) {
        given.push_back({op_.attrs[i].name, it->second.view()});
      } else if (op_.attrs[i].required) {
        missing.push_back(op_.attrs[i].name);
      }
    }
    if (missing.empty()) {
      runner_.emplace(op_, given, OpRunner::Options{check_services(), "pack_check"});
      return true;
    }
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
      const IoSchema* io = in_formal_[i];
      if (spec_.inputs.count(i)) continue;
      if (io->host_memory) {
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
    for (const TypeVarSchema& tv : op_.type_vars) {
      for (oph_dtype d : tv.allowed)
        if (fillable(d)) { base[tv.name] = d; break; }
    }
    if (!in_formal_.empty()) {
      for (size_t k = 0; k < in_formal_[0]->allowed.size() && assignments.size() < 4; ++k) {
        if (!fillable(in_formal_[0]->allowed[k])) continue;
        auto a = base;
        a[in_formal_[0]->type_var] = in_formal_[0]->allowed[k];
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

  bool mutates(size_t input) const { return op_.declares(OPH_ALIAS_MUTATES_INPUT, input); }

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
    in_infos.clear();
    for (const Buffer& b : inputs) in_infos.push_back(value_info(b.dtype, b.shape));
    InferResult inferred = runner_->try_infer(in_infos);
    if (inferred.rejected()) {
      r.outcome = RunResult::Outcome::kInferRejected;
      r.infer_error = inferred.status.message;
      return r;
    }
    out_infos = std::move(inferred.outputs);
    r.outputs.resize(out_infos.size());
    r.filled.assign(out_infos.size(), false);
    for (size_t o = 0; o < out_infos.size(); ++o) {
      const oph_value_info& v = out_infos[o];
      const IoSchema* io = out_formal_[o];
      switch (inferred.checks[o]) {
        case InferredOutput::kNotSet:
        case InferredOutput::kInvalidDtype:
          find(probe, "infer did not set " + output_name(o) + ": " +
                          (v.ndim == -2 ? "ndim left unset" : "dtype " + dtype_str(v.dtype) + " is not a valid dtype"),
               "set the dtype and shape of every output in infer (C++: ctx.set_output(i, dtype, shape), or "
               ".infer(oph::same_as_input(0)))");
          r.outcome = RunResult::Outcome::kInferInvalid;
          return r;
        case InferredOutput::kInvalidRank:
          find(probe, "infer returned rank " + std::to_string(v.ndim) + " for output " + std::to_string(o),
               "use a rank in [0, OPH_MAX_NDIM], or -1 for an unknown rank");
          r.outcome = RunResult::Outcome::kInferInvalid;
          return r;
        case InferredOutput::kDtypeNotAllowed:
          find(probe, "infer gave " + output_name(o) + " dtype " + dtype_str(v.dtype) + ", which its type variable '" +
                          io->type_var + "' does not allow",
               "add " + dtype_str(v.dtype) + " to the constraint of '" + io->type_var +
                   "' or give the output another type variable",
               "infer dtype " + std::to_string(o));
          break;
        case InferredOutput::kOk: break;
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

    OpKernel kernel;
    if (op_.calls.create_kernel) stage_(probe, "create_kernel");
    if (CallStatus s = runner_->try_create_kernel(in_infos, out_infos, kCpu, kernel); !s.ok()) {
      find(probe, "create_kernel failed after infer accepted the inputs: " + s.message,
           "reject these inputs in infer (with a message), or accept them in create_kernel", "create_kernel failed");
      r.outcome = RunResult::Outcome::kKernelFailed;
      return r;
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
    ComputeArgs args;
    args.inputs = in_ptrs;
    args.outputs = out_ptrs;
    args.allocate_output = &check_allocate_output;
    args.host_data = &cs;
    stage_(probe, inplace ? "compute, output " + std::to_string(inplace->second) + " in input " +
                                std::to_string(inplace->first) + "'s buffer (MAY_INPLACE)"
                          : "compute");
    const CallStatus computed = kernel.try_compute(args);
    if (kernel.state() && op_.calls.destroy_kernel) stage_(probe, "destroy_kernel");
    kernel.reset();
    const std::string e = computed.message;
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
           numel(b.shape) > 0 && !in_formal_[i]->host_memory;
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
  bool check_inplace(const AliasSchema& al, std::vector<Buffer>& inputs, const RunResult& ref,
                     const std::string& probe) {
    size_t i = al.input, o = al.output;
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

  const OpSchema& op_;
  Report& report_;
  std::string label_;
  const RunSpec& spec_;
  std::mt19937 rng_;
  StageFn stage_;
  std::vector<const IoSchema*> in_formal_, out_formal_;
  std::optional<OpRunner> runner_;  // made once the attributes resolve
  std::set<std::string> reported_;
  bool quiet_ = false;
};

}  // namespace

void run_check(const OpSchema& op, const std::string& label, const RunSpec& spec, Report& report, StageFn stage) {
  OpChecker(op, report, label, spec, std::move(stage)).run();
}

}  // namespace ophost::cli::pack
