#!/usr/bin/python3
"""Quantizes a float ONNX model to int8 the way ONNX Runtime's quantizer (onnxruntime.quantization, the Python
tool users run: quantize_dynamic, and quantize_static with QuantFormat.QOperator or QuantFormat.QDQ) does, written
with onnx + numpy only, so the zoo gets the graphs those tools emit without installing ONNX Runtime's Python wheel.

    /usr/bin/python3 tools/bench/zoo/quantize_onnx.py MODE IN.onnx OUT.onnx [--per-channel] [--shape NAME=1,3,224,224]
                     [--calib-batches 4] [--ort-dir build/ort]

MODE:
  dynamic    quantize_dynamic(IN, OUT, weight_type=QInt8[, per_channel=True]) with its defaults (MatMulConstBOnly):
             Gemm is first rewritten to MatMul (+ Add of its bias; a transB weight is transposed in place), then
             Conv -> DynamicQuantizeLinear -> ConvInteger -> Cast -> Mul(x_scale*w_scale) -> Add(Reshape(bias)),
             MatMul with a constant B -> DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul. uint8 activations
             (asymmetric, computed at run time), int8 weights symmetric; per-tensor, and with --per-channel
             per-column for MatMul (ORT never quantizes ConvInteger weights per channel, so neither does this).
  qoperator  quantize_static(..., quant_format=QOperator, activation_type=QUInt8, weight_type=QInt8,
             per_channel=True, calibrate_method=MinMax): QuantizeLinear at the graph input, QLinearConv (int32 bias,
             scale x_scale*w_scale), QLinearMatMul, MaxPool/Reshape/Transpose/Squeeze/Unsqueeze directly on uint8,
             Relu/Clip after a quantized op folded into its output range, DequantizeLinear before float ops and at
             the outputs. Where ORT emits a com.microsoft contrib op (QLinearAdd, QLinearMul, QLinearConcat,
             QLinearGlobalAveragePool, QLinearAveragePool, QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax, QGemm)
             this writes STANDARD ops instead: DequantizeLinear of each quantized input -> the float op ->
             QuantizeLinear with the output parameters ORT would give the contrib op (QGemm's int8 per-channel weight
             and int32 bias are kept, each behind a DequantizeLinear). No com.microsoft op is written.
  qdq        quantize_static(..., quant_format=QDQ, activation_type=QUInt8, weight_type=QInt8, per_channel=True):
             QuantizeLinear -> DequantizeLinear pairs on activations, DequantizeLinear on int8 weights (per channel:
             axis 0 for Conv, axis 0/1 for Gemm by transB, 1 for MatMul), int32 bias behind a DequantizeLinear,
             Relu/Clip after Conv removed (its output range taken by the conv), Add/Mul/Concat/GlobalAveragePool/...
             with Q/DQ on every input and output, MaxPool/Reshape/... sharing the input's parameters.
  qoperator and qdq are per-channel unless --per-tensor.

Calibration (static modes) is ORT's MinMax calibrator: min and max of every float tensor that is an input or output
of a quantizable node, over --calib-batches seeded (numpy seed 0) uniform [-1, 1) inputs, computed by ONNX Runtime
for Node.js (../shared/peers/ort, set up with `bash ../shared/peers/ort/setup.sh build/ort`), optimizations off.
Scales and zero points follow ORT's compute_scale_zp (range widened to contain 0; uint8 (rmax-rmin)/255 with
zero point round(-rmin/scale); int8 symmetric max|w|/127, zero point 0).

Follows onnxruntime/python/tools/quantization (onnx_quantizer.py, qdq_quantizer.py, base_quantizer.py,
operators/*.py, onnx_model.py, quant_utils.py, calibrate.py) as of 2024-2025: node and tensor names, initializer
names, producer "onnx.quantize" 0.1.0, metadata onnx.infer, ORT's topological sort before saving. Not handled
(left float, with a DequantizeLinear before them where their input is quantized): Gather, Split, Pad, Resize,
Where, ArgMax, LSTM, Attention and the other contrib-only patterns; dynamic mode's int8 (non-DynamicQuantizeLinear)
path for non-uint8 activations; newer ORT's int32-bias-overflow weight-scale adjustment (only changes a scale when
bias/(x_scale*w_scale) would overflow int32).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper, shape_inference

PRODUCER, VERSION = "onnx.quantize", "0.1.0"
MS_DOMAIN = "com.microsoft"
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))

# ORT registry keys (registry.py)
INTEGER_OPS = ["Conv", "MatMul", "Attention", "LSTM", "Gather", "Transpose", "EmbedLayerNormalization"]
QLINEAR_OPS = ["ArgMax", "Conv", "Gemm", "MatMul", "Add", "Mul", "Relu", "Clip", "LeakyRelu", "Sigmoid", "MaxPool",
               "GlobalAveragePool", "Split", "Pad", "Reshape", "Squeeze", "Unsqueeze", "Resize", "AveragePool",
               "Concat", "Softmax", "Where", "Gather", "Transpose", "EmbedLayerNormalization"]
QDQ_OPS = ["Conv", "ConvTranspose", "Gemm", "Clip", "Relu", "Reshape", "Transpose", "Squeeze", "Unsqueeze",
           "Resize", "MaxPool", "AveragePool", "Slice", "Pad", "MatMul", "Split", "Gather", "GatherElements",
           "Where", "InstanceNormalization", "LayerNormalization", "BatchNormalization"]
DIRECT8_QOP = {"Reshape", "Squeeze", "Unsqueeze", "Transpose", "MaxPool"}
DIRECT8_QDQ = {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "AveragePool", "Slice", "MaxPool"}
# QOperator ops ORT turns into com.microsoft contrib ops; written here as DequantizeLinear -> op -> QuantizeLinear
CONTRIB_QOP = {"Add", "Mul", "Concat", "GlobalAveragePool", "AveragePool", "Sigmoid", "LeakyRelu", "Softmax"}
# ops whose QDQ handling this script does not reproduce (ORT has special quantizers for them)
QDQ_UNHANDLED = {"Resize", "Pad", "Split", "Gather", "GatherElements", "Where", "InstanceNormalization",
                 "LayerNormalization", "BatchNormalization"}

NP = {TensorProto.UINT8: np.uint8, TensorProto.INT8: np.int8, TensorProto.INT32: np.int32}
QRANGE = {(TensorProto.UINT8, False): (0, 255), (TensorProto.INT8, False): (-128, 127),
          (TensorProto.UINT8, True): (0, 254), (TensorProto.INT8, True): (-127, 127)}


# ---------------------------------------------------------------- numerics (quant_utils.py)
def compute_scale_zp(rmin, rmax, qtype, symmetric):
    """ORT's compute_scale_zp: returns (zero_point as the quantized dtype, scale as float32)."""
    qmin, qmax = QRANGE[(qtype, symmetric)]
    rmin = np.minimum(np.float32(rmin), np.float32(0))
    rmax = np.maximum(np.float32(rmax), np.float32(0))
    if symmetric:
        absmax = np.maximum(np.abs(rmin), np.abs(rmax))
        rmin, rmax = -absmax, absmax
    scale = np.float64(rmax - rmin) / (np.float64(qmax) - np.float64(qmin))
    if scale < np.finfo(np.float32).tiny:
        return np.array(0, NP[qtype]), np.float32(1.0)
    if symmetric:
        zp = np.round((qmin + qmax) / np.float64(2.0))
    else:
        zp = np.round(qmin - rmin / scale)
    return np.array(zp, NP[qtype]), np.float32(scale)


