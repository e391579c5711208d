#!/usr/bin/env python3
"""Per-node time of ophost beside ONNX Runtime, matched by what a node computes rather than by name.

  /usr/bin/python3 tools/bench/node_compare.py OPHOST_PROFILE.json ORT_PROFILE.json [--top N] [--op SUBSTR]

OPHOST_PROFILE: `ophost bench MODEL ... --profile F.json`; ORT_PROFILE: `tools/bench/ort_profile.js MODEL ...
--save F.json`. Both sides fuse differently and name nodes differently, so nodes are grouped by signature: the
op family (Conv for Conv/FusedConv, else the op type) and the input shapes (a conv's X and W). Per signature:
how many nodes per run each side has and the median per-run total in us; rows sorted by the time ophost loses
(ophost - ORT), so the first rows are where to look. Signatures only one side has (ops the other fused away)
are listed with '-' on the other side. Every run in each file counts, the median damps warm-ups.
"""
import argparse
import collections
import json
import statistics


def family(op):
    if op.startswith("Blocked"):  # ophost's nchwc-layout ops (BlockedMaxPool, ...) against ORT's plain names
        op = op[len("Blocked"):]
    return "Conv" if op in ("Conv", "FusedConv") else op


def load(path, ort):
    data = json.load(open(path))
    events = data["traceEvents"] if isinstance(data, dict) else data
    runs = [e for e in events if e.get("cat") == "Session" and e.get("name") == "model_run"]
    per_node = collections.defaultdict(list)  # node name -> durations in us, one per run
    sig_of = {}
    for e in events:
        if e.get("cat") != "Node" or not e.get("name", "").endswith("_kernel_time"):
            continue
        a = e.get("args", {})
        op = family(a.get("op_name", "?"))
        shapes = [next(iter(s.values())) for s in a.get("input_type_shape", [])]
        if op == "Conv":
            shapes = shapes[:2]
        sig = (op, str(shapes[0]) if shapes else "", str(shapes[1]) if len(shapes) > 1 and op == "Conv" else "")
        name = e["name"]
        sig_of[name] = sig
        per_node[name].append(float(a.get("dur_exact_us", e.get("dur", 0))))
    n_runs = max((len(v) for v in per_node.values()), default=0)
    by_sig = collections.defaultdict(lambda: [0, 0.0])  # sig -> [nodes, median us summed over nodes]
    for name, durs in per_node.items():
        s = by_sig[sig_of[name]]
        s[0] += 1
        s[1] += statistics.median(durs)
    return by_sig, n_runs, len(runs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ophost")
    ap.add_argument("ort")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--op", default="")
    args = ap.parse_args()
    oph, oph_runs, _ = load(args.ophost, False)
    ort, ort_runs, _ = load(args.ort, True)
    rows = []
    for sig in set(oph) | set(ort):
        if args.op and args.op not in sig[0]:
            continue
        o = oph.get(sig)
        r = ort.get(sig)
        rows.append((sig, o, r, (o[1] if o else 0.0) - (r[1] if r else 0.0)))
    rows.sort(key=lambda x: -x[3])
    t_o = sum(v[1] for v in oph.values())
    t_r = sum(v[1] for v in ort.values())
    print(f"ophost {t_o / 1000:.3f} ms of node time per run ({oph_runs} runs), ORT {t_r / 1000:.3f} ms ({ort_runs})")
    print(f"{'op':<22} {'X':<20} {'W':<18} {'n oph/ort':>9} {'oph us':>9} {'ORT us':>9} {'diff':>8} {'ratio':>6}")
    for sig, o, r, d in rows[: args.top]:
        ratio = f"{o[1] / r[1]:.2f}" if o and r and r[1] > 0 else "-"
        print(f"{sig[0][:22]:<22} {sig[1][:20]:<20} {sig[2][:18]:<18} "
              f"{(str(o[0]) if o else '-') + '/' + (str(r[0]) if r else '-'):>9} "
              f"{(f'{o[1]:.1f}' if o else '-'):>9} {(f'{r[1]:.1f}' if r else '-'):>9} {d:>8.1f} {ratio:>6}")


if __name__ == "__main__":
    main()
