// The operator registry: resolution by (domain, name, opset, device), conflicts, overrides and hints.
#include "registry/registry.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ophost {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

oph_status* dummy_infer(const oph_infer_context*) { return nullptr; }
oph_status* dummy_compute(void*, const oph_compute_context*) { return nullptr; }

oph_op_def make_op(const char* domain, const char* name, int32_t since, int32_t end, const char* device) {
  oph_op_def op{};
  op.struct_size = OPH_OP_DEF_STRUCT_SIZE;
  op.domain = domain;
  op.name = name;
  op.since_version = since;
  op.end_version = end;
  op.device = device;
  op.infer = dummy_infer;
  op.compute = dummy_compute;
  return op;
}

const OpSource kCore{"onnx-core", "/p/onnx-core/ophost-plugin.json", nullptr};
const OpSource kMy{"myops", "/p/myops/ophost-plugin.json", nullptr};
const OpSource kOther{"otherops", "/q/otherops/ophost-plugin.json", nullptr};

TEST(Registry, ResolvesByOpsetRangeAndDevice) {
  auto relu6 = make_op("", "Relu", 6, 13, "cpu");
  auto relu14 = make_op("ai.onnx", "Relu", 14, OPH_OPSET_MAX, "cpu");
  auto relu_cuda = make_op("", "Relu", 6, OPH_OPSET_MAX, "cuda");
  OpRegistry reg;
  reg.add(kCore, &relu6);
  reg.add(kCore, &relu14);  // adjacent ranges: no conflict
  reg.add(kMy, &relu_cuda);
  EXPECT_EQ(reg.size(), 3u);

  EXPECT_EQ(reg.resolve("", "Relu", 6, "cpu")->schema->calls.def, &relu6);
  EXPECT_EQ(reg.resolve("ai.onnx", "Relu", 13, "cpu")->schema->calls.def, &relu6);  // "ai.onnx" is the standard domain
  EXPECT_EQ(reg.resolve("", "Relu", 14, "cpu")->schema->calls.def, &relu14);
  EXPECT_EQ(reg.resolve("", "Relu", 21, "cpu")->schema->calls.def, &relu14);
  EXPECT_EQ(reg.resolve("", "Relu", 5, "cpu"), nullptr);
  EXPECT_EQ(reg.resolve("", "Relu", 7, "cuda")->source.plugin_name, "myops");
  EXPECT_EQ(reg.resolve("", "Relu", 7, "hip"), nullptr);
  EXPECT_EQ(reg.resolve("", "relu", 7, "cpu"), nullptr);  // case-sensitive
  EXPECT_EQ(reg.resolve("", "Relu", 14, "cpu")->schema->domain, "");
  EXPECT_EQ(reg.resolve("", "Relu", 14, "cpu")->describe(), "ai.onnx::Relu [14+] on cpu");

  EXPECT_EQ(reg.candidates("ai.onnx", "Relu").size(), 3u);
  EXPECT_THAT(reg.candidates("other", "Relu"), IsEmpty());
  EXPECT_EQ(reg.devices_for("", "Relu", 10), (std::vector<std::string>{"cpu", "cuda"}));
  EXPECT_EQ(reg.devices_for("", "Relu", 3), std::vector<std::string>{});
}

TEST(Registry, OverlapBetweenPacksIsAnErrorNamingBoth) {
  auto a = make_op("myops", "gelu", 1, 10, "cpu");
  auto b = make_op("myops", "gelu", 5, OPH_OPSET_MAX, "cpu");
  auto c = make_op("myops", "gelu", 5, OPH_OPSET_MAX, "cuda");  // other device: fine
  OpRegistry reg;
  reg.add(kMy, &a);
  reg.add(kOther, &c);
  try {
    reg.add(kOther, &b);
    FAIL() << "overlap not detected";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kAlreadyExists);
    EXPECT_THAT(e.what(), HasSubstr("op myops::gelu on cpu is served by plugin 'myops' (/p/myops/ophost-plugin.json) "
                                    "for opsets [1-10] and by plugin 'otherops' (/q/otherops/ophost-plugin.json) "
                                    "for opsets [5+]"));
  }
  EXPECT_EQ(reg.size(), 2u);  // the conflicting entry was not added
}

