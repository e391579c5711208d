// Pieces shared by the files of `ophost pack check`: the report, the run-check options of one op (--attr,
// --input), and small helpers over the op's schema (ophost/op_schema.hpp: each op definition is converted once,
// in pack_check.cpp). Private to the ophost command.
#pragma once

#include <ophost/op_schema.hpp>
#include <ophost/ophost_plugin.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ophost::cli::pack {

// One line of the report. ok / note / not-run use `what` only; a finding has all three.
struct Entry {
  enum class Kind : char { kOk = 'O', kNote = 'N', kNotRun = 'R', kFinding = 'F' };
  Kind kind = Kind::kNote;
  std::string where;  // "manifest", "symbols", "acme::swish [1+] on cpu (float32 [7])", ...
  std::string what;   // the problem (or the ok / note text)
  std::string fix;    // what to change
};

struct Finding {
  std::string where, what, fix;
};

// Prints each entry at once (stdout is line-buffered in pack check, so a piped report is complete up to a
// crash) and counts findings and ops that were not run. With a forward sink set (the run check's child), the
// entries go to the sink instead (the parent prints them).
class Report {
 public:
  void ok(std::string what) { add({Entry::Kind::kOk, "", std::move(what), ""}); }
  void note(std::string what) { add({Entry::Kind::kNote, "", std::move(what), ""}); }
  // An op that could not be run for lack of something the author can pass (--attr, --input): a note that
  // keeps the result from being "clean".
  void not_run(std::string what) { add({Entry::Kind::kNotRun, "", std::move(what), ""}); }
  void finding(std::string where, std::string what, std::string fix) {
    add({Entry::Kind::kFinding, std::move(where), std::move(what), std::move(fix)});
  }
  void finding(Finding f) { finding(std::move(f.where), std::move(f.what), std::move(f.fix)); }
  void add(Entry e);

  size_t count() const { return findings_; }
  size_t not_run_count() const { return not_run_; }
  void forward_to(std::function<void(const Entry&)> sink) { sink_ = std::move(sink); }

 private:
  size_t findings_ = 0;
  size_t not_run_ = 0;
  std::function<void(const Entry&)> sink_;
};

// A command-line mistake (--attr, --input, --op): `ophost pack check` prints it and exits 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An attribute value from --attr NAME=VALUE, typed by the op's attribute definition.
struct AttrArg {
  int32_t type = OPH_ATTR_UNDEFINED;
  float f = 0;
  int64_t i = 0;
  std::string s;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  // The C view; points into this object (valid while it lives and is not modified).
  oph_attr_value view() const;

 private:
  mutable std::vector<const char*> string_ptrs_;
};

// An input from --input NAME=FILE.npy or from the samples file; also an expected output of a sample.
struct SampleInput {
  std::string file;
  oph_dtype dtype{};
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;  // numel * element size, C order
  bool random = false;         // only dtype and shape given: random values (bytes empty)
};

// What the run check of one op runs with.
struct RunSpec {
  std::map<size_t, AttrArg> attrs;        // by index in the schema's attrs; overrides the default
  std::map<size_t, SampleInput> inputs;   // by actual input index (variadic formals expanded to min_arity)
  std::string source;                      // "sample 2 of ophost-samples.json"; empty: the command line
  // From the samples file only: the sample's expected outputs (its "outputs", by actual output index), with
  // every input given; the tolerances for float outputs (default: default_tolerance() of the output's dtype);
  // and what names the sample and its pack in a mismatch ("pack acme, samples[3] \"nan\" of FILE").
  std::map<size_t, SampleInput> outputs;
  std::optional<double> atol, rtol;
  std::string reference;
  uint32_t seed = 1;
  double timeout_s = 30;                   // per op; the child is killed after it
};

// The file a plugin folder may hold beside its manifest: attribute values and inputs for the run check of its
// ops (ophost_add_pack(... SAMPLES file) puts it there).
inline constexpr const char* kSamplesFileName = "ophost-samples.json";

// The run specs of a samples file, by op (a sample names "domain::name" and applies to every definition of that
// name).
// A problem in the file is a finding naming the file, the sample and the field; that sample (or, when the file
// is unreadable, the whole file) is left out.
std::map<const OpSchema*, std::vector<RunSpec>> read_samples_file(const std::string& file,
                                                                  const std::vector<OpSchema>& ops, Report& report);

// NAME=VALUE pairs of a repeatable option; throws UsageError naming `option` for an argument without '='.
std::vector<std::pair<std::string, std::string>> split_assignments(const std::vector<std::string>& args,
                                                                   const std::string& option);

// The run spec of `op` from --attr and --input pairs: attribute values typed by the op's definition, input
// files read and matched to the op's inputs by name or index. Throws UsageError naming the op and the
// attribute or input on any problem.
RunSpec make_run_spec(const OpSchema& op, const std::vector<std::pair<std::string, std::string>>& attrs,
                      const std::vector<std::pair<std::string, std::string>>& inputs);

