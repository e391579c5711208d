#!/usr/bin/python3
"""`--threads N` bounds onnx-core's threads: its loops and oneDNN primitives run on one OpenMP team of N threads
(plugins/onnx-core/team.hpp), so `ophost bench --threads 1` must keep one core busy, not two.

The model mixes what uses the team: a 3x3 convolution (oneDNN, reorders), a pointwise convolution on NCHW (sgemm),
Softmax and elementwise ops (onnx-core's own parallel loops), large enough that each would go parallel on a
bigger team. The check runs `ophost bench --threads 1` for about a second and compares the child's CPU time
(user + system, from wait4) with its wall time: at most 1.3 (one thread, plus start-up work). A second thread
spinning or computing would put it near 2. Then it runs `--threads 2` (when the machine has two cores) and
`ophost run` at both, and requires the same outputs at 1 and 2 threads within float32 rounding.

  /usr/bin/python3 check_threads.py OPHOST      # exit 1 on failure
Needs numpy and onnx (Debian python3-numpy, python3-onnx).
"""
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build(path):
    rng = np.random.default_rng(7)
    c = 64
    w1 = numpy_helper.from_array((rng.standard_normal((c, c, 3, 3)) * 0.05).astype(np.float32), "w1")
    w2 = numpy_helper.from_array((rng.standard_normal((c, c, 1, 1)) * 0.1).astype(np.float32), "w2")
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["a"], ["b"]),
        helper.make_node("Conv", ["b", "w2"], ["c"]),
        helper.make_node("Sigmoid", ["c"], ["d"]),
        helper.make_node("Mul", ["c", "d"], ["e"]),
        helper.make_node("Softmax", ["e"], ["y"], axis=1),
    ]
    g = helper.make_graph(nodes, "threads", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 56, 56])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, 56, 56])], [w1, w2])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


def cpu_and_wall(cmd):
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {code}:\n{out.decode(errors='replace')[-2000:]}")
    return ru.ru_utime + ru.ru_stime, wall


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    ophost = sys.argv[1]
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        model = os.path.join(d, "threads.onnx")
        build(model)
        cpu, wall = cpu_and_wall([ophost, "bench", model, "--random", "--threads", "1", "--time", "1"])
        ratio = cpu / wall
        print(f"--threads 1: CPU {cpu:.2f} s over {wall:.2f} s wall = {ratio:.2f} (bound 1.3)")
        if ratio > 1.3:
            print("FAIL: more than one thread worked at --threads 1")
            failures += 1
        outs = {}
        for t in (1, 2):
            od = os.path.join(d, f"out{t}")
            r = subprocess.run([ophost, "run", model, "--random", "--threads", str(t), "--output-dir", od],
                               capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"FAIL: ophost run --threads {t} exited {r.returncode}:\n{r.stdout}{r.stderr}")
            outs[t] = np.load(os.path.join(od, "y.npy"))
        diff = float(np.max(np.abs(outs[1] - outs[2])))
        scale = float(np.max(np.abs(outs[1])))
        print(f"outputs at 1 and 2 threads: max |diff| {diff:.3g} of max |y| {scale:.3g}")
        if not diff <= 1e-5 * scale:
            print("FAIL: 1 and 2 threads disagree beyond float32 rounding")
            failures += 1
        if (os.cpu_count() or 1) >= 2:
            cpu2, wall2 = cpu_and_wall([ophost, "bench", model, "--random", "--threads", "2", "--time", "1"])
            print(f"--threads 2: CPU {cpu2:.2f} s over {wall2:.2f} s wall = {cpu2 / wall2:.2f} (not checked)")
    print("OK" if failures == 0 else f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
