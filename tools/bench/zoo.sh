#!/usr/bin/env bash
# The model zoo, ophost against ONNX Runtime 1.30 (shared/peers/ort), interleaved in one run, one table.
#
#   tools/bench/zoo.sh [--threads N|all] [--runs N] [--rounds R] [--isa native|avx2|both] [--block-s S]
#                      [--omp-env] [--only REGEX] [--zoo DIR]
#
# Models: tools/bench/zoo/models.tsv (zoo models fetched by tools/bench/zoo/fetch.sh, PP-OCRv4 det when present,
# torch/ exported by tools/bench/zoo/export_torch.py when python3-torch is installed); both scripts run first and
# are no-ops when their files are there. For each model and ISA, in this order:
#   1. `ophost run --random --output-dir` (load time = session create, outputs, exit status, peak RSS) and
#      `ort-run.js --random --out --iters 1` (create_ms, outputs): max abs error per output, and relative to
#      max|ORT|, on the same deterministic input (both sides fill it with fmix32 of the element index);
#   2. R rounds (default 3) of one `ophost bench --random --json -` block then one `ort-run.js` block, each with
#      the same warm-up and the same number of timed runs: N (--runs, default 20), fewer so that a block takes
#      about S seconds (--block-s, default 1.5; first runs' time as the estimate), at least 3; a model slower
#      than 1 s per run gets 1 warm-up.
# median = median of the blocks' medians (ophost p50, ORT median_ms); min = the smallest run of all blocks;
# ratio = ophost median / ORT median. Peak RSS (/usr/bin/time -f %M) is the largest over a side's processes;
# ORT's includes Node.js (the baseline of node + onnxruntime-node loaded is printed under the table).
# --isa avx2 runs ophost with ONEDNN_MAX_CPU_ISA=AVX2 (and DNNL_MAX_CPU_ISA, the same cap in older oneDNN; it caps
# onnx-core's Highway kernels too) and ONNX Runtime from an AVX2-capped copy of the peer (tools/bench/ort_avx2.sh:
# ORT has no ISA switch, the copy's library reads XCR0 without the AVX-512 state), so both sides run AVX2 code on
# the same core, as on a machine without AVX-512; native is what /proc/cpuinfo offers, on both sides (oneDNN's own
# ISA line is printed for each). --threads (default 1; all = nproc) is given to both sides. --omp-env also sets
# OMP_NUM_THREADS to that number for ophost (oneDNN's OpenMP team; without it the team is whatever ophost sets,
# and the CPU % column shows when that is more than --threads).
# A model that fails on ophost is a row with the exit status and the first line of the error.
# Env: BUILD (default build), ORT_DIR (default $BUILD/ort; installed with shared/peers/ort/setup.sh when
# missing), ORT_AVX2_DIR (default $BUILD/ort-avx2; made from ORT_DIR by tools/bench/ort_avx2.sh when missing),
# OPHOST_ZOO_DIR (default $BUILD/zoo), ZOO_TIMEOUT (seconds per process, default 600).
# The table (markdown) goes to stdout and to ZOO_DIR/results/; progress to stderr.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
THREADS=1 RUNS=20 ROUNDS=3 ISA=native BLOCK_S=1.5 ONLY="" OMP_ENV=0
BUILD=${BUILD:-build}
ZOO=${OPHOST_ZOO_DIR:-$BUILD/zoo}
usage() { sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; }  # the comment block at the top
while [ $# -gt 0 ]; do
  case $1 in
    --threads) THREADS=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --isa) ISA=$2; shift 2 ;;
    --block-s) BLOCK_S=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --omp-env) OMP_ENV=1; shift ;;
    --zoo) ZOO=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "zoo.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
done
[ "$THREADS" = all ] && THREADS=$(nproc)
case $ISA in native) ISAS=(native) ;; avx2) ISAS=(avx2) ;; both) ISAS=(native avx2) ;;
  *) echo "zoo.sh: --isa must be native, avx2 or both" >&2; exit 2 ;; esac
