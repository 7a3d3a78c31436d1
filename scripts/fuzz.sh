#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS] - builds the libFuzzer targets of test/fuzz/ with
# clang under ASan + UBSan (build-fuzz/), replays the committed seed corpus of
# each (test/fuzz/corpus/TARGET/), then fuzzes each from a scratch copy of it
# with a fixed seed (FUZZ_SEED, default 1) for FUZZ_RUNS inputs (default
# 20000), stopping early after SECONDS (default 30) only if a target is that
# slow; prints executions and coverage per target.  A fixed seed and run count
# make the run the same on every machine with this clang, so CI does not fail
# on whatever a timed run happened to reach; set FUZZ_RUNS=-1 to fuzz for
# SECONDS and explore (found inputs go to build-fuzz/fuzz/, and once fixed
# into the corpus).
# FUZZ_JOBS (default 1) is the build's make -j.
# Needs clang with libFuzzer (clang 14 here); skips, saying so, without it.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-30}
CLANG=${CLANG:-clang}
if ! command -v "$CLANG" > /dev/null; then
    echo "fuzz: no clang on PATH: skipped" >&2
    exit 0
fi
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
make -s -j"${FUZZ_JOBS:-1}" BUILD=build-fuzz BIN=build-fuzz/bin CC="$CLANG" NVCC= OPT=-O1 WARN=-Wall \
    SAN="$SAN -fsanitize=fuzzer-no-link" build-fuzz/libswapadvisor.a
mkdir -p build-fuzz/fuzz
# cJSON, libm, OpenMP and the optional MILP solvers, as the Makefile links them
LIBS=$(make -s --no-print-directory NVCC= print-ldlibs | tail -n 1)
status=0
for src in test/fuzz/fuzz_*.c; do
    t=$(basename "$src" .c)
    name=${t#fuzz_}
    "$CLANG" -std=c11 -D_GNU_SOURCE -O1 -g $SAN -fsanitize=fuzzer -fopenmp -Iinclude -Ilib/include -Ilib "$src" \
        build-fuzz/libswapadvisor.a $LIBS -o "build-fuzz/fuzz/$t"
    seeds=test/fuzz/corpus/$name
    work=$(mktemp -d /tmp/sa_fuzz_XXXXXX)
    cp "$seeds"/* "$work"/ 2>/dev/null || true
    log=build-fuzz/fuzz/$t.log
    # replay, then fuzz for SECS; -rss_limit_mb keeps a run from taking the machine
    if ! "build-fuzz/fuzz/$t" -runs=0 "$seeds" > "$log" 2>&1; then
        echo "fuzz: $t: the seed corpus fails (see $log)"; status=1; rm -rf "$work"; continue
    fi
    if ! "build-fuzz/fuzz/$t" -seed="${FUZZ_SEED:-1}" -runs="${FUZZ_RUNS:-20000}" -max_total_time="$SECS" -rss_limit_mb=2048 -max_len=65536 -timeout=20 \
        -artifact_prefix=build-fuzz/fuzz/"$t"- "$work" >> "$log" 2>&1; then
        echo "fuzz: $t: FAILED (see $log; the input is build-fuzz/fuzz/$t-*)"; status=1
    fi
    stats=$(grep -E '^#[0-9]+' "$log" | tail -1 | sed -E 's/^#([0-9]+)[[:space:]]+[A-Z]+[[:space:]]+/\1 executions, /')
    echo "fuzz: $t: $stats"
    rm -rf "$work"
done
exit $status
