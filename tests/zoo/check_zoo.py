#!/usr/bin/python3
"""Runs every zoo model through ophost once (or --repeat N times) with the deterministic --random inputs and
compares each output with ONNX Runtime's saved output: max|ophost - ORT| <= 1e-3 * max|ORT| per output (a
models.tsv "tol" entry gives another bound for a named output, with its reason in the note).

    /usr/bin/python3 tests/zoo/check_zoo.py OPHOST ZOO_DIR [REFS_DIR] [--repeat N] [--threads N]
                                            [--only SUBSTRING ...] [--timeout S] [--models-tsv FILE]
                                            [--exit-only | --kernels native,AVX2]

OPHOST: the ophost binary; ZOO_DIR: where tools/bench/zoo/fetch.sh put the models (torch/ from
tools/bench/zoo/export_torch.py); REFS_DIR: default ZOO_DIR/refs, written by tools/bench/zoo/make_refs.sh.
Models and their input shapes come from tools/bench/zoo/models.tsv.

--repeat N runs each model N times, each run must exit 0 and match the references (a crash at exit, e.g. SIGSEGV
= exit 139, is a failure). --threads N is passed to ophost (default: none, i.e. ophost's default thread count).
A model listed with expect "unsupported (OP)" that fails with an error (not a crash) is an expected failure
(XFAIL); if it runs and matches, it is reported as XPASS (update models.tsv).

Exit: 0 all passed, 1 a failure, 77 (CTest SKIP_RETURN_CODE) when no zoo model or no reference is found.
Needs Debian's python3 and python3-numpy only.
"""
import argparse
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile

import numpy as np

REL_TOL = 1e-3
SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TSV = os.path.join(HERE, "..", "..", "tools", "bench", "zoo", "models.tsv")


def read_models(tsv):
    models = []
    with open(tsv) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#") or line.startswith("file\t"):
                continue
            cols = line.split("\t")
            file, inputs, expect = cols[0], cols[1], cols[2]
            tol = {}
            if len(cols) > 3 and cols[3] not in ("", "-"):
                for kv in cols[3].split(";"):
                    k, v = kv.rsplit("=", 1)
                    tol[k] = float(v)
            note = cols[4] if len(cols) > 4 else ""
            shapes = [s for s in inputs.split(";") if s]
            models.append({"file": file, "name": os.path.splitext(os.path.basename(file))[0], "shapes": shapes,
                           "expect": expect, "tol": tol, "note": note})
    return models


def file_safe(name):
    return "".join(c if (c.isalnum() or c in "_.-") else "_" for c in name)


def describe_exit(code):
    if code < 0:
        try:
            sig = signal.Signals(-code).name
        except ValueError:
            sig = f"signal {-code}"
        return f"exit {128 - code} ({sig})"
    return f"exit {code}"


def first_error_line(text):
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    for l in lines:
        if "error" in l.lower():
            return l
    return lines[0] if lines else "(no message)"


def compare(ref_dir, out_dir, out_names, tol):
    """[(name, ok, abs_err, rel_err, bound, message)] per output; tol: {output: relative bound} overrides."""
    rows = []
    for name in out_names:
        bound = tol.get(name, REL_TOL)
        fn = file_safe(name) + ".npy"
        ref = np.load(os.path.join(ref_dir, fn))
        path = os.path.join(out_dir, fn)
        if not os.path.exists(path):
            rows.append((name, False, float("nan"), float("nan"), bound, f"ophost wrote no {fn}"))
            continue
        got = np.load(path)
        if got.shape != ref.shape:
            rows.append((name, False, float("nan"), float("nan"), bound,
                         f"shape {list(got.shape)} != ORT {list(ref.shape)}"))
            continue
        r = ref.astype(np.float64)
        g = got.astype(np.float64)
        nan_r, nan_g = np.isnan(r), np.isnan(g)
        if not np.array_equal(nan_r, nan_g):
            rows.append((name, False, float("nan"), float("nan"), bound,
                         f"NaN positions differ (ORT {int(nan_r.sum())}, ophost {int(nan_g.sum())})"))
            continue
        keep = ~nan_r
        if not keep.any():
            rows.append((name, True, 0.0, 0.0, bound, "all NaN on both sides"))
            continue
        err = np.abs(g[keep] - r[keep])
        err = np.where(np.isnan(err), 0.0, err)  # +inf - +inf on both sides
        abs_err = float(err.max())
        scale = float(np.abs(r[keep][np.isfinite(r[keep])]).max()) if np.isfinite(r[keep]).any() else 0.0
        if scale > 0:
            rel = abs_err / scale
            ok = abs_err <= bound * scale
        else:
            rel = 0.0 if abs_err == 0 else float("inf")
            ok = abs_err == 0
        rows.append((name, ok, abs_err, rel, bound, f"max|ORT| {scale:.4g}"))
    return rows


