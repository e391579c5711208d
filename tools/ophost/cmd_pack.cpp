// ophost pack manifest: write ophost-plugin.json for a built plugin library.
// ophost pack check: validate a plugin folder for its author (pack_check.cpp).
#include "common.hpp"
#include "pack_check.hpp"

#include <ophost/manifest.hpp>
#include <ophost/pack.hpp>

#include <iostream>

namespace ophost::cli {

namespace {

int cmd_pack_manifest(int argc, char** argv) {
  std::string library, kind, out;
  ManifestExtras extras;
  std::string log_level;
  po::options_description visible("Options", 110, 55);
  visible.add_options()("help,h", "show this help")(
      "library", po::value(&library)->required(), "the built plugin library (.so)")(
      "kind", po::value(&kind)->required(), "operator-pack or device-backend")(
      "out", po::value(&out)->required(), "manifest to write (normally <plugin dir>/ophost-plugin.json)")(
      "description", po::value(&extras.description), "one-line description")(
      "license", po::value(&extras.license), "license identifier")(
      "requires-device", po::value(&extras.requires_devices)->composing(), "device type the pack needs (repeatable)")(
      "cpu-feature", po::value(&extras.cpu_features)->composing(), "CPU feature the library needs (repeatable)")(
      "probe-device-file", po::value(&extras.probe_device_files)->composing(),
      "device backend: absolute path of a device node; the backend is loaded only when one exists (repeatable)")(
      "probe-library", po::value(&extras.probe_libraries)->composing(),
      "device backend: runtime library it links; missing, the backend is inactive, not rejected (repeatable)")(
      "log-level", po::value(&log_level), "log level");
  po::variables_map vm;
  if (!parse(argc, argv, visible, visible, {}, vm,
             "Usage: ophost pack manifest --library LIB --kind KIND --out FILE [...]\n\n"
             "Loads LIB, runs the plugin handshake, validates its op and device tables, and writes a manifest\n"
             "whose name, version, ABI, ops and devices come from the library and whose sha256 is the file's.\n")) {
    return kExitOk;
  }
  setup_logging(log_level, "warn");
  Manifest m = manifest_from_library(library, kind, extras);
  write_manifest(m, out);
  std::cout << "wrote " << out << " (" << m.name << " " << m.version << ", " << m.provides.ops.size() << " ops, "
            << m.provides.devices.size() << " devices)\n";
  return kExitOk;
}

}  // namespace

int cmd_pack(int argc, char** argv) {
  if (argc >= 2 && std::string_view(argv[1]) == "manifest") return cmd_pack_manifest(argc - 1, argv + 1);
  if (argc >= 2 && std::string_view(argv[1]) == "check") return cmd_pack_check(argc - 1, argv + 1);
  std::cerr << "Usage: ophost pack manifest --library LIB --kind KIND --out FILE\n"
               "       ophost pack check DIR [--op DOMAIN::NAME] [--attr NAME=VALUE] [--input NAME=FILE.npy]\n"
               "  manifest   write ophost-plugin.json for a built plugin library\n"
               "  check      validate a plugin folder (manifest, ABI, exported symbols, op definitions, a run of\n"
               "             every CPU op in a child process, with guard zones and poisoned outputs); exit 0 when\n"
               "             clean, 1 with findings or ops not run (see ophost pack check --help)\n";
  return (argc >= 2 && (std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h")) ? kExitOk
                                                                                                       : kExitUsage;
}

}  // namespace ophost::cli
