#!/usr/bin/python3
"""Replays the op fuzz target's finds (tests/fuzz/fuzz_op.cpp): each folder of tests/hostile/op-regressions holds
a one-node model.onnx and its inputs as <input>.npy, written by `OPHOST_FUZZ_OP_SAVE=DIR ophost_fuzz_op FIND`.
Each is run with `ophost run --debug-kernels --run-timeout 5000` and the fuzz target's caps (64 MiB per
tensor, 256 MiB per session): a result (exit 0) or a clean error (exit 1)
is fine; a signal, a hang (20 s), another exit code or a kernel-debug finding is a failure. An optional
`expect` file holds text the output must contain (e.g. the error a hostile attribute now gets).

    /usr/bin/python3 tests/hostile/op_regressions.py OPHOST [FOLDER]
"""
import os
import subprocess
import sys


def main():
    ophost = sys.argv[1]
    root = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                               "op-regressions")
    cases = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    if not cases:
        print(f"no cases in {root}")
        return 1
    failed = 0
    for case in cases:
        d = os.path.join(root, case)
        cmd = [ophost, "run", os.path.join(d, "model.onnx"), "--debug-kernels", "--run-timeout", "5000",
               "--max-tensor-bytes", str(64 << 20), "--mem-limit", str(256 << 20)]
        for f in sorted(os.listdir(d)):
            if f.endswith(".npy"):
                cmd += ["--input", f"{f[:-4]}={os.path.join(d, f)}"]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
        except subprocess.TimeoutExpired:
            print(f"FAIL {case}: no answer in 20 s\n  {' '.join(cmd)}")
            failed += 1
            continue
        out = r.stdout + r.stderr
        problem = None
        if r.returncode < 0:
            problem = f"killed by signal {-r.returncode}"
        elif r.returncode not in (0, 1):
            problem = f"exit {r.returncode}"
        elif "debug-kernels:" in out:
            problem = "kernel-debug finding"
        elif os.path.exists(os.path.join(d, "expect")):
            want = open(os.path.join(d, "expect")).read().strip()
            if want not in out:
                problem = f"output lacks the expected text '{want}'"
        if problem:
            print(f"FAIL {case}: {problem}\n  {' '.join(cmd)}\n{out}")
            failed += 1
        else:
            print(f"ok   {case}: exit {r.returncode}")
    print(f"{len(cases) - failed} of {len(cases)} op regression cases ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
