// Bounded work at load (issue 7, point 4): overflow-checked size arithmetic, the tensor size cap (default 4 GiB,
// configurable), the subgraph depth cap and the parser's nesting limit, the rank limit. Each hostile input fails
// fast with a message (the whole corpus of hostile models runs in tests/hostile).
#include "model/model.hpp"

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace ophost {
namespace {

#define EXPECT_HAS(haystack, needle)                                                                   \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "expected: " << (needle)         \
                                                                   << "\n     in: " << (haystack)

onnx::ModelProto base_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto* in = g->add_input();
  in->set_name("x");
  in->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  auto* n = g->add_node();
  n->set_op_type("Identity");
  n->add_input("x");
  n->add_output("y");
  g->add_output()->set_name("y");
  return m;
}

std::string load_error(const onnx::ModelProto& m, const ModelLimits& limits = {}, double* seconds = nullptr) {
  std::string bytes;
  m.SerializeToString(&bytes);
  auto t0 = std::chrono::steady_clock::now();
  std::string err;
  try {
    load_model_from_bytes(std::as_bytes(std::span<const char>(bytes.data(), bytes.size())), {}, "hostile.onnx",
                          limits);
  } catch (const Error& e) {
    err = e.what();
  }
  if (seconds) *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return err;
}

onnx::TensorProto* add_init(onnx::ModelProto& m, std::vector<int64_t> dims, int elem = onnx::TensorProto::FLOAT) {
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name("w");
  t->set_data_type(elem);
  for (int64_t d : dims) t->add_dims(d);
  return t;
}

TEST(BoundedLoad, InitializerOverTheDefaultCapIsRefusedBeforeAllocating) {
  onnx::ModelProto m = base_model();
  add_init(m, {int64_t{1} << 30, 2});  // 8 GiB of float32, no data
  double s = 0;
  std::string err = load_error(m, {}, &s);
  EXPECT_HAS(err, "hostile.onnx: initializer: tensor 'w': dims [1073741824,2] (float32) need 8589934592 bytes, "
                  "over the tensor size limit of 4294967296 bytes");
  EXPECT_LT(s, 1.0);
}

TEST(BoundedLoad, CapIsConfigurable) {
  onnx::ModelProto m = base_model();
  auto* t = add_init(m, {1024});
  t->mutable_raw_data()->assign(4096, '\0');
  EXPECT_EQ(load_error(m), "");
  ModelLimits small;
  small.max_tensor_bytes = 1000;
  EXPECT_HAS(load_error(m, small), "over the tensor size limit of 1000 bytes");
}

TEST(BoundedLoad, OverflowingDimsAreRefused) {
  onnx::ModelProto m = base_model();
  add_init(m, {int64_t{1} << 40, int64_t{1} << 40});
  EXPECT_HAS(load_error(m), "tensor 'w'");
  onnx::ModelProto m2 = base_model();
  add_init(m2, {int64_t{1} << 61, 4}, onnx::TensorProto::DOUBLE);  // numel fits, bytes overflow
  EXPECT_HAS(load_error(m2), "tensor 'w'");
  EXPECT_HAS(load_error(m2), "int64");
}

TEST(BoundedLoad, HugeStringCountIsRefused) {
  onnx::ModelProto m = base_model();
  add_init(m, {int64_t{1} << 40}, onnx::TensorProto::STRING);
  EXPECT_HAS(load_error(m), "tensor 'w'");
}

TEST(BoundedLoad, RankAboveTheAbiLimitIsRefused) {
  onnx::ModelProto m = base_model();
  auto* shape = m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  for (int i = 0; i < 17; ++i) shape->add_dim()->set_dim_value(1);
  EXPECT_HAS(load_error(m), "graph input 'x' has rank 17; ophost supports at most 16 dimensions");
  onnx::ModelProto m2 = base_model();
  add_init(m2, std::vector<int64_t>(40, 1));
  EXPECT_HAS(load_error(m2), "tensor 'w': has rank 40");
}

TEST(BoundedLoad, CheckTensorSize) {
  ModelLimits l;
  EXPECT_NO_THROW(check_tensor_size(DType::kFloat32, std::vector<int64_t>{1024, 1024, 1024}, l, "v"));  // 4 GiB
  EXPECT_THROW(check_tensor_size(DType::kFloat32, std::vector<int64_t>{1024, 1024, 1025}, l, "v"), Error);
  EXPECT_NO_THROW(check_tensor_size(DType::kFloat32, std::vector<int64_t>{-1, int64_t{1} << 40}, l, "v"));  // unknown
  try {
    check_tensor_size(DType::kFloat32, std::vector<int64_t>{int64_t{1} << 62, int64_t{1} << 62}, l,
                      "node 'n' (Expand): output 'y'");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kResourceExhausted);
    EXPECT_HAS(e.what(), "node 'n' (Expand): output 'y' would be float32 [4611686018427387904,4611686018427387904], "
                         "more bytes than a 64-bit size can count, over the tensor size limit of 4 GiB");
  }
  EXPECT_EQ(format_bytes(4ull << 30), "4 GiB");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(12), "12 bytes");
}

// If inside If inside ... `depth` levels.
onnx::ModelProto nested_if(int depth) {
  onnx::GraphProto leaf;
  leaf.set_name("leaf");
  auto* n = leaf.add_node();
  n->set_op_type("Identity");
  n->add_input("x");
  n->add_output("y");
  leaf.add_output()->set_name("y");
  onnx::GraphProto g = leaf;
  for (int d = 0; d < depth; ++d) {
    onnx::GraphProto outer;
    outer.set_name("g" + std::to_string(d));
    auto* node = outer.add_node();
    node->set_op_type("If");
    node->add_input("c");
    node->add_output("y");
    auto* a = node->add_attribute();
    a->set_name("then_branch");
    a->set_type(onnx::AttributeProto::GRAPH);
    *a->mutable_g() = g;
    outer.add_output()->set_name("y");
    g = std::move(outer);
  }
  onnx::ModelProto m = base_model();
  *m.mutable_graph()->mutable_node(0) = g.node(0);
  return m;
}

TEST(BoundedLoad, SubgraphDepthIsCapped) {
  // Within the parser's limit but over the cap: the depth message.
  ModelLimits l;
  l.max_subgraph_depth = 3;
  EXPECT_HAS(load_error(nested_if(5), l), "subgraphs are nested more than 3 levels deep");
  // Far deeper: the parser itself refuses it, quickly.
  double s = 0;
  EXPECT_HAS(load_error(nested_if(300), {}, &s), "are refused as well");
  EXPECT_LT(s, 1.0);
  // Nesting within the cap passes the depth checks and reaches the graph's own validation: each If reads a
  // cond 'c' that no graph defines (the bodies' reads of 'x' resolve to the outer graph's input).
  EXPECT_HAS(load_error(nested_if(3), l), "input #0 'c' is not defined");
  EXPECT_HAS(load_error(nested_if(1)), "input #0 'c' is not defined");
}

}  // namespace
}  // namespace ophost
