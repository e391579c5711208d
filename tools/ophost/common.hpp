// Shared pieces of the `ophost` subcommands: common options, logging set-up, tensor summaries.
#pragma once

#include <ophost/runtime.hpp>

#include <boost/program_options.hpp>

#include <string>
#include <vector>

namespace ophost::cli {

namespace po = boost::program_options;

// Options every subcommand that loads plugins accepts.
struct CommonOptions {
  std::vector<std::string> plugin_paths;
  std::vector<std::string> disable;
  std::string log_level;
  bool allow_op_override = false;
  bool insecure_plugin_paths = false;
  int threads = 0;
  size_t mem_limit = SessionOptions{}.mem_limit;  // --mem-limit (default: half of physical memory)
  int64_t run_timeout_ms = 0;                      // --run-timeout
  bool allow_newer_opset = false;                  // --allow-newer-opset
  size_t mem_pool_size = 0;
  std::string profile;  // --profile FILE.json
  std::string device;  // --device cuda,cpu
  std::string execution_mode = "sequential";
  int inter_op_threads = 0;
  int opt_level = 3;                         // --opt-level 0..3
  std::vector<std::string> disabled_passes;  // --disable-pass NAME (repeatable)
  uint64_t max_tensor_bytes = SessionOptions{}.max_tensor_bytes;  // --max-tensor-bytes
  int64_t max_loop_iterations = SessionOptions{}.max_loop_iterations;  // --max-loop-iterations
  uint64_t max_fold_bytes = SessionOptions{}.max_fold_bytes;      // --max-fold-bytes
  std::vector<std::string> isolate_packs;  // --isolate-packs P1,P2 (repeatable)
};

// Adds the options every model command shares (plugins, threads, memory, devices, passes, load limits, logging).
void add_common_options(po::options_description& desc, CommonOptions& opts);
// Applies --log-level / OPHOST_LOG_LEVEL (default `fallback`). Throws Error on an unknown level.
void setup_logging(const std::string& level, const std::string& fallback);
RuntimeOptions runtime_options(const CommonOptions& opts);
SessionOptions session_options(const CommonOptions& opts);
// Writes the profile (when --profile was given) and prints the per-op-type table.
void finish_profile(const Session& session, const CommonOptions& opts);

// Parses argv for a subcommand; prints help and returns false when --help was given.
bool parse(int argc, char** argv, const po::options_description& visible, const po::options_description& all,
           const po::positional_options_description& pos, po::variables_map& vm, const std::string& usage);

// Graph inputs from --input NAME=FILE.npy, --random (deterministic fill) and --shape NAME=D0,D1 (for --random
// inputs with unknown dims). Throws Error naming the input on any problem.
// max_tensor_bytes bounds the --random inputs it creates (--shape); a bigger one is an error naming the option.
std::vector<NamedTensor> prepare_inputs(const Session& session, const std::vector<std::string>& inputs, bool random,
                                       const std::vector<std::string>& shapes,
                                       uint64_t max_tensor_bytes = SessionOptions{}.max_tensor_bytes);
void add_input_options(po::options_description& desc, std::vector<std::string>& inputs, bool& random,
                       std::vector<std::string>& shapes);

// "float32 [2,8]  min -1 max 6 mean 0.25  [0.1, 0.2, ...]"
std::string summarize(const Tensor& t);

// Text from a plugin or manifest made safe for a terminal: control characters (ESC, newline, NUL, DEL, ...)
// become \xNN, so a manifest cannot forge output lines or send escape sequences.
std::string printable(std::string_view text);

// Exit codes.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;

int cmd_run(int argc, char** argv);
int cmd_plugins(int argc, char** argv);
int cmd_pack(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_inspect(int argc, char** argv);
int cmd_diff(int argc, char** argv);
int cmd_serve(int argc, char** argv);

}  // namespace ophost::cli