def quantize_nparray(qtype, arr, scale, zp):
    qmin, qmax = QRANGE[(qtype, False)]
    x = np.asarray((arr.astype(np.float32) / scale).round() + zp)
    np.clip(x, qmin, qmax, out=x)
    return x.astype(NP[qtype])


def quantize_data(data, qtype, symmetric):
    data = np.asarray(data)
    rmin, rmax = (data.min(), data.max()) if data.size else (0.0, 0.0)
    zp, scale = compute_scale_zp(rmin, rmax, qtype, symmetric)
    return zp, scale, quantize_nparray(qtype, data, scale, zp)


# ---------------------------------------------------------------- graph helpers (onnx_model.py)
def infer(model):
    return shape_inference.infer_shapes(model)


def add_infer_metadata(model):
    props = {"onnx.infer": "onnxruntime.quant"}
    for p in model.metadata_props:
        props[p.key] = p.value
    helper.set_model_props(model, props)


def value_infos(model):
    vi = {v.name: v for v in model.graph.value_info}
    vi.update({v.name: v for v in model.graph.output})
    vi.update({v.name: v for v in model.graph.input})
    return vi


def ort_topological_sort(graph):
    """onnx_model.py's topological_sort (the node order ORT writes)."""
    nodes = list(graph.node)
    deps = [0] * len(nodes)
    to_nodes = {}
    out = []
    for i, n in enumerate(nodes):
        deps[i] = sum(1 for x in n.input if x)
        if deps[i] == 0:
            out.append(nodes[i])
            continue
        for x in n.input:
            if x:
                to_nodes.setdefault(x, []).append(i)
    names = sorted([t.name for t in graph.initializer] + [t.name for t in graph.input])
    prev = None
    for name in names:
        if name == prev:
            continue
        prev = name
        for i in to_nodes.get(name, []):
            deps[i] -= 1
            if deps[i] == 0:
                out.append(nodes[i])
    start, end = 0, len(out)
    while start < end:
        for o in out[start].output:
            for i in to_nodes.get(o, []):
                deps[i] -= 1
                if deps[i] == 0:
                    out.append(nodes[i])
                    end += 1
        start += 1
    if end != len(nodes):
        raise RuntimeError("graph is not a DAG")
    graph.ClearField("node")
    graph.node.extend(out)


def clean_initializers(graph):
    """onnx_model.py's _clean_initializers_helper (top level only)."""
    req = {x for n in graph.node for x in n.input if x} | {o.name for o in graph.output}
    req -= {o for n in graph.node for o in n.output}
    unused = [t for t in graph.initializer if t.name not in req]
    inputs = {i.name: i for i in graph.input}
    for t in unused:
        graph.initializer.remove(t)
        if t.name in inputs:
            graph.input.remove(inputs[t.name])


