"""A script written for onnxruntime runs unchanged on ophost (`import ophost as onnxruntime`), with the myops
pack through register_custom_ops_library, and its outputs equal the ophost command's bit for bit."""
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import MODELS, PLUGIN_DIR, PPOCR, cli_run, model_inputs

SCRIPT = os.path.join(os.path.dirname(__file__), "ort_script.py")
SHIM = ("import runpy, sys, ophost; sys.modules['onnxruntime'] = ophost; "
        "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')")


def run_script(tmp_path, models, inputs):
    for model, feeds in zip(models, inputs):
        d = tmp_path / "in" / model.name[: -len(".onnx")]
        d.mkdir(parents=True, exist_ok=True)
        for name, arr in feeds.items():
            np.save(d / (name + ".npy"), arr)
    lib = [p for p in (PLUGIN_DIR / "myops").iterdir() if p.suffix == ".so"][0]
    r = subprocess.run([sys.executable, "-c", SHIM, SCRIPT, "--custom-op-library", str(lib),
                        "--inputs", str(tmp_path / "in"), "--out", str(tmp_path / "py")] + [str(m) for m in models],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def compare_with_cli(tmp_path, model, feeds):
    stem = model.name[: -len(".onnx")]
    ref = cli_run(model, feeds, tmp_path / "cli" / stem)
    assert ref
    for name, want in ref.items():
        got = np.load(tmp_path / "py" / stem / (name + ".npy"))
        assert got.dtype == want.dtype and got.shape == want.shape, name
        assert got.tobytes() == want.tobytes(), (stem, name, np.abs(got - want).max())


def test_example_models(tmp_path):
    models = sorted(MODELS.glob("*.onnx"))
    assert len(models) >= 4
    inputs = [model_inputs(m) for m in models]
    out = run_script(tmp_path, models, inputs)
    assert "onnxruntime" in out
    for m, feeds in zip(models, inputs):
        compare_with_cli(tmp_path, m, feeds)


def test_pp_ocr_det(tmp_path):
    if not PPOCR.exists():
        pytest.skip(f"{PPOCR} is absent (set OPHOST_PPOCR_MODEL)")
    x = np.random.default_rng(0).random((1, 3, 640, 640), dtype=np.float32)
    run_script(tmp_path, [PPOCR], [{"x": x}])
    compare_with_cli(tmp_path, PPOCR, {"x": x})
