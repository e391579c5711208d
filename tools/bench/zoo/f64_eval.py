#!/usr/bin/python3
"""Evaluates an ONNX model in float64 (PyTorch CPU ops, float32 initializers widened) and says how far float32 runs
are from it: which of two runtimes that disagree is nearer the exact result, and whether one node loses accuracy
or the network amplifies ordinary rounding.

  f64_eval.py MODEL --input NAME=FILE.npy [...] [--compare LABEL=DIR ...] [--dump LABEL=DIR ...]

--compare LABEL=DIR  DIR holds <output>.npy files (ophost run --output-dir, ort-run.js --out): prints, per graph
                     output, max|DIR - f64| / max|f64|.
--dump LABEL=DIR     DIR is an `ophost run --dump` directory: prints, per dumped value that the model names too
                     (values of fused nodes carry the name of the last node fused), the propagated error
                     (against the float64 run from the model's inputs) and the local error (against the float64
                     result of the nodes that produced it, computed from this dump's own values of their inputs).
                     A node with a large local error computes badly; large propagated errors with small local ones
                     mean the network amplifies rounding.

Ops: Add Cast Clip Concat Conv Equal MaxPool Mul Pad Relu Reshape Resize (linear/nearest, 4-D) Shape Sigmoid Slice
Split Sub Transpose; another op stops the run naming the node (add it to OPS below). Needs python3-torch, numpy,
python3-onnx (Debian). Example (M-LSD at AVX2, docs/benchmarks.md):
  ONEDNN_MAX_CPU_ISA=AVX2 build/bin/ophost run M.onnx --random --shape X=1,320,320,4 --dump /tmp/avx2
  tools/bench/zoo/f64_eval.py M.onnx --input X=build/zoo/refs/M/input.X.npy --compare ort=build/zoo/refs/M \\
      --dump avx2=/tmp/avx2
"""
import argparse
import json
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper


def attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def conv(n, i, a):
    x, w = i[0], i[1]
    b = i[2] if len(i) > 2 else None
    if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise NotImplementedError("Conv auto_pad")
    p = a.get("pads", [0] * (2 * (x.dim() - 2)))
    half = len(p) // 2
    if p[:half] != p[half:]:
        tp = []
        for d in reversed(range(half)):
            tp += [p[d], p[d + half]]
        x, pad = F.pad(x, tp), 0
    else:
        pad = tuple(p[:half])
    f = {3: F.conv1d, 4: F.conv2d, 5: F.conv3d}[x.dim()]
    return f(x, w, b, stride=a.get("strides", 1), padding=pad, dilation=a.get("dilations", 1), groups=a.get("group", 1))


def clip(n, i, a):
    lo = i[1].item() if len(i) > 1 and i[1] is not None else a.get("min", -np.inf)
    hi = i[2].item() if len(i) > 2 and i[2] is not None else a.get("max", np.inf)
    return i[0].clamp(lo, hi)


def slice_(n, i, a):
    x, starts, ends = i[0], i[1].tolist(), i[2].tolist()
    axes = i[3].tolist() if len(i) > 3 and i[3] is not None else list(range(len(starts)))
    steps = i[4].tolist() if len(i) > 4 and i[4] is not None else [1] * len(starts)
    sl = [slice(None)] * x.dim()
    for s, e, ax, k in zip(starts, ends, axes, steps):
        if k != 1:
            raise NotImplementedError("Slice step != 1")
        d = x.shape[ax]
        s = max(0, min(d, s + d if s < 0 else s))
        e = max(0, min(d, e + d if e < 0 else e))
        sl[ax] = slice(s, e)
    return x[tuple(sl)]


def pad(n, i, a):
    if a.get("mode", b"constant") not in (b"constant", "constant"):
        raise NotImplementedError("Pad mode")
    p = i[1].tolist()
    r = len(p) // 2
    tp = []
    for d in reversed(range(r)):
        tp += [p[d], p[d + r]]
    v = float(i[2]) if len(i) > 2 and i[2] is not None else 0.0
    return F.pad(i[0], tp, mode="constant", value=v)


def resize(n, i, a):
    x = i[0]
    sizes = i[3].tolist() if len(i) > 3 and i[3] is not None and i[3].numel() else None
    if sizes is None:
        sizes = [int(d * s) for d, s in zip(x.shape, i[2].tolist())]
    if sizes[:2] != list(x.shape[:2]) or x.dim() != 4:
        raise NotImplementedError("Resize other than 4-D spatial")
    mode = a.get("mode", b"nearest")
    ctm = a.get("coordinate_transformation_mode", b"half_pixel")
    if mode == b"linear" and ctm in (b"half_pixel", b"pytorch_half_pixel"):
        return F.interpolate(x, size=sizes[2:], mode="bilinear", align_corners=False)
    if mode == b"linear" and ctm == b"align_corners":
        return F.interpolate(x, size=sizes[2:], mode="bilinear", align_corners=True)
    if mode == b"nearest" and ctm == b"asymmetric" and a.get("nearest_mode", b"round_prefer_floor") == b"floor":
        return F.interpolate(x, size=sizes[2:], mode="nearest")
    raise NotImplementedError(f"Resize mode {mode} / {ctm}")


