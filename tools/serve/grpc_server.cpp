#include "grpc_server.hpp"

#include "request_error.hpp"
#include "tensor_values.hpp"
#include "v2_types.hpp"

#include "grpc_service.grpc.pb.h"

#include <ophost/error.hpp>

#include <grpcpp/grpcpp.h>

#include <chrono>

namespace ophost::serve {

namespace {

using Clock = std::chrono::steady_clock;
namespace pb = ::inference;

grpc::Status to_status(const RequestError& e) {
  grpc::StatusCode code = grpc::StatusCode::INTERNAL;
  switch (e.status()) {
    case 400: code = grpc::StatusCode::INVALID_ARGUMENT; break;
    case 404: code = grpc::StatusCode::NOT_FOUND; break;
    case 413: code = grpc::StatusCode::RESOURCE_EXHAUSTED; break;
    case 503: code = grpc::StatusCode::UNAVAILABLE; break;
    case 504: code = grpc::StatusCode::DEADLINE_EXCEEDED; break;
    default: break;
  }
  return {code, e.what()};
}

// Typed contents of one input (no raw_input_contents): the repeated field of its datatype.
template <class Field>
void store_all(const Field& values, InputData& d, int64_t numel, const char* field_name) {
  if (values.size() != numel) {
    throw RequestError(400, d.field + " '" + d.name + "': contents." + field_name + " holds " +
                                std::to_string(values.size()) + " elements, shape " + v2_shape(d.shape) + " needs " +
                                std::to_string(numel));
  }
  d.tensor = Tensor(d.dtype, d.shape);
  std::string where = d.field + ".contents." + field_name;
  for (int i = 0; i < values.size(); ++i) {
    auto v = values.Get(i);
    Scalar s;
    if constexpr (std::is_same_v<decltype(v), bool>) s = v;
    else if constexpr (std::is_floating_point_v<decltype(v)>) s = static_cast<double>(v);
    else if constexpr (std::is_signed_v<decltype(v)>) s = static_cast<int64_t>(v);
    else s = static_cast<uint64_t>(v);
    store_element(d.tensor, static_cast<size_t>(i), s, where);
  }
}

void decode_contents(const pb::InferTensorContents& c, InputData& d, int64_t numel) {
  switch (d.dtype) {
    case DType::kBool: return store_all(c.bool_contents(), d, numel, "bool_contents");
    case DType::kInt8: case DType::kInt16: case DType::kInt32:
      return store_all(c.int_contents(), d, numel, "int_contents");
    case DType::kInt64: return store_all(c.int64_contents(), d, numel, "int64_contents");
    case DType::kUint8: case DType::kUint16: case DType::kUint32:
      return store_all(c.uint_contents(), d, numel, "uint_contents");
    case DType::kUint64: return store_all(c.uint64_contents(), d, numel, "uint64_contents");
    case DType::kFloat32: return store_all(c.fp32_contents(), d, numel, "fp32_contents");
    case DType::kFloat64: return store_all(c.fp64_contents(), d, numel, "fp64_contents");
    default:
      throw RequestError(400, d.field + " '" + d.name + "': " + std::string(v2_datatype(d.dtype)) +
                                  " has no typed contents; send it in raw_input_contents");
  }
}

std::vector<InputData> decode_inputs(const pb::ModelInferRequest& req, uint64_t max_tensor_bytes) {
  int raw_count = req.raw_input_contents_size();
  if (raw_count > 0 && raw_count != req.inputs_size()) {
    throw RequestError(400, "raw_input_contents has " + std::to_string(raw_count) + " entries for " +
                                std::to_string(req.inputs_size()) + " inputs (one per input, in order)");
  }
  if (req.inputs_size() == 0) throw RequestError(400, "inputs is empty");
  std::vector<InputData> inputs;
  for (int i = 0; i < req.inputs_size(); ++i) {
    const auto& in = req.inputs(i);
    InputData d;
    d.field = "inputs[" + std::to_string(i) + "]";
    d.name = in.name();
    d.dtype = dtype_from_v2(in.datatype());
    if (d.dtype == DType::kUndefined || d.dtype == DType::kString) {
      throw RequestError(400, d.field + " '" + d.name + "': datatype '" + in.datatype() +
                                  "' is not served (BOOL, UINT8..UINT64, INT8..INT64, FP16, FP32, FP64, BF16)");
    }
    d.shape.assign(in.shape().begin(), in.shape().end());
    int64_t numel = checked_numel(d.shape, d.dtype, max_tensor_bytes, d.field + ".shape");
    if (raw_count > 0) {
      if (in.has_contents()) throw RequestError(400, d.field + " '" + d.name + "' has both contents and raw_input_contents");
      const std::string& raw = req.raw_input_contents(i);
      d.is_raw = true;
      d.raw = std::as_bytes(std::span<const char>(raw.data(), raw.size()));
    } else {
      decode_contents(in.contents(), d, numel);
    }
    inputs.push_back(std::move(d));
  }
  return inputs;
}

}  // namespace

struct GrpcServer::Impl final : pb::GRPCInferenceService::Service {
  explicit Impl(ServerContext& c) : ctx(c) {}
  ServerContext& ctx;
  std::unique_ptr<grpc::Server> server;

