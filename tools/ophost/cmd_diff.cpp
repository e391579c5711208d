// ophost diff: compares two dumps of one model node by node (ophost run --dump, or reference .npy files named by
// value) and names the first node whose output diverges while its inputs agree.
#include "common.hpp"

#include <ophost/npy.hpp>

#include <ophost/error.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <unistd.h>

namespace ophost::cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kDiffUsage =
    "Usage: ophost diff DUMP_A DUMP_B [--atol A] [--rtol R] [--json FILE]\n"
    "       ophost diff MODEL --reference DIR [--a \"RUN OPTIONS\"] [--input NAME=FILE.npy | --random] [...]\n"
    "       ophost diff MODEL --a \"RUN OPTIONS\" --b \"RUN OPTIONS\" [--input NAME=FILE.npy | --random] [...]\n"
    "\n"
    "Compares every intermediate value of two runs of one model, node by node in execution order, and names the\n"
    "first node whose output diverges while its inputs agree: the node to look at (a wrong kernel, a wrong\n"
    "attribute, a fusion). DUMP_A is a folder written by `ophost run --dump`; DUMP_B is another such folder or a\n"
    "folder of reference .npy files named by value (characters other than [A-Za-z0-9._-] as '_'; names over\n"
    "180 characters: see docs/debugging.md), e.g. written from PyTorch hooks or another runtime.\n"
    "With MODEL, ophost runs it itself and dumps into temporary folders (or --dump-dir DIR/a, DIR/b): once with the\n"
    "options in --a and once with those in --b (any `ophost run` model options: \"--opt-level 0\", \"--device\n"
    "cuda,cpu\", \"--disable-plugin myops\", \"--plugin-path DIR\"), or once (--a) against --reference DIR. Both\n"
    "runs see the same inputs (--input files, or --random's deterministic fill).\n"
    "\n"
    "Per value: max abs and max rel error (|a-b| / max(|b|, atol)), cosine similarity, mismatches (elements with\n"
    "|a-b| > atol + rtol*|b|, or NaN on one side only), err/range (max abs error over the range of B's values)\n"
    "and amplification (a value's err/range over the largest err/range of the node's inputs: ~1 when error is\n"
    "carried along, large when the node makes it). A value diverges when it has mismatches and its err/range is\n"
    "over --range-tol (float32 rounding accumulated over a network stays below 1e-3 of the range; a wrong kernel\n"
    "or a flipped mask does not); `within range-tol` marks the others. A node whose output diverges is flagged\n"
    "`<< diverges, inputs agree` when none of its compared inputs diverges; the first such node is the\n"
    "culprit. Values only one side has (removed or created by a graph pass, e.g. a Conv's output fused into\n"
    "com.ophost::FusedConv) are listed as not comparable; a fused node says which pass made it.\n"
    "Exit status: 0 no divergence, 1 divergence (or an error), 2 usage.\n";

