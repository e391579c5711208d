// ophost pack check DIR: a plugin folder checked the way the loader will check it, and more, for its author.
//
//  1. manifest: parses with the loader's strict schema; library present; sha256, platform and ABI agree
//  2. exported symbols (read from the ELF .dynsym): only oph_plugin_entry_v1; no dependency on libophost
//  3. load + handshake + tables equal to the manifest's provides (the loader's own code)
//  4. every op definition: the loader's validate_op_def (arity, type variables, attribute defaults of the
//     right type, alias indices in range) plus checks the loader does not need (dtypes, alias types)
//  5. an opcheck-style run of every CPU op, each op in a forked child (pack_check_run.cpp): random inputs for
//     a few shapes or the author's --input files, attributes from --attr, or the pack's samples file
//     (pack_check_samples.cpp); guard zones around every buffer,
//     outputs poisoned before compute; crashes and hangs become findings naming the op and the sample; a
//     sample's expected outputs are compared with the op's (pack_check_values.cpp), and the first finite inputs
//     of each op run again with NaN, +inf and -inf (the NaN/Inf probe, a note of what the op does with them).
#include "common.hpp"
#include "pack_check.hpp"
#include "pack_check_internal.hpp"

#include <ophost/error.hpp>
#include <ophost/manifest.hpp>
#include <ophost/op_schema.hpp>
#include <ophost/pack.hpp>
#include <ophost/runtime.hpp>
#include <ophost/tensor.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <set>

