// libFuzzer: one-node models with fuzzed attributes and inputs, loaded AND run. Seeded from the ONNX node suite:
// every case whose graph is one standard-domain node over tensor inputs is a template; a fuzz input is
//   [2 bytes: template index, little-endian, modulo the template count][a stream FuzzedDataProvider consumes]
// and the stream decides, attribute by attribute, whether to replace the value (hostile integers: 0, -1,
// INT32_MIN, 2^40, ...; NaN/inf floats; empty, long or garbage lists and strings) or drop the attribute, and,
// input by input, whether to replace the test input with a small tensor of another shape (its declared shape is
// then cleared so the kernel, not the input check, sees it). An input of only the two index bytes is the
// unchanged conformance case.
//
// Outcomes: success or an ophost::Error is fine, except a kernel-debug finding (the session runs with
// debug_kernels: 1024 guard bytes after each arena buffer, inputs compared before/after compute, outputs
// poisoned) that shows memory corruption: a write past the end of an output, a write into a read-only input,
// or a floating-point output element left unwritten (the poison is a signalling NaN no arithmetic produces;
// fuzzed input NaNs are made quiet). Integer outputs equal to the 0xA5 poison are not counted: a kernel may
// legitimately compute that value. A crash, sanitizer report, leak, or a finding is a finding for libFuzzer.
//
// The packs come from a normal (uninstrumented) build, as for ophost_fuzz_model: their memory errors show as
// crashes or as the guard-zone findings above.
//   OPHOST_FUZZ_PLUGIN_DIR=<build>/lib/ophost/plugins OPHOST_FUZZ_OP_CASES=<onnx-1.12-node> ophost_fuzz_op corpus/
// To turn a finding into a regression case, replay it with OPHOST_FUZZ_OP_SAVE=DIR: the target writes the
// mutated model as DIR/model.onnx and each input as DIR/<input>.npy (what `ophost run --input` takes; see
// tests/hostile/op_regressions) and prints the node.
#include <ophost/error.hpp>
#include <ophost/runtime.hpp>

#include <fuzzer/FuzzedDataProvider.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct Template {
  std::string name;
  onnx::ModelProto model;
  std::vector<onnx::TensorProto> inputs;  // in graph-input order (initializers excluded)
};

// Never destroyed (see fuzz_model.cpp: the packs' statics die before a static Runtime would).
ophost::Runtime* g_runtime = nullptr;
std::vector<Template>* g_templates = nullptr;

bool read_file(const fs::path& p, std::string& out) {
  std::ifstream f(p, std::ios::binary);
  if (!f) return false;
  out.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return true;
}

// A case is a template when its graph is one standard-domain node and every input is a dense tensor whose test
// data parses as a TensorProto of a numeric type.
bool load_template(const fs::path& dir, Template& t) {
  std::string bytes;
  if (!read_file(dir / "model.onnx", bytes) || !t.model.ParseFromString(bytes)) return false;
  const auto& g = t.model.graph();
  if (g.node_size() != 1) return false;
  const auto& domain = g.node(0).domain();
  if (!domain.empty() && domain != "ai.onnx" && domain != "ai.onnx.ml") return false;
  for (const auto& a : g.node(0).attribute())
    if (a.type() == onnx::AttributeProto::GRAPH || a.type() == onnx::AttributeProto::GRAPHS) return false;
  std::vector<std::string> init;
  for (const auto& i : g.initializer()) init.push_back(i.name());
  int k = 0;
  for (const auto& in : g.input()) {
    if (std::find(init.begin(), init.end(), in.name()) != init.end()) continue;
    if (!in.type().has_tensor_type()) return false;
    std::string tb;
    onnx::TensorProto tp;
    if (!read_file(dir / "test_data_set_0" / ("input_" + std::to_string(k++) + ".pb"), tb) || !tp.ParseFromString(tb))
      return false;
    if (tp.data_type() == onnx::TensorProto::STRING || tp.data_type() == onnx::TensorProto::UNDEFINED) return false;
    tp.set_name(in.name());
    t.inputs.push_back(std::move(tp));
  }
  t.name = dir.filename().string();
  return true;
}