def replace_gemm_with_matmul(graph):
    """onnx_model.py's __replace_gemm_with_matmul (dynamic mode only)."""
    inits = {t.name: t for t in graph.initializer}
    new = []
    for node in graph.node:
        if node.op_type != "Gemm":
            new.append(node)
            continue
        a = {x.name: helper.get_attribute_value(x) for x in node.attribute}
        if not (a.get("alpha", 1.0) == 1.0 and a.get("beta", 1.0) == 1.0 and a.get("transA", 0) == 0):
            new.append(node)
            continue
        in_b = node.input[1]
        if a.get("transB", 0) == 1:
            if in_b in inits:
                b = inits[in_b]
                bt = numpy_helper.from_array(numpy_helper.to_array(b).T)
                bt.name = b.name
                graph.initializer.remove(b)
                for gi in graph.input:
                    if gi.name == in_b:
                        graph.input.remove(gi)
                        break
                graph.initializer.extend([bt])
                inits[in_b] = bt
            else:
                in_b += "_Transposed"
                new.append(helper.make_node("Transpose", [node.input[1]], [in_b],
                                            name=node.name + "_Transpose" if node.name else ""))
        has_c = len(node.input) > 2
        new.append(helper.make_node("MatMul", [node.input[0], in_b], [node.output[0] + ("_MatMul" if has_c else "")],
                                    name=node.name + "_MatMul" if node.name else ""))
        if has_c:
            new.append(helper.make_node("Add", [node.output[0] + "_MatMul", node.input[2]], list(node.output),
                                        name=node.name + "_Add" if node.name else ""))
    graph.ClearField("node")
    graph.node.extend(new)


def weight_constants_to_initializers(graph):
    """Constant nodes, and Identity nodes of an initializer (torch's exporter writes those for shared, e.g. all-zero,
    biases), that feed a Conv/ConvTranspose/Gemm/MatMul weight or bias become initializers: a minimal stand-in for
    quant_pre_process's ORT constant folding and Identity elimination, which users run first. ORT's quantizer given
    such a weight quantizes it at run time and then raises 'Expected ... to be an initializer' at the first Conv with
    a bias; given such a bias, QLinearConv's bias quantization fails. Returns how many were converted."""
    slots = {"Conv": (1, 2), "ConvTranspose": (1, 2), "Gemm": (1, 2), "MatMul": (1,)}
    wanted = {n.input[i] for n in graph.node if n.op_type in slots for i in slots[n.op_type] if i < len(n.input)}
    inits = {t.name: t for t in graph.initializer}
    keep, count = [], 0
    for n in graph.node:
        src = None
        if n.output and n.output[0] in wanted:
            if n.op_type == "Constant" and len(n.attribute) == 1 and n.attribute[0].name == "value":
                src = n.attribute[0].t
            elif n.op_type == "Identity" and n.input[0] in inits:
                src = inits[n.input[0]]
        if src is not None:
            t = onnx.TensorProto()
            t.CopyFrom(src)
            t.name = n.output[0]
            graph.initializer.append(t)
            count += 1
        else:
            keep.append(n)
    if count:
        graph.ClearField("node")
        graph.node.extend(keep)
    return count


def attrs(node, skip=()):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute if a.name not in skip}


def copy_node(node, inputs=None, outputs=None, name=None):
    n = onnx.NodeProto()
    n.CopyFrom(node)
    if inputs is not None:
        del n.input[:]
        n.input.extend(inputs)
    if outputs is not None:
        del n.output[:]
        n.output.extend(outputs)
    if name is not None:
        n.name = name
    return n


# ---------------------------------------------------------------- calibration (calibrate.py MinMaxCalibrater)
def random_inputs(model, shapes, batches):
    rng = np.random.default_rng(0)
    inits = {t.name for t in model.graph.initializer}
    feeds = []
    for _ in range(batches):
        f = {}
        for i in model.graph.input:
            if i.name in inits:
                continue
            if i.name in shapes:
                dims = shapes[i.name]
            else:
                dims = [d.dim_value for d in i.type.tensor_type.shape.dim]
                if any(d <= 0 for d in dims):
                    sys.exit(f"quantize_onnx.py: input {i.name} has open dims; give --shape {i.name}=...")
            f[i.name] = rng.uniform(-1, 1, size=dims).astype(np.float32)
        feeds.append(f)
    return feeds


def tensors_to_calibrate(model, op_types):
    vi = value_infos(model)
    inits = {t.name for t in model.graph.initializer}
    out = []
    seen = set()
    for n in model.graph.node:
        if op_types and n.op_type not in op_types:
            continue
        for t in list(n.input) + list(n.output):
            if not t or t in seen or t in inits or t not in vi:
                continue
            v = vi[t]
            if v.type.HasField("tensor_type") and v.type.tensor_type.elem_type in (TensorProto.FLOAT,
                                                                                   TensorProto.FLOAT16):
                out.append(t)
                seen.add(t)
    return out


def calibrate(model, op_types, shapes, batches, ort_dir):
    """Runs the float model in ONNX Runtime (Node.js peer, optimizations off, like ORT's calibrator) with every
    calibrated tensor exposed as an output, and returns {tensor: (min, max)} over all batches."""
    names = tensors_to_calibrate(model, op_types)
    aug = onnx.ModelProto()
    aug.CopyFrom(model)
    del aug.graph.output[:]
    for k, t in enumerate(names):
        aug.graph.node.append(helper.make_node("Identity", [t], [f"calib_{k}"]))
        aug.graph.output.append(helper.make_tensor_value_info(f"calib_{k}", TensorProto.FLOAT, None))
    runner = os.path.join(ROOT, "..", "shared", "peers", "ort", "ort-run.js")
    env = dict(os.environ, NODE_PATH=os.path.join(ort_dir, "node_modules"))
    lo = {t: np.float32(np.inf) for t in names}
    hi = {t: np.float32(-np.inf) for t in names}
    with tempfile.TemporaryDirectory(prefix="quantize_onnx.") as tmp:
        path = os.path.join(tmp, "augmented.onnx")
        onnx.save(aug, path)
        for b, feed in enumerate(random_inputs(model, shapes, batches)):
            cmd = ["node", runner, "--model", path, "--warmup", "0", "--iters", "1", "--opt", "disabled",
                   "--out", os.path.join(tmp, f"b{b}")]
            for n, x in feed.items():
                f = os.path.join(tmp, f"in{b}_{len(cmd)}.npy")
                np.save(f, x)
                cmd += ["--input", f"{n}={f}"]
            r = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if r.returncode:
                sys.exit(f"quantize_onnx.py: calibration run failed:\n{r.stderr}")
            for k, t in enumerate(names):
                v = np.load(os.path.join(tmp, f"b{b}", f"calib_{k}.npy"))
                if v.size:
                    lo[t] = min(lo[t], v.min())
                    hi[t] = max(hi[t], v.max())
    return {t: (np.float32(lo[t]), np.float32(hi[t])) for t in names if np.isfinite(lo[t])}


