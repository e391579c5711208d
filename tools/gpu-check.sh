#!/usr/bin/env bash
# GPU check: on a machine with one NVIDIA GPU (CUDA toolkit at /usr/local/cuda), configure and build ophost with
# CUDA (Release, ccache when present, only the targets needed), run the GPU tests (the backend op suite with
# the CPU backend as oracle, and the device-table tests), then a copy (H2D/D2H/D2D GB/s) and elementwise
# (myops::relu6_scale on 16M float32 vs a D2D copy of the same bytes) benchmark, and print a short table.
# Budget: under 8 minutes on such a machine (build ~2-4 min on 16 cores; tests and benchmarks < 1 min).
#
# Without a GPU (or without the NVIDIA driver) it still builds and runs the CPU parts and says clearly that the
# device parts were skipped and why; the exit status is 0 unless something that could run failed.
#
#   tools/gpu-check.sh [BUILD_DIR]       (default build-gpu; OPHOST_JOBS=N overrides the parallelism)
#   OPHOST_CUDA_ARCHS=90 tools/gpu-check.sh   (architectures to compile; default: the GPU's own, else 80-real;90)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
build="${1:-build-gpu}"
jobs="${OPHOST_JOBS:-$(nproc)}"
start=$(date +%s)
log() { printf '==> %s\n' "$*"; }
elapsed() { echo $(( $(date +%s) - start )); }

# 1. What the machine has.
gpu_line="none"
has_gpu=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  gpu_line="$(nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader | head -n 1)"
  has_gpu=1
else
  why="nvidia-smi not found"
  command -v nvidia-smi >/dev/null 2>&1 && why="nvidia-smi: $(nvidia-smi -L 2>&1 | head -n 1)"
fi
log "GPU: ${gpu_line}"
archs="${OPHOST_CUDA_ARCHS:-}"
if [ -z "$archs" ]; then
  if [ "$has_gpu" = 1 ]; then
    cc="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d ' .')"
    archs="${cc:-80-real;90}"
  else
    archs="80-real;90"
  fi
fi

# 2. Configure and build only what the check needs.
launcher=()
command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
gen=()
command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
mkdir -p "$build"
logs="$build/gpu-check"
log "configure ${build} (Release, CUDA architectures ${archs})"
cmake -S . -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON -DOPHOST_WITH_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="$archs" "${launcher[@]}" >"$logs.configure.log" 2>&1 || {
  tail -n 30 "$logs.configure.log"
  exit 1
}
# cmake/OphostGpu.cmake's line per GPU API: "CUDA: CUDA <version> at <dir> (...)" or "CUDA skipped: <why>".
grep -E "^-- (CUDA|HIP)( skipped)?: " "$logs.configure.log" | sed 's/^-- /    /'
# The CUDA parts are built when the configure made their targets (the packs need nvcc, the backend only the
# toolkit; cmake/OphostGpu.cmake decides).
cuda_built=1
build_targets="$(cmake --build "$build" --target help 2>/dev/null || true)"  # Ninja: "name: phony", make: "... name"
grep -qE "(^|[ ])ophost_plugin_cuda-core(:|$)" <<<"$build_targets" || cuda_built=0
targets=(ophost ophost_backend_tests ophost_backend_bench ophost_plugin_cpu ophost_plugin_myops ophost_plugin_onnx-core)
[ "$cuda_built" = 1 ] && targets+=(ophost_plugin_cuda ophost_plugin_myops-cuda ophost_plugin_cuda-core)
log "build (${jobs} jobs): ${targets[*]}"
t0=$(date +%s)
cmake --build "$build" -j "$jobs" --target "${targets[@]}" >"$logs.build.log" 2>&1 || {
  tail -n 40 "$logs.build.log"
  exit 1
}
build_s=$(( $(date +%s) - t0 ))
log "built in ${build_s} s"

# 3. Plugins as the host sees them (the cuda line says active or why not).
log "ophost plugins -v (device lines)"
"$build/bin/ophost" plugins -v 2>&1 | grep -E "^ +device +(cpu|cuda|hip)" | sed 's/^ */    /' || true

# 4. Tests: the backend suite for cpu and cuda.
log "tests: backend op suite (cpu oracle) and device tables"
fail=0
export OPHOST_PLUGIN_PATH= OPHOST_PLUGINS_DISABLE=
test_out="$("$build/bin/ophost_backend_tests" --gtest_filter='*cpu*:*cuda*:Backends/BackendApi.Enumerate*' 2>&1)" || fail=1
passed=$(grep -cE '^\[       OK \]' <<<"$test_out" || true)
skipped=$(grep -cE '^\[  SKIPPED \] [^0-9]' <<<"$test_out" || true)
failed=$(grep -cE '^\[  FAILED  \] [^0-9]' <<<"$test_out" || true)
cuda_ok=$(grep -cE '^\[       OK \] .*(cuda_|/cuda)' <<<"$test_out" || true)
grep -E '^\[  FAILED  \] [^0-9]' <<<"$test_out" | head -n 20 || true
grep -E '^\[ INFO' <<<"$test_out" | sed 's/^/    /' || true

# 5. Benchmarks.
bench() {  # bench DEVICE -> table lines on stdout; status 2 when the backend is inactive
  "$build/bin/ophost_backend_bench" "$1" "${@:2}"
}
log "benchmarks"
cpu_bench="$(bench cpu --mib 64 2>&1)" || fail=1
cuda_rc=0
cuda_bench="$(bench cuda --mib 256 2>&1)" || cuda_rc=$?
[ "$cuda_rc" = 1 ] && fail=1

# 6. Summary table.
echo
echo "=================================== gpu-check ==================================="
printf '%-28s %s\n' "GPU" "$gpu_line"
printf '%-28s %s\n' "build (targets above)" "${build_s} s"
printf '%-28s %s\n' "backend tests" "${passed} passed (${cuda_ok} on cuda), ${skipped} skipped, ${failed} failed"
echo "---------------------------------------------------------------------------------"
printf '%-5s %-22s %12s %10s %8s\n' "dev" "measurement" "bytes" "ms" "GB/s"
grep -vE '^#' <<<"$cpu_bench" || true
if [ "$cuda_rc" = 0 ]; then
  grep -vE '^#' <<<"$cuda_bench"
else
  echo "cuda  (skipped) $cuda_bench"
fi
echo "================================================================================="
if [ "$has_gpu" = 0 ] || [ "$cuda_rc" = 2 ]; then
  echo "NO GPU: the device parts (CUDA tests and benchmarks) were SKIPPED: ${why:-${cuda_bench}}"
  echo "        (built and ran the CPU parts; run this script on a machine with an NVIDIA GPU and driver)"
fi
echo "total $(elapsed) s"
exit "$fail"
