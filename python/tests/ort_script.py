"""A script written for ONNX Runtime (nothing ophost-specific): runs models with a custom-op library and writes
every output to OUT/<model stem>/<output>.npy. test_ort_compat.py runs it unchanged with `onnxruntime` bound
to `ophost` (sys.modules['onnxruntime'] = ophost, i.e. `import ophost as onnxruntime`).

usage: ort_script.py --custom-op-library LIB --inputs DIR --out DIR MODEL.onnx...
       (inputs are read from DIR/<model stem>/<input>.npy)
"""
import argparse
import os

import numpy as np
import onnxruntime as ort


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--custom-op-library")
    ap.add_argument("--inputs", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("models", nargs="+")
    args = ap.parse_args()
    print("onnxruntime", ort.get_version_string(), ort.get_available_providers(), ort.get_device())
    for model in args.models:
        stem = os.path.basename(model)[: -len(".onnx")]
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.log_severity_level = 3
        if args.custom_op_library:
            so.register_custom_ops_library(args.custom_op_library)
        sess = ort.InferenceSession(model, sess_options=so, providers=["CPUExecutionProvider"])
        feeds = {}
        for i in sess.get_inputs():
            arr = np.load(os.path.join(args.inputs, stem, i.name + ".npy"))
            assert i.type == "tensor(float)", i.type
            assert len(i.shape) == arr.ndim
            feeds[i.name] = arr
        names = [o.name for o in sess.get_outputs()]
        outs = sess.run(names, feeds)
        os.makedirs(os.path.join(args.out, stem), exist_ok=True)
        for name, value in zip(names, outs):
            np.save(os.path.join(args.out, stem, name + ".npy"), value)
        print(stem, [(n, v.shape, str(v.dtype)) for n, v in zip(names, outs)])


if __name__ == "__main__":
    main()
