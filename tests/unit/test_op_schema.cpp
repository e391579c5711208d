// OpSchema: an op definition's C tables converted once into the host's own description (ophost/op_schema.hpp),
// and the registry's refusal of a definition the loader would refuse.
#include "registry/registry.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

namespace ophost {
namespace {

using ::testing::HasSubstr;

oph_status* infer_fn(const oph_infer_context*) { return nullptr; }
oph_status* compute_fn(void*, const oph_compute_context*) { return nullptr; }
oph_status* create_fn(const oph_kernel_create_args*, void** state) {
  *state = nullptr;
  return nullptr;
}
void destroy_fn(void*) {}
const char* impl_fn(void*, bool*) { return "test"; }

// A definition with every table filled: X (T, host memory), variadic Y (U, at least 2); out Z (T), optional W (U);
// attributes alpha (float, default 0.5), mode (string, default "up"), axes (ints, required), extra (ints, no
// default); X may be computed in place into Z, Y mutated; serialized compute.
struct Tables {
  const oph_dtype t_types[2] = {{OPH_DTYPE_FLOAT, 32, 1}, {OPH_DTYPE_FLOAT, 16, 1}};
  const oph_dtype u_types[1] = {{OPH_DTYPE_INT, 64, 1}};
  const oph_type_constraint t{OPH_TYPE_CONSTRAINT_STRUCT_SIZE, "T", t_types, 2};
  const oph_type_constraint u{OPH_TYPE_CONSTRAINT_STRUCT_SIZE, "U", u_types, 1};
  const oph_type_constraint* constraints[2] = {&t, &u};
  const oph_io_def x{OPH_IO_DEF_STRUCT_SIZE, "X", "T", OPH_ARITY_SINGLE, 0, OPH_MEMORY_HOST};
  const oph_io_def y{OPH_IO_DEF_STRUCT_SIZE, "Y", "U", OPH_ARITY_VARIADIC, 2, OPH_MEMORY_DEVICE};
  const oph_io_def z{OPH_IO_DEF_STRUCT_SIZE, "Z", "T", OPH_ARITY_SINGLE, 0, OPH_MEMORY_DEVICE};
  const oph_io_def w{OPH_IO_DEF_STRUCT_SIZE, "W", "U", OPH_ARITY_OPTIONAL, 0, OPH_MEMORY_DEVICE};
  const oph_io_def* inputs[2] = {&x, &y};
  const oph_io_def* outputs[2] = {&z, &w};
  oph_attr_value alpha_default{};
  oph_attr_value mode_default{};
  oph_attr_def alpha{OPH_ATTR_DEF_STRUCT_SIZE, "alpha", OPH_ATTR_FLOAT, false, &alpha_default};
  oph_attr_def mode{OPH_ATTR_DEF_STRUCT_SIZE, "mode", OPH_ATTR_STRING, false, &mode_default};
  const oph_attr_def axes{OPH_ATTR_DEF_STRUCT_SIZE, "axes", OPH_ATTR_INTS, true, nullptr};
  const oph_attr_def extra{OPH_ATTR_DEF_STRUCT_SIZE, "extra", OPH_ATTR_INTS, false, nullptr};
  const oph_attr_def* attrs[4] = {&alpha, &mode, &axes, &extra};
  const oph_alias_def inplace{OPH_ALIAS_DEF_STRUCT_SIZE, 0, 0, OPH_ALIAS_MAY_INPLACE};
  const oph_alias_def mutates{OPH_ALIAS_DEF_STRUCT_SIZE, 1, 1, OPH_ALIAS_MUTATES_INPUT};
  const oph_alias_def* aliases[2] = {&inplace, &mutates};
  oph_op_def def{};

