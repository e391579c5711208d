#!/usr/bin/python3
"""Converts a float32 ONNX model to float16 the way onnxconverter-common's
float16.convert_float_to_float16(model, keep_io_types=True) does (the converter users run, e.g. through
onnxmltools or ORT's transformers tools), written with onnx + numpy only.

    /usr/bin/python3 tools/bench/zoo/float16_onnx.py IN.onnx OUT.onnx [--no-keep-io-types]
                     [--min-positive-val 1e-7] [--max-finite-val 1e4] [--op-block-list OP ...]

What it writes, as onnxconverter-common does (float16.py, 2025):
  * ONNX shape inference first; every float32 value_info becomes float16 (except outputs of blocked nodes);
  * float32 initializers and float32 tensors inside node attributes (Constant values) become float16, values clamped
    to [min_positive_val, max_finite_val] in magnitude (0, inf and NaN kept), except initializers that feed a
    blocked node;
  * keep_io_types: each float32 graph input gets one Cast(to float16) per consumer, node and output named
    INPUT_cast_to_CONSUMERNAME; each float32 graph output is produced by Cast(to float32) named and fed by
    PRODUCERNAME_cast_to_OUTPUT;
  * nodes whose op is in the default op block list (Resize, Range, TopK, NonMaxSuppression, RoiAlign, CumSum, Min,
    Max, Upsample and the ai.onnx.ml ops) stay float32: Cast(to float32) NODE_input_castI -> NODE_input_cast_I before
    each float16 input, Cast(to float16) NODE_output_castI after each float output (NODE_output_cast_I);
  * its node sort (first node, in the original order, none of whose inputs is still produced by an unsorted node)
    and its removal of Cast16 -> Cast32 pairs.
Existing Cast nodes keep their 'to' (a Cast to float32 inside the graph stays float32, as with the original tool).
"""
import argparse
import itertools
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, shape_inference

DEFAULT_OP_BLOCK_LIST = [
    "ArrayFeatureExtractor", "Binarizer", "CastMap", "CategoryMapper", "DictVectorizer", "FeatureVectorizer",
    "Imputer", "LabelEncoder", "LinearClassifier", "LinearRegressor", "Normalizer", "OneHotEncoder",
    "RandomUniformLike", "SVMClassifier", "SVMRegressor", "Scaler", "TreeEnsembleClassifier",
    "TreeEnsembleRegressor", "ZipMap", "NonMaxSuppression", "TopK", "RoiAlign", "Resize", "Range", "CumSum", "Min",
    "Max", "Upsample"]
F32, F16 = TensorProto.FLOAT, TensorProto.FLOAT16


def to_f16(a, lo, hi):
    """Clamp magnitudes into [lo, hi] (keeping sign, 0, inf, NaN), then float16."""
    a = np.asarray(a, np.float32)
    a = np.where((a > 0) & (a < lo), lo, a)
    a = np.where((a < 0) & (a > -lo), -lo, a)
    a = np.where((a > hi) & (a < np.inf), hi, a)
    a = np.where((a < -hi) & (a > -np.inf), -hi, a)
    return np.float16(a)


def tensor_to_f16(t, lo, hi):
    if t.data_type != F32:
        return
    t.data_type = F16
    if t.float_data:
        h = to_f16(np.array(t.float_data), lo, hi)
        t.int32_data[:] = [int(v) for v in h.view(np.uint16)]
        t.float_data[:] = []
    if t.raw_data:
        t.raw_data = to_f16(np.frombuffer(t.raw_data, np.float32), lo, hi).tobytes()


def new_value_info(graph, like, name, dtype):
    v = graph.value_info.add()
    v.CopyFrom(like)
    v.name = name
    v.type.tensor_type.elem_type = dtype


def add_cast(graph, i, o, name, to):
    graph.node.extend([helper.make_node("Cast", [i], [o], to=to, name=name)])


