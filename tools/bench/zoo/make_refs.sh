#!/usr/bin/env bash
# Writes ONNX Runtime reference outputs for every zoo model present, for tests/zoo/check_zoo.py:
# DIR/refs/<model file without .onnx>/<output>.npy (and input.<name>.npy, the --random input ORT saw), from
# `ort-run.js --random` with the shapes of tools/bench/zoo/models.tsv, one thread, one run. References are not
# committed (the models are not either): make them after fetch.sh (and export_torch.py for the torch/ models).
#
#   tools/bench/zoo/make_refs.sh [--force] [DIR]     DIR: default $OPHOST_ZOO_DIR, else build/zoo
#
# A model whose references exist for its current bytes (refs/NAME/model.sha256, written last) is skipped unless
# --force. Models missing from DIR are listed and skipped.
# Env: ORT_DIR (default build/ort; ../shared/peers/ort/setup.sh installs ONNX Runtime there when missing).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
PEER=$(cd "$ROOT/../shared/peers/ort" 2>/dev/null && pwd || echo /work/shared/peers/ort)
ORT_DIR=${ORT_DIR:-$ROOT/build/ort}
force=0
args=()
for a in "$@"; do
  case $a in
    --force) force=1 ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "make_refs.sh: unknown option $a (see --help)" >&2; exit 2 ;;
    *) args+=("$a") ;;
  esac
done
DIR=${args[0]:-${OPHOST_ZOO_DIR:-$ROOT/build/zoo}}
[ -d "$DIR" ] || { echo "make_refs.sh: $DIR does not exist (run tools/bench/zoo/fetch.sh first)" >&2; exit 1; }
[ -d "$ORT_DIR/node_modules/onnxruntime-node" ] || bash "$PEER/setup.sh" "$ORT_DIR" >/dev/null

made=0 missing=0 failed=0
while IFS=$'\t' read -r file inputs _; do
  case $file in ''|'#'*|file) continue ;; esac
  name=$(basename "$file" .onnx)
  out=$DIR/refs/$name
  if [ ! -f "$DIR/$file" ]; then echo "$file: not in $DIR, skipped"; missing=$((missing + 1)); continue; fi
  sum=$(sha256sum "$DIR/$file" | cut -d' ' -f1)
  if [ "$force" = 0 ] && [ -f "$out/model.sha256" ] && [ "$(cat "$out/model.sha256")" = "$sum" ]; then
    echo "$file: references present in $out"; continue
  fi
  rnd=()
  IFS=';' read -ra ins <<< "$inputs"
  for i in "${ins[@]}"; do rnd+=(--random "$i"); done
  rm -rf "$out"
  if ! log=$(NODE_PATH=$ORT_DIR/node_modules node "$PEER/ort-run.js" --model "$DIR/$file" "${rnd[@]}" \
      --threads 1 --warmup 0 --iters 1 --out "$out" 2>&1); then
    echo "$file: ONNX Runtime FAILED: $(echo "$log" | head -1)" >&2
    failed=$((failed + 1)); rm -rf "$out"; continue
  fi
  echo "$log" | tail -1 > "$out/ort.json"
  echo "$sum" > "$out/model.sha256"   # last: marks the folder complete, for this model's bytes
  n=0
  for f in "$out"/*.npy; do case ${f##*/} in input.*) ;; *) n=$((n + 1)) ;; esac; done
  echo "$file: wrote $n output(s) to $out"
  made=$((made + 1))
done < "$HERE/models.tsv"
echo "references: $made written, $missing model(s) missing, $failed failed (ONNX Runtime $(basename "$ORT_DIR"))"
[ "$failed" = 0 ]
