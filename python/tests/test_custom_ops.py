"""SessionOptions.register_custom_ops_library: a pack folder or the library in one, through the host's checks.

The package's default plugin folder is pointed at a copy holding only the CPU backend and onnx-core, so the
myops pack is found only when registered (a copy in another folder)."""
import shutil

import numpy as np
import pytest

import ophost
from conftest import MODELS, PLUGIN_DIR


@pytest.fixture
def isolated(tmp_path):
    base = tmp_path / "base"
    for name in ["cpu", "onnx-core"]:
        shutil.copytree(PLUGIN_DIR / name, base / name, symlinks=True)
    packs = tmp_path / "packs"
    shutil.copytree(PLUGIN_DIR / "myops", packs / "myops", symlinks=True)
    saved = ophost._ophost._default_plugin_dir()
    ophost._ophost._set_default_plugin_dir(str(base))
    try:
        yield packs / "myops"
    finally:
        ophost._ophost._set_default_plugin_dir(saved)


def library_of(folder):
    (lib,) = [p for p in folder.iterdir() if p.suffix == ".so"]
    return lib


def run_mixed(so):
    sess = ophost.InferenceSession(str(MODELS / "mixed_small.onnx"), so)
    return sess.run(None, {"x": np.load(MODELS / "mixed_small.input.x.npy")})[0]


def test_without_the_pack_the_op_is_missing(isolated):
    with pytest.raises(ophost.OphostError) as e:
        run_mixed(ophost.SessionOptions())
    assert "relu6_scale" in str(e.value) and "myops" in str(e.value)


@pytest.mark.parametrize("which", ["folder", "library", "pathlike"])
def test_register_pack(isolated, which):
    so = ophost.SessionOptions()
    arg = {"folder": str(isolated), "library": str(library_of(isolated)), "pathlike": isolated}[which]
    so.register_custom_ops_library(arg)
    so.register_custom_ops_library(arg)  # twice is once
    assert so.custom_ops_libraries == [str(isolated)]
    y = run_mixed(so)
    np.testing.assert_allclose(y, np.load(MODELS / "mixed_small.output.y.npy"), rtol=1e-5, atol=1e-6)
    myops = [p for p in ophost.plugins(so) if p["name"] == "myops"]
    assert myops[0]["manifest"].startswith(str(isolated)) and not myops[0]["reason"]


def test_registered_pack_comes_first(myops_dir, tmp_path, mixed_x):
    # With the installed myops also present, the registered copy is found first and the other is shadowed.
    shutil.copytree(myops_dir, tmp_path / "p" / "myops", symlinks=True)
    so = ophost.SessionOptions()
    so.register_custom_ops_library(str(tmp_path / "p" / "myops"))
    reports = [p for p in ophost.plugins(so) if p["name"] == "myops"]
    assert reports[0]["manifest"].startswith(str(tmp_path)) and "shadowed" in reports[1]["reason"]
    ophost.InferenceSession(str(MODELS / "mixed_small.onnx"), so).run(None, {"x": mixed_x})


def test_bad_paths(isolated, tmp_path):
    so = ophost.SessionOptions()
    with pytest.raises(ophost.NoSuchFile):
        so.register_custom_ops_library(str(tmp_path / "nope.so"))
    lone = tmp_path / "lone"
    lone.mkdir()
    shutil.copy(library_of(isolated), lone)
    with pytest.raises(ophost.InvalidArgument, match="ophost-plugin.json"):
        so.register_custom_ops_library(str(lone / library_of(isolated).name))
    with pytest.raises(ophost.InvalidArgument, match="ophost-plugin.json"):
        so.register_custom_ops_library(str(lone))
    other = isolated / "other.so"
    other.write_bytes(b"\0")
    with pytest.raises(ophost.InvalidArgument, match="not the library"):
        so.register_custom_ops_library(str(other))
    assert so.custom_ops_libraries == []


def test_tampered_pack_fails_the_host_checks(isolated, tmp_path):
    bad = tmp_path / "bad" / "myops"
    shutil.copytree(isolated, bad)
    with open(library_of(bad), "ab") as f:
        f.write(b"\0")
    so = ophost.SessionOptions()
    with pytest.raises(ophost.OphostError) as e:
        so.register_custom_ops_library(str(bad))
    assert "sha256" in str(e.value) and "myops" in str(e.value) and str(bad) in str(e.value)
    assert so.custom_ops_libraries == []
