#!/usr/bin/env bash
# Configures and builds ophost with a CMake preset (default: `default`, build dir build/; OPHOST_PRESET=ci in
# CI). Installs missing Debian packages first.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
preset="${OPHOST_PRESET:-default}"
tools/dev/deps.sh
if [ -z "${OPHOST_COMPILER_LAUNCHER+x}" ] && command -v ccache >/dev/null; then
  export OPHOST_COMPILER_LAUNCHER=ccache
fi
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j"${OPHOST_JOBS:-$(nproc)}"
