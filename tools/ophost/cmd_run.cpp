// ophost run MODEL: load a model through the packs, feed it, run it once, print (and optionally save) outputs.
#include "common.hpp"

#include "model/npy.hpp"

#include <ophost/error.hpp>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>

namespace ophost::cli {

namespace {

constexpr const char* kRunUsage =
    "Usage: ophost run MODEL [--input NAME=FILE.npy ...] [--random] [--shape NAME=D0,D1,...]\n"
    "                  [--output-dir DIR] [--plugin-path DIR ...] [--log-level L]\n"
    "\n"
    "Runs MODEL once and prints each output's name, dtype, shape and a summary, plus load and run times.\n"
    "Inputs come from .npy files (--input) or, with --random, from the deterministic fill that\n"
    "shared/peers/ort/ort-run.js --random uses (x[i] = (fmix32(i) >> 8) / 2^24 * 2 - 1), so both runtimes\n"
    "see the same tensor. Unknown dimensions of a --random input are given with --shape.\n";

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
  po::options_description visible("Options");
  visible.add_options()("help,h", "show this help")(
      "input", po::value(&inputs)->composing(), "NAME=FILE.npy: feed graph input NAME from a .npy file (repeatable)")(
      "random", po::bool_switch(&random), "fill every input not given with --input deterministically")(
      "shape", po::value(&shapes)->composing(), "NAME=D0,D1,...: shape of a --random input with unknown dims")(
      "output-dir", po::value(&output_dir), "write each output to DIR/<output name>.npy");
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
  auto session = runtime.load(model);
  auto t2 = std::chrono::steady_clock::now();

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
  for (const ValueInfo& in : session->inputs()) {
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
    feeds.push_back({in.name, random_tensor(in.dtype, dims)});
  }
  for (const auto& [name, dims] : shape_of) {
    if (std::none_of(session->inputs().begin(), session->inputs().end(),
                     [&](const ValueInfo& v) { return v.name == name; })) {
      throw Error(Code::kInvalidArgument, "--shape names '" + name + "', which is not an input of the model");
    }
  }

  auto t3 = std::chrono::steady_clock::now();
  std::vector<NamedTensor> outputs = session->run(feeds);
  auto t4 = std::chrono::steady_clock::now();

  auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  std::cout << "model: " << model << "\n";
  for (const NamedTensor& in : feeds) std::cout << "input  " << in.name << ": " << summarize(in.tensor) << "\n";
  for (const NamedTensor& out : outputs) std::cout << "output " << out.name << ": " << summarize(out.tensor) << "\n";
  std::printf("time: plugins %.2f ms, load %.2f ms, run %.3f ms\n", ms(t0, t1), ms(t1, t2), ms(t3, t4));
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