def runnable_present(a):
    """The models expected to run (models.tsv `ok`), narrowed by --only, that are in the zoo folder."""
    models = [m for m in read_models(a.models_tsv) if m["expect"] == "ok"]
    if a.only:
        models = [m for m in models if any(s in m["file"] for s in a.only)]
    return [m for m in models if os.path.isfile(os.path.join(a.zoo_dir, m["file"]))]


def check_kernels(a):
    """The no-reference-kernel rule: every node of every runnable zoo model, at every ISA level asked for."""
    present = runnable_present(a)
    if not present:
        print(f"SKIP: zoo models not found in {a.zoo_dir} (run tools/bench/zoo/fetch.sh)")
        return SKIP
    failures = 0
    for isa in a.kernels.split(","):
        env = dict(os.environ)
        env.pop("ONEDNN_MAX_CPU_ISA", None)
        if isa != "native":
            env["ONEDNN_MAX_CPU_ISA"] = isa
        for m in present:
            cmd = [a.ophost, "inspect", os.path.join(a.zoo_dir, m["file"]), "--kernels", "--fail-on-reference"]
            for sh in m["shapes"]:
                cmd += ["--shape", sh]
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout, env=env)
            except subprocess.TimeoutExpired:
                print(f"FAIL  {m['file']} [{isa}]: timed out")
                failures += 1
                continue
            summary = [l for l in p.stdout.splitlines() if l.startswith("kernels: ")]
            refs = [l.strip() for l in p.stdout.splitlines() if l.endswith("REFERENCE")]
            if p.returncode != 0:
                failures += 1
                why = "; ".join(refs) if refs else first_error_line(p.stderr + p.stdout)
                print(f"FAIL  {m['file']} [{isa}]: {describe_exit(p.returncode)}: {why}")
            else:
                print(f"ok    {m['file']} [{isa}]: {summary[0] if summary else 'no summary'}")
    print(f"zoo kernels: {len(present) * len(a.kernels.split(','))} model/ISA pairs, {failures} with reference "
          f"code or errors")
    return 1 if failures else 0


