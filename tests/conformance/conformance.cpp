// ophost_conformance: runs the ONNX backend node tests (onnx/backend/test/data/node, one folder per case with
// model.onnx and test_data_set_0/{input,output}_N.pb) through the embedding API and compares the outputs.
//
//   ophost_conformance CASES_DIR [--filter REGEX] [--exclusions FILE] [--floor N] [--list-failures]
//                                [--json FILE] [--opt-level N] [--compare-opt-levels A,B] [--verbose]
//
// Every case ends as passed, failed (with a one-line reason: op not found / load error / run error / mismatch)
// or skipped (non-tensor inputs or outputs such as sequences and optionals, or listed in the exclusions file
// with a reason). The last lines are a per-reason summary, "N cases in DIR, N run, N excluded" and "N passed,
// N failed, N skipped"; the exit status is 1 when --floor is given and fewer cases pass, 2 when CASES_DIR is
// missing or holds no case (or when the exclusions file is malformed).
//
// --opt-level N loads every model at graph optimisation level N (default: the library's default, 3).
// --compare-opt-levels A,B runs every case at level A and at level B and exits 1 unless both levels pass the
// same number of cases and no case that passes at A fails at B (each such case is listed).
#include <ophost/error.hpp>
#include <ophost/runtime.hpp>
#include <ophost/tensor.hpp>

#include "model/tensor_proto.hpp"

#include <onnx/onnx_pb.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using ophost::DType;
using ophost::Tensor;

namespace {

enum class Outcome { kPassed, kFailed, kSkipped };

struct Result {
  std::string name;
  Outcome outcome = Outcome::kPassed;
  std::string category;  // "op not found: X", "load error", "run error", "mismatch", "skipped: ..."
  std::string detail;    // one line
  double seconds = 0;
};

std::string one_line(std::string s, size_t max_len = 400) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  if (s.size() > max_len) s = s.substr(0, max_len) + "...";
  return s;
}

class Skip : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
class Mismatch : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

bool read_proto_file(const fs::path& p, google::protobuf::MessageLite& msg) {
  std::ifstream f(p, std::ios::binary);
  if (!f) return false;
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return msg.ParseFromString(bytes);
}

// Half -> float (IEEE binary16).
float half_to_float(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) bits = sign;
    else {  // subnormal
      int e = -1;
      do {
        ++e;
        man <<= 1;
      } while ((man & 0x400) == 0);
      bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (man & 0x3ff) << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | man << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | man << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
float bf16_to_float(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

bool is_float(DType d) {
  return d == DType::kFloat32 || d == DType::kFloat64 || d == DType::kFloat16 || d == DType::kBFloat16;
}

double float_at(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat32: return t.data_as<float>()[i];
    case DType::kFloat64: return t.data_as<double>()[i];
    case DType::kFloat16: return half_to_float(t.data_as<uint16_t>()[i]);
    case DType::kBFloat16: return bf16_to_float(t.data_as<uint16_t>()[i]);
    default: return 0;
  }
}

std::string int_str(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kUint8: return std::to_string(t.data_as<uint8_t>()[i]);
    case DType::kInt8: return std::to_string(t.data_as<int8_t>()[i]);
    case DType::kUint16: return std::to_string(t.data_as<uint16_t>()[i]);
    case DType::kInt16: return std::to_string(t.data_as<int16_t>()[i]);
    case DType::kInt32: return std::to_string(t.data_as<int32_t>()[i]);
    case DType::kInt64: return std::to_string(t.data_as<int64_t>()[i]);
    case DType::kUint32: return std::to_string(t.data_as<uint32_t>()[i]);
    case DType::kUint64: return std::to_string(t.data_as<uint64_t>()[i]);
    case DType::kBool: return t.data_as<uint8_t>()[i] ? "true" : "false";
    default: return "?";
  }
}

std::string fmt_double(double v) {
  std::ostringstream os;
  os.precision(9);
  os << v;
  return os.str();
}

