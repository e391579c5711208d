// ophost::OpRunner (ophost/op_runner.hpp), the op runner `pack check` and the backend test host share: real
// onnx-core ops loaded from this build tree (Add with broadcasting, LeakyRelu with its attribute default and an
// override, an input Add refuses, an attribute value LeakyRelu's create_kernel refuses), attribute errors naming
// op and attribute, and an op defined here in C tables whose kernel states are counted (created, destroyed once,
// moved, reset), whose infer can answer wrongly on request, and whose compute calls allocate_output.
#include "integration_support.hpp"

#include <ophost/error.hpp>
#include <ophost/op_runner.hpp>
#include <ophost/op_schema.hpp>
#include <ophost/pack.hpp>
#include <ophost/services.hpp>

#include <cmath>
#include <cstring>
#include <limits>

namespace ophost::itest {
namespace {

constexpr oph_dtype kF32{OPH_DTYPE_FLOAT, 32, 1};
constexpr oph_dtype kI64{OPH_DTYPE_INT, 64, 1};

// A float32 tensor view over `data` (which outlives the view).
oph_tensor view(std::vector<float>& data, std::vector<int64_t>& shape) {
  oph_tensor t{};
  t.data = data.data();
  t.device = {OPH_DL_CPU, 0};
  t.ndim = static_cast<int32_t>(shape.size());
  t.dtype = kF32;
  t.shape = shape.data();
  return t;
}

template <class F>
std::string error_of(F&& f, Code* code = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "(no error)";
}

class OpRunnerOnnxCore : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    lib_ = PluginLibrary::load(kPluginDir / "onnx-core" / "libonnx-core.so", {}, nullptr, "onnx-core: ").release();
    for (const oph_op_def* op : lib_->ops()) schemas_->push_back(OpSchema::from_def(*op));
  }
  static const OpSchema& op(const std::string& name, int opset) {
    for (const OpSchema& s : *schemas_)
      if (s.domain.empty() && s.name == name && s.device == "cpu" && s.contains(opset)) return s;
    throw std::runtime_error("onnx-core has no " + name + " for opset " + std::to_string(opset) + " on cpu");
  }
  // Runs a one-output float op on `inputs` and returns its output (shape from infer).
  static std::vector<float> run(const OpRunner& runner, std::vector<std::vector<float>> inputs,
                                std::vector<std::vector<int64_t>> shapes, std::vector<int64_t>* out_shape) {
    std::vector<oph_value_info> infos;
    for (const auto& s : shapes) infos.push_back(value_info(kF32, s));
    std::vector<oph_value_info> outs = runner.infer(infos);
    EXPECT_EQ(outs.size(), 1u);
    out_shape->assign(outs[0].shape, outs[0].shape + outs[0].ndim);
    size_t n = 1;
    for (int64_t d : *out_shape) n *= static_cast<size_t>(d);
    std::vector<float> y(n, -1234.0f);
    std::vector<oph_tensor> in_views;
    for (size_t i = 0; i < inputs.size(); ++i) in_views.push_back(view(inputs[i], shapes[i]));
    std::vector<const oph_tensor*> in_ptrs;
    for (const oph_tensor& t : in_views) in_ptrs.push_back(&t);
    oph_tensor y_view = view(y, *out_shape);
    std::vector<oph_tensor*> out_ptrs = {&y_view};
    OpKernel kernel = runner.create_kernel(infos, outs);
    EXPECT_TRUE(kernel.created());
    kernel.compute({.inputs = in_ptrs, .outputs = out_ptrs});
    return y;
  }

  static PluginLibrary* lib_;  // loaded once, never released (packs' static destructors may run first at exit)
  static std::vector<OpSchema>* schemas_;
};
PluginLibrary* OpRunnerOnnxCore::lib_ = nullptr;
std::vector<OpSchema>* OpRunnerOnnxCore::schemas_ = new std::vector<OpSchema>();

