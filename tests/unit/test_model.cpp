// Model loader: ModelProto built in C++, serialised to a temp folder, loaded and validated.
#include "model/model.hpp"
#include "model/tensor_proto.hpp"

#include <ophost/error.hpp>

#include <gtest/gtest.h>
#include <unistd.h>
#include <thread>
#include <atomic>

#include <sys/stat.h>
#include <onnx/onnx_pb.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using ophost::Code;
using ophost::DType;
using ophost::Error;
using ophost::Model;
using ophost::Tensor;

#define EXPECT_CONTAINS(haystack, needle)                                                   \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos)                          \
      << "expected to find \"" << (needle) << "\" in:\n  " << (haystack)

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "ophost-model-test-XXXXXX").string();
    char* p = mkdtemp(tmpl.data());
    if (p == nullptr) throw std::runtime_error("mkdtemp failed");
    path = fs::canonical(p);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void write_file(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void set_type(onnx::ValueInfoProto* vi, int elem, const std::vector<int64_t>& dims) {
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) {
    auto* dim = shape->add_dim();
    if (d >= 0) {
      dim->set_dim_value(d);
    } else {
      dim->set_dim_param("N");
    }
  }
}

void add_input(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> dims = {-1, 4},
               int elem = onnx::TensorProto::FLOAT) {
  auto* vi = g->add_input();
  vi->set_name(name);
  set_type(vi, elem, dims);
}

void add_output(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> dims = {-1, 4}) {
  auto* vi = g->add_output();
  vi->set_name(name);
  set_type(vi, onnx::TensorProto::FLOAT, dims);
}

onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, std::vector<std::string> inputs,
                          std::vector<std::string> outputs, const std::string& name = "") {
  auto* n = g->add_node();
  n->set_op_type(op);
  if (!name.empty()) n->set_name(name);
  for (auto& i : inputs) n->add_input(i);
  for (auto& o : outputs) n->add_output(o);
  return n;
}

onnx::TensorProto float_tensor(const std::string& name, std::vector<int64_t> dims, std::vector<float> values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  for (float v : values) t.add_float_data(v);
  return t;
}

onnx::ModelProto empty_model() {
  onnx::ModelProto m;
  m.set_ir_version(9);
  m.set_producer_name("ophost-test");
  m.set_producer_version("1.2.3");
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(17);
  m.mutable_graph()->set_name("g");
  return m;
}

// x[N,4] + w[4] -> y ; Relu(y) -> z. With w_as_input, `w` is also listed as a graph input (an overridable
// initializer from IR 4).
onnx::ModelProto simple_model(bool w_as_input = false) {
  onnx::ModelProto m = empty_model();
  auto* g = m.mutable_graph();
  add_input(g, "x");
  if (w_as_input) add_input(g, "w", {4});
  *g->add_initializer() = float_tensor("w", {4}, {1, 2, 3, 4});
  add_node(g, "Add", {"x", "w"}, {"y"});
  add_node(g, "Relu", {"y"}, {"z"}, "relu");
  add_output(g, "z");
  auto* vi = g->add_value_info();
  vi->set_name("y");
  set_type(vi, onnx::TensorProto::FLOAT, {-1, 4});
  return m;
}

fs::path save(const onnx::ModelProto& m, const fs::path& file) {
  std::string bytes;
  EXPECT_TRUE(m.SerializeToString(&bytes));
  write_file(file, bytes);
  return file;
}

// Loads `m` from <dir>/model.onnx and returns the error (message, code); fails the test when it loads.
std::string load_error(const onnx::ModelProto& m, const fs::path& dir, Code* code = nullptr) {
  const fs::path file = save(m, dir / "model.onnx");
  try {
    ophost::load_model(file);
  } catch (const Error& e) {
    if (code) *code = e.code();
    EXPECT_CONTAINS(e.what(), file.string());  // every message names the file
    return e.what();
  }
  ADD_FAILURE() << "model loaded but an error was expected";
  return "";
}

std::string error_of(const std::function<void()>& f, Code* code = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  ADD_FAILURE() << "no ophost::Error thrown";
  return "";
}

// ---------------------------------------------------------------------------------------------------------
// Valid models

TEST(ModelLoad, SimpleModel) {
  TempDir dir;
  const fs::path file = save(simple_model(true), dir.path / "model.onnx");
  const Model m = ophost::load_model(file);
  EXPECT_EQ(m.path, file);
  EXPECT_EQ(m.ir_version, 9);
  EXPECT_EQ(m.producer_name, "ophost-test");
  EXPECT_EQ(m.producer_version, "1.2.3");
  ASSERT_EQ(m.opset_imports.size(), 1u);
  EXPECT_EQ(m.opset_imports.at(""), 17);

  // w has an initializer and is listed as an input (IR 9): an overridable initializer, after the required x,
  // with the initializer as its default and no longer among the constants.
  ASSERT_EQ(m.inputs.size(), 2u);
  EXPECT_EQ(m.required_inputs(), 1u);
  EXPECT_EQ(m.inputs[1].name, "w");
  EXPECT_EQ(m.inputs[1].shape, (std::vector<int64_t>{4}));
  ASSERT_EQ(m.input_defaults.size(), 1u);
  EXPECT_EQ(m.input_defaults[0].data_as<float>()[3], 4.0f);
  EXPECT_TRUE(m.initializers.empty());
  EXPECT_TRUE(m.initializer_inputs.empty());
  EXPECT_EQ(m.inputs[0].name, "x");
  EXPECT_EQ(m.inputs[0].dtype, DType::kFloat32);
  EXPECT_TRUE(m.inputs[0].has_shape);
  EXPECT_EQ(m.inputs[0].shape, (std::vector<int64_t>{OPH_DIM_UNKNOWN, 4}));
  EXPECT_EQ(m.inputs[0].dim_params, (std::vector<std::string>{"N", ""}));

  ASSERT_EQ(m.outputs.size(), 1u);
  EXPECT_EQ(m.outputs[0].name, "z");
  ASSERT_EQ(m.value_infos.size(), 1u);
  EXPECT_EQ(m.value_infos[0].name, "y");

  ASSERT_EQ(m.input_defaults.size(), 1u);  // w's initializer, as the default of the overridable input
  const Tensor& w = m.input_defaults[0];
  EXPECT_EQ(w.dtype(), DType::kFloat32);
  ASSERT_EQ(w.numel(), 4);
  EXPECT_EQ(w.data_as<float>()[3], 4.f);

  ASSERT_EQ(m.nodes.size(), 2u);
  EXPECT_EQ(m.nodes[0].name, "Add_0");  // synthesized
  EXPECT_EQ(m.nodes[0].op_type, "Add");
  EXPECT_EQ(m.nodes[0].domain, "");
  EXPECT_EQ(m.nodes[0].inputs, (std::vector<std::string>{"x", "w"}));
  EXPECT_EQ(m.nodes[0].outputs, (std::vector<std::string>{"y"}));
  EXPECT_EQ(m.nodes[1].name, "relu");
  EXPECT_EQ(ophost::describe_node(m.nodes[1]), "node 'relu' (Relu)");
}

