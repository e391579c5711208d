#!/usr/bin/python3
"""Writes plugins/myops/samples.json, the samples `ophost pack check` runs myops::relu6_scale on (installed beside
the pack as ophost-samples.json; CMake's SAMPLES). The expected outputs are NumPy's: relu6_scale is
np.clip(x * scale, 0, max_val) in float32, so NaN in gives NaN out (as ONNX Clip), +inf gives max_val and -inf 0.

    /usr/bin/python3 plugins/myops/make_samples.py      # rewrite samples.json after changing this script
"""
import json
import pathlib

import numpy as np


def values(a):
    # JSON has no NaN or infinity: pack check reads the strings "nan", "inf" and "-inf" in float values.
    return ["nan" if np.isnan(v) else ("inf" if v > 0 else "-inf") if np.isinf(v) else float(v) for v in a.ravel()]


def tensor(a):
    return {"dtype": str(a.dtype), "shape": list(a.shape), "values": values(a)}


def relu6_scale_sample(name, x, scale=None, max_val=None):
    attrs = {k: v for k, v in (("scale", scale), ("max_val", max_val)) if v is not None}
    y = np.clip(x * np.float32(1.0 if scale is None else scale), np.float32(0), np.float32(6.0 if max_val is None else max_val))
    assert y.dtype == np.float32
    sample = {"op": "myops::relu6_scale", "name": name}
    if attrs:
        sample["attrs"] = attrs
    sample["inputs"] = {"X": tensor(x)}
    sample["outputs"] = {"Y": tensor(y)}
    return sample


def main():
    samples = [
        relu6_scale_sample("finite", np.array([[1.0, -0.5, 2.0, 7.5], [-3.0, 0.25, 5.75, 0.0]], np.float32)),
        relu6_scale_sample("NaN and infinities",
                           np.array([[0.5, np.nan, np.inf], [-np.inf, -1.0, 3.0]], np.float32), scale=1.5, max_val=4.0),
    ]
    lines = ",\n".join("    " + json.dumps(s) for s in samples)
    text = "{\n  \"samples\": [\n" + lines + "\n  ]\n}\n"
    out = pathlib.Path(__file__).with_name("samples.json")
    out.write_text(text)
    print("wrote", out)


if __name__ == "__main__":
    main()
