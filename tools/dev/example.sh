#!/usr/bin/env bash
# The main job: installs what is missing, builds, lists the plugins, and runs the example model that mixes
# custom (myops) and standard (onnx-core) ops, comparing its output with the float64 reference.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
tools/dev/build.sh
preset="${OPHOST_PRESET:-default}"
bin="build/bin/ophost"
[ "$preset" = default ] || bin="build-$preset/bin/ophost"
m=examples/models/mixed_small
"$bin" plugins
"$bin" run "$m.onnx" --input "x=$m.input.x.npy" --output-dir build/example-out --log-level info
/usr/bin/python3 - "$m.output.y.npy" build/example-out/y.npy <<'PY'
import sys, numpy as np
ref, got = np.load(sys.argv[1]), np.load(sys.argv[2])
err = float(np.abs(ref.astype(np.float64) - got).max())
print(f"max abs error vs float64 reference: {err:.3g}")
sys.exit(0 if err <= 1e-5 else 1)
PY
