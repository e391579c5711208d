// The `ophost` command: run models, list plugins, write pack manifests.
#include "common.hpp"

#include <ophost/error.hpp>

#include <spdlog/spdlog.h>

#include <cstring>
#include <iostream>
#include <string_view>

namespace {

constexpr const char* kUsage =
    "ophost " OPHOST_VERSION " - plugin-based ONNX inference runtime host\n"
    "\n"
    "Usage: ophost <command> [options]   (ophost <command> --help for details)\n"
    "\n"
    "Commands:\n"
    "  run MODEL        run an ONNX model through the loaded packs and print its outputs\n"
    "  plugins [-v]     list the plugins found, their ops and devices, and every rejected plugin with the reason\n"
    "  bench MODEL      latency percentiles, jitter, allocations per run and pool peak\n"
    "  inspect MODEL    inputs, outputs, node count and (--memory) the static memory plan\n"
    "  diff A B         compare two dumps of a model node by node (ophost run --dump) and name the first node\n"
    "                   whose output diverges while its inputs agree; or MODEL --a/--b OPTIONS, --reference DIR\n"
    "  serve            serve a model repository over the Open Inference Protocol (KServe v2): REST and gRPC\n"
    "  pack manifest    write ophost-plugin.json for a built plugin library (used by ophost_add_plugin)\n"
    "  pack check DIR   validate a plugin folder for its author (manifest, ABI, symbols, ops, a run of each op)\n"
    "\n"
    "Plugins are searched in --plugin-path, then $OPHOST_PLUGIN_PATH (colon-separated), then\n"
    "<exe>/../lib/ophost/plugins; never the current directory. $OPHOST_PLUGINS_DISABLE takes glob patterns.\n"
    "Logging: --log-level or $OPHOST_LOG_LEVEL (trace, debug, info, warn, error, off).\n"
    "CPU kernels (onnx-core): ONEDNN_MAX_CPU_ISA=AVX2 caps oneDNN and the Highway loops at an ISA level;\n"
    "$OPHOST_CONV_WINOGRAD=0 keeps 3x3 convolutions direct (Winograd otherwise: oneDNN's on AVX-512, onnx-core's\n"
    "own F(4x4,3x3) below it, and F(4,3) for 3x1 / 1x3 ones; a few 1e-6 of the output's range).\n"
    "`ophost inspect MODEL --kernels` shows what each node runs.\n";

}  // namespace

int main(int argc, char** argv) {
  using namespace ophost::cli;
  if (argc < 2 || std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h" ||
      std::string_view(argv[1]) == "help") {
    std::cout << kUsage;
    return argc < 2 ? kExitUsage : kExitOk;
  }
  std::string_view cmd = argv[1];
  if (cmd == "--version") {
    std::cout << "ophost " OPHOST_VERSION " (plugin ABI " << OPH_ABI_MAJOR << "." << OPH_ABI_MINOR << ")\n";
    return kExitOk;
  }
  try {
    if (cmd == "run") return cmd_run(argc - 1, argv + 1);
    if (cmd == "plugins") return cmd_plugins(argc - 1, argv + 1);
    if (cmd == "pack") return cmd_pack(argc - 1, argv + 1);
    if (cmd == "bench") return cmd_bench(argc - 1, argv + 1);
    if (cmd == "inspect") return cmd_inspect(argc - 1, argv + 1);
    if (cmd == "diff") return cmd_diff(argc - 1, argv + 1);
    if (cmd == "serve") return cmd_serve(argc - 1, argv + 1);
    std::cerr << "ophost: unknown command '" << cmd << "'\n\n" << kUsage;
    return kExitUsage;
  } catch (const boost::program_options::error& e) {
    std::cerr << "ophost " << cmd << ": " << e.what() << " (see ophost " << cmd << " --help)\n";
    return kExitUsage;
  } catch (const ophost::Error& e) {
    std::cerr << "ophost " << cmd << ": error: " << e.what() << "\n";
    return kExitError;
  } catch (const std::exception& e) {
    std::cerr << "ophost " << cmd << ": error: " << e.what() << "\n";
    return kExitError;
  }
}