TEST_F(OpRunnerOnnxCore, AddBroadcastsThroughInferCreateAndCompute) {
  OpRunner add(op("Add", 14));
  std::vector<int64_t> shape;
  std::vector<float> y = run(add, {{1, 2, 3, 4, 5, 6}, {10, 20, 30}}, {{2, 3}, {3}}, &shape);
  EXPECT_EQ(shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(y, (std::vector<float>{11, 22, 33, 14, 25, 36}));
}

TEST_F(OpRunnerOnnxCore, AttributesTakeTheDefaultUnlessGiven) {
  const OpSchema& leaky = op("LeakyRelu", 16);
  std::vector<int64_t> shape;
  OpRunner by_default(leaky);
  ASSERT_EQ(by_default.attrs().size(), 1u);
  EXPECT_EQ(by_default.attrs()[0].type, OPH_ATTR_FLOAT);
  EXPECT_FLOAT_EQ(by_default.attrs()[0].f, 0.01f);  // ONNX's default alpha
  EXPECT_EQ(run(by_default, {{-2, 3}}, {{2}}, &shape), (std::vector<float>{-0.02f, 3}));

  oph_attr_value half{};
  half.type = OPH_ATTR_FLOAT;
  half.f = 0.5f;
  OpRunner given(leaky, {{"alpha", half}});
  EXPECT_EQ(given.attrs()[0].struct_size, size_t{OPH_ATTR_VALUE_STRUCT_SIZE});
  EXPECT_EQ(run(given, {{-2, 3}}, {{2}}, &shape), (std::vector<float>{-1, 3}));
}

TEST_F(OpRunnerOnnxCore, UnknownAttributeAndWrongTypeNameOpAndAttribute) {
  const OpSchema& leaky = op("LeakyRelu", 16);
  oph_attr_value f{};
  f.type = OPH_ATTR_FLOAT;
  f.f = 1;
  Code code = Code::kOk;
  std::string e = error_of([&] { OpRunner r(leaky, {{"beta", f}}); }, &code);
  EXPECT_EQ(code, Code::kInvalidArgument);
  EXPECT_CONTAINS(e, "ai.onnx::LeakyRelu [");
  EXPECT_CONTAINS(e, "unknown attribute 'beta'; the op accepts: alpha (float, default 0.01)");

  oph_attr_value i{};
  i.type = OPH_ATTR_INT;
  i.i = 2;
  e = error_of([&] { OpRunner r(leaky, {{"alpha", i}}); }, &code);
  EXPECT_EQ(code, Code::kInvalidArgument);
  EXPECT_CONTAINS(e, "ai.onnx::LeakyRelu [");
  EXPECT_CONTAINS(e, "attribute 'alpha' is int but the op declares it float (write it as a float");
}

TEST_F(OpRunnerOnnxCore, InferRejectionIsReportedNotThrownByTryInfer) {
  OpRunner add(op("Add", 14));
  const std::vector<int64_t> a{2, 3}, b{4};
  const std::vector<oph_value_info> infos = {value_info(kF32, a), value_info(kF32, b)};
  InferResult r = add.try_infer(infos);
  EXPECT_TRUE(r.rejected());
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.status.code, Code::kOk);
  EXPECT_FALSE(r.status.message.empty());
  EXPECT_TRUE(r.outputs.empty());
  std::string e = error_of([&] { add.infer(infos); });
  EXPECT_CONTAINS(e, "ai.onnx::Add [");
  EXPECT_CONTAINS(e, ": infer rejected the inputs: " + r.status.message);
}

TEST_F(OpRunnerOnnxCore, CreateKernelRefusalComesBackAsStatusOrError) {
  oph_attr_value nan{};
  nan.type = OPH_ATTR_FLOAT;
  nan.f = std::numeric_limits<float>::quiet_NaN();
  OpRunner leaky(op("LeakyRelu", 16), {{"alpha", nan}});
  const std::vector<int64_t> shape{3};
  const std::vector<oph_value_info> in = {value_info(kF32, shape)};
  const std::vector<oph_value_info> out = leaky.infer(in);
  OpKernel kernel;
  CallStatus s = leaky.try_create_kernel(in, out, {OPH_DL_CPU, 0}, kernel);
  EXPECT_FALSE(s.ok());
  EXPECT_CONTAINS(s.message, "alpha must be finite");
  EXPECT_FALSE(kernel.created());
  std::string e = error_of([&] { leaky.create_kernel(in, out); });
  EXPECT_CONTAINS(e, ": create_kernel failed: ");
  EXPECT_CONTAINS(e, "alpha must be finite");
}