std::vector<std::string> split_words(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

std::string file_safe(const std::string& name) { return dump_file_stem(name); }

struct ValueRec {
  std::string name, file, skipped, op, pack, node, dtype;
  std::vector<int64_t> shape;
  int node_index = -1;
};
struct NodeRec {
  std::string name, op, pack, device, created_by;
  std::vector<std::string> inputs, outputs;
};
struct Dump {
  fs::path dir;
  bool indexed = false;
  std::vector<NodeRec> nodes;
  std::map<std::string, ValueRec> values;  // by value name
  std::vector<std::string> order;          // value names in index order
};

Dump read_dump(const fs::path& dir) {
  if (!fs::is_directory(dir)) throw Error(Code::kNotFound, "'" + dir.string() + "' is not a folder");
  Dump d;
  d.dir = dir;
  fs::path index = dir / "index.json";
  if (!fs::exists(index)) {
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() != ".npy") continue;
      ValueRec v;
      v.name = e.path().stem().string();
      v.file = e.path().filename().string();
      d.order.push_back(v.name);
      d.values[v.name] = v;
    }
    std::sort(d.order.begin(), d.order.end());
    return d;
  }
  json j;
  try {
    std::ifstream f(index);
    j = json::parse(f);
    d.indexed = true;
    for (const json& n : j.at("nodes")) {
      NodeRec r;
      r.name = n.at("name").get<std::string>();
      r.op = n.at("op").get<std::string>();
      r.pack = n.at("pack").get<std::string>();
      r.device = n.value("device", "");
      r.created_by = n.value("created_by", "");
      r.inputs = n.at("inputs").get<std::vector<std::string>>();
      r.outputs = n.at("outputs").get<std::vector<std::string>>();
      d.nodes.push_back(std::move(r));
    }
    for (const json& x : j.at("values")) {
      ValueRec v;
      v.name = x.at("name").get<std::string>();
      if (x.at("file").is_string()) v.file = x.at("file").get<std::string>();
      v.skipped = x.value("skipped", "");
      v.node_index = x.value("node_index", -1);
      if (x.at("op").is_string()) v.op = x.at("op").get<std::string>();
      if (x.at("pack").is_string()) v.pack = x.at("pack").get<std::string>();
      if (x.at("node").is_string()) v.node = x.at("node").get<std::string>();
      v.dtype = x.value("dtype", "");
      v.shape = x.value("shape", std::vector<int64_t>{});
      d.order.push_back(v.name);
      d.values[v.name] = std::move(v);
    }
  } catch (const json::exception& e) {
    throw Error(Code::kInvalidArgument, index.string() + ": not an ophost dump index (" + e.what() + ")");
  }
  return d;
}

// The file of value `name` in a dump, or "" when it has none.
std::string file_of(const Dump& d, const std::string& name) {
  if (auto it = d.values.find(name); it != d.values.end()) return it->second.file;
  if (!d.indexed) {
    if (auto it = d.values.find(file_safe(name)); it != d.values.end()) return it->second.file;
    // ort-run.js --out writes graph inputs as input.<name>.npy
    if (auto it = d.values.find("input." + file_safe(name)); it != d.values.end()) return it->second.file;
  }
  return {};
}

double half_to_double(uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 0) return sign * std::ldexp(m, -24);
  if (e == 31) return m ? NAN : sign * INFINITY;
  return sign * std::ldexp(1024 + m, e - 25);
}

std::vector<double> as_doubles(const Tensor& t, const std::string& what) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  auto conv = [&](auto* p) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(p[i]);
  };
  switch (t.dtype()) {
    case DType::kFloat32: conv(t.data_as<float>()); break;
    case DType::kFloat64: conv(t.data_as<double>()); break;
    case DType::kFloat16: {
      const auto* p = t.data_as<uint16_t>();
      for (size_t i = 0; i < out.size(); ++i) out[i] = half_to_double(p[i]);
      break;
    }
    case DType::kInt8: conv(t.data_as<int8_t>()); break;
    case DType::kUint8: case DType::kBool: conv(t.data_as<uint8_t>()); break;
    case DType::kInt16: conv(t.data_as<int16_t>()); break;
    case DType::kUint16: conv(t.data_as<uint16_t>()); break;
    case DType::kInt32: conv(t.data_as<int32_t>()); break;
    case DType::kUint32: conv(t.data_as<uint32_t>()); break;
    case DType::kInt64: conv(t.data_as<int64_t>()); break;
    case DType::kUint64: conv(t.data_as<uint64_t>()); break;
    default: throw Error(Code::kUnimplemented, what + ": dtype " + dtype_name(t.dtype()) + " is not compared");
  }
  return out;
}

struct Stats {
  bool comparable = false;
  std::string note;  // why not comparable, or a remark (shape)
  double max_abs = 0, max_rel = 0, cosine = 1, err_range = 0;
  int64_t mismatches = 0, numel = 0;
  double amplification = NAN;  // NaN: not applicable
};

