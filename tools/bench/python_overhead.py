"""Per-call overhead of the Python API over the C++ API on one model (default examples/models/mixed_small.onnx).

Runs `ophost bench` (the C++ API: Session::run in a loop) and the same model through ophost.InferenceSession.run
and through run_with_iobinding in this process, one intra-op thread each, interleaved rounds, and prints the p50
of each and the differences. Run with the build tree's module:

  PYTHONPATH=build/python /usr/bin/python3 tools/bench/python_overhead.py [--cli build/bin/ophost] [-n 20000]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import ophost

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def p50(samples):
    return statistics.median(samples)


def time_calls(fn, n):
    t = []
    clock = time.perf_counter_ns
    for _ in range(n):
        a = clock()
        fn()
        t.append(clock() - a)
    return p50(t) / 1000.0  # us


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(ROOT, "examples", "models", "mixed_small.onnx"))
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "bin", "ophost"))
    ap.add_argument("-n", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    stem = args.model[: -len(".onnx")]
    xfile = stem + ".input.x.npy"
    x = np.load(xfile)

    so = ophost.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ophost.InferenceSession(args.model, so)
    feeds = {"x": x}
    b = sess.io_binding()
    b.bind_cpu_input("x", x)
    b.bind_output("y")
    for _ in range(200):
        sess.run(None, feeds)
        sess.run_with_iobinding(b)

    cpp, py, io = [], [], []
    for _ in range(args.rounds):
        r = subprocess.run([args.cli, "bench", args.model, "--input", "x=" + xfile, "--threads", "1",
                            "-n", str(args.n), "--json", "-"], capture_output=True, text=True, check=True)
        out = r.stdout[r.stdout.index("{"):]
        cpp.append(json.loads(out)["p50_ms"] * 1000.0)
        py.append(time_calls(lambda: sess.run(None, feeds), args.n))
        io.append(time_calls(lambda: sess.run_with_iobinding(b), args.n))
    c, p, i = p50(cpp), p50(py), p50(io)
    print(f"model {os.path.relpath(args.model, ROOT)}, {args.rounds} interleaved rounds of {args.n} calls, 1 thread")
    print(f"C++ Session::run (ophost bench)  p50 {c:7.2f} us")
    print(f"Python InferenceSession.run      p50 {p:7.2f} us   overhead {p - c:+.2f} us")
    print(f"Python run_with_iobinding        p50 {i:7.2f} us   overhead {i - c:+.2f} us")
    print(f"allocations in the last bound run: {sess.memory_stats()['allocs_this_run']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