template <class T, class F>
void fill_from(ophost::Tensor& t, const F& field) {
  if (static_cast<int64_t>(field.size()) != t.numel()) throw ophost::Error(ophost::Code::kInvalidArgument, "size");
  T* d = t.data_as<T>();
  for (int64_t i = 0; i < t.numel(); ++i) d[i] = static_cast<T>(field.Get(static_cast<int>(i)));
}

// TensorProto -> Tensor for the numeric types the node suite uses (raw_data or the typed fields).
ophost::Tensor to_tensor(const onnx::TensorProto& tp) {
  std::vector<int64_t> shape(tp.dims().begin(), tp.dims().end());
  const auto dt = static_cast<ophost::DType>(tp.data_type());
  ophost::Tensor t(dt, shape);
  if (tp.has_raw_data()) {
    if (tp.raw_data().size() != t.nbytes()) throw ophost::Error(ophost::Code::kInvalidArgument, "raw size");
    if (t.nbytes()) std::memcpy(t.data(), tp.raw_data().data(), t.nbytes());
    return t;
  }
  using ophost::DType;
  switch (dt) {
    case DType::kFloat32: fill_from<float>(t, tp.float_data()); break;
    case DType::kFloat64: fill_from<double>(t, tp.double_data()); break;
    case DType::kInt64: fill_from<int64_t>(t, tp.int64_data()); break;
    case DType::kUint64: fill_from<uint64_t>(t, tp.uint64_data()); break;
    case DType::kUint32: fill_from<uint32_t>(t, tp.uint64_data()); break;
    case DType::kInt32: fill_from<int32_t>(t, tp.int32_data()); break;
    case DType::kInt16: fill_from<int16_t>(t, tp.int32_data()); break;
    case DType::kUint16: case DType::kFloat16: case DType::kBFloat16: fill_from<uint16_t>(t, tp.int32_data()); break;
    case DType::kInt8: fill_from<int8_t>(t, tp.int32_data()); break;
    case DType::kUint8: case DType::kBool: fill_from<uint8_t>(t, tp.int32_data()); break;
    default: throw ophost::Error(ophost::Code::kInvalidArgument, "dtype");
  }
  return t;
}

int64_t hostile_int(FuzzedDataProvider& p) {
  static constexpr int64_t kPool[] = {0, 1, -1, 2, 3, -2, 7, 64, std::numeric_limits<int32_t>::max(),
                                      std::numeric_limits<int32_t>::min(), std::numeric_limits<int64_t>::max(),
                                      std::numeric_limits<int64_t>::min(), int64_t{1} << 31, int64_t{1} << 40,
                                      -(int64_t{1} << 40)};
  if (p.ConsumeBool()) return p.ConsumeIntegral<int64_t>();
  return kPool[p.ConsumeIntegralInRange<size_t>(0, std::size(kPool) - 1)];
}

float hostile_float(FuzzedDataProvider& p) {
  static constexpr float kPool[] = {0.0f, -0.0f, 1.0f, -1.0f, 1e30f, -1e30f, 1e-30f,
                                    std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                                    -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::max()};
  if (p.ConsumeBool()) return p.ConsumeFloatingPoint<float>();
  return kPool[p.ConsumeIntegralInRange<size_t>(0, std::size(kPool) - 1)];
}

void mutate_attributes(onnx::NodeProto& node, FuzzedDataProvider& p) {
  for (int i = 0; i < node.attribute_size();) {
    if (!p.ConsumeBool()) { ++i; continue; }
    if (p.ConsumeIntegralInRange<int>(0, 7) == 0) {  // drop it: the default, or "required" refused
      node.mutable_attribute()->DeleteSubrange(i, 1);
      continue;
    }
    auto& a = *node.mutable_attribute(i++);
    const size_t n = p.ConsumeIntegralInRange<size_t>(0, 9);
    switch (a.type()) {
      case onnx::AttributeProto::INT: a.set_i(hostile_int(p)); break;
      case onnx::AttributeProto::FLOAT: a.set_f(hostile_float(p)); break;
      case onnx::AttributeProto::INTS:
        a.clear_ints();
        for (size_t k = 0; k < n; ++k) a.add_ints(hostile_int(p));
        break;
      case onnx::AttributeProto::FLOATS:
        a.clear_floats();
        for (size_t k = 0; k < n; ++k) a.add_floats(hostile_float(p));
        break;
      case onnx::AttributeProto::STRING: a.set_s(p.ConsumeRandomLengthString(40)); break;
      case onnx::AttributeProto::STRINGS:
        a.clear_strings();
        for (size_t k = 0; k < n; ++k) a.add_strings(p.ConsumeRandomLengthString(16));
        break;
      default: break;  // TENSOR attributes keep their value
    }
  }
}

