"""InferenceSession, SessionOptions, providers, errors and threads (onnxruntime's API on ophost)."""
import concurrent.futures
import json
import pathlib
import warnings

import numpy as np
import pytest

import ophost
from conftest import MODELS, model_inputs


def test_import_and_package():
    assert ophost.__version__
    assert ophost.get_version_string() == ophost.__version__
    pkg = pathlib.Path(ophost.__file__).parent
    assert (pkg / "__init__.pyi").exists() and (pkg / "py.typed").exists()
    for name in ["InferenceSession", "SessionOptions", "RunOptions", "OrtValue", "IOBinding", "NodeArg", "NodeOutputs"]:
        assert getattr(ophost, name).__doc__, name
    for meth in ["run", "get_inputs", "get_outputs", "end_profiling", "io_binding", "run_with_iobinding"]:
        assert getattr(ophost.InferenceSession, meth).__doc__, meth
    assert "path_or_bytes" in ophost.InferenceSession.__doc__
    assert "input_feed" in ophost.InferenceSession.run.__doc__


def test_available_providers_follow_the_device_backends():
    provs = ophost.get_available_providers()
    assert provs[-1] == "CPUExecutionProvider"
    active = set()
    for p in ophost.plugins():
        if p["kind"] == "device-backend" and not p["inactive"] and not p["reason"]:
            active |= {d.split(":")[0] for d in p["devices"] if "inactive" not in d}
    assert ("CUDAExecutionProvider" in provs) == ("cuda" in active)
    assert ("ROCMExecutionProvider" in provs) == ("hip" in active)
    assert ophost.get_device() == ("GPU" if {"cuda", "hip"} & active else "CPU")


def test_inputs_outputs_metadata(mixed_small):
    (i,), (o,) = mixed_small.get_inputs(), mixed_small.get_outputs()
    assert (i.name, i.shape, i.type) == ("x", [2, 8], "tensor(float)")
    assert (o.name, o.shape, o.type) == ("y", [2, 8], "tensor(float)")
    assert "NodeArg(name='x'" in repr(i)
    meta = mixed_small.get_modelmeta()
    assert meta.graph_name == "mixed_small"
    assert isinstance(meta.custom_metadata_map, dict)
    assert mixed_small.get_providers() == ["CPUExecutionProvider"] or "CPUExecutionProvider" in mixed_small.get_providers()
    sess = ophost.InferenceSession(str(MODELS / "broadcast.onnx"))
    shapes = {a.name: a.shape for a in sess.get_inputs()}
    assert shapes == {"a": [2, 3, 4], "b": [4], "c": [3, 1], "s": []}
    assert [a.name for a in sess.get_outputs()] == ["add", "sub", "mul", "div", "div_s"]


def test_symbolic_dims_and_metadata(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "sym",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, None])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3, None])],
                          doc_string="graph doc")
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="tests",
                          doc_string="model doc", model_version=7, domain="org.example")
    m.ir_version = 8
    helper.set_model_props(m, {"author": "me", "license": "MIT"})
    path = tmp_path / "sym.onnx"
    onnx.save(m, str(path))
    sess = ophost.InferenceSession(path)  # os.PathLike
    assert sess.get_inputs()[0].shape == ["batch", 3, None]
    assert sess.get_outputs()[0].shape[:2] == ["batch", 3]
    meta = sess.get_modelmeta()
    assert (meta.producer_name, meta.graph_name, meta.domain, meta.description, meta.graph_description,
            meta.version) == ("tests", "sym", "org.example", "model doc", "graph doc", 7)
    assert meta.custom_metadata_map == {"author": "me", "license": "MIT"}
    x = np.random.default_rng(0).standard_normal((5, 3, 2)).astype(np.float32)
    (y,) = sess.run(None, {"x": x})
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    with pytest.raises(ValueError, match=r"input 'x'.*\[batch, 3, \?\].*dimension 1"):
        sess.run(None, {"x": np.zeros((5, 4, 2), np.float32)})