namespace ophost::cli {

namespace fs = std::filesystem;
using pack::Report;

namespace {

using namespace pack;

// Definition checks the loader does not make (it needs none of them to load the op safely).
void check_definition_extras(const OpSchema& op, const std::string& label, Report& report) {
  size_t before = report.count();
  for (const TypeVarSchema& tv : op.type_vars) {
    for (oph_dtype d : tv.allowed) {
      if (!is_onnx_dtype(d)) {
        report.finding({label, "type variable '" + tv.name + "' allows " + dtype_str(d) + " (code " +
                                   std::to_string(d.code) + ", bits " + std::to_string(d.bits) + ", lanes " +
                                   std::to_string(d.lanes) + "), which no ONNX type maps to",
                        "use the SDK's dtypes (C++: oph::dtypes::f32, ...; C: {OPH_DTYPE_FLOAT, 32, 1})"});
      }
    }
  }
  for (const AliasSchema& al : op.aliases) {
    const IoSchema& in = op.inputs[al.input];
    const IoSchema& out = op.outputs[al.output];
    if (al.kind == OPH_ALIAS_MAY_INPLACE && in.type_var != out.type_var) {
      report.finding({label, "MAY_INPLACE input " + std::to_string(al.input) + " ('" + in.name + "', type " +
                                 in.type_var + ") -> output " + std::to_string(al.output) + " ('" + out.name +
                                 "', type " + out.type_var +
                                 "): the two have different type variables, so their sizes may differ",
                      "give both the same type variable, or remove the alias"});
    }
  }
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    if (op.inputs[i].name.empty()) {
      report.finding({label, "input " + std::to_string(i) + " has an empty name",
                      "name every input (C++: .input_names({...})); the names appear in error messages"});
    }
  }
  if (report.count() == before) {
    report.ok(label + ": definition (" + std::to_string(op.inputs.size()) + " inputs, " +
              std::to_string(op.outputs.size()) + " outputs, " + std::to_string(op.attrs.size()) + " attributes, " +
              std::to_string(op.aliases.size()) + " aliases)");
  }
}

std::string abi_str(uint32_t major, uint32_t minor) { return std::to_string(major) + "." + std::to_string(minor); }

// The ops to check: all, or those named by --op. --attr / --input are for one op, so with them the pack must
// have one op name or --op must say which. Throws UsageError.
std::vector<const OpSchema*> select_ops(const std::vector<OpSchema>& all, const std::string& only,
                                        bool per_op_args) {
  std::vector<const OpSchema*> out;
  std::vector<std::string> names;
  for (const OpSchema& op : all) {
    if (std::find(names.begin(), names.end(), op_name(op)) == names.end()) names.push_back(op_name(op));
    if (only.empty() || op_name(op) == only) out.push_back(&op);
  }
  if (!only.empty() && out.empty()) {
    throw UsageError("--op " + only + ": the pack has no such op (its ops: " +
                     (names.empty() ? std::string("none") : join(names, ", ")) + ")");
  }
  if (only.empty() && per_op_args && names.size() > 1) {
    throw UsageError("--attr and --input are for one op: say which with --op DOMAIN::NAME (the pack has " +
                     join(names, ", ") + ")");
  }
  return out;
}

constexpr const char* kPackCheckUsage =
    "Usage: ophost pack check DIR [--op DOMAIN::NAME [--attr NAME=VALUE ...] [--input NAME=FILE.npy ...]]\n"
    "                            [--samples FILE | --no-samples] [--timeout S] [--seed N] [--no-run]\n\n"
    "Checks the plugin folder DIR (ophost-plugin.json + its library) for its author: the manifest schema,\n"
    "sha256, platform and ABI; the library's exported symbols (only oph_plugin_entry_v1); loading and the\n"
    "handshake; every op definition; and a run of every CPU op, each op in a child process of its own:\n"
    "  - on random inputs of rank 0 to 4 (each allowed dtype of the first input), or on the inputs given\n"
    "    with --input; attributes take their defaults, or the values given with --attr;\n"
    "  - every input and output buffer lies between guard zones: a write before or past a buffer is a finding\n"
    "    (\"compute wrote 4 bytes past the end of output 0 ...\");\n"
    "  - outputs are poisoned before compute (signalling NaN for floats, 0xA5 bytes for other types): an element\n"
    "    compute never writes is a finding (\"output 0 'y': 2 of 8 elements never written (first at index 6)\");\n"
    "  - inputs not declared MUTATES_INPUT must be left unchanged, MAY_INPLACE declarations must hold (the op\n"
    "    run with the output in the input's buffer gives the out-of-place result), allocate_output shapes must\n"
    "    agree with infer, and compute must not fail on inputs infer accepted (\"compute failed: <message>\");\n"
    "  - a crash is reported as \"op X crashed (SIGSEGV) on sample Y\", a child still running after --timeout\n"
    "    seconds is killed and reported; the check goes on with the next op;\n"
    "  - NaN/Inf probe: the first inputs of the op that ran (all finite) run again with NaN, +inf and -inf in\n"
    "    turn at element 0 of each float32/float64 input; a note says what each did to the outputs\n"
    "    (\"NaN/Inf probe at input 0 ('x') [0]: NaN -> y[0] nan; +inf -> y[0] 6; -inf -> y[0] 0\"). It is\n"
    "    information, not a finding: what an op does with NaN is the pack's to choose, and the pack holds its ops\n"
    "    to that with expected outputs in its samples.\n"
    "An op that cannot run without --attr / --input (a required attribute, a host-memory input, shapes its\n"
    "infer rejects) is reported as \"not run\" with the option to pass.\n"
    "Samples: the pack's own attribute values and inputs per op, in DIR/ophost-samples.json (ophost_add_pack's\n"
    "SAMPLES option puts it there; or --samples FILE), are read automatically: an op with samples runs once per\n"
    "sample (a sample without inputs: the generic probes with its attributes). --attr / --input replace the\n"
    "samples of the op they are for. A sample may give the op's expected \"outputs\" (its reference; every input\n"
    "given with values): each element must match, floats within |got - expected| <= atol + rtol * |expected|\n"
    "(defaults: float32 atol 1e-6 rtol 1e-5, float64 1e-12 and 1e-10, float16 1e-3 and 1e-3; a sample's \"atol\"\n"
    "and \"rtol\" replace them), a NaN only a NaN, an infinity only the same infinity, other dtypes exactly; a\n"
    "mismatch is a finding naming the pack, op, sample, output and element. JSON has no NaN or infinity: float\n"
    "\"values\" take the strings \"nan\", \"inf\" and \"-inf\". The format is in docs/writing-a-pack.md\n"
    "(\"Samples for pack check\").\n"
    "--attr values are typed by the op's attribute definition: int, float, string, or lists 1,2,3 / 0.5,1 / a,b.\n"
    "--input NAME is the op's input name or its index (0, 1, ...); inputs not given are random, with the shape\n"
    "of the first one given.\n"
    "Exit status: 0 when clean; 1 with findings or ops not run; 2 for a bad option (an unknown op, attribute\n"
    "or input, a value of the wrong type, an unreadable .npy).\n";

}  // namespace

