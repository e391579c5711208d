#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test with CTest.
#   tools/dev/test.sh [ctest args...]      e.g. tools/dev/test.sh -R loader
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
tools/dev/build.sh
ctest --preset "${OPHOST_PRESET:-default}" --output-on-failure -j"${OPHOST_JOBS:-$(nproc)}" "$@"