  Tables() {
    alpha_default.struct_size = OPH_ATTR_VALUE_STRUCT_SIZE;
    alpha_default.type = OPH_ATTR_FLOAT;
    alpha_default.f = 0.5f;
    mode_default.struct_size = OPH_ATTR_VALUE_STRUCT_SIZE;
    mode_default.type = OPH_ATTR_STRING;
    mode_default.s = "up";
    mode_default.count = 2;
    def.struct_size = OPH_OP_DEF_STRUCT_SIZE;
    def.domain = "ai.onnx";
    def.name = "Thing";
    def.since_version = 7;
    def.end_version = 12;
    def.device = "cpu";
    def.inputs = inputs;
    def.num_inputs = 2;
    def.outputs = outputs;
    def.num_outputs = 2;
    def.type_constraints = constraints;
    def.num_type_constraints = 2;
    def.attributes = attrs;
    def.num_attributes = 4;
    def.aliases = aliases;
    def.num_aliases = 2;
    def.flags = OPH_OP_FLAG_SERIALIZE_COMPUTE;
    def.infer = infer_fn;
    def.create_kernel = create_fn;
    def.destroy_kernel = destroy_fn;
    def.compute = compute_fn;
    def.doc = "a test op";
    def.kernel_impl = impl_fn;
  }
};

TEST(OpSchema, ConvertsEveryTable) {
  Tables t;
  ASSERT_EQ(validate_op_def(&t.def), "");
  const OpSchema s = OpSchema::from_def(t.def);
  EXPECT_EQ(s.domain, "");  // "ai.onnx" is normalized
  EXPECT_EQ(s.name, "Thing");
  EXPECT_EQ(s.device, "cpu");
  EXPECT_EQ(s.doc, "a test op");
  EXPECT_EQ(s.describe(), "ai.onnx::Thing [7-12] on cpu");
  EXPECT_TRUE(s.contains(7));
  EXPECT_TRUE(s.contains(12));
  EXPECT_FALSE(s.contains(13));

  ASSERT_EQ(s.inputs.size(), 2u);
  EXPECT_EQ(s.inputs[0].name, "X");
  EXPECT_TRUE(s.inputs[0].host_memory);
  ASSERT_EQ(s.inputs[0].allowed.size(), 2u);
  EXPECT_EQ(s.inputs[0].allowed[1].bits, 16);
  EXPECT_EQ(s.inputs[1].arity, OPH_ARITY_VARIADIC);
  EXPECT_EQ(s.inputs[1].min_arity, 2);
  EXPECT_FALSE(s.inputs[1].host_memory);
  EXPECT_EQ(s.inputs[1].allowed.size(), 1u);
  ASSERT_EQ(s.outputs.size(), 2u);
  EXPECT_EQ(s.outputs[1].arity, OPH_ARITY_OPTIONAL);
  EXPECT_EQ(s.outputs[1].type_var, "U");
  // Actual inputs past the last formal bind to the trailing variadic one.
  EXPECT_EQ(s.formal_input(0)->name, "X");
  EXPECT_EQ(s.formal_input(1)->name, "Y");
  EXPECT_EQ(s.formal_input(5)->name, "Y");

  ASSERT_EQ(s.attrs.size(), 4u);
  EXPECT_EQ(s.attr_index("axes"), 2u);
  EXPECT_EQ(s.attr_index("nope"), std::nullopt);
  ASSERT_TRUE(s.attrs[0].default_value.has_value());
  EXPECT_EQ(s.attrs[0].default_value->f, 0.5f);
  EXPECT_EQ(s.attrs[0].default_value->struct_size, OPH_ATTR_VALUE_STRUCT_SIZE);
  EXPECT_TRUE(s.attrs[2].required);
  EXPECT_FALSE(s.attrs[3].default_value.has_value());
  EXPECT_EQ(s.describe_attrs(),
            "alpha (float, default 0.5), mode (string, default 'up'), axes (ints, required), extra (ints, optional)");

  EXPECT_TRUE(s.declares(OPH_ALIAS_MAY_INPLACE, 0, 0));
  EXPECT_FALSE(s.declares(OPH_ALIAS_MAY_INPLACE, 0, 1));
  EXPECT_TRUE(s.declares(OPH_ALIAS_MUTATES_INPUT, 1));
  EXPECT_FALSE(s.declares(OPH_ALIAS_MUTATES_INPUT, 0));
  EXPECT_TRUE(s.serialize_compute);
  EXPECT_FALSE(s.allow_fusion);

  EXPECT_EQ(s.calls.def, &t.def);
  EXPECT_EQ(s.calls.infer, &infer_fn);
  EXPECT_EQ(s.calls.create_kernel, &create_fn);
  EXPECT_EQ(s.calls.destroy_kernel, &destroy_fn);
  EXPECT_EQ(s.calls.compute, &compute_fn);
  EXPECT_EQ(s.calls.kernel_impl, &impl_fn);
}

TEST(OpSchema, TypeVariablesAndActualValues) {
  Tables t;
  const OpSchema s = OpSchema::from_def(t.def);
  ASSERT_EQ(s.type_vars.size(), 2u);  // in the pack's order
  EXPECT_EQ(s.type_vars[0].name, "T");
  EXPECT_EQ(s.type_vars[0].allowed.size(), 2u);
  EXPECT_EQ(s.type_vars[1].name, "U");
  EXPECT_EQ(s.type_vars[1].allowed[0].bits, 64);
  // The fewest values a call passes: variadic Y twice (its min_arity), optional W once.
  std::vector<std::string> ins, outs;
  for (const IoSchema* io : s.actual_inputs()) ins.push_back(io->name);
  for (const IoSchema* io : s.actual_outputs()) outs.push_back(io->name);
  EXPECT_EQ(ins, (std::vector<std::string>{"X", "Y", "Y"}));
  EXPECT_EQ(outs, (std::vector<std::string>{"Z", "W"}));
  EXPECT_EQ(s.actual_inputs()[1], &s.inputs[1]);
}

TEST(OpSchema, AttributeChecksNameTheLabelAndTheAttribute) {
  Tables t;
  const OpSchema s = OpSchema::from_def(t.def);
  EXPECT_EQ(s.check_attr("axes", OPH_ATTR_INTS, "node 'n'"), 2u);
  auto message = [&](auto f) {
    try {
      f();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Code::kInvalidArgument);
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(message([&] { s.check_attr("beta", OPH_ATTR_FLOAT, "node 'n'"); }),
            "node 'n': unknown attribute 'beta'; the op accepts: alpha (float, default 0.5), mode (string, default "
            "'up'), axes (ints, required), extra (ints, optional)");
  EXPECT_EQ(message([&] { s.check_attr("alpha", OPH_ATTR_INT, "node 'n'"); }),
            "node 'n': attribute 'alpha' is int but the op declares it float (write it as a float, e.g. 2.0 instead "
            "of 2)");
  EXPECT_EQ(message([&] { s.attr_default(2, "node 'n'"); }), "node 'n': required attribute 'axes' (ints) is missing");
  const oph_attr_value alpha = s.attr_default(0, "node 'n'");
  EXPECT_EQ(alpha.f, 0.5f);
  EXPECT_EQ(alpha.struct_size, OPH_ATTR_VALUE_STRUCT_SIZE);
  const oph_attr_value extra = s.attr_default(3, "node 'n'");  // no default: the kernel sees UNDEFINED
  EXPECT_EQ(extra.type, OPH_ATTR_UNDEFINED);
  EXPECT_EQ(extra.struct_size, OPH_ATTR_VALUE_STRUCT_SIZE);
}

TEST(OpSchema, PackOfAbi10HasNoKernelImpl) {
  Tables t;
  t.def.struct_size = OPH_OP_DEF_STRUCT_SIZE_1_0;  // kernel_impl lies past the pack's struct: never read
  EXPECT_EQ(OpSchema::from_def(t.def).calls.kernel_impl, nullptr);
}

TEST(OpSchema, DefaultOfAnOlderOrNewerMinorIsReadUpToItsSize) {
  Tables t;
  struct Longer {
    oph_attr_value v;
    int64_t appended;
  } longer{};
  longer.v = t.alpha_default;
  longer.v.struct_size = sizeof longer;  // a newer minor's value, with a field this host does not know
  t.alpha.default_value = &longer.v;
  const OpSchema s = OpSchema::from_def(t.def);
  EXPECT_EQ(s.attrs[0].default_value->struct_size, OPH_ATTR_VALUE_STRUCT_SIZE);
  EXPECT_EQ(s.attrs[0].default_value->f, 0.5f);
}

TEST(OpSchema, AttrTypeNamesAreTheSdks) {
  EXPECT_STREQ(attr_type_name(OPH_ATTR_FLOATS), "floats");
  EXPECT_STREQ(attr_type_name(OPH_ATTR_TENSOR), "tensor");
  EXPECT_STREQ(attr_type_name(42), "undefined");
}

TEST(OpSchema, RegistryRefusesADefinitionTheLoaderWouldRefuse) {
  Tables t;
  const oph_io_def bad{OPH_IO_DEF_STRUCT_SIZE, "X", "V", OPH_ARITY_SINGLE, 0, OPH_MEMORY_DEVICE};
  t.inputs[0] = &bad;  // type variable V: no constraint defines it
  OpRegistry reg;
  try {
    reg.add(OpSource{"mypack", "/p/mypack/ophost-plugin.json", nullptr}, &t.def);
    FAIL() << "an invalid definition was registered";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kInvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("plugin 'mypack' (/p/mypack/ophost-plugin.json): op ai.onnx::Thing [7-12] on "
                                    "cpu: inputs[0] ('X') uses type variable 'V', which no type constraint defines"));
  }
  EXPECT_EQ(reg.size(), 0u);
}

TEST(OpSchema, CopiesOfTheRegistryShareOneSchemaPerOp) {
  Tables t;
  OpRegistry reg;
  reg.add(OpSource{"mypack", "", nullptr}, &t.def);
  const OpRegistry copy = reg;
  EXPECT_EQ(copy.resolve("", "Thing", 8, "cpu")->schema.get(), reg.resolve("", "Thing", 8, "cpu")->schema.get());
}

}  // namespace
}  // namespace ophost
