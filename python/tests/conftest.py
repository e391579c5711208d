"""Shared fixtures of the ophost Python tests (run by CTest: python/tests/run.py, label python).

Environment (set by CTest; defaults for a run from the source tree with build/):
  OPHOST_SOURCE_DIR  the source tree            OPHOST_BUILD_DIR  the build tree
  OPHOST_CLI         the ophost command        PYTHONPATH        <build>/python
"""
import os
import pathlib
import subprocess

import numpy as np
import pytest

SOURCE_DIR = pathlib.Path(os.environ.get("OPHOST_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
BUILD_DIR = pathlib.Path(os.environ.get("OPHOST_BUILD_DIR", SOURCE_DIR / "build"))
CLI = pathlib.Path(os.environ.get("OPHOST_CLI", BUILD_DIR / "bin" / "ophost"))
PLUGIN_DIR = BUILD_DIR / "lib" / "ophost" / "plugins"
MODELS = SOURCE_DIR / "examples" / "models"
PPOCR = pathlib.Path(os.environ.get("OPHOST_PPOCR_MODEL",
                                    SOURCE_DIR.parent / "shared" / "models" / "ch_PP-OCRv4_det_infer.onnx"))

import ophost  # noqa: E402  (after the paths, so a failure to import names the build tree in the traceback)


def model_inputs(model):
    """{input name: array} from the <model>.input.<name>.npy files next to an example model."""
    stem = model.name[: -len(".onnx")]
    return {p.name[len(stem) + len(".input."): -len(".npy")]: np.load(p)
            for p in sorted(model.parent.glob(stem + ".input.*.npy"))}


def cli_run(model, inputs, out_dir, *extra):
    """Run the ophost command on `model` with `inputs` ({name: array}), return {output name: array}."""
    out_dir = pathlib.Path(out_dir)
    in_dir = out_dir / "in"
    in_dir.mkdir(parents=True, exist_ok=True)
    args = [str(CLI), "run", str(model), "--output-dir", str(out_dir / "out")]
    for name, arr in inputs.items():
        f = in_dir / (name + ".npy")
        np.save(f, arr)
        args += ["--input", name + "=" + str(f)]
    env = dict(os.environ, OPHOST_PLUGIN_PATH="", OPHOST_PLUGINS_DISABLE="", OPHOST_LOG_LEVEL="")
    r = subprocess.run(args + list(extra), capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return {p.stem: np.load(p) for p in (out_dir / "out").glob("*.npy")}


@pytest.fixture
def myops_dir():
    return PLUGIN_DIR / "myops"


@pytest.fixture
def mixed_small():
    return ophost.InferenceSession(str(MODELS / "mixed_small.onnx"))


@pytest.fixture
def mixed_x():
    return np.load(MODELS / "mixed_small.input.x.npy")
