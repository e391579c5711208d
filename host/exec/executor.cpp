// Sequential execution of a prepared session: nodes run in order through the C ABI; a value's buffer is
// released as soon as its last consumer has finished.
#include "exec/session_impl.hpp"

#include <ophost/services.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>

namespace ophost {

namespace {

struct RunState {
  std::vector<Tensor> values;
  std::vector<oph_tensor> out_views;
  const std::vector<ValueMeta>* meta = nullptr;
  const std::vector<int>* out_values = nullptr;  // value index of each output of the running node
};

oph_status* allocate_output_cb(const oph_compute_context* ctx, size_t index, int32_t ndim, const int64_t* shape) {
  auto* st = static_cast<RunState*>(ctx->host_data);
  if (index >= st->out_values->size() || (*st->out_values)[index] < 0) {
    return make_status(Code::kOutOfRange, "allocate_output: output " + std::to_string(index) + " does not exist");
  }
  if (ndim < 0 || ndim > OPH_MAX_NDIM || (ndim > 0 && !shape)) {
    return make_status(Code::kInvalidArgument, "allocate_output: bad rank " + std::to_string(ndim));
  }
  try {
    int v = (*st->out_values)[index];
    std::vector<int64_t> dims(shape, shape + ndim);
    const ValueMeta& m = (*st->meta)[v];
    if (m.rank_known && m.shape.size() != dims.size()) {
      return make_status(Code::kInvalidArgument, "allocate_output: output " + std::to_string(index) + " has rank " +
                                                     std::to_string(ndim) + " but infer() said " +
                                                     std::to_string(m.shape.size()));
    }
    st->values[v] = Tensor(m.dtype, std::move(dims));
    st->out_views[index] = st->values[v].view();
    return nullptr;
  } catch (const std::exception& e) {
    return make_status(Code::kResourceExhausted, std::string("allocate_output: ") + e.what());
  }
}

void check_input(const ModelValueInfo& info, const Tensor& t) {
  if (info.dtype != DType::kUndefined && t.dtype() != info.dtype) {
    throw Error(Code::kInvalidArgument, "input '" + info.name + "' is " + dtype_name(t.dtype()) +
                                            " but the model expects " + dtype_name(info.dtype));
  }
  if (!info.has_shape) return;  // rank not declared: anything goes
  if (info.shape.size() != t.shape().size()) {
    throw Error(Code::kInvalidArgument, "input '" + info.name + "' has rank " + std::to_string(t.shape().size()) +
                                            " (shape " + shape_to_string(t.shape()) + ") but the model expects " +
                                            shape_to_string(info.shape));
  }
  for (size_t k = 0; k < info.shape.size(); ++k) {
    if (info.shape[k] >= 0 && info.shape[k] != t.shape()[k]) {
      throw Error(Code::kInvalidArgument, "input '" + info.name + "' has shape " + shape_to_string(t.shape()) +
                                              " but the model expects " + shape_to_string(info.shape) +
                                              " (dimension " + std::to_string(k) + ")");
    }
  }
}

}  // namespace

std::vector<NamedTensor> Session::Impl::run(const std::vector<NamedTensor>& inputs) {
  // Bind inputs by name: each graph input exactly once, nothing extra.
  std::vector<const Tensor*> bound(input_values.size(), nullptr);
  for (const NamedTensor& nt : inputs) {
    auto it = std::find_if(input_infos.begin(), input_infos.end(),
                           [&](const ValueInfo& v) { return v.name == nt.name; });
    if (it == input_infos.end()) {
      std::string names;
      for (const ValueInfo& v : input_infos) names += (names.empty() ? "" : ", ") + v.name;
      throw Error(Code::kInvalidArgument, "unknown input '" + nt.name + "'; the model's inputs are: " + names);
    }
    size_t i = static_cast<size_t>(it - input_infos.begin());
    if (bound[i]) throw Error(Code::kInvalidArgument, "input '" + nt.name + "' given more than once");
    check_input(model.inputs[i], nt.tensor);
    bound[i] = &nt.tensor;
  }
  for (size_t i = 0; i < bound.size(); ++i) {
    if (!bound[i]) throw Error(Code::kInvalidArgument, "missing input '" + input_infos[i].name + "'");
  }

  // Shapes: the static plan when the model's input shapes were fully declared, else infer for these shapes.
  std::shared_ptr<const ShapePlan> dynamic;
  const std::vector<ValueMeta>* meta = &static_plan.values;
  if (!static_plan_complete) {
    std::vector<std::vector<int64_t>> key;
    for (const Tensor* t : bound) key.emplace_back(t->shape().begin(), t->shape().end());
    {
      std::lock_guard lock(plan_mutex);
      dynamic = last_dynamic_plan;
    }
    if (!dynamic || dynamic->input_shapes != key) {
      auto plan = std::make_shared<ShapePlan>();
      std::vector<ValueMeta> in_meta;
      for (const Tensor* t : bound) {
        ValueMeta vm;
        vm.dtype = t->dtype();
        vm.rank_known = true;
        vm.shape.assign(t->shape().begin(), t->shape().end());
        in_meta.push_back(std::move(vm));
      }
      plan->values = infer_all(in_meta);
      plan->input_shapes = std::move(key);
      dynamic = plan;
      std::lock_guard lock(plan_mutex);
      last_dynamic_plan = plan;
    }
    meta = &dynamic->values;
  }

  RunState st;
  st.values.resize(values.size());
  st.meta = meta;
  std::vector<int> remaining(values.size(), 0);
  for (size_t v = 0; v < values.size(); ++v) remaining[v] = static_cast<int>(values[v].consumers.size());

  std::vector<oph_tensor> in_views;
  std::vector<const oph_tensor*> in_ptrs;
  std::vector<oph_tensor*> out_ptrs;
  for (size_t ni = 0; ni < nodes.size(); ++ni) {
    const PreparedNode& pn = nodes[ni];
    in_views.assign(pn.inputs.size(), oph_tensor{});
    in_ptrs.assign(pn.inputs.size(), nullptr);
    for (size_t i = 0; i < pn.inputs.size(); ++i) {
      int v = pn.inputs[i];
      if (v < 0) continue;
      const ValueSlot& slot = values[v];
      const Tensor* t = slot.constant                ? slot.constant
                        : slot.graph_input >= 0      ? bound[slot.graph_input]
                                                     : &st.values[v];
      if (t->empty()) {
        throw Error(Code::kInternal, pn.label + ": input '" + slot.name + "' was released or never produced");
      }
      in_views[i] = t->view();
      in_ptrs[i] = &in_views[i];
    }
    st.out_views.assign(pn.outputs.size(), oph_tensor{});
    out_ptrs.assign(pn.outputs.size(), nullptr);
    for (size_t o = 0; o < pn.outputs.size(); ++o) {
      int v = pn.outputs[o];
      if (v < 0) continue;
      const ValueMeta& m = (*meta)[v];
      if (m.fully_known()) {
        st.values[v] = Tensor(m.dtype, m.shape);
        st.out_views[o] = st.values[v].view();
      } else {
        st.out_views[o] = oph_tensor{};
        st.out_views[o].dtype = to_dl(m.dtype);
        st.out_views[o].device = {OPH_DL_CPU, 0};
      }
      out_ptrs[o] = &st.out_views[o];
    }
    st.out_values = &pn.outputs;
    oph_compute_context ctx{};
    ctx.struct_size = sizeof(ctx);
    ctx.services = host_services();
    ctx.num_inputs = in_ptrs.size();
    ctx.inputs = in_ptrs.data();
    ctx.num_outputs = out_ptrs.size();
    ctx.outputs = out_ptrs.data();
    ctx.device = {OPH_DL_CPU, 0};
    ctx.allocate_output = &allocate_output_cb;
    ctx.host_data = &st;
    throw_if_error(pn.op->compute(pn.state, &ctx), pn.label);
    for (size_t o = 0; o < pn.outputs.size(); ++o) {
      int v = pn.outputs[o];
      if (v >= 0 && st.values[v].empty()) {
        throw Error(Code::kInternal, pn.label + ": the kernel did not produce output " + std::to_string(o) + " '" +
                                         values[v].name + "' (call allocate_output for data-dependent shapes)");
      }
    }
    // Release every value whose last consumer just finished.
    for (int v : pn.inputs) {
      if (v < 0) continue;
      if (--remaining[v] == 0 && !values[v].graph_output && values[v].producer >= 0) st.values[v] = Tensor();
    }
    for (int v : pn.outputs) {
      if (v >= 0 && remaining[v] == 0 && !values[v].graph_output) st.values[v] = Tensor();
    }
  }

  std::vector<NamedTensor> out;
  out.reserve(output_values.size());
  for (size_t o = 0; o < output_values.size(); ++o) {
    int v = output_values[o];
    const ValueSlot& slot = values[v];
    Tensor t = slot.constant ? slot.constant->clone()
               : slot.graph_input >= 0 ? bound[slot.graph_input]->clone()
                                       : st.values[v];
    out.push_back({output_infos[o].name, std::move(t)});
  }
  return out;
}

}  // namespace ophost