def test_run_output_selection(mixed_small, mixed_x):
    ref = np.load(MODELS / "mixed_small.output.y.npy")
    (y,) = mixed_small.run(None, {"x": mixed_x})
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)
    (y2,) = mixed_small.run(["y"], {"x": mixed_x})
    np.testing.assert_array_equal(y, y2)
    assert y.flags.c_contiguous and y.dtype == np.float32
    sess = ophost.InferenceSession(str(MODELS / "broadcast.onnx"))
    feeds = model_inputs(MODELS / "broadcast.onnx")
    div_s, add = sess.run(["div_s", "add"], feeds)
    np.testing.assert_array_equal(add, feeds["a"] + feeds["b"])
    np.testing.assert_array_equal(div_s, feeds["a"] / feeds["s"])
    with pytest.raises(ophost.InvalidArgument, match="invalid output name 'nope'.*add, sub"):
        sess.run(["nope"], feeds)


def test_model_from_bytes_and_paths(mixed_x):
    data = (MODELS / "mixed_small.onnx").read_bytes()
    a = ophost.InferenceSession(data).run(None, {"x": mixed_x})[0]
    b = ophost.InferenceSession(MODELS / "mixed_small.onnx").run(None, {"x": mixed_x})[0]
    c = ophost.InferenceSession(bytearray(data)).run(None, {"x": mixed_x})[0]
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)


def test_missing_and_broken_models(tmp_path):
    with pytest.raises(ophost.NoSuchFile) as e:
        ophost.InferenceSession(str(tmp_path / "none.onnx"))
    assert isinstance(e.value, FileNotFoundError) and "none.onnx" in str(e.value)
    with pytest.raises(ophost.OphostError) as e:
        ophost.InferenceSession(b"this is not an onnx file")
    assert e.value.code and str(e.value)
    with pytest.raises(TypeError):
        ophost.InferenceSession(42)


def test_input_type_errors_name_input_dtype_and_shape(mixed_small, mixed_x):
    with pytest.raises(TypeError) as e:
        mixed_small.run(None, {"x": mixed_x.astype(np.float64)})
    msg = str(e.value)
    assert isinstance(e.value, ophost.InvalidArgument) and isinstance(e.value, ophost.InvalidType)
    assert "input 'x'" in msg and "tensor(float)" in msg and "float32" in msg and "[2, 8]" in msg and "float64" in msg
    with pytest.raises(ValueError, match=r"input 'x'.*shape \(3, 8\).*\[2, 8\]"):
        mixed_small.run(None, {"x": np.zeros((3, 8), np.float32)})
    with pytest.raises(ValueError, match=r"input 'x'.*rank 2"):
        mixed_small.run(None, {"x": np.zeros((16,), np.float32)})
    with pytest.raises(ValueError, match=r"input 'x'.*byte-swapped"):
        mixed_small.run(None, {"x": mixed_x.astype(">f4")})
    with pytest.raises(TypeError, match=r"input 'x'.*numpy.ndarray.*list"):
        mixed_small.run(None, {"x": mixed_x.tolist()})
    with pytest.raises(TypeError, match=r"input 'x'.*complex64"):
        mixed_small.run(None, {"x": mixed_x.astype(np.complex64)})
    with pytest.raises(ophost.InvalidArgument, match="invalid input name 'z'"):
        mixed_small.run(None, {"x": mixed_x, "z": mixed_x})
    with pytest.raises(ophost.InvalidArgument, match="missing input 'x'"):
        mixed_small.run(None, {})
    with pytest.raises(TypeError):
        mixed_small.run(None, [mixed_x])


def test_strided_and_fortran_inputs_are_copied(mixed_small, mixed_x):
    (ref,) = mixed_small.run(None, {"x": mixed_x})
    big = np.zeros((4, 16), np.float32)
    big[::2, ::2] = mixed_x
    strided = big[::2, ::2]
    assert not strided.flags.c_contiguous
    fortran = np.asfortranarray(mixed_x)
    assert not fortran.flags.c_contiguous
    misaligned = np.frombuffer(b"\0" * 4 + mixed_x.tobytes(), np.float32, offset=4).reshape(2, 8)
    for x in (strided, fortran, misaligned):
        np.testing.assert_array_equal(mixed_small.run(None, {"x": x})[0], ref)
    assert np.array_equal(strided, mixed_x)  # inputs are never written