[[ $THREADS =~ ^[0-9]+$ && $RUNS =~ ^[0-9]+$ && $ROUNDS =~ ^[0-9]+$ ]] ||
  { echo "zoo.sh: --threads, --runs and --rounds take numbers" >&2; exit 2; }
OPHOST=$BUILD/bin/ophost
ORT_DIR=${ORT_DIR:-$BUILD/ort}
PEER=$(cd ../shared/peers/ort 2>/dev/null && pwd || echo /work/shared/peers/ort)
TO=${ZOO_TIMEOUT:-600}
PY=/usr/bin/python3
log() { echo "[zoo] $*" >&2; }

# --- models: fetch (no-op when present), export (cached), ORT peer (once)
tools/bench/zoo/fetch.sh "$ZOO" >&2 || log "fetch.sh reported a problem (above); going on with the models there"
if $PY -c 'import torch, torchvision' 2>/dev/null; then
  $PY tools/bench/zoo/export_torch.py "$ZOO/torch" >&2 || log "export_torch.py failed (above)"
else
  log "python3-torch not installed: torch/ models are skipped" \
      "(apt-get install -y --no-install-recommends python3-torch python3-torchvision)"
fi
[ -d "$ORT_DIR/node_modules/onnxruntime-node" ] || bash "$PEER/setup.sh" "$ORT_DIR" >&2
ORT_AVX2_DIR=${ORT_AVX2_DIR:-$BUILD/ort-avx2}
if [[ " ${ISAS[*]} " == *" avx2 "* ]]; then
  tools/bench/ort_avx2.sh "$ORT_DIR" "$ORT_AVX2_DIR" || { log "cannot make the AVX2-capped ORT (above)"; exit 1; }
fi
command -v /usr/bin/time >/dev/null || { log "/usr/bin/time missing: apt-get install -y time"; exit 1; }

# --- the machine
cpu_isa() {  # oneDNN's name of the best ISA the CPU flags offer
  local f; f=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
  if [[ $f == *" amx_tile "* && $f == *" avx512f "* ]]; then echo avx512_core_amx
  elif [[ $f == *" avx512_bf16 "* ]]; then echo avx512_core_bf16
  elif [[ $f == *" avx512_vnni "* ]]; then echo avx512_core_vnni
  elif [[ $f == *" avx512f "* && $f == *" avx512bw "* && $f == *" avx512vl "* ]]; then echo avx512_core
  elif [[ $f == *" avx2 "* ]]; then echo avx2
  else echo "sse41 or less"; fi
}
NATIVE=$(cpu_isa)
isa_label() { if [ "$1" = native ]; then echo "native ($NATIVE)"; else echo "avx2 (capped)"; fi; }
isa_env() {  # environment of the ophost side
  if [ "$1" = avx2 ]; then echo -n "ONEDNN_MAX_CPU_ISA=AVX2 DNNL_MAX_CPU_ISA=AVX2 "; fi
  if [ "$OMP_ENV" = 1 ]; then echo -n "OMP_NUM_THREADS=$THREADS"; fi
}

wait_bin() { for _ in $(seq 60); do [ -x "$OPHOST" ] && return; sleep 1; done; }  # another build may relink it
ort_dir() { if [ "$1" = avx2 ]; then echo "$ORT_AVX2_DIR"; else echo "$ORT_DIR"; fi; }
ort_label() { if [ "$1" = avx2 ]; then echo "avx2 (capped copy, tools/bench/ort_avx2.sh)"; else echo "native ($NATIVE)"; fi; }

