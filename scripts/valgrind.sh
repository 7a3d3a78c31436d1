#!/usr/bin/env bash
# scripts/valgrind.sh [BIN] - memcheck of every policy, each once on the
# smallest graph where it plans and once where most refuse, of the zoo, the
# profiler, the views and the host replay: any memcheck error or definite
# leak fails the run.  `make valgrind` runs it; CI runs it from `make check`.
#
# Two zoo graphs, profiled with the V100 profile:
#   rnn  rnn-2-1k at batch 16, 4 steps (76 ops): at 0.5x of its peak the
#        planners plan (the seeded search with its MILP seeds and polish, topo,
#        odswap, topo-rc, ideal, optimal-search) and the rule-based baselines
#        refuse with their reasons
#   r18  resnet-18 at batch 32 (240 ops): at 0.9x every policy plans,
#        residual blocks included (smartpool, which never swaps, at 1.05x;
#        hybrid at 0.7x, where its search for a packing budget walks a third
#        of what it walks at 0.9x: 40 s of memcheck instead of 2 minutes)
# A policy that stops planning on r18 fails the run: its planning path would
# go unchecked.  Every policy on the bundled graphs, resnet-50 (617 ops)
# among them, cost 3 times as much here, three quarters of it in hybrid and
# the MILP of optimal and optimal-search on resnet-50; `make test` plans them
# with every policy (test_bound), the sanitizer build runs the search on
# resnet-50 (test/cli/cases.tsv) and the MILP seeds of a graph past 400 ops
# (test_ga).
# SA_VG_TIMES=FILE appends each run's wall seconds and command to FILE.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-bin}
T=$(mktemp -d /tmp/sa_valgrind_XXXXXX)
trap 'rm -rf "$T"' EXIT
runs=0
vg() {
    local t=$EPOCHREALTIME rc=0
    valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
        --show-leak-kinds=definite --track-origins=yes --suppressions=test/valgrind.supp "$@" || rc=$?
    [ -z "${SA_VG_TIMES:-}" ] ||
        printf '%s\t%s\n' "$(awk "BEGIN { printf \"%.2f\", $EPOCHREALTIME - $t }")" "${*#"$BIN/"}" >> "$SA_VG_TIMES"
    runs=$((runs + 1))
    return $rc
}
PROFILE=profiles/v100-pcie3-16gb.json
vg "$BIN/dfg-zoo" rnn-2-1k --batch 16 --seq 4 -o "$T/rnn.dfg.json"
vg "$BIN/dfg-zoo" resnet-18 --batch 32 -o "$T/r18.dfg.json"
for g in rnn r18; do
    vg "$BIN/dfg-profile" "$T/$g.dfg.json" --device "$PROFILE" -o "$T/$g.json"
done

policies=$("$BIN/swapadvisor-search" --list-policies | awk '{print $1}')
search() { # GRAPH POLICY MEMORY [OPTION...]: the exit status of the search
    local g=$1 p=$2 m=$3
    shift 3
    vg "$BIN/swapadvisor-search" "$T/$g.json" --policy "$p" --memory "$m" --threads 1 --generations 2 \
        --population 4 -q -o "$T/$g.$p.plan.json" "$@"
}
refused=0
for p in $policies; do
    # the MILP rows refine until their clock (60 s) runs out under memcheck;
    # at 20 s they still solve and refine (a chains space may be cut: the
    # seeded search on rnn runs the chains without a clock, as its seeds)
    lim=()
    case $p in optimal | optimal-search) lim=(--time-limit 20) ;; esac
    rc=0
    search rnn "$p" 0.5x "${lim[@]}" || rc=$?
    case $rc in
        0) ;;
        5) refused=$((refused + 1)) ;;
        *) echo "valgrind: $p on rnn at 0.5x: exit $rc" >&2; exit 1 ;;
    esac
    case $p in
        smartpool) m=1.05x ;;
        hybrid) m=0.7x ;;
        *) m=0.9x ;;
    esac
    # the search's seeds are the other rows, each checked on its own here
    extra=("${lim[@]}")
    [ "$p" = swapadvisor ] && extra=(--no-seeds)
    rc=0
    search r18 "$p" "$m" "${extra[@]}" || rc=$?
    [ "$rc" = 0 ] || {
        echo "valgrind: $p on r18 at $m: exit $rc (each policy must plan there; pick another memory)" >&2
        exit 1
    }
done
[ "$refused" -gt 0 ] || { echo "valgrind: no policy refused rnn at 0.5x: no refusal was checked" >&2; exit 1; }

# every view and the host replay of a swapping plan and of one that also recomputes
for plan in rnn.topo r18.pooch; do
    g=${plan%%.*}
    grep -q '"kind": *"swap_in"' "$T/$plan.plan.json" || { echo "valgrind: $plan swaps nothing" >&2; exit 1; }
    for f in check summary trace dot memory graph; do
        vg "$BIN/swapplan-emit" "$T/$plan.plan.json" --graph "$T/$g.json" --format "$f" -o "$T/view"
    done
    # bytes scaled into 16 MiB, not the default 1 GiB: the same code, a
    # sixty-fourth of the copying and checking (45 s a replay under memcheck)
    vg "$BIN/swapplan-run" "$T/$plan.plan.json" --graph "$T/$g.json" --backend host --cap 16MiB > /dev/null
done
grep -q '"kind": *"recompute"' "$T/r18.pooch.plan.json" || { echo "valgrind: r18.pooch recomputes nothing" >&2; exit 1; }

# the edge cases of test/cli/data: zero-time ops, a first op that reads only a param
for g in test/cli/data/zero-time-sink.json test/cli/data/persistent-first.json; do
    for p in $policies; do
        vg "$BIN/swapadvisor-search" "$g" --policy "$p" --threads 1 --generations 2 --population 4 -q \
            -o "$T/edge.plan.json" || { rc=$?; [ "$rc" = 5 ] || { echo "valgrind: $p on $g: exit $rc" >&2; exit 1; }; }
    done
done
echo "valgrind: $runs runs clean (memcheck, no definite leaks; $refused policies refused rnn at 0.5x)"