int cmd_pack_check(int argc, char** argv) {
  // Every line out at once, also when piped: a report cut short still shows what was found before.
  std::cout << std::unitbuf;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::string dir_arg, log_level, only_op;
  std::vector<std::string> attr_args, input_args;
  uint32_t seed = 1;
  double timeout_s = 30;
  bool no_run = false, no_samples = false;
  std::string samples_arg;
  po::options_description visible("Options", 110, 55);
  visible.add_options()("help,h", "show this help")(
      "op", po::value(&only_op), "check only this op (DOMAIN::NAME); needed for --attr / --input when the pack "
                                 "has several")(
      "attr", po::value(&attr_args)->composing(), "NAME=VALUE: attribute value for the run check (repeatable)")(
      "input", po::value(&input_args)->composing(),
      "NAME=FILE.npy: input for the run check, by input name or index (repeatable)")(
      "samples", po::value(&samples_arg),
      "samples file to use instead of DIR/ophost-samples.json (attribute values, inputs and expected outputs per "
      "op)")(
      "no-samples", po::bool_switch(&no_samples), "ignore the pack's samples file: generic probes and defaults only")(
      "timeout", po::value(&timeout_s)->default_value(30), "seconds an op's run check may take before it is killed")(
      "seed", po::value(&seed)->default_value(1), "seed of the random inputs")(
      "no-run", po::bool_switch(&no_run), "skip the run check (definitions only)")(
      "log-level", po::value(&log_level), "log level");
  po::options_description all("All");
  all.add(visible).add_options()("dir", po::value(&dir_arg)->required(), "plugin folder");
  po::positional_options_description pos;
  pos.add("dir", 1);
  po::variables_map vm;
  if (!parse(argc, argv, visible, all, pos, vm, kPackCheckUsage)) return kExitOk;
  if (no_samples && !samples_arg.empty()) {
    std::cerr << "ophost pack check: --samples and --no-samples contradict each other; give one\n";
    return kExitUsage;
  }
  if (!samples_arg.empty() && !fs::is_regular_file(samples_arg)) {
    std::cerr << "ophost pack check: --samples " << samples_arg << ": no such file\n";
    return kExitUsage;
  }
  if (!(timeout_s > 0)) {
    std::cerr << "ophost pack check: --timeout " << timeout_s << ": give a number of seconds above 0\n";
    return kExitUsage;
  }
  std::vector<std::pair<std::string, std::string>> attr_pairs, input_pairs;
  try {
    attr_pairs = split_assignments(attr_args, "--attr");
    input_pairs = split_assignments(input_args, "--input");
  } catch (const UsageError& e) {
    std::cerr << "ophost pack check: " << e.what() << "\n";
    return kExitUsage;
  }
  setup_logging(log_level, "error");
  // A pool without workers, before any plugin code runs: the run checks happen in forked children, where
  // worker threads of the parent would not exist (a parallel_for through the services a pack kept from its
  // entry would wait for them forever).
  set_intra_op_threads(1);
  Report report;
  fs::path dir = dir_arg;
  fs::path manifest_path = dir / kManifestFileName;
  std::cout << "ophost pack check " << dir.string() << " (host ABI " << abi_str(OPH_ABI_MAJOR, OPH_ABI_MINOR)
            << ")\n";

  // 1. Manifest.
  std::optional<Manifest> manifest;
  if (!fs::is_directory(dir)) {
    throw Error(Code::kNotFound, dir.string() + " is not a folder (give the plugin folder, the one that holds " +
                                     kManifestFileName + ")");
  }
  try {
    manifest = read_manifest(manifest_path);
    report.ok("manifest " + manifest_path.string() + ": schema (" + manifest->name + " " + manifest->version + ", " +
              manifest->kind + ")");
  } catch (const Error& e) {
    report.finding({"manifest", e.what(),
                    fs::exists(manifest_path)
                        ? "fix the manifest, or regenerate it from the library with `ophost pack manifest` "
                          "(ophost_add_pack does this after every build)"
                        : "write it with `ophost pack manifest --library LIB --kind operator-pack --out " +
                              manifest_path.string() + "` (ophost_add_pack does this after every build)"});
  }
  fs::path library;
  if (manifest) {
    library = dir / manifest->library;
  } else {
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".so" && library.empty()) library = e.path();
    if (!library.empty()) report.note("checking " + library.string() + " (the only .so in the folder)");
  }
  if (library.empty() || !fs::is_regular_file(library)) {
    report.finding({"library", library.empty() ? "no library found in " + dir.string()
                                               : "the manifest names " + library.string() + ", which does not exist",
                    "put the built library next to the manifest, with the name in its \"library\" field"});
    std::cout << "result: " << report.count() << " finding(s)\n";
    return kExitError;
  }
  if (manifest) {
    bool ok = true;
    std::string sha = sha256_file(library);
    if (sha != manifest->sha256) {
      ok = false;
      report.finding({"manifest", "sha256 of " + library.filename().string() + " is " + sha + " but the manifest says " +
                                      manifest->sha256 + " (the library was rebuilt or replaced)",
                      "regenerate the manifest after every build (`ophost pack manifest`, as ophost_add_pack does); "
                      "do not strip or patch the library afterwards"});
    }
    if (manifest->platform.os != host_os() || manifest->platform.arch != host_arch()) {
      ok = false;
      report.finding({"manifest", "platform " + manifest->platform.os + "/" + manifest->platform.arch +
                                      " but this host is " + host_os() + "/" + host_arch(),
                      "build the pack for " + host_os() + "/" + host_arch()});
    }
    const ManifestAbi& abi = manifest->abi;
    if (abi.major != OPH_ABI_MAJOR) {
      ok = false;
      report.finding({"ABI", "the manifest says ABI major " + std::to_string(abi.major) + " but this host provides " +
                                 abi_str(OPH_ABI_MAJOR, OPH_ABI_MINOR),
                      "rebuild the pack against an SDK of ABI major " + std::to_string(OPH_ABI_MAJOR)});
    } else if (abi.minor_required > OPH_ABI_MINOR) {
      ok = false;
      report.finding({"ABI", "the pack requires ABI " + abi_str(abi.major, abi.minor_required) +
                                 " but this host provides " + abi_str(OPH_ABI_MAJOR, OPH_ABI_MINOR),
                      "lower minor_required to the oldest minor whose features the pack uses, or check with a newer "
                      "ophost"});
    } else if (abi.minor_required > abi.minor_built) {
      ok = false;
      report.finding({"ABI", "minor_required " + std::to_string(abi.minor_required) + " is above minor_built " +
                                 std::to_string(abi.minor_built),
                      "minor_required can be at most the minor the pack was built with"});
    }
    if (ok) {
      report.ok("library " + library.filename().string() + ": sha256 matches, platform " + host_os() + "/" +
                host_arch() + ", ABI " + abi_str(abi.major, abi.minor_built) + " (requires " +
                abi_str(abi.major, abi.minor_required) + ")");
    }
  }

  // 2. Exported symbols and dependencies.
  try {
    ElfDynamicInfo elf = read_elf_dynamic(library);
    std::vector<std::string> extra;
    bool has_entry = false;
    for (const auto& s : elf.exported) {
      if (s == OPH_PLUGIN_ENTRY_SYMBOL) has_entry = true;
      else extra.push_back(s);
    }
    std::sort(extra.begin(), extra.end());
    extra.erase(std::unique(extra.begin(), extra.end()), extra.end());
    if (elf.machine != host_elf_machine()) {
      report.finding({"library", "built for ELF machine " + std::to_string(elf.machine) + ", not this host's (" +
                                     std::to_string(host_elf_machine()) + ")",
                      "build the pack with this platform's compiler"});
    }
    if (!has_entry) {
      report.finding({"symbols", std::string("the library does not export ") + OPH_PLUGIN_ENTRY_SYMBOL,
                      "define the entry once with OPH_PACK(pack) (C++) or OPH_DEFINE_PLUGIN_ENTRY(fn) (C)"});
    }
    if (!extra.empty()) {
      std::vector<std::string> shown(extra.begin(), extra.begin() + static_cast<std::ptrdiff_t>(std::min<size_t>(8, extra.size())));
      report.finding({"symbols", "the library exports " + std::to_string(extra.size()) + " symbol(s) besides " +
                                     OPH_PLUGIN_ENTRY_SYMBOL + ": " + join(shown, ", ") +
                                     (extra.size() > shown.size() ? ", ..." : ""),
                      "build with -fvisibility=hidden and a version script exporting only the entry "
                      "(ophost_add_pack does both); exported symbols can clash with the host's or other packs'"});
    }
    for (const auto& n : elf.needed) {
      if (n.rfind("libophost.so", 0) == 0) {
        report.finding({"symbols", "the library links against " + n,
                        "do not link libophost: everything a plugin needs comes through oph_host_services "
                        "(link only ophost::sdk)"});
      }
    }
    if (has_entry && extra.empty()) {
      report.ok(std::string("exported symbols: ") + OPH_PLUGIN_ENTRY_SYMBOL + " only; needs " +
                (elf.needed.empty() ? std::string("nothing") : join(elf.needed, ", ")));
    }
  } catch (const Error& e) {
    report.finding({"library", e.what(), "give the folder of a Linux shared library built for this platform"});
  }

  // 3. Load, handshake and tables (the loader's own code); without the manifest when it is unusable.
  std::unique_ptr<PluginLibrary> plugin;
  std::string prefix = plugin_message_prefix(manifest ? manifest->name : dir.filename().string(), manifest_path);
  try {
    plugin = PluginLibrary::load(library, manifest_path, manifest ? &*manifest : nullptr, prefix);
    report.ok("loads: handshake, op and device tables valid" +
              std::string(manifest ? ", equal to the manifest's provides" : ""));
  } catch (const Error& e) {
    report.finding({"load", e.what(),
                    "the message says what the loader rejected; after changing the library, rebuild it and "
                    "regenerate the manifest"});
    if (manifest) {
      try {
        plugin = PluginLibrary::load(library, manifest_path, nullptr, prefix);
        report.note("loaded again without comparing against the manifest, to check the ops");
      } catch (const Error&) {
      }
    }
  }
  if (plugin) {
    // Options for the ops first, so that a mistake in them stops the check before anything runs.
    // Each op definition converted once into the host's schema, which every check below reads (the library's
    // tables passed the loader's validate_op_def, which the conversion relies on).
    std::vector<OpSchema> schemas;
    for (const oph_op_def* op : plugin->ops()) schemas.push_back(OpSchema::from_def(*op));
    std::vector<const OpSchema*> ops;
    std::vector<RunSpec> specs;
    try {
      ops = select_ops(schemas, only_op, !attr_pairs.empty() || !input_pairs.empty());
      for (const OpSchema* op : ops) {
        specs.push_back(make_run_spec(*op, attr_pairs, input_pairs));
        specs.back().seed = seed;
        specs.back().timeout_s = timeout_s;
      }
    } catch (const UsageError& e) {
      std::cerr << "ophost pack check: " << e.what() << "\n";
      return kExitUsage;
    }
    // The pack's samples (--attr / --input on the command line replace those of the op they are for).
    std::map<const OpSchema*, std::vector<RunSpec>> samples;
    fs::path samples_file = samples_arg.empty() ? dir / kSamplesFileName : fs::path(samples_arg);
    if (!no_samples && !no_run && fs::exists(samples_file)) {
      samples = read_samples_file(samples_file.string(), schemas, report);
      const std::string pack_name = manifest ? manifest->name : dir.filename().string();
      for (auto& [op, specs_of_op] : samples)
        for (RunSpec& spec : specs_of_op) spec.reference = "pack " + pack_name + ", " + spec.reference;
    }
    const bool command_line_spec = !attr_pairs.empty() || !input_pairs.empty();
    for (size_t k = 0; k < ops.size(); ++k) {
      const OpSchema& op = *ops[k];
      std::string label = op.describe();
      // The loader already ran validate_op_def; run it again in case it is ever relaxed at load time.
      if (std::string e = validate_op_def(op.calls.def); !e.empty()) {
        report.finding({label, e, "fix the op definition"});
        continue;
      }
      check_definition_extras(op, label, report);
      if (no_run) continue;
      if (op.device != "cpu") {
        report.note(label + ": run check skipped (only CPU kernels can be run here)");
        continue;
      }
      auto given = samples.find(&op);
      if (command_line_spec || given == samples.end()) {
        run_check_isolated(op, label, specs[k], report);
        continue;
      }
      for (RunSpec& spec : given->second) {
        spec.seed = seed;
        spec.timeout_s = timeout_s;
        run_check_isolated(op, label + ", " + spec.source, spec, report);
      }
    }
    if (only_op.empty()) {
      for (const oph_device_backend_def* dev : plugin->devices()) {
        report.ok(std::string("device backend '") + dev->device_type + "': definition");
      }
    }
  }

  const std::string not_run = report.not_run_count() == 0
                                  ? ""
                                  : std::to_string(report.not_run_count()) +
                                        " op(s) not run (the notes above say which --attr / --input they need)";
  if (report.count() == 0 && not_run.empty()) {
    std::cout << "result: clean\n";
    return kExitOk;
  }
  if (report.count() == 0) {
    std::cout << "result: incomplete: " << not_run << "\n";
    return kExitError;
  }
  std::cout << "result: " << report.count() << " finding(s)" << (not_run.empty() ? "" : ", " + not_run) << "\n";
  return kExitError;
}

}  // namespace ophost::cli