// Throws Mismatch with a one-line reason when `got` differs from `expected`.
void compare(const std::string& what, const Tensor& got, const Tensor& expected) {
  if (got.dtype() != expected.dtype())
    throw Mismatch(what + ": dtype " + ophost::dtype_name(got.dtype()) + ", expected " +
                   ophost::dtype_name(expected.dtype()));
  if (!std::equal(got.shape().begin(), got.shape().end(), expected.shape().begin(), expected.shape().end()))
    throw Mismatch(what + ": shape " + ophost::shape_to_string(got.shape()) + ", expected " +
                   ophost::shape_to_string(expected.shape()));
  const int64_t n = expected.numel();
  if (expected.dtype() == DType::kString) {
    for (int64_t i = 0; i < n; ++i)
      if (got.strings()[i] != expected.strings()[i])
        throw Mismatch(what + ": mismatch at index " + std::to_string(i) + ": got \"" + got.strings()[i] +
                       "\" vs expected \"" + expected.strings()[i] + "\"");
    return;
  }
  if (is_float(expected.dtype())) {
    for (int64_t i = 0; i < n; ++i) {
      double g = float_at(got, i), e = float_at(expected, i);
      if (std::isnan(e) && std::isnan(g)) continue;
      if (std::isinf(e) && g == e) continue;
      if (!(std::fabs(g - e) <= 1e-5 + 1e-3 * std::fabs(e)))
        throw Mismatch(what + ": mismatch at index " + std::to_string(i) + ": got " + fmt_double(g) + " vs expected " +
                       fmt_double(e));
    }
    return;
  }
  const size_t es = ophost::dtype_size(expected.dtype());
  const auto* gp = static_cast<const unsigned char*>(got.data());
  const auto* ep = static_cast<const unsigned char*>(expected.data());
  for (int64_t i = 0; i < n; ++i) {
    bool same = expected.dtype() == DType::kBool ? ((gp[i] != 0) == (ep[i] != 0))
                                                  : std::memcmp(gp + i * es, ep + i * es, es) == 0;
    if (!same)
      throw Mismatch(what + ": mismatch at index " + std::to_string(i) + ": got " + int_str(got, i) + " vs expected " +
                     int_str(expected, i));
  }
}

// Tensor-only graph values; anything else (sequence, optional, map, sparse) is skipped.
void require_tensor_types(const onnx::GraphProto& g) {
  auto check = [](const onnx::ValueInfoProto& v, const char* kind) {
    if (!v.has_type()) return;
    const onnx::TypeProto& t = v.type();
    if (t.value_case() != onnx::TypeProto::kTensorType) {
      std::string what = t.has_sequence_type() ? "sequence" : t.has_optional_type() ? "optional"
                         : t.has_map_type()    ? "map"
                         : t.has_sparse_tensor_type() ? "sparse tensor"
                                                      : "non-tensor";
      throw Skip(std::string(kind) + " '" + v.name() + "' is a " + what + " (only tensors are supported)");
    }
  };
  for (const auto& v : g.input()) check(v, "input");
  for (const auto& v : g.output()) check(v, "output");
}

Tensor load_tensor(const fs::path& p) {
  onnx::TensorProto proto;
  if (!read_proto_file(p, proto)) throw Skip(p.filename().string() + " is not a TensorProto (sequence or optional)");
  return ophost::tensor_from_proto(proto, p.parent_path());
}

// The ONNX 1.12 generator stores bfloat16 test data as uint16 tensors holding the bit patterns (numpy has no
// bfloat16): relabel them when the graph declares bfloat16.
Tensor relabel_bfloat16(Tensor t, const onnx::ValueInfoProto* v) {
  if (!v || !v->type().has_tensor_type() || v->type().tensor_type().elem_type() != onnx::TensorProto::BFLOAT16 ||
      t.dtype() != DType::kUint16)
    return t;
  Tensor out(DType::kBFloat16, std::vector<int64_t>(t.shape().begin(), t.shape().end()));
  std::memcpy(out.data(), t.data(), t.nbytes());
  return out;
}

const onnx::ValueInfoProto* find_value(const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& vs,
                                       const std::string& name) {
  for (const auto& v : vs)
    if (v.name() == name) return &v;
  return nullptr;
}

