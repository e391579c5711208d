#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Generate the ONNX 1.12 backend node conformance cases into OUTDIR.

    generate_cases.py OUTDIR [--force] [--any-onnx-version]

Writes one folder per node case (model.onnx, test_data_set_0/input_N.pb, output_N.pb), the layout of
onnx/backend/test/data/node, from the case generators of the installed `onnx` package (Debian's python3-onnx
1.12 ships the generators, onnx.backend.test.case, but not the data folder). The writing is upstream's
`onnx/backend/test/cmd_tools.py generate-data`, restricted to the node cases. Every generator runs after
np.random.seed(0), so the output is deterministic.

Cached: OUTDIR/.ophost-cases-stamp records the onnx and numpy versions, the sha256 of this script and the case
count; when it matches (and OUTDIR still holds that many cases) nothing is regenerated. A run writes into a
temporary folder beside OUTDIR and renames it into place, so an interrupted run leaves no half-written suite.

Exit status: 0 on success (cached or generated), 1 when the cases cannot be generated (numpy or onnx missing,
an onnx other than 1.12, a generator error, no cases written), 2 on bad usage.
Use Debian's /usr/bin/python3 (python3-onnx, python3-numpy; tools/dev/deps.sh installs them).
"""
import argparse
import hashlib
import os
import shutil
import sys
import tempfile
import time
import warnings
from typing import NoReturn

STAMP = ".ophost-cases-stamp"
EXPECTED_ONNX = "1.12"
ME = "generate_cases.py"


def fail(msg: str) -> NoReturn:
    print(f"{ME}: error: {msg}", file=sys.stderr)
    sys.exit(1)


def count_cases(folder: str) -> int:
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    return sum(1 for n in names if os.path.isfile(os.path.join(folder, n, "model.onnx")))


def read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return ""


def add_numpy_aliases(np) -> None:
    # NumPy 1.24 removed the aliases of builtin types (deprecated since 1.20) that some ONNX 1.12 generators use
    # (np.bool in batchnorm.py, np.float in bernoulli.py, np.object in castlike.py). They were the builtins
    # themselves, so restoring them as such reproduces what those generators wrote with an older NumPy.
    for name, value in (("bool", bool), ("int", int), ("float", float), ("complex", complex),
                        ("object", object), ("str", str), ("long", int), ("unicode", str)):
        if name not in vars(np):  # not hasattr: NumPy's module __getattr__ warns about these names
            setattr(np, name, value)


def main() -> int:
    parser = argparse.ArgumentParser(prog=ME, description="Generate the ONNX 1.12 backend node test cases.")
    parser.add_argument("outdir", help="folder to write the cases into (replaced when regenerated)")
    parser.add_argument("--force", action="store_true", help="regenerate even when the stamp matches")
    parser.add_argument("--any-onnx-version", action="store_true",
                        help=f"accept an onnx other than {EXPECTED_ONNX} (the floor and exclusions are for "
                             f"{EXPECTED_ONNX})")
    args = parser.parse_args()

    with open(os.path.abspath(__file__), "rb") as f:
        script_hash = hashlib.sha256(f.read()).hexdigest()

    hint = (f"install Debian's python3-onnx and python3-numpy (tools/dev/deps.sh) and run this with /usr/bin/python3 "
            f"(CMake: -DOPHOST_CONFORMANCE_PYTHON=/usr/bin/python3), or point -DOPHOST_CONFORMANCE_CASES at a folder "
            f"of ONNX {EXPECTED_ONNX} node cases")
    try:
        import numpy as np
    except ImportError as e:
        fail(f"cannot generate the conformance cases: NumPy is missing for {sys.executable} ({e}); {hint}")
    try:
        import onnx
    except ImportError as e:
        fail(f"cannot generate the conformance cases: the onnx Python package is missing for {sys.executable} "
             f"({e}); {hint}")
    if not (onnx.__version__ == EXPECTED_ONNX or onnx.__version__.startswith(EXPECTED_ONNX + ".")):
        if not args.any_onnx_version:
            fail(f"onnx {onnx.__version__} at {os.path.dirname(onnx.__file__)} is not {EXPECTED_ONNX}: its node "
                 f"cases differ from the ONNX {EXPECTED_ONNX} suite that tests/conformance/floor.txt and "
                 f"exclusions.txt describe (pass --any-onnx-version to generate them anyway)")
        print(f"{ME}: warning: onnx {onnx.__version__}, not {EXPECTED_ONNX}", file=sys.stderr)

    out = os.path.abspath(args.outdir)
    key = f"onnx {onnx.__version__}\nnumpy {np.__version__}\nscript {script_hash}\n"
    stamp_text = read_text(os.path.join(out, STAMP))
    if not args.force and stamp_text.startswith(key):
        want = stamp_text[len(key):].strip()
        have = count_cases(out)
        if want == f"cases {have}" and have > 0:
            print(f"{have} cases up to date in {out} (cached: onnx {onnx.__version__}, numpy {np.__version__}, "
                  f"script {script_hash[:12]})")
            return 0

    t0 = time.monotonic()
    parent = os.path.dirname(out)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=os.path.basename(out) + ".tmp-", dir=parent)
    try:
        add_numpy_aliases(np)
        # Generators divide by zero, take logs of negatives and so on on purpose; their warnings are noise here.
        warnings.simplefilter("ignore")
        np.seterr(all="ignore")
        try:
            import onnx.backend.test.cmd_tools as cmd_tools
        except ImportError as e:
            fail(f"onnx {onnx.__version__} at {os.path.dirname(onnx.__file__)} has no backend test generators "
                 f"(onnx.backend.test.cmd_tools: {e}); {hint}")
        # Node cases only: leave out the model cases ('real' model-zoo downloads and 'simple' models).
        cmd_tools.model_test.collect_testcases = lambda: []
        try:
            cmd_tools.generate_data(argparse.Namespace(output=tmp, op_type=None))
        except Exception as e:  # a generator that breaks on this numpy/onnx
            fail(f"a case generator of onnx {onnx.__version__} failed with numpy {np.__version__}: "
                 f"{type(e).__name__}: {e}")
        node = os.path.join(tmp, "node")
        n = count_cases(node)
        if n == 0:
            fail(f"onnx {onnx.__version__} generated no node cases into {node}")
        with open(os.path.join(node, STAMP), "w", encoding="utf-8") as f:
            f.write(key + f"cases {n}\n")
        if os.path.lexists(out):
            if os.path.isdir(out) and not os.path.islink(out):
                shutil.rmtree(out)
            else:
                os.remove(out)
        os.rename(node, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{n} cases written to {out} in {time.monotonic() - t0:.1f} s (onnx {onnx.__version__}, "
          f"numpy {np.__version__})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