// ---- an op defined here -------------------------------------------------------------------------------------

// test::probe(X: T) -> Y: T, T = float32; attribute mode (int, required). infer by mode: 0 Y = X's shape;
// 1 leaves Y unset; 2 a rank above OPH_MAX_NDIM; 3 dtype int64 (T does not allow it); 4 shape unknown (compute
// allocates Y); 5 refuses; 7 a dtype no ONNX type maps to (float24). create_kernel refuses mode 6. The kernel state counts the states alive and destroyed.
struct Probe {
  static inline int live = 0, destroyed = 0;
  static inline const oph_host_services* infer_services = nullptr;
  static inline std::string node_name;
  static inline void* compute_state = nullptr;
  static inline oph_device compute_device{};
  static inline void* compute_stream = nullptr;

  static int64_t mode(const oph_attr_value* const* attrs) { return attrs[0]->i; }

  static oph_status* infer(const oph_infer_context* ctx) {
    infer_services = ctx->services;
    node_name = ctx->node_name;
    oph_value_info& y = *ctx->outputs[0];
    const oph_value_info& x = *ctx->inputs[0];
    switch (mode(ctx->attrs)) {
      case 1: return nullptr;
      case 5: return ctx->services->status_create(OPH_CODE_INVALID_ARGUMENT, "probe refuses mode 5");
      default: break;
    }
    y.dtype = mode(ctx->attrs) == 3 ? kI64 : mode(ctx->attrs) == 7 ? oph_dtype{OPH_DTYPE_FLOAT, 24, 1} : x.dtype;
    y.ndim = mode(ctx->attrs) == 2 ? OPH_MAX_NDIM + 1 : x.ndim;
    for (int32_t d = 0; d < x.ndim; ++d) y.shape[d] = mode(ctx->attrs) == 4 ? OPH_DIM_UNKNOWN : x.shape[d];
    return nullptr;
  }
  static oph_status* create(const oph_kernel_create_args* args, void** state) {
    if (mode(args->attrs) == 6) return args->services->status_create(OPH_CODE_UNIMPLEMENTED, "probe mode 6");
    *state = new int(static_cast<int>(mode(args->attrs)));
    ++live;
    return nullptr;
  }
  static void destroy(void* state) {
    delete static_cast<int*>(state);
    --live;
    ++destroyed;
  }
  static oph_status* compute(void* state, const oph_compute_context* ctx) {
    compute_state = state;
    compute_device = ctx->device;
    compute_stream = ctx->stream;
    const oph_tensor& x = *ctx->inputs[0];
    if (ctx->outputs[0]->data == nullptr) {
      if (!ctx->allocate_output) return ctx->services->status_create(OPH_CODE_INTERNAL, "no allocate_output");
      if (oph_status* s = ctx->allocate_output(ctx, 0, x.ndim, x.shape)) return s;
    }
    oph_tensor& y = *ctx->outputs[0];
    size_t n = 1;
    for (int32_t d = 0; d < x.ndim; ++d) n *= static_cast<size_t>(x.shape[d]);
    for (size_t i = 0; i < n; ++i) static_cast<float*>(y.data)[i] = 2 * static_cast<const float*>(x.data)[i];
    return nullptr;
  }
};

struct ProbeTables {
  const oph_dtype t_types[1] = {kF32};
  const oph_type_constraint t{OPH_TYPE_CONSTRAINT_STRUCT_SIZE, "T", t_types, 1};
  const oph_type_constraint* constraints[1] = {&t};
  const oph_io_def x{OPH_IO_DEF_STRUCT_SIZE, "X", "T", OPH_ARITY_SINGLE, 0, OPH_MEMORY_DEVICE};
  const oph_io_def y{OPH_IO_DEF_STRUCT_SIZE, "Y", "T", OPH_ARITY_SINGLE, 0, OPH_MEMORY_DEVICE};
  const oph_io_def* inputs[1] = {&x};
  const oph_io_def* outputs[1] = {&y};
  const oph_attr_def mode{OPH_ATTR_DEF_STRUCT_SIZE, "mode", OPH_ATTR_INT, true, nullptr};
  const oph_attr_def* attrs[1] = {&mode};
  oph_op_def def{};

