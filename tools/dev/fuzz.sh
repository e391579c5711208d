#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (`fuzz` preset, build-fuzz/) and runs each for a while.
#   tools/dev/fuzz.sh [seconds per target, default 60]
# Seeds: tests/fuzz/seeds/* plus, for the model target, every model of the ONNX 1.12 node suite
# (copied into the working corpus at run time, never committed) and for the manifest target every manifest of
# the build tree; the op target's templates are the node suite's one-node cases (OPHOST_FUZZ_OP_CASES), its
# seeds one two-byte input per case (the unchanged case). The model and op targets load the plugins of a
# normal build ($OPHOST_FUZZ_PLUGIN_DIR, default build-ci/ then build/): they are not instrumented, the host is
# (ASan + UBSan).
# Zero tolerance: a crash, leak, timeout (-timeout=10 s per input) or out-of-memory (-rss_limit_mb=2048) fails
# the script; the offending input is left in build-fuzz/findings/ -- fix it and keep it as a regression input
# (models: tests/hostile/corpus, manifests: tests/fuzz/regressions).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
secs="${1:-60}"
jobs="${OPHOST_JOBS:-$(nproc)}"
if [ -z "${OPHOST_COMPILER_LAUNCHER+x}" ] && command -v ccache >/dev/null; then
  export OPHOST_COMPILER_LAUNCHER=ccache
fi
command -v clang++-14 >/dev/null || { echo "fuzz.sh: clang++-14 is missing (apt-get install clang-14 libclang-rt-14-dev)" >&2; exit 1; }
umask 022
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j"$jobs" --target ophost_fuzz_model ophost_fuzz_manifest ophost_fuzz_op

plugin_dir="${OPHOST_FUZZ_PLUGIN_DIR:-}"
if [ -z "$plugin_dir" ]; then
  for b in build-ci build; do
    if [ -f "$b/lib/ophost/plugins/onnx-core/ophost-plugin.json" ]; then plugin_dir="$(pwd)/$b/lib/ophost/plugins"; break; fi
  done
fi
[ -n "$plugin_dir" ] || { echo "fuzz.sh: no built plugins; run tools/dev/build.sh first or set OPHOST_FUZZ_PLUGIN_DIR" >&2; exit 1; }
export OPHOST_FUZZ_PLUGIN_DIR="$plugin_dir"

work=build-fuzz/work
findings=build-fuzz/findings
rm -rf "$work"
mkdir -p "$work/model" "$work/manifest" "$work/op" "$findings"
# Seeds from the ONNX node suite, generated from Debian's python3-onnx into the fuzz build tree (cached), or
# ../shared's copy when present.
conf=../shared/conformance/onnx-1.12-node
if [ ! -d "$conf" ]; then
  conf=build-fuzz/conformance/onnx-1.12-node
  /usr/bin/python3 tests/conformance/generate_cases.py "$conf" >/dev/null || conf=
fi
if [ -n "$conf" ] && [ -d "$conf" ]; then
  for d in "$conf"/*/; do
    [ -f "$d/model.onnx" ] && cp "$d/model.onnx" "$work/model/$(basename "$d").onnx"
  done
fi
cp tests/fuzz/seeds/model/* "$work/model/"
# Op target: one seed per node-suite case, its two index bytes (little-endian); the target sorts the cases by
# name, so index i is the i-th one-node case.
[ -n "$conf" ] && [ -d "$conf" ] || { echo "fuzz.sh: the op target needs the ONNX node suite (../shared/conformance or python3-onnx)" >&2; exit 1; }
export OPHOST_FUZZ_OP_CASES="$(cd "$conf" && pwd)"
ncases="$(find "$conf" -mindepth 1 -maxdepth 1 -type d | wc -l)"
for ((i = 0; i < ncases; ++i)); do
  printf "\\x$(printf %02x $((i & 255)))\\x$(printf %02x $((i >> 8)))" >"$work/op/seed-$i"
done
cp tests/hostile/corpus/*.onnx "$work/model/"
cp tests/fuzz/seeds/manifest/* "$work/manifest/"
find "$plugin_dir" -name ophost-plugin.json | while read -r m; do cp "$m" "$work/manifest/$(basename "$(dirname "$m")").json"; done
[ -d tests/fuzz/regressions ] && cp tests/fuzz/regressions/* "$work/manifest/" 2>/dev/null || true

export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
rc=0
for t in model manifest op; do
  echo "==> fuzz $t for ${secs} s"
  ./build-fuzz/bin/ophost_fuzz_$t "$work/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$findings/$t-" \
    2>&1 | tail -n 25 || rc=$?
done
if [ "$rc" -ne 0 ] || [ -n "$(ls -A "$findings" 2>/dev/null)" ]; then
  echo "fuzz.sh: findings in $findings:" >&2
  ls -la "$findings" >&2
  exit 1
fi
echo "fuzz.sh: no crash, leak, timeout or out-of-memory"