// "an int (e.g. 3)", "a list of floats (e.g. 0.5,1,2)", ... for OPH_ATTR_*.
const char* attr_type_name(int32_t type);
// Index of the actual input named `name` (its declared name, or its index as text); throws UsageError starting
// with `where` that lists the op's inputs (`kind` "output": the same over the op's outputs).
size_t input_index(const OpSchema& op, const std::vector<const IoSchema*>& formals, const std::string& name,
                   const std::string& where, const std::string& kind = "input");
// Throws UsageError (`where`: `what` <dtype> but input ... allows ...) unless the input's type variable allows it.
void check_sample_dtype(const OpSchema& op, const IoSchema* formal, oph_dtype dtype, const std::string& what,
                        const std::string& where);
// A .npy file as the sample of input `formal`; throws UsageError starting with `where`.
SampleInput read_sample(const OpSchema& op, const IoSchema* formal, const std::string& file,
                        const std::string& where);

// ---- values: expected outputs and the NaN/Inf probe (pack_check_values.cpp) -----------------------------------

// |got - expected| <= atol + rtol * |expected| for float elements; other dtypes compare exactly.
struct Tolerance {
  double atol = 0, rtol = 0;
};
// float32: atol 1e-6, rtol 1e-5; float64: 1e-12, 1e-10; float16: 1e-3, 1e-3; others exact (0, 0).
Tolerance default_tolerance(oph_dtype d);
bool is_float(oph_dtype d);  // float16, float32, float64 (the dtypes the value checks read as numbers)
// "[1,2]" for flat index 5 of shape [2,3]; "[]" for a scalar.
std::string index_str(const std::vector<int64_t>& shape, size_t flat);
// Element `i` as text: "nan", "inf", "-inf", "0.25", "-3", "true".
std::string element_str(oph_dtype d, const uint8_t* data, size_t i);
// Whether a float tensor holds a NaN or an infinity (false for other dtypes).
bool has_nonfinite(oph_dtype d, const uint8_t* data, size_t n);
// Element `i` of a float32 / float64 tensor set to NaN (which 0), +inf (1) or -inf (2).
void set_special(oph_dtype d, uint8_t* data, size_t i, int which);
inline constexpr const char* kSpecialNames[] = {"NaN", "+inf", "-inf"};

// The elements where `got` and `want` (same dtype and element count) differ beyond `tol` (NaN matches only NaN,
// an infinity only the same infinity): their count and the first.
struct Mismatch {
  size_t count = 0;
  size_t first = 0;
};
Mismatch compare_elements(oph_dtype d, const uint8_t* got, const uint8_t* want, size_t n, Tolerance tol);
// "" when output `name` (dtype, shape, data) matches the sample's expected `want` within the tolerance of
// `spec` (its atol / rtol, else default_tolerance()); else the finding's text: the dtype and shape that differ,
// or the first element that does (its index, both values), how many do, the tolerance, and spec.reference.
std::string expected_mismatch(const std::string& name, oph_dtype dtype, const std::vector<int64_t>& shape,
                              const uint8_t* data, const SampleInput& want, const RunSpec& spec);
// What changed between two runs' values of one output (same dtype and shape), for the probe's note: element
// `focus` (the probed input's index, for an output of the input's shape) whether changed or not, then the
// elements that changed: "Y[0] nan", "Y[0] 6, Y[3] nan and 5 more"; empty when nothing is to be shown.
std::string describe_changes(const std::string& name, oph_dtype d, const std::vector<int64_t>& shape,
                             const uint8_t* before, const uint8_t* after, std::optional<size_t> focus);

// The run check of one CPU op (random inputs of a few shapes, or the --input sample), in a forked child so
// that a crash or a hang is a finding and the check goes on with the next op (pack_check_child.cpp).
void run_check_isolated(const OpSchema& op, const std::string& label, const RunSpec& spec, Report& report);
// What the run check is about to do: the sample and the stage ("infer", "create_kernel", "compute", ...).
using StageFn = std::function<void(const std::string& sample, const std::string& stage)>;
// The run check itself, in this process (pack_check_run.cpp): every sample through the op runner, findings
// into `report`, each stage announced to `stage` first.
void run_check(const OpSchema& op, const std::string& label, const RunSpec& spec, Report& report, StageFn stage);

// ---- helpers -----------------------------------------------------------------------------------------------

std::string join(const std::vector<std::string>& v, const std::string& sep);
std::string shape_str(const std::vector<int64_t>& s);
std::string dtype_str(oph_dtype d);
std::string op_name(const OpSchema& op);  // "domain::name"
bool same_dtype(oph_dtype a, oph_dtype b);
bool fillable(oph_dtype d);     // the run check can fill it with random values
size_t elem_bytes(oph_dtype d);
size_t numel(const std::vector<int64_t>& s);
// "output" when `formal` is one of the op's outputs, else "input".
const char* io_kind(const OpSchema& op, const IoSchema* formal);

}  // namespace ophost::cli::pack
