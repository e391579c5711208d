"""Cases for the host's fusion passes (make_cases.py writes and checks them with the others): chains exporters
write out that the host rewrites to one node, each with a float64 numpy reference of the unfused graph.

  layer_norm_decomposed_*   PyTorch's nn.LayerNorm at opset < 17: ReduceMean, Sub, Pow 2, ReduceMean, Add eps,
                            Sqrt, Div, Mul gamma, Add beta (layer-norm-fusion -> com.ophost::LayerNormalization)
  gelu_decomposed_*         GELU written out (gelu-fusion -> com.ophost::Gelu): erf_opset14 as PyTorch's nn.GELU
                            writes it (Div sqrt2, Erf, Add 1, Mul x, Mul 0.5), tanh_opset14 as Hugging Face's
                            gelu_new does (Mul x 0.5 first, Pow 3, Mul 0.044715, Add x, Mul sqrt(2/pi), Tanh, Add 1,
                            Mul), both read by a MatMul (as in a transformer's MLP) so that x has other readers
  fused_conv_silu           Conv, then Mul(c, Sigmoid(c)) (conv-activation-fusion -> FusedConv Swish); "conv" in
                            the name, so the AVX2 conv run checks it too
  fused_conv3x3_residual    two 3x3 Convs of 64 channels, Relu, and Add of the first's output (conv-add-fusion ->
                            FusedConv with Z; the second Conv's X, Y and Z channel-blocked): on AVX-512 onnx-core
                            runs such dense convolutions on channels-last (brgconv) between reorders of X, Y and Z
  fused_conv1x1_232ch       two 1x1 Convs of 232 channels (a multiple of 8, not of 16: nChw8c between them), Relu:
                            on AVX-512 onnx-core runs them on channels-last too (see conv.cpp, prefer_brgconv)
  fused_conv1x1_58ch_sum    batch 2, a 1x1 Conv of 58 channels (no blocked layout) with bias, Add of X, Relu
                            (conv-add-fusion): onnx-core runs it as one sgemm per image on NCHW (Prim::sgemm)
"""
import math

import numpy as np
from onnx import TensorProto, helper


def _model(name, nodes, x, ref, consts, opset):
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("X", TensorProto.FLOAT, x.shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(ref.shape))], initializer=consts)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="onnx_core make_cases")
    m.ir_version = 8
    return m


def _const(name, v, dtype=TensorProto.FLOAT):
    v = np.asarray(v)
    return helper.make_tensor(name, dtype, v.shape, v.flatten().tolist())


def _normal(rng, shape, scale):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _case(name, nodes, x, ref, consts):
    """A case of one input X: `consts` maps initializer names to arrays (float32)."""
    return (name, _model(name, nodes, x, ref, [_const(k, v) for k, v in consts.items()], 14), [("X", x)], ref,
            tuple(consts))