std::vector<fs::path> numbered(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> v;
  for (int i = 0;; ++i) {
    fs::path p = dir / (prefix + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    v.push_back(p);
  }
  return v;
}

// Error messages without the model path and the pack's library path (the same for every case).
std::string short_reason(std::string msg, const fs::path& model) {
  std::string prefix = model.string() + ": ";
  if (msg.rfind(prefix, 0) == 0) msg = msg.substr(prefix.size());
  static const std::regex pack_re(R"( from pack '[^']*' \([^)]*\))");
  return one_line(std::regex_replace(msg, pack_re, ""));
}

// "<file>: node 'n' (Op, opset 13): no loaded pack provides this op" -> "Op".
std::optional<std::string> missing_op(const std::string& msg) {
  static const std::regex re(R"(\(([A-Za-z0-9_.:]+), opset (\d+)\): no loaded pack provides this op)");
  std::smatch m;
  if (std::regex_search(msg, m, re)) return m[1].str() + " (opset " + m[2].str() + ")";
  return std::nullopt;
}

Result run_case(ophost::Runtime& rt, const fs::path& dir, const ophost::SessionOptions& options) {
  Result r;
  r.name = dir.filename().string();
  try {
    onnx::ModelProto model;
    if (!read_proto_file(dir / "model.onnx", model)) {
      r.outcome = Outcome::kFailed;
      r.category = "load error";
      r.detail = "model.onnx does not parse";
      return r;
    }
    require_tensor_types(model.graph());
    const fs::path data = dir / "test_data_set_0";
    std::vector<fs::path> in_files = numbered(data, "input_"), out_files = numbered(data, "output_");
    std::vector<ophost::NamedTensor> inputs;
    std::vector<Tensor> expected;
    // Graph inputs that are not initializers, in order.
    std::vector<std::string> names;
    {
      std::vector<std::string> inits;
      for (const auto& t : model.graph().initializer()) inits.push_back(t.name());
      for (const auto& v : model.graph().input())
        if (std::find(inits.begin(), inits.end(), v.name()) == inits.end()) names.push_back(v.name());
    }
    for (size_t i = 0; i < in_files.size(); ++i) {
      Tensor t = load_tensor(in_files[i]);
      if (i >= names.size()) throw Skip("more input files than graph inputs");
      t = relabel_bfloat16(std::move(t), find_value(model.graph().input(), names[i]));
      inputs.push_back({names[i], std::move(t)});
    }
    for (size_t i = 0; i < out_files.size(); ++i)
      expected.push_back(relabel_bfloat16(
          load_tensor(out_files[i]),
          i < static_cast<size_t>(model.graph().output_size()) ? &model.graph().output(static_cast<int>(i)) : nullptr));

    std::unique_ptr<ophost::Session> session;
    try {
      session = rt.load(dir / "model.onnx", options);
    } catch (const ophost::Error& e) {
      r.outcome = Outcome::kFailed;
      if (auto op = missing_op(e.what())) r.category = "op not found: " + *op;
      else r.category = "load error";
      r.detail = short_reason(e.what(), dir / "model.onnx");
      return r;
    } catch (const std::exception& e) {
      r.outcome = Outcome::kFailed;
      r.category = "load error";
      r.detail = one_line(e.what());
      return r;
    }
    std::vector<ophost::NamedTensor> outputs;
    try {
      outputs = session->run(inputs);
    } catch (const std::exception& e) {
      r.outcome = Outcome::kFailed;
      r.category = "run error";
      r.detail = short_reason(e.what(), dir / "model.onnx");
      return r;
    }
    if (outputs.size() < expected.size()) {
      r.outcome = Outcome::kFailed;
      r.category = "mismatch";
      r.detail = std::to_string(outputs.size()) + " outputs, expected " + std::to_string(expected.size());
      return r;
    }
    for (size_t i = 0; i < expected.size(); ++i)
      compare("output " + std::to_string(i) + " '" + outputs[i].name + "'", outputs[i].tensor, expected[i]);
    r.outcome = Outcome::kPassed;
  } catch (const Skip& e) {
    r.outcome = Outcome::kSkipped;
    r.category = "skipped: non-tensor values";
    r.detail = one_line(e.what());
  } catch (const Mismatch& e) {
    r.outcome = Outcome::kFailed;
    r.category = "mismatch";
    r.detail = one_line(e.what());
  } catch (const std::exception& e) {
    r.outcome = Outcome::kFailed;
    r.category = "error";
    r.detail = one_line(e.what());
  }
  return r;
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          o += buf;
        } else {
          o += c;
        }
    }
  }
  return o;
}

const char* outcome_name(Outcome o) {
  return o == Outcome::kPassed ? "passed" : o == Outcome::kFailed ? "failed" : "skipped";
}

// "test_name  # reason" per line; blank lines and lines starting with '#' are ignored. A case without a reason
// is an error.
std::map<std::string, std::string> read_exclusions(const fs::path& p) {
  std::ifstream f(p);
  if (!f) throw std::runtime_error("cannot open exclusions file " + p.string());
  std::map<std::string, std::string> out;
  std::string line;
  int lineno = 0;
  auto trim = [](std::string s) {
    size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  };
  while (std::getline(f, line)) {
    ++lineno;
    std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    size_t hash = t.find('#');
    std::string name = trim(t.substr(0, hash));
    std::string reason = hash == std::string::npos ? "" : trim(t.substr(hash + 1));
    if (reason.empty())
      throw std::runtime_error(p.string() + ":" + std::to_string(lineno) + ": excluded case '" + name +
                               "' has no reason (write `" + name + "  # why`)");
    if (name.find_first_of(" \t") != std::string::npos)
      throw std::runtime_error(p.string() + ":" + std::to_string(lineno) + ": malformed line '" + t + "'");
    out[name] = reason;
  }
  return out;
}

