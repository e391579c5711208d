#!/usr/bin/python3
"""Hostile attribute sweep: every standard op onnx-core registers, as a one-node model built from ONNX's own
schema (Debian's python3-onnx), with each integer attribute in turn set to a hostile value (0, -1, INT32_MIN,
2^40, and an empty or over-long list for INTS), loaded and run as `ophost run --random` runs it. A clean error
or a result is fine; a crash (signal: SIGFPE from a division by zero, SIGSEGV, SIGABRT), a hang or a sanitizer
report (in a sanitizer build) is a finding.

    /usr/bin/python3 tests/hostile/attr_sweep.py OPHOST [--only OP ...] [--timeout S] [--jobs N]
                                                 [--runner RUNNER] [--plugin-dir DIR]

The models run in ophost_sweep_runner (tests/hostile/sweep_runner.cpp, default: next to OPHOST), which loads the
plugins once and forks a child per model: under ASan a process per model cost ~0.85 s, the fork milliseconds.
Exit 0 when nothing crashed, hung or reported, 1 otherwise (each finding printed with the `ophost run` command
that reproduces it: the model is kept in the printed folder). Needs python3-onnx.
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile

import onnx
from onnx import TensorProto, defs, helper

HOSTILE_INTS = [0, -1, -(1 << 31), 1 << 40]
HOSTILE_LISTS = [[], [0, 0, 0, 0, 0, 0, 0, 0], [-1, -1, -1, -1], [1 << 40, 1 << 40, 1 << 40, 1 << 40]]
# Inputs of these types get float data; other type constraints are given their first allowed tensor type.
PREFERRED = ["tensor(float)", "tensor(int64)", "tensor(int32)", "tensor(bool)", "tensor(uint8)"]
ELEM = {"tensor(float)": TensorProto.FLOAT, "tensor(int64)": TensorProto.INT64, "tensor(int32)": TensorProto.INT32,
        "tensor(bool)": TensorProto.BOOL, "tensor(uint8)": TensorProto.UINT8, "tensor(double)": TensorProto.DOUBLE,
        "tensor(float16)": TensorProto.FLOAT16, "tensor(int8)": TensorProto.INT8}


def plugins_dir(ophost):
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(ophost))), "lib", "ophost", "plugins")


def registered_ops(ophost):
    """(name, since, end) of every standard-domain op onnx-core serves, from its manifest."""
    with open(os.path.join(plugins_dir(ophost), "onnx-core", "ophost-plugin.json")) as f:
        m = json.load(f)
    return [(o["name"], o["since_version"], o["end_version"]) for o in m["provides"]["ops"] if o["domain"] == ""]


def input_type(schema, formal):
    tc = {c.type_param_str: list(c.allowed_type_strs) for c in schema.type_constraints}
    allowed = tc.get(formal.typeStr, [formal.typeStr])
    for p in PREFERRED:
        if p in allowed:
            return ELEM[p]
    for a in allowed:
        if a in ELEM:
            return ELEM[a]
    return None


def models_for(name, since, end):
    """Yields (label, ModelProto) for every hostile value of every int/ints attribute of the op's schema."""
    opset = since if end > 10000 else end
    try:
        schema = defs.get_schema(name, opset, "")
    except Exception:
        return
    opset = max(opset, schema.since_version)
    inputs, names = [], []
    for i, formal in enumerate(schema.inputs):
        if formal.option == defs.OpSchema.FormalParameterOption.Optional:
            break
        elem = input_type(schema, formal)
        if elem is None:
            return
        n = "in%d" % i
        inputs.append(helper.make_tensor_value_info(n, elem, [2, 3, 4, 5]))
        names.append(n)
        if formal.option == defs.OpSchema.FormalParameterOption.Variadic:
            break
    outs = [helper.make_tensor_value_info("out%d" % i, TensorProto.UNDEFINED, None)
            for i in range(max(1, min(len(schema.outputs), 1)))]
    required = {a.name: a for a in schema.attributes.values() if a.required}
    for attr in schema.attributes.values():
        if attr.type not in (defs.OpSchema.AttrType.INT, defs.OpSchema.AttrType.INTS):
            continue
        values = HOSTILE_INTS if attr.type == defs.OpSchema.AttrType.INT else HOSTILE_LISTS
        for v in values:
            kw = {}
            for r in required.values():  # other required attributes get a plain value of their type
                if r.name == attr.name:
                    continue
                if r.type == defs.OpSchema.AttrType.INT:
                    kw[r.name] = 1
                elif r.type == defs.OpSchema.AttrType.INTS:
                    kw[r.name] = [1, 1]
                elif r.type == defs.OpSchema.AttrType.FLOAT:
                    kw[r.name] = 1.0
                elif r.type == defs.OpSchema.AttrType.STRING:
                    kw[r.name] = "x"
                else:
                    kw = None
                    break
            if kw is None:
                continue
            kw[attr.name] = v
            node = helper.make_node(name, names, [o.name for o in outs], name="n", **kw)
            g = helper.make_graph([node], "sweep", inputs, outs)
            m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="attr_sweep")
            m.ir_version = 8
            yield "%s-%d.%s=%s" % (name, opset, attr.name, str(v).replace(" ", "")), m


