// `ophost pack check`: the pack's samples file (ophost-samples.json beside the manifest, or --samples FILE),
// which gives the run check what it cannot make up: values of required attributes, host-memory (shape-like)
// inputs, shapes an op accepts, and the pack's reference: expected outputs. Format (docs/writing-a-pack.md,
// "Samples for pack check"):
//
//   {"samples": [
//     {"op": "tut::repeat_rows", "attrs": {"times": 3}},                       // generic inputs, these attributes
//     {"op": "tut::pad_rows",
//      "inputs": {"x": {"dtype": "float32", "shape": [2, 3]},                 // random values
//                 "rows": {"dtype": "int64", "shape": [], "values": [4]},     // these values (flat, C order)
//                 "0": {"npy": "x.npy"}}},                                    // a .npy, relative to the file
//     {"op": "acme::relu", "name": "NaN stays NaN",                           // named in the report
//      "inputs": {"x": {"shape": [3], "values": [1, "nan", "-inf"]}},         // "nan", "inf", "-inf" for floats
//      "outputs": {"y": {"shape": [3], "values": [1, "nan", 0]}},             // expected (every input given)
//      "atol": 1e-6, "rtol": 1e-5}]}                                          // for float outputs (optional)
//
// Each sample is one run spec (as --attr / --input on the command line); an op with samples runs each of them
// instead of the generic probes' defaults, and compares its outputs with the expected ones (pack_check_run.cpp).
#include "pack_check_internal.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <set>

