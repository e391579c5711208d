#!/usr/bin/python3
"""Compares ophost's outputs with ONNX Runtime's, one line per output (tab-separated):
name, max|ophost - ORT|, that divided by max|ORT|, status (ok, or why not comparable).

    /usr/bin/python3 tools/bench/zoo/npy_diff.py ORT_JSON ORT_DIR OPHOST_DIR

ORT_JSON: the JSON line ort-run.js printed (its "outputs" names the outputs); ORT_DIR: its --out folder;
OPHOST_DIR: ophost run --output-dir. File names are the output names with characters outside [A-Za-z0-9_.-]
replaced by '_' on both sides. Used by tools/bench/zoo.sh.
"""
import json
import os
import sys

import numpy as np


def file_safe(name):
    return "".join(c if (c.isalnum() or c in "_.-") else "_" for c in name)


def main():
    ort_json, ort_dir, oph_dir = sys.argv[1:4]
    with open(ort_json) as f:
        names = list(json.loads(f.read().strip().splitlines()[-1])["outputs"].keys())
    for name in names:
        fn = file_safe(name) + ".npy"
        try:
            r = np.load(os.path.join(ort_dir, fn)).astype(np.float64)
        except OSError:
            print(f"{name}\tnan\tnan\tno ORT output")
            continue
        try:
            g = np.load(os.path.join(oph_dir, fn)).astype(np.float64)
        except OSError:
            print(f"{name}\tnan\tnan\tno ophost output")
            continue
        if g.shape != r.shape:
            print(f"{name}\tnan\tnan\tshape {list(g.shape)} vs ORT {list(r.shape)}")
            continue
        finite = np.isfinite(r) & np.isfinite(g)
        status = "ok"
        if not np.array_equal(np.isnan(r), np.isnan(g)):
            status = "NaN positions differ"
        if not finite.any():
            print(f"{name}\t0\t0\tno finite values")
            continue
        err = float(np.abs(g[finite] - r[finite]).max())
        scale = float(np.abs(r[finite]).max())
        rel = err / scale if scale > 0 else (0.0 if err == 0 else float("inf"))
        print(f"{name}\t{err:.3g}\t{rel:.3g}\t{status}")


if __name__ == "__main__":
    main()
