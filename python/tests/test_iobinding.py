"""I/O binding, OrtValue and DLPack."""
import numpy as np
import pytest

import ophost
from conftest import MODELS


def aligned_empty(shape, dtype=np.float32):
    """A C-contiguous array whose buffer starts on a 64-byte boundary (read by the host without a copy)."""
    n = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.empty(n + 64, np.uint8)
    off = (-raw.ctypes.data) % 64
    return raw[off:off + n].view(dtype).reshape(shape)


def test_bind_by_name(mixed_small, mixed_x):
    (ref,) = mixed_small.run(None, {"x": mixed_x})
    b = mixed_small.io_binding()
    b.bind_cpu_input("x", mixed_x)
    b.bind_output("y")
    mixed_small.run_with_iobinding(b)
    (y,) = b.copy_outputs_to_cpu()
    np.testing.assert_array_equal(y, ref)
    (v,) = b.get_outputs()
    assert isinstance(v, ophost.OrtValue) and v.shape() == [2, 8] and v.data_type() == "tensor(float)"
    np.testing.assert_array_equal(v.numpy(), ref)
    with pytest.raises(ophost.InvalidArgument):
        b.bind_output("nope")
    with pytest.raises(TypeError, match="input 'x'"):
        b.bind_cpu_input("x", mixed_x.astype(np.float64))
    with pytest.raises(ophost.NotImplemented):
        b.bind_output("y", "cuda")


def test_bound_buffers_allocate_nothing(mixed_small, mixed_x):
    (ref,) = mixed_small.run(None, {"x": mixed_x})
    x = aligned_empty((2, 8))
    x[...] = mixed_x
    y = ophost.OrtValue.ortvalue_from_numpy(aligned_empty((2, 8)))
    b = mixed_small.io_binding()
    b.bind_ortvalue_input("x", ophost.OrtValue.ortvalue_from_numpy(x))
    b.bind_ortvalue_output("y", y)
    ptr = y.data_ptr()
    allocs = []
    for _ in range(20):
        mixed_small.run_with_iobinding(b)
        allocs.append(mixed_small.memory_stats()["allocs_this_run"])
    assert allocs[1:] == [0] * 19, allocs
    assert y.data_ptr() == ptr
    np.testing.assert_array_equal(y.numpy(), ref)
    assert b.get_outputs()[0] is y
    # Outputs bound by name are reused too, as long as their OrtValues are not held.
    b2 = mixed_small.io_binding()
    b2.bind_cpu_input("x", x)
    b2.bind_output("y")
    for _ in range(5):
        mixed_small.run_with_iobinding(b2)
    assert mixed_small.memory_stats()["allocs_this_run"] == 0
    np.testing.assert_array_equal(b2.copy_outputs_to_cpu()[0], ref)


def test_bind_raw_buffers(mixed_small, mixed_x):
    (ref,) = mixed_small.run(None, {"x": mixed_x})
    x = np.ascontiguousarray(mixed_x)
    out = np.zeros((2, 8), np.float32)
    b = mixed_small.io_binding()
    b.bind_input("x", "cpu", 0, np.float32, list(x.shape), x.ctypes.data)
    b.bind_output("y", "cpu", 0, np.float32, [2, 8], out.ctypes.data)
    mixed_small.run_with_iobinding(b)
    np.testing.assert_array_equal(out, ref)
    wrong = np.zeros((3, 8), np.float32)
    b.bind_output("y", "cpu", 0, np.float32, [3, 8], wrong.ctypes.data)
    with pytest.raises(ophost.InvalidArgument, match=r"output 'y' is bound to a float32 \[3,8\]"):
        mixed_small.run_with_iobinding(b)
    b.clear_binding_outputs()
    b.clear_binding_inputs()
    with pytest.raises(ophost.InvalidArgument, match="missing input"):
        mixed_small.run_with_iobinding(b)


def test_ortvalue(mixed_small, mixed_x):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    v = ophost.OrtValue.ortvalue_from_numpy(a)
    assert v.shape() == [2, 3] and v.element_type() is np.float32 and v.device_name() == "cpu"
    assert v.is_tensor() and v.has_value() and v.data_ptr() == a.ctypes.data
    a[0, 0] = 42  # shares the buffer, as onnxruntime's does on the CPU
    assert v.numpy()[0, 0] == 42
    v.update_inplace(np.ones((2, 3), np.float32))
    assert a.sum() == 6
    with pytest.raises(ValueError):
        v.update_inplace(np.ones((3, 2), np.float32))
    z = ophost.OrtValue.ortvalue_from_shape_and_type([4, 5], np.int64)
    assert z.data_type() == "tensor(int64)" and not z.numpy().any()
    assert ophost.OrtValue.ortvalue_from_shape_and_type([2], "tensor(double)").numpy().dtype == np.float64
    f = ophost.OrtValue.ortvalue_from_numpy(np.asfortranarray(a))  # copied
    np.testing.assert_array_equal(f.numpy(), a)
    (o,) = mixed_small.run_with_ort_values(None, {"x": ophost.OrtValue.ortvalue_from_numpy(mixed_x)})
    np.testing.assert_array_equal(o.numpy(), mixed_small.run(None, {"x": mixed_x})[0])
    (y,) = mixed_small.run(["y"], {"x": ophost.OrtValue.ortvalue_from_numpy(mixed_x)})
    np.testing.assert_array_equal(y, o.numpy())
    with pytest.raises(TypeError, match="input 'x'"):
        mixed_small.run(None, {"x": ophost.OrtValue.ortvalue_from_numpy(mixed_x.astype(np.float64))})
    s = ophost.OrtValue.ortvalue_from_numpy(np.array(["a", "bc"], dtype=object))
    assert s.data_type() == "tensor(string)" and list(s.numpy()) == ["a", "bc"]


def test_dlpack_both_ways():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    v = ophost.from_dlpack(a)
    assert v.data_ptr() == a.ctypes.data and v.shape() == [3, 4]  # no copy
    assert v.__dlpack_device__() == (1, 0)
    b = np.from_dlpack(v)
    assert b.ctypes.data == a.ctypes.data
    np.testing.assert_array_equal(b, a)
    t = a[:, ::2]  # strided: copied
    w = ophost.OrtValue.from_dlpack(t)
    np.testing.assert_array_equal(w.numpy(), t)
    del a, b
    np.testing.assert_array_equal(v.numpy(), np.arange(12, dtype=np.float32).reshape(3, 4))
    cap = v.to_dlpack()
    np.testing.assert_array_equal(ophost.from_dlpack(cap).numpy(), v.numpy())
    with pytest.raises(ophost.InvalidArgument):
        ophost.from_dlpack(cap)  # a capsule is consumed once


def test_dlpack_torch():
    torch = pytest.importorskip("torch")
    t = torch.arange(10, dtype=torch.float32)
    v = ophost.from_dlpack(t)
    assert v.data_ptr() == t.data_ptr()
    u = torch.utils.dlpack.from_dlpack(v.to_dlpack())
    assert u.data_ptr() == t.data_ptr() and torch.equal(u, t)
