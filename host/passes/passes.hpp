// Graph passes on the model IR, run by build_session before the nodes are resolved (DESIGN.md section 5).
//
// Each pass has a name (for --disable-pass / SessionOptions::disabled_passes) and the optimisation level from
// which it runs. The default level is 3 (everything). Levels:
//   1  float16-promotion       a float16/bfloat16 graph promoted to float32 once (initializers, Constant values,
//                              Cast targets; half-precision graph inputs/outputs cast once at the edges), since
//                              onnx-core's kernels are float32 (float16_promotion.cpp)
//      identity-elimination    Identity, and Dropout in inference mode (mask unused), removed; consumers rewired
//      dead-node-elimination   nodes none of whose outputs reach a graph output removed (and initializers that
//                              nothing reads any more)
//      constant-folding        nodes whose inputs are all constants run once at load (through their kernel);
//                              their outputs become initializers. Standard domain, deterministic ops only;
//                              Shape/Size of values whose shape is fully known at load; outputs over 64 MiB kept
//   2  qdq-fusion              DequantizeLinear -> Conv/MatMul [-> Relu/Clip] -> QuantizeLinear (QDQ int8 models)
//                              rewritten to the standard QLinearConv / QLinearMatMul (qdq_fusion.cpp); runs right
//                              after constant-folding, which leaves DequantizeLinear of int8 weights to it
//      conv-bn-folding         Conv -> BatchNormalization (inference, constant params) folded into Conv W/B
//      conv-add-fusion         Conv -> Add(Z) with Z of the Conv output's shape (a residual) rewritten to
//                              com.ophost::FusedConv with input Z (y = act(conv(x) + z), a oneDNN sum post-op);
//                              before conv-activation-fusion, so that an activation after the Add fuses too
//      conv-activation-fusion  Conv -> Relu/LeakyRelu/Clip/Sigmoid/Tanh/HardSigmoid/HardSwish/Elu rewritten to
//                              com.ophost::FusedConv, only where a loaded pack serves that op with
//                              OPH_OP_FLAG_ALLOW_FUSION on the device the Conv resolves to; also the
//                              decomposed forms HardSwish (x * Clip(x + 3, 0, 6) / 6) and SiLU/Swish
//                              (x * Sigmoid(x), oneDNN eltwise_swish)
//      layer-norm-fusion       LayerNormalization written out (ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt,
//                              Div, then Mul gamma and Add beta; PyTorch exports at opset < 17) rewritten to
//                              com.ophost::LayerNormalization (LayerNormalization-17's kernel), over trailing
//                              axes only, where a pack serves it (layer_norm_fusion.cpp)
//      gelu-fusion             GELU written out (Div sqrt(2) or Mul 1/sqrt(2), Erf, Add 1, Mul x, Mul 0.5 in the
//                              orders exporters use; also the tanh approximation: x^3, Mul 0.044715, Add x, Mul
//                              sqrt(2/pi), Tanh, Add 1, ...) rewritten to com.ophost::Gelu (Gelu-20's kernel,
//                              approximate "none" / "tanh"), where a pack serves it (gelu_fusion.cpp)
//   3  conv-affine-folding     Conv -> Mul(per-channel constant) -> Add(per-channel constant) (how some
//                              exporters write BatchNormalization) folded into Conv W/B
//      pad-conv-folding        Pad (constant zeros, spatial axes, constant pads) read only by a Conv folded into
//                              the Conv's pads
//      nchwc-layout            4-D activations between convolutions stay channel-blocked (nChw8c/16c, see
//                              nchwc_layout.cpp): FusedConv x_blocked/y_blocked/z_blocked, layout-oblivious
//                              elementwise ops in between, com.ophost::LayoutReorder at the region's edges
//
// Every pass logs at info level what it changed ("constant-folding: 12 nodes folded").
#pragma once

#include "model/model.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ophost {

struct PassInfo {
  const char* name;
  int level;
  const char* summary;
};

// Every pass, in the order run_passes runs them.
const std::vector<PassInfo>& all_passes();

// Default optimisation level of SessionOptions.
inline constexpr int kDefaultOptLevel = 3;

// What a pass did (changed == 0: nothing).
struct PassResult {
  std::string name;
  size_t changed = 0;
  std::string message;  // "constant-folding: 12 nodes folded"
};

// Hooks that need the operator registry (set up by build_session; tests give fakes).
// What inference knows of one value before anything runs.
struct InferredValue {
  std::vector<int64_t> dims;  // -1 for an unknown dimension
  DType dtype = DType::kUndefined;
};

