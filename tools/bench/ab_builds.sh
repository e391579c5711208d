#!/usr/bin/env bash
# Two ophost builds (before and after a change) and ONNX Runtime 1.30 (shared/peers/ort) on one model, interleaved
# round after round in one run of this script, at one or both ISA levels.
#
#   tools/bench/ab_builds.sh --before DIR --after DIR MODEL INPUT=D0,D1,...
#                            [--isa native|avx2|both] [--rounds R] [--iters N] [--threads T]
#
# DIR is a build tree (or a copy of its bin/ and lib/: `cp -a build/bin build/lib /tmp/before/`), so the before
# side can be kept while the tree is rebuilt. Each round, for each ISA: `ophost bench --random` of the before
# build, of the after build (p50 of N timed runs after 50 warm-ups; N = --iters, default 2000), then ort-run.js
# --random (median of N after 50). --isa avx2 caps ophost with ONEDNN_MAX_CPU_ISA=AVX2 (and DNNL_MAX_CPU_ISA),
# which also caps onnx-core's Highway kernels, and runs ORT from an AVX2-capped copy (tools/bench/ort_avx2.sh);
# native rows run both natively. --rounds (default 5), --threads (default 1, both sides).
# Output: one line per round and ISA, then per ISA the median of each side over the rounds and the median
# (min-max) of the per-round ratios before/ORT and after/ORT.
# Env: ORT_DIR (default build/ort; installed with shared/peers/ort/setup.sh when missing), ORT_AVX2_DIR (default
# build/ort-avx2; made from ORT_DIR when missing).
set -euo pipefail
cd "$(dirname "$0")/../.."
usage() { sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; }  # the comment block at the top
BEFORE="" AFTER="" ISA=both ROUNDS=5 ITERS=2000 THREADS=1 POS=()
while [ $# -gt 0 ]; do
  case $1 in
    --before) BEFORE=$2; shift 2 ;;
    --after) AFTER=$2; shift 2 ;;
    --isa) ISA=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --iters) ITERS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "ab_builds.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) POS+=("$1"); shift ;;
  esac
done
if [ ${#POS[@]} != 2 ] || [ -z "$BEFORE" ] || [ -z "$AFTER" ]; then
  echo "ab_builds.sh: needs --before DIR --after DIR MODEL INPUT=DIMS" >&2; usage >&2; exit 2
fi
MODEL=${POS[0]} INPUT=${POS[1]}
case $ISA in native) ISAS=(native) ;; avx2) ISAS=(avx2) ;; both) ISAS=(native avx2) ;;
  *) echo "ab_builds.sh: --isa must be native, avx2 or both" >&2; exit 2 ;; esac
[[ $ROUNDS =~ ^[0-9]+$ && $ITERS =~ ^[0-9]+$ && $THREADS =~ ^[0-9]+$ ]] ||
  { echo "ab_builds.sh: --rounds, --iters and --threads take numbers" >&2; exit 2; }
for d in "$BEFORE" "$AFTER"; do
  [ -x "$d/bin/ophost" ] || { echo "ab_builds.sh: $d/bin/ophost not found (give a build tree)" >&2; exit 2; }
done
ORT_DIR=${ORT_DIR:-build/ort}
PEER=$(cd ../shared/peers/ort 2>/dev/null && pwd || echo /work/shared/peers/ort)
[ -d "$ORT_DIR/node_modules/onnxruntime-node" ] || bash "$PEER/setup.sh" "$ORT_DIR" >&2
ORT_AVX2_DIR=${ORT_AVX2_DIR:-build/ort-avx2}
[[ " ${ISAS[*]} " != *" avx2 "* ]] || tools/bench/ort_avx2.sh "$ORT_DIR" "$ORT_AVX2_DIR"
name=${INPUT%%=*} dims=${INPUT#*=}
jnum() { sed -n "s/.*\"$1\":\\([-0-9.e]*\\).*/\\1/p" | tail -1; }
oph() {  # build isa -> p50 ms
  local env=(); [ "$2" = avx2 ] && env=(ONEDNN_MAX_CPU_ISA=AVX2 DNNL_MAX_CPU_ISA=AVX2)
  env "${env[@]}" "$1/bin/ophost" bench "$MODEL" --random --shape "$name=$dims" --threads "$THREADS" --warmup 50 \
    -n "$ITERS" --json - | tail -1 | jnum p50_ms
}
ort() {  # isa -> median ms
  local dir=$ORT_DIR; [ "$1" = avx2 ] && dir=$ORT_AVX2_DIR
  NODE_PATH=$dir/node_modules node "$PEER/ort-run.js" --model "$MODEL" --random "$INPUT" --threads "$THREADS" \
    --warmup 50 --iters "$ITERS" | tail -1 | jnum median_ms
}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ab-builds.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
echo "model $MODEL, input $INPUT, threads $THREADS, $ITERS runs per block, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do
  for isa in "${ISAS[@]}"; do
    b=$(oph "$BEFORE" "$isa") a=$(oph "$AFTER" "$isa") o=$(ort "$isa")
    printf 'round %d %-6s before %s ms, after %s ms, ORT %s ms\n' "$r" "$isa" "$b" "$a" "$o"
    echo "$b $a $o" >>"$WORK/$isa"
  done
done
for isa in "${ISAS[@]}"; do
  awk -v isa="$isa" '
    function med(v, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j-1] > v[j]; j--) {
        t = v[j]; v[j] = v[j-1]; v[j-1] = t }
      return n % 2 ? v[(n+1)/2] : (v[n/2] + v[n/2+1]) / 2 }
    function lo(v, n,   i, m) { m = v[1]; for (i = 2; i <= n; i++) if (v[i] < m) m = v[i]; return m }
    function hi(v, n,   i, m) { m = v[1]; for (i = 2; i <= n; i++) if (v[i] > m) m = v[i]; return m }
    { n++; b[n] = $1; a[n] = $2; o[n] = $3; rb[n] = $1 / $3; ra[n] = $2 / $3 }
    END { printf "%s: median ms before %.4g, after %.4g, ORT %.4g; before/ORT %.2f (%.2f-%.2f), after/ORT %.2f (%.2f-%.2f), %d rounds\n",
      isa, med(b, n), med(a, n), med(o, n), med(rb, n), lo(rb, n), hi(rb, n), med(ra, n), lo(ra, n), hi(ra, n), n }' "$WORK/$isa"
done
