// Chrome-trace profile output with ONNX Runtime's field names, and per-op-type totals.
#include "exec/session_impl.hpp"
#include "registry/registry.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <unistd.h>

namespace ophost {

namespace {
nlohmann::json type_shapes(const Session::Impl& s, const std::vector<int>& vals, const ExecPlan& plan) {
  nlohmann::json arr = nlohmann::json::array();
  for (int v : vals) {
    if (v < 0) continue;
    const ValueMeta& m = plan.meta[v];
    nlohmann::json one;
    // ONNX Runtime's type names: float, double, int64, ... (numpy's for the rest).
    std::string t = m.dtype == DType::kFloat32 ? "float" : m.dtype == DType::kFloat64 ? "double" : dtype_name(m.dtype);
    one[t] = m.shape;
    arr.push_back(std::move(one));
  }
  (void)s;
  return arr;
}
}  // namespace

std::vector<OpProfile> Session::write_profile(const std::filesystem::path& file) const {
  const Impl& s = *impl_;
  if (!s.profiling) throw Error(Code::kFailedPrecondition, "profiling is off: load the session with profile = true");
  std::lock_guard lock(s.profile_mutex);
  nlohmann::json events = nlohmann::json::array();
  std::map<std::string, OpProfile> totals;
  const int pid = static_cast<int>(::getpid());
  for (const Impl::ProfileEvent& e : s.profile_events) {
    const PreparedNode& pn = s.nodes[e.node];
    const std::string op_type = pn.node->op_type;
    nlohmann::json ev;
    ev["cat"] = "Node";
    ev["pid"] = pid;
    ev["tid"] = 0;
    ev["dur"] = static_cast<int64_t>(e.dur_us + 0.5);
    ev["ts"] = static_cast<int64_t>(e.ts_us);
    ev["ph"] = "X";
    ev["name"] = pn.node->name + "_kernel_time";
    ev["args"]["op_name"] = op_type;
    ev["args"]["provider"] = pn.entry->source.plugin_name + ":" + pn.schema->device;
    ev["args"]["input_type_shape"] = type_shapes(s, pn.inputs, *e.plan);
    ev["args"]["output_type_shape"] = type_shapes(s, pn.outputs, *e.plan);
    ev["args"]["dur_exact_us"] = e.dur_us;
    events.push_back(std::move(ev));
    OpProfile& t = totals[op_type];
    t.op_type = op_type;
    ++t.calls;
    t.total_us += e.dur_us;
  }
  std::ofstream out(file);
  if (!out) throw Error(Code::kInvalidArgument, "cannot write profile '" + file.string() + "'");
  out << events.dump(1) << "\n";
  if (!out) throw Error(Code::kDataLoss, "writing profile '" + file.string() + "' failed");
  // The implementations each op type's kernels report (KernelInfo), distinct, in node order.
  const std::vector<KernelInfo> kernels = kernel_infos(s);
  for (size_t i = 0; i < kernels.size(); ++i) {
    auto it = totals.find(s.nodes[i].node->op_type);
    const std::string& impl = kernels[i].implementation;
    if (it == totals.end() || impl.empty()) continue;
    std::string& impls = it->second.implementations;
    if (("," + impls + ",").find("," + impl + ",") == std::string::npos) impls += (impls.empty() ? "" : ",") + impl;
  }
  std::vector<OpProfile> result;
  for (auto& [k, v] : totals) result.push_back(v);
  std::sort(result.begin(), result.end(), [](const OpProfile& a, const OpProfile& b) { return a.total_us > b.total_us; });
  return result;
}

}  // namespace ophost
