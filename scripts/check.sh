#!/usr/bin/env bash
# scripts/check.sh - what `make check` (and CI) runs: the main build and the
# sanitizer build (build-asan/) with CHECK_JOBS jobs (default 2), then these
# phases, CHECK_LANES (default 2) of them at a time, because most keep only
# one core busy:
#   test          CLI cases, Checks, layers, shape, package-test
#   asan-checks-2 the Check suites but bound and search_cli under ASan + UBSan
#   valgrind      memcheck of every policy (build-vg/)
#   test-py       the Python tools' tests (test/py)
#   asan-checks-1 the Check suites bound and search_cli under ASan + UBSan
#   asan-cli      the CLI cases under ASan + UBSan
#   fuzz          the libFuzzer targets (build-fuzz/)
#   nocuda-check  the GPU paths of a build without nvcc (build-nocuda/)
# longest first, so that the lanes end together (docs/robustness.md has
# each phase's time).  Every build inside a phase uses CHECK_JOBS jobs too;
# the phases build into folders of their own, and the main and sanitizer
# builds are done before any starts, so no two write one file.
# A phase's output goes to build/check-PHASE.log and is printed whole when the
# phase ends, with a line "check: PHASE ok (N s)" or "check: PHASE FAILED,
# exit N (N s)", so two phases never interleave.  A failed phase does not stop
# the others; the run fails when any failed.  CHECK_LANES=1 runs the phases
# one after the other, printing as they go.
set -uo pipefail
cd "$(dirname "$0")/.."
MAKE=${MAKE:-make}
JOBS=${CHECK_JOBS:-2}
LANES=${CHECK_LANES:-2}
PHASES=(test asan-checks-2 valgrind test-py asan-checks-1 asan-cli fuzz nocuda-check)
# the suites of asan-checks-1; asan-checks-2 runs the rest
ASAN_SUITES_1="bound,search_cli"
# Two phases share the cores, so the Check suite's per-test timeouts (hang
# guards, not timing tests) get three times their length unless set.
[ "$LANES" -le 1 ] || export CK_TIMEOUT_MULTIPLIER=${CK_TIMEOUT_MULTIPLIER:-3}
mkdir -p build

# The command of phase $1.
phase_cmd() {
    case $1 in
        fuzz)    echo "env FUZZ_JOBS=$JOBS $MAKE --no-print-directory fuzz" ;;
        # the sanitizer build is done: make only runs these
        asan-checks-1) echo "env SA_CHECK_SUITES=$ASAN_SUITES_1 $MAKE --no-print-directory asan-checks" ;;
        asan-checks-2) echo "env SA_CHECK_SUITES=-${ASAN_SUITES_1//,/,-} $MAKE --no-print-directory asan-checks" ;;
        asan-cli) echo "$MAKE --no-print-directory asan-cli" ;;
        # the main build is done: these two only run (a make -j here would hand
        # its job slots down to the make that test_batch runs)
        test|test-py) echo "$MAKE --no-print-directory $1" ;;
        *)       echo "$MAKE -j$JOBS --no-print-directory $1" ;;
    esac
}

declare -A start pid_of
failed=()
t0=$SECONDS

# done_line NAME RC: the closing line of a phase; records a failure.
done_line() {
    local secs=$((SECONDS - start[$1]))
    if [ "$2" = 0 ]; then
        echo "check: $1 ok ($secs s)"
    else
        echo "check: $1 FAILED, exit $2 ($secs s)"
        failed+=("$1")
    fi
}

echo "check: build"
start[build]=$SECONDS
$MAKE -j"$JOBS" --no-print-directory DEV=1 all build/test/run_tests &&
    $MAKE -j"$JOBS" --no-print-directory asan-build
rc=$?
done_line build "$rc"
if [ "$rc" != 0 ]; then
    echo "check: FAILED (the build)"
    exit 1
fi

if [ "$LANES" -le 1 ]; then
    for p in "${PHASES[@]}"; do
        echo "check: $p"
        start[$p]=$SECONDS
        $(phase_cmd "$p")
        done_line "$p" $?
    done
else
    next=0 running=0
    while [ "$next" -lt ${#PHASES[@]} ] || [ "$running" -gt 0 ]; do
        while [ "$running" -lt "$LANES" ] && [ "$next" -lt ${#PHASES[@]} ]; do
            p=${PHASES[$next]}
            next=$((next + 1))
            echo "check: $p started (output in build/check-$p.log until it ends)"
            start[$p]=$SECONDS
            $(phase_cmd "$p") > "build/check-$p.log" 2>&1 &
            pid_of[$!]=$p
            running=$((running + 1))
        done
        wait -n -p done_pid
        rc=$?
        p=${pid_of[$done_pid]}
        running=$((running - 1))
        echo "check: ---- $p ----"
        cat "build/check-$p.log"
        done_line "$p" "$rc"
    done
fi
if [ ${#failed[@]} -gt 0 ]; then
    echo "check: FAILED: ${failed[*]} ($((SECONDS - t0)) s)"
    exit 1
fi
echo "check: all phases ok ($((SECONDS - t0)) s)"
