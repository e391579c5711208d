#!/usr/bin/env bash
# PP-OCRv4 det latency: ophost vs ONNX Runtime 1.30 (shared/peers/ort), same deterministic input, same threads.
#
#   tools/bench/ppocr_compare.sh [RUNS] [THREADS] [HW]     (defaults: 7 runs, 1 thread, 640)
#
# Reports, with the ratio ophost / ORT for each:
#   cold: median over RUNS processes of `ophost run`'s "run" time (one run per process: first-run costs
#         included) -- the only measurement `ophost run` offers until `ophost bench` exists;
#   warm: median of 20 runs after 1 warm-up in one process (a small harness over the embedding API, compiled
#         here against build/), which is what ORT's median_ms measures (3 warm-ups, 10 timed runs).
# Env: BUILD (default build), MODEL, ORT_DIR (default /tmp/ort; set up with shared/peers/ort/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${1:-7}; THREADS=${2:-1}; HW=${3:-640}
BUILD=${BUILD:-build}
MODEL=${MODEL:-../shared/models/ch_PP-OCRv4_det_infer.onnx}
ORT_DIR=${ORT_DIR:-/tmp/ort}
PEER=$(cd ../shared/peers/ort 2>/dev/null && pwd || echo /work/shared/peers/ort)
[ -d "$ORT_DIR/node_modules" ] || bash "$PEER/setup.sh" "$ORT_DIR"
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

ort_json=$(NODE_PATH=$ORT_DIR/node_modules node "$PEER/ort-run.js" --model "$MODEL" --random x=1,3,$HW,$HW \
  --threads "$THREADS" --iters 10 | tail -1)
ort=$(echo "$ort_json" | sed 's/.*"median_ms":\([0-9.]*\).*/\1/')

cold=$(for _ in $(seq "$RUNS"); do
  "$BUILD/bin/ophost" run "$MODEL" --random --shape x=1,3,$HW,$HW --threads "$THREADS" |
    sed -n 's/.*run \([0-9.]*\) ms.*/\1/p'
done | median)

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/warm.cpp" <<'CPP'
#include <ophost/runtime.hpp>
#include <ophost/tensor.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
using namespace ophost;
int main(int argc, char** argv) {
  RuntimeOptions ro;
  ro.intra_op_threads = std::atoi(argv[2]);
  Runtime rt(ro);
  auto s = rt.load(argv[1]);
  const int hw = std::atoi(argv[3]);
  Tensor t(DType::kFloat32, {1, 3, hw, hw});
  float* p = t.data_as<float>();
  for (uint32_t i = 0; i < uint32_t(3 * hw * hw); ++i) {  // ort-run.js randomFill: fmix32(i)
    uint32_t h = i; h ^= h >> 16; h *= 0x85ebca6bu; h ^= h >> 13; h *= 0xc2b2ae35u; h ^= h >> 16;
    p[i] = (h >> 8) / 16777216.0f * 2 - 1;
  }
  std::vector<double> ms;
  for (int i = 0; i < 21; ++i) {
    auto a = std::chrono::steady_clock::now();
    auto out = s->run({{"x", t}});
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  ms.erase(ms.begin());
  std::sort(ms.begin(), ms.end());
  std::printf("%.3f\n", (ms[9] + ms[10]) / 2);
}
CPP
warm=NA
if ${CXX:-g++} -O2 -std=c++20 -Ihost/include -Isdk/include "$tmp/warm.cpp" -L"$BUILD/lib" -lophost \
     -Wl,-rpath,"$PWD/$BUILD/lib" -o "$tmp/warm" 2>"$tmp/cc.log"; then
  warm=$(OPHOST_PLUGIN_PATH="$PWD/$BUILD/lib/ophost/plugins" "$tmp/warm" "$MODEL" "$THREADS" "$HW")
else
  echo "warm harness did not build (see below); cold numbers only" >&2; cat "$tmp/cc.log" >&2
fi

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "NA") print "NA"; else printf "%.2f", a / b }'; }
echo "model $MODEL, input 1x3x${HW}x${HW}, threads $THREADS, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "ORT 1.30 median_ms:            $ort"
echo "ophost warm median (20 runs):  $warm  ratio $(ratio "$warm" "$ort")"
echo "ophost cold median ($RUNS procs):   $cold  ratio $(ratio "$cold" "$ort")"
