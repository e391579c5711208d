#!/usr/bin/python3
"""Rewrites an ONNX model so that every node output is also a graph output, for dumping a peer runtime's
intermediates as a reference folder for `ophost diff` (docs/debugging.md):

    /usr/bin/python3 tools/dev/expose_all_values.py model.onnx /tmp/all.onnx
    NODE_PATH=.../ort/node_modules node ../shared/peers/ort/ort-run.js --model /tmp/all.onnx \\
        --random NAME=1,3,320,320 --out /tmp/ort      # writes /tmp/ort/<value name>.npy
    ophost diff model.onnx --reference /tmp/ort --random --a ""

A value whose name is over 180 characters (after replacing characters other than [A-Za-z0-9._-] by '_') is
renamed to the file name ophost's dump gives it (the first 160 characters, "_", 16 hex digits of the FNV-1a 64
hash of the original name), so the peer's file and ophost's match. Values of unknown type after ONNX shape
inference are exposed as float32 (an error at run time names them if
that is wrong). Only the main graph's values: If/Loop/Scan bodies are left alone.
"""
import re
import sys

import onnx
from onnx import TensorProto, helper, shape_inference



def dump_file_stem(name):  # host/exec/node_debug.cpp dump_file_stem()
    out = re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "_"
    if out in (".", ".."):
        out = "_" + out
    if len(out) > 180:
        h = 14695981039346656037
        for c in name.encode():
            h = ((h ^ c) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
        out = out[:160] + "_%016x" % h
    return out


src, dst = sys.argv[1:3]
m = onnx.load(src)
renamed = {}
for node in m.graph.node:
    for i, out in enumerate(node.output):
        if out and dump_file_stem(out) != re.sub(r"[^A-Za-z0-9_.-]", "_", out):  # truncated
            renamed[out] = dump_file_stem(out)
for node in m.graph.node:
    node.input[:] = [renamed.get(x, x) for x in node.input]
    node.output[:] = [renamed.get(x, x) for x in node.output]
for o in m.graph.output:
    o.name = renamed.get(o.name, o.name)
if renamed:
    print("%d long value names renamed to their dump file names" % len(renamed), file=sys.stderr)
try:
    inferred = shape_inference.infer_shapes(m)
except Exception as e:  # noqa: BLE001  (a model shape inference cannot handle: fall back to float32)
    print("shape inference failed (%s); every exposed value is declared float32" % e, file=sys.stderr)
    inferred = m
types = {renamed.get(vi.name, vi.name): vi.type.tensor_type.elem_type for vi in list(inferred.graph.value_info) + list(inferred.graph.output)}
have = {o.name for o in m.graph.output}
for node in m.graph.node:
    for out in node.output:
        if out and out not in have:
            m.graph.output.append(helper.make_tensor_value_info(out, types.get(out) or TensorProto.FLOAT, None))
            have.add(out)
onnx.save(m, dst)
print("%s: %d graph outputs" % (dst, len(m.graph.output)))
