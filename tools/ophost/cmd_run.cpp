// ophost run MODEL: load a model through the packs, feed it, run it once, print (and optionally save) outputs.
#include "common.hpp"

#include <ophost/npy.hpp>

#include <ophost/error.hpp>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>

namespace ophost::cli {

namespace {

constexpr const char* kRunUsage =
    "Usage: ophost run MODEL [--input NAME=FILE.npy ...] [--random] [--shape NAME=D0,D1,...]\n"
    "                  [--output-dir DIR] [--dump DIR] [--debug-kernels] [--plugin-path DIR ...] [--log-level L]\n"
    "\n"
    "Runs MODEL once and prints each output's name, dtype, shape and a summary, plus load and run times.\n"
    "Inputs come from .npy files (--input) or, with --random, from the deterministic fill that\n"
    "shared/peers/ort/ort-run.js --random uses (x[i] = (fmix32(i) >> 8) / 2^24 * 2 - 1), so both runtimes\n"
    "see the same tensor. Unknown dimensions of a --random input are given with --shape.\n"
    "\n"
    "Finding a wrong node (docs/debugging.md): --dump DIR writes every value the run produces (after graph\n"
    "optimisation) as DIR/<value name>.npy with DIR/index.json (node, op, pack, device, shape, dtype, node order);\n"
    "`ophost diff` compares two dumps, or a dump with reference .npy files. --debug-kernels poisons every output\n"
    "before its kernel runs and fails the run naming node, op, pack and element when an output element is left\n"
    "unwritten or an input the op does not declare in place is written.\n";

std::string file_safe(const std::string& name) {
  std::string out = name;
  for (char& c : out)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-')) c = '_';
  return out;
}

}  // namespace

int cmd_run(int argc, char** argv) {
  CommonOptions common;
  std::string model;
  std::vector<std::string> inputs, shapes;
  std::string output_dir;
  bool random = false;
  bool check_numerics = false;
  std::string dump_dir;
  bool debug_kernels = false;
  po::options_description visible("Options", 110, 55);
  visible.add_options()("help,h", "show this help")(
      "output-dir", po::value(&output_dir), "write each output to DIR/<output name>.npy")(
      "check-numerics", po::bool_switch(&check_numerics),
      "fail when a floating-point graph input or output holds a NaN or an infinity (names the value)")(
      "dump", po::value(&dump_dir),
      "write every value the run produces (after optimisation) to DIR/<value name>.npy and DIR/index.json "
      "(compare with ophost diff; If/Loop/Scan body values and values on devices are not written)")(
      "debug-kernels", po::bool_switch(&debug_kernels),
      "kernel debug mode: poison outputs before compute, fail on elements never written and on writes into inputs "
      "not declared in place, naming node, op, pack and element (slow)");
  add_input_options(visible, inputs, random, shapes);
  add_common_options(visible, common);
  po::options_description all;
  all.add(visible).add_options()("model", po::value(&model));
  po::positional_options_description pos;
  pos.add("model", 1);
  po::variables_map vm;
  if (!parse(argc, argv, visible, all, pos, vm, kRunUsage)) return kExitOk;
  if (model.empty()) {
    std::cerr << "ophost run: missing MODEL\n\n" << kRunUsage;
    return kExitUsage;
  }
  setup_logging(common.log_level, "warn");

  auto t0 = std::chrono::steady_clock::now();
  Runtime runtime(runtime_options(common));
  auto t1 = std::chrono::steady_clock::now();
  SessionOptions session_opts = session_options(common);
  session_opts.check_numerics = check_numerics;
  session_opts.dump_dir = dump_dir;
  session_opts.debug_kernels = debug_kernels;
  auto session = runtime.load(model, session_opts);
  auto t2 = std::chrono::steady_clock::now();

  std::vector<NamedTensor> feeds = prepare_inputs(*session, inputs, random, shapes, common.max_tensor_bytes);

  auto t3 = std::chrono::steady_clock::now();
  std::vector<NamedTensor> outputs = session->run(feeds);
  auto t4 = std::chrono::steady_clock::now();

  auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  std::cout << "model: " << model << "\n";
  for (const NamedTensor& in : feeds) std::cout << "input  " << in.name << ": " << summarize(in.tensor) << "\n";
  for (const NamedTensor& out : outputs) std::cout << "output " << out.name << ": " << summarize(out.tensor) << "\n";
  std::printf("time: plugins %.2f ms, load %.2f ms, run %.3f ms\n", ms(t0, t1), ms(t1, t2), ms(t3, t4));
  finish_profile(*session, common);
  if (!dump_dir.empty()) std::cout << "dump: " << dump_dir << " (index.json and one .npy per value)\n";
  if (!output_dir.empty()) {
    std::filesystem::create_directories(output_dir);
    for (const NamedTensor& out : outputs) {
      auto path = std::filesystem::path(output_dir) / (file_safe(out.name) + ".npy");
      write_npy(path, out.tensor);
      std::cout << "wrote " << path.string() << "\n";
    }
  }
  return kExitOk;
}

}  // namespace ophost::cli