// Initializers of more than 4 MiB of raw_data in all are carved from one block (InitializerBlock): each keeps
// its own bytes, 64-byte aligned, with a float_data initializer between them read as before; from a file and
// from bytes alike.
TEST(ModelLoad, LargeRawInitializersKeepTheirBytesAndAlignment) {
  onnx::ModelProto p = empty_model();
  auto* g = p.mutable_graph();
  add_input(g, "x", {3});
  auto raw_tensor = [](const std::string& name, int64_t n, float base) {
    onnx::TensorProto t;
    t.set_name(name);
    t.set_data_type(onnx::TensorProto::FLOAT);
    t.add_dims(n);
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = base + static_cast<float>(i % 1000);
    t.set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
    return t;
  };
  *g->add_initializer() = raw_tensor("a", 1'000'003, 0.5f);  // 4000012 bytes: not a multiple of 64
  *g->add_initializer() = float_tensor("b", {3}, {7, 8, 9});
  *g->add_initializer() = raw_tensor("c", 300'001, -2000.0f);
  add_node(g, "Add", {"x", "b"}, {"y"});
  add_node(g, "Add", {"a", "a"}, {"a2"});
  add_node(g, "Add", {"c", "c"}, {"c2"});
  add_output(g, "y");
  add_output(g, "a2");
  add_output(g, "c2");
  auto check = [](const Model& m) {
    ASSERT_EQ(m.initializers.size(), 3u);
    for (const auto& [name, t] : m.initializers) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 64, 0u) << name;
      const float* v = t.data_as<float>();
      if (name == "a") {
        ASSERT_EQ(t.numel(), 1'000'003);
        EXPECT_EQ(v[0], 0.5f);
        EXPECT_EQ(v[999], 999.5f);
        EXPECT_EQ(v[1'000'002], 2.5f);  // 1000002 % 1000 = 2
      } else if (name == "b") {
        ASSERT_EQ(t.numel(), 3);
        EXPECT_EQ(v[2], 9.0f);
      } else {
        ASSERT_EQ(t.numel(), 300'001);
        EXPECT_EQ(v[0], -2000.0f);
        EXPECT_EQ(v[300'000], -2000.0f);
        EXPECT_EQ(v[1234], -1766.0f);  // 1234 % 1000 = 234
      }
    }
  };
  TempDir dir;
  check(ophost::load_model(save(p, dir.path / "model.onnx")));
  std::string bytes;
  ASSERT_TRUE(p.SerializeToString(&bytes));
  check(ophost::load_model_from_bytes(std::as_bytes(std::span<const char>(bytes.data(), bytes.size())), {}, "m"));
}

TEST(ModelLoad, FromBytesAndDomainNormalisation) {
  onnx::ModelProto p = simple_model();
  p.mutable_opset_import(0)->set_domain("ai.onnx");
  auto* op = p.add_opset_import();
  op->set_domain("com.example");
  op->set_version(1);
  p.mutable_graph()->mutable_node(0)->set_domain("ai.onnx");
  auto* custom = add_node(p.mutable_graph(), "Scale", {"z"}, {"s"}, "sc");
  custom->set_domain("com.example");
  std::string bytes;
  ASSERT_TRUE(p.SerializeToString(&bytes));
  const Model m = ophost::load_model_from_bytes(std::as_bytes(std::span<const char>(bytes.data(), bytes.size())),
                                                {}, "in-memory");
  EXPECT_EQ(m.opset_imports.at(""), 17);
  EXPECT_EQ(m.opset_imports.at("com.example"), 1);
  EXPECT_EQ(m.nodes[0].domain, "");
  EXPECT_EQ(m.nodes[2].domain, "com.example");
  EXPECT_EQ(ophost::describe_node(m.nodes[2]), "node 'sc' (com.example::Scale)");
}

TEST(ModelLoad, OptionalEmptyInputsAndOutputsAllowed) {
  TempDir dir;
  onnx::ModelProto p = empty_model();
  auto* g = p.mutable_graph();
  add_input(g, "x");
  add_node(g, "Clip", {"x", "", ""}, {"y"});
  add_node(g, "Dropout", {"y"}, {"z", ""});
  add_output(g, "z");
  const Model m = ophost::load_model(save(p, dir.path / "m.onnx"));
  EXPECT_EQ(m.nodes[0].inputs, (std::vector<std::string>{"x", "", ""}));
  EXPECT_EQ(m.nodes[1].outputs, (std::vector<std::string>{"z", ""}));
}

TEST(ModelLoad, GraphOutputMayBeAGraphInputOrInitializer) {
  TempDir dir;
  onnx::ModelProto p = simple_model();
  add_output(p.mutable_graph(), "x");
  add_output(p.mutable_graph(), "w", {4});
  const Model m = ophost::load_model(save(p, dir.path / "m.onnx"));
  EXPECT_EQ(m.outputs.size(), 3u);
}

TEST(ModelLoad, NodesAreTopologicallySortedStably) {
  TempDir dir;
  onnx::ModelProto p = empty_model();
  auto* g = p.mutable_graph();
  add_input(g, "x");
  add_input(g, "w");
  // File order: A needs B's output; C and B are ready at once; D needs A and C.
  add_node(g, "Neg", {"y"}, {"a"}, "A");
  add_node(g, "Add", {"x", "w"}, {"y"}, "B");
  add_node(g, "Abs", {"x"}, {"c"}, "C");
  add_node(g, "Sum", {"a", "c"}, {"d"}, "D");
  add_output(g, "d");
  const Model m = ophost::load_model(save(p, dir.path / "m.onnx"));
  std::vector<std::string> order;
  for (const auto& n : m.nodes) order.push_back(n.name);
  EXPECT_EQ(order, (std::vector<std::string>{"B", "A", "C", "D"}));

  // An already sorted graph keeps its order exactly.
  onnx::ModelProto q = empty_model();
  auto* h = q.mutable_graph();
  add_input(h, "x");
  add_node(h, "Abs", {"x"}, {"p"}, "P");
  add_node(h, "Neg", {"x"}, {"q"}, "Q");
  add_node(h, "Relu", {"p"}, {"r"}, "R");
  add_node(h, "Add", {"q", "r"}, {"s"}, "S");
  add_output(h, "s");
  const Model m2 = ophost::load_model(save(q, dir.path / "m2.onnx"));
  order.clear();
  for (const auto& n : m2.nodes) order.push_back(n.name);
  EXPECT_EQ(order, (std::vector<std::string>{"P", "Q", "R", "S"}));
}

TEST(ModelLoad, AttributesOfEveryType) {
  TempDir dir;
  onnx::ModelProto p = empty_model();
  auto* op = p.add_opset_import();
  op->set_domain("com.example");
  op->set_version(1);
  auto* g = p.mutable_graph();
  add_input(g, "x");
  auto* c = add_node(g, "Constant", {}, {"k"}, "const");
  auto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = float_tensor("", {2}, {0.5f, -1.5f});
  auto* n = add_node(g, "Fancy", {"x", "k"}, {"y"}, "fancy");
  n->set_domain("com.example");
  auto attr = [&](const char* name, onnx::AttributeProto::AttributeType type) {
    auto* at = n->add_attribute();
    at->set_name(name);
    at->set_type(type);
    return at;
  };
  attr("f", onnx::AttributeProto::FLOAT)->set_f(0.25f);
  attr("i", onnx::AttributeProto::INT)->set_i(-42);
  attr("s", onnx::AttributeProto::STRING)->set_s("hello");
  auto* fs_ = attr("fs", onnx::AttributeProto::FLOATS);
  fs_->add_floats(1.f);
  fs_->add_floats(2.f);
  auto* is = attr("is", onnx::AttributeProto::INTS);
  is->add_ints(7);
  is->add_ints(-8);
  is->add_ints(9);
  auto* ss = attr("ss", onnx::AttributeProto::STRINGS);
  ss->add_strings("a");
  ss->add_strings("bc");
  auto* legacy = n->add_attribute();  // type left unset, as very old exporters did
  legacy->set_name("legacy");
  legacy->set_i(3);
  add_output(g, "y");

  const Model m = ophost::load_model(save(p, dir.path / "m.onnx"));
  ASSERT_EQ(m.nodes.size(), 2u);
  const auto& cattr = m.nodes[0].attributes;
  ASSERT_EQ(cattr.size(), 1u);
  EXPECT_EQ(cattr[0].type, OPH_ATTR_TENSOR);
  ASSERT_EQ(cattr[0].t.numel(), 2);
  EXPECT_EQ(cattr[0].t.data_as<float>()[1], -1.5f);

  const auto& at = m.nodes[1].attributes;
  ASSERT_EQ(at.size(), 7u);
  EXPECT_EQ(at[0].type, OPH_ATTR_FLOAT);
  EXPECT_EQ(at[0].f, 0.25f);
  EXPECT_EQ(at[1].type, OPH_ATTR_INT);
  EXPECT_EQ(at[1].i, -42);
  EXPECT_EQ(at[2].type, OPH_ATTR_STRING);
  EXPECT_EQ(at[2].s, "hello");
  EXPECT_EQ(at[3].type, OPH_ATTR_FLOATS);
  EXPECT_EQ(at[3].floats, (std::vector<float>{1.f, 2.f}));
  EXPECT_EQ(at[4].type, OPH_ATTR_INTS);
  EXPECT_EQ(at[4].ints, (std::vector<int64_t>{7, -8, 9}));
  EXPECT_EQ(at[5].type, OPH_ATTR_STRINGS);
  EXPECT_EQ(at[5].strings, (std::vector<std::string>{"a", "bc"}));
  EXPECT_EQ(at[6].name, "legacy");
  EXPECT_EQ(at[6].type, OPH_ATTR_INT);
  EXPECT_EQ(at[6].i, 3);
}

// ---------------------------------------------------------------------------------------------------------
// Files that are not ONNX models

TEST(ModelLoadErrors, FileNotFound) {
  TempDir dir;
  Code code{};
  const std::string msg = error_of([&] { ophost::load_model(dir.path / "nope.onnx"); }, &code);
  EXPECT_EQ(code, Code::kNotFound);
  EXPECT_EQ(msg, "model file not found: " + (dir.path / "nope.onnx").string());
}

TEST(ModelLoadErrors, Folder) {
  TempDir dir;
  const std::string msg = error_of([&] { ophost::load_model(dir.path); });
  EXPECT_CONTAINS(msg, "is a folder");
}

TEST(ModelLoadErrors, Unreadable) {
  if (geteuid() == 0) GTEST_SKIP() << "running as root: file permissions are not enforced";
  TempDir dir;
  const fs::path file = save(simple_model(), dir.path / "m.onnx");
  fs::permissions(file, fs::perms::none);
  Code code{};
  const std::string msg = error_of([&] { ophost::load_model(file); }, &code);
  EXPECT_EQ(code, Code::kPermissionDenied);
  EXPECT_CONTAINS(msg, "cannot read model file");
}

// A FIFO or a device must not hang the load or be read as a model (a FIFO with no writer blocked forever).
TEST(ModelLoadErrors, FifoAndDeviceAreRefusedWithoutBlocking) {
  TempDir dir;
  const fs::path fifo = dir.path / "m.onnx";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Code code{};
  std::string msg = error_of([&] { ophost::load_model(fifo); }, &code);
  EXPECT_EQ(code, Code::kInvalidArgument);
  EXPECT_CONTAINS(msg, fifo.string() + ": is a FIFO, not a regular file");
  msg = error_of([&] { ophost::load_model("/dev/zero"); }, &code);
  EXPECT_CONTAINS(msg, "/dev/zero: is a device, not a regular file");
}

TEST(ModelLoadErrors, NotProtobuf) {
  TempDir dir;
  const fs::path file = dir.path / "garbage.onnx";
  write_file(file, std::string(9, '\xff'));
  Code code{};
  const std::string msg = error_of([&] { ophost::load_model(file); }, &code);
  EXPECT_EQ(code, Code::kInvalidArgument);
  EXPECT_CONTAINS(msg, file.string());
  EXPECT_CONTAINS(msg, "not an ONNX model (protobuf ModelProto parse failed; 9 bytes)");
}

TEST(ModelLoadErrors, EmptyFileHasNoIrVersion) {
  TempDir dir;
  const fs::path file = dir.path / "empty.onnx";
  write_file(file, "");
  const std::string msg = error_of([&] { ophost::load_model(file); });
  EXPECT_CONTAINS(msg, "not an ONNX model (no ir_version");
}

TEST(ModelLoadErrors, NoGraph) {
  TempDir dir;
  onnx::ModelProto p;
  p.set_ir_version(8);
  EXPECT_CONTAINS(load_error(p, dir.path), "not an ONNX model (no graph");
}

// An ir_version from the future (or a corrupt one) is refused, naming the versions this host reads (ir_version
// 99 used to load and run with the newest semantics known).
TEST(ModelLoadErrors, UnknownIrVersion) {
  TempDir dir;
  onnx::ModelProto p = simple_model();
  p.set_ir_version(99);
  Code code{};
  const std::string msg = error_of([&] { ophost::load_model(save(p, dir.path / "m.onnx")); }, &code);
  EXPECT_EQ(code, Code::kUnimplemented);
  EXPECT_CONTAINS(msg, "ir_version 99 is not one ophost reads (1 to 11)");
  p.set_ir_version(11);
  EXPECT_NO_THROW(ophost::load_model(save(p, dir.path / "m.onnx")));
}

TEST(ModelLoadErrors, EmptyGraph) {
  TempDir dir;
  onnx::ModelProto p = empty_model();
  add_input(p.mutable_graph(), "x");
  add_output(p.mutable_graph(), "x");
  EXPECT_CONTAINS(load_error(p, dir.path), "the graph is empty (no nodes)");
}

TEST(ModelLoadErrors, DisplayNameFromBytes) {
  const std::string junk(5, '\xff');
  const std::string msg = error_of([&] {
    ophost::load_model_from_bytes(std::as_bytes(std::span<const char>(junk.data(), junk.size())), {}, "blob#1");
  });
  EXPECT_EQ(msg.rfind("blob#1: ", 0), 0u) << msg;
}

// ---------------------------------------------------------------------------------------------------------
// Structural errors

TEST(ModelLoadErrors, UndefinedInput) {
  TempDir dir;
  onnx::ModelProto p = simple_model();
  p.mutable_graph()->mutable_node(1)->set_input(0, "ghost");
  Code code{};
  const std::string msg = load_error(p, dir.path, &code);
  EXPECT_EQ(code, Code::kInvalidArgument);
  EXPECT_CONTAINS(msg, "node 'relu' (Relu)");
  EXPECT_CONTAINS(msg, "input #0 'ghost' is not defined");
  EXPECT_CONTAINS(msg, "not a graph input, an initializer or the output of any node");
}

TEST(ModelLoadErrors, UndefinedInputSynthesizedName) {
  TempDir dir;
  onnx::ModelProto p = simple_model();
  p.mutable_graph()->mutable_node(0)->set_input(1, "missing_w");
  EXPECT_CONTAINS(load_error(p, dir.path), "node 'Add_0' (Add): input #1 'missing_w' is not defined");
}

TEST(ModelLoadErrors, Cycle) {
  TempDir dir;
  onnx::ModelProto p = empty_model();
  auto* g = p.mutable_graph();
  add_input(g, "x");
  add_node(g, "Add", {"x", "b"}, {"a"}, "n1");
  add_node(g, "Relu", {"a"}, {"b"}, "n2");
  add_node(g, "Abs", {"x"}, {"c"}, "n3");
  add_output(g, "b");
  const std::string msg = load_error(p, dir.path);
  EXPECT_CONTAINS(msg, "the graph has a cycle");
  EXPECT_CONTAINS(msg, "node 'n1' (Add) -> node 'n2' (Relu) -> node 'n1' (Add)");
  EXPECT_EQ(msg.find("n3"), std::string::npos) << msg;  // not on the cycle
}

TEST(ModelLoadErrors, SelfLoop) {
  TempDir dir;
  onnx::ModelProto p = empty_model();
  auto* g = p.mutable_graph();
  add_input(g, "x");
  add_node(g, "Add", {"x", "a"}, {"a"}, "self");
  add_output(g, "a");
  EXPECT_CONTAINS(load_error(p, dir.path), "cycle: node 'self' (Add) -> node 'self' (Add)");
}

TEST(ModelLoadErrors, DuplicateOutputName) {
  TempDir dir;
  onnx::ModelProto p = simple_model();
  add_node(p.mutable_graph(), "Neg", {"x"}, {"y"}, "dup");
  const std::string msg = load_error(p, dir.path);
  EXPECT_CONTAINS(msg, "node 'dup' (Neg): output 'y' is already produced by node 'Add_0' (Add)");
}

TEST(ModelLoadErrors, OutputShadowsGraphInputOrInitializer) {
  TempDir dir;
  onnx::ModelProto p = simple_model();
  add_node(p.mutable_graph(), "Neg", {"z"}, {"x"}, "shadow");
  EXPECT_CONTAINS(load_error(p, dir.path), "node 'shadow' (Neg): output 'x' has the same name as a graph input");
  onnx::ModelProto q = simple_model();
  add_node(q.mutable_graph(), "Neg", {"z"}, {"w"}, "shadow2");
  EXPECT_CONTAINS(load_error(q, dir.path), "node 'shadow2' (Neg): output 'w' has the same name as an initializer");
}

TEST(ModelLoadErrors, GraphOutputNotProduced) {
  TempDir dir;
  onnx::ModelProto p = simple_model();
  add_output(p.mutable_graph(), "nowhere");
  EXPECT_CONTAINS(load_error(p, dir.path), "graph output 'nowhere' is not produced by any node");
}

TEST(ModelLoadErrors, NoOutputs) {
  TempDir dir;
  onnx::ModelProto p = simple_model();
  p.mutable_graph()->clear_output();
  EXPECT_CONTAINS(load_error(p, dir.path), "declares no outputs");
}

TEST(ModelLoadErrors, AttributeWithoutName) {
  TempDir dir;
  onnx::ModelProto p = simple_model();
  auto* a = p.mutable_graph()->mutable_node(1)->add_attribute();
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(1);
  EXPECT_CONTAINS(load_error(p, dir.path), "node 'relu' (Relu): attribute #0 has no name");
}

TEST(ModelLoadErrors, DuplicateAttribute) {
  TempDir dir;
  onnx::ModelProto p = simple_model();
  for (int k = 0; k < 2; ++k) {
    auto* a = p.mutable_graph()->mutable_node(1)->add_attribute();
    a->set_name("alpha");
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(1);
  }
  EXPECT_CONTAINS(load_error(p, dir.path), "node 'relu' (Relu): attribute 'alpha' is given twice");
}

// An If whose branches read values of the enclosing graph ('y', produced by a node after the If in the file,
// and the initializer 'w'): the reads become the node's implicit inputs, so the sort puts the If after y's
// producer; a branch passing an outer value straight through lists it as an outer_ref too.
TEST(ModelLoad, SubgraphOuterValuesBecomeImplicitInputs) {
  TempDir dir;
  onnx::ModelProto p = empty_model();
  auto* g = p.mutable_graph();
  add_input(g, "x");
  add_input(g, "cond", {}, onnx::TensorProto::BOOL);
  *g->add_initializer() = float_tensor("w", {4}, {1, 2, 3, 4});
  auto* n = add_node(g, "If", {"cond"}, {"r"}, "branch");
  add_node(g, "Relu", {"x"}, {"y"}, "relu");
  add_output(g, "r");
  auto* then_attr = n->add_attribute();
  then_attr->set_name("then_branch");
  then_attr->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto* then_g = then_attr->mutable_g();
  then_g->set_name("then");
  add_node(then_g, "Add", {"y", "w"}, {"t"});
  add_output(then_g, "t");
  auto* else_attr = n->add_attribute();
  else_attr->set_name("else_branch");
  else_attr->set_type(onnx::AttributeProto::GRAPH);
  else_attr->mutable_g()->set_name("else");
  add_output(else_attr->mutable_g(), "y");  // y of the outer graph, passed through
  const Model m = ophost::load_model(save(p, dir.path / "m.onnx"));
  ASSERT_EQ(m.nodes.size(), 2u);
  EXPECT_EQ(m.nodes[0].op_type, "Relu");
  const ophost::Node& branch = m.nodes[1];
  EXPECT_EQ(branch.inputs, (std::vector<std::string>{"cond", "y", "w"}));
  EXPECT_EQ(branch.implicit_inputs, 2u);
  EXPECT_EQ(branch.formal_inputs(), 1u);
  ASSERT_TRUE(branch.attributes[0].g);
  EXPECT_EQ(branch.attributes[0].type, ophost::kAttrGraph);
  EXPECT_EQ(branch.attributes[0].g->outer_refs, (std::vector<std::string>{"y", "w"}));
  EXPECT_EQ(branch.attributes[1].g->outer_refs, (std::vector<std::string>{"y"}));
  EXPECT_TRUE(branch.attributes[1].g->nodes.empty());
  EXPECT_TRUE(m.outer_refs.empty());
}

TEST(ModelLoadErrors, SubgraphErrorsNameTheNodeAndBranch) {
  TempDir dir;
  onnx::ModelProto p = simple_model();
  add_input(p.mutable_graph(), "cond", {}, onnx::TensorProto::BOOL);
  auto* n = add_node(p.mutable_graph(), "If", {"cond"}, {"r"}, "branch");
  auto* a = n->add_attribute();
  a->set_name("then_branch");
  a->set_type(onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name("then");
  add_node(a->mutable_g(), "", {"x"}, {"t"}, "nameless");
  Code code{};
  std::string msg = load_error(p, dir.path, &code);
  EXPECT_EQ(code, Code::kInvalidArgument);
  EXPECT_CONTAINS(msg, "node 'branch' (If): attribute 'then_branch' (subgraph 'then'): node #0 ('nameless') has no "
                       "op_type");
  // A list of graphs (GRAPHS) is no ONNX op's attribute type.
  a->set_type(onnx::AttributeProto::GRAPHS);
  a->clear_g();
  a->add_graphs()->set_name("g0");
  msg = load_error(p, dir.path, &code);
  EXPECT_EQ(code, Code::kUnimplemented);
  EXPECT_CONTAINS(msg, "node 'branch' (If): attribute 'then_branch' is a list of graphs (GRAPHS)");
}

TEST(ModelLoadErrors, SparseInitializerUnimplemented) {
  TempDir dir;
  onnx::ModelProto p = simple_model();
  auto* sp = p.mutable_graph()->add_sparse_initializer();
  *sp->mutable_values() = float_tensor("sparse_w", {1}, {1});
  sp->add_dims(4);
  Code code{};
  const std::string msg = load_error(p, dir.path, &code);
  EXPECT_EQ(code, Code::kUnimplemented);
  EXPECT_CONTAINS(msg, "sparse initializer 'sparse_w' is not supported");
}

TEST(ModelLoadErrors, MissingOpsetImport) {
  TempDir dir;
  onnx::ModelProto p = simple_model();
  p.mutable_graph()->mutable_node(1)->set_domain("com.example");
  EXPECT_CONTAINS(load_error(p, dir.path),
                  "node 'relu' (com.example::Relu) uses domain 'com.example' but the model has no opset_import");
}

TEST(ModelLoadErrors, UnsupportedInputType) {
  TempDir dir;
  onnx::ModelProto p = simple_model();
  set_type(p.mutable_graph()->mutable_input(0), onnx::TensorProto::COMPLEX64, {2});
  Code code{};
  EXPECT_CONTAINS(load_error(p, dir.path, &code), "graph input 'x' has element type complex64");
  EXPECT_EQ(code, Code::kUnimplemented);
  onnx::ModelProto q = simple_model();
  q.mutable_graph()->mutable_input(0)->clear_type();
  EXPECT_CONTAINS(load_error(q, dir.path), "graph input 'x' has no type");
}

TEST(ModelLoadErrors, InitializerElementCountMismatch) {
  TempDir dir;
  onnx::ModelProto p = simple_model();
  p.mutable_graph()->mutable_initializer(0)->add_dims(2);  // now [4,2] with 4 values
  EXPECT_CONTAINS(load_error(p, dir.path),
                  "initializer: tensor 'w': float_data holds 4 values but dims [4,2] (float32) need 8");
  onnx::ModelProto q = simple_model();
  auto* t = q.mutable_graph()->mutable_initializer(0);
  t->clear_float_data();
  t->set_raw_data(std::string(12, '\0'));
  EXPECT_CONTAINS(load_error(q, dir.path), "tensor 'w': raw_data holds 12 bytes but dims [4] (float32) need 16");
}

TEST(ModelLoadErrors, InitializerUnsupportedType) {
  TempDir dir;
  onnx::ModelProto p = simple_model();
  p.mutable_graph()->mutable_initializer(0)->set_data_type(onnx::TensorProto::COMPLEX128);
  Code code{};
  EXPECT_CONTAINS(load_error(p, dir.path, &code), "tensor 'w': element type complex128 is not supported");
  EXPECT_EQ(code, Code::kUnimplemented);
}

// ---------------------------------------------------------------------------------------------------------
// TensorProto decoding

template <class T>
std::vector<T> values_of(const Tensor& t) {
  return std::vector<T>(t.data_as<T>(), t.data_as<T>() + t.numel());
}

onnx::TensorProto proto_of(int type, std::vector<int64_t> dims) {
  onnx::TensorProto p;
  p.set_name("t");
  p.set_data_type(type);
  for (int64_t d : dims) p.add_dims(d);
  return p;
}

TEST(TensorProtoDecode, TypedFields) {
  {
    auto p = proto_of(onnx::TensorProto::FLOAT, {3});
    for (float v : {1.5f, -2.f, 3.25f}) p.add_float_data(v);
    const Tensor t = ophost::tensor_from_proto(p, {});
    EXPECT_EQ(t.dtype(), DType::kFloat32);
    EXPECT_EQ(values_of<float>(t), (std::vector<float>{1.5f, -2.f, 3.25f}));
  }
  {
    auto p = proto_of(onnx::TensorProto::DOUBLE, {2});
    p.add_double_data(0.1);
    p.add_double_data(-1e300);
    EXPECT_EQ(values_of<double>(ophost::tensor_from_proto(p, {})), (std::vector<double>{0.1, -1e300}));
  }
  {
    auto p = proto_of(onnx::TensorProto::INT64, {2, 1});
    p.add_int64_data(INT64_MIN);
    p.add_int64_data(5);
    const Tensor t = ophost::tensor_from_proto(p, {});
    EXPECT_EQ(std::vector<int64_t>(t.shape().begin(), t.shape().end()), (std::vector<int64_t>{2, 1}));
    EXPECT_EQ(values_of<int64_t>(t), (std::vector<int64_t>{INT64_MIN, 5}));
  }
  {
    auto p = proto_of(onnx::TensorProto::INT32, {2});
    p.add_int32_data(-7);
    p.add_int32_data(INT32_MAX);
    EXPECT_EQ(values_of<int32_t>(ophost::tensor_from_proto(p, {})), (std::vector<int32_t>{-7, INT32_MAX}));
  }
  {
    auto p = proto_of(onnx::TensorProto::INT16, {2});
    p.add_int32_data(-300);
    p.add_int32_data(300);
    EXPECT_EQ(values_of<int16_t>(ophost::tensor_from_proto(p, {})), (std::vector<int16_t>{-300, 300}));
  }
  {
    auto p = proto_of(onnx::TensorProto::INT8, {2});
    p.add_int32_data(-128);
    p.add_int32_data(127);
    EXPECT_EQ(values_of<int8_t>(ophost::tensor_from_proto(p, {})), (std::vector<int8_t>{-128, 127}));
  }
  {
    auto p = proto_of(onnx::TensorProto::UINT8, {2});
    p.add_int32_data(0);
    p.add_int32_data(255);
    EXPECT_EQ(values_of<uint8_t>(ophost::tensor_from_proto(p, {})), (std::vector<uint8_t>{0, 255}));
  }
  {
    auto p = proto_of(onnx::TensorProto::UINT16, {1});
    p.add_int32_data(65535);
    EXPECT_EQ(values_of<uint16_t>(ophost::tensor_from_proto(p, {})), (std::vector<uint16_t>{65535}));
  }
  {
    auto p = proto_of(onnx::TensorProto::BOOL, {3});
    for (int v : {0, 1, 5}) p.add_int32_data(v);
    const Tensor t = ophost::tensor_from_proto(p, {});
    EXPECT_EQ(t.dtype(), DType::kBool);
    EXPECT_EQ(values_of<uint8_t>(t), (std::vector<uint8_t>{0, 1, 1}));
  }
  {
    auto p = proto_of(onnx::TensorProto::FLOAT16, {2});
    p.add_int32_data(0x3c00);  // 1.0
    p.add_int32_data(0xc000);  // -2.0
    const Tensor t = ophost::tensor_from_proto(p, {});
    EXPECT_EQ(t.dtype(), DType::kFloat16);
    EXPECT_EQ(values_of<uint16_t>(t), (std::vector<uint16_t>{0x3c00, 0xc000}));
  }
  {
    auto p = proto_of(onnx::TensorProto::BFLOAT16, {1});
    p.add_int32_data(0x3f80);  // 1.0
    const Tensor t = ophost::tensor_from_proto(p, {});
    EXPECT_EQ(t.dtype(), DType::kBFloat16);
    EXPECT_EQ(values_of<uint16_t>(t), (std::vector<uint16_t>{0x3f80}));
  }
  {
    auto p = proto_of(onnx::TensorProto::UINT32, {1});
    p.add_uint64_data(4000000000u);
    EXPECT_EQ(values_of<uint32_t>(ophost::tensor_from_proto(p, {})), (std::vector<uint32_t>{4000000000u}));
  }
  {
    auto p = proto_of(onnx::TensorProto::UINT64, {1});
    p.add_uint64_data(UINT64_MAX);
    EXPECT_EQ(values_of<uint64_t>(ophost::tensor_from_proto(p, {})), (std::vector<uint64_t>{UINT64_MAX}));
  }
  {
    auto p = proto_of(onnx::TensorProto::STRING, {2});
    p.add_string_data("ab");
    p.add_string_data(std::string("c\0d", 3));
    const Tensor t = ophost::tensor_from_proto(p, {});
    EXPECT_EQ(t.dtype(), DType::kString);
    EXPECT_EQ(t.strings(), (std::vector<std::string>{"ab", std::string("c\0d", 3)}));
  }
  {  // scalar
    auto p = proto_of(onnx::TensorProto::FLOAT, {});
    p.add_float_data(7.f);
    const Tensor t = ophost::tensor_from_proto(p, {});
    EXPECT_EQ(t.shape().size(), 0u);
    EXPECT_EQ(values_of<float>(t), (std::vector<float>{7.f}));
  }
  {  // empty tensor with no data at all
    auto p = proto_of(onnx::TensorProto::INT64, {0, 3});
    EXPECT_EQ(ophost::tensor_from_proto(p, {}).numel(), 0);
  }
}

TEST(TensorProtoDecode, RawDataEveryDType) {
  const int types[] = {onnx::TensorProto::FLOAT,  onnx::TensorProto::UINT8,   onnx::TensorProto::INT8,
                       onnx::TensorProto::UINT16, onnx::TensorProto::INT16,   onnx::TensorProto::INT32,
                       onnx::TensorProto::INT64,  onnx::TensorProto::BOOL,    onnx::TensorProto::FLOAT16,
                       onnx::TensorProto::DOUBLE, onnx::TensorProto::UINT32,  onnx::TensorProto::UINT64,
                       onnx::TensorProto::BFLOAT16};
  for (int type : types) {
    const DType d = *ophost::dtype_from_onnx(type);
    auto p = proto_of(type, {2, 3});
    std::string raw(6 * ophost::dtype_size(d), '\0');
    for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<char>(d == DType::kBool ? (i & 1) : i * 7 + 1);
    p.set_raw_data(raw);
    const Tensor t = ophost::tensor_from_proto(p, {});
    EXPECT_EQ(t.dtype(), d) << ophost::dtype_name(d);
    EXPECT_EQ(t.numel(), 6);
    ASSERT_EQ(t.nbytes(), raw.size());
    EXPECT_EQ(std::memcmp(t.data(), raw.data(), raw.size()), 0) << ophost::dtype_name(d);
  }
}

// Before IR 4 every initializer had to be listed as a graph input: such a model's initializers stay constants.
TEST(ModelLoad, InitializerInputsBeforeIr4AreConstants) {
  TempDir dir;
  onnx::ModelProto p = simple_model(true);
  p.set_ir_version(3);
  const Model m = ophost::load_model(save(p, dir.path / "m.onnx"));
  ASSERT_EQ(m.inputs.size(), 1u);
  EXPECT_EQ(m.required_inputs(), 1u);
  ASSERT_EQ(m.initializers.size(), 1u);
  EXPECT_EQ(m.initializers[0].first, "w");
  EXPECT_EQ(m.initializer_inputs, std::vector<std::string>{"w"});
}

// A declared type that disagrees with the initializer is an error naming both.
TEST(ModelLoad, OverridableInitializerDeclaredWithAnotherShapeIsRefused) {
  TempDir dir;
  onnx::ModelProto p = simple_model(true);
  auto* dims = p.mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->mutable_shape();
  dims->mutable_dim(0)->set_dim_value(5);
  const std::string msg = load_error(p, dir.path);
  EXPECT_CONTAINS(msg, "graph input 'w' is declared [5] but its initializer is [4]");
}

TEST(ModelLoad, InitializersOfEveryDTypeThroughAFile) {
  TempDir dir;
  const int types[] = {onnx::TensorProto::FLOAT,  onnx::TensorProto::UINT8,  onnx::TensorProto::INT8,
                       onnx::TensorProto::UINT16, onnx::TensorProto::INT16,  onnx::TensorProto::INT32,
                       onnx::TensorProto::INT64,  onnx::TensorProto::BOOL,   onnx::TensorProto::FLOAT16,
                       onnx::TensorProto::DOUBLE, onnx::TensorProto::UINT32, onnx::TensorProto::UINT64,
                       onnx::TensorProto::BFLOAT16};
  onnx::ModelProto p = simple_model();
  std::vector<std::string> raws;
  for (int type : types) {
    const DType d = *ophost::dtype_from_onnx(type);
    auto* t = p.mutable_graph()->add_initializer();
    t->set_name(std::string("init_") + ophost::dtype_name(d));
    t->set_data_type(type);
    t->add_dims(3);
    std::string raw(3 * ophost::dtype_size(d), '\0');
    for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<char>(d == DType::kBool ? (i & 1) : 0x40 + i);
    t->set_raw_data(raw);
    raws.push_back(raw);
  }
  auto* s = p.mutable_graph()->add_initializer();
  s->set_name("init_string");
  s->set_data_type(onnx::TensorProto::STRING);
  s->add_dims(1);
  s->add_string_data("text");
  const Model m = ophost::load_model(save(p, dir.path / "m.onnx"));
  ASSERT_EQ(m.initializers.size(), 2 + raws.size());
  EXPECT_TRUE(m.inputs.size() == 1 && m.inputs[0].name == "x");
  for (size_t k = 0; k < raws.size(); ++k) {
    const auto& [name, t] = m.initializers[k + 1];
    EXPECT_EQ(name, std::string("init_") + ophost::dtype_name(*ophost::dtype_from_onnx(types[k])));
    EXPECT_EQ(t.dtype(), *ophost::dtype_from_onnx(types[k]));
    ASSERT_EQ(t.nbytes(), raws[k].size()) << name;
    EXPECT_EQ(std::memcmp(t.data(), raws[k].data(), raws[k].size()), 0) << name;
  }
  EXPECT_EQ(m.initializers.back().second.strings(), std::vector<std::string>{"text"});
}

TEST(TensorProtoDecode, Errors) {
  {
    auto p = proto_of(onnx::TensorProto::INT64, {3});
    p.add_int64_data(1);
    EXPECT_CONTAINS(error_of([&] { ophost::tensor_from_proto(p, {}); }),
                    "tensor 't': int64_data holds 1 values but dims [3] (int64) need 3");
  }
  {
    auto p = proto_of(onnx::TensorProto::FLOAT, {2});  // no data at all
    EXPECT_CONTAINS(error_of([&] { ophost::tensor_from_proto(p, {}); }), "float_data holds 0 values");
  }
  {
    auto p = proto_of(onnx::TensorProto::FLOAT, {2, -1});
    EXPECT_CONTAINS(error_of([&] { ophost::tensor_from_proto(p, {}); }), "negative dimension");
  }
  {
    auto p = proto_of(onnx::TensorProto::FLOAT, {int64_t{1} << 40, int64_t{1} << 40});
    Code code{};
    error_of([&] { ophost::tensor_from_proto(p, {}); }, &code);
    EXPECT_EQ(code, Code::kOutOfRange);
  }
  {
    auto p = proto_of(0, {1});
    EXPECT_CONTAINS(error_of([&] { ophost::tensor_from_proto(p, {}); }), "data_type is not set");
  }
  {
    auto p = proto_of(onnx::TensorProto::STRING, {1});
    p.set_raw_data("abc");
    EXPECT_CONTAINS(error_of([&] { ophost::tensor_from_proto(p, {}); }), "must use string_data");
  }
}

// ---------------------------------------------------------------------------------------------------------
// External data

void set_external(onnx::TensorProto* t, const std::string& location, const std::string& offset = "",
                  const std::string& length = "") {
  t->clear_float_data();
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto kv = [&](const char* k, const std::string& v) {
    auto* e = t->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  kv("location", location);
  if (!offset.empty()) kv("offset", offset);
  if (!length.empty()) kv("length", length);
}

// The model lives in <tmp>/model/; <tmp>/outside.bin is a perfectly readable file outside the model's folder.
struct ExternalFixture : ::testing::Test {
  TempDir tmp;
  fs::path model_dir;
  void SetUp() override {
    model_dir = tmp.path / "model";
    fs::create_directories(model_dir);
    const float vals[6] = {-9.f, -9.f, 10.f, 20.f, 30.f, 40.f};  // 8 bytes of padding, then the 4 values
    std::string bytes(reinterpret_cast<const char*>(vals), sizeof vals);
    write_file(model_dir / "weights.bin", bytes);
    write_file(model_dir / "sub" / "w2.bin", bytes);
    write_file(tmp.path / "outside.bin", bytes);
  }
  onnx::ModelProto model_with(const std::string& location, const std::string& offset = "8",
                              const std::string& length = "16") {
    onnx::ModelProto p = simple_model();
    set_external(p.mutable_graph()->mutable_initializer(0), location, offset, length);
    return p;
  }
  std::string error_for(const std::string& location, const std::string& offset = "8",
                        const std::string& length = "16", Code* code = nullptr) {
    return load_error(model_with(location, offset, length), model_dir, code);
  }
  void expect_loads(const std::string& location, const std::string& offset = "8",
                    const std::string& length = "16") {
    const Model m = ophost::load_model(save(model_with(location, offset, length), model_dir / "model.onnx"));
    ASSERT_EQ(m.initializers.size(), 1u);
    EXPECT_EQ(values_of<float>(m.initializers[0].second), (std::vector<float>{10.f, 20.f, 30.f, 40.f}))
        << location;
  }
};

TEST_F(ExternalFixture, LoadsInsideTheFolder) {
  expect_loads("weights.bin");
  expect_loads("sub/w2.bin");
  expect_loads("./sub/../weights.bin");
  fs::create_symlink("weights.bin", model_dir / "inner_link.bin");
  expect_loads("inner_link.bin");
}

TEST_F(ExternalFixture, OffsetAndLengthOptional) {
  // No length: the tensor's size is read from the offset.
  expect_loads("weights.bin", "8", "");
  // No offset: starts at 0.
  onnx::ModelProto p = simple_model();
  set_external(p.mutable_graph()->mutable_initializer(0), "sub/w2.bin");
  const Model m = ophost::load_model(save(p, model_dir / "model.onnx"));
  EXPECT_EQ(values_of<float>(m.initializers[0].second), (std::vector<float>{-9.f, -9.f, 10.f, 20.f}));
}

TEST_F(ExternalFixture, RejectsParentEscape) {
  Code code{};
  const std::string msg = error_for("../outside.bin", "8", "16", &code);
  EXPECT_EQ(code, Code::kPermissionDenied);
  EXPECT_CONTAINS(msg, "initializer: tensor 'w': external data location '../outside.bin' escapes the model's folder");
}

TEST_F(ExternalFixture, RejectsNestedParentEscape) {
  EXPECT_CONTAINS(error_for("sub/../../outside.bin"), "escapes the model's folder");
  EXPECT_CONTAINS(error_for("a/../../outside.bin"), "escapes the model's folder");
}

TEST_F(ExternalFixture, RejectsAbsolutePath) {
  const std::string abs = (tmp.path / "outside.bin").string();
  EXPECT_CONTAINS(error_for(abs), "external data location '" + abs + "' is an absolute path");
  // Even an absolute path that points inside the folder.
  EXPECT_CONTAINS(error_for((model_dir / "weights.bin").string()), "is an absolute path");
}

TEST_F(ExternalFixture, RejectsSymlinkOut) {
  fs::create_symlink(tmp.path / "outside.bin", model_dir / "link.bin");
  Code code{};
  const std::string msg = error_for("link.bin", "8", "16", &code);
  EXPECT_EQ(code, Code::kPermissionDenied);
  EXPECT_CONTAINS(msg, "external data location 'link.bin' resolves to '" + (tmp.path / "outside.bin").string() +
                           "', outside the model's folder");
  // A symlinked folder leading out.
  fs::create_directory_symlink(tmp.path, model_dir / "up");
  EXPECT_CONTAINS(error_for("up/outside.bin"), "outside the model's folder");
}

// The file checked is the file read: while another thread keeps swapping w.bin between a real file inside the
// folder and a symbolic link to a file outside, every load either reads the inside values or fails naming the
// link; none ever reads the outside bytes (before the open went through the folder's descriptor with
// RESOLVE_BENEATH, about 1 load in 1,000 did).
TEST_F(ExternalFixture, SwappingTheFileForALinkDuringLoadsNeverReadsOutside) {
  const float evil[6] = {666.f, 666.f, 666.f, 666.f, 666.f, 666.f};
  write_file(tmp.path / "evil.bin", std::string(reinterpret_cast<const char*>(evil), sizeof evil));
  fs::copy_file(model_dir / "weights.bin", model_dir / "w.bin");
  const fs::path file = save(model_with("w.bin"), model_dir / "model.onnx");
  std::atomic<bool> stop{false};
  std::thread swapper([&] {
    const std::string w = (model_dir / "w.bin").string(), good = (model_dir / "w_good").string(),
                      bad = (model_dir / "w_bad").string(), evil_path = (tmp.path / "evil.bin").string();
    while (!stop.load()) {
      if (::link((model_dir / "weights.bin").c_str(), good.c_str()) == 0) ::rename(good.c_str(), w.c_str());
      if (::symlink(evil_path.c_str(), bad.c_str()) == 0) ::rename(bad.c_str(), w.c_str());
    }
  });
  int ok = 0, refused = 0, foreign = 0;
  for (int i = 0; i < 2000; ++i) {
    try {
      const Model m = ophost::load_model(file);
      const auto v = values_of<float>(m.initializers[0].second);
      if (std::find(v.begin(), v.end(), 666.f) != v.end()) ++foreign;
      else ++ok;
    } catch (const Error& e) {
      ++refused;
      const std::string msg = e.what();
      EXPECT_TRUE(msg.find("outside the model's folder") != std::string::npos ||
                  msg.find("not found") != std::string::npos)
          << msg;
    }
  }
  stop = true;
  swapper.join();
  EXPECT_EQ(foreign, 0) << ok << " loads read the inside file, " << refused << " were refused";
  EXPECT_GT(ok + refused, 0);
}

TEST_F(ExternalFixture, RejectsRangePastEnd) {
  Code code{};
  const std::string msg = error_for("weights.bin", "16", "16", &code);
  EXPECT_EQ(code, Code::kOutOfRange);
  EXPECT_CONTAINS(msg, "external data range offset 16 + length 16 runs past the end of 'weights.bin' (24 bytes)");
  EXPECT_CONTAINS(error_for("weights.bin", "100", "16"), "offset 100 is past the end");
  EXPECT_CONTAINS(error_for("weights.bin", "12", ""), "holds 12 bytes from offset 12 but the tensor needs 16");
  // Overflowing offset + length must not wrap around.
  EXPECT_CONTAINS(error_for("weights.bin", "8", "9223372036854775807"), "runs past the end");
}

TEST_F(ExternalFixture, RejectsBadNumbers) {
  EXPECT_CONTAINS(error_for("weights.bin", "-8", "16"), "external data offset is negative (-8)");
  EXPECT_CONTAINS(error_for("weights.bin", "8", "-16"), "external data length is negative (-16)");
  EXPECT_CONTAINS(error_for("weights.bin", "eight", "16"), "external data offset 'eight' is not an integer");
  EXPECT_CONTAINS(error_for("weights.bin", "8", "99999999999999999999999"), "out of range");
}

TEST_F(ExternalFixture, RejectsLengthMismatchAndMissingFile) {
  EXPECT_CONTAINS(error_for("weights.bin", "8", "12"),
                  "external data length 12 does not match the tensor's size (16 bytes)");
  Code code{};
  EXPECT_CONTAINS(error_for("nothere.bin", "0", "16", &code), "external data file 'nothere.bin' not found");
  EXPECT_EQ(code, Code::kNotFound);
  EXPECT_CONTAINS(error_for("sub"), "is not a regular file");
  EXPECT_CONTAINS(error_for(""), "external_data has no 'location'");
}

TEST_F(ExternalFixture, RejectsExternalDataFromMemory) {
  std::string bytes;
  ASSERT_TRUE(model_with("weights.bin").SerializeToString(&bytes));
  const std::string msg = error_of([&] {
    ophost::load_model_from_bytes(std::as_bytes(std::span<const char>(bytes.data(), bytes.size())), {}, "mem");
  });
  EXPECT_CONTAINS(msg, "loaded from memory with no folder");
}

TEST_F(ExternalFixture, AttributeTensorWithExternalData) {
  onnx::ModelProto p = simple_model();
  auto* c = add_node(p.mutable_graph(), "Constant", {}, {"k"}, "const_ext");
  auto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = float_tensor("kval", {4}, {0, 0, 0, 0});
  set_external(a->mutable_t(), "../outside.bin", "8", "16");
  EXPECT_CONTAINS(load_error(p, model_dir),
                  "node 'const_ext' (Constant): attribute 'value': tensor 'kval': external data location "
                  "'../outside.bin' escapes");
}

}  // namespace