def layer_norm_case(name, shape, axes, opset, seed):
    """LayerNorm over `axes` (trailing) written out as PyTorch exports it; gamma/beta over the normalized dims.
    At opset 18 the ReduceMean axes are an input, before it an attribute; the exponent and eps are Constant
    nodes (as PyTorch writes them; constant folding makes them initializers before the fusion)."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 2 + 0.5).astype(np.float32)
    norm_shape = shape[len(shape) - len(axes):]
    gamma = (rng.standard_normal(norm_shape) * 0.5 + 1).astype(np.float32)
    beta = (rng.standard_normal(norm_shape) * 0.1).astype(np.float32)
    eps = 1e-5
    xd = x.astype(np.float64)
    mean = xd.mean(axis=tuple(axes), keepdims=True)
    var = ((xd - mean) ** 2).mean(axis=tuple(axes), keepdims=True)
    ref = (xd - mean) / np.sqrt(var + eps) * gamma + beta

    def reduce_mean(src, dst):
        if opset >= 18:
            return helper.make_node("ReduceMean", [src, "axes"], [dst])
        return helper.make_node("ReduceMean", [src], [dst], axes=list(axes))

    nodes = [helper.make_node("Constant", [], ["two"], value=_const("two_v", np.float32(2.0))),
             helper.make_node("Constant", [], ["eps"], value=_const("eps_v", np.float32(eps))),
             reduce_mean("X", "mean"),
             helper.make_node("Sub", ["X", "mean"], ["d"]),
             helper.make_node("Pow", ["d", "two"], ["p"]),
             reduce_mean("p", "var"),
             helper.make_node("Add", ["var", "eps"], ["ve"]),
             helper.make_node("Sqrt", ["ve"], ["s"]),
             helper.make_node("Div", ["d", "s"], ["n"]),
             helper.make_node("Mul", ["n", "gamma"], ["g"]),
             helper.make_node("Add", ["g", "beta"], ["y"])]
    consts = [_const("gamma", gamma), _const("beta", beta)]
    if opset >= 18:
        consts.append(_const("axes", np.array(axes, dtype=np.int64), TensorProto.INT64))
    return (name, _model(name, nodes, x, ref, consts, opset), [("X", x)], ref, ("gamma", "beta", "axes"))


def gelu_case(name, tanh, seed):
    """GELU on a [2, 7, 40] tensor of values from -12 to 12 (the far negative tail included), then a MatMul by W
    reading it; x (the output of an Add of a bias, as after a Linear) is also read by the chain's first nodes."""
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.standard_normal((2, 7, 20)) * 2, rng.uniform(-12, 12, (2, 7, 20))], axis=-1).astype(np.float32)
    bias = (rng.standard_normal(40) * 0.1).astype(np.float32)
    w = (rng.standard_normal((40, 6)) * 0.3).astype(np.float32)
    xd = x.astype(np.float64) + bias
    if tanh:
        u2 = 2 * math.sqrt(2 / math.pi) * (xd + 0.044715 * xd ** 3)
        g = xd * np.where(u2 >= 0, 1 / (1 + np.exp(-np.abs(u2))), np.exp(-np.abs(u2)) / (1 + np.exp(-np.abs(u2))))
    else:
        g = 0.5 * xd * np.vectorize(math.erfc)(-xd / math.sqrt(2))
    ref = g @ w
    c = lambda n, v: helper.make_node("Constant", [], [n], value=_const(n + "_v", np.float32(v)))
    nodes = [helper.make_node("Add", ["X", "bias"], ["x"])]
    if tanh:
        nodes += [c("half", 0.5), helper.make_node("Mul", ["x", "half"], ["h"]),
                  c("three", 3.0), helper.make_node("Pow", ["x", "three"], ["p"]),
                  c("coef", 0.044715), helper.make_node("Mul", ["p", "coef"], ["q"]),
                  helper.make_node("Add", ["x", "q"], ["s"]),
                  c("k", math.sqrt(2 / math.pi)), helper.make_node("Mul", ["s", "k"], ["u"]),
                  helper.make_node("Tanh", ["u"], ["e"]),
                  c("one", 1.0), helper.make_node("Add", ["e", "one"], ["a"]),
                  helper.make_node("Mul", ["h", "a"], ["g"])]
    else:
        nodes += [c("sqrt2", math.sqrt(2)), helper.make_node("Div", ["x", "sqrt2"], ["d"]),
                  helper.make_node("Erf", ["d"], ["e"]),
                  c("one", 1.0), helper.make_node("Add", ["e", "one"], ["a"]),
                  helper.make_node("Mul", ["x", "a"], ["m"]),
                  c("half", 0.5), helper.make_node("Mul", ["m", "half"], ["g"])]
    nodes.append(helper.make_node("MatMul", ["g", "W"], ["y"]))
    return (name, _model(name, nodes, x, ref, [_const("bias", bias), _const("W", w)], 14), [("X", x)], ref,
            ("bias", "W"))


