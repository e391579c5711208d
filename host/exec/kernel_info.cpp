// Which implementation each node's kernel runs (oph_op_def.kernel_impl, ABI 1.1), and the load-time warning
// about nodes that run reference code.
#include "exec/session_impl.hpp"
#include "registry/registry.hpp"

#include <spdlog/spdlog.h>

namespace ophost {

std::vector<KernelInfo> kernel_infos(const Session::Impl& s) {
  std::vector<KernelInfo> out;
  out.reserve(s.nodes.size());
  for (const PreparedNode& pn : s.nodes) {
    KernelInfo k;
    k.node = pn.node->name;
    k.op = pn.node->domain.empty() ? pn.node->op_type : pn.node->domain + "::" + pn.node->op_type;
    k.pack = pn.entry ? pn.entry->source.plugin_name : std::string();
    k.device = pn.device;
    if (pn.state != nullptr && pn.calls->kernel_impl != nullptr) {
      bool reference = false;
      if (const char* impl = pn.calls->kernel_impl(pn.state, &reference); impl != nullptr) {
        k.implementation = impl;
        k.reference = reference;
      }
    }
    out.push_back(std::move(k));
  }
  return out;
}

void warn_reference_kernels(const Session::Impl& s, const std::string& file) {
  for (const KernelInfo& k : kernel_infos(s)) {
    if (!k.reference) continue;
    spdlog::warn("{}: node '{}' ({}) from pack '{}' runs a reference implementation ({}): correct but typically "
                 "10-100x slower than a tuned kernel on this CPU; `ophost inspect --kernels` lists every node",
                 file, k.node, k.op, k.pack, k.implementation);
  }
}

}  // namespace ophost