Stats compare(const fs::path& fa, const fs::path& fb, double atol, double rtol, const std::string& name) {
  Stats s;
  Tensor ta = read_npy(fa), tb = read_npy(fb);
  std::vector<double> a = as_doubles(ta, fa.string()), b = as_doubles(tb, fb.string());
  const bool same_shape = ta.shape().size() == tb.shape().size() &&
                          std::equal(ta.shape().begin(), ta.shape().end(), tb.shape().begin());
  if (a.size() != b.size()) {
    s.comparable = true;
    s.note = "shape " + shape_to_string(ta.shape()) + " vs " + shape_to_string(tb.shape());
    s.mismatches = static_cast<int64_t>(std::max(a.size(), b.size()));
    s.numel = s.mismatches;
    s.max_abs = s.max_rel = s.err_range = INFINITY;
    s.cosine = NAN;
    return s;
  }
  if (!same_shape) s.note = "shape " + shape_to_string(ta.shape()) + " vs " + shape_to_string(tb.shape()) + " (same count)";
  (void)name;
  s.comparable = true;
  s.numel = static_cast<int64_t>(a.size());
  double lo = INFINITY, hi = -INFINITY, bmax = 0, dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double x = a[i], y = b[i];
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) != std::isnan(y)) {
        ++s.mismatches;
        s.max_abs = s.max_rel = INFINITY;
      }
      continue;
    }
    if (std::isfinite(y)) {
      lo = std::min(lo, y);
      hi = std::max(hi, y);
      bmax = std::max(bmax, std::abs(y));
    }
    const double d = x == y ? 0.0 : std::abs(x - y);  // equal infinities agree
    s.max_abs = std::max(s.max_abs, d);
    s.max_rel = std::max(s.max_rel, d / std::max(std::abs(y), atol));
    if (!(d <= atol + rtol * std::abs(y))) ++s.mismatches;
    if (std::isfinite(x) && std::isfinite(y)) {
      dot += x * y;
      na += x * x;
      nb += y * y;
    }
  }
  s.cosine = (na == 0 && nb == 0) ? 1.0 : (na == 0 || nb == 0) ? 0.0 : dot / std::sqrt(na * nb);
  double range = hi > lo ? hi - lo : bmax > 0 ? bmax : 1.0;
  s.err_range = s.max_abs / range;
  return s;
}

struct Row {
  int node = -1;  // index in A's nodes; -1: graph input
  std::string value;
  Stats st;
  bool flagged = false;  // diverges while its inputs agree
};