def test_graph_optimization_levels_and_modes(mixed_x):
    outs = []
    for level in [ophost.GraphOptimizationLevel.ORT_DISABLE_ALL, ophost.GraphOptimizationLevel.ORT_ENABLE_BASIC,
                  ophost.GraphOptimizationLevel.ORT_ENABLE_EXTENDED, ophost.GraphOptimizationLevel.ORT_ENABLE_ALL, 99]:
        for mode in [ophost.ExecutionMode.ORT_SEQUENTIAL, ophost.ExecutionMode.ORT_PARALLEL]:
            so = ophost.SessionOptions()
            so.graph_optimization_level = level
            so.execution_mode = mode
            so.inter_op_num_threads = 2
            so.intra_op_num_threads = 1
            sess = ophost.InferenceSession(str(MODELS / "mixed_small.onnx"), sess_options=so)
            outs.append(sess.run(None, {"x": mixed_x})[0])
            assert sess.get_session_options() is so
    for o in outs[1:]:
        np.testing.assert_allclose(o, outs[0], rtol=1e-6, atol=1e-7)
    so = ophost.SessionOptions()
    assert so.graph_optimization_level == ophost.GraphOptimizationLevel.ORT_ENABLE_ALL
    with pytest.raises(ValueError):
        so.graph_optimization_level = 5


def test_session_config_entries(mixed_x):
    so = ophost.SessionOptions()
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")  # onnxruntime's: ignored
    so.add_session_config_entry("ophost.check_numerics", "1")
    assert so.get_session_config_entry("ophost.check_numerics") == "1"
    with pytest.raises(ophost.InvalidArgument):
        so.get_session_config_entry("nope")
    sess = ophost.InferenceSession(str(MODELS / "mixed_small.onnx"), so)
    bad = mixed_x.copy()
    bad[1, 3] = np.nan
    with pytest.raises(ophost.OphostError, match="x"):
        sess.run(None, {"x": bad})
    so = ophost.SessionOptions()
    so.add_session_config_entry("ophost.no_such_key", "1")
    with pytest.raises(ophost.InvalidArgument, match="ophost.no_such_key"):
        ophost.InferenceSession(str(MODELS / "mixed_small.onnx"), so)
    so = ophost.SessionOptions()
    so.add_session_config_entry("ophost.disabled_passes", "constant-folding,dead-node-elimination")
    np.testing.assert_allclose(ophost.InferenceSession(str(MODELS / "mixed_small.onnx"), so).run(None, {"x": mixed_x})[0],
                               np.load(MODELS / "mixed_small.output.y.npy"), rtol=1e-5, atol=1e-6)


def test_dump_and_debug_kernels_config_entries(mixed_x, tmp_path):
    so = ophost.SessionOptions()
    so.add_session_config_entry("ophost.dump_dir", str(tmp_path / "dump"))
    so.add_session_config_entry("ophost.debug_kernels", "1")
    y = ophost.InferenceSession(str(MODELS / "mixed_small.onnx"), so).run(None, {"x": mixed_x})[0]
    index = json.loads((tmp_path / "dump" / "index.json").read_text())
    assert index["complete"] and index["nodes"]
    for v in index["values"]:
        assert (tmp_path / "dump" / v["file"]).exists()
    out = [v for v in index["values"] if v["name"] == "y"][0]
    np.testing.assert_array_equal(np.load(tmp_path / "dump" / out["file"]), y)


def test_isolate_packs_config_entry(mixed_small, mixed_x):
    (ref,) = mixed_small.run(None, {"x": mixed_x})
    so = ophost.SessionOptions()
    so.add_session_config_entry("ophost.isolate_packs", "myops,onnx-core")
    (y,) = ophost.InferenceSession(str(MODELS / "mixed_small.onnx"), so).run(None, {"x": mixed_x})
    np.testing.assert_array_equal(y, ref)  # the same bits, computed in the packs' worker processes
    so.add_session_config_entry("ophost.isolate_packs", "nosuch")
    with pytest.raises(ophost.InvalidArgument, match="'nosuch', which is not a loaded operator pack"):
        ophost.InferenceSession(str(MODELS / "mixed_small.onnx"), so)


