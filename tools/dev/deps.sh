#!/usr/bin/env bash
# Installs the Debian 12 packages ophost needs to build and test, if any is missing. The one list of build
# dependencies: .ci/run and the README's commands all come through here.
#   OPHOST_APT_UPDATE=1 forces `apt-get update` (CI does).
#   tools/dev/deps.sh --list prints the package list, one a line, and installs nothing (tools/dev/check-deps.sh).
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config file dpkg-dev
  strace  # tools/dev/check-deps.sh traces the configure
  libboost-dev libboost-filesystem-dev libboost-program-options-dev
  libspdlog-dev nlohmann-json3-dev libgtest-dev libgmock-dev
  libonnx-dev libprotobuf-dev protobuf-compiler libssl-dev
  libdnnl-dev ocl-icd-opencl-dev libhwy-dev  # dnnl-config.cmake find_package(OpenCL)s; libdnnl-dev only recommends it
  clang-14 libclang-rt-14-dev  # libFuzzer targets (tools/dev/fuzz.sh)
  python3 python3-onnx python3-numpy
  pybind11-dev python3-dev python3-pytest  # the Python package (python/) and its tests
  # ophost serve (tools/serve): REST, gRPC and the v2 proto's stubs; its tests' clients (tests/serve)
  libcpp-httplib-dev libgrpc++-dev protobuf-compiler-grpc python3-grpcio python3-protobuf python3-requests
  # GPU backends: HIP from Debian (hipcc, libamdhip64-dev); CUDA comes from /usr/local/cuda when present.
  # Each is skipped at configure time when its toolkit is missing (docs/gpu.md).
  hipcc libamdhip64-dev
)

if [ "${1:-}" = --list ]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ] && [ "${OPHOST_APT_UPDATE:-0}" != 1 ]; then
  echo "deps: all ${#packages[@]} Debian packages present"
  exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || {
    echo "deps: missing packages: ${missing[*]}" >&2
    echo "deps: run as root: apt-get install -y ${missing[*]}" >&2
    exit 1
  }
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
echo "deps: installing ${missing[*]:-(refresh)}"
"${sudo[@]}" apt-get update -q
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${packages[@]}"