def convert(model, keep_io_types=True, lo=1e-7, hi=1e4, op_block_list=None):
    block = set(DEFAULT_OP_BLOCK_LIST if op_block_list is None else op_block_list)
    model = shape_inference.infer_shapes(model)
    g = model.graph
    # graph inputs
    if keep_io_types:
        for gi in g.input:
            if gi.type.tensor_type.elem_type != F32:
                continue
            for d in [n for n in g.node if gi.name in n.input]:
                name = gi.name + "_cast_to_" + d.name
                add_cast(g, gi.name, name, name, F16)
                new_value_info(g, gi, name, F16)
                for k, x in enumerate(d.input):
                    if x == gi.name:
                        d.input[k] = name
    else:
        for gi in g.input:
            if gi.type.tensor_type.elem_type == F32:
                gi.type.tensor_type.elem_type = F16
    # tensors inside attributes; outputs of blocked nodes keep their value_info type
    vi_block = set()
    for n in g.node:
        if n.op_type in block:
            vi_block.update(n.output)
            continue
        for a in n.attribute:
            if a.t.data_type == F32:
                tensor_to_f16(a.t, lo, hi)
            for t in a.tensors:
                tensor_to_f16(t, lo, hi)
    for v in g.value_info:
        if v.name not in vi_block and v.type.tensor_type.elem_type == F32:
            v.type.tensor_type.elem_type = F16
    # blocked nodes: Cast to float32 before, Cast to float16 after
    for n in list(g.node):
        if n.op_type not in block:
            continue
        for k in range(len(n.input)):
            for v in itertools.chain(g.value_info, g.input):
                if n.input[k] == v.name:
                    if v.type.tensor_type.elem_type != F16:
                        break
                    o = n.name + "_input_cast_" + str(k)
                    new_value_info(g, v, o, F32)
                    add_cast(g, n.input[k], o, n.name + "_input_cast" + str(k), F32)
                    n.input[k] = o
                    break
        for k in range(len(n.output)):
            for v in itertools.chain(g.value_info, g.output):
                if n.output[k] == v.name:
                    if v.type.tensor_type.elem_type != F32:
                        break
                    i = n.name + "_output_cast_" + str(k)
                    new_value_info(g, v, i, F32)
                    v.type.tensor_type.elem_type = F16
                    add_cast(g, i, n.output[k], n.name + "_output_cast" + str(k), F16)
                    n.output[k] = i
                    break
    # initializers (not those feeding a blocked node)
    init_block = {x for n in g.node if n.op_type in block for x in n.input}
    for t in g.initializer:
        if t.name not in init_block:
            tensor_to_f16(t, lo, hi)
    # graph outputs
    if keep_io_types:
        for go in g.output:
            if go.type.tensor_type.elem_type != F32:
                continue
            for u in [n for n in g.node if go.name in n.output]:
                name = u.name + "_cast_to_" + go.name
                add_cast(g, name, go.name, name, F32)
                new_value_info(g, go, name, F16)
                for k, x in enumerate(u.output):
                    if x == go.name:
                        u.output[k] = name
    else:
        for go in g.output:
            if go.type.tensor_type.elem_type == F32:
                go.type.tensor_type.elem_type = F16
    sort_nodes(g)
    remove_cast_pairs(g)
    return model


def sort_nodes(g):
    """onnxconverter-common's sort_graph_node."""
    rest = list(g.node)
    producer = {o: n for n in rest for o in n.output}
    out = []
    while producer:
        first = next((n for n in rest if not any(x in producer for x in n.input)), None)
        if first is None:
            raise RuntimeError("cycle in graph")
        out.append(first)
        for o in first.output:
            producer.pop(o, None)
        rest.remove(first)
    g.ClearField("node")
    g.node.extend(out)


def remove_cast_pairs(g):
    """onnxconverter-common's remove_unnecessary_cast_node: upstream -> Cast(16) -> Cast(32) -> downstream becomes
    upstream -> downstream when each Cast has a single consumer (a Cast fed by a Constant is left alone)."""
    casts = [n for n in g.node if n.op_type == "Cast"]
    by_in = {x: n for n in casts for x in n.input}
    by_out = {x: n for n in casts for x in n.output}
    down, up = {}, {}
    for n in g.node:
        for x in n.input:
            if x in by_out:
                down.setdefault(by_out[x].name, []).append(n)
        for x in n.output:
            if x in by_in:
                up[by_in[x].name] = n
    names = {n.name for n in casts if not (n.name in up and up[n.name].op_type == "Constant")}
    pairs = []
    for c in casts:
        d = down.get(c.name, [])
        if len(d) == 1 and d[0].op_type == "Cast" and c.attribute[0].i == F16 and d[0].attribute[0].i == F32 \
                and c.name in names and d[0].name in names:
            pairs.append((c, d[0]))
    for c1, c2 in pairs:
        tgt = down.get(c2.name, [])
        if len(tgt) != 1:
            continue
        for k, x in enumerate(tgt[0].input):
            if x in c2.output:
                tgt[0].input[k] = c1.input[0]
    for c1, c2 in pairs:
        g.node.remove(c1)
        g.node.remove(c2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--no-keep-io-types", action="store_true", help="float16 graph inputs and outputs")
    ap.add_argument("--min-positive-val", type=float, default=1e-7)
    ap.add_argument("--max-finite-val", type=float, default=1e4)
    ap.add_argument("--op-block-list", nargs="*", default=None, help="ops kept in float32 (default: the tool's list)")
    a = ap.parse_args()
    m = convert(onnx.load(a.input), not a.no_keep_io_types, a.min_positive_val, a.max_finite_val, a.op_block_list)
    onnx.save(m, a.output)
    from collections import Counter
    print(a.output, dict(sorted(Counter(n.op_type for n in m.graph.node).items())), file=sys.stderr)


if __name__ == "__main__":
    main()
