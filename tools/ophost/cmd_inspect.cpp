// ophost inspect MODEL: what the model holds, how it resolves, and its memory plan.
#include "common.hpp"

#include <iostream>
#include <map>

namespace ophost::cli {

int cmd_inspect(int argc, char** argv) {
  CommonOptions common;
  std::string model;
  std::vector<std::string> shapes;
  bool memory = false, kernels = false, fail_on_reference = false;
  po::options_description visible("Options", 110, 55);
  visible.add_options()("help,h", "show this help")("memory", po::bool_switch(&memory),
                                                    "print the static memory plan: planned peak vs lower bound, and each value that runs in place (in "
                                                    "the buffer of its node's input, MAY_INPLACE)")(
      "kernels", po::bool_switch(&kernels),
      "run the model once on deterministic random inputs (as run --random), then list every node's pack, device "
      "and the implementation its kernel chose (e.g. oneDNN's jit_dw:avx2); REFERENCE marks slow fallback code")(
      "fail-on-reference", po::bool_switch(&fail_on_reference),
      "with --kernels: exit 1 when any node runs a reference implementation")(
      "shape", po::value(&shapes)->composing(),
      "NAME=D0,D1,...: shape of an input with unknown dims (for --memory and --kernels)");
  add_common_options(visible, common);
  po::options_description all;
  all.add(visible).add_options()("model", po::value(&model));
  po::positional_options_description pos;
  pos.add("model", 1);
  po::variables_map vm;
  if (!parse(argc, argv, visible, all, pos, vm,
             "Usage: ophost inspect MODEL [--memory] [--kernels] [--shape NAME=D0,D1,...]\n\n"
             "Loads MODEL (resolving every node against the loaded packs) and prints its inputs, outputs and\n"
             "node count; with --memory, the static memory plan's arena size beside the lower bound (the\n"
             "largest total of live bytes at any step) and each value that runs in place: the output of a node\n"
             "that may write into its input's buffer (MAY_INPLACE) when that input has no later reader; with\n"
             "--kernels, the implementation each node runs (kernels may choose at their first run, so it runs\n"
             "the model once first).\n")) {
    return kExitOk;
  }
  if (model.empty()) throw po::error("missing MODEL");
  setup_logging(common.log_level, "warn");
  Runtime runtime(runtime_options(common));
  auto session = runtime.load(model, session_options(common));
  std::cout << "model: " << model << "\n";
  for (const ValueInfo& v : session->inputs())
    std::cout << "input  " << v.name << ": " << dtype_name(v.dtype) << " " << shape_to_string(v.shape) << "\n";
  for (const ValueInfo& v : session->overridable_initializers())
    std::cout << "input  " << v.name << ": " << dtype_name(v.dtype) << " " << shape_to_string(v.shape)
              << " (overridable initializer: the model's value unless --input gives one)\n";
  for (const ValueInfo& v : session->outputs())
    std::cout << "output " << v.name << ": " << dtype_name(v.dtype) << " " << shape_to_string(v.shape) << "\n";
  std::cout << "nodes: " << session->node_count() << " (Constant nodes folded at load not counted)\n";
  std::cout << "placement:";
  for (const auto& [dev, n] : session->nodes_per_device()) std::cout << " " << n << " on " << dev << ",";
  std::cout << " " << session->copy_count() << " Copy nodes at device boundaries\n";
  if (memory) {
    // Feed shapes: declared ones, overridden by --shape; every dim must be known.
    std::vector<NamedTensor> feeds = prepare_inputs(*session, {}, true, shapes, common.max_tensor_bytes);
    std::vector<std::vector<int64_t>> in_shapes;
    for (const ValueInfo& in : session->inputs())
      for (const NamedTensor& f : feeds)
        if (f.name == in.name) in_shapes.emplace_back(f.tensor.shape().begin(), f.tensor.shape().end());
    MemoryPlanReport p = session->memory_plan(in_shapes);
    if (!p.planned) {
      std::cout << "memory: not planned statically (some shape is only known while running)\n";
    } else {
      double ratio = p.lower_bound ? double(p.arena_bytes) / double(p.lower_bound) : 1.0;
      std::printf("memory: planned peak %zu bytes, lower bound %zu bytes, ratio %.3f; %zu values in the arena, "
                  "%zu in place\n",
                  p.arena_bytes, p.lower_bound, ratio, p.values, p.inplace);
      for (const InplaceValue& v : p.inplace_values) {
        std::printf("  in place: '%s' in the buffer of '%s' (node '%s', %s)\n", v.value.c_str(), v.input.c_str(),
                    v.node.c_str(), v.op.c_str());
      }
    }
  }
  if (kernels) {
    std::vector<NamedTensor> feeds = prepare_inputs(*session, {}, true, shapes, common.max_tensor_bytes);
    session->run(feeds);
    size_t reference = 0, known = 0;
    std::printf("kernels (after one run):\n  %-32s %-24s %-12s %-6s %s\n", "node", "op", "pack", "device",
                "implementation");
    const std::vector<KernelInfo> infos = session->kernels();
    for (const KernelInfo& k : infos) {
      known += !k.implementation.empty();
      reference += k.reference;
      std::printf("  %-32s %-24s %-12s %-6s %s%s\n", k.node.c_str(), k.op.c_str(), k.pack.c_str(), k.device.c_str(),
                  k.implementation.empty() ? "-" : k.implementation.c_str(), k.reference ? "  REFERENCE" : "");
    }
    std::printf("kernels: %zu nodes, %zu report their implementation, %zu run reference code\n",
                infos.size(), known, reference);
    if (fail_on_reference && reference > 0) {
      std::fprintf(stderr, "error: %s: %zu node(s) run reference code (listed above with REFERENCE)\n",
                   model.c_str(), reference);
      return 1;
    }
  } else if (fail_on_reference) {
    throw po::error("--fail-on-reference needs --kernels");
  }
  return kExitOk;
}

}  // namespace ophost::cli