TEST(Registry, ExplicitOverrideLetsTheLaterPackWinWhereRangesOverlap) {
  auto a = make_op("myops", "gelu", 1, 10, "cpu");
  auto b = make_op("myops", "gelu", 5, OPH_OPSET_MAX, "cpu");
  OpRegistry reg;
  reg.add(kMy, &a);
  reg.add(kOther, &b, /*allow_override=*/true);
  EXPECT_EQ(reg.resolve("myops", "gelu", 3, "cpu")->schema->calls.def, &a);   // only the first serves opset 3
  EXPECT_EQ(reg.resolve("myops", "gelu", 7, "cpu")->schema->calls.def, &b);   // overlap: the later wins
  EXPECT_EQ(reg.resolve("myops", "gelu", 50, "cpu")->schema->calls.def, &b);
}

TEST(Registry, EntryPointersStayValidAcrossAdds) {
  OpRegistry reg;
  std::vector<oph_op_def> ops;
  ops.reserve(100);
  for (int i = 0; i < 100; ++i) ops.push_back(make_op("d", "op", i + 1, i + 1, "cpu"));
  reg.add(kMy, &ops[0]);
  const OpEntry* first = reg.resolve("d", "op", 1, "cpu");
  for (int i = 1; i < 100; ++i) reg.add(kMy, &ops[i]);
  EXPECT_EQ(reg.resolve("d", "op", 1, "cpu"), first);
  EXPECT_EQ(reg.resolve("d", "op", 100, "cpu")->schema->calls.def, &ops[99]);
}

TEST(Registry, HintsArePhrasedAsFixes) {
  auto relu = make_op("", "Relu", 14, OPH_OPSET_MAX, "cpu");
  auto relu6 = make_op("myops", "relu6_scale", 1, 3, "cpu");
  auto relu6_cuda = make_op("myops", "relu6_scale", 1, OPH_OPSET_MAX, "cuda");
  auto gelu = make_op("com.microsoft", "Gelu", 1, OPH_OPSET_MAX, "cpu");
  OpRegistry reg;
  reg.add(kCore, &relu);
  reg.add(kMy, &relu6);
  reg.add(kMy, &relu6_cuda);
  reg.add(kOther, &gelu);

  // Other opset ranges for the same op.
  std::string h = reg.hint("", "Relu", 13, "cpu");
  EXPECT_THAT(h, HasSubstr("ai.onnx::Relu on cpu exists for opsets [14+] (plugin 'onnx-core'), not opset 13"));
  EXPECT_THAT(h, HasSubstr("change the model's opset_import for domain 'ai.onnx'"));

  // Other devices at this opset.
  h = reg.hint("myops", "relu6_scale", 5, "cpu");
  EXPECT_THAT(h, HasSubstr("exists for opsets [1-3]"));
  EXPECT_THAT(h, HasSubstr("myops::relu6_scale at opset 5 is available on cuda, not on cpu"));
  EXPECT_THAT(h, HasSubstr("--device cuda"));

  // Same name in another domain.
  h = reg.hint("", "Gelu", 20, "cpu");
  EXPECT_THAT(h, HasSubstr("'Gelu' exists in domain 'com.microsoft' (not 'ai.onnx'): set the node's domain to "
                           "'com.microsoft'"));

  // Case-insensitive match.
  h = reg.hint("", "relu", 14, "cpu");
  EXPECT_THAT(h, HasSubstr("did you mean ai.onnx::Relu? (op names are case-sensitive)"));

  EXPECT_EQ(reg.hint("nowhere", "Nothing", 1, "cpu"), "");
}

TEST(Registry, RejectsNullOp) {
  OpRegistry reg;
  EXPECT_THROW(reg.add(kMy, nullptr), Error);
}

}  // namespace
}  // namespace ophost
