// ophost plugins [-v]: what discovery found, loaded and rejected, and why.
#include "common.hpp"

#include <filesystem>
#include <iostream>

namespace ophost::cli {

int cmd_plugins(int argc, char** argv) {
  CommonOptions common;
  bool verbose = false;
  po::options_description visible("Options", 110, 55);
  visible.add_options()("help,h", "show this help")("verbose,v", po::bool_switch(&verbose),
                                                    "also list every op and device, and the search roots");
  add_common_options(visible, common);
  po::variables_map vm;
  if (!parse(argc, argv, visible, visible, {}, vm,
             "Usage: ophost plugins [-v] [--plugin-path DIR ...]\n\n"
             "Lists every plugin discovery looked at: loaded ones with their ops and devices, rejected ones with\n"
             "the reason. Exit status 1 when two packs conflict over an op.\n")) {
    return kExitOk;
  }
  setup_logging(common.log_level, "error");
  Runtime runtime(runtime_options(common));
  size_t loaded = 0, rejected = 0, inactive = 0;
  if (verbose) {
    std::cout << "search roots (in order):\n";
    for (const auto& root : runtime.plugin_roots()) {
      std::error_code ec;
      std::cout << "  " << root.string() << (std::filesystem::is_directory(root, ec) ? "" : "  (does not exist)")
                << "\n";
    }
  }
  for (const PluginReport& r : runtime.plugins()) {
    if (r.loaded) {
      ++loaded;
      std::cout << "loaded    " << printable(r.name) << " " << printable(r.version) << " (" << printable(r.kind) << ")";
      if (!r.ops.empty()) std::cout << ", " << r.ops.size() << " ops";
      if (!r.devices.empty()) std::cout << ", " << r.devices.size() << " device entr" << (r.devices.size() == 1 ? "y" : "ies");
      std::cout << "\n";
      if (verbose) {
        std::cout << "          manifest " << printable(r.manifest.string()) << "\n";
        if (!r.library.empty()) std::cout << "          library  " << printable(r.library.string()) << "\n";
        if (!r.verified.empty()) std::cout << "          verified " << r.verified << "\n";
        for (const std::string& d : r.devices) std::cout << "          device   " << printable(d) << "\n";
        for (const std::string& op : r.ops) std::cout << "          op       " << printable(op) << "\n";
      } else {
        for (const std::string& d : r.devices) std::cout << "          device   " << printable(d) << "\n";
      }
    } else if (r.inactive) {
      // Not loaded because its device is absent here: information, not a failure.
      ++inactive;
      std::cout << "inactive  " << printable(r.name) << " " << printable(r.version) << " (" << printable(r.kind)
                << "): " << printable(r.reason) << "\n";
      if (verbose) std::cout << "          manifest " << printable(r.manifest.string()) << "\n";
    } else {
      ++rejected;
      std::cout << "rejected  " << printable(r.name) << ": " << printable(r.reason) << "\n";
    }
  }
  std::cout << loaded << " loaded, " << inactive << " inactive (device absent, not loaded), " << rejected
            << " rejected\n";
  return runtime.conflicts().empty() ? kExitOk : kExitError;
}

}  // namespace ophost::cli