  ProbeTables() {
    def.struct_size = OPH_OP_DEF_STRUCT_SIZE;
    def.domain = "test";
    def.name = "probe";
    def.since_version = 1;
    def.end_version = OPH_OPSET_MAX;
    def.device = "cpu";
    def.inputs = inputs;
    def.num_inputs = 1;
    def.outputs = outputs;
    def.num_outputs = 1;
    def.type_constraints = constraints;
    def.num_type_constraints = 1;
    def.attributes = attrs;
    def.num_attributes = 1;
    def.infer = &Probe::infer;
    def.create_kernel = &Probe::create;
    def.destroy_kernel = &Probe::destroy;
    def.compute = &Probe::compute;
  }
};

class OpRunnerProbe : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(validate_op_def(&tables_.def), "");
    Probe::live = Probe::destroyed = 0;
  }
  std::vector<NamedAttr> mode(int64_t m) {
    oph_attr_value v{};
    v.type = OPH_ATTR_INT;
    v.i = m;
    return {{"mode", v}};
  }

  ProbeTables tables_;
  const OpSchema schema_ = OpSchema::from_def(tables_.def);
  const std::vector<int64_t> shape_{2, 2};
  const std::vector<oph_value_info> in_{value_info(kF32, shape_)};
};

TEST_F(OpRunnerProbe, KernelStateIsDestroyedOnceByItsOwner) {
  OpRunner runner(schema_, mode(0));
  const std::vector<oph_value_info> out = runner.infer(in_);
  {
    OpKernel k = runner.create_kernel(in_, out);
    EXPECT_EQ(Probe::live, 1);
    ASSERT_NE(k.state(), nullptr);
    EXPECT_EQ(*static_cast<int*>(k.state()), 0);
    OpKernel moved = std::move(k);  // ownership moves; nothing destroyed
    EXPECT_FALSE(k.created());
    EXPECT_EQ(k.state(), nullptr);
    EXPECT_EQ(Probe::destroyed, 0);
    OpKernel other = runner.create_kernel(in_, out);
    EXPECT_EQ(Probe::live, 2);
    other = std::move(moved);  // other's own state destroyed, moved's taken over
    EXPECT_EQ(Probe::live, 1);
    EXPECT_EQ(Probe::destroyed, 1);
    other.reset();
    EXPECT_EQ(Probe::live, 0);
    EXPECT_EQ(Probe::destroyed, 2);
    EXPECT_FALSE(other.created());
    Code code = Code::kOk;
    std::string e = error_of([&] { other.compute({}); }, &code);
    EXPECT_EQ(code, Code::kFailedPrecondition);
    EXPECT_CONTAINS(e, "the kernel is empty");
    OpKernel last = runner.create_kernel(in_, out);
    EXPECT_EQ(Probe::live, 1);
  }
  EXPECT_EQ(Probe::live, 0);  // `last` destroyed at the end of the scope
  EXPECT_EQ(Probe::destroyed, 3);
}

TEST_F(OpRunnerProbe, ComputeGetsTheStateDeviceStreamAndServices) {
  oph_host_services services = *host_services();
  OpRunner runner(schema_, mode(0), {&services, "probe_node"});
  const std::vector<oph_value_info> out = runner.infer(in_);
  EXPECT_EQ(Probe::infer_services, &services);
  EXPECT_EQ(Probe::node_name, "probe_node");
  OpKernel k = runner.create_kernel(in_, out, {OPH_DL_CPU, 0});
  std::vector<float> x{1, 2, 3, 4}, y(4, 0);
  std::vector<int64_t> xs = shape_, ys = shape_;
  oph_tensor xv = view(x, xs), yv = view(y, ys);
  const oph_tensor* ins[] = {&xv};
  oph_tensor* outs[] = {&yv};
  int stream_token = 0;
  EXPECT_TRUE(k.try_compute({.inputs = ins, .outputs = outs, .stream = &stream_token}).ok());
  EXPECT_EQ(Probe::compute_state, k.state());
  EXPECT_EQ(Probe::compute_stream, &stream_token);
  EXPECT_EQ(Probe::compute_device.device_type, OPH_DL_CPU);
  EXPECT_EQ(y, (std::vector<float>{2, 4, 6, 8}));
}

