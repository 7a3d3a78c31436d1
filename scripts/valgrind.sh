#!/usr/bin/env bash
# scripts/valgrind.sh [BIN] - memcheck of every policy on the bundled graphs
# (graphs/*.json, profiled with the V100 profile) and of the views and the host
# replay of one plan each: any memcheck error or definite leak fails the run.
# `make valgrind` runs it; CI runs it from `make check`.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-bin}
T=$(mktemp -d /tmp/sa_valgrind_XXXXXX)
trap 'rm -rf "$T"' EXIT
VG=(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite
    --show-leak-kinds=definite --track-origins=yes --suppressions=test/valgrind.supp)
policies=$("$BIN/swapadvisor-search" --list-policies | awk '{print $1}')
runs=0
for g in graphs/*.json; do
    name=$(basename "$g" .json)
    "${VG[@]}" "$BIN/dfg-profile" "$g" --device profiles/v100-pcie3-16gb.json -o "$T/$name.json"
    for p in $policies; do
        # the seeded search runs every other row (each memchecked on its own
        # here) and CBC under memcheck: minutes on resnet-50's MILP seeds and
        # polish, so it runs unseeded but on the smallest graph, rnn-2-1k,
        # which memchecks the seeding and the polish
        extra=()
        [ "$p" = swapadvisor ] && [ "$name" != rnn-2-1k ] && extra=(--no-seeds)
        "${VG[@]}" "$BIN/swapadvisor-search" "$T/$name.json" --policy "$p" --memory 0.5x --threads 1 \
            --generations 2 --population 4 "${extra[@]}" -q -o "$T/$name.$p.plan.json" || {
            rc=$?
            # a refusal (the graph does not fit this policy's rule) is fine; an error is not
            [ "$rc" = 5 ] || { echo "valgrind: $p on $name: exit $rc" >&2; exit 1; }
        }
        runs=$((runs + 1))
    done
    plan="$T/$name.topo.plan.json"
    for f in check summary trace dot memory graph; do
        "${VG[@]}" "$BIN/swapplan-emit" "$plan" --graph "$T/$name.json" --format "$f" -o "$T/view"
        runs=$((runs + 1))
    done
    "${VG[@]}" "$BIN/swapplan-run" "$plan" --graph "$T/$name.json" --backend host > /dev/null
    runs=$((runs + 1))
done
# the edge cases of test/cli/data: zero-time ops, a first op that reads only a param
for g in test/cli/data/zero-time-sink.json test/cli/data/persistent-first.json; do
    for p in $policies; do
        "${VG[@]}" "$BIN/swapadvisor-search" "$g" --policy "$p" --threads 1 --generations 2 --population 4 -q \
            -o "$T/edge.plan.json" || { rc=$?; [ "$rc" = 5 ] || { echo "valgrind: $p on $g: exit $rc" >&2; exit 1; }; }
        runs=$((runs + 1))
    done
done
echo "valgrind: $runs runs clean (memcheck, no definite leaks)"
