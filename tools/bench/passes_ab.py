#!/usr/bin/python3
"""Before/after for graph passes in one ophost binary: `ophost bench` with the passes disabled (before) and with
the defaults (after), alternating, R rounds per model; prints the median p50 of each side and after/before.

  tools/bench/passes_ab.py [--isa native|AVX2] [--rounds R] [--time S] [--only REGEX]
                           [--disable PASS ...] [--zoo DIR] [--ophost PATH]

Models and input shapes come from tools/bench/zoo/models.tsv (the zoo in --zoo, default build/zoo). --isa AVX2
caps oneDNN with ONEDNN_MAX_CPU_ISA=AVX2. --disable names the passes of the "before" side (default: the layout
passes nchwc-layout, conv-add-fusion, pad-conv-folding). One intra-op thread; each block runs --time seconds
(default 1). Both sides run on the same machine moments apart, so the ratio holds under load better than
absolute times do; repeat when the per-round figures (printed in brackets) scatter.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--isa", default="native", help="native (default) or AVX2 (ONEDNN_MAX_CPU_ISA)")
    ap.add_argument("--rounds", type=int, default=5, help="alternating before/after blocks per model (default 5)")
    ap.add_argument("--time", type=float, default=1.0, help="seconds per `ophost bench` block (default 1)")
    ap.add_argument("--only", default="", help="only the models whose file name matches this regex")
    ap.add_argument("--disable", action="append", help="a pass the 'before' side disables (repeatable)")
    ap.add_argument("--zoo", default=os.path.join(ROOT, "build", "zoo"), help="the zoo folder (default build/zoo)")
    ap.add_argument("--ophost", default=os.path.join(ROOT, "build", "bin", "ophost"), help="the ophost binary")
    a = ap.parse_args()
    disabled = a.disable or ["nchwc-layout", "conv-add-fusion", "pad-conv-folding"]
    env = dict(os.environ)
    if a.isa.lower() != "native":
        env["ONEDNN_MAX_CPU_ISA"] = env["DNNL_MAX_CPU_ISA"] = a.isa.upper()
    rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(ROOT, "tools/bench/zoo/models.tsv"))
            if l.strip() and not l.startswith("#")][1:]
    bad = 0
    for f, inputs, expect, *_ in rows:
        path = os.path.join(a.zoo, f)
        if not re.search(a.only, f) or expect != "ok" or not os.path.exists(path):
            continue
        shapes = [arg for s in inputs.split(";") for arg in ("--shape", s)]
        res = {"before": [], "after": []}
        for _ in range(a.rounds):
            for side in res:
                off = [arg for p in disabled for arg in ("--disable-pass", p)] if side == "before" else []
                r = subprocess.run([a.ophost, "bench", path, "--random", *shapes, "--threads", "1", "--time",
                                    str(a.time), "--json", "-", *off], capture_output=True, text=True, env=env)
                try:
                    res[side].append(json.loads(r.stdout.strip().splitlines()[-1])["p50_ms"])
                except (ValueError, IndexError, KeyError):
                    print("FAIL %s (%s): %s" % (f, side, (r.stderr.strip().splitlines() or ["no output"])[-1]))
                    bad += 1
                    break
        if not res["before"] or not res["after"]:
            continue
        b, af = statistics.median(res["before"]), statistics.median(res["after"])
        print("%-42s %-6s before %9.3f ms  after %9.3f ms  after/before %.2f  (%s | %s)" % (
            os.path.basename(f), a.isa, b, af, af / b, " ".join("%.3g" % v for v in res["before"]),
            " ".join("%.3g" % v for v in res["after"])), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