def conv_silu_case(conv_ref):
    """A 3x3 Conv with 24 output channels (blocked between convolutions by nchwc-layout: 8- and 16-channel
    blocks), SiLU written out, then a pointwise Conv reading it and SiLU again."""
    rng = np.random.default_rng(21)
    x = (rng.standard_normal((1, 16, 12, 12)) * 0.5).astype(np.float32)
    w1 = (rng.standard_normal((24, 16, 3, 3)) * 0.2).astype(np.float32)
    b1 = (rng.standard_normal(24) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((16, 24, 1, 1)) * 0.3).astype(np.float32)
    silu = lambda v: v / (1 + np.exp(-v))
    d = lambda a: a.astype(np.float64)
    c1 = silu(conv_ref(d(x), d(w1), d(b1), [1, 1], [1, 1, 1, 1], [1, 1], 1))
    ref = silu(conv_ref(c1, d(w2), np.zeros(16), [1, 1], [0, 0, 0, 0], [1, 1], 1))
    nodes = [helper.make_node("Conv", ["X", "W1", "B1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Sigmoid", ["c1"], ["s1"]),
             helper.make_node("Mul", ["c1", "s1"], ["a1"]),
             helper.make_node("Conv", ["a1", "W2"], ["c2"]),
             helper.make_node("Sigmoid", ["c2"], ["s2"]),
             helper.make_node("Mul", ["s2", "c2"], ["y"])]
    consts = [_const("W1", w1), _const("B1", b1), _const("W2", w2)]
    return ("fused_conv_silu", _model("fused_conv_silu", nodes, x, ref, consts, 14), [("X", x)], ref,
            ("W1", "B1", "W2"))


def conv3x3_residual_case(conv_ref):
    rng = np.random.default_rng(22)
    x, w1, b1 = _normal(rng, (1, 64, 9, 11), 0.5), _normal(rng, (64, 64, 3, 3), 0.05), _normal(rng, 64, 0.1)
    w2, b2 = _normal(rng, (64, 64, 3, 3), 0.05), _normal(rng, 64, 0.1)
    d = lambda a: a.astype(np.float64)
    relu = lambda v: np.maximum(v, 0)
    c1 = relu(conv_ref(d(x), d(w1), d(b1), [1, 1], [1, 1, 1, 1], [1, 1], 1))
    ref = relu(conv_ref(c1, d(w2), d(b2), [1, 1], [1, 1, 1, 1], [1, 1], 1) + c1)
    nodes = [helper.make_node("Conv", ["X", "W1", "B1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "W2", "B2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c2", "r1"], ["s"]),
             helper.make_node("Relu", ["s"], ["y"])]
    return _case("fused_conv3x3_residual", nodes, x, ref, {"W1": w1, "B1": b1, "W2": w2, "B2": b2})


def conv1x1_232_case(conv_ref):
    rng = np.random.default_rng(23)
    x, w1 = _normal(rng, (1, 232, 5, 7), 0.5), _normal(rng, (232, 232, 1, 1), 0.07)
    w2, b2 = _normal(rng, (232, 232, 1, 1), 0.07), _normal(rng, 232, 0.1)
    d = lambda a: a.astype(np.float64)
    relu = lambda v: np.maximum(v, 0)
    c1 = relu(conv_ref(d(x), d(w1), np.zeros(232), [1, 1], [0, 0, 0, 0], [1, 1], 1))
    ref = relu(conv_ref(c1, d(w2), d(b2), [1, 1], [0, 0, 0, 0], [1, 1], 1))
    nodes = [helper.make_node("Conv", ["X", "W1"], ["c1"]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "W2", "B2"], ["c2"]),
             helper.make_node("Relu", ["c2"], ["y"])]
    return _case("fused_conv1x1_232ch", nodes, x, ref, {"W1": w1, "W2": w2, "B2": b2})


def conv1x1_58_sum_case(conv_ref):
    rng = np.random.default_rng(24)
    x, w, b = _normal(rng, (2, 58, 6, 7), 0.5), _normal(rng, (58, 58, 1, 1), 0.15), _normal(rng, 58, 0.1)
    d = lambda a: a.astype(np.float64)
    ref = np.maximum(conv_ref(d(x), d(w), d(b), [1, 1], [0, 0, 0, 0], [1, 1], 1) + d(x), 0)
    nodes = [helper.make_node("Conv", ["X", "W", "B"], ["c"]),
             helper.make_node("Add", ["c", "X"], ["s"]),
             helper.make_node("Relu", ["s"], ["y"])]
    return _case("fused_conv1x1_58ch_sum", nodes, x, ref, {"W": w, "B": b})


def cases(conv_ref):
    return [layer_norm_case("layer_norm_decomposed_opset14", (2, 7, 48), [-1], 14, 31),
            layer_norm_case("layer_norm_decomposed_2axes_opset18", (3, 5, 20), [1, 2], 18, 32),
            gelu_case("gelu_decomposed_erf_opset14", False, 41),
            gelu_case("gelu_decomposed_tanh_opset14", True, 42),
            conv_silu_case(conv_ref),
            conv3x3_residual_case(conv_ref),
            conv1x1_232_case(conv_ref),
            conv1x1_58_sum_case(conv_ref)]
