// What conv-activation-fusion's parts share (conv_fusion.cpp, conv_activation_patterns.cpp).
#pragma once

#include "passes/passes.hpp"

#include <set>
#include <string>
#include <vector>

namespace ophost::passes {

// A FusedConv that conv-add-fusion wrote (input Z, no activation, no output affine yet).
inline bool is_bare_fused_conv(const Node& n) {
  if (n.domain != kFusedDomain || n.op_type != kFusedConv) return false;
  for (const Attribute& a : n.attributes)
    if (a.name == "activation" || a.name == "activation_params" || a.name == "output_scale" || a.name == "output_shift")
      return false;
  return true;
}

// `conv` (a Conv, or a FusedConv without an activation) becomes FusedConv(activation[, activation_params])
// writing `output`, the value the activation's last node wrote.
inline void become_fused_conv(Model& m, Node& conv, const std::string& activation,
                              const std::vector<float>& params, const std::string& output) {
  conv.domain = kFusedDomain;
  conv.op_type = kFusedConv;
  Attribute a;
  a.name = "activation";
  a.type = OPH_ATTR_STRING;
  a.s = activation;
  conv.attributes.push_back(a);
  if (!params.empty()) {
    Attribute p;
    p.name = "activation_params";
    p.type = OPH_ATTR_FLOATS;
    p.floats = params;
    conv.attributes.push_back(p);
  }
  conv.outputs[0] = output;
  m.opset_imports[kFusedDomain] = 1;
}


// Activations exporters write out as several nodes after a Conv, each chain rewritten to one FusedConv; both
// add the indices of the nodes they replace to `removed` (the caller erases them) and return the number fused.
// HardSwish: x * Clip(x + 3, 0, 6) / 6 (or * 1/6).
size_t fuse_decomposed_hardswish(Model& m, const PassHooks& hooks, std::set<size_t>& removed);
// SiLU/Swish: x * Sigmoid(x) (activation Swish).
size_t fuse_decomposed_swish(Model& m, const PassHooks& hooks, std::set<size_t>& removed);

}  // namespace ophost::passes
