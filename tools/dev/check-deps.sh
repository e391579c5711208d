#!/usr/bin/env bash
# Checks that tools/dev/deps.sh lists every Debian package the configure and the build read from: maps each
# file read from outside the source and build trees to its package (dpkg's file lists) and fails when a package
# is not in the dependency closure of deps.sh's list installed with --no-install-recommends (Depends and
# PreDepends, any alternative, plus build-essential and the Essential/required packages a fresh Debian 12 has).
# Catches the "libdnnl-dev only recommends ocl-icd-opencl-dev" kind of gap that a CI machine with the package
# already installed does not see.
#
#   tools/dev/check-deps.sh [--build-dir DIR] [--preset NAME] [--deps-file FILE] [--self-test] [-v]
#
# Files read:
#   - a configure of a scratch build dir (/tmp/ophost-check-deps.*) with the build dir's preset, under
#     `strace -f` (successful execve/open/stat/access of absolute paths);
#   - the built tree's header dependencies (`ninja -t deps`) and the programs, libraries and absolute paths of
#     its build commands (`ninja -t commands`). Needs a built tree: default build/ (build-$OPHOST_PRESET when
#     OPHOST_PRESET is set; CI: build-ci).
# Ignored: the source tree, the build dirs, /tmp, /proc, /sys, /dev, $HOME, the ccache dir, and directories.
# Files no package owns are reported by folder: /usr/local/cuda (the optional CUDA toolkit) is allowed, other
# unowned files under /usr or /lib fail the check, anything else (/etc/ld.so.cache, ...) is only reported.
#
# Options:
#   --deps-file FILE  the deps script whose list is checked (default tools/dev/deps.sh; read with `FILE --list`)
#   --self-test       after the check, proves it catches a gap: copies the deps script, drops one needed package
#                     (ocl-icd-opencl-dev, then libdnnl-dev), and expects the check to fail naming it (reuses
#                     the files collected once)
#   --files FILE      reuse a file list saved by --save-files instead of collecting (no strace, no build dir)
#   --save-files FILE save the collected file list (path<TAB>how it was read, per line)
#   -v                also list every package used, and the files owned only through a link target or .py source
# Exit status: 0 all in the closure, 1 a package or file is missing from it, 2 the check could not run.
set -euo pipefail
caller_dir="$PWD"
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
src_root="$PWD"
# Paths given relative to where the script was called from.
abs() { case "$1" in /*|"") printf '%s' "$1" ;; *) printf '%s/%s' "$caller_dir" "$1" ;; esac; }

build_dir="" preset="" deps_file="tools/dev/deps.sh" files_in="" files_out="" self_test=0 verbose=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build_dir="$(abs "$2")"; shift 2 ;;
    --preset) preset="$2"; shift 2 ;;
    --deps-file) deps_file="$(abs "$2")"; shift 2 ;;
    --files) files_in="$(abs "$2")"; shift 2 ;;
    --save-files) files_out="$(abs "$2")"; shift 2 ;;
    --self-test) self_test=1; shift ;;
    -v) verbose=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "check-deps: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done

say() { echo "check-deps: $*"; }
now() { date +%s.%N; }
secs_since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
t_all="$(now)"

for tool in python3 dpkg-query apt-cache; do
  command -v "$tool" >/dev/null || { say "needs $tool (tools/dev/deps.sh installs it)"; exit 2; }
done
[ -f "$deps_file" ] || { say "no deps script $deps_file"; exit 2; }

work="$(mktemp -d /tmp/ophost-check-deps.XXXXXX)"
trap 'rm -rf "$work"' EXIT

# The Python half: `collect` turns strace logs and ninja's deps/commands into a file list, `analyze` maps the
# list to packages and checks them against the closure of a deps script's list.
cat >"$work/check_deps.py" <<'PY'
import collections, glob, os, re, shlex, shutil, subprocess, sys

def norm(p):
    return os.path.normpath(p) if p.startswith('/') else None

def under(p, roots):
    return any(p == r or p.startswith(r.rstrip('/') + '/') for r in roots)

# ---------------------------------------------------------------------------------------------------- collect
# Programs include(CTest) looks for to drive a dashboard (cache variables of the configure): found when
# present, not needed to configure, build or test.
CTEST_OPTIONAL = ('GITCOMMAND', 'HGCOMMAND', 'CVSCOMMAND', 'SVNCOMMAND', 'BZRCOMMAND', 'P4COMMAND',
                  'MEMORYCHECK_COMMAND', 'COVERAGE_COMMAND', 'SLURM_SBATCH_COMMAND', 'SLURM_SRUN_COMMAND')

def collect(out_path, src_root, build_dir, trace_dir, cache_txt, deps_txt, commands_txt, *excluded):
    excluded = [os.path.realpath(e) for e in excluded if e] + list(excluded)
    excluded = [e for e in excluded if e and e != '/']
    found = collections.defaultdict(set)  # path -> how it was seen

    optional = set()
    if cache_txt and os.path.exists(cache_txt):
        with open(cache_txt, errors='replace') as fh:
            for line in fh:
                name, _, value = line.strip().partition('=')
                if name.split(':')[0] in CTEST_OPTIONAL and value.startswith('/'):
                    optional |= {os.path.normpath(value), os.path.realpath(value)}
    cache_files = []  # every file the configure recorded as found (FILEPATH entries: compilers, libraries)
    if cache_txt and os.path.exists(cache_txt):
        with open(cache_txt, errors='replace') as fh:
            for line in fh:
                name, _, value = line.strip().partition('=')
                if name.endswith(':FILEPATH') and value.startswith('/') and name.split(':')[0] not in CTEST_OPTIONAL:
                    cache_files.append(value)

    def add(p, origin):
        p = norm(p)
        if p is None or under(p, excluded):
            return
        rp = os.path.realpath(p)
        if under(rp, excluded) or not os.path.exists(p) or os.path.isdir(p):
            return
        found[p].add(origin)

    # strace -ff: one file per process, `syscall(args) = ret`, only successful calls (-z).
    call = re.compile(r'^(\w+)\((.*)\)\s+=\s+(\d+|0x[0-9a-f]+)')
    first_str = re.compile(r'"((?:[^"\\]|\\.)*)"(\.\.\.)?')
    if trace_dir:
        for f in glob.glob(os.path.join(trace_dir, '*')):
            with open(f, errors='replace') as fh:
                for line in fh:
                    m = call.match(line)
                    if not m:
                        continue
                    s = first_str.search(m.group(2))
                    if not s or s.group(2) or '\\' in s.group(1):
                        continue  # no path, truncated, or escaped characters
                    sc = m.group(1)
                    if sc.startswith('exec'):
                        how = 'exec'
                    elif sc.startswith('open'):
                        how = 'open'
                    else:  # stat/access: a find_*() or PATH search that found it
                        how = 'optional-probe' if norm(s.group(1)) in optional else 'probe'
                    add(s.group(1), how)
    for p in cache_files:
        add(p, 'cache')
    # ninja -t deps: `target: #deps N, ...` then indented paths (relative ones are relative to the build dir).
    if deps_txt:
        with open(deps_txt) as fh:
            for line in fh:
                if line[:1] in (' ', '\t') and line.strip():
                    p = line.strip()
                    add(p if p.startswith('/') else os.path.join(build_dir, p), 'header')
    # ninja -t commands: the programs each command runs, absolute paths in its arguments (link inputs), and
    # the libraries behind -lNAME as the compiler driver finds them.
    if commands_txt:
        libs = set()
        with open(commands_txt) as fh:
            for line in fh:
                for seg in re.split(r'&&|\|\||;|\|', line.strip()):
                    try:
                        toks = shlex.split(seg)
                    except ValueError:
                        toks = seg.split()
                    if not toks:
                        continue
                    prog = toks[0]
                    if prog in (':', 'cd', 'true', 'exit'):
                        prog = None
                    elif not prog.startswith('/'):
                        prog = shutil.which(prog)
                    if prog:
                        add(prog, 'command')
                    for t in toks[1:]:
                        if t.startswith('/'):
                            add(t, 'command')
                        elif t.startswith('-l') and len(t) > 2 and re.match(r'^[\w.+-]+$', t[2:]):
                            libs.add(t[2:])
        cc = shutil.which('cc') or shutil.which('gcc')
        for lib in sorted(libs):
            for name in ('lib%s.so' % lib, 'lib%s.a' % lib):
                if not cc:
                    break
                r = subprocess.run([cc, '-print-file-name=' + name], capture_output=True, text=True)
                p = r.stdout.strip()
                if p.startswith('/') and os.path.exists(p):
                    add(p, 'command')
                    break
    with open(out_path, 'w') as fh:
        for p in sorted(found):
            fh.write('%s\t%s\n' % (p, ','.join(sorted(found[p]))))

# ---------------------------------------------------------------------------------------------------- analyze
USR_TOPS = ('/bin/', '/sbin/', '/lib/', '/lib32/', '/lib64/', '/libx32/')

def usr_variants(p):
    out = {p}
    for top in USR_TOPS:
        if p.startswith(top):
            out.add('/usr' + p)
        if p.startswith('/usr' + top):
            out.add(p[4:])
    return out

def hops(p):
    """The files a path goes through: itself (as given and with its folder resolved), each symlink hop, and
    its real path. Each one's package is needed for the path to exist (alternatives, -dev .so links)."""
    files, cur = [], os.path.normpath(p)
    for _ in range(40):
        d = os.path.realpath(os.path.dirname(cur))
        here = os.path.join(d, os.path.basename(cur))
        files.append([cur, here])
        if not os.path.islink(here):
            break
        cur = os.path.normpath(os.path.join(d, os.readlink(here)))
    files.append([os.path.realpath(p)])
    return files

def pkgname(s):
    return s.split(':', 1)[0].strip()

# Files read because of the caller's environment, not the project: glibc's locale data for $LANG (a fresh
# system without the locales package reads none of it and works the same).
ENV_OPTIONAL = ('/usr/share/locale/', '/usr/lib/locale/')

# Read by the Python interpreter's start-up and metadata scans (FindPython3 / pybind11 run python3 at configure
# time): every installed distribution's .pth file and egg-info/dist-info metadata; setuptools, which its .pth
# shim loads when CMake's FindPython tries `from distutils import sysconfig` (it falls back to the standard
# sysconfig module when there is no distutils); and what other .pth files of the environment import (certifi,
# for a CA-injecting .pth). Whatever happens to be installed is read; a fresh system reads only what it has.
def python_site_scan(p):
    if '/dist-packages/' not in p:
        return False
    return ('.egg-info' in p or '.dist-info/' in p or p.endswith('.pth') or '/_distutils_hack/' in p or
            '/dist-packages/setuptools/' in p or '/dist-packages/pkg_resources/' in p or
            '/dist-packages/certifi/' in p)

def analyze(files_tsv, deps_file, verbose):
    verbose = verbose == '1'
    paths = []  # (path, set of origins)
    with open(files_tsv) as fh:
        for line in fh:
            p, _, origins = line.rstrip('\n').partition('\t')
            if p:
                paths.append((p, set(filter(None, origins.split(','))) or {'?'}))

    # The package list, as the deps script itself prints it.
    r = subprocess.run(['bash', deps_file, '--list'], capture_output=True, text=True)
    listed = [w for w in r.stdout.split() if re.match(r'^[a-z0-9][a-z0-9+.-]+$', w)]
    if r.returncode != 0 or not listed:
        print('check-deps: `%s --list` failed or printed nothing:\n%s' % (deps_file, r.stderr), file=sys.stderr)
        return 2

    # Every file each path goes through, with all its /usr-merge spellings.
    per_path = {}
    wanted = set()
    for p, _ in paths:
        hs = [set().union(*(usr_variants(c) for c in h)) for h in hops(p)]
        per_path[p] = hs
        for h in hs:
            wanted |= h
    # Pyc files written by py3compile at install time belong to the package of their .py.
    pyc = re.compile(r'^(.*)/__pycache__/([^/.]+)\.[^/]*\.pyc$')
    for p, _ in paths:
        m = pyc.match(p)
        if m:
            src = '%s/%s.py' % m.groups()
            per_path[p].append(usr_variants(src))
            wanted |= usr_variants(src)

    # dpkg's file lists, read once, keeping only the paths asked about.
    lists = glob.glob('/var/lib/dpkg/info/*.list')
    owners = collections.defaultdict(set)
    for lst in lists:
        pkg = pkgname(os.path.basename(lst)[:-5])
        with open(lst, errors='replace') as fh:
            for line in fh:
                f = line.rstrip('\n')
                if f in wanted:
                    owners[f].add(pkg)
    # A diverted file lives at its diverted-to name; it belongs to the packages shipping the original, bar the
    # diverter.
    try:
        with open('/var/lib/dpkg/diversions') as fh:
            div = [l.rstrip('\n') for l in fh]
    except FileNotFoundError:
        div = []
    for i in range(0, len(div) - 2, 3):
        frm, to, by = div[i], div[i + 1], div[i + 2]
        if to in wanted:
            for lst in lists:
                pkg = pkgname(os.path.basename(lst)[:-5])
                if pkg != by and frm in open(lst, errors='replace').read().split('\n'):
                    owners[to].add(pkg)

    def is_optional(p, origins):
        if origins <= {'optional-probe'}:
            return 'found by include(CTest) for dashboards, not needed'
        if any(p.startswith(e) for e in ENV_OPTIONAL):
            return "locale data read for $LANG, optional"
        if python_site_scan(p):
            return "Python's scan of installed distributions (.pth files, package metadata), optional"
        return None

    # Per path: the owner set of each file it goes through (any owner of one file will do).
    needs = {}          # path -> list of owner sets
    unowned = []        # (path, origins)
    via_other = []      # not owned itself, owned through a link target or .py source
    optional = collections.defaultdict(set)  # why -> packages (or folders)
    for p, origins in sorted(paths):
        sets = []
        for h in per_path[p]:
            o = set()
            for c in h:
                o |= owners.get(c, set())
            if o and o not in sets:
                sets.append(o)
        why = is_optional(p, origins)
        if why:
            for o in sets or [{'(no package) ' + os.path.dirname(p)}]:
                optional[why] |= o
        elif sets:
            needs[p] = sets
            if not any(owners.get(c) for c in per_path[p][0]):
                via_other.append(p)
        else:
            unowned.append((p, origins))

    # The closure: deps list + build-essential + installed Essential/required packages, recursively through
    # Depends and PreDepends (any alternative, providers of virtual packages), never Recommends.
    q = subprocess.run(['dpkg-query', '-W', '-f=${db:Status-Abbrev}\t${Package}\t${Essential}\t${Priority}\n'],
                       capture_output=True, text=True).stdout
    installed, base = set(), set()
    for line in q.splitlines():
        st, pkg, ess, prio = (line.split('\t') + ['', '', '', ''])[:4]
        if st.startswith('ii'):
            installed.add(pkg)
            if ess == 'yes' or prio == 'required':
                base.add(pkg)
    not_installed = [p for p in listed if p not in installed]
    roots = sorted((set(listed) | {'build-essential'} | base) & installed)
    r = subprocess.run(['apt-cache', 'depends', '--no-recommends', '--no-suggests', '--no-conflicts',
                        '--no-breaks', '--no-replaces', '--no-enhances', '--recurse', '--installed'] + roots,
                       capture_output=True, text=True)
    if r.returncode != 0:
        print('check-deps: apt-cache depends failed:\n' + r.stderr, file=sys.stderr)
        return 2
    closure = {pkgname(l) for l in r.stdout.splitlines() if l and not l[0].isspace() and not l.startswith('<')}
    closure |= set(roots)

    used = set()
    for sets in needs.values():
        for st in sets:
            used |= st
    missing = collections.OrderedDict()  # 'pkg' or 'a | b' -> example path
    for p in sorted(needs):
        for st in needs[p]:
            if not (st & closure):
                missing.setdefault(' | '.join(sorted(st)), p)

    # Unowned files, by folder.
    cuda_roots = ['/usr/local/cuda', os.path.realpath('/usr/local/cuda')]
    failing = []
    groups = collections.defaultdict(list)
    for p, origins in unowned:
        if under(p, cuda_roots) or p.startswith('/usr/local/cuda-'):
            groups[('allowed: the optional CUDA toolkit, not a Debian package', '/usr/local/cuda*')].append(p)
            continue
        elif under(p, ['/usr', '/lib', '/bin', '/sbin', '/lib64', '/lib32', '/libx32']):
            kind = 'FAIL: under /usr or /lib, no package owns it'
            failing.append((p, origins))
        else:
            kind = 'reported only'
        groups[(kind, os.path.dirname(p))].append(p)

    def count(pred):
        return sum(1 for _, o in paths if pred(o))
    print('check-deps: %d files read from outside the source/build trees: configure %d (%d executed, %d opened, '
          '%d only found by stat/access), headers %d, build commands %d'
          % (len(paths), count(lambda o: o & {'exec', 'open', 'probe', 'optional-probe'}),
             count(lambda o: 'exec' in o), count(lambda o: 'open' in o and 'exec' not in o),
             count(lambda o: o <= {'probe', 'optional-probe'}), count(lambda o: 'header' in o),
             count(lambda o: 'command' in o)))
    print('check-deps: %d owned by %d packages, %d unowned, %d optional (not counted)'
          % (len(needs), len(used), len(unowned), sum(1 for p, o in paths if is_optional(p, o))))
    print('check-deps: closure of %s (%d packages) + build-essential + %d Essential/required, Depends and '
          'PreDepends only: %d installed packages' % (deps_file, len(listed), len(base), len(closure)))
    if not_installed:
        print('check-deps: note: listed but not installed here (not checked): ' + ' '.join(not_installed))
    if optional:
        for why, pkgs in sorted(optional.items()):
            print('check-deps: optional, not counted (%s): %s' % (why, ' '.join(sorted(pkgs))))
    if groups:
        print('check-deps: files no package owns, by folder:')
        for (kind, d), ps in sorted(groups.items(), key=lambda kv: (not kv[0][0].startswith('FAIL'), kv[0][1])):
            ex = ', '.join(os.path.basename(x) for x in ps[:3]) + (', ...' if len(ps) > 3 else '')
            print('    %-46s %4d file(s)  [%s]  e.g. %s' % (d, len(ps), kind, ex))
    if verbose:
        print('check-deps: packages used: ' + ' '.join(sorted(used)))
        for p in via_other:
            print('check-deps: not owned itself, owned through its link target or .py source: ' + p)
    rc = 0
    if failing:
        rc = 1
        print('check-deps: FAIL: %d file(s) under /usr or /lib that no Debian package owns '
              '(installed by hand? deps.sh cannot provide them):' % len(failing))
        for p, origins in failing:
            print('    %s  (%s)' % (p, ','.join(sorted(origins))))
    if missing:
        rc = 1
        print('check-deps: FAIL: %d package(s) used by the configure/build but not in the closure of %s '
              'installed with --no-install-recommends (add them to its list):' % (len(missing), deps_file))
        for pkg, ex in missing.items():
            print('    %-28s e.g. %s' % (pkg, ex))
    if rc == 0:
        print('check-deps: OK: %d files, %d packages, all in the closure of %s' % (len(paths), len(used), deps_file))
    return rc

if __name__ == '__main__':
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == 'collect':
        collect(*args)
        sys.exit(0)
    sys.exit(analyze(*args))
PY

files="$work/files.tsv"
if [ -n "$files_in" ]; then
  cp "$files_in" "$files"
  say "file list from $files_in ($(wc -l <"$files") files)"
else
  command -v strace >/dev/null || { say "needs strace (tools/dev/deps.sh installs it)"; exit 2; }
  command -v ninja >/dev/null || { say "needs ninja (tools/dev/deps.sh installs it)"; exit 2; }
  if [ -z "$build_dir" ]; then
    build_dir=build
    [ -z "${OPHOST_PRESET:-}" ] || [ "$OPHOST_PRESET" = default ] || build_dir="build-$OPHOST_PRESET"
  fi
  if [ -z "$preset" ]; then
    case "$(basename "$build_dir")" in
      build) preset=default ;;
      build-*) preset="$(basename "$build_dir")"; preset="${preset#build-}" ;;
      *) preset=default ;;
    esac
  fi
  [ -d "$build_dir" ] || { say "no build dir $build_dir (build it first: tools/dev/build.sh)"; exit 2; }
  build_dir="$(cd "$build_dir" && pwd)"
  [ -f "$build_dir/.ninja_deps" ] || { say "$build_dir is not a built Ninja tree (build first)"; exit 2; }
  # The same compiler launcher the build uses (build.sh, .ci/run): its program is checked too.
  if [ -z "${OPHOST_COMPILER_LAUNCHER+x}" ] && command -v ccache >/dev/null; then
    export OPHOST_COMPILER_LAUNCHER=ccache
  fi
  ccache_dir="$(ccache -k cache_dir 2>/dev/null || true)"

  t="$(now)"
  mkdir "$work/trace"
  rc=0
  if strace -f -qq -o /dev/null true 2>/dev/null; then
    strace -f -ff --seccomp-bpf -z -qq -s 4096 -o "$work/trace/t" \
      -e trace=execve,execveat,open,openat,openat2,stat,lstat,newfstatat,statx,access,faccessat,faccessat2 \
      cmake --preset "$preset" -B "$work/build" >"$work/configure.log" 2>&1 || rc=$?
  else
    # A container that forbids ptrace: the configure's own record of what it found (CMakeCache.txt paths) and
    # the build's header and command lists still cover every library and header the build uses.
    say "WARNING: strace cannot trace here (ptrace not permitted); the configure runs untraced and only its" \
        "CMakeCache.txt paths are checked from it"
    cmake --preset "$preset" -B "$work/build" >"$work/configure.log" 2>&1 || rc=$?
  fi
  if [ "$rc" -ne 0 ]; then
    say "configure (preset $preset) failed under strace, exit $rc; its log ends with:"
    tail -n 30 "$work/configure.log" | sed 's/^/    /'
    exit 2
  fi
  say "configure (preset $preset, scratch build dir) under strace: $(secs_since "$t") s," \
      "$(find "$work/trace" -type f | wc -l) processes"
  t="$(now)"
  ninja -C "$build_dir" -t deps >"$work/deps.txt"
  ninja -C "$build_dir" -t commands >"$work/commands.txt"
  python3 "$work/check_deps.py" collect "$files" "$src_root" "$build_dir" "$work/trace" \
    "$work/build/CMakeCache.txt" "$work/deps.txt" \
    "$work/commands.txt" "$src_root" "$build_dir" "$work" /tmp /proc /sys /dev "${HOME:-}" "$ccache_dir"
  say "$(grep -c '^[[:space:]]' "$work/deps.txt" || true) header deps and $(wc -l <"$work/commands.txt")" \
      "commands of $build_dir read, file list made: $(secs_since "$t") s"
fi
[ -z "$files_out" ] || cp "$files" "$files_out"

rc=0
t="$(now)"
python3 "$work/check_deps.py" analyze "$files" "$deps_file" "$verbose" || rc=$?
say "mapped and checked in $(secs_since "$t") s (total $(secs_since "$t_all") s)"
[ "$rc" -le 1 ] || exit "$rc"

if [ "$self_test" = 1 ]; then
  # Drop one needed package from a copy of the deps script; the check against the copy must fail naming it.
  st_rc=0
  for pkg in ocl-icd-opencl-dev libdnnl-dev; do
    copy="$work/selftest-$pkg/deps.sh"
    mkdir -p "$(dirname "$copy")"
    sed -E "s/(^|[[:space:]])${pkg//./\\.}([[:space:]]|\$)/\\1\\2/g" "$deps_file" >"$copy"
    # (Lists captured first: grep -q closing the pipe early would fail the pipeline under pipefail.)
    before="$(bash "$deps_file" --list)" after="$(bash "$copy" --list)"
    if ! grep -qx -- "$pkg" <<<"$before" || grep -qx -- "$pkg" <<<"$after" ||
       [ "$(wc -l <<<"$after")" -ne $(($(wc -l <<<"$before") - 1)) ]; then
      say "self-test: could not remove $pkg from a copy of $deps_file"; st_rc=1; continue
    fi
    out="$work/selftest-$pkg/out"
    r=0
    python3 "$work/check_deps.py" analyze "$files" "$copy" 0 >"$out" 2>&1 || r=$?
    named="$(sed -n '/package(s) used by/,$p' "$out")"
    if [ "$r" -eq 1 ] && grep -qE "^    (.* \| )?${pkg//./\\.}( |\$)" <<<"$named"; then
      say "self-test: PASS: without $pkg the check fails (exit 1) naming it:"
      sed 's/^/    /' <<<"$named"
    else
      say "self-test: FAIL: without $pkg the check exited $r and did not name it:"
      sed 's/^/    /' "$out"
      st_rc=1
    fi
  done
  if [ "$st_rc" -eq 0 ]; then say "self-test: passed"; else say "self-test: failed"; rc=1; fi
fi
exit "$rc"
