#!/usr/bin/env bash
# Proves the README's two commands on a fresh Debian 12: debootstraps bookworm (minbase: only the Essential and
# required packages, as in a Debian 12 container image), puts a clean clone of the repository in it (no
# ../shared beside it), and runs, as root inside the chroot, tools/dev/example.sh then tools/dev/test.sh.
# Each step's result and duration are printed; exit non-zero when one fails. Needs root (debootstrap, chroot,
# mounts) and deb.debian.org.
#
#   tools/dev/fresh-check.sh [--only-configure] [--worktree] [--reuse] [--dir DIR] [--verbose]
#   tools/dev/fresh-check.sh --deb PATH/ophost_VERSION_ARCH.deb [--python-deb PATH/python3-ophost_...deb] [--reuse]
#
#   --only-configure  run tools/dev/deps.sh and `cmake --preset default` only (a few minutes instead of the
#                     full build and test, which take well over 20 minutes on 2 cores)
#   --worktree        copy the working tree (tracked and untracked, not ignored files: uncommitted changes
#                     included, no .git) instead of cloning the committed HEAD
#   --reuse           reuse the debootstrapped base in DIR if there is one (each run still starts from a copy
#                     of that pristine base, so packages installed by an earlier run never leak in)
#   --dir DIR         where the base and the chroot live (default /var/tmp/ophost-fresh)
#   --verbose         stream each step's output (it always goes to DIR/logs/STEP.log)
#   --deb FILE        instead: `apt-get install ./FILE` (the runtime package alone) in the fresh system, then
#                     `ophost plugins` (no rejection allowed) and an example model; fails when the install
#                     pulled in a HIP or CUDA runtime
#   --python-deb FILE with --deb: also `apt-get install ./FILE` (the python3-ophost package), then
#                     `python3 -c 'import ophost'` runs the example model through the installed module
# Environment: OPHOST_FRESH_MIRROR (default http://deb.debian.org/debian).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
repo="$PWD"

dir=/var/tmp/ophost-fresh only_configure=0 worktree=0 reuse=0 verbose=0 deb= python_deb=
while [ $# -gt 0 ]; do
  case "$1" in
    --only-configure) only_configure=1; shift ;;
    --worktree) worktree=1; shift ;;
    --reuse) reuse=1; shift ;;
    --dir) dir="$2"; shift 2 ;;
    --verbose) verbose=1; shift ;;
    --deb) deb="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"; shift 2 ;;
    --python-deb) python_deb="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "fresh-check: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
mirror="${OPHOST_FRESH_MIRROR:-http://deb.debian.org/debian}"

say() { echo "fresh-check: $*"; }
[ "$(id -u)" -eq 0 ] || { say "must run as root (debootstrap, chroot, mounts)"; exit 2; }
case "$dir" in /|"") say "refusing --dir '$dir'"; exit 2 ;; esac
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
base="$dir/base" root="$dir/root" logs="$dir/logs"

declare -a step_names=() step_secs=() step_results=()

