// A node checked against its op's schema while the session is built: arity, attributes resolved in schema
// order with their defaults and types, and Constant nodes turned into values.
#include "exec/session_build.hpp"

#include <ophost/error.hpp>

#include <optional>

namespace ophost {

void check_arity(const PreparedNode& pn, bool outputs) {
  const std::vector<IoSchema>& formals = outputs ? pn.schema->outputs : pn.schema->inputs;
  const size_t nformal = formals.size();
  const std::vector<std::string>& actual = outputs ? pn.node->outputs : pn.node->inputs;
  const char* what = outputs ? "output" : "input";
  size_t max_actual = nformal;
  bool variadic = nformal > 0 && formals.back().arity == OPH_ARITY_VARIADIC;
  if (variadic) max_actual = SIZE_MAX;
  if (actual.size() > max_actual) {
    throw Error(Code::kInvalidArgument,
                pn.label + ": has " + std::to_string(actual.size()) + " " + what + "s but the op takes at most " +
                    std::to_string(nformal) + "; remove the extra " + what + "s or check the op's version");
  }
  for (size_t f = 0; f < nformal; ++f) {
    const IoSchema& d = formals[f];
    if (d.arity == OPH_ARITY_OPTIONAL) continue;
    if (d.arity == OPH_ARITY_VARIADIC) {
      size_t have = 0;
      for (size_t k = f; k < actual.size(); ++k) have += actual[k].empty() ? 0 : 1;
      if (have < static_cast<size_t>(d.min_arity)) {
        throw Error(Code::kInvalidArgument, pn.label + ": variadic " + what + " '" + d.name + "' needs at least " +
                                                std::to_string(d.min_arity) + " values, got " + std::to_string(have));
      }
      continue;
    }
    if (outputs) continue;  // a model may leave a required output unnamed only if nobody reads it
    if (f >= actual.size() || actual[f].empty()) {
      throw Error(Code::kInvalidArgument, pn.label + ": required input " + std::to_string(f) + " '" + d.name +
                                              "' is missing; the model must provide it");
    }
  }
}

void resolve_attrs(PreparedNode& pn) {
  const OpSchema& op = *pn.schema;
  const Node& n = *pn.node;
  ResolvedAttrs& ra = pn.attrs;
  ra.values.resize(op.attrs.size());
  ra.string_lists.resize(op.attrs.size());
  ra.tensors.resize(op.attrs.size());
  std::vector<bool> seen(op.attrs.size(), false);
  for (const Attribute& a : n.attributes) {
    const size_t idx = op.check_attr(a.name, a.type, pn.label);
    seen[idx] = true;
    oph_attr_value& v = ra.values[idx];
    v = {};
    v.struct_size = OPH_ATTR_VALUE_STRUCT_SIZE;
    v.type = a.type;
    switch (a.type) {
      case OPH_ATTR_FLOAT: v.f = a.f; break;
      case OPH_ATTR_INT: v.i = a.i; break;
      case OPH_ATTR_STRING: v.s = a.s.c_str(); v.count = a.s.size(); break;
      case OPH_ATTR_FLOATS: v.floats = a.floats.data(); v.count = a.floats.size(); break;
      case OPH_ATTR_INTS: v.ints = a.ints.data(); v.count = a.ints.size(); break;
      case OPH_ATTR_STRINGS:
        for (const std::string& s : a.strings) ra.string_lists[idx].push_back(s.c_str());
        v.strings = ra.string_lists[idx].data();
        v.count = a.strings.size();
        break;
      case OPH_ATTR_TENSOR:
        ra.tensors[idx] = a.t.view();
        v.tensor = &ra.tensors[idx];
        break;
      default:
        throw Error(Code::kUnimplemented, pn.label + ": attribute '" + a.name + "' has an unsupported type");
    }
  }
  for (size_t i = 0; i < op.attrs.size(); ++i)
    if (!seen[i]) ra.values[i] = op.attr_default(i, pn.label);
}

// The value of a standard-domain Constant node, or nothing when the node is not a plain Constant.
std::optional<Tensor> constant_node_value(const Node& n, const std::string& file) {
  if (!n.domain.empty() || n.op_type != "Constant" || !n.inputs.empty() || n.outputs.size() != 1 ||
      n.attributes.size() != 1) {
    return std::nullopt;
  }
  const Attribute& a = n.attributes[0];
  if (a.name == "value" && a.type == OPH_ATTR_TENSOR) return a.t.clone();
  if (a.name == "value_float" && a.type == OPH_ATTR_FLOAT) {
    Tensor t(DType::kFloat32, {});
    *t.data_as<float>() = a.f;
    return t;
  }
  if (a.name == "value_int" && a.type == OPH_ATTR_INT) {
    Tensor t(DType::kInt64, {});
    *t.data_as<int64_t>() = a.i;
    return t;
  }
  if (a.name == "value_floats" && a.type == OPH_ATTR_FLOATS) {
    Tensor t(DType::kFloat32, {static_cast<int64_t>(a.floats.size())});
    std::copy(a.floats.begin(), a.floats.end(), t.data_as<float>());
    return t;
  }
  if (a.name == "value_ints" && a.type == OPH_ATTR_INTS) {
    Tensor t(DType::kInt64, {static_cast<int64_t>(a.ints.size())});
    std::copy(a.ints.begin(), a.ints.end(), t.data_as<int64_t>());
    return t;
  }
  (void)file;
  return std::nullopt;  // other forms (strings, sparse) go through the op registry like any node
}

std::string dims_string(const ValueMeta& m) {
  if (!m.rank_known) return "[?]";
  return shape_to_string(m.shape);
}

}  // namespace ophost