MAX_TENSOR_BYTES = 1 << 26


def repro(ophost, path):
    return " ".join([ophost, "run", path, "--random", "--threads", "1", "--max-tensor-bytes", str(MAX_TENSOR_BYTES)])


def write_model(folder, label, model):
    path = os.path.join(folder, label.replace("/", "_").replace("[", "").replace("]", "").replace(",", "_") + ".onnx")
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return path


def run_batch(runner, plugin_dir, paths, timeout):
    """{path: verdict} from one runner process ("ok", "error", "crash:SIG", "exit:N"; "lost" when it printed no
    line for a path: the runner itself died)."""
    p = subprocess.run([runner, str(MAX_TENSOR_BYTES), str(int(timeout)), plugin_dir], input="\n".join(paths) + "\n",
                       capture_output=True, text=True)
    verdicts = {}
    for line in p.stdout.splitlines():
        verdict, _, path = line.partition(" ")
        verdicts[path] = verdict
    for path in paths:
        verdicts.setdefault(path, "lost (runner exit %d)" % p.returncode)
    # The children's stderr (clean errors, sanitizer reports) is kept for the findings only.
    return verdicts, p.stderr


def finding(verdict):
    if verdict in ("ok", "error"):
        return None
    if verdict == "crash:ALRM":
        return "hang"
    if verdict.startswith("crash:"):
        return "crash (SIG%s)" % verdict[len("crash:"):]
    if verdict.startswith("exit:"):
        return "exit code %s: a sanitizer report or an exit() (see the log above)" % verdict[len("exit:"):]
    return verdict


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ophost")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--timeout", type=float, default=10)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--runner", help="ophost_sweep_runner (default: next to OPHOST)")
    ap.add_argument("--plugin-dir", help="the plugins to load (default: OPHOST's build or install tree)")
    a = ap.parse_args()
    runner = a.runner or os.path.join(os.path.dirname(os.path.abspath(a.ophost)), "ophost_sweep_runner")
    plugin_dir = a.plugin_dir or plugins_dir(a.ophost)
    folder = tempfile.mkdtemp(prefix="ophost-attr-sweep-")
    work = []
    for name, since, end in registered_ops(a.ophost):
        if a.only and name not in a.only:
            continue
        for label, m in models_for(name, since, end):
            work.append((label, write_model(folder, label, m)))
    jobs = max(1, a.jobs)
    batches = [[p for _, p in work[i::jobs]] for i in range(jobs)]
    label_of = {path: label for label, path in work}
    findings = []
    with concurrent.futures.ThreadPoolExecutor(jobs) as ex:
        for verdicts, stderr in ex.map(lambda b: run_batch(runner, plugin_dir, b, a.timeout), batches):
            bad = [(path, what) for path, v in verdicts.items() if (what := finding(v))]
            if bad:
                sys.stderr.write(stderr)
            for path, what in bad:
                findings.append((label_of[path], what, path))
                print("FINDING %s: %s\n    %s" % (label_of[path], what, repro(a.ophost, path)))
    print("attr sweep: %d models (%d ops), %d crashes, hangs or sanitizer reports; models in %s" %
          (len(work), len({w[0].split("-")[0] for w in work}), len(findings), folder))
    if not findings:
        import shutil
        shutil.rmtree(folder, ignore_errors=True)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
