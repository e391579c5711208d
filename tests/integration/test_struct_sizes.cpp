// Every producer writes struct_size as the end of the struct's last field (OPH_STRUCT_SIZE, published as the
// OPH_*_STRUCT_SIZE constants), never sizeof: sizeof counts tail padding, where a field appended by a later
// minor would land and look present. Checked on every real plugin of this build (the C++ layer's packs, the C
// device backends) and on the host's own services; the structs the host hands to an op are checked by the fake
// plugin's echo op (tests/fake_plugin), which fails when one of them has another size.
#include "integration_support.hpp"

#include "plugins/plugin_set.hpp"

#include <ophost/services.hpp>

#include <gtest/gtest.h>

#include <string>

namespace ophost {
namespace {

static_assert(OPH_IO_DEF_STRUCT_SIZE == OPH_STRUCT_SIZE(oph_io_def, memory));
static_assert(OPH_IO_DEF_STRUCT_SIZE < sizeof(oph_io_def), "the case this rule exists for: tail padding");
static_assert(OPH_ALIAS_DEF_STRUCT_SIZE == OPH_STRUCT_SIZE(oph_alias_def, kind));
static_assert(OPH_ALIAS_DEF_STRUCT_SIZE < sizeof(oph_alias_def));
static_assert(OPH_OP_DEF_STRUCT_SIZE == OPH_STRUCT_SIZE(oph_op_def, kernel_impl));

void check_op(const oph_op_def* op, const std::string& plugin) {
  std::string where = plugin + ": " + (op->domain ? op->domain : "") + "::" + (op->name ? op->name : "?");
  EXPECT_EQ(op->struct_size, OPH_OP_DEF_STRUCT_SIZE) << where;
  for (size_t i = 0; i < op->num_inputs; ++i) EXPECT_EQ(op->inputs[i]->struct_size, OPH_IO_DEF_STRUCT_SIZE) << where;
  for (size_t i = 0; i < op->num_outputs; ++i)
    EXPECT_EQ(op->outputs[i]->struct_size, OPH_IO_DEF_STRUCT_SIZE) << where;
  for (size_t i = 0; i < op->num_type_constraints; ++i)
    EXPECT_EQ(op->type_constraints[i]->struct_size, OPH_TYPE_CONSTRAINT_STRUCT_SIZE) << where;
  for (size_t i = 0; i < op->num_attributes; ++i) {
    const oph_attr_def* a = op->attributes[i];
    EXPECT_EQ(a->struct_size, OPH_ATTR_DEF_STRUCT_SIZE) << where << " attribute " << a->name;
    if (a->default_value)
      EXPECT_EQ(a->default_value->struct_size, OPH_ATTR_VALUE_STRUCT_SIZE) << where << " default of " << a->name;
  }
  for (size_t i = 0; i < op->num_aliases; ++i)
    EXPECT_EQ(op->aliases[i]->struct_size, OPH_ALIAS_DEF_STRUCT_SIZE) << where;
}

TEST(StructSize, EveryProducerWritesTheEndOfTheLastField) {
  DiscoveryOptions opt;
  opt.plugin_paths = {itest::kPluginDir};
  opt.use_env_plugin_path = false;
  opt.use_default_plugin_dir = false;
  opt.insecure_plugin_paths = true;  // the build tree, not an installed root
  PluginSet set = PluginSet::discover(opt);
  ASSERT_FALSE(set.loaded().empty());
  size_t ops = 0, devices = 0;
  for (const auto& p : set.loaded()) {
    const std::string name = p->info()->name;
    EXPECT_EQ(p->info()->struct_size, OPH_PLUGIN_INFO_STRUCT_SIZE) << name;
    for (const oph_op_def* op : p->ops()) {
      check_op(op, name);
      ++ops;
    }
    for (const oph_device_backend_def* d : p->devices()) {
      EXPECT_EQ(d->struct_size, OPH_DEVICE_BACKEND_DEF_STRUCT_SIZE) << name;
      ++devices;
    }
  }
  EXPECT_GT(ops, 100u) << "onnx-core (the C++ layer) is among the plugins checked";
  EXPECT_GE(devices, 1u) << "the CPU backend (C ABI by hand) is among the plugins checked";
  EXPECT_EQ(host_services()->struct_size, OPH_HOST_SERVICES_STRUCT_SIZE);
}

}  // namespace
}  // namespace ophost