  grpc::Status ServerLive(grpc::ServerContext*, const pb::ServerLiveRequest*, pb::ServerLiveResponse* out) override {
    out->set_live(true);
    return grpc::Status::OK;
  }
  grpc::Status ServerReady(grpc::ServerContext*, const pb::ServerReadyRequest*,
                           pb::ServerReadyResponse* out) override {
    out->set_ready(ctx.ready());
    return grpc::Status::OK;
  }
  grpc::Status ServerMetadata(grpc::ServerContext*, const pb::ServerMetadataRequest*,
                              pb::ServerMetadataResponse* out) override {
    out->set_name("ophost");
    out->set_version(OPHOST_SERVE_VERSION);
    out->add_extensions("binary_tensor_data");
    return grpc::Status::OK;
  }
  grpc::Status ModelReady(grpc::ServerContext*, const pb::ModelReadyRequest* req,
                          pb::ModelReadyResponse* out) override {
    try {
      out->set_ready(ctx.repo.find(req->name(), req->version()).ready());
      return grpc::Status::OK;
    } catch (const RequestError& e) {
      if (e.status() == 503) {  // a model folder that failed as a whole: known, not ready
        out->set_ready(false);
        return grpc::Status::OK;
      }
      return to_status(e);
    }
  }
  grpc::Status ModelMetadata(grpc::ServerContext*, const pb::ModelMetadataRequest* req,
                             pb::ModelMetadataResponse* out) override {
    try {
      const ServedModel& m = ctx.repo.model(req->name());
      ServedVersion& v = ctx.repo.find(req->name(), req->version());
      if (!v.ready()) {
        throw RequestError(503, "model '" + m.name + "' version " + v.version() + " is not ready: " +
                                    (v.loading_done() ? v.error() : "it is still loading"));
      }
      out->set_name(m.name);
      out->set_platform("onnx");
      for (const auto& [n, sv] : m.versions) out->add_versions(sv->version());
      auto fill = [](std::span<const ValueInfo> values, auto* list) {
        for (const ValueInfo& value : values) {
          auto* t = list->Add();
          t->set_name(value.name);
          std::string_view dt = v2_datatype(value.dtype);
          t->set_datatype(std::string(dt.empty() ? dtype_name(value.dtype) : dt));
          for (int64_t d : value.shape) t->add_shape(d);
        }
      };
      fill(v.inputs(), out->mutable_inputs());
      fill(v.outputs(), out->mutable_outputs());
      return grpc::Status::OK;
    } catch (const RequestError& e) {
      return to_status(e);
    }
  }

  grpc::Status ModelInfer(grpc::ServerContext* call, const pb::ModelInferRequest* req,
                          pb::ModelInferResponse* out) override {
    auto arrival = Clock::now();
    ServedVersion* v = nullptr;
    int status = 200;
    InferResult result;
    grpc::Status answer = grpc::Status::OK;
    try {
      v = &ctx.repo.find(req->model_name(), req->model_version());
      RequestScope scope(v->metrics, arrival);
      std::vector<InputData> inputs = decode_inputs(*req, ctx.limits.max_tensor_bytes);
      std::vector<std::string> requested;
      for (const auto& o : req->outputs()) requested.push_back(o.name());
      result = v->infer(inputs, requested, v->deadline(arrival));
      out->set_model_name(v->model());
      out->set_model_version(v->version());
      out->set_id(req->id());
      for (const NamedTensor& o : result.outputs) {
        auto* t = out->add_outputs();
        t->set_name(o.name);
        std::string_view dt = v2_datatype(o.tensor.dtype());
        if (dt.empty() || o.tensor.dtype() == DType::kString)
          throw RequestError(500, "output '" + o.name + "' has a dtype the protocol cannot carry here");
        t->set_datatype(std::string(dt));
        for (int64_t d : o.tensor.shape()) t->add_shape(d);
        out->add_raw_output_contents(static_cast<const char*>(o.tensor.data()), o.tensor.nbytes());
      }
      scope.succeeded(result);
    } catch (const RequestError& e) {
      status = e.status();
      answer = to_status(e);
    } catch (const std::exception& e) {
      status = 500;
      answer = grpc::Status(grpc::StatusCode::INTERNAL, std::string("internal error: ") + e.what());
    }
    if (ctx.access_log) {
      std::string peer = call->peer();
      ctx.log_access({"grpc", "ModelInfer", "inference.GRPCInferenceService/ModelInfer", status,
                      req->model_name(), v ? std::string_view(v->version()) : std::string_view(),
                      req->ByteSizeLong(), status == 200 ? out->ByteSizeLong() : 0,
                      status == 200 ? result.queue_us : -1, status == 200 ? result.compute_us : -1,
                      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - arrival).count(), peer});
    }
    return answer;
  }
};

GrpcServer::GrpcServer(ServerContext& ctx) : impl_(std::make_unique<Impl>(ctx)) {}
GrpcServer::~GrpcServer() = default;

int GrpcServer::start(const std::string& host, int port) {
  grpc::ServerBuilder builder;
  int selected = 0;
  std::string address = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &selected);
  builder.RegisterService(impl_.get());
  builder.SetMaxReceiveMessageSize(static_cast<int>(std::min<size_t>(impl_->ctx.limits.max_body_bytes, INT32_MAX)));
  builder.SetMaxSendMessageSize(-1);
  impl_->server = builder.BuildAndStart();
  if (!impl_->server || selected == 0) {
    throw Error(Code::kUnavailable, "cannot listen for gRPC on " + address +
                                        " (address in use, or not an address of this machine; --host, --grpc-port)");
  }
  return selected;
}

void GrpcServer::shutdown(std::chrono::system_clock::time_point deadline) {
  if (impl_->server) {
    impl_->server->Shutdown(deadline);
    impl_->server->Wait();
  }
}

}  // namespace ophost::serve