TEST_F(OpRunnerProbe, AllocateOutputAndHostDataReachCompute) {
  OpRunner runner(schema_, mode(4));
  InferResult r = runner.try_infer(in_);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.outputs[0].shape[0], OPH_DIM_UNKNOWN);
  OpKernel k = runner.create_kernel(in_, r.outputs);
  std::vector<float> x{1, 2, 3, 4};
  std::vector<int64_t> xs = shape_;
  oph_tensor xv = view(x, xs);
  struct Alloc {
    std::vector<float> data;
    std::vector<int64_t> shape;
  } alloc;
  oph_tensor yv{};
  yv.dtype = kF32;
  const oph_tensor* ins[] = {&xv};
  oph_tensor* outs[] = {&yv};
  auto allocate = [](const oph_compute_context* ctx, size_t index, int32_t ndim, const int64_t* shape) -> oph_status* {
    auto* a = static_cast<Alloc*>(ctx->host_data);
    a->shape.assign(shape, shape + ndim);
    a->data.assign(4, 0);
    *ctx->outputs[index] = view(a->data, a->shape);
    return nullptr;
  };
  k.compute({.inputs = ins, .outputs = outs, .allocate_output = allocate, .host_data = &alloc});
  EXPECT_EQ(alloc.shape, shape_);
  EXPECT_EQ(alloc.data, (std::vector<float>{2, 4, 6, 8}));

  // Without allocate_output the probe's compute fails: the status comes back, or as an Error naming the op.
  yv = oph_tensor{};
  CallStatus s = k.try_compute({.inputs = ins, .outputs = outs});
  EXPECT_EQ(s.code, Code::kInternal);
  EXPECT_EQ(s.message, "no allocate_output");
  EXPECT_EQ(error_of([&] { k.compute({.inputs = ins, .outputs = outs}); }),
            "test::probe [1+] on cpu: compute failed: no allocate_output");
}

TEST_F(OpRunnerProbe, MalformedInferAnswersAreJudgedPerOutput) {
  const std::pair<int64_t, InferredOutput> cases[] = {{1, InferredOutput::kNotSet},
                                                      {2, InferredOutput::kInvalidRank},
                                                      {3, InferredOutput::kDtypeNotAllowed},
                                                      {7, InferredOutput::kInvalidDtype}};
  for (const auto& [m, want] : cases) {
    OpRunner runner(schema_, mode(m));
    InferResult r = runner.try_infer(in_);
    EXPECT_FALSE(r.rejected()) << m;
    EXPECT_FALSE(r.ok()) << m;
    ASSERT_EQ(r.checks.size(), 1u);
    EXPECT_EQ(r.checks[0], want) << m;
    EXPECT_EQ(r.first_fault(), 0u);
    Code code = Code::kOk;
    std::string e = error_of([&] { runner.infer(in_); }, &code);
    EXPECT_EQ(code, Code::kInternal);
    EXPECT_CONTAINS(e, "test::probe [1+] on cpu: infer gave output 0 'Y' that ");
  }
  OpRunner refuses(schema_, mode(5));
  InferResult r = refuses.try_infer(in_);
  EXPECT_TRUE(r.rejected());
  EXPECT_EQ(r.status.code, Code::kInvalidArgument);
  EXPECT_EQ(r.status.message, "probe refuses mode 5");
}

TEST_F(OpRunnerProbe, RequiredAttributeAndCreateKernelRefusal) {
  Code code = Code::kOk;
  EXPECT_EQ(error_of([&] { OpRunner r(schema_); }, &code),
            "test::probe [1+] on cpu: required attribute 'mode' (int) is missing");
  EXPECT_EQ(code, Code::kInvalidArgument);
  OpRunner runner(schema_, mode(6));
  const std::vector<oph_value_info> out = runner.infer(in_);
  EXPECT_EQ(error_of([&] { runner.create_kernel(in_, out); }, &code),
            "test::probe [1+] on cpu: create_kernel failed: probe mode 6");
  EXPECT_EQ(code, Code::kUnimplemented);
  EXPECT_EQ(Probe::live, 0);
}

}  // namespace
}  // namespace ophost::itest