std::string fmt(double v, const char* f = "%.3g") {
  if (std::isnan(v)) return "-";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// A value diverges when elements mismatch and its error is above range_tol of its range (float rounding
// accumulated over many nodes stays below; a wrong kernel, a flipped mask or a wrong layout does not).
bool diverges(const Stats& s, double range_tol) {
  return s.comparable && s.mismatches > 0 && !(s.err_range <= range_tol);
}

int compare_dumps(const fs::path& dir_a, const fs::path& dir_b, double atol, double rtol, double range_tol,
                  const std::string& json_out, const std::string& label_a, const std::string& label_b) {
  Dump A = read_dump(dir_a), B = read_dump(dir_b);
  std::string la = label_a, lb = label_b;
  if (!A.indexed && B.indexed) {
    std::swap(A, B);
    std::swap(la, lb);
  }
  if (!A.indexed) {
    throw Error(Code::kInvalidArgument, "neither '" + dir_a.string() + "' nor '" + dir_b.string() +
                                            "' has an index.json: one side must be written by ophost run --dump");
  }
  std::map<std::string, const Stats*> by_value;
  std::vector<Row> rows;
  std::set<std::string> matched_b;
  auto compare_value = [&](const std::string& name, int node) {
    Row r;
    r.node = node;
    r.value = name;
    const ValueRec& va = A.values.at(name);
    std::string fb = file_of(B, name);
    if (!va.skipped.empty() || va.file.empty()) {
      r.st.note = "not comparable: " + (va.skipped.empty() ? std::string("no file in A") : va.skipped);
    } else if (fb.empty()) {
      r.st.note = "not comparable: not in B" + std::string(B.indexed ? " (made by a pass on one side only?)" : "");
    } else {
      matched_b.insert(fb);
      try {
        r.st = compare(A.dir / va.file, B.dir / fb, atol, rtol, name);
      } catch (const Error& e) {
        r.st = Stats{};
        r.st.note = std::string("not comparable: ") + e.what();
      }
    }
    rows.push_back(std::move(r));
  };
  for (const std::string& name : A.order)
    if (A.values.at(name).node_index < 0) compare_value(name, -1);
  for (size_t ni = 0; ni < A.nodes.size(); ++ni)
    for (const std::string& out : A.nodes[ni].outputs)
      if (!out.empty() && A.values.count(out)) compare_value(out, static_cast<int>(ni));
  for (const Row& r : rows) by_value[r.value] = &r.st;
  // Amplification and flags, in node order.
  int culprit = -1;
  bool diverged = false;
  for (Row& r : rows) {
    if (diverges(r.st, range_tol)) diverged = true;
    if (r.node < 0 || !r.st.comparable) continue;
    double in_err = 0;
    bool inputs_agree = true;
    for (const std::string& in : A.nodes[r.node].inputs) {
      auto it = by_value.find(in);
      if (in.empty() || it == by_value.end() || !it->second->comparable) continue;
      in_err = std::max(in_err, it->second->err_range);
      if (diverges(*it->second, range_tol)) inputs_agree = false;
    }
    if (in_err > 0) r.st.amplification = r.st.err_range / in_err;
    else if (r.st.err_range > 0) r.st.amplification = INFINITY;
    if (diverges(r.st, range_tol) && inputs_agree) {
      r.flagged = true;
      if (culprit < 0) culprit = static_cast<int>(&r - rows.data());
    }
  }
  // Print.
  std::printf("A: %s (%s)\nB: %s (%s)\natol %g, rtol %g, range-tol %g\n\n", A.dir.string().c_str(), la.c_str(),
              B.dir.string().c_str(), lb.c_str(), atol, rtol, range_tol);
  std::printf("%4s  %-24s %-24s %-10s %-20s %9s %9s %9s %10s %9s %8s  %s\n", "#", "node", "op", "pack", "value",
              "max abs", "max rel", "cosine", "mismatch", "err/range", "amplif", "");
  auto cut = [](const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n - 1) + "~"; };
  for (const Row& r : rows) {
    const NodeRec* n = r.node >= 0 ? &A.nodes[r.node] : nullptr;
    std::string op = n ? n->op : "(graph input)";
    std::printf("%4s  %-24s %-24s %-10s %-20s ", n ? std::to_string(r.node).c_str() : "-",
                cut(n ? n->name : "", 24).c_str(), cut(op, 24).c_str(), cut(n ? n->pack : "", 10).c_str(),
                cut(r.value, 20).c_str());
    if (!r.st.comparable) {
      std::printf("%s\n", r.st.note.c_str());
      continue;
    }
    std::string mism = std::to_string(r.st.mismatches) + "/" + std::to_string(r.st.numel);
    std::string tail;
    if (r.flagged) tail = &r == &rows[culprit] ? "<< FIRST DIVERGENCE, inputs agree" : "<< diverges, inputs agree";
    else if (diverges(r.st, range_tol)) tail = "diverges (inputs diverge)";
    else if (r.st.mismatches > 0) tail = "within range-tol";
    if (n && !n->created_by.empty() && r.flagged) tail += " [made by " + n->created_by + "]";
    if (!r.st.note.empty()) tail += " (" + r.st.note + ")";
    std::printf("%9s %9s %9s %10s %9s %8s  %s\n", fmt(r.st.max_abs).c_str(), fmt(r.st.max_rel).c_str(),
                fmt(r.st.cosine, "%.6f").c_str(), mism.c_str(), fmt(r.st.err_range).c_str(),
                fmt(r.st.amplification, "%.2g").c_str(), tail.c_str());
  }
  std::vector<std::string> only_b;
  for (const std::string& name : B.order) {
    const ValueRec& v = B.values.at(name);
    if (!v.file.empty() && !matched_b.count(v.file)) only_b.push_back(name);
  }
  if (!only_b.empty()) {
    std::printf("\nonly in B (not comparable; removed or renamed by a pass on A's side?):\n");
    for (const std::string& name : only_b) {
      const ValueRec& v = B.values.at(name);
      std::printf("  %-30s %s%s\n", name.c_str(), v.op.empty() ? "" : ("from " + v.op).c_str(),
                  v.node.empty() ? "" : (" node '" + v.node + "'").c_str());
    }
  }
  std::printf("\n");
  json jc = nullptr;
  if (culprit >= 0) {
    const Row& r = rows[culprit];
    const NodeRec& n = A.nodes[r.node];
    std::printf("first divergence: node %d '%s' (%s) from pack '%s', output '%s': %lld of %lld elements mismatch, "
                "max abs %s, while its inputs agree%s\n",
                r.node, n.name.c_str(), n.op.c_str(), n.pack.c_str(), r.value.c_str(),
                static_cast<long long>(r.st.mismatches), static_cast<long long>(r.st.numel), fmt(r.st.max_abs).c_str(),
                n.created_by.empty() ? "" : ("; the node was made by " + n.created_by).c_str());
    jc = {{"node_index", r.node}, {"node", n.name}, {"op", n.op}, {"pack", n.pack}, {"value", r.value},
          {"created_by", n.created_by}};
  } else if (diverged) {
    std::printf("divergence, but no node whose inputs all agree (check the graph inputs and values not comparable)\n");
  } else {
    std::printf("no divergence\n");
  }
  if (!json_out.empty()) {
    json j;
    j["a"] = A.dir.string();
    j["b"] = B.dir.string();
    j["atol"] = atol;
    j["rtol"] = rtol;
    j["range_tol"] = range_tol;
    j["diverged"] = diverged;
    j["culprit"] = jc;
    auto num = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
    json jr = json::array();
    for (const Row& r : rows) {
      json x;
      x["value"] = r.value;
      x["node_index"] = r.node;
      if (r.node >= 0) {
        x["node"] = A.nodes[r.node].name;
        x["op"] = A.nodes[r.node].op;
        x["pack"] = A.nodes[r.node].pack;
        if (!A.nodes[r.node].created_by.empty()) x["created_by"] = A.nodes[r.node].created_by;
      }
      x["comparable"] = r.st.comparable;
      if (!r.st.note.empty()) x["note"] = r.st.note;
      if (r.st.comparable) {
        x["max_abs"] = num(r.st.max_abs);
        x["max_rel"] = num(r.st.max_rel);
        x["cosine"] = num(r.st.cosine);
        x["mismatches"] = r.st.mismatches;
        x["numel"] = r.st.numel;
        x["err_over_range"] = num(r.st.err_range);
        x["amplification"] = std::isnan(r.st.amplification) ? json(nullptr)
                             : std::isinf(r.st.amplification) ? json("inf") : json(r.st.amplification);
        x["diverges"] = diverges(r.st, range_tol);
        x["flagged"] = r.flagged;
      }
      jr.push_back(std::move(x));
    }
    j["values"] = std::move(jr);
    j["only_in_b"] = only_b;
    std::ofstream f(json_out);
    f << j.dump(1) << "\n";
    if (!f) throw Error(Code::kDataLoss, "cannot write --json " + json_out);
  }
  return diverged ? kExitError : kExitOk;
}