def split(n, i, a):
    ax = a.get("axis", 0)
    if len(i) > 1 and i[1] is not None:
        parts = i[1].tolist()
    elif "split" in a:
        parts = a["split"]
    else:
        parts = [i[0].shape[ax] // len(n.output)] * len(n.output)
    return list(torch.split(i[0], parts, dim=ax))


def maxpool(n, i, a):
    p = a.get("pads", [0, 0, 0, 0])
    if p[:2] != p[2:] or a.get("ceil_mode", 0) or a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise NotImplementedError("MaxPool with asymmetric pads, ceil_mode or auto_pad")
    return F.max_pool2d(i[0], a["kernel_shape"], a.get("strides", 1), padding=tuple(p[:2]),
                        dilation=a.get("dilations", 1))


def cast(n, i, a):
    to = {1: torch.float64, 11: torch.float64, 6: torch.int32, 7: torch.int64, 9: torch.bool}.get(a["to"])
    if to is None:
        raise NotImplementedError(f"Cast to {a['to']}")
    return i[0].to(to)


def reshape(n, i, a):
    shape = i[1].tolist()
    shape = [i[0].shape[k] if d == 0 and not a.get("allowzero", 0) else d for k, d in enumerate(shape)]
    return i[0].reshape(shape)


OPS = {
    "Add": lambda n, i, a: i[0] + i[1], "Sub": lambda n, i, a: i[0] - i[1], "Mul": lambda n, i, a: i[0] * i[1],
    "Relu": lambda n, i, a: i[0].clamp(min=0), "Sigmoid": lambda n, i, a: torch.sigmoid(i[0]),
    "Concat": lambda n, i, a: torch.cat(i, dim=a["axis"]), "Transpose": lambda n, i, a: i[0].permute(*a["perm"]),
    "Shape": lambda n, i, a: torch.tensor(list(i[0].shape), dtype=torch.int64),
    "Equal": lambda n, i, a: i[0] == i[1], "Conv": conv, "Clip": clip, "Slice": slice_, "Pad": pad,
    "Resize": resize, "Split": split, "MaxPool": maxpool, "Cast": cast, "Reshape": reshape,
}


def evaluate(model, feeds, force=None):
    """Runs the graph in float64. force: {value name: tensor} replaces a value once computed (the local-error
    run). Returns {value name: tensor as computed, before any replacement}."""
    env = dict(feeds)
    for t in model.graph.initializer:
        arr = numpy_helper.to_array(t)
        env[t.name] = torch.from_numpy(arr.astype(np.float64) if arr.dtype == np.float32 else arr.copy())
    computed = {}
    for n in model.graph.node:
        if n.op_type == "Constant":
            arr = numpy_helper.to_array(attrs(n)["value"])
            env[n.output[0]] = torch.from_numpy(arr.astype(np.float64) if arr.dtype == np.float32 else arr.copy())
            continue
        fn = OPS.get(n.op_type)
        if fn is None:
            sys.exit(f"f64_eval.py: node '{n.name}': op {n.op_type} is not supported here (add it to OPS)")
        try:
            out = fn(n, [env[x] if x else None for x in n.input], attrs(n))
        except NotImplementedError as e:
            sys.exit(f"f64_eval.py: node '{n.name}' ({n.op_type}): {e} is not supported here")
        outs = out if isinstance(out, list) else [out]
        for name, v in zip(n.output, outs):
            computed[name] = v
            env[name] = force[name] if force and name in force else v
    return computed


def rel_err(x, ref):
    ref = ref.numpy().astype(np.float64)
    m = np.abs(ref).max()
    return np.abs(x.astype(np.float64) - ref).max() / (m if m else 1.0), m


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("model")
    ap.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    ap.add_argument("--compare", action="append", default=[], metavar="LABEL=DIR")
    ap.add_argument("--dump", action="append", default=[], metavar="LABEL=DIR")
    a = ap.parse_args()
    model = onnx.load(a.model)
    feeds = {}
    for spec in a.input:
        name, _, path = spec.partition("=")
        arr = np.load(path)
        feeds[name] = torch.from_numpy(arr.astype(np.float64) if arr.dtype == np.float32 else arr)
    missing = [i.name for i in model.graph.input if i.name not in feeds and
               i.name not in {t.name for t in model.graph.initializer}]
    if missing:
        sys.exit(f"f64_eval.py: no --input for {', '.join(missing)}")
    exact = evaluate(model, feeds)

    if a.compare:
        labels = [c.partition("=")[0] for c in a.compare]
        print("output".ljust(24), "max|f64|".rjust(10), *[lb.rjust(12) for lb in labels],
              "   (max|X - f64| / max|f64|)")
        for o in model.graph.output:
            row = []
            for c in a.compare:
                path = os.path.join(c.partition("=")[2], o.name.replace("/", "_").replace(":", "_") + ".npy")
                row.append(f"{rel_err(np.load(path), exact[o.name])[0]:.2e}" if os.path.exists(path) else "absent")
            print(o.name[:24].ljust(24), f"{rel_err(exact[o.name].numpy(), exact[o.name])[1]:10.4g}",
                  *[r.rjust(12) for r in row])

    for d in a.dump:
        label, _, path = d.partition("=")
        index = json.load(open(os.path.join(path, "index.json")))
        values = [v for v in index["values"] if v["name"] in exact and exact[v["name"]].is_floating_point()]
        dumped = {v["name"]: np.load(os.path.join(path, v["file"])) for v in values}
        local = evaluate(model, feeds, {k: torch.from_numpy(x.astype(np.float64)) for k, x in dumped.items()})
        print(f"\n{label}: {path} ({len(values)} values named in the model)")
        print("node".rjust(4), "op".ljust(22), "max|f64|".rjust(10), "propagated".rjust(11), "local".rjust(10))
        for v in values:
            prop, m = rel_err(dumped[v["name"]], exact[v["name"]])
            loc, _ = rel_err(dumped[v["name"]], local[v["name"]])
            print(f"{v['node_index']:4d} {v['op'][-22:]:22s} {m:10.4g} {prop:11.2e} {loc:10.2e}")


if __name__ == "__main__":
    main()