struct PassHooks {
  // Runs one node on constant inputs (inputs[i] null for an absent optional input); nullopt when it cannot.
  std::function<std::optional<std::vector<Tensor>>(const Model& model, const Node& node,
                                                   const std::vector<const Tensor*>& inputs)>
      evaluate;
  // Shapes and element types the ops' infer() gives every value of `model` from the declared graph inputs
  // (name -> dims, -1 for unknown; values of unknown rank are absent). Empty when inference fails.
  std::function<std::map<std::string, InferredValue>(const Model& model)> infer_shapes;
  // Shapes and element types of one node's outputs from its inputs: constants[i] the value of input i when it is
  // constant, else shapes[i] its shape (null for an absent optional input). nullopt when inference fails; an
  // output of unknown rank has dtype kUndefined. Lets constant folding follow shapes through the nodes it keeps
  // in the same sweep (Shape -> Gather -> Concat -> Reshape -> Shape ... needed one whole-graph infer_shapes per
  // Reshape level: 28 on Swin-T).
  std::function<std::optional<std::vector<InferredValue>>(const Model& model, const Node& node,
                                                          const std::vector<const Tensor*>& constants,
                                                          const std::vector<const InferredValue*>& shapes)>
      infer_node;
  // Whether `conv` followed by `activation` may become com.ophost::FusedConv (a pack serves the fused op with
  // OPH_OP_FLAG_ALLOW_FUSION on the device the Conv resolves to, and both nodes' kernels come from that pack or
  // allow fusion themselves).
  std::function<bool(const Model& model, const Node& conv, const Node& activation)> can_fuse_conv;
  // Whether `conv` (Conv or FusedConv) may read and write channel-blocked values: the pack that serves
  // com.ophost::FusedConv with OPH_OP_FLAG_ALLOW_FUSION on the Conv's device also serves
  // com.ophost::LayoutReorder (a pack serving both implements the blocked-layout attributes), and the Conv's own
  // kernel comes from that pack or allows fusion.
  std::function<bool(const Model& model, const Node& conv)> can_block_conv;
  // Whether `node` may become com.ophost::<blocked_op>, its form on channel-blocked values (MaxPool:
  // BlockedMaxPool): the pack that serves com.ophost::LayoutReorder on the node's device serves blocked_op too,
  // and the node's own kernel comes from that pack or allows fusion.
  std::function<bool(const Model& model, const Node& node, const char* blocked_op)> can_block_op;
  // Whether the standard-domain `nodes` (a pattern) may become one com.ophost::<fused_op>: a pack serves that op
  // with OPH_OP_FLAG_ALLOW_FUSION on the device the first node resolves to, every node resolves to that device,
  // and each node's kernel comes from that pack or allows fusion itself.
  std::function<bool(const Model& model, const char* fused_op, const std::vector<const Node*>& nodes)> can_fuse_op;
};

struct PassOptions {
  int level = kDefaultOptLevel;
  std::vector<std::string> disabled;  // pass names
  size_t fold_size_cap = size_t{64} << 20;  // bytes: larger constant-folding outputs are kept as nodes
  // Bytes of new constants folding may create beyond the size of the model's own initializers; a model that
  // would need more is rejected (SessionOptions::max_fold_bytes).
  uint64_t fold_extra_budget = uint64_t{64} << 20;
};

// Runs the enabled passes in order. Throws Error(kInvalidArgument) for an unknown name in options.disabled
// or a level outside 0..3.
std::vector<PassResult> run_passes(Model& model, const PassOptions& options, const PassHooks& hooks);

// The passes one by one (each returns what it changed; also used by the unit tests).
PassResult eliminate_identities(Model& model);
PassResult eliminate_dead_nodes(Model& model);
// Throws Error(kResourceExhausted) when the folded constants would take more than the model's initializer bytes
// plus extra_budget: predicted from the inferred shapes before anything is computed, and checked again as
// nodes are evaluated.
// keep_8bit_dequantize: DequantizeLinear of int8/uint8 constants stays a node (qdq-fusion runs after, on the int8
// weights; whatever it leaves is folded by a second run without the flag).
PassResult fold_constants(Model& model, const PassHooks& hooks, size_t size_cap = size_t{64} << 20,
                          uint64_t extra_budget = uint64_t{64} << 20, bool keep_8bit_dequantize = false);
PassResult fuse_qdq(Model& model);
PassResult promote_float16(Model& model);
PassResult fold_conv_batchnorm(Model& model);
PassResult fuse_conv_add(Model& model, const PassHooks& hooks);
PassResult fuse_conv_activation(Model& model, const PassHooks& hooks);
PassResult assign_nchwc_layout(Model& model, const PassHooks& hooks);
PassResult fold_conv_affine(Model& model);
PassResult fold_pad_into_conv(Model& model);
PassResult fuse_layer_norm(Model& model, const PassHooks& hooks);
PassResult fuse_matmul_bias(Model& model, const PassHooks& hooks);
PassResult convert_batchnorm_to_conv(Model& model, const PassHooks& hooks);
PassResult fuse_gelu(Model& model, const PassHooks& hooks);

// The FusedConv op the conv-activation fusion rewrites to.
inline constexpr const char* kFusedDomain = "com.ophost";
inline constexpr const char* kFusedConv = "FusedConv";
// The reorder at the edges of channel-blocked regions (nchwc-layout), attribute to = "blocked" | "plain".
inline constexpr const char* kLayoutReorder = "LayoutReorder";
inline constexpr const char* kBlockedMaxPool = "BlockedMaxPool";
inline constexpr const char* kBlockedAveragePool = "BlockedAveragePool";
// An SE block's ends on blocked values (nchwc-layout): GlobalAveragePool, and Mul by a [N|1, C, 1, 1] scale.
inline constexpr const char* kBlockedGlobalAveragePool = "BlockedGlobalAveragePool";
inline constexpr const char* kBlockedMul = "BlockedMul";
// What layer-norm-fusion rewrites to (LayerNormalization-17's inputs and attributes, output Y only).
inline constexpr const char* kLayerNormalization = "LayerNormalization";
// What matmul-bias-fusion rewrites to: MatMul(A, W) + Bias over the last dim.
inline constexpr const char* kFusedMatMul = "FusedMatMul";
// What gelu-fusion rewrites to (Gelu-20's input, output and attribute approximate).
inline constexpr const char* kGelu = "Gelu";

}  // namespace ophost