namespace ophost::cli::pack {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Keys allowed in `j` (an object); throws naming the first other one.
void only_keys(const json& j, std::initializer_list<const char*> allowed, const std::string& where) {
  for (const auto& [key, value] : j.items()) {
    bool ok = false;
    for (const char* a : allowed) ok = ok || key == a;
    if (!ok) {
      std::vector<std::string> names(allowed.begin(), allowed.end());
      throw UsageError(where + ": unknown key '" + key + "' (allowed: " + join(names, ", ") + ")");
    }
  }
}

AttrArg attr_from_json(const OpSchema& op, const AttrSchema& def, const json& v, const std::string& where) {
  AttrArg a;
  a.type = def.type;
  const std::string expected = "attribute '" + def.name + "' of " + op_name(op) + " is " + attr_type_name(def.type);
  auto bad = [&] { return UsageError(where + ": " + expected + ", not " + v.dump()); };
  auto is_int = [](const json& x) { return x.is_number_integer(); };
  switch (def.type) {
    case OPH_ATTR_INT:
      if (!is_int(v)) throw bad();
      a.i = v.get<int64_t>();
      break;
    case OPH_ATTR_FLOAT:
      if (!v.is_number()) throw bad();
      a.f = v.get<float>();
      break;
    case OPH_ATTR_STRING:
      if (!v.is_string()) throw bad();
      a.s = v.get<std::string>();
      break;
    case OPH_ATTR_INTS:
      if (!v.is_array() || !std::all_of(v.begin(), v.end(), is_int)) throw bad();
      for (const auto& x : v) a.ints.push_back(x.get<int64_t>());
      break;
    case OPH_ATTR_FLOATS:
      if (!v.is_array() || !std::all_of(v.begin(), v.end(), [](const json& x) { return x.is_number(); })) throw bad();
      for (const auto& x : v) a.floats.push_back(x.get<float>());
      break;
    case OPH_ATTR_STRINGS:
      if (!v.is_array() || !std::all_of(v.begin(), v.end(), [](const json& x) { return x.is_string(); })) throw bad();
      for (const auto& x : v) a.strings.push_back(x.get<std::string>());
      break;
    default:
      throw UsageError(where + ": " + expected + "; samples take int, float, string, ints, floats and strings "
                       "attributes, not this one");
  }
  return a;
}

// The dtype named `name` among those the input's type variable allows (its first fillable one when empty).
oph_dtype sample_dtype(const OpSchema& op, const IoSchema* formal, const std::string& name,
                       const std::string& where) {
  std::vector<std::string> allowed;
  for (oph_dtype d : formal->allowed) {
    if (name.empty() ? fillable(d) : dtype_str(d) == name) return d;
    allowed.push_back(dtype_str(d));
  }
  throw UsageError(where + ": " + (name.empty() ? "give \"dtype\"" : "dtype '" + name + "' is not allowed") +
                   " (" + io_kind(op, formal) + " '" + formal->name + "' of " + op_name(op) + " allows " +
                   (allowed.empty() ? std::string("none") : join(allowed, ", ")) + ")");
}

// `values` (flat, C order) as the bytes of `dtype`; throws when one does not fit.
std::vector<uint8_t> encode_values(const json& values, oph_dtype dtype, const std::string& where) {
  std::vector<uint8_t> bytes(values.size() * elem_bytes(dtype));
  uint8_t* p = bytes.data();
  const size_t size = elem_bytes(dtype);
  for (size_t i = 0; i < values.size(); ++i) {
    const json& v = values[i];
    auto bad = [&](const std::string& why) {
      return UsageError(where + ": values[" + std::to_string(i) + "] = " + v.dump() + " " + why);
    };
    if (dtype.code == OPH_DTYPE_FLOAT) {
      double d = 0;
      if (v.is_string()) {
        const std::string text = v.get<std::string>();
        if (text == "nan") d = std::numeric_limits<double>::quiet_NaN();
        else if (text == "inf") d = std::numeric_limits<double>::infinity();
        else if (text == "-inf") d = -std::numeric_limits<double>::infinity();
        else throw bad("is not a number (JSON has no NaN or infinity: write \"nan\", \"inf\" or \"-inf\")");
      } else if (v.is_number()) {
        d = v.get<double>();
      } else {
        throw bad("is not a number");
      }
      if (dtype.bits == 32) {
        auto f = static_cast<float>(d);
        std::memcpy(p + i * size, &f, size);
      } else {
        std::memcpy(p + i * size, &d, size);
      }
    } else if (dtype.code == OPH_DTYPE_BOOL) {
      if (!v.is_boolean() && !(v.is_number_integer() && (v.get<int64_t>() == 0 || v.get<int64_t>() == 1)))
        throw bad("is not a bool (true, false, 0 or 1)");
      p[i] = v.is_boolean() ? v.get<bool>() : static_cast<uint8_t>(v.get<int64_t>());
    } else {
      if (v.is_string()) throw bad("is not an integer (\"nan\", \"inf\" and \"-inf\" are for float tensors)");
      if (!v.is_number_integer()) throw bad("is not an integer");
      const bool is_signed = dtype.code == OPH_DTYPE_INT;
      if (!is_signed && v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0)
        throw bad("is negative, for " + dtype_str(dtype));
      if (dtype.bits < 64) {
        int64_t x = v.get<int64_t>();
        int64_t lo = is_signed ? -(int64_t{1} << (dtype.bits - 1)) : 0;
        int64_t hi = is_signed ? (int64_t{1} << (dtype.bits - 1)) - 1 : (int64_t{1} << dtype.bits) - 1;
        if (x < lo || x > hi) throw bad("does not fit " + dtype_str(dtype));
      }
      uint64_t x = v.is_number_unsigned() ? v.get<uint64_t>() : static_cast<uint64_t>(v.get<int64_t>());
      std::memcpy(p + i * size, &x, size);  // little-endian truncation
    }
  }
  return bytes;
}

// An input, or (`expected`) an expected output, which needs its values.
SampleInput tensor_from_json(const OpSchema& op, const IoSchema* formal, const json& j, const fs::path& base,
                             const std::string& where, bool expected) {
  if (!j.is_object()) throw UsageError(where + ": expected an object ({\"npy\": FILE} or {\"dtype\", \"shape\"[, \"values\"]})");
  if (j.contains("npy")) {
    only_keys(j, {"npy"}, where);
    if (!j["npy"].is_string()) throw UsageError(where + ".npy: expected a file name");
    fs::path file = j["npy"].get<std::string>();
    if (file.is_relative()) file = base / file;
    return read_sample(op, formal, file.string(), where + ".npy");
  }
  only_keys(j, {"dtype", "shape", "values"}, where);
  SampleInput s;
  if (j.contains("dtype") && !j["dtype"].is_string()) throw UsageError(where + ".dtype: expected a name like \"float32\"");
  s.dtype = sample_dtype(op, formal, j.value("dtype", std::string()), where + ".dtype");
  if (!j.contains("shape") || !j["shape"].is_array() ||
      !std::all_of(j["shape"].begin(), j["shape"].end(), [](const json& d) { return d.is_number_unsigned(); })) {
    throw UsageError(where + ".shape: expected a list of dimensions >= 0 (e.g. [2, 3]; [] for a scalar)");
  }
  for (const auto& d : j["shape"]) s.shape.push_back(d.get<int64_t>());
  if (s.shape.size() > OPH_MAX_NDIM) throw UsageError(where + ".shape: rank above " + std::to_string(OPH_MAX_NDIM));
  if (!j.contains("values")) {
    if (expected) throw UsageError(where + ": an expected output needs its \"values\" (or {\"npy\": FILE})");
    if (!fillable(s.dtype)) {
      throw UsageError(where + ": pack check cannot make up random " + dtype_str(s.dtype) + " values; give \"values\"");
    }
    s.random = true;
    return s;
  }
  const json& values = j["values"];
  if (!values.is_array()) throw UsageError(where + ".values: expected a flat list (C order)");
  if (values.size() != numel(s.shape)) {
    throw UsageError(where + ".values: " + std::to_string(values.size()) + " values for shape " + shape_str(s.shape) +
                     ", which holds " + std::to_string(numel(s.shape)));
  }
  if (!fillable(s.dtype)) throw UsageError(where + ".values: " + dtype_str(s.dtype) + " values cannot be written in JSON; use \"npy\"");
  s.bytes = encode_values(values, s.dtype, where + ".values");
  return s;
}

// A tolerance: a number >= 0.
double tolerance_from_json(const json& v, const std::string& where) {
  if (!v.is_number() || !(v.get<double>() >= 0)) {
    throw UsageError(where + ": expected a number >= 0 (e.g. 1e-5), not " + v.dump());
  }
  return v.get<double>();
}

// The sample's "outputs" (expected values, by output name or index). They need every input given with its
// values: with random inputs nothing could be expected.
void expected_from_json(const OpSchema& op, const json& sample, const fs::path& base, const std::string& where,
                        RunSpec& spec) {
  const json& outputs = sample["outputs"];
  if (!outputs.is_object() || outputs.empty()) {
    throw UsageError(where + ".outputs: expected an object {\"NAME\": {\"dtype\", \"shape\", \"values\"} or "
                     "{\"npy\": FILE}, ...}");
  }
  std::vector<const IoSchema*> ins = op.actual_inputs(), outs = op.actual_outputs();
  for (size_t i = 0; i < ins.size(); ++i) {
    auto it = spec.inputs.find(i);
    if (it == spec.inputs.end() || it->second.random) {
      throw UsageError(where + ".outputs: expected outputs need every input given with its values, and input " +
                       std::to_string(i) + " '" + ins[i]->name + "' is " +
                       (it == spec.inputs.end() ? "not given" : "random (no \"values\")") +
                       "; give it in \"inputs\" with \"values\" or \"npy\"");
    }
  }
  for (const auto& [name, value] : outputs.items()) {
    const std::string at = where + ".outputs." + name;
    size_t o = input_index(op, outs, name, at, "output");
    spec.outputs[o] = tensor_from_json(op, outs[o], value, base, at, true);
  }
}

RunSpec spec_from_json(const OpSchema& op, const json& sample, const fs::path& base, const std::string& where) {
  RunSpec spec;
  for (const char* key : {"atol", "rtol"}) {
    if (!sample.contains(key)) continue;
    if (!sample.contains("outputs")) {
      throw UsageError(where + "." + key + ": a tolerance is for the sample's expected \"outputs\", and it has none");
    }
    (std::string(key) == "atol" ? spec.atol : spec.rtol) = tolerance_from_json(sample[key], where + "." + key);
  }
  if (sample.contains("attrs")) {
    const json& attrs = sample["attrs"];
    if (!attrs.is_object()) throw UsageError(where + ".attrs: expected an object {\"NAME\": VALUE, ...}");
    for (const auto& [name, value] : attrs.items()) {
      const std::optional<size_t> k = op.attr_index(name);
      if (!k) {
        std::vector<std::string> names;
        for (const AttrSchema& a : op.attrs) names.push_back(a.name);
        throw UsageError(where + ".attrs." + name + ": " + op_name(op) + " has no attribute '" + name + "' (" +
                         (names.empty() ? std::string("it has none") : "its attributes: " + join(names, ", ")) + ")");
      }
      spec.attrs[*k] = attr_from_json(op, op.attrs[*k], value, where + ".attrs." + name);
    }
  }
  if (sample.contains("inputs")) {
    const json& inputs = sample["inputs"];
    if (!inputs.is_object()) throw UsageError(where + ".inputs: expected an object {\"NAME\": {...}, ...}");
    std::vector<const IoSchema*> formals = op.actual_inputs();
    for (const auto& [name, value] : inputs.items()) {
      const std::string at = where + ".inputs." + name;
      size_t i = input_index(op, formals, name, at);
      spec.inputs[i] = tensor_from_json(op, formals[i], value, base, at, false);
    }
  }
  if (sample.contains("outputs")) expected_from_json(op, sample, base, where, spec);
  return spec;
}

}  // namespace

