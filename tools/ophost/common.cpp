#include "common.hpp"

#include <ophost/error.hpp>

#include <ophost/npy.hpp>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <sstream>

namespace ophost::cli {

namespace {
std::pair<std::string, std::string> split_kv(const std::string& s, const char* opt) {
  auto eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size()) {
    throw Error(Code::kInvalidArgument, std::string("--") + opt + " expects NAME=VALUE, got '" + s + "'");
  }
  return {s.substr(0, eq), s.substr(eq + 1)};
}

std::vector<int64_t> parse_dims(const std::string& name, const std::string& text) {
  std::vector<int64_t> dims;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string tok = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    try {
      size_t used = 0;
      long long v = std::stoll(tok, &used);
      if (used != tok.size() || v < 0) throw std::invalid_argument(tok);
      dims.push_back(v);
    } catch (const std::exception&) {
      throw Error(Code::kInvalidArgument, "--shape " + name + "=" + text + ": '" + tok +
                                              "' is not a non-negative integer");
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return dims;
}

}  // namespace

std::vector<NamedTensor> prepare_inputs(const Session& session, const std::vector<std::string>& inputs, bool random,
                                       const std::vector<std::string>& shapes, uint64_t max_tensor_bytes) {
  std::map<std::string, std::vector<int64_t>> shape_of;
  for (const std::string& s : shapes) {
    auto [name, text] = split_kv(s, "shape");
    shape_of[name] = parse_dims(name, text);
  }
  std::vector<NamedTensor> feeds;
  for (const std::string& s : inputs) {
    auto [name, file] = split_kv(s, "input");
    feeds.push_back({name, read_npy(file)});
  }
  for (const ValueInfo& in : session.inputs()) {
    bool given = std::any_of(feeds.begin(), feeds.end(), [&](const NamedTensor& f) { return f.name == in.name; });
    if (given) continue;
    if (!random) {
      throw Error(Code::kInvalidArgument, "input '" + in.name + "' (" + dtype_name(in.dtype) + " " +
                                              shape_to_string(in.shape) +
                                              ") is not given; use --input " + in.name + "=FILE.npy or --random");
    }
    std::vector<int64_t> dims = in.shape;
    if (auto it = shape_of.find(in.name); it != shape_of.end()) {
      dims = it->second;
    } else if (std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d < 0; })) {
      throw Error(Code::kInvalidArgument, "input '" + in.name + "' has unknown dimensions " + shape_to_string(dims) +
                                              "; give them with --shape " + in.name + "=D0,D1,...");
    }
    uint64_t bytes = dtype_size(in.dtype);
    bool overflow = false;
    for (int64_t d : dims) overflow = overflow || __builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes);
    if (overflow || bytes > max_tensor_bytes) {
      throw Error(Code::kResourceExhausted,
                  "--random input '" + in.name + "' of shape " + shape_to_string(dims) + " would be " +
                      (overflow ? std::string("more bytes than 64 bits count") : std::to_string(bytes) + " bytes") +
                      ", over the tensor size limit of " + std::to_string(max_tensor_bytes) +
                      " bytes (--max-tensor-bytes)");
    }
    feeds.push_back({in.name, random_tensor(in.dtype, dims)});
  }
  for (const auto& [name, dims] : shape_of) {
    if (std::none_of(session.inputs().begin(), session.inputs().end(),
                     [&](const ValueInfo& v) { return v.name == name; })) {
      throw Error(Code::kInvalidArgument, "--shape names '" + name + "', which is not an input of the model");
    }
  }
  return feeds;
}

void add_input_options(po::options_description& desc, std::vector<std::string>& inputs, bool& random,
                       std::vector<std::string>& shapes) {
  desc.add_options()("input", po::value(&inputs)->composing(),
                     "NAME=FILE.npy: feed graph input NAME from a .npy file (repeatable)")(
      "random", po::bool_switch(&random),
      "fill every input not given with --input deterministically (same values as ort-run.js --random)")(
      "shape", po::value(&shapes)->composing(), "NAME=D0,D1,...: shape of a --random input with unknown dims");
}

namespace {
// The passes from libophost's own table: "NAME (level N): what it does; ...".
std::string disable_pass_help() {
  std::string text = "pass not to run (repeatable); the passes, in the order they run:";
  for (const GraphPassInfo& p : graph_passes())
    text += " " + p.name + " (level " + std::to_string(p.level) + "): " + p.summary + ";";
  text.back() = '.';
  return text;
}
}  // namespace