// A small tensor of the input's dtype with a fuzzed shape (rank 0-4, dims 0-6) and fuzzed bytes; NaNs made
// quiet so the kernel-debug poison (a signalling NaN) cannot come from the input.
ophost::Tensor fuzzed_input(ophost::DType dt, FuzzedDataProvider& p) {
  std::vector<int64_t> shape(p.ConsumeIntegralInRange<size_t>(0, 4));
  for (auto& d : shape) d = p.ConsumeIntegralInRange<int64_t>(0, 6);
  ophost::Tensor t(dt, shape);
  auto* b = static_cast<uint8_t*>(t.data());
  const size_t nb = t.nbytes();
  for (size_t i = 0; i < nb && p.remaining_bytes(); ++i) b[i] = p.ConsumeIntegral<uint8_t>();
  if (dt == ophost::DType::kFloat32) {
    for (int64_t i = 0; i < t.numel(); ++i)
      if (std::isnan(t.data_as<float>()[i])) t.data_as<float>()[i] = std::numeric_limits<float>::quiet_NaN();
  } else if (dt == ophost::DType::kFloat64) {
    for (int64_t i = 0; i < t.numel(); ++i)
      if (std::isnan(t.data_as<double>()[i])) t.data_as<double>()[i] = std::numeric_limits<double>::quiet_NaN();
  } else if (dt == ophost::DType::kBool) {
    for (size_t i = 0; i < nb; ++i) b[i] &= 1;
  }
  return t;
}

// Memory-corruption findings of the kernel debug mode (see the opening comment).
// Little-endian .npy (format 1.0) of a numeric tensor.
void write_npy(const fs::path& path, const ophost::Tensor& t) {
  static const std::pair<ophost::DType, const char*> kDescr[] = {
      {ophost::DType::kFloat32, "<f4"}, {ophost::DType::kFloat64, "<f8"}, {ophost::DType::kFloat16, "<f2"},
      {ophost::DType::kInt8, "|i1"},    {ophost::DType::kUint8, "|u1"},   {ophost::DType::kInt16, "<i2"},
      {ophost::DType::kUint16, "<u2"},  {ophost::DType::kInt32, "<i4"},   {ophost::DType::kUint32, "<u4"},
      {ophost::DType::kInt64, "<i8"},   {ophost::DType::kUint64, "<u8"},  {ophost::DType::kBool, "|b1"}};
  const char* descr = nullptr;
  for (const auto& [dt, d] : kDescr)
    if (dt == t.dtype()) descr = d;
  if (!descr) {
    std::fprintf(stderr, "ophost_fuzz_op: cannot save a %s input as .npy\n", ophost::dtype_name(t.dtype()));
    return;
  }
  std::string shape;
  for (int64_t d : t.shape()) shape += std::to_string(d) + ",";
  if (t.shape().size() > 1) shape.pop_back();
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (" + shape + "), }";
  header.append(63 - (10 + header.size()) % 64, ' ');
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  const uint16_t len = static_cast<uint16_t>(header.size());
  f.write("\x93NUMPY\x01\x00", 8);
  f.put(static_cast<char>(len & 0xff));
  f.put(static_cast<char>(len >> 8));
  f << header;
  f.write(static_cast<const char*>(t.data()), static_cast<std::streamsize>(t.nbytes()));
}

