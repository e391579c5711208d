// OpSchema from a pack's oph_op_def: the only place in the host that walks an op definition's C arrays (besides
// the loader's validation, plugins/plugin_tables.cpp).
#include <ophost/op_schema.hpp>

#include <ophost/error.hpp>
#include <ophost/manifest.hpp>
#include <ophost/pack.hpp>
#include <ophost/sdk/attrs.hpp>

#include <algorithm>
#include <cstring>
#include <sstream>

namespace ophost {

namespace {

std::string str(const char* s) { return s ? std::string(s) : std::string(); }

// The `count` pointers of a C array of pointers (none when base is NULL).
template <class T>
std::vector<const T*> items(const T* const* base, size_t count) {
  if (base == nullptr) return {};
  return {base, base + count};
}

IoSchema io_schema(const oph_io_def& d, const oph_op_def& def) {
  IoSchema io;
  io.name = str(d.name);
  io.type_var = str(d.type_var);
  io.arity = static_cast<oph_arity>(d.arity);
  io.min_arity = std::max(1, d.min_arity);
  io.host_memory = d.memory == OPH_MEMORY_HOST;
  for (const oph_type_constraint* tc : items(def.type_constraints, def.num_type_constraints)) {
    if (tc->type_var == nullptr || io.type_var != tc->type_var || tc->allowed == nullptr) continue;
    io.allowed.assign(tc->allowed, tc->allowed + tc->num_allowed);
  }
  return io;
}

AttrSchema attr_schema(const oph_attr_def& d) {
  AttrSchema a;
  a.name = str(d.name);
  a.type = static_cast<oph_attr_type>(d.type);
  a.required = d.required;
  if (d.default_value != nullptr) {
    // A pack's value may be shorter (an older minor) or longer (a newer one) than this host's struct.
    oph_attr_value v{};
    std::memcpy(&v, d.default_value, std::min(d.default_value->struct_size, sizeof v));
    v.struct_size = OPH_ATTR_VALUE_STRUCT_SIZE;
    a.default_value = v;
  }
  return a;
}

}  // namespace

const char* attr_type_name(int32_t type) noexcept { return sdk::attr_type_name(type); }

OpCalls OpCalls::of(const oph_op_def& def) noexcept {
  OpCalls c;
  c.def = &def;
  c.infer = def.infer;
  c.create_kernel = def.create_kernel;
  c.destroy_kernel = def.destroy_kernel;
  c.compute = def.compute;
  if (OPH_HAS_FIELD(oph_op_def, &def, kernel_impl)) c.kernel_impl = def.kernel_impl;
  return c;
}

OpSchema OpSchema::from_def(const oph_op_def& def) {
  OpSchema s;
  s.domain = normalize_domain(str(def.domain));
  s.name = str(def.name);
  s.device = str(def.device);
  s.since_version = def.since_version;
  s.end_version = def.end_version;
  s.doc = str(def.doc);
  for (const oph_io_def* d : items(def.inputs, def.num_inputs)) s.inputs.push_back(io_schema(*d, def));
  for (const oph_io_def* d : items(def.outputs, def.num_outputs)) s.outputs.push_back(io_schema(*d, def));
  for (const oph_type_constraint* tc : items(def.type_constraints, def.num_type_constraints)) {
    TypeVarSchema& t = s.type_vars.emplace_back();
    t.name = str(tc->type_var);
    if (tc->allowed != nullptr) t.allowed.assign(tc->allowed, tc->allowed + tc->num_allowed);
  }
  for (const oph_attr_def* d : items(def.attributes, def.num_attributes)) s.attrs.push_back(attr_schema(*d));
  for (const oph_alias_def* d : items(def.aliases, def.num_aliases)) {
    if (d->input_index < 0 || d->output_index < 0) continue;  // the loader refuses these; host-made ops have none
    s.aliases.push_back({static_cast<size_t>(d->input_index), static_cast<size_t>(d->output_index),
                         static_cast<oph_alias_kind>(d->kind)});
  }
  s.serialize_compute = (def.flags & OPH_OP_FLAG_SERIALIZE_COMPUTE) != 0;
  s.allow_fusion = (def.flags & OPH_OP_FLAG_ALLOW_FUSION) != 0;
  s.calls = OpCalls::of(def);
  return s;
}

std::string OpSchema::describe() const {
  return describe_op(ManifestOp{domain, name, since_version, end_version, device});
}

const IoSchema* OpSchema::formal_input(size_t actual) const noexcept {
  if (inputs.empty()) return nullptr;
  return &inputs[std::min(actual, inputs.size() - 1)];
}

namespace {

std::vector<const IoSchema*> expand(const std::vector<IoSchema>& formals) {
  std::vector<const IoSchema*> out;
  for (const IoSchema& io : formals)
    out.insert(out.end(), io.arity == OPH_ARITY_VARIADIC ? static_cast<size_t>(std::max(1, io.min_arity)) : 1, &io);
  return out;
}

}  // namespace

std::vector<const IoSchema*> OpSchema::actual_inputs() const { return expand(inputs); }
std::vector<const IoSchema*> OpSchema::actual_outputs() const { return expand(outputs); }

std::optional<size_t> OpSchema::attr_index(std::string_view attr) const noexcept {
  for (size_t i = 0; i < attrs.size(); ++i)
    if (attrs[i].name == attr) return i;
  return std::nullopt;
}

std::string AttrSchema::describe() const {
  std::string out = std::string(attr_type_name(type)) + ", ";
  if (required) return out + "required";
  if (!default_value) return out + "optional";
  const oph_attr_value& v = *default_value;
  switch (v.type) {
    case OPH_ATTR_FLOAT: {
      std::ostringstream s;
      s << "default " << v.f;
      return out + s.str();
    }
    case OPH_ATTR_INT: return out + "default " + std::to_string(v.i);
    case OPH_ATTR_STRING: return out + "default '" + std::string(v.s ? v.s : "", v.count) + "'";
    case OPH_ATTR_UNDEFINED: return out + "optional";
    default: return out + "has default";
  }
}

std::string OpSchema::describe_attrs() const {
  if (attrs.empty()) return "none";
  std::string out;
  for (size_t i = 0; i < attrs.size(); ++i) out += (i ? ", " : "") + attrs[i].name + " (" + attrs[i].describe() + ")";
  return out;
}

bool OpSchema::declares(oph_alias_kind kind, size_t input, std::optional<size_t> output) const noexcept {
  return std::any_of(aliases.begin(), aliases.end(), [&](const AliasSchema& a) {
    return a.kind == kind && a.input == input && (!output || a.output == *output);
  });
}

size_t OpSchema::check_attr(std::string_view attr, int32_t type, std::string_view label) const {
  const std::optional<size_t> found = attr_index(attr);
  if (!found) {
    throw Error(Code::kInvalidArgument, std::string(label) + ": unknown attribute '" + std::string(attr) +
                                            "'; the op accepts: " + describe_attrs());
  }
  const AttrSchema& d = attrs[*found];
  if (type != d.type) {
    std::string hint;
    if (d.type == OPH_ATTR_FLOAT && type == OPH_ATTR_INT) hint = " (write it as a float, e.g. 2.0 instead of 2)";
    throw Error(Code::kInvalidArgument, std::string(label) + ": attribute '" + std::string(attr) + "' is " +
                                            attr_type_name(type) + " but the op declares it " +
                                            attr_type_name(d.type) + hint);
  }
  return *found;
}

oph_attr_value OpSchema::attr_default(size_t index, std::string_view label) const {
  const AttrSchema& d = attrs.at(index);
  if (d.required) {
    throw Error(Code::kInvalidArgument, std::string(label) + ": required attribute '" + d.name + "' (" +
                                            attr_type_name(d.type) + ") is missing");
  }
  // The default (pointing into the pack's static data, valid while it is loaded), or none: the kernel sees
  // OPH_ATTR_UNDEFINED.
  oph_attr_value v = d.default_value.value_or(oph_attr_value{});
  v.struct_size = OPH_ATTR_VALUE_STRUCT_SIZE;
  return v;
}

}  // namespace ophost
