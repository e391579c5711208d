#!/usr/bin/env bash
# An AVX2-capped copy of the ONNX Runtime peer, so that ophost under ONEDNN_MAX_CPU_ISA=AVX2 meets ORT's AVX2
# kernels on the same core instead of its AVX-512 ones.
#
#   tools/bench/ort_avx2.sh SRC_DIR DST_DIR      (SRC_DIR: a folder made by shared/peers/ort/setup.sh)
#
# ONNX Runtime has no ISA switch: MLAS (and cpuinfo, and ORT's CPUIDInfo) enable their AVX-512 kernels when CPUID
# lists AVX-512F and XGETBV(0) says the OS saves the zmm/opmask state (XCR0 bits 5-7). This script copies SRC_DIR
# to DST_DIR and, in the copy's libonnxruntime.so.1 only, replaces every XGETBV instruction (found by objdump, not
# by a byte search; 0f 01 d0) with `push 7; pop rax` (6a 07 58, the same length): XCR0 then reads x87|SSE|AVX, as
# on a machine or OS without AVX-512 state, and every AVX-512 check in the library fails while the AVX2/FMA ones
# still pass. Nothing else changes; SRC_DIR is left as it is. The copy is for benchmarks only.
# Checked on ORT 1.30 (3 sites): ResNet-18 at 1 thread 18.3 -> 34.8 ms, and perf samples in the library land on
# ymm instructions instead of zmm ones (docs/benchmarks.md). Needs objdump (binutils) and /usr/bin/python3.
# Exit 1 when the library or an XGETBV in it is not found; a no-op when DST_DIR is already patched.
set -euo pipefail
src=${1:?usage: ort_avx2.sh SRC_DIR DST_DIR}
dst=${2:?usage: ort_avx2.sh SRC_DIR DST_DIR}
rel=node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1
[ -f "$src/$rel" ] || { echo "ort_avx2.sh: $src/$rel not found (run shared/peers/ort/setup.sh $src first)" >&2; exit 1; }
if [ -f "$dst/.avx2-capped" ] && cmp -s "$dst/.avx2-capped" <(sha256sum "$src/$rel" | cut -d' ' -f1); then
  exit 0
fi
command -v objdump >/dev/null || { echo "ort_avx2.sh: objdump missing: apt-get install -y binutils" >&2; exit 1; }
rm -rf "$dst"
mkdir -p "$(dirname "$dst")"
cp -a "$src" "$dst"
lib=$dst/$rel
# file offsets of the XGETBV instructions: virtual address - section address + section file offset
objdump -d --no-show-raw-insn "$lib" | awk '$2 == "xgetbv" { sub(":", "", $1); print $1 }' >"$dst/.xgetbv-sites"
objdump -h "$lib" >"$dst/.sections"
/usr/bin/python3 - "$lib" "$dst/.xgetbv-sites" "$dst/.sections" <<'EOF'
import sys
lib, sites_file, sections_file = sys.argv[1:4]
sections = []  # (vma, size, file offset) of each section objdump -h lists
for line in open(sections_file):
    f = line.split()
    if len(f) >= 6 and f[0].isdigit():
        sections.append((int(f[3], 16), int(f[2], 16), int(f[5], 16)))
sites = [int(s, 16) for s in open(sites_file).read().split()]
if not sites:
    sys.exit(f"ort_avx2.sh: no XGETBV instruction in {lib}: this ORT detects AVX-512 another way; not capped")
data = bytearray(open(lib, "rb").read())
for vma in sites:
    sec = [s for s in sections if s[0] <= vma < s[0] + s[1]]
    if not sec:
        sys.exit(f"ort_avx2.sh: XGETBV at {vma:#x} is in no section of {lib}")
    off = vma - sec[0][0] + sec[0][2]
    if data[off:off + 3] != b"\x0f\x01\xd0":
        sys.exit(f"ort_avx2.sh: bytes at {vma:#x} (file offset {off:#x}) are not XGETBV")
    data[off:off + 3] = b"\x6a\x07\x58"  # push 7; pop rax
open(lib, "wb").write(data)
print(f"ort_avx2.sh: {len(sites)} XGETBV sites in {lib} now read XCR0 = 7 (x87|SSE|AVX, no AVX-512 state)",
      file=sys.stderr)
EOF
if objdump -d --no-show-raw-insn "$lib" | awk '$2 == "xgetbv"' | grep -q .; then
  echo "ort_avx2.sh: an XGETBV is left in $lib" >&2; exit 1
fi
sha256sum "$src/$rel" | cut -d' ' -f1 >"$dst/.avx2-capped"
