#!/usr/bin/env bash
# ophost vs ONNX Runtime 1.30 (shared/peers/ort) on one model, same deterministic input, same thread count, in the
# same run of this script (absolute times drift on shared machines; the ratio is what counts).
#
#   tools/bench/compare.sh MODEL INPUT=D0,D1,... [THREADS=1] [ITERS=20] [ROUNDS=3]
#   tools/bench/compare.sh ../shared/models/ch_PP-OCRv4_det_infer.onnx x=1,3,640,640
#   tools/bench/compare.sh /tmp/chain1000.onnx x=1,16 1 5000      (make it with tools/bench/make_chain_add.py)
#
# Each round runs ORT (`ort-run.js --random`, median_ms after its warm-ups) then `ophost bench --random` (p50 after
# 5 warm-ups) and prints both with the ratio ophost / ORT; the last line is the median ratio over the rounds.
# Env: BUILD (default build), ORT_DIR (default /tmp/ort; installed with shared/peers/ort/setup.sh when missing).
set -euo pipefail
cd "$(dirname "$0")/../.."
MODEL=${1:?usage: compare.sh MODEL INPUT=D0,D1,... [THREADS] [ITERS] [ROUNDS]}
INPUT=${2:?usage: compare.sh MODEL INPUT=D0,D1,... [THREADS] [ITERS] [ROUNDS]}
THREADS=${3:-1}; ITERS=${4:-20}; ROUNDS=${5:-3}
BUILD=${BUILD:-build}
ORT_DIR=${ORT_DIR:-/tmp/ort}
PEER=$(cd ../shared/peers/ort 2>/dev/null && pwd || echo /work/shared/peers/ort)
[ -d "$ORT_DIR/node_modules" ] || bash "$PEER/setup.sh" "$ORT_DIR" >/dev/null
name=${INPUT%%=*}; dims=${INPUT#*=}
nodes=""
echo "model $MODEL, input $INPUT, threads $THREADS, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
ratios=()
for r in $(seq "$ROUNDS"); do
  ort=$(NODE_PATH=$ORT_DIR/node_modules node "$PEER/ort-run.js" --model "$MODEL" --random "$INPUT" \
    --threads "$THREADS" --iters "$ITERS" --warmup 5 | tail -1 | sed 's/.*"median_ms":\([0-9.]*\).*/\1/')
  json=$("$BUILD/bin/ophost" bench "$MODEL" --random --shape "$name=$dims" --threads "$THREADS" -n "$ITERS" \
    --json - | tail -1)
  oph=$(echo "$json" | sed 's/.*"p50_ms":\([0-9.e-]*\).*/\1/')
  nodes=$(echo "$json" | sed 's/.*"nodes":\([0-9]*\).*/\1/')
  ratio=$(awk -v a="$oph" -v b="$ort" 'BEGIN { printf "%.3f", a / b }')
  ratios+=("$ratio")
  printf 'round %d: ORT median %.4f ms, ophost p50 %.4f ms (%.1f vs %.1f ns per node), ratio %s\n' "$r" "$ort" "$oph" \
    "$(awk -v a="$ort" -v n="$nodes" 'BEGIN { print a * 1e6 / n }')" \
    "$(awk -v a="$oph" -v n="$nodes" 'BEGIN { print a * 1e6 / n }')" "$ratio"
done
printf '%s\n' "${ratios[@]}" | sort -g | awk '{a[NR]=$1} END {printf "median ratio ophost/ORT: %s\n", a[int((NR+1)/2)]}'