void add_common_options(po::options_description& desc, CommonOptions& opts) {
  desc.add_options()
      ("plugin-path", po::value(&opts.plugin_paths)->composing(),
       "plugin root searched first (repeatable); then $OPHOST_PLUGIN_PATH, then <exe>/../lib/ophost/plugins")
      ("disable-plugin", po::value(&opts.disable)->composing(),
       "glob of plugin names not to load (repeatable; also $OPHOST_PLUGINS_DISABLE)")
      ("allow-op-override", po::bool_switch(&opts.allow_op_override),
       "let a later pack override an op another pack already serves (logged)")
      ("insecure-plugin-path", po::bool_switch(&opts.insecure_plugin_paths),
       "load plugins from roots another user could write (a folder on the way up owned by someone else, or "
       "writable by group or others); logged as a warning")
      ("threads", po::value(&opts.threads)->default_value(0),
       "intra-op threads offered to kernels as parallel_for (0 = hardware concurrency)")
      ("mem-pool-size", po::value(&opts.mem_pool_size)->default_value(0),
       "bytes the memory pool reserves at session start; arenas for later input shapes that fit reuse them")
      ("mem-limit", po::value(&opts.mem_limit)->default_value(opts.mem_limit),
       "bytes the session's memory pool may take (default: half of this machine's physical memory; 0 = no limit); "
       "exceeding it is an out-of-memory error naming the value and sizes")
      ("allow-newer-opset", po::bool_switch(&opts.allow_newer_opset),
       "run a model whose ai.onnx / ai.onnx.ml opset is newer than every released one (ai.onnx 23, ai.onnx.ml 5) "
       "with the newest semantics the packs know (a warning says so); without it such a model is refused at load")
      ("run-timeout", po::value(&opts.run_timeout_ms)->default_value(0),
       "milliseconds one run may take (0 = no limit); checked before every node and Loop/Scan iteration, so a "
       "kernel already running finishes first (a kernel of an --isolate-packs pack is killed at the deadline)")
      ("device", po::value(&opts.device),
       "device preference list, e.g. cuda,cpu: each node runs on the first device with a kernel for it; Copy "
       "nodes are inserted at device boundaries (default: cpu). A listed device without a usable backend is an "
       "error")
      ("execution-mode", po::value(&opts.execution_mode)->default_value("sequential"),
       "sequential (prepared calls in order) or parallel (independent nodes on --inter-op-threads)")
      ("inter-op-threads", po::value(&opts.inter_op_threads)->default_value(0),
       "threads running independent nodes in parallel mode, caller included (0 = 2)")
      ("profile", po::value(&opts.profile),
       "write a Chrome-trace profile (ONNX Runtime's field names) to FILE.json and print per-op totals")
      ("opt-level", po::value(&opts.opt_level)->default_value(3),
       "graph optimisation level: 0 none, 1 identity/dead-node elimination and constant folding, 2 adds "
       "Conv+BatchNormalization folding, Conv+Add/activation fusion and LayerNormalization fusion, 3 (default) "
       "adds Conv+Mul/Add and Pad+Conv folding and channel-blocked (NCHWc) layouts between convolutions (off with "
       "--dump)")
      ("disable-pass", po::value(&opts.disabled_passes)->composing(), disable_pass_help().c_str())
      ("max-tensor-bytes", po::value(&opts.max_tensor_bytes)->default_value(opts.max_tensor_bytes),
       "refuse a model whose tensors (initializers, inferred values) would exceed this many bytes")
      ("max-loop-iterations", po::value(&opts.max_loop_iterations)->default_value(opts.max_loop_iterations),
       "most iterations one Loop node may run in one run; a loop that would run more fails the run with a message")
      ("max-fold-bytes", po::value(&opts.max_fold_bytes)->default_value(opts.max_fold_bytes),
       "bytes of new constants constant folding may create beyond the model's own initializers; a model that "
       "would need more is refused at load")
      ("isolate-packs", po::value(&opts.isolate_packs)->composing(),
       "P1,P2,...: run the kernels of these operator packs in a worker process of their own ('*' = every loaded "
       "pack), so a crash, abort or exit() in one fails only that run, naming pack, node and op, and the next run "
       "starts a new worker; a kernel still running past --run-timeout is killed. Costs a copy of each input and "
       "output and a round trip per node (docs/benchmarks.md); CPU kernels of numeric tensors only (repeatable; "
       "$OPHOST_ISOLATE_PACKS adds to it)")
      ("log-level", po::value(&opts.log_level),
       "trace, debug, info, warn, error or off (default: $OPHOST_LOG_LEVEL or warn)");
}