// Runs MODEL once with the run options in `words`, dumping into `dir`.
void run_dumped(const std::string& model, const std::vector<std::string>& words, const std::vector<std::string>& inputs,
                bool random, const std::vector<std::string>& shapes, const fs::path& dir) {
  CommonOptions common;
  po::options_description desc;
  add_common_options(desc, common);
  po::variables_map vm;
  po::store(po::command_line_parser(words).options(desc).run(), vm);
  po::notify(vm);
  Runtime runtime(runtime_options(common));
  SessionOptions so = session_options(common);
  so.dump_dir = dir.string();
  auto session = runtime.load(model, so);
  std::vector<NamedTensor> feeds = prepare_inputs(*session, inputs, random, shapes, common.max_tensor_bytes);
  session->run(feeds);
}

}  // namespace

int cmd_diff(int argc, char** argv) {
  std::vector<std::string> positional, inputs, shapes;
  bool random = false;
  double atol = 1e-5, rtol = 1e-4, range_tol = 1e-3;
  std::string json_out, side_a, side_b, reference, dump_dir, log_level;
  po::options_description visible("Options", 110, 55);
  visible.add_options()("help,h", "show this help")(
      "atol", po::value(&atol)->default_value(atol, "1e-5"), "absolute tolerance")(
      "rtol", po::value(&rtol)->default_value(rtol, "1e-4"), "relative tolerance")(
      "range-tol", po::value(&range_tol)->default_value(range_tol, "1e-3"),
      "a value with mismatches diverges only when its max abs error exceeds this fraction of its range (0: any "
      "mismatch diverges)")(
      "json", po::value(&json_out), "also write the comparison to FILE (per value, the culprit)")(
      "reference", po::value(&reference), "with MODEL: folder of reference .npy files named by value")(
      "a", po::value(&side_a), "with MODEL: run options of run A, one string (e.g. \"--opt-level 0\")")(
      "b", po::value(&side_b), "with MODEL: run options of run B")(
      "dump-dir", po::value(&dump_dir), "with MODEL: keep the dumps in DIR/a and DIR/b (default: temporary)")(
      "log-level", po::value(&log_level), "trace, debug, info, warn, error or off");
  add_input_options(visible, inputs, random, shapes);
  po::options_description all;
  all.add(visible).add_options()("positional", po::value(&positional)->composing());
  po::positional_options_description pos;
  pos.add("positional", -1);
  po::variables_map vm;
  if (!parse(argc, argv, visible, all, pos, vm, kDiffUsage)) return kExitOk;
  setup_logging(log_level, "warn");
  if (positional.size() == 2 && fs::is_directory(positional[0])) {
    if (!side_a.empty() || !side_b.empty() || !reference.empty())
      throw po::error("--a, --b and --reference go with MODEL, not with two dump folders");
    return compare_dumps(positional[0], positional[1], atol, rtol, range_tol, json_out, "dump", "dump");
  }
  if (positional.size() != 1) {
    std::cerr << "ophost diff: give DUMP_A DUMP_B, or MODEL with --reference DIR or --a/--b\n\n" << kDiffUsage;
    return kExitUsage;
  }
  const std::string model = positional[0];
  if (reference.empty() && (side_a.empty() && side_b.empty())) {
    std::cerr << "ophost diff: with MODEL, give --reference DIR or --a \"OPTIONS\" --b \"OPTIONS\"\n\n" << kDiffUsage;
    return kExitUsage;
  }
  if (!reference.empty() && !side_b.empty()) throw po::error("--reference and --b exclude each other");
  fs::path base;
  bool temporary = dump_dir.empty();
  if (temporary) {
    base = fs::temp_directory_path() / ("ophost-diff-" + std::to_string(::getpid()));
  } else {
    base = dump_dir;
  }
  struct Cleanup {
    fs::path dir;
    bool on;
    ~Cleanup() {
      std::error_code ec;
      if (on) fs::remove_all(dir, ec);
    }
  } cleanup{base, temporary};
  std::error_code ec;
  fs::remove_all(base / "a", ec);
  fs::remove_all(base / "b", ec);
  run_dumped(model, split_words(side_a), inputs, random, shapes, base / "a");
  if (!reference.empty()) {
    return compare_dumps(base / "a", reference, atol, rtol, range_tol, json_out, "ophost " + side_a, "reference");
  }
  run_dumped(model, split_words(side_b), inputs, random, shapes, base / "b");
  return compare_dumps(base / "a", base / "b", atol, rtol, range_tol, json_out, "ophost " + side_a,
                       "ophost " + side_b);
}

}  // namespace ophost::cli