bool is_corruption(const std::string& m) {
  if (m.find("debug-kernels:") == std::string::npos) return false;
  if (m.find("wrote past the end") != std::string::npos || m.find("wrote into input") != std::string::npos)
    return true;
  for (const char* f : {"(float32 ", "(float64 ", "(float16 ", "(bfloat16 "}) {
    const size_t at = m.find(f);
    if (at != std::string::npos && m.find("never written", at) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("OPHOST_LOG_LEVEL", "off", 1);
  const char* dir = std::getenv("OPHOST_FUZZ_PLUGIN_DIR");
  const char* cases = std::getenv("OPHOST_FUZZ_OP_CASES");
  if (!dir || !*dir || !cases || !*cases) {
    std::fprintf(stderr,
                 "ophost_fuzz_op: set OPHOST_FUZZ_PLUGIN_DIR to a plugin root (<build>/lib/ophost/plugins) and "
                 "OPHOST_FUZZ_OP_CASES to the ONNX node suite (a folder of <case>/model.onnx + test_data_set_0)\n");
    std::abort();
  }
  ophost::RuntimeOptions o;
  o.use_env_plugin_path = false;
  o.use_default_plugin_dir = false;
  o.plugin_paths = {dir};
  o.intra_op_threads = 1;
  g_runtime = new ophost::Runtime(o);
  g_templates = new std::vector<Template>();
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(cases))
    if (e.is_directory()) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());  // the index bytes of a saved input keep meaning the same case
  for (const auto& d : dirs) {
    Template t;
    if (load_template(d, t)) g_templates->push_back(std::move(t));
  }
  if (g_runtime->plugins().empty() || g_templates->empty()) {
    std::fprintf(stderr, "ophost_fuzz_op: %zu plugins in %s, %zu one-node templates in %s\n",
                 g_runtime->plugins().size(), dir, g_templates->size(), cases);
    std::abort();
  }
  std::fprintf(stderr, "ophost_fuzz_op: %zu one-node templates from %s\n", g_templates->size(), cases);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const Template& t = (*g_templates)[(size_t{data[0]} | size_t{data[1]} << 8) % g_templates->size()];
  FuzzedDataProvider p(data + 2, size - 2);
  onnx::ModelProto model = t.model;
  auto& graph = *model.mutable_graph();
  mutate_attributes(*graph.mutable_node(0), p);

  std::vector<ophost::NamedTensor> inputs;
  try {
    for (const auto& tp : t.inputs) {
      ophost::Tensor x = to_tensor(tp);
      if (p.ConsumeBool()) {
        x = fuzzed_input(x.dtype(), p);
        for (auto& gi : *graph.mutable_input())
          if (gi.name() == tp.name()) gi.mutable_type()->mutable_tensor_type()->clear_shape();
      }
      inputs.push_back({tp.name(), std::move(x)});
    }
  } catch (const ophost::Error&) {
    return 0;  // a template input this target cannot convert
  }
  for (auto& go : *graph.mutable_output()) go.mutable_type()->mutable_tensor_type()->clear_shape();

  std::string bytes;
  model.SerializeToString(&bytes);
  if (const char* save = std::getenv("OPHOST_FUZZ_OP_SAVE"); save && *save) {
    fs::create_directories(save);
    std::ofstream(fs::path(save) / "model.onnx", std::ios::binary) << bytes;
    for (const auto& in : inputs) write_npy(fs::path(save) / (in.name + ".npy"), in.tensor);
    std::fprintf(stderr, "ophost_fuzz_op: case %s saved in %s:\n%s", t.name.c_str(), save,
                 graph.node(0).DebugString().c_str());
  }
  ophost::SessionOptions so;
  so.max_tensor_bytes = 64u << 20;
  so.mem_limit = 256u << 20;
  so.run_timeout_ms = 5000;
  so.max_loop_iterations = 10000;
  so.debug_kernels = true;
  try {
    auto session = g_runtime->load_from_bytes(
        std::span<const std::byte>(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()), so,
        t.name + ".onnx");
    session->run(inputs);
  } catch (const ophost::Error& e) {
    const std::string m = e.what();
    if (is_corruption(m)) {
      std::fprintf(stderr, "ophost_fuzz_op: memory corruption in case %s: %s\n", t.name.c_str(), m.c_str());
      std::abort();
    }
  }
  return 0;
}
