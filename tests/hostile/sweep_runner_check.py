#!/usr/bin/python3
"""Checks that ophost_sweep_runner (the attribute sweep's runner) tells every outcome apart, with the ops of the
crash test pack (tests/isolation/crash_pack.cpp): a result (ok), a clean error (error), a crash (crash:SEGV, or
exit:86 where ASan caught the fault first), a hang (crash:ALRM after the timeout) and any other exit (exit:42).

    /usr/bin/python3 tests/hostile/sweep_runner_check.py RUNNER PLUGIN_DIR CRASH_PACK_DIR
"""
import os
import subprocess
import sys
import tempfile

from onnx import TensorProto, helper

# op -> the verdicts that are right for it
EXPECTED = {
    "Relu": {"ok"},
    "fail": {"error"},
    "segv": {"crash:SEGV", "exit:86"},  # exit 86: ASan's report (exitcode=86 in tools/dev/sanitize.sh)
    "exit42": {"exit:42"},
    "hang": {"crash:ALRM"},
}


def model(op):
    domain = "" if op == "Relu" else "crash"
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    g = helper.make_graph([helper.make_node(op, ["x"], ["y"], name="n_" + op, domain=domain)], "g", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("crash", 1)])
    m.ir_version = 8
    return m


def main():
    runner, plugin_dir, crash_dir = sys.argv[1:4]
    with tempfile.TemporaryDirectory(prefix="ophost-sweep-runner-check-") as d:
        paths = {}
        for op in EXPECTED:
            paths[op] = os.path.join(d, op + ".onnx")
            with open(paths[op], "wb") as f:
                f.write(model(op).SerializeToString())
        p = subprocess.run([runner, str(1 << 26), "2", plugin_dir, crash_dir],
                           input="\n".join(paths.values()) + "\n", capture_output=True, text=True, timeout=120)
        got = {}
        for line in p.stdout.splitlines():
            verdict, _, path = line.partition(" ")
            got[path] = verdict
        bad = 0
        for op, path in paths.items():
            v = got.get(path, "(no line)")
            ok = v in EXPECTED[op]
            bad += not ok
            print("%-4s %-7s %-12s expected %s" % ("ok" if ok else "FAIL", op, v, " or ".join(sorted(EXPECTED[op]))))
        if p.returncode != 0:
            print("runner exited with %d\n%s" % (p.returncode, p.stderr))
            bad += 1
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