def adjust_tensor_ranges(model, ranges, op_types):
    """base_quantizer.py adjust_tensor_ranges: a Relu/Clip input that feeds only it takes the output's range;
    Softmax outputs get [0, 1]."""
    consumers = {}
    for n in model.graph.node:
        for x in n.input:
            if x:
                consumers.setdefault(x, []).append(n)
    for n in model.graph.node:
        if n.op_type in ("Clip", "Relu"):
            if n.op_type not in op_types or len(consumers.get(n.input[0], [])) != 1:
                continue
            if n.input[0] not in ranges or n.output[0] not in ranges:
                continue
            ranges[n.input[0]] = ranges[n.output[0]]
        elif n.op_type == "Softmax":
            ranges[n.output[0]] = (np.float32(0.0), np.float32(1.0))


# ---------------------------------------------------------------- the quantizer
class Quantizer:
    def __init__(self, model, mode, per_channel, ranges, op_types):
        self.model = model
        self.g = model.graph
        self.mode = mode
        self.per_channel = per_channel
        self.op_types = set(op_types)
        self.vi = value_infos(model)
        self.act_type = TensorProto.UINT8
        self.w_type = TensorProto.INT8
        self.params = {}  # tensor -> (zp, scale)
        if ranges is not None:
            adjust_tensor_ranges(model, ranges, self.op_types)
            for t, (lo, hi) in ranges.items():
                self.params[t] = compute_scale_zp(lo, hi, self.act_type, False)
        self.opset = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")][0]
        self.new_nodes = []
        self.qmap = {}  # original name -> (q_name, scale_name, zp_name)
        self.generated = {i.name for i in self.g.input} - {t.name for t in self.g.initializer}
        self.tensor_names = {o for n in self.g.node for o in n.output} | {i.name for i in self.g.input} \
            | {o.name for o in self.g.output}

    # -- initializers
    def init(self, name):
        for t in self.g.initializer:
            if t.name == name:
                return t
        return None

    def add_init(self, t):
        if self.init(t.name) is None:
            self.g.initializer.append(t)

    def is_float(self, name):
        t = self.init(name)
        if t is not None:
            return t.data_type in (TensorProto.FLOAT, TensorProto.FLOAT16)
        v = self.vi.get(name)
        return v is not None and v.type.HasField("tensor_type") and \
            v.type.tensor_type.elem_type in (TensorProto.FLOAT, TensorProto.FLOAT16)

    def quantize_initializer(self, name, qtype, symmetric=True):
        """base_quantizer.quantize_initializer_impl (per tensor)."""
        if name in self.qmap:
            return self.qmap[name]
        w = self.init(name)
        data = numpy_helper.to_array(w)
        sym = symmetric  # ORT: is_weight_symmetric (True for int8 weights) whatever qtype
        zp, scale, q = quantize_data(data.flatten(), qtype, sym)
        self.g.initializer.extend([helper.make_tensor(name + "_scale", w.data_type, [], [float(scale)]),
                                   helper.make_tensor(name + "_zero_point", qtype, [], [int(zp)])])
        self.g.initializer.append(numpy_helper.from_array(q.reshape(tuple(w.dims)), name + "_quantized"))
        self.qmap[name] = (name + "_quantized", name + "_scale", name + "_zero_point")
        return self.qmap[name]

    def quantize_weight_per_channel(self, name, qtype, axis):
        """base_quantizer.quantize_weight_per_channel_impl."""
        if name in self.qmap:
            return self.qmap[name]
        w = self.init(name)
        data = numpy_helper.to_array(w)
        zps, scales, chans = [], [], []
        rdims = list(data.shape)
        rdims[axis] = 1
        for i in range(data.shape[axis]):
            zp, scale, q = quantize_data(data.take(i, axis).flatten(), qtype, True)
            zps.append(zp)
            scales.append(scale)
            chans.append(np.asarray(q).reshape(rdims))
        qw = np.concatenate(chans, axis).astype(NP[qtype]).reshape(tuple(w.dims))
        c = [w.dims[axis]]
        self.g.initializer.extend([
            helper.make_tensor(name + "_scale", w.data_type, c, np.hstack(scales).tolist()),
            helper.make_tensor(name + "_zero_point", qtype, c, np.hstack(zps).tolist())])
        self.g.initializer.append(numpy_helper.from_array(qw, name + "_quantized"))
        self.qmap[name] = (name + "_quantized", name + "_scale", name + "_zero_point")
        return self.qmap[name]

    def act_params(self, name):
        """onnx_quantizer._get_quantization_params: adds NAME_zero_point and NAME_scale initializers."""
        if name not in self.params:
            return None
        zp, scale = self.params[name]
        self.add_init(helper.make_tensor(name + "_zero_point", self.act_type, [], [int(zp)]))
        self.add_init(helper.make_tensor(name + "_scale", TensorProto.FLOAT, [], [float(scale)]))
        return name + "_scale", name + "_zero_point"

    def quantize_bias(self, bias, in_scale_name, w_scale_name, beta=1.0):
        """base_quantizer.quantize_bias_static_impl: int32, zero point 0, scale x_scale * w_scale * beta."""
        if bias in self.qmap:
            return self.qmap[bias]
        b = numpy_helper.to_array(self.init(bias))
        x_s = numpy_helper.to_array(self.init(in_scale_name))
        w_s = numpy_helper.to_array(self.init(w_scale_name))
        bs = x_s * w_s * beta
        q = (np.asarray(b) / bs).round().astype(np.int32).reshape(b.shape)
        qn = bias + "_quantized"
        self.g.initializer.append(numpy_helper.from_array(q, qn))
        bsd = np.asarray(bs, np.float32).reshape(-1)
        self.g.initializer.append(numpy_helper.from_array(bsd, qn + "_scale"))
        if self.per_channel:
            zpt = numpy_helper.from_array(np.zeros(bs.shape, np.int32).reshape(-1), qn + "_zero_point")
        else:
            zpt = helper.make_tensor(qn + "_zero_point", TensorProto.INT32, [], [0])
        self.g.initializer.append(zpt)
        self.qmap[bias] = (qn, qn + "_scale", qn + "_zero_point")
        self.bias_axis = 0 if bsd.size > 1 else None
        return self.qmap[bias]

    # -- QOperator / dynamic activations (onnx_quantizer.__quantize_inputs)
    def find_new_node(self, name):
        for n in list(self.g.node) + self.new_nodes:
            if n.name == name:
                return n
        return None

    def quantize_activation(self, node, idx, nodes):
        x = node.input[idx]
        if x in self.qmap:
            return self.qmap[x]
        if self.init(x) is not None:
            return self.quantize_initializer(x, self.act_type)
        qn = self.find_new_node(x + "_QuantizeLinear")
        if qn is None:
            p = self.act_params(x)
            if p is not None:
                qn = helper.make_node("QuantizeLinear", [x, p[0], p[1]], [x + "_quantized"], x + "_QuantizeLinear")
            elif self.mode == "dynamic":
                qn = helper.make_node("DynamicQuantizeLinear", [x], [x + "_quantized", x + "_scale",
                                                                     x + "_zero_point"], x + "_QuantizeLinear")
            else:
                return None
            nodes.append(qn)
        if qn.op_type == "QuantizeLinear":
            r = (qn.output[0], qn.input[1], qn.input[2])
        else:
            r = tuple(qn.output)
        self.qmap[x] = r
        return r

    def dequantize_value(self, name):
        """onnx_quantizer._dequantize_value: DequantizeLinear NAME_DequantizeLinear -> NAME, once."""
        if name in self.qmap and name not in self.generated:
            dq = name + "_DequantizeLinear"
            if self.find_new_node(dq) is None:
                q = self.qmap[name]
                return helper.make_node("DequantizeLinear", [q[0], q[1], q[2]], [name], dq)
        return None

    def default(self, node):
        for x in node.input:
            dq = self.dequantize_value(x)
            if dq is not None:
                self.new_nodes.append(dq)
        self.new_nodes.append(node)

    def should(self, node):
        return node.op_type in self.op_types and node.input and self.is_float(node.input[0])

    # -- dynamic (IntegerOps)
    def integer_op(self, node):
        nodes = []
        is_conv = node.op_type == "Conv"
        if not is_conv and self.init(node.input[1]) is None:  # MatMulConstBOnly
            return self.default(node)
        xq = self.quantize_activation(node, 0, nodes)
        if is_conv:
            wq = self.quantize_initializer(node.input[1], self.w_type)
        elif self.per_channel:
            w = self.init(node.input[1])
            wq = self.quantize_weight_per_channel(node.input[1], self.w_type, len(w.dims) - 1)
        else:
            wq = self.quantize_initializer(node.input[1], self.w_type)
        y = node.output[0]
        iname = node.name + "_quant" if node.name else ""
        iout = y + "_output_quantized"
        op = "ConvInteger" if is_conv else "MatMulInteger"
        nodes.append(helper.make_node(op, [xq[0], wq[0], xq[2], wq[2]], [iout], iname,
                                      **(attrs(node) if is_conv else {})))
        cast_out = iout + "_cast_output"
        nodes.append(helper.make_node("Cast", [iout], [cast_out], iout + "_cast", to=TensorProto.FLOAT))
        smul = iname + "_scales_mul" if iname else xq[1] + "_" + wq[1] + "_mul"
        if self.find_new_node(smul) is None:
            nodes.append(helper.make_node("Mul", [xq[1], wq[1]], [smul + ":0"], smul))
        has_bias = is_conv and len(node.input) == 3 and node.input[2]
        scaled = y + "quant_scaled_output" if has_bias else y
        nodes.append(helper.make_node("Mul", [cast_out, smul + ":0"], [scaled],
                                      iname + "_output_scale_mul" if iname else ""))
        if has_bias:
            w = self.init(node.input[1])
            shape = np.ones(len(w.dims), np.int64)
            shape[1] = -1
            self.add_init(helper.make_tensor(y + "_bias_reshape_shape", TensorProto.INT64, [len(w.dims)], shape))
            nodes.append(helper.make_node("Reshape", [node.input[2], y + "_bias_reshape_shape"],
                                          [y + "_bias_reshape_output"]))
            nodes.append(helper.make_node("Add", [scaled, y + "_bias_reshape_output"], [y], y + "_bias_add"))
        self.new_nodes += nodes

    # -- QOperator (QLinearOps)
    def qlinear_conv_matmul(self, node):
        nodes = []
        op = node.op_type
        out_p = self.act_params(node.output[0]) if op in ("Conv",) else None
        xq = self.quantize_activation(node, 0, nodes)
        w = self.init(node.input[1])
        if op == "Conv":
            if w is not None and self.per_channel:
                wq = self.quantize_weight_per_channel(node.input[1], TensorProto.INT8, 0)
            else:
                wq = self.quantize_initializer(node.input[1], self.w_type) if w is not None else None
        else:  # MatMul: weight quantized per channel at op level (axis -1), reduce_range off
            if w is None:
                return self.default(node)
            if self.per_channel:
                wq = self.quantize_weight_per_channel(node.input[1], self.w_type, len(w.dims) - 1)
            else:
                wq = self.quantize_initializer(node.input[1], self.w_type)
            out_p = self.act_params(node.output[0])
        if out_p is None or xq is None or wq is None:
            return self.default(node)
        ins = [xq[0], xq[1], xq[2], wq[0], wq[1], wq[2], out_p[0], out_p[1]]
        if op == "Conv" and len(node.input) == 3 and node.input[2]:
            ins.append(self.quantize_bias(node.input[2], xq[1], wq[1])[0])
        y = node.output[0]
        nodes.append(helper.make_node("QLinearConv" if op == "Conv" else "QLinearMatMul", ins, [y + "_quantized"],
                                      node.name + "_quant" if node.name else "",
                                      **(attrs(node) if op == "Conv" else {})))
        self.qmap[y] = (y + "_quantized", out_p[0], out_p[1])
        self.new_nodes += nodes

    def relu_clip(self, node):
        if node.input[0] not in self.qmap:
            return self.default(node)
        self.qmap[node.output[0]] = self.qmap[node.input[0]]

    def direct8(self, node):
        if node.op_type == "MaxPool" and self.opset < 12:
            return self.default(node)
        if node.input[0] not in self.qmap:
            self.new_nodes.append(node)
            return
        q = self.qmap[node.input[0]]
        y = node.output[0]
        self.qmap[y] = (y + "_quantized", q[1], q[2])
        self.new_nodes.append(copy_node(node, [q[0]] + list(node.input[1:]), [y + "_quantized"] +
                                        list(node.output[1:])))

    def dq_for_contrib(self, x, q, nodes):
        """Input of a contrib-op stand-in: the float value ORT's QuantOperatorBase would dequantize (NAME), or, when
        NAME itself is a float tensor already (it was quantized by a QuantizeLinear for this op), a dequantized
        copy NAME_quantized_DequantizeLinear_Output."""
        if x not in self.generated and self.init(x) is None:
            dq = self.dequantize_value(x)
            if dq is not None:
                nodes.append(dq)
            return x
        name = q[0] + "_DequantizeLinear"
        if self.find_new_node(name) is None and all(n.name != name for n in nodes):
            nodes.append(helper.make_node("DequantizeLinear", list(q), [name + "_Output"], name))
        return name + "_Output"

    def contrib_standin(self, node):
        """QLinearAdd/QLinearMul/QLinearConcat/QLinearGlobalAveragePool/... as DequantizeLinear -> op -> Quantize."""
        op = node.op_type
        nodes = []
        if op == "GlobalAveragePool" and node.input[0] not in self.qmap:
            return self.default(node)
        out_p = self.act_params(node.output[0])
        idx = range(len(node.input)) if op == "Concat" else ([0, 1] if op in ("Add", "Mul") else [0])
        qs = []
        for i in idx:
            q = self.quantize_activation(node, i, nodes)
            if q is None:
                return self.default(node)
            qs.append(q)
        if out_p is None:
            return self.default(node)
        dq_nodes = []
        ins = list(node.input)
        for i, q in zip(idx, qs):
            ins[i] = self.dq_for_contrib(node.input[i], q, dq_nodes)
        y = node.output[0]
        nodes += dq_nodes
        nodes.append(copy_node(node, ins, [y + "_float"] + list(node.output[1:])))
        nodes.append(helper.make_node("QuantizeLinear", [y + "_float", out_p[0], out_p[1]], [y + "_quantized"],
                                      y + "_QuantizeLinear"))
        self.qmap[y] = (y + "_quantized", out_p[0], out_p[1])
        self.new_nodes += nodes

    def qgemm_standin(self, node):
        """QLinearGemm (QGemm) as DequantizeLinear(x), DequantizeLinear(int8 W), DequantizeLinear(int32 bias) ->
        Gemm -> QuantizeLinear."""
        a = attrs(node)
        nodes = []
        out_p = self.act_params(node.output[0])
        xq = self.quantize_activation(node, 0, nodes)
        w = self.init(node.input[1])
        if w is None:
            return self.default(node)
        if self.per_channel:
            axis = 0 if a.get("transB", 0) else 1
            wq = self.quantize_weight_per_channel(node.input[1], self.w_type, axis)
        else:
            axis = None
            wq = self.quantize_initializer(node.input[1], self.w_type)
        if out_p is None or xq is None:
            return self.default(node)
        has_c = len(node.input) == 3 and node.input[2]
        if has_c and self.init(node.input[2]) is None:
            return self.default(node)
        ins = [self.dq_for_contrib(node.input[0], xq, nodes)]
        wn = node.input[1]
        nodes.append(helper.make_node("DequantizeLinear", list(wq), [wn + "_DequantizeLinear_Output"],
                                      wn + "_DequantizeLinear", **({"axis": axis} if axis is not None else {})))
        ins.append(wn + "_DequantizeLinear_Output")
        if has_c:
            bq = self.quantize_bias(node.input[2], xq[1], wq[1], a.get("beta", 1.0))
            bn = node.input[2]
            nodes.append(helper.make_node("DequantizeLinear", list(bq), [bn + "_DequantizeLinear_Output"],
                                          bn + "_DequantizeLinear",
                                          **({"axis": 0} if self.bias_axis is not None else {})))
            ins.append(bn + "_DequantizeLinear_Output")
        y = node.output[0]
        g = copy_node(node, ins, [y + "_float"])
        for at in g.attribute:
            if at.name == "beta":  # the bias was quantized with beta folded into its scale
                at.f = 1.0
        nodes.append(g)
        nodes.append(helper.make_node("QuantizeLinear", [y + "_float", out_p[0], out_p[1]], [y + "_quantized"],
                                      y + "_QuantizeLinear"))
        self.qmap[y] = (y + "_quantized", out_p[0], out_p[1])
        self.new_nodes += nodes

    def run_qop_or_dynamic(self):
        for node in list(self.g.node):
            n0 = len(self.new_nodes)
            op = node.op_type
            if not self.should(node):
                self.default(node)
            elif self.mode == "dynamic":
                if op in ("Conv", "MatMul"):
                    self.integer_op(node)
                else:
                    self.default(node)
            elif op in ("Conv", "MatMul"):
                self.qlinear_conv_matmul(node)
            elif op in ("Relu", "Clip"):
                self.relu_clip(node)
            elif op in DIRECT8_QOP:
                self.direct8(node)
            elif op in CONTRIB_QOP:
                self.contrib_standin(node)
            elif op == "Gemm":
                self.qgemm_standin(node)
            else:
                self.default(node)
            for n in self.new_nodes[n0:]:
                self.generated.update(n.output)
        for o in self.g.output:
            dq = self.dequantize_value(o.name)
            if dq is not None:
                self.new_nodes.append(dq)
        self.g.ClearField("node")
        self.g.node.extend(self.new_nodes)

    # -- QDQ (qdq_quantizer.py)
    def run_qdq(self):
        self.to_quant = {}  # name -> ("act"|"weight", axis, shared_provider)
        self.bias_to_quant = {}
        self.remove = []
        consumers = {}
        for n in self.g.node:
            for x in n.input:
                if x:
                    consumers.setdefault(x, []).append(n)

        def quantizable(t):
            w = self.init(t)
            if w is not None:
                return w.data_type in (TensorProto.FLOAT, TensorProto.FLOAT16)
            return self.is_float(t)

        def mark(t, kind="act", axis=None, shared=None):
            if not t or not quantizable(t):
                return
            if shared is not None or t not in self.to_quant:
                self.to_quant[t] = (kind, axis, shared)

        def weight(t, axis):
            if self.init(t) is None:
                return mark(t)
            if self.per_channel and axis is not None:
                self.to_quant[t] = ("weight", axis, None)
            else:
                mark(t, "weight")

        def is_quantized(t):
            return t in self.to_quant or t in self.bias_to_quant

        for node in list(self.g.node):
            op = node.op_type
            if op not in self.op_types:
                continue
            if op in ("Conv", "ConvTranspose"):
                mark(node.input[0])
                mark(node.output[0])
                weight(node.input[1], 0 if op == "Conv" else 1)
                if len(node.input) == 3 and node.input[2] and self.init(node.input[2]) is not None:
                    self.bias_to_quant.setdefault(node.input[2], (node.name, node.input[0], node.input[1], 1.0))
            elif op == "Gemm":
                a = attrs(node)
                mark(node.input[0])
                mark(node.output[0])
                weight(node.input[1], 0 if a.get("transB", 0) else 1)
                if len(node.input) == 3 and node.input[2] and self.init(node.input[2]) is not None:
                    self.bias_to_quant.setdefault(node.input[2], (node.name, node.input[0], node.input[1],
                                                                  a.get("beta", 1.0)))
                    for at in node.attribute:
                        if at.name == "beta":
                            at.f = 1.0
            elif op == "MatMul":
                for t in list(node.input) + list(node.output):
                    if self.init(t) is not None:
                        weight(t, 1)
                    else:
                        mark(t)
            elif op in ("Relu", "Clip"):
                if not is_quantized(node.input[0]):
                    continue
                up, out = node.input[0], node.output[0]
                if out in self.params and len(consumers.get(up, [])) == 1 and \
                        up not in {o.name for o in self.g.output} and up not in {i.name for i in self.g.input}:
                    for n in self.g.node:
                        for j, o in enumerate(n.output):
                            if o == up:
                                n.output[j] = out
                    self.to_quant.pop(up, None)
                    self.remove.append(node)
                else:
                    mark(up)
                mark(out)
            elif op in DIRECT8_QDQ:
                if op == "MaxPool" and self.opset < 12:
                    continue
                if is_quantized(node.input[0]):
                    mark(node.output[0], shared=(node.input[0], node.name))
            elif op in QDQ_UNHANDLED:
                continue
            else:  # QDQOperatorBase: every input and output
                for t in list(node.input) + list(node.output):
                    mark(t)

        outputs = {o.name for o in self.g.output}

        def add_nodes(*ns):
            self.g.node.extend(ns)

        def replace_inputs(old, new):
            for n in self.g.node:
                for j, x in enumerate(n.input):
                    if x == old:
                        n.input[j] = new

        def qdq_activation(t, s, z):
            q_in, dq_out = t, t + "_DequantizeLinear_Output"
            if t in outputs:
                q_in, dq_out = t + "_QuantizeLinear_Input", t
                for n in self.g.node:
                    for j, o in enumerate(n.output):
                        if o == t:
                            n.output[j] = q_in
            else:
                replace_inputs(t, dq_out)
            add_nodes(helper.make_node("QuantizeLinear", [q_in, s, z], [t + "_QuantizeLinear_Output"],
                                       t + "_QuantizeLinear"),
                      helper.make_node("DequantizeLinear", [t + "_QuantizeLinear_Output", s, z], [dq_out],
                                       t + "_DequantizeLinear"))
            self.qmap[t] = (dq_out, s, z)

        # _quantize_normal_tensors
        for t, (kind, axis, shared) in list(self.to_quant.items()):
            if t in self.qmap or shared is not None:
                continue
            if self.init(t) is not None:
                if axis is not None:
                    q = self.quantize_weight_per_channel(t, TensorProto.INT8, axis)
                else:
                    q = self.quantize_initializer(t, self.w_type if kind == "weight" else self.act_type)
                replace_inputs(t, t + "_DequantizeLinear_Output")
                add_nodes(helper.make_node("DequantizeLinear", list(q), [t + "_DequantizeLinear_Output"],
                                           t + "_DequantizeLinear", **({"axis": axis} if axis is not None else {})))
                self.qmap[t] = q
            else:
                p = self.act_params(t)
                if p is None:
                    raise ValueError(f"no calibration range for {t}")
                qdq_activation(t, p[0], p[1])
            del self.to_quant[t]
        # _quantize_sharing_param_tensors
        while self.to_quant:
            progressed = False
            for t, (kind, axis, shared) in list(self.to_quant.items()):
                if shared[0] in self.qmap:
                    del self.to_quant[t]
                    q = self.qmap[shared[0]]
                    qdq_activation(t, q[1], q[2])
                    progressed = True
            if not progressed:
                raise RuntimeError(f"unresolved shared quantization: {list(self.to_quant)}")
        # _quantize_bias_tensors
        for b, (node_name, x, w, beta) in self.bias_to_quant.items():
            bq = self.quantize_bias(b, self.qmap[x][1], self.qmap[w][1], beta)
            binit = self.init(b)
            self.g.initializer.remove(binit)
            add_nodes(helper.make_node("DequantizeLinear", list(bq), [b], b + "_DequantizeLinear",
                                       **({"axis": 0} if self.bias_axis is not None else {})))
        for n in self.remove:
            self.g.node.remove(n)

    def finish(self):
        clean_initializers(self.g)
        self.model.producer_name = PRODUCER
        self.model.producer_version = VERSION
        if any(n.domain == MS_DOMAIN for n in self.g.node) and \
                not any(o.domain == MS_DOMAIN for o in self.model.opset_import):
            self.model.opset_import.append(helper.make_opsetid(MS_DOMAIN, 1))
        ort_topological_sort(self.g)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("mode", choices=["dynamic", "qoperator", "qdq"])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--per-channel", action="store_true",
                    help="dynamic: per-channel MatMul weights (ORT's per_channel=True); static modes always are")
    ap.add_argument("--per-tensor", action="store_true", help="static modes: per-tensor weights instead")
    ap.add_argument("--shape", action="append", default=[], metavar="NAME=D0,D1,...",
                    help="calibration shape of an input with open dims")
    ap.add_argument("--calib-batches", type=int, default=4, help="seeded random calibration inputs (default 4)")
    ap.add_argument("--ort-dir", default=os.path.join(ROOT, "build", "ort"),
                    help="folder where ../shared/peers/ort/setup.sh installed onnxruntime-node (default build/ort)")
    a = ap.parse_args()
    shapes = {}
    for s in a.shape:
        n, d = s.split("=")
        shapes[n] = [int(v) for v in d.split(",")]

    model = onnx.load(a.input)
    folded = weight_constants_to_initializers(model.graph)
    if folded:
        print(f"quantize_onnx.py: {folded} Constant weights/biases turned into initializers first", file=sys.stderr)
    model = infer(model)
    add_infer_metadata(model)
    if a.mode == "dynamic":
        replace_gemm_with_matmul(model.graph)
        model = infer(model)
        q = Quantizer(model, "dynamic", a.per_channel, None, INTEGER_OPS)
        q.run_qop_or_dynamic()
    else:
        ops = sorted(set(QLINEAR_OPS) | set(QDQ_OPS))
        ranges = calibrate(model, ops, shapes, a.calib_batches, a.ort_dir)
        q = Quantizer(model, a.mode, not a.per_tensor, ranges, ops)
        if a.mode == "qoperator":
            q.run_qop_or_dynamic()
        else:
            q.run_qdq()
    q.finish()
    os.makedirs(os.path.dirname(os.path.abspath(a.output)), exist_ok=True)
    onnx.save(q.model, a.output)
    from collections import Counter
    hist = Counter(n.op_type for n in q.model.graph.node)
    print(json.dumps({"output": a.output, "mode": a.mode, "per_channel": bool(q.per_channel),
                      "ops": dict(sorted(hist.items()))}))


if __name__ == "__main__":
    main()