std::map<const OpSchema*, std::vector<RunSpec>> read_samples_file(const std::string& file,
                                                                  const std::vector<OpSchema>& ops, Report& report) {
  std::map<const OpSchema*, std::vector<RunSpec>> out;
  const std::string fix = "correct " + file + " (the format is in docs/writing-a-pack.md, \"Samples for pack check\")";
  json doc;
  {
    std::ifstream in(file);
    if (!in) {
      report.finding("samples", "cannot read " + file, fix);
      return out;
    }
    try {
      doc = json::parse(in);
    } catch (const json::exception& e) {
      report.finding("samples", file + " is not valid JSON: " + e.what(), fix);
      return out;
    }
  }
  if (!doc.is_object() || !doc.contains("samples") || !doc["samples"].is_array()) {
    report.finding("samples", file + ": expected an object {\"samples\": [{\"op\": \"DOMAIN::NAME\", ...}, ...]}", fix);
    return out;
  }
  try {
    only_keys(doc, {"samples"}, file);
  } catch (const UsageError& e) {
    report.finding("samples", e.what(), fix);
  }
  const fs::path base = fs::path(file).parent_path();
  std::set<std::string> names;
  for (const OpSchema& op : ops) names.insert(op_name(op));
  const json& samples = doc["samples"];
  size_t good = 0;
  std::map<std::string, size_t> per_op;  // sample number within its op
  for (size_t n = 0; n < samples.size(); ++n) {
    const json& sample = samples[n];
    const std::string where = file + ": samples[" + std::to_string(n) + "]";
    try {
      if (!sample.is_object()) {
        throw UsageError(where + ": expected an object {\"op\": ..., \"attrs\": ..., \"inputs\": ..., \"outputs\": ...}");
      }
      only_keys(sample, {"op", "name", "attrs", "inputs", "outputs", "atol", "rtol"}, where);
      if (!sample.contains("op") || !sample["op"].is_string())
        throw UsageError(where + ".op: expected the op's \"DOMAIN::NAME\"");
      if (sample.contains("name") && !sample["name"].is_string())
        throw UsageError(where + ".name: expected a string (what the report calls the sample)");
      const std::string label = sample.contains("name") ? " (\"" + sample["name"].get<std::string>() + "\")" : "";
      const std::string name = sample["op"].get<std::string>();
      if (!names.count(name)) {
        throw UsageError(where + ".op: the pack has no op '" + name + "' (its ops: " +
                         join(std::vector<std::string>(names.begin(), names.end()), ", ") + ")");
      }
      // Every definition of that name (several opset ranges or devices) gets the sample, typed by its own schema.
      std::vector<std::pair<const OpSchema*, RunSpec>> specs;
      for (const OpSchema& op : ops)
        if (op_name(op) == name) specs.emplace_back(&op, spec_from_json(op, sample, base, where));
      size_t k = ++per_op[name];
      for (auto& [op, spec] : specs) {
        spec.source = "sample " + std::to_string(k) + label + " of " + fs::path(file).filename().string();
        spec.reference = "samples[" + std::to_string(n) + "]" + label + " of " + file;
        out[op].push_back(std::move(spec));
      }
      ++good;
    } catch (const UsageError& e) {
      report.finding("samples", e.what(), "correct the sample (it was not run); the format is in "
                                          "docs/writing-a-pack.md, \"Samples for pack check\"");
    }
  }
  report.ok("samples " + file + ": " + std::to_string(good) + " of " + std::to_string(samples.size()) +
            " sample(s) read, for " + std::to_string(per_op.size()) + " op(s)");
  return out;
}

}  // namespace ophost::cli::pack
