#!/usr/bin/env bash
# Sanitizer builds and test runs (issue 7).
#   tools/dev/sanitize.sh asan   every test under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/)
#   tools/dev/sanitize.sh tsan   the concurrency tests under ThreadSanitizer (build-tsan/; only the test
#                                executables and the plugins they load are built)
# Extra arguments go to ctest. Any sanitizer report fails the test that triggered it (halt_on_error,
# -fno-sanitize-recover=undefined, LSan on at exit).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
kind="${1:?usage: tools/dev/sanitize.sh asan|tsan [ctest args...]}"
shift
jobs="${OPHOST_JOBS:-$(nproc)}"
tools/dev/deps.sh
if [ -z "${OPHOST_COMPILER_LAUNCHER+x}" ] && command -v ccache >/dev/null; then
  export OPHOST_COMPILER_LAUNCHER=ccache
fi
umask 022  # plugin folders in the build tree must not be world-writable (the loader refuses them)
here="$(pwd)"
case "$kind" in
  asan)
    # intercept_tls_get_addr=0: the sanitizer runtime of GCC <= 13 / LLVM <= 16 (Debian 12 has GCC 12) takes a
    # dynamic TLS block whose address is 16 bytes past a page boundary for a glibc-2.19 header and reads the two
    # words before it as a range; LeakSanitizer's stop-the-world tracer then dies at exit ("Tracer caught signal
    # 11", "LeakSanitizer has encountered a fatal error") before reporting anything. Dynamically loaded
    # libraries with thread_local data (the plugins, oneDNN, libgomp) running on several threads make it likely.
    # Upstream: google/sanitizers#1322 and #1267, fixed by llvm D147459. The cost: pointers held only in dynamic
    # TLS are not scanned as roots, which can only add leak reports, never hide one.
    # exitcode=86: a report ends the process with 86, never with the 1 of a clean ophost error, so the scripts
    # and tests that run `ophost` and accept a clean failure (tests/hostile, make_cases.py --check,
    # EXPECT_CLEAN_FAILURE) see a sanitizer report as the finding it is (the default, 1, passed for one).
    export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:detect_leaks=1:detect_odr_violation=1:strict_string_checks=1:check_initialization_order=1:detect_stack_use_after_return=0:intercept_tls_get_addr=0:exitcode=86"
    export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=86"
    export LSAN_OPTIONS="suppressions=${here}/tools/dev/lsan.supp:print_suppressions=0"
    # Plugins stay mapped after release (the default, host/plugins/plugin_set.cpp): otherwise memory that
    # oneDNN/libgomp keep in their globals would show up as "<unknown module>" leaks once onnx-core is unloaded.
    cmake --preset asan >/dev/null
    cmake --build --preset asan -j"$jobs"
    # Not under ASan: the packaging script tests (packaging.third_party_pack, .pack_tutorial, .deb) install,
    # cpack and rebuild examples from the tree -- install layout and CMake packaging, which the plain test phase
    # checks; here they cost ~250 s of CPU (xz over the instrumented binaries) and test no memory use of ours.
    # The packaging gtests (pack check, ABI compatibility) do run.
    ctest --preset asan --output-on-failure -j"$jobs" --timeout 900 -E '^packaging\.(third_party_pack|pack_tutorial|deb)$' "$@"
    ;;
  tsan)
    # suppressions name libgomp/libdnnl: they stay mapped (plugins are never unmapped by default)
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=${here}/tools/dev/tsan.supp:report_signal_unsafe=0"
    cmake --preset tsan >/dev/null
    cmake --build --preset tsan -j"$jobs" --target ophost_unit_tests ophost_integration_tests
    # The concurrency tests: the intra-op pool, one session run from eight threads, the parallel (inter-op)
    # execution mode, profiling from the inter-op workers, the node observer called from them. Everything else
    # is single-threaded and covered by the ASan run.
    ctest --preset tsan --output-on-failure -j"$jobs" \
      -R '^(ThreadPool\.|NodeObserver\.|Execution\.(OneSessionFromEightThreads|Parallel|Profile|.*Concurrent|.*Threads))' "$@"
    ;;
  *)
    echo "tools/dev/sanitize.sh: unknown kind '$kind' (asan or tsan)" >&2
    exit 2
    ;;
esac
