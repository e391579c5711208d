// Shape inference over a session's graph: every node's own infer through the C ABI (control flow through its
// bodies), in execution order, from the graph inputs' shapes.
#include "exec/abi_calls.hpp"
#include "exec/control_flow.hpp"
#include "exec/session_build.hpp"
#include "registry/registry.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace ophost {

oph_value_info to_value_info(const ValueMeta& meta, const Tensor* constant, oph_tensor* constant_view) {
  oph_value_info v{};
  v.struct_size = OPH_VALUE_INFO_STRUCT_SIZE;
  v.present = true;
  v.dtype = to_dl(meta.dtype);
  v.ndim = meta.rank_known ? static_cast<int32_t>(meta.shape.size()) : -1;
  for (size_t k = 0; k < meta.shape.size() && k < OPH_MAX_NDIM; ++k) v.shape[k] = meta.shape[k];
  if (constant && constant_view) {
    *constant_view = constant->view();
    v.constant = constant_view;
  }
  return v;
}

std::vector<ValueMeta> Session::Impl::infer_all(const std::vector<ValueMeta>& graph_inputs) const {
  std::vector<ValueMeta> meta(values.size());
  for (size_t v = 0; v < values.size(); ++v) {
    const ValueSlot& slot = values[v];
    if (slot.constant) {
      meta[v].dtype = slot.constant->dtype();
      meta[v].rank_known = true;
      meta[v].shape.assign(slot.constant->shape().begin(), slot.constant->shape().end());
    } else if (slot.graph_input >= 0) {
      meta[v] = graph_inputs[slot.graph_input];
    }
  }
  std::vector<oph_value_info> in_infos, out_infos;
  std::vector<const oph_value_info*> in_ptrs;
  std::vector<oph_value_info*> out_ptrs;
  std::vector<const oph_attr_value*> attr_ptrs;
  std::vector<oph_tensor> const_views;
  for (const PreparedNode& pn : nodes) {
    if (pn.control) {  // If/Loop/Scan: shapes through the bodies
      std::vector<const ValueMeta*> ins;
      for (int v : pn.inputs) {
        if (v >= 0 && meta[v].dtype == DType::kUndefined) {
          throw Error(Code::kInvalidArgument, pn.label + ": the element type of input '" + values[v].name +
                                                  "' is unknown; declare it in the model's graph inputs");
        }
        ins.push_back(v < 0 ? nullptr : &meta[v]);
      }
      std::vector<ValueMeta> outs = pn.control->infer(ins);
      for (size_t o = 0; o < pn.outputs.size(); ++o) {
        int v = pn.outputs[o];
        if (v < 0) continue;
        meta[v] = std::move(outs[o]);
        check_tensor_size(meta[v].dtype, meta[v].shape, model.limits, pn.label + ": output '" + values[v].name + "'");
      }
      continue;
    }
    const OpSchema& op = *pn.schema;
    in_infos.assign(pn.inputs.size(), oph_value_info{});
    const_views.assign(pn.inputs.size(), oph_tensor{});
    // Type constraints: every actual value must have an allowed dtype, one dtype per type variable.
    std::map<std::string, std::pair<DType, size_t>> bound;
    for (size_t i = 0; i < pn.inputs.size(); ++i) {
      int v = pn.inputs[i];
      if (v < 0) {
        in_infos[i].struct_size = OPH_VALUE_INFO_STRUCT_SIZE;
        in_infos[i].present = false;
        continue;
      }
      const ValueMeta& m = meta[v];
      if (m.dtype == DType::kUndefined) {
        throw Error(Code::kInvalidArgument, pn.label + ": the element type of input '" + values[v].name +
                                                "' is unknown; declare it in the model's graph inputs");
      }
      in_infos[i] = to_value_info(m, values[v].constant, &const_views[i]);
      const IoSchema* d = op.formal_input(i);
      if (!d || d->allowed.empty()) continue;
      const oph_dtype dl = to_dl(m.dtype);
      const bool ok = std::any_of(d->allowed.begin(), d->allowed.end(), [&](const oph_dtype& x) {
        return x.code == dl.code && x.bits == dl.bits && x.lanes == dl.lanes;
      });
      if (!ok) {
        std::string allowed;
        for (const oph_dtype& x : d->allowed)
          allowed += (allowed.empty() ? "" : ", ") + std::string(dtype_name(from_dl(x)));
        throw Error(Code::kInvalidArgument, pn.label + ": input " + std::to_string(i) + " '" + values[v].name +
                                                "' is " + dtype_name(m.dtype) + " but the op accepts " + allowed +
                                                " for " + d->type_var);
      }
      auto [it, fresh] = bound.emplace(d->type_var, std::make_pair(m.dtype, i));
      if (!fresh && it->second.first != m.dtype) {
        throw Error(Code::kInvalidArgument,
                    pn.label + ": input " + std::to_string(i) + " '" + values[v].name + "' is " +
                        dtype_name(m.dtype) + " but type " + d->type_var + " is already " +
                        dtype_name(it->second.first) + " from input " + std::to_string(it->second.second) +
                        "; insert a Cast");
      }
    }
    out_infos.assign(pn.outputs.size(), oph_value_info{});
    for (size_t o = 0; o < pn.outputs.size(); ++o) {
      out_infos[o].struct_size = OPH_VALUE_INFO_STRUCT_SIZE;
      out_infos[o].present = pn.outputs[o] >= 0;
      out_infos[o].ndim = -2;  // sentinel: infer must set it
    }
    pointers_to(in_infos, in_ptrs);
    pointers_to(out_infos, out_ptrs);
    pointers_to(pn.attrs.values, attr_ptrs);
    const oph_infer_context ic = infer_context(pn.calls->def, in_ptrs, out_ptrs, attr_ptrs, pn.node->name.c_str());
    throw_if_error(pn.calls->infer(&ic), pn.label + ": shape inference failed");
    for (size_t o = 0; o < pn.outputs.size(); ++o) {
      int v = pn.outputs[o];
      if (v < 0) continue;
      const oph_value_info& oi = out_infos[o];
      DType dt = from_dl(oi.dtype);
      if (oi.ndim == -2 || dt == DType::kUndefined) {
        throw Error(Code::kInternal, pn.label + ": the pack's infer() did not set output " + std::to_string(o) +
                                         " (dtype and shape); this is a bug in pack '" + pn.entry->source.plugin_name + "'");
      }
      if (oi.ndim > OPH_MAX_NDIM) {
        throw Error(Code::kInternal, pn.label + ": infer() returned rank " + std::to_string(oi.ndim) +
                                         " above OPH_MAX_NDIM");
      }
      ValueMeta& m = meta[v];
      m.dtype = dt;
      m.rank_known = oi.ndim >= 0;
      m.shape.assign(oi.shape, oi.shape + std::max(0, oi.ndim));
      for (int64_t& d : m.shape)
        if (d < 0) d = OPH_DIM_UNKNOWN;
      check_tensor_size(m.dtype, m.shape, model.limits, pn.label + ": output '" + values[v].name + "'");
      spdlog::trace("infer {}: output '{}' {} {}", pn.label, values[v].name, dtype_name(m.dtype), dims_string(m));
    }
  }
  return meta;
}

}  // namespace ophost
