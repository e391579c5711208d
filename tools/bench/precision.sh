#!/usr/bin/env bash
# The reduced-precision models against ONNX Runtime 1.30, interleaved, one thread: median latency of each side
# and the ratio, and how far each side's output is from a reference evaluation of the same graph:
#   - int8 QDQ models (PyTorch's export, quantize_onnx.py qdq): ophost with --opt-level 1 (no qdq-fusion: every
#     DequantizeLinear -> float op -> QuantizeLinear as written, the ONNX definition evaluated in float32);
#   - other models: none; the ophost / ORT difference is printed.
# Errors are max|diff| / max|reference|, and for int8 outputs also in quantization steps (the output's step, read
# off the reference's distinct values).
#
#   tools/bench/precision.sh [--rounds N] MODEL.onnx[:INPUT=DIMS] ...
#   e.g. tools/bench/precision.sh build/zoo/quant/torch_q_resnet18.onnx build/zoo/quant/ch_PP-OCRv4_det_infer.dyn.onnx:x=1,3,640,640
#
# Models: tools/bench/zoo/export_torch_quant.py, quantize_onnx.py, float16_onnx.py (see tools/bench/zoo/README.md).
# Default input: input=1,3,224,224. Env: BUILD (default build), ORT_DIR (default $BUILD/ort; installed with
# ../shared/peers/ort/setup.sh when missing). Prints the CPU's ISA flags first: every figure holds for that ISA.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0; fi
rounds=3
if [ "${1:-}" = --rounds ]; then rounds=$2; shift 2; fi
BUILD=${BUILD:-build}
ORT_DIR=${ORT_DIR:-$BUILD/ort}
PEER=../shared/peers/ort
[ -d "$ORT_DIR/node_modules/onnxruntime-node" ] || bash "$PEER/setup.sh" "$ORT_DIR" >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); ISA flags: $(grep -o -w -E 'avx2|avx512[a-z_0-9]*|avx_vnni|amx[a-z_0-9]*' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "ophost $(git rev-parse --short HEAD), ONNX Runtime 1.30 (Node.js), 1 thread, $rounds interleaved rounds"
printf '%-44s %9s %9s %6s  %s\n' model "ORT ms" "ophost ms" ratio "agreement"
for spec in "$@"; do
  model=${spec%%:*}; input=input=1,3,224,224
  [ "$model" != "$spec" ] && input=${spec#*:}
  name=$(basename "$model" .onnx); d=$work/$name; mkdir -p "$d/ort" "$d/oph" "$d/ref"
  ort_ms=(); oph_ms=()
  for _ in $(seq "$rounds"); do
    ort_ms+=("$(NODE_PATH=$ORT_DIR/node_modules node $PEER/ort-run.js --model "$model" --random "$input" --threads 1 \
      --warmup 3 --iters 15 --out "$d/ort" 2>/dev/null | tail -1 | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["median_ms"])')")
    oph_ms+=("$("$BUILD/bin/ophost" bench "$model" --random --shape "$input" --threads 1 -n 15 --json - 2>/dev/null |
      tail -1 | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["p50_ms"])')")
  done
  "$BUILD/bin/ophost" run "$model" --random --shape "$input" --output-dir "$d/oph" >/dev/null ||
    { echo "$name: ophost run failed (above)"; continue; }
  ref=none
  if /usr/bin/python3 -c "import onnx,sys; m=onnx.load(sys.argv[1]); sys.exit(0 if any(n.op_type=='DequantizeLinear' for n in m.graph.node) and any(n.op_type in ('Conv','MatMul') for n in m.graph.node) else 1)" "$model"; then
    # (folding every DequantizeLinear of the weights into float32 may exceed the default fold budget)
    "$BUILD/bin/ophost" run "$model" --random --shape "$input" --opt-level 1 --max-fold-bytes 4294967296 \
      --output-dir "$d/ref" >/dev/null && ref=qdq
  fi
  /usr/bin/python3 - "$d" "$ref" "$name" "${ort_ms[*]}" "${oph_ms[*]}" <<'PY'
import glob, os, statistics, sys
import numpy as np
d, ref, name = sys.argv[1], sys.argv[2], sys.argv[3]
o = statistics.median(float(x) for x in sys.argv[4].split()); p = statistics.median(float(x) for x in sys.argv[5].split())
def err(a, b):
    a = a.astype(np.float64); b = b.astype(np.float64)
    e = np.abs(a - b).max() if a.size else 0.0
    return e, e / max(np.abs(a).max(), 1e-30)
def step(a):
    u = np.unique(a.astype(np.float64))
    dif = np.diff(u)
    return dif[dif > 0].min() if dif.size else 0.0
parts = []
for f in sorted(glob.glob(os.path.join(d, "oph", "*.npy"))):
    out = os.path.basename(f)[:-4]; mine = np.load(f)
    ortf = os.path.join(d, "ort", out + ".npy")
    if ref == "qdq":
        r = np.load(os.path.join(d, "ref", out + ".npy")); s = step(r)
        e1, r1 = err(r, mine)
        line = f"{out}: ophost {r1:.2g} ({e1 / s:.0f} steps)" if s else f"{out}: ophost {r1:.2g}"
        if os.path.exists(ortf):
            e2, r2 = err(r, np.load(ortf)); line += f", ORT {r2:.2g}" + (f" ({e2 / s:.0f} steps)" if s else "")
        parts.append(line + " from the float QDQ graph")
    elif os.path.exists(ortf):
        e, r = err(np.load(ortf), mine); parts.append(f"{out}: {r:.2g} of max|ORT|")
print(f"{name:<44} {o:9.2f} {p:9.2f} {p / o:6.2f}  " + "; ".join(parts))
PY
done