def check_exits(a):
    """Every runnable zoo model, --repeat runs with default options: each must exit 0."""
    present = runnable_present(a)
    if not present:
        print(f"SKIP: zoo models not found in {a.zoo_dir} (run tools/bench/zoo/fetch.sh)")
        return SKIP
    failures = 0
    for m in present:
        cmd = [a.ophost, "run", os.path.join(a.zoo_dir, m["file"]), "--random"]
        for sh in m["shapes"]:
            cmd += ["--shape", sh]
        if a.threads is not None:
            cmd += ["--threads", str(a.threads)]
        bad = []
        with tempfile.TemporaryDirectory(prefix="zoo-exit-") as tmp:
            for i in range(a.repeat):
                try:
                    p = subprocess.run(cmd + ["--output-dir", tmp], capture_output=True, text=True,
                                       timeout=a.timeout)
                except subprocess.TimeoutExpired:
                    bad.append(f"run {i + 1}: timed out")
                    continue
                if p.returncode != 0:
                    bad.append(f"run {i + 1}: {describe_exit(p.returncode)}: {first_error_line(p.stderr + p.stdout)}")
        failures += bool(bad)
        print(f"{'FAIL' if bad else 'ok  '}  {m['file']}: {a.repeat - len(bad)} of {a.repeat} runs exited 0"
              + (f"; {bad[0]}" if bad else ""))
    print(f"zoo exits: {len(present)} models x {a.repeat} runs, {failures} models with a failing run")
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("ophost")
    ap.add_argument("zoo_dir")
    ap.add_argument("refs_dir", nargs="?")
    ap.add_argument("--repeat", type=int, default=1, help="runs per model, each must exit 0 (default 1)")
    ap.add_argument("--threads", type=int, default=None, help="ophost --threads (default: ophost's default)")
    ap.add_argument("--only", nargs="*", default=None, help="models whose file name contains one of these")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per ophost run (default 600)")
    ap.add_argument("--models-tsv", default=DEFAULT_TSV)
    ap.add_argument("--kernels", metavar="ISA[,ISA]", default=None,
                    help="instead of comparing outputs: run `ophost inspect --kernels --fail-on-reference` on every "
                         "model at each ISA level (native = no cap, else ONEDNN_MAX_CPU_ISA=ISA, e.g. AVX2) and fail "
                         "when any node runs a reference implementation (needs no ORT references)")
    ap.add_argument("--exit-only", action="store_true",
                    help="instead of comparing outputs: run every runnable model --repeat times and fail on any "
                         "non-zero exit (a crash at exit included); needs no ORT references")
    a = ap.parse_args()
    if a.kernels:
        return check_kernels(a)
    if a.exit_only:
        return check_exits(a)
    refs_dir = a.refs_dir or os.path.join(a.zoo_dir, "refs")
    models = read_models(a.models_tsv)
    if a.only:
        models = [m for m in models if any(s in m["file"] for s in a.only)]

    present = [m for m in models if os.path.isfile(os.path.join(a.zoo_dir, m["file"]))]
    if not present:
        print(f"SKIP: zoo models not found in {a.zoo_dir} (run tools/bench/zoo/fetch.sh)")
        return SKIP
    if not os.path.isfile(a.ophost) or not os.access(a.ophost, os.X_OK):
        print(f"FAIL: ophost binary {a.ophost} not found or not executable")
        return 1
    with_refs = [m for m in present if os.path.isfile(os.path.join(refs_dir, m["name"], "model.sha256"))]
    if not with_refs:
        print(f"SKIP: ORT references not found in {refs_dir} (run tools/bench/zoo/make_refs.sh)")
        return SKIP
    for m in models:
        if m not in present:
            print(f"skip  {m['file']}: not in {a.zoo_dir}")
        elif m not in with_refs:
            print(f"skip  {m['file']}: no references in {refs_dir} (run tools/bench/zoo/make_refs.sh)")

    failures, xfails, xpasses, passed = [], [], [], []
    for m in with_refs:
        model = os.path.join(a.zoo_dir, m["file"])
        ref_dir = os.path.join(refs_dir, m["name"])
        with open(model, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        with open(os.path.join(ref_dir, "model.sha256")) as f:
            if f.read().strip() != digest:
                failures.append(m["file"])
                print(f"FAIL  {m['file']}: references in {ref_dir} are for other model bytes "
                      f"(run tools/bench/zoo/make_refs.sh --force)")
                continue
        with open(os.path.join(ref_dir, "ort.json")) as f:
            out_names = list(json.load(f)["outputs"].keys())
        expected_unsupported = m["expect"] != "ok"
        cmd = [a.ophost, "run", model, "--random"]
        for s in m["shapes"]:
            cmd += ["--shape", s]
        if a.threads is not None:
            cmd += ["--threads", str(a.threads)]
        bad_runs, worst, xfail_msg = [], {}, None
        with tempfile.TemporaryDirectory(prefix="zoo-check-") as tmp:
            for i in range(a.repeat):
                out_dir = os.path.join(tmp, f"run{i}")
                try:
                    p = subprocess.run(cmd + ["--output-dir", out_dir], capture_output=True, text=True,
                                       timeout=a.timeout)
                    code, err = p.returncode, p.stderr + p.stdout
                except subprocess.TimeoutExpired:
                    bad_runs.append(f"run {i + 1}: timed out after {a.timeout:.0f} s")
                    continue
                wrote = os.path.isdir(out_dir) and any(f.endswith(".npy") for f in os.listdir(out_dir))
                if code != 0:
                    if expected_unsupported and code > 0 and i == 0 and not wrote:
                        xfail_msg = first_error_line(err)
                        break
                    if wrote:  # ran and wrote its outputs, then failed (a crash at exit): compare them all the same
                        bad_runs.append(f"run {i + 1}: {describe_exit(code)} after writing its outputs")
                    else:
                        bad_runs.append(f"run {i + 1}: {describe_exit(code)}: {first_error_line(err)}")
                        continue
                for name, ok, abs_err, rel, bound, msg in compare(ref_dir, out_dir, out_names, m["tol"]):
                    if not ok:
                        bad_runs.append(f"run {i + 1}: output {name}: max abs err {abs_err:.3g}, "
                                        f"relative {rel:.3g} > {bound:g} ({msg})")
                    prev = worst.get(name)
                    if prev is None or not (abs_err <= prev[0]):
                        worst[name] = (abs_err, rel, bound, msg)
        label = f"{m['file']}" + (f" x{a.repeat}" if a.repeat > 1 else "")
        if xfail_msg is not None:
            xfails.append(m["file"])
            print(f"XFAIL {label}: expected {m['expect']}: {xfail_msg}")
            continue
        for name, (abs_err, rel, bound, msg) in worst.items():
            print(f"      {m['file']}: {name}: max abs err {abs_err:.3g}, relative to max|ORT| {rel:.3g} "
                  f"(bound {bound:g}{' from models.tsv' if name in m['tol'] else ''}; {msg})")
        if bad_runs:
            failures.append(m["file"])
            print(f"FAIL  {label}: {len(bad_runs)} bad run(s) of {a.repeat}")
            for b in bad_runs[:10]:
                print(f"        {b}")
            if len(bad_runs) > 10:
                print(f"        ... {len(bad_runs) - 10} more")
        elif expected_unsupported:
            xpasses.append(m["file"])
            print(f"XPASS {label}: listed as {m['expect']} but runs and matches ORT: update "
                  f"tools/bench/zoo/models.tsv")
        else:
            passed.append(m["file"])
            print(f"PASS  {label}")
    if xfails:
        print(f"expected failures (not counted): {', '.join(xfails)}")
    if xpasses:
        print(f"unexpectedly passing (counted as passed): {', '.join(xpasses)}")
    if failures:
        print("failed: " + ", ".join(failures))
    print(f"zoo: {len(passed) + len(xpasses)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