def test_host_errors_carry_the_host_message():
    so = ophost.SessionOptions()
    so.add_session_config_entry("ophost.disabled_plugins", "myops")
    with pytest.raises(ophost.OphostError) as e:
        ophost.InferenceSession(str(MODELS / "mixed_small.onnx"), so)
    msg = str(e.value)
    assert "mixed_small.onnx" in msg and "relu6_scale" in msg and "myops" in msg
    assert isinstance(e.value, RuntimeError) and e.value.code


def test_providers(mixed_small, mixed_x):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        sess = ophost.InferenceSession(str(MODELS / "mixed_small.onnx"),
                                       providers=["NoSuchExecutionProvider", ("CPUExecutionProvider", {})])
    assert any("NoSuchExecutionProvider" in str(x.message) for x in w)
    assert sess.get_providers() == ["CPUExecutionProvider"]
    assert sess.get_provider_options() == {"CPUExecutionProvider": {}}
    np.testing.assert_array_equal(sess.run(None, {"x": mixed_x})[0], mixed_small.run(None, {"x": mixed_x})[0])
    assert ophost.InferenceSession(str(MODELS / "mixed_small.onnx"), providers=["cpu"]).get_providers() == [
        "CPUExecutionProvider"]


def test_profiling(tmp_path, mixed_x):
    so = ophost.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "prof")
    sess = ophost.InferenceSession(str(MODELS / "mixed_small.onnx"), so)
    assert sess.get_profiling_start_time_ns() > 0
    for _ in range(3):
        sess.run(None, {"x": mixed_x})
    f = sess.end_profiling()
    assert f.startswith(str(tmp_path / "prof_")) and f.endswith(".json")
    events = json.loads(pathlib.Path(f).read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    kernels = [e for e in events if e.get("cat") == "Node"]
    assert kernels and all("op_name" in e["args"] for e in kernels)
    assert sess.end_profiling() == ""
    assert ophost.InferenceSession(str(MODELS / "mixed_small.onnx")).end_profiling() == ""


def test_log_severity(capfd, mixed_x):
    so = ophost.SessionOptions()
    so.log_severity_level = 0
    ophost.InferenceSession(str(MODELS / "mixed_small.onnx"), so)
    assert "[ophost]" in capfd.readouterr().err
    so.log_severity_level = 3
    ophost.InferenceSession(str(MODELS / "mixed_small.onnx"), so)
    assert "[ophost] [info]" not in capfd.readouterr().err
    with pytest.raises(ValueError):
        so.log_severity_level = 9


def test_unsupported_options_say_so():
    so = ophost.SessionOptions()
    so.optimized_model_filepath = "/tmp/x.onnx"
    with pytest.raises(ophost.NotImplemented, match="optimized_model_filepath"):
        ophost.InferenceSession(str(MODELS / "mixed_small.onnx"), so)
    with pytest.raises(ophost.NotImplemented):
        ophost.SessionOptions().add_free_dimension_override_by_name("batch", 1)


def test_run_options_accepted(mixed_small, mixed_x):
    ro = ophost.RunOptions()
    ro.log_severity_level = 3
    ro.add_run_config_entry("k", "v")
    assert ro.get_run_config_entry("k") == "v"
    mixed_small.run(None, {"x": mixed_x}, ro)


def test_eight_threads_match_serial_runs():
    sess = ophost.InferenceSession(str(MODELS / "broadcast.onnx"))
    rng = np.random.default_rng(1)
    base = model_inputs(MODELS / "broadcast.onnx")
    feeds = [{k: (v + rng.standard_normal(v.shape).astype(np.float32)) for k, v in base.items()} for _ in range(64)]
    serial = [sess.run(None, f) for f in feeds]

    def work(i):
        return [sess.run(None, feeds[(i + k) % len(feeds)]) for k in range(len(feeds))]

    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        results = list(ex.map(work, range(8)))
    for i, res in enumerate(results):
        for k, outs in enumerate(res):
            for a, b in zip(outs, serial[(i + k) % len(feeds)]):
                assert a.tobytes() == b.tobytes()


def test_gil_is_released_during_run():
    # A thread spinning in Python makes progress while another thread is inside run().
    import threading
    import time
    sess = ophost.InferenceSession(str(MODELS / "broadcast.onnx"))
    feeds = model_inputs(MODELS / "broadcast.onnx")
    stop = threading.Event()
    count = [0]

    def spin():
        while not stop.is_set():
            count[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        start = time.monotonic()
        n = 0
        while time.monotonic() - start < 0.3:
            sess.run(None, feeds)
            n += 1
    finally:
        stop.set()
        t.join()
    assert n > 0 and count[0] > 0


def test_sessions_created_from_threads(mixed_x):
    # Session creation (plugin discovery, load) runs without the GIL; concurrent creators must not deadlock.
    def make(i):
        so = ophost.SessionOptions()
        so.add_session_config_entry("ophost.mem_pool_size", str(4096 * (i % 3)))  # a few distinct options
        return ophost.InferenceSession(str(MODELS / "mixed_small.onnx"), so).run(None, {"x": mixed_x})[0]

    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        outs = list(ex.map(make, range(16)))
    for o in outs[1:]:
        assert o.tobytes() == outs[0].tobytes()


def test_ctrl_c_is_delivered_when_the_run_returns():
    import subprocess
    import sys
    code = (
        "import os, signal, threading, numpy as np, ophost\n"
        f"sess = ophost.InferenceSession({str(MODELS / 'mixed_small.onnx')!r})\n"
        "x = np.ones((2, 8), np.float32)\n"
        "threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()\n"
        "n = 0\n"
        "try:\n"
        "    while True:\n"
        "        sess.run(None, {'x': x}); n += 1\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted after', n, 'runs')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "interrupted after" in r.stdout, r.stdout + r.stderr


# ----- on_node: every node's outputs during a run -----

def _dump(path, feed, tmp_path):
    """Dump a run of `path` (ophost.dump_dir): (index.json, dump folder)."""
    so = ophost.SessionOptions()
    so.add_session_config_entry("ophost.dump_dir", str(tmp_path / "dump"))
    ophost.InferenceSession(str(path), so).run(None, feed)
    return json.loads((tmp_path / "dump" / "index.json").read_text()), tmp_path / "dump"


@pytest.mark.parametrize("model", ["mixed_small", "broadcast", "relu6_defaults"])
def test_on_node_sees_every_node_with_the_values_of_a_dump(model, tmp_path):
    path = MODELS / (model + ".onnx")
    feed = model_inputs(path)
    index, dump = _dump(path, feed, tmp_path)
    files = {v["name"]: v["file"] for v in index["values"]}
    sess = ophost.InferenceSession(str(path))
    seen = []
    outs = sess.run(None, feed, on_node=seen.append)
    assert [n.index for n in seen] == list(range(len(index["nodes"])))
    for n, dn in zip(seen, index["nodes"]):
        assert isinstance(n, ophost.NodeOutputs)
        assert (n.node, n.op, n.pack, n.device) == (dn["name"], dn["op"], dn["pack"], dn["device"])
        assert list(n.outputs) == dn["outputs"] and n.skipped == []
        for name, arr in n.outputs.items():
            ref = np.load(dump / files[name])
            assert (arr.dtype, arr.shape) == (ref.dtype, ref.shape) and arr.tobytes() == ref.tobytes(), name
    assert "Identity" not in [n.op for n in seen]  # nodes as they run after optimisation
    # The graph outputs as the nodes that computed them gave them are run()'s outputs; the final node's included.
    produced = {name: arr for n in seen for name, arr in n.outputs.items()}
    for o, arr in zip(sess.get_outputs(), outs):
        np.testing.assert_array_equal(produced[o.name], arr)
    # The arrays are copies: later runs (other inputs, the same arena) leave them as they were.
    kept = {k: v.copy() for k, v in produced.items()}
    sess.run(None, {k: (v + 1).astype(v.dtype) for k, v in feed.items()})
    for k, v in produced.items():
        assert v.tobytes() == kept[k].tobytes(), k
    assert repr(seen[0]).startswith("<NodeOutputs 0 '" + seen[0].node + "'")


def test_on_node_final_node_output_is_the_run_output(mixed_small, mixed_x):
    seen = []
    (y,) = mixed_small.run(["y"], {"x": mixed_x}, on_node=seen.append)
    assert seen[-1].node == "relu" and list(seen[-1].outputs) == ["y"]
    np.testing.assert_array_equal(seen[-1].outputs["y"], y)
    np.testing.assert_allclose(y, np.load(MODELS / "mixed_small.output.y.npy"), rtol=1e-5, atol=1e-6)
    (ov,) = mixed_small.run_with_ort_values(None, {"x": mixed_x}, on_node=seen.append)
    assert len(seen) == 10
    np.testing.assert_array_equal(seen[-1].outputs["y"], ov.numpy())


class _Stop(Exception):
    pass


@pytest.mark.parametrize("mode", ["ORT_SEQUENTIAL", "ORT_PARALLEL"])
def test_on_node_exception_is_reraised_unchanged(mode, mixed_x):
    import traceback
    so = ophost.SessionOptions()
    so.execution_mode = getattr(ophost.ExecutionMode, mode)
    sess = ophost.InferenceSession(str(MODELS / "mixed_small.onnx"), so)
    calls = []

    def stop_at_third(info):
        calls.append(info.node)
        if len(calls) == 3:
            raise _Stop("enough at " + info.node)

    with pytest.raises(_Stop) as e:
        sess.run(None, {"x": mixed_x}, on_node=stop_at_third)
    assert type(e.value) is _Stop and str(e.value) == "enough at " + calls[2]
    assert len(calls) == 3, "no call after the callback raised"
    assert "stop_at_third" in [f.name for f in traceback.extract_tb(e.value.__traceback__)]
    with pytest.raises(KeyError, match="'missing'"):
        sess.run(None, {"x": mixed_x}, on_node=lambda info: {}["missing"])
    with pytest.raises(ZeroDivisionError):
        sess.run_with_ort_values(None, {"x": mixed_x}, on_node=lambda info: 1 / 0)
    # The session runs on as before.
    np.testing.assert_allclose(sess.run(None, {"x": mixed_x})[0], np.load(MODELS / "mixed_small.output.y.npy"),
                               rtol=1e-5, atol=1e-6)


def test_on_node_must_be_callable(mixed_small, mixed_x):
    with pytest.raises(TypeError, match="on_node must be a callable"):
        mixed_small.run(None, {"x": mixed_x}, on_node=5)
    mixed_small.run(None, {"x": mixed_x}, on_node=None)


@pytest.mark.parametrize("mode", ["ORT_SEQUENTIAL", "ORT_PARALLEL"])
def test_on_node_from_two_threads_sharing_a_session(mode):
    path = MODELS / "broadcast.onnx"
    so = ophost.SessionOptions()
    so.execution_mode = getattr(ophost.ExecutionMode, mode)
    so.inter_op_num_threads = 3
    sess = ophost.InferenceSession(str(path), so)
    names = [o.name for o in sess.get_outputs()]
    rng = np.random.default_rng(2)
    base = model_inputs(path)
    feeds = [{k: (v + rng.standard_normal(v.shape).astype(np.float32)) for k, v in base.items()} for _ in range(40)]
    serial = [sess.run(None, f) for f in feeds]

    def work(t):
        bad = []
        for k in range(t, len(feeds), 2):
            seen = {}
            outs = sess.run(None, feeds[k], on_node=lambda info: seen.update(info.outputs))
            for name, a, b in zip(names, outs, serial[k]):
                if a.tobytes() != b.tobytes() or seen[name].tobytes() != b.tobytes():
                    bad.append((k, name))
        return bad

    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        results = list(ex.map(work, range(2)))
    assert results == [[], []]


def test_on_node_lists_bfloat16_outputs_as_skipped():
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    g = helper.make_graph([helper.make_node("Cast", ["x"], ["b"], name="to_bf16", to=TensorProto.BFLOAT16),
                           helper.make_node("Cast", ["b"], ["y"], name="to_f32", to=TensorProto.FLOAT)], "bf16",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    so = ophost.SessionOptions()
    so.graph_optimization_level = ophost.GraphOptimizationLevel.ORT_DISABLE_ALL  # keep the casts
    sess = ophost.InferenceSession(m.SerializeToString(), so)
    seen = []
    (y,) = sess.run(None, {"x": np.array([1, 2.5, -3, 4], np.float32)}, on_node=seen.append)
    assert [n.node for n in seen] == ["to_bf16", "to_f32"]
    assert seen[0].outputs == {} and seen[0].skipped == ["b: dtype bfloat16 has no NumPy dtype"]
    np.testing.assert_array_equal(seen[1].outputs["y"], y)