int usage(const char* argv0) {
  std::cerr << "usage: " << argv0
            << " CASES_DIR [--filter REGEX] [--exclusions FILE] [--floor N] [--list-failures] [--json FILE]"
               " [--opt-level N] [--compare-opt-levels A,B] [--verbose]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  fs::path cases_dir;
  std::optional<std::regex> filter;
  std::optional<fs::path> exclusions_path, json_path;
  std::optional<long> floor;
  bool list_failures = false, verbose = false;
  ophost::SessionOptions options;
  std::optional<std::pair<int, int>> compare_levels;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--filter") filter.emplace(value(), std::regex::ECMAScript);
    else if (a == "--exclusions") exclusions_path = value();
    else if (a == "--json") json_path = value();
    else if (a == "--floor") {
      std::string v = value();
      // Accept a file holding the number too.
      if (fs::exists(v)) {
        std::ifstream f(v);
        long n = 0;
        if (!(f >> n)) {
          std::cerr << "floor file " << v << " holds no number\n";
          return 2;
        }
        floor = n;
      } else {
        floor = std::stol(v);
      }
    } else if (a == "--opt-level") {
      options.opt_level = std::stoi(value());
    } else if (a == "--compare-opt-levels") {
      std::string v = value();
      size_t comma = v.find(',');
      if (comma == std::string::npos) return usage(argv[0]);
      compare_levels = std::make_pair(std::stoi(v.substr(0, comma)), std::stoi(v.substr(comma + 1)));
    }
    else if (a == "--list-failures") list_failures = true;
    else if (a == "--verbose" || a == "-v") verbose = true;
    else if (a == "--help" || a == "-h") return usage(argv[0]), 0;
    else if (!a.empty() && a[0] == '-') return usage(argv[0]);
    else cases_dir = a;
  }
  if (cases_dir.empty()) return usage(argv[0]);
  // No cases is a failure, never a pass: a missing suite must not look like a clean run.
  if (!fs::is_directory(cases_dir)) {
    std::cerr << "error: conformance cases not found at " << cases_dir.string()
              << " (expected the ONNX 1.12 node tests: one folder per case with model.onnx and test_data_set_0/;"
                 " tests/conformance/generate_cases.py DIR writes them)\n";
    return 2;
  }

  std::map<std::string, std::string> exclusions;
  try {
    if (exclusions_path) exclusions = read_exclusions(*exclusions_path);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }

  spdlog::set_level(verbose ? spdlog::level::warn : spdlog::level::off);
  std::unique_ptr<ophost::Runtime> rt;
  try {
    rt = std::make_unique<ophost::Runtime>();
  } catch (const std::exception& e) {
    std::cerr << "error: cannot start the runtime: " << e.what() << "\n";
    return 2;
  }

  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(cases_dir))
    if (e.is_directory() && fs::exists(e.path() / "model.onnx")) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  if (dirs.empty()) {
    std::cerr << "error: no conformance cases in " << cases_dir.string()
              << " (no folder with a model.onnx; tests/conformance/generate_cases.py DIR writes them)\n";
    return 2;
  }

  std::vector<Result> results;
  long level_a_passed = 0, level_b_passed = 0;
  std::vector<std::string> regressions;
  const auto t0 = std::chrono::steady_clock::now();
  for (const fs::path& d : dirs) {
    std::string name = d.filename().string();
    if (filter && !std::regex_search(name, *filter)) continue;
    if (auto it = exclusions.find(name); it != exclusions.end()) {
      results.push_back({name, Outcome::kSkipped, "skipped: excluded", it->second, 0});
      continue;
    }
    auto c0 = std::chrono::steady_clock::now();
    if (compare_levels) {
      // Both levels, same case: a case that passes at A must pass at B.
      ophost::SessionOptions oa = options, ob = options;
      oa.opt_level = compare_levels->first;
      ob.opt_level = compare_levels->second;
      Result ra = run_case(*rt, d, oa), rb = run_case(*rt, d, ob);
      if (ra.outcome == Outcome::kPassed) ++level_a_passed;
      if (rb.outcome == Outcome::kPassed) ++level_b_passed;
      if (ra.outcome == Outcome::kPassed && rb.outcome != Outcome::kPassed) {
        regressions.push_back(name + ": " + rb.category + ": " + rb.detail);
        std::cout << "REGRESSION " << name << " passes at level " << compare_levels->first << " but not at level "
                  << compare_levels->second << ": " << rb.category << ": " << rb.detail << "\n";
      }
      results.push_back(std::move(rb));
      continue;
    }
    Result r = run_case(*rt, d, options);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
    if (r.outcome == Outcome::kFailed) {
      std::cout << "FAIL " << r.name << ": " << r.category;
      if (r.category.rfind("op not found", 0) != 0) std::cout << ": " << r.detail;
      std::cout << "\n";
    } else if (verbose) {
      std::cout << (r.outcome == Outcome::kPassed ? "PASS " : "SKIP ") << r.name
                << (r.detail.empty() ? "" : ": " + r.detail) << "\n";
    }
    results.push_back(std::move(r));
  }
  for (const auto& [name, reason] : exclusions)
    if (!std::any_of(dirs.begin(), dirs.end(), [&](const fs::path& d) { return d.filename() == name; }))
      std::cerr << "warning: excluded case '" << name << "' does not exist\n";
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  long passed = 0, failed = 0, skipped = 0;
  std::map<std::string, int> reasons, missing;
  for (const Result& r : results) {
    if (r.outcome == Outcome::kPassed) ++passed;
    else if (r.outcome == Outcome::kFailed) ++failed;
    else ++skipped;
    if (r.outcome == Outcome::kPassed) continue;
    std::string cat = r.category;
    if (cat.rfind("op not found: ", 0) == 0) {
      std::string op = cat.substr(14);
      ++missing[op.substr(0, op.find(" (opset"))];
      cat = "op not found";
    }
    ++reasons[cat];
  }

  if (list_failures) {
    std::cout << "\nfailures:\n";
    for (const Result& r : results)
      if (r.outcome == Outcome::kFailed) std::cout << "  " << r.name << "  # " << r.category << ": " << r.detail << "\n";
  }
  std::cout << "\nper reason:\n";
  for (const auto& [cat, n] : reasons) std::cout << "  " << n << "  " << cat << "\n";
  if (!missing.empty()) {
    std::vector<std::pair<int, std::string>> v;
    for (const auto& [op, n] : missing) v.push_back({n, op});
    std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
    std::cout << "missing ops (cases):\n ";
    for (size_t i = 0; i < v.size(); ++i) std::cout << " " << v[i].second << "(" << v[i].first << ")";
    std::cout << "\n";
  }
  std::cout << "time: " << fmt_double(total) << " s\n";
  const long found = static_cast<long>(dirs.size()), considered = static_cast<long>(results.size());
  const long excluded = std::count_if(results.begin(), results.end(),
                                      [](const Result& r) { return r.category == "skipped: excluded"; });
  std::cout << found << " cases in " << cases_dir.string() << ", " << considered - excluded << " run, " << excluded
            << " excluded";
  if (filter) std::cout << ", " << found - considered << " filtered out";
  std::cout << "\n";
  std::cout << passed << " passed, " << failed << " failed, " << skipped << " skipped\n";

  if (json_path) {
    std::ofstream j(*json_path);
    j << "{\"passed\": " << passed << ", \"failed\": " << failed << ", \"skipped\": " << skipped
      << ", \"seconds\": " << total << ",\n \"cases\": [\n";
    for (size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i];
      j << "  {\"name\": \"" << json_escape(r.name) << "\", \"outcome\": \"" << outcome_name(r.outcome)
        << "\", \"category\": \"" << json_escape(r.category) << "\", \"detail\": \"" << json_escape(r.detail)
        << "\", \"seconds\": " << r.seconds << "}" << (i + 1 < results.size() ? "," : "") << "\n";
    }
    j << " ]}\n";
  }
  if (compare_levels) {
    std::cout << "opt level " << compare_levels->first << ": " << level_a_passed << " passed; opt level "
              << compare_levels->second << ": " << level_b_passed << " passed; " << regressions.size()
              << " cases pass at " << compare_levels->first << " but not at " << compare_levels->second << "\n";
    if (level_a_passed != level_b_passed || !regressions.empty()) {
      std::cout << "FAILED: the optimisation levels disagree\n";
      return 1;
    }
  }
  if (floor && passed < *floor) {
    std::cout << "FAILED: " << passed << " cases passed, below the floor of " << *floor << "\n";
    return 1;
  }
  return 0;
}