void setup_logging(const std::string& level, const std::string& fallback) {
  std::string name = level;
  if (name.empty()) {
    const char* env = std::getenv("OPHOST_LOG_LEVEL");
    name = env && *env ? env : fallback;
  }
  auto lvl = spdlog::level::from_str(name);
  if (lvl == spdlog::level::off && name != "off") {
    throw Error(Code::kInvalidArgument,
                "unknown log level '" + name + "'; use trace, debug, info, warn, error or off");
  }
  auto logger = spdlog::stderr_color_mt("ophost");
  logger->set_pattern("[ophost] [%^%l%$] %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(lvl);
}

RuntimeOptions runtime_options(const CommonOptions& opts) {
  RuntimeOptions r;
  for (const std::string& p : opts.plugin_paths) r.plugin_paths.emplace_back(p);
  r.disabled_plugins = opts.disable;
  r.allow_op_override = opts.allow_op_override;
  r.insecure_plugin_paths = opts.insecure_plugin_paths;
  r.intra_op_threads = opts.threads;
  return r;
}

SessionOptions session_options(const CommonOptions& opts) {
  SessionOptions s;
  s.mem_limit = opts.mem_limit;
  if (opts.run_timeout_ms < 0) throw po::error("--run-timeout must be >= 0");
  s.run_timeout_ms = opts.run_timeout_ms;
  s.allow_newer_opset = opts.allow_newer_opset;
  s.mem_pool_size = opts.mem_pool_size;
  s.profile = !opts.profile.empty();
  for (size_t pos = 0; !opts.device.empty() && pos <= opts.device.size();) {
    size_t comma = opts.device.find(',', pos);
    std::string d = opts.device.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (d.empty()) throw po::error("--device: empty device name in '" + opts.device + "'");
    s.devices.push_back(d);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (opts.execution_mode == "parallel") {
    s.execution_mode = SessionOptions::ExecutionMode::kParallel;
  } else if (opts.execution_mode != "sequential") {
    throw po::error("--execution-mode must be sequential or parallel, got '" + opts.execution_mode + "'");
  }
  if (opts.inter_op_threads < 0) throw po::error("--inter-op-threads must be >= 0");
  s.inter_op_threads = opts.inter_op_threads;
  if (opts.opt_level < 0 || opts.opt_level > 3) throw po::error("--opt-level must be 0, 1, 2 or 3");
  s.opt_level = opts.opt_level;
  s.disabled_passes = opts.disabled_passes;
  s.max_tensor_bytes = opts.max_tensor_bytes;
  s.max_fold_bytes = opts.max_fold_bytes;
  for (const std::string& list : opts.isolate_packs) {
    for (size_t pos = 0; pos <= list.size();) {
      const size_t comma = std::min(list.find(',', pos), list.size());
      if (comma == pos) throw po::error("--isolate-packs: empty pack name in '" + list + "'");
      s.isolate_packs.push_back(list.substr(pos, comma - pos));
      pos = comma + 1;
    }
  }
  if (opts.max_loop_iterations < 0) throw po::error("--max-loop-iterations must be >= 0");
  s.max_loop_iterations = opts.max_loop_iterations;
  return s;
}

void finish_profile(const Session& session, const CommonOptions& opts) {
  if (opts.profile.empty()) return;
  std::vector<OpProfile> ops = session.write_profile(opts.profile);
  double total = 0;
  for (const OpProfile& p : ops) total += p.total_us;
  std::printf("profile: %s\n  %-24s %8s %12s %10s %7s  %s\n", opts.profile.c_str(), "op type", "calls", "total us",
              "avg us", "share", "implementation");
  for (const OpProfile& p : ops) {
    std::printf("  %-24s %8lld %12.1f %10.2f %6.1f%%  %s\n", p.op_type.c_str(), static_cast<long long>(p.calls),
                p.total_us, p.total_us / static_cast<double>(p.calls), total > 0 ? 100.0 * p.total_us / total : 0.0,
                p.implementations.empty() ? "-" : p.implementations.c_str());
  }
}

bool parse(int argc, char** argv, const po::options_description& visible, const po::options_description& all,
           const po::positional_options_description& pos, po::variables_map& vm, const std::string& usage) {
  po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
  if (vm.count("help")) {
    std::cout << usage << "\n" << visible << std::flush;
    return false;
  }
  po::notify(vm);
  return true;
}

namespace {
template <class T>
void stats(const Tensor& t, std::ostringstream& s) {
  const T* p = t.data_as<T>();
  int64_t n = t.numel();
  if (n == 0) {
    s << "  (empty)";
    return;
  }
  double mn = INFINITY, mx = -INFINITY, sum = 0;
  int64_t nonfinite = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = static_cast<double>(p[i]);
    if (!std::isfinite(v)) {
      ++nonfinite;
      continue;
    }
    mn = std::min(mn, v);
    mx = std::max(mx, v);
    sum += v;
  }
  s << "  min " << mn << " max " << mx << " mean " << (n > nonfinite ? sum / double(n - nonfinite) : NAN);
  if (nonfinite) s << " non-finite " << nonfinite;
  s << "  [";
  for (int64_t i = 0; i < std::min<int64_t>(n, 6); ++i) s << (i ? ", " : "") << static_cast<double>(p[i]);
  s << (n > 6 ? ", ...]" : "]");
}
}  // namespace

std::string summarize(const Tensor& t) {
  std::ostringstream s;
  s.precision(6);
  s << dtype_name(t.dtype()) << " " << shape_to_string(t.shape());
  switch (t.dtype()) {
    case DType::kFloat32: stats<float>(t, s); break;
    case DType::kFloat64: stats<double>(t, s); break;
    case DType::kInt32: stats<int32_t>(t, s); break;
    case DType::kInt64: stats<int64_t>(t, s); break;
    case DType::kInt8: stats<int8_t>(t, s); break;
    case DType::kUint8: stats<uint8_t>(t, s); break;
    case DType::kBool: stats<uint8_t>(t, s); break;
    default: break;
  }
  return s.str();
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace ophost::cli