# run a command with /usr/bin/time and a timeout: $1.out, $1.err, $1.rc (128+N: signal N), $1.rss (KiB; the
# largest of the command's processes), $1.cpu (CPU time / wall time, %: ~100 for one busy thread)
timed() {
  local p=$1; shift
  /usr/bin/time -f '%M %P' -o "$p.time" timeout -k 10 "$TO" "$@" >"$p.out" 2>"$p.err"
  echo $? >"$p.rc"
  local last; last=$(tail -1 "$p.time" 2>/dev/null)
  [[ $last =~ ^([0-9]+)\ ([0-9]+)%$ ]] || last="0 0%"
  echo "${last%% *}" >"$p.rss"
  last=${last#* }; echo "${last%\%}" >"$p.cpu"
}
jnum() { sed -n "s/.*\"$1\":\\([-0-9.e]*\\).*/\\1/p" "$2" | tail -1; }  # a number from a JSON line
err_line() {  # first line of an error: a line naming an error, else the first line
  local l; l=$(grep -m1 -i 'error\|terminate\|what()\|fault\|abort' "$1" || head -1 "$1")
  echo "${l:-no message}" | cut -c1-160 | tr '\t|' '  '
}
rc_text() {
  case $1 in 0) echo 0 ;; 124) echo "124 (timeout ${TO}s)" ;; 134) echo "134 (SIGABRT)" ;; 137) echo "137 (SIGKILL)" ;;
    139) echo "139 (SIGSEGV)" ;; *) echo "$1" ;; esac
}
median() { sort -g | awk '{a[NR]=$1} END { if (NR == 0) print "-"; else if (NR % 2) print a[(NR+1)/2];
  else printf "%.6g\n", (a[NR/2] + a[NR/2+1]) / 2 }'; }
