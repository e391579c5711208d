// The host's own description of one op, converted once from the pack's C tables (oph_op_def and the arrays it
// points to) where the op enters the host: the registry (OpRegistry::add), `ophost pack check` and the backend
// test host. Registry, session build, placement, shape inference, the memory planner, the executor, the
// isolation proxy, the op runner (op_runner.hpp) and `pack check` read this instead of the C structs, so
// struct_size checks, pointer arrays and NULL strings are dealt with in one place (registry/op_schema.cpp). The
// pattern is Vulkan-Loader's dispatch tables (OpCalls: the entry points read once, replaceable per node by a
// layer such as pack isolation) and ONNX Runtime's KernelDef built from an OrtCustomOp.
//
//   OpSchema s = OpSchema::from_def(*op);      // op: validated (validate_op_def) or made by the host
//   if (auto i = s.attr_index("alpha")) ...    // s.attrs[*i].type, .default_value
//   s.calls.compute(state, ctx);               // the pack's function; s.calls.def is passed back as ctx->op
//
// Lifetime: a schema copies names and dtypes, but its attribute defaults and OpCalls point into the pack, so it
// is valid while the pack is loaded.
#pragma once

#include <ophost/export.hpp>
#include <ophost/ophost_plugin.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ophost {

// The pack's entry points for one op, read once from its definition. `def` is what the host hands back to the
// pack (oph_infer_context::op, oph_kernel_create_args::op); nothing else reads it.
struct OPHOST_API OpCalls {
  const oph_op_def* def = nullptr;
  decltype(oph_op_def::infer) infer = nullptr;
  decltype(oph_op_def::create_kernel) create_kernel = nullptr;  // null: the kernel state is NULL
  decltype(oph_op_def::destroy_kernel) destroy_kernel = nullptr;
  decltype(oph_op_def::compute) compute = nullptr;
  decltype(oph_op_def::kernel_impl) kernel_impl = nullptr;  // null also when a 1.0 pack's def has no such field

  static OpCalls of(const oph_op_def& def) noexcept;
};

// One formal input or output.
struct IoSchema {
  std::string name;
  std::string type_var;            // "T"
  oph_arity arity = OPH_ARITY_SINGLE;
  int32_t min_arity = 1;           // VARIADIC: fewest actual values (at least 1)
  bool host_memory = false;        // inputs: delivered in host memory (OPH_MEMORY_HOST)
  std::vector<oph_dtype> allowed;  // what the type variable allows; empty: any (host-made ops declare none)
};

// One type constraint: a type variable and the dtypes it allows, as the pack declares it.
struct TypeVarSchema {
  std::string name;  // "T"
  std::vector<oph_dtype> allowed;
};

// One attribute. A default's pointers (strings, lists, tensor) point into the pack's static data, valid while
// the pack is loaded.
struct OPHOST_API AttrSchema {
  std::string name;
  oph_attr_type type = OPH_ATTR_UNDEFINED;
  bool required = false;
  std::optional<oph_attr_value> default_value;  // struct_size is this host's; absent: no default

  // "float, default 0.2" / "int, required" / "ints, optional"
  std::string describe() const;
};

struct AliasSchema {
  size_t input = 0;
  size_t output = 0;
  oph_alias_kind kind = OPH_ALIAS_MAY_INPLACE;
};

struct OPHOST_API OpSchema {
  std::string domain;  // normalized ("" = the standard domain)
  std::string name;
  std::string device;  // "cpu", "cuda", ... ("any" for the host's Copy)
  int32_t since_version = 1;
  int32_t end_version = OPH_OPSET_MAX;
  std::string doc;
  std::vector<IoSchema> inputs, outputs;
  std::vector<TypeVarSchema> type_vars;  // in the pack's order (IoSchema::allowed has each formal's)
  std::vector<AttrSchema> attrs;  // in the pack's order: the order of the attribute values a kernel receives
  std::vector<AliasSchema> aliases;
  bool serialize_compute = false;  // OPH_OP_FLAG_SERIALIZE_COMPUTE
  bool allow_fusion = false;       // OPH_OP_FLAG_ALLOW_FUSION
  OpCalls calls;

  // Converts a definition the loader validated (or one the host made itself). NULL strings read as "".
  static OpSchema from_def(const oph_op_def& def);

  bool contains(int64_t opset) const noexcept { return opset >= since_version && opset <= end_version; }
  // "domain::name [since-end] on device" ("ai.onnx" for the standard domain; "[since+]" when open), as
  // describe_op() says it.
  std::string describe() const;
  // The formal input that actual input `actual` binds to (a trailing variadic takes the rest); null when the
  // op declares no inputs.
  const IoSchema* formal_input(size_t actual) const noexcept;
  // The formal of each actual input / output when every variadic formal has its min_arity values and every
  // optional one is present: the fewest values a call can pass (pointers into inputs / outputs).
  std::vector<const IoSchema*> actual_inputs() const;
  std::vector<const IoSchema*> actual_outputs() const;
  // Index of attribute `name` in attrs.
  std::optional<size_t> attr_index(std::string_view name) const noexcept;
  // Every attribute with its type and default, for error messages ("none" when there are none).
  std::string describe_attrs() const;
  // True when the op declares an alias of `kind` from `input` (to `output`, or to any output when unset).
  bool declares(oph_alias_kind kind, size_t input, std::optional<size_t> output = std::nullopt) const noexcept;

  // Attribute resolution, shared by session build and the op runner. `label` starts every message (a node's
  // label, or describe()).
  // The index in attrs of a value given for attribute `name` with type `type` (OPH_ATTR_*). Throws
  // Error(kInvalidArgument) "<label>: unknown attribute 'x'; the op accepts: ..." or "<label>: attribute 'x' is
  // int but the op declares it float (write it as a float, ...)".
  size_t check_attr(std::string_view name, int32_t type, std::string_view label) const;
  // The value attribute `index` has when none is given: its default (pointing into the pack), or an
  // OPH_ATTR_UNDEFINED value when it has none. Throws Error(kInvalidArgument) "<label>: required attribute 'x'
  // (float) is missing" for a required one.
  oph_attr_value attr_default(size_t index, std::string_view label) const;
};

// "float", "ints", ... ("undefined" for anything else): the SDK's names for attribute types.
OPHOST_API const char* attr_type_name(int32_t type) noexcept;

}  // namespace ophost
