// Validation and description of the plugin's boundary tables (op definitions, device backends).
#include "plugins/plugin_set.hpp"

#include <cstring>
#include <set>
#include <string>

namespace ophost {

namespace {

// The smallest struct_size accepted for each table struct: what a producer of ABI 1.0 writes. Until a minor
// appends a field to a struct this is its public OPH_*_STRUCT_SIZE; the static_asserts fail when a minor moves
// a constant, so that its 1.0 minimum is then pinned here (as oph_op_def's, which 1.1 grew by kernel_impl).
constexpr size_t kOpDefV10 = OPH_OP_DEF_STRUCT_SIZE_1_0;
constexpr size_t kIoDefV10 = OPH_IO_DEF_STRUCT_SIZE;
constexpr size_t kTypeConstraintV10 = OPH_TYPE_CONSTRAINT_STRUCT_SIZE;
constexpr size_t kAttrDefV10 = OPH_ATTR_DEF_STRUCT_SIZE;
constexpr size_t kAttrValueV10 = OPH_ATTR_VALUE_STRUCT_SIZE;
constexpr size_t kAliasDefV10 = OPH_ALIAS_DEF_STRUCT_SIZE;
constexpr size_t kDeviceDefV10 = OPH_DEVICE_BACKEND_DEF_STRUCT_SIZE;
static_assert(kIoDefV10 == OPH_STRUCT_SIZE(oph_io_def, memory), "oph_io_def grew: pin its 1.0 size here");
static_assert(kTypeConstraintV10 == OPH_STRUCT_SIZE(oph_type_constraint, num_allowed),
              "oph_type_constraint grew: pin its 1.0 size here");
static_assert(kAttrDefV10 == OPH_STRUCT_SIZE(oph_attr_def, default_value), "oph_attr_def grew: pin its 1.0 size here");
static_assert(kAttrValueV10 == OPH_STRUCT_SIZE(oph_attr_value, count), "oph_attr_value grew: pin its 1.0 size here");
static_assert(kAliasDefV10 == OPH_STRUCT_SIZE(oph_alias_def, kind), "oph_alias_def grew: pin its 1.0 size here");
static_assert(kDeviceDefV10 == OPH_STRUCT_SIZE(oph_device_backend_def, event_elapsed_ms),
              "oph_device_backend_def grew: pin its 1.0 size here");

// Larger than any plausible boundary struct: a struct_size above this is garbage (uninitialized memory).
constexpr size_t kMaxStructSize = 1u << 16;

bool nonempty(const char* s) { return s != nullptr && s[0] != '\0'; }

std::string str(const char* s) { return s ? std::string(s) : std::string("<null>"); }

bool valid_attr_type(int32_t t) {
  switch (t) {
    case OPH_ATTR_FLOAT: case OPH_ATTR_INT: case OPH_ATTR_STRING: case OPH_ATTR_TENSOR:
    case OPH_ATTR_FLOATS: case OPH_ATTR_INTS: case OPH_ATTR_STRINGS:
      return true;
    default:
      return false;
  }
}

// Checks an array of pointers to boundary structs: no NULL entry, every element's struct_size between the ABI
// 1.0 size and kMaxStructSize. Returns "" or the problem.
template <typename T>
std::string check_array(const T* const* base, size_t count, size_t min_size, const char* what) {
  if (count == 0) return "";
  if (base == nullptr) return std::string(what) + " is NULL but its count is " + std::to_string(count);
  for (size_t i = 0; i < count; ++i) {
    std::string where = std::string(what) + "[" + std::to_string(i) + "]";
    if (base[i] == nullptr) return where + " is NULL";
    if (base[i]->struct_size < min_size || base[i]->struct_size > kMaxStructSize) {
      return where + "->struct_size is " + std::to_string(base[i]->struct_size) + "; ABI 1.0 needs at least " +
             std::to_string(min_size) + " (was the struct initialized with its OPH_*_STRUCT_SIZE constant?)";
    }
  }
  return "";
}

}  // namespace

std::string describe_op(const oph_op_def& op) {
  ManifestOp m;
  m.domain = normalize_domain(op.domain ? op.domain : "");
  m.name = str(op.name);
  m.since_version = op.since_version;
  m.end_version = op.end_version;
  m.device = str(op.device);
  return describe_op(m);
}

std::string describe_op(const ManifestOp& op) {
  std::string out = (op.domain.empty() ? std::string("ai.onnx") : op.domain) + "::" + op.name + " [" +
                    std::to_string(op.since_version);
  if (op.end_version == OPH_OPSET_MAX) {
    out += "+]";
  } else {
    out += "-" + std::to_string(op.end_version) + "]";
  }
  return out + " on " + op.device;
}

std::string validate_op_def(const oph_op_def* op) {
  if (op == nullptr) return "entry is NULL";
  if (op->struct_size < kOpDefV10 || op->struct_size > kMaxStructSize) {
    return "struct_size is " + std::to_string(op->struct_size) + "; ABI 1.0 needs at least " +
           std::to_string(kOpDefV10);
  }
  if (op->domain == nullptr) return "domain is NULL (use \"\" for the standard domain)";
  if (!nonempty(op->name)) return "name is empty";
  if (op->since_version < 1) return "since_version is " + std::to_string(op->since_version) + "; it must be >= 1";
  if (op->end_version < op->since_version) {
    return "end_version " + std::to_string(op->end_version) + " is below since_version " +
           std::to_string(op->since_version) + " (use OPH_OPSET_MAX for an open range)";
  }
  if (!nonempty(op->device)) return "device is empty (e.g. \"cpu\")";
  if (op->infer == nullptr) return "infer is NULL (shape inference is required)";
  if (op->compute == nullptr) return "compute is NULL";

  if (auto e = check_array(op->inputs, op->num_inputs, kIoDefV10, "inputs"); !e.empty()) return e;
  if (auto e = check_array(op->outputs, op->num_outputs, kIoDefV10, "outputs"); !e.empty()) return e;
  if (auto e = check_array(op->type_constraints, op->num_type_constraints, kTypeConstraintV10, "type_constraints");
      !e.empty()) {
    return e;
  }
  if (auto e = check_array(op->attributes, op->num_attributes, kAttrDefV10, "attributes"); !e.empty()) return e;
  if (auto e = check_array(op->aliases, op->num_aliases, kAliasDefV10, "aliases"); !e.empty()) return e;

  std::set<std::string> type_vars;
  for (size_t i = 0; i < op->num_type_constraints; ++i) {
    const oph_type_constraint* tc = op->type_constraints[i];
    std::string where = "type_constraints[" + std::to_string(i) + "]";
    if (!nonempty(tc->type_var)) return where + ".type_var is empty";
    if (!type_vars.insert(tc->type_var).second) return where + ": type variable '" + str(tc->type_var) + "' twice";
    if (tc->num_allowed == 0) return where + " ('" + str(tc->type_var) + "') allows no type";
    if (tc->allowed == nullptr) return where + ".allowed is NULL but num_allowed is " + std::to_string(tc->num_allowed);
  }

  auto check_io = [&](const oph_io_def* const* ios, size_t n, const char* what, bool is_input) -> std::string {
    for (size_t i = 0; i < n; ++i) {
      const oph_io_def* io = ios[i];
      std::string where = std::string(what) + "[" + std::to_string(i) + "]";
      if (io->name == nullptr) return where + ".name is NULL";
      if (!nonempty(io->type_var)) return where + " ('" + str(io->name) + "') has no type variable";
      if (!type_vars.count(io->type_var)) {
        return where + " ('" + str(io->name) + "') uses type variable '" + io->type_var +
               "', which no type constraint defines";
      }
      if (io->arity < OPH_ARITY_SINGLE || io->arity > OPH_ARITY_VARIADIC) {
        return where + " ('" + str(io->name) + "') has invalid arity " + std::to_string(io->arity);
      }
      if (io->arity == OPH_ARITY_VARIADIC && io->min_arity < 1) {
        return where + " ('" + str(io->name) + "') is variadic with min_arity " + std::to_string(io->min_arity) +
               "; it must be >= 1";
      }
      if (is_input && io->memory != OPH_MEMORY_DEVICE && io->memory != OPH_MEMORY_HOST) {
        return where + " ('" + str(io->name) + "') has invalid memory kind " + std::to_string(io->memory);
      }
    }
    return "";
  };
  if (auto e = check_io(op->inputs, op->num_inputs, "inputs", true); !e.empty()) return e;
  if (auto e = check_io(op->outputs, op->num_outputs, "outputs", false); !e.empty()) return e;

  std::set<std::string> attr_names;
  for (size_t i = 0; i < op->num_attributes; ++i) {
    const oph_attr_def* a = op->attributes[i];
    std::string where = "attributes[" + std::to_string(i) + "]";
    if (!nonempty(a->name)) return where + ".name is empty";
    where += " ('" + std::string(a->name) + "')";
    if (!attr_names.insert(a->name).second) return where + " is declared twice";
    if (!valid_attr_type(a->type)) return where + " has invalid type " + std::to_string(a->type);
    const oph_attr_value* dv = a->default_value;
    if (dv != nullptr && (dv->struct_size < kAttrValueV10 || dv->struct_size > kMaxStructSize)) {
      return where + ": the default value's struct_size is " + std::to_string(dv->struct_size) +
             "; ABI 1.0 needs at least " + std::to_string(kAttrValueV10);
    }
    if (a->required && dv != nullptr) return where + " is required but has a default value";
    if (dv != nullptr && dv->type != a->type) {
      return where + " has type " + std::to_string(a->type) + " but its default value has type " +
             std::to_string(dv->type);
    }
    if (dv != nullptr) {
      const oph_attr_value& v = *dv;
      int32_t dt = v.type;
      bool ok = true;
      switch (dt) {
        case OPH_ATTR_STRING: ok = v.s != nullptr; break;
        case OPH_ATTR_TENSOR: ok = v.tensor != nullptr; break;
        case OPH_ATTR_FLOATS: ok = v.count == 0 || v.floats != nullptr; break;
        case OPH_ATTR_INTS: ok = v.count == 0 || v.ints != nullptr; break;
        case OPH_ATTR_STRINGS: ok = v.count == 0 || v.strings != nullptr; break;
        default: break;
      }
      if (!ok) return where + ": the default value's data pointer is NULL";
    }
  }

  for (size_t i = 0; i < op->num_aliases; ++i) {
    const oph_alias_def* al = op->aliases[i];
    std::string where = "aliases[" + std::to_string(i) + "]";
    if (al->input_index < 0 || static_cast<size_t>(al->input_index) >= op->num_inputs) {
      return where + ".input_index " + std::to_string(al->input_index) + " is out of range (the op has " +
             std::to_string(op->num_inputs) + " inputs)";
    }
    if (al->output_index < 0 || static_cast<size_t>(al->output_index) >= op->num_outputs) {
      return where + ".output_index " + std::to_string(al->output_index) + " is out of range (the op has " +
             std::to_string(op->num_outputs) + " outputs)";
    }
    if (al->kind != OPH_ALIAS_MAY_INPLACE && al->kind != OPH_ALIAS_MUTATES_INPUT) {
      return where + " has invalid kind " + std::to_string(al->kind);
    }
  }
  return "";
}

std::string validate_device_def(const oph_device_backend_def* dev) {
  if (dev == nullptr) return "entry is NULL";
  if (dev->struct_size < kDeviceDefV10 || dev->struct_size > kMaxStructSize) {
    return "struct_size is " + std::to_string(dev->struct_size) + "; ABI 1.0 needs at least " +
           std::to_string(kDeviceDefV10);
  }
  if (!nonempty(dev->device_type)) return "device_type is empty";
  if (dev->enumerate == nullptr) return "enumerate is NULL";
  if (dev->get_properties == nullptr) return "get_properties is NULL";
  if (dev->alloc == nullptr) return "alloc is NULL";
  if (dev->free == nullptr) return "free is NULL";
  if (dev->copy == nullptr) return "copy is NULL";
  return "";
}

}  // namespace ophost