# Mount points under $dir, deepest first (also those a killed earlier run left behind).
mounts_under() {
  awk -v d="$1" '{ gsub(/\\040/, " ", $5); if ($5 == d || index($5, d "/") == 1) print $5 }' /proc/self/mountinfo |
    sort -r
}
unmount_all() {
  local m
  for m in $(mounts_under "$dir"); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || say "warning: could not unmount $m"
  done
}
# Processes still running inside the chroot (an interrupted step): found by their root directory.
kill_chroot_procs() {
  [ -d "$root" ] || return 0
  local sig p left
  for sig in TERM KILL; do
    left=0
    for p in /proc/[0-9]*; do
      [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] || continue
      kill -s "$sig" "${p#/proc/}" 2>/dev/null && left=1
    done
    [ "$left" = 0 ] && return 0
    sleep 2
  done
}
finish() {
  local rc=$?
  trap - INT TERM
  kill_chroot_procs
  unmount_all
  if [ "${#step_names[@]}" -gt 0 ]; then
    echo
    say "steps:"
    local i
    for i in "${!step_names[@]}"; do
      printf '    %-34s %8s s  %s\n' "${step_names[$i]}" "${step_secs[$i]}" "${step_results[$i]}"
    done
  fi
  if [ "$rc" -eq 0 ]; then say "result: OK"; else say "result: FAILED (exit $rc); logs in $logs"; fi
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

# step NAME COMMAND...: runs the command with its output in $logs/NAME.log, prints result and duration.
step() {
  local name="$1"
  shift
  local log="$logs/${name//[^A-Za-z0-9._-]/_}.log" start end secs rc=0
  say "==> $name"
  start="$(date +%s.%N)"
  # In the background and waited for, so that a signal to this script is handled at once (finish stops what
  # runs in the chroot and unmounts).
  if [ "$verbose" = 1 ]; then
    { "$@" 2>&1 | tee "$log"; } &
  else
    "$@" >"$log" 2>&1 &
  fi
  wait "$!" || rc=$?
  end="$(date +%s.%N)"
  secs="$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')"
  step_names+=("$name")
  step_secs+=("$secs")
  if [ "$rc" -eq 0 ]; then
    step_results+=("ok")
    say "<== $name: ok, ${secs} s"
  else
    step_results+=("FAILED (exit $rc)")
    say "<== $name: FAILED (exit $rc), ${secs} s; last lines of $log:"
    tail -n 25 "$log" | sed 's/^/    /'
  fi
  return "$rc"
}

# rm -rf that never descends into a mount (the host's /dev, /sys) if one was left behind.
remove_tree() {
  if [ -n "$(mounts_under "$dir")" ]; then
    say "still mounted under $dir, not removing $1:"; mounts_under "$dir" | sed 's/^/    /'; exit 2
  fi
  rm -rf --one-file-system "$1"
}

unmount_all
mkdir -p "$logs"

command -v debootstrap >/dev/null || step "install debootstrap" \
  env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap

# 1. The pristine base system.
if [ "$reuse" = 1 ] && [ -f "$base/.ophost-debootstrap-ok" ]; then
  say "reusing the debootstrapped base in $base ($(cat "$base/.ophost-debootstrap-ok"))"
else
  remove_tree "$base"
  debootstrap_base() {
    debootstrap --variant=minbase bookworm "$base" "$mirror" &&
      # A fresh Debian 12 installation has the updates and security suites too.
      cat >"$base/etc/apt/sources.list" <<EOF &&
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
EOF
      date -u +%Y-%m-%dT%H:%MZ >"$base/.ophost-debootstrap-ok"
  }
  step "debootstrap bookworm (minbase)" debootstrap_base
fi

# 2. A fresh copy of it to work in.
remove_tree "$root"
step "copy base to chroot" cp -a "$base" "$root"
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
# No daemons started by package scripts inside the chroot.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"

# 3. The sources, at /work/ophost with nothing beside it (no ../shared).
commit="$(git -C "$repo" rev-parse HEAD)"
dest="$root/work/ophost"
mkdir -p "$root/work"
if [ "$worktree" = 1 ]; then
  changed="$(git -C "$repo" status --porcelain --untracked-files=normal | wc -l)"
  say "sources: the working tree at $repo (HEAD $commit plus $changed uncommitted/untracked paths), no .git"
  copy_worktree() {
    mkdir -p "$dest"
    (cd "$repo" && git ls-files -z --cached --others --exclude-standard |
      while IFS= read -r -d '' f; do [ -e "$f" ] || [ -L "$f" ] && printf '%s\0' "$f"; done |
      tar --null -T - -cf -) | tar -xf - -C "$dest"
  }
  step "copy working tree" copy_worktree
else
  say "sources: a clone of commit $commit ($(git -C "$repo" log -1 --format='%s' | cut -c1-60)); uncommitted" \
      "changes are NOT included (--worktree includes them)"
  step "git clone (committed HEAD)" git clone --quiet --no-hardlinks "$repo" "$dest"
fi

# 4. The kernel file systems the build and tests use.
# /dev and /sys recursively (dev/pts, dev/shm), made slaves so that unmounting them here never propagates back
# to the host's mounts.
mkdir -p "$root/proc" "$root/sys" "$root/dev"
mount -t proc proc "$root/proc"
for m in sys dev; do
  mount --rbind "/$m" "$root/$m"
  mount --make-rslave "$root/$m"
done

in_chroot() {
  chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    /bin/bash -c "cd /work/ophost && $1"
}

# 5. The README's commands, as root in the fresh system (or the runtime package alone, with --deb).
if [ -n "$deb" ]; then
  [ -f "$deb" ] || { say "no such package: $deb"; exit 2; }
  cp "$deb" "$root/tmp/"
  debname="$(basename "$deb")"
  step "apt-get install ./$debname" in_chroot "apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q /tmp/$debname"
  no_gpu_runtime() {
    if in_chroot "dpkg -l | grep -E '^ii +(libamdhip64|libhsa-runtime|rocm|cuda|libcudart|libcublas)'"; then
      say "the runtime package pulled in a GPU runtime (above)"
      return 1
    fi
  }
  step "no HIP/CUDA runtime installed" no_gpu_runtime
  plugins_clean() {
    in_chroot "ophost plugins" | tee "$logs/plugins.out"
    grep -q " 0 rejected" "$logs/plugins.out"
  }
  step "ophost plugins: 0 rejected" plugins_clean
  step "ophost run an example model" in_chroot \
    'ophost run examples/models/mixed_small.onnx --input x=examples/models/mixed_small.input.x.npy'
  if [ -n "$python_deb" ]; then
    [ -f "$python_deb" ] || { say "no such package: $python_deb"; exit 2; }
    cp "$python_deb" "$root/tmp/"
    pyname="$(basename "$python_deb")"
    step "apt-get install ./$pyname" in_chroot "DEBIAN_FRONTEND=noninteractive apt-get install -y -q /tmp/$pyname"
    step "python3: import ophost, run the example model" in_chroot "python3 -c '
import numpy as np, ophost
s = ophost.InferenceSession(\"examples/models/mixed_small.onnx\")
(y,) = s.run(None, {\"x\": np.load(\"examples/models/mixed_small.input.x.npy\")})
np.testing.assert_allclose(y, np.load(\"examples/models/mixed_small.output.y.npy\"), rtol=1e-4, atol=1e-5)
print(\"import ophost:\", ophost.__file__, ophost.get_available_providers(), y.shape)
'"
  fi
  exit 0
fi
if [ "$only_configure" = 1 ]; then
  step "tools/dev/deps.sh" in_chroot 'tools/dev/deps.sh'
  step "cmake --preset default" in_chroot 'cmake --preset default'
  say "configure succeeded in a fresh Debian 12 (build and tests not run: --only-configure)"
else
  step "tools/dev/example.sh" in_chroot 'tools/dev/example.sh'
  step "tools/dev/test.sh" in_chroot 'tools/dev/test.sh'
fi