minimum() { sort -g | head -1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/zoo-bench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
ROWS=$WORK/rows.tsv ERRS=$WORK/errors.tsv
: >"$ROWS"; : >"$ERRS"

declare -A ONEDNN_ISA
onednn_isa() {  # oneDNN's own line for an ISA setting, from a verbose run of a small Conv model
  local m="$ZOO/embedding_model.onnx" line
  [ -f "$m" ] || { echo "?"; return; }
  # shellcheck disable=SC2046  # isa_env prints NAME=VALUE words
  line=$(env $(isa_env "$1") ONEDNN_VERBOSE=1 DNNL_VERBOSE=1 "$OPHOST" run "$m" --random --shape input_1=1,76,32,1 \
    --threads 1 2>/dev/null | grep -m1 'isa:' | sed 's/.*isa://')
  echo "${line:-?}"
}

START=$(date +%s)
log "$(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), threads $THREADS, rounds $ROUNDS, runs <= $RUNS per block"
for isa in "${ISAS[@]}"; do ONEDNN_ISA[$isa]=$(onednn_isa "$isa"); log "ISA $(isa_label "$isa"): oneDNN says ${ONEDNN_ISA[$isa]}"; done

while IFS=$'\t' read -r file inputs expect tol _; do
  case $file in ''|'#'*|file) continue ;; esac
  [ -z "$ONLY" ] || [[ $file =~ $ONLY ]] || continue
  name=$(basename "$file" .onnx)
  model=$ZOO/$file
  if [ ! -f "$model" ]; then
    for isa in "${ISAS[@]}"; do
      printf '%s\t%s\t%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\tabsent from %s\n' "$name" "$(isa_label "$isa")" \
        "$THREADS" "$ZOO" >>"$ROWS"
    done
    log "$name: absent, skipped"; continue
  fi
  shape_args=() rnd_args=()
  IFS=';' read -ra ins <<<"$inputs"
  for i in "${ins[@]}"; do shape_args+=(--shape "$i"); rnd_args+=(--random "$i"); done
  for isa in "${ISAS[@]}"; do
    W=$WORK/$name.$isa; mkdir -p "$W"
    E=$(isa_env "$isa")
    ORT_CMD=(env NODE_PATH="$(ort_dir "$isa")/node_modules" node "$PEER/ort-run.js")
    t0=$(date +%s)
    # 1. one run each: load time, outputs, exit status
    wait_bin
    timed "$W/oph-run" env $E "$OPHOST" run "$model" --random "${shape_args[@]}" \
      --threads "$THREADS" --output-dir "$W/oph"
    oph_rc=$(cat "$W/oph-run.rc"); rcs=("$oph_rc")
    # usable: it ran the model and wrote its outputs (a crash at exit, after that, is reported but still measured)
    oph_ok=0
    grep -q '^time: plugins' "$W/oph-run.out" && grep -q '^wrote ' "$W/oph-run.out" && oph_ok=1
    timed "$W/ort-run" "${ORT_CMD[@]}" --model "$model" "${rnd_args[@]}" --threads "$THREADS" --warmup 0 \
      --iters 1 --out "$W/ort"
    ort_rc=$(cat "$W/ort-run.rc")
    oph_load=$(sed -n 's/^time: plugins [0-9.]* ms, load \([0-9.]*\) ms, run \([0-9.]*\) ms$/\1/p' "$W/oph-run.out")
    oph_est=$(sed -n 's/^time: plugins [0-9.]* ms, load [0-9.]* ms, run \([0-9.]*\) ms$/\1/p' "$W/oph-run.out")
    tail -1 "$W/ort-run.out" >"$W/ort-run.json"
    ort_create=$(jnum create_ms "$W/ort-run.json"); ort_est=$(jnum median_ms "$W/ort-run.json")
    oph_rss=$(cat "$W/oph-run.rss"); ort_rss=$(cat "$W/ort-run.rss"); oph_cpu=0 ort_cpu=0
    status=""
    if [ "$oph_rc" != 0 ] && [ "$oph_ok" = 1 ]; then
      status="ophost run exit $(rc_text "$oph_rc") after writing its outputs (crash at exit)"
    elif [ "$oph_rc" != 0 ]; then
      status="ophost FAILED, exit $(rc_text "$oph_rc"): $(err_line "$W/oph-run.err")"
      [ "$expect" = ok ] || status="expected: $expect; $status"
    fi
    if [ "$ort_rc" != 0 ]; then status="${status:+$status; }ORT failed: $(err_line "$W/ort-run.err")"; fi
    # accuracy, from the first runs
    if [ "$oph_ok" = 1 ] && [ "$ort_rc" = 0 ]; then
      $PY tools/bench/zoo/npy_diff.py "$W/ort-run.json" "$W/ort" "$W/oph" >"$W/diff.tsv" 2>"$W/diff.err" ||
        printf '?\tnan\tnan\tnpy_diff failed: %s\n' "$(head -1 "$W/diff.err")" >"$W/diff.tsv"
      while IFS=$'\t' read -r o a r s; do
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$(isa_label "$isa")" "$o" "$a" "$r" "$s" >>"$ERRS"
      done <"$W/diff.tsv"
    fi
    # 2. interleaved latency blocks, as many timed runs on both sides
    est=$(awk -v a="${oph_est:-0}" -v b="${ort_est:-0}" 'BEGIN { print (a > b ? a : b) }')
    n=$(awk -v e="$est" -v r="$RUNS" -v s="$BLOCK_S" 'BEGIN { n = (e > 0 ? int(s * 1000 / e) : r);
      if (n > r) n = r; if (n < 3) n = 3; print n }')
    wu=$(awk -v e="$est" 'BEGIN { print (e > 1000 ? 1 : 3) }')
    : >"$W/oph.p50"; : >"$W/oph.min"; : >"$W/ort.med"; : >"$W/ort.min"
    for r in $(seq "$ROUNDS"); do
      if [ "$oph_ok" = 1 ]; then
        wait_bin
        timed "$W/oph-b$r" env $E "$OPHOST" bench "$model" --random "${shape_args[@]}" \
          --threads "$THREADS" --warmup "$wu" -n "$n" --json -
        rc=$(cat "$W/oph-b$r.rc"); rcs+=("$rc")
        tail -1 "$W/oph-b$r.out" >"$W/oph-b$r.json"
        jnum p50_ms "$W/oph-b$r.json" >>"$W/oph.p50"; jnum min_ms "$W/oph-b$r.json" >>"$W/oph.min"
        oph_rss=$(( $(cat "$W/oph-b$r.rss") > oph_rss ? $(cat "$W/oph-b$r.rss") : oph_rss ))
        oph_cpu=$(( $(cat "$W/oph-b$r.cpu") > oph_cpu ? $(cat "$W/oph-b$r.cpu") : oph_cpu ))
        if [ "$rc" != 0 ] && [[ $status != *"bench exit"* ]] && [ -s "$W/oph-b$r.json" ] &&
           grep -q p50_ms "$W/oph-b$r.json"; then
          status="${status:+$status; }ophost bench exit $(rc_text "$rc") after its results (crash at exit)"
        elif [ "$rc" != 0 ] && [[ $status != *"bench exit"* ]]; then
          status="${status:+$status; }ophost bench exit $(rc_text "$rc"): $(err_line "$W/oph-b$r.err")"
        fi
      fi
      if [ "$ort_rc" = 0 ]; then
        timed "$W/ort-b$r" "${ORT_CMD[@]}" --model "$model" "${rnd_args[@]}" --threads "$THREADS" \
          --warmup "$wu" --iters "$n"
        tail -1 "$W/ort-b$r.out" >"$W/ort-b$r.json"
        jnum median_ms "$W/ort-b$r.json" >>"$W/ort.med"; jnum min_ms "$W/ort-b$r.json" >>"$W/ort.min"
        ort_rss=$(( $(cat "$W/ort-b$r.rss") > ort_rss ? $(cat "$W/ort-b$r.rss") : ort_rss ))
        ort_cpu=$(( $(cat "$W/ort-b$r.cpu") > ort_cpu ? $(cat "$W/ort-b$r.cpu") : ort_cpu ))
      fi
    done
    oph_med=$(grep . "$W/oph.p50" | median); oph_min=$(grep . "$W/oph.min" | minimum)
    ort_med=$(grep . "$W/ort.med" | median); ort_min=$(grep . "$W/ort.min" | minimum)
    ratio=$(awk -v a="$oph_med" -v b="$ort_med" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }')
    # worst output error: largest relative error
    worst_abs=- worst_rel=-
    if [ -s "$W/diff.tsv" ]; then
      read -r worst_abs worst_rel < <(sort -t$'\t' -k3,3 -g "$W/diff.tsv" | tail -1 | cut -f2,3)
      # outputs over the checker's bound (1e-3 of max|ORT|, or models.tsv's tol for that output)
      over=$(awk -F'\t' -v tol="$tol" 'BEGIN { n = split(tol, t, ";"); for (i = 1; i <= n; i++) {
          split(t[i], kv, "="); b[kv[1]] = kv[2] } }
        { bound = ($1 in b) ? b[$1] : 1e-3; if ($3 != "nan" && $3 + 0 > bound + 0) printf "%s%s rel %s > %s",
          (k++ ? ", " : ""), $1, $3, bound }' "$W/diff.tsv")
      [ -z "$over" ] || status="${status:+$status; }over the check's bound: $over"
      if grep -qv $'\tok$' "$W/diff.tsv"; then
        status="${status:+$status; }$(grep -v $'\tok$' "$W/diff.tsv" | head -1 | cut -f1,4 | tr '\t' ':')"
      fi
    fi
    if [ "$oph_ok" = 1 ] && [ "$expect" != ok ]; then status="${status:+$status; }listed as $expect but ran"; fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$(isa_label "$isa")" \
      "$THREADS" "${oph_load:--}" "${ort_create:--}" "${oph_med:--}" "${ort_med:--}" "${oph_min:--}" \
      "${ort_min:--}" "$ratio" "$worst_abs" "$worst_rel" "$((oph_rss / 1024))" "$((ort_rss / 1024))" \
      "$( [ "$oph_cpu" = 0 ] && echo - || echo "$oph_cpu")" "$( [ "$ort_cpu" = 0 ] && echo - || echo "$ort_cpu")" \
      "$(IFS=,; echo "${rcs[*]}")" "$n" "$status" >>"$ROWS"
    log "$name [$isa]: ophost ${oph_med:-?} ms, ORT ${ort_med:-?} ms, ratio $ratio, exit ${rcs[*]}, n $n," \
        "$(( $(date +%s) - t0 )) s${status:+; $status}"
  done
