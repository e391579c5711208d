#!/usr/bin/python3
"""Cost of pack isolation (--isolate-packs) per isolated node: `ophost bench` in the host's process and with the
packs isolated, alternating, ROUNDS times, in one run (docs/benchmarks.md, "Pack isolation").

Usage: isolation_cost.py OPHOST PACKS MODEL [--rounds 3] [-n RUNS] [bench options...]

PACKS is what --isolate-packs gets (P1,P2 or '*'); the isolated nodes are counted from `ophost inspect --kernels`.
Extra options (e.g. --shape x=1,3,640,640) go to both commands; --threads 1 and --random are always given.
Prints one line per round and the median: p50 in-process, p50 isolated, (isolated - in-process) / isolated nodes.
"""
import argparse
import json
import statistics
import subprocess
import sys


def bench(ophost, model, runs, extra):
    cmd = [ophost, "bench", model, "--random", "--threads", "1", "-n", str(runs), "--json", "-"] + extra
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)}\n{p.stdout}{p.stderr}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def isolated_nodes(ophost, model, packs, extra):
    shape = [a for a in extra if a.startswith("--shape") or "=" in a]
    p = subprocess.run([ophost, "inspect", model, "--kernels"] + shape, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"FAIL: ophost inspect {model} --kernels\n{p.stdout}{p.stderr}")
    wanted = set(packs.split(","))
    count, total, in_table = 0, 0, False
    for line in p.stdout.splitlines():
        if line.startswith("  node "):
            in_table = True
            continue
        if in_table and line.startswith("  "):
            cols = line.split()
            total += 1
            if "*" in wanted or (len(cols) >= 3 and cols[2] in wanted):
                count += 1
        elif in_table:
            break
    return count, total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ophost")
    ap.add_argument("packs")
    ap.add_argument("model")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("-n", type=int, default=2000)
    args, extra = ap.parse_known_args()
    nodes, total = isolated_nodes(args.ophost, args.model, args.packs, extra)
    if nodes == 0:
        sys.exit(f"FAIL: no node of {args.packs} in {args.model}")
    rows = []
    for r in range(args.rounds):
        a = bench(args.ophost, args.model, args.n, extra)
        b = bench(args.ophost, args.model, args.n, extra + ["--isolate-packs", args.packs])
        per_node_us = (b["p50_ms"] - a["p50_ms"]) * 1000 / nodes
        rows.append((a["p50_ms"], b["p50_ms"], per_node_us))
        print(f"round {r + 1}: p50 in-process {a['p50_ms']:.4f} ms, isolated {b['p50_ms']:.4f} ms, "
              f"{nodes} of {total} nodes isolated: {per_node_us:.1f} us per isolated node")
    med = [statistics.median(c) for c in zip(*rows)]
    print(f"median: {med[0]:.4f} ms / {med[1]:.4f} ms ({med[1] / med[0]:.2f}x), {med[2]:.1f} us per isolated node")


if __name__ == "__main__":
    main()