done < tools/bench/zoo/models.tsv

# --- the table
mkdir -p "$ZOO/results"
OUT=$ZOO/results/zoo-$(date +%Y%m%d-%H%M%S).md
wait_bin
oph_base_rss=$(/usr/bin/time -f %M "$OPHOST" plugins 2>&1 >/dev/null | tail -1)
node_rss=$(NODE_PATH=$ORT_DIR/node_modules /usr/bin/time -f %M node -e "require('onnxruntime-node')" 2>&1 >/dev/null | tail -1)
{
  echo "ophost vs ONNX Runtime 1.30, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')),"
  echo "load at end $(cut -d' ' -f1-3 /proc/loadavg), threads $THREADS$([ "$OMP_ENV" = 1 ] && echo " (ophost with OMP_NUM_THREADS=$THREADS)"), $ROUNDS interleaved rounds, ophost $(git log -1 --format=%h 2>/dev/null)$(git diff --quiet HEAD -- host plugins devices sdk tools/ophost 2>/dev/null || echo '+local changes'), $(( $(date +%s) - START )) s"
  for isa in "${ISAS[@]}"; do echo "ISA $(isa_label "$isa"): oneDNN reports '${ONEDNN_ISA[$isa]}'; ONNX Runtime runs $(ort_label "$isa")"; done
  echo
  echo "| model | ISA (both sides) | thr | load ms ophost / ORT | median ms ophost / ORT | min ms ophost / ORT | ratio | max abs err | rel. to max\|ORT\| | peak RSS MiB ophost / ORT | CPU % ophost / ORT | ophost exit | n | note |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  awk -F'\t' 'function f(x) { return (x ~ /^[0-9.e+-]+$/ && x != "-") ? sprintf("%.4g", x) : x }
    { printf "| %s | %s | %s | %s / %s | %s / %s | %s / %s | %s | %s | %s | %s / %s | %s / %s | %s | %s | %s |\n",
      $1, $2, $3, f($4), f($5), f($6), f($7), f($8), f($9), $10, $11, $12, $13, $14, $15, $16, $17, $18, $19 }' \
    "$ROWS"
  echo
  echo "Per output (ophost vs ORT, first run, same --random input):"
  echo
  echo "| model | ISA | output | max abs err | rel. to max\|ORT\| | |"
  echo "|---|---|---|---|---|---|"
  awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6 }' "$ERRS"
  echo
  echo "load = session create (ophost: runtime.load after plugin discovery; ORT: InferenceSession.create)."
  echo "median = median of the $ROUNDS blocks' medians; min = fastest run; ratio = median ophost / median ORT;"
  echo "n = timed runs per block (each side); ophost exit: \`ophost run\`, then each \`ophost bench\` block."
  echo "CPU % = CPU time / wall time of a latency block (the most of any block): ~100 is one busy thread; more at"
  echo "--threads 1 means a side ran work on more than one core."
  echo "Peak RSS baselines, no model: \`ophost plugins\` (every plugin loaded) ${oph_base_rss:-?} KiB; node with"
  echo "onnxruntime-node loaded ${node_rss:-?} KiB (ORT's figures include Node.js)."
} | tee "$OUT"
log "table written to $OUT"
