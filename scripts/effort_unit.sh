#!/usr/bin/env bash
# What a unit of the seeds' effort budget costs: hybrid's full run (--policy
# hybrid, no budget) on graphs of 600 to 100,000 ops at 0.5x, its wall time
# against the "work" (ops + tensors per build plus the packing's walk) and
# the "effort" (5 per op and tensor plus the walk: the budget's unit) its
# search block reports.  A unit that tracks time costs about as many ns on
# every graph.
# Usage: scripts/effort_unit.sh [OUT]   (default bench/results/effort_unit.txt)
# Env: GRAPHS (zoo names or chainN; default below), PYTHON (python3).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/results/effort_unit.txt}
py=${PYTHON:-python3}
profile=profiles/v100-pcie3-16gb.json
dir=build/effort_unit
mkdir -p "$dir" "$(dirname "$out")"
tmp=$(mktemp)
{
    printf '# scripts/effort_unit.sh: swapadvisor-search GRAPH --memory 0.5x --policy hybrid (the full run); %s\n' "$profile"
    printf '# %s, %s, %s cores\n' "$(git rev-parse --short HEAD 2>/dev/null)" "$(date -u +%Y-%m-%d)" "$(nproc)"
    printf '%-14s %7s %8s %7s %12s %12s %12s %12s\n' graph ops wall_s builds work effort ns_per_work ns_per_effort
} >"$tmp"
for name in ${GRAPHS:-resnet-50 gpt-12-768 inception-4 nasnet-25 chain10000 chain100000}; do
    g=$dir/$name.json p=$dir/$name.plan.json
    if [ ! -s "$g" ]; then
        case $name in
        chain*) "$py" scripts/chain.py "${name#chain}" "$g" ;;
        *) ./bin/dfg-zoo "$name" | ./bin/dfg-profile - --device "$profile" -o "$g" ;;
        esac || { echo "effort_unit.sh: $name: no graph" >&2; exit 1; }
    fi
    t0=$(date +%s.%N)
    ./bin/swapadvisor-search "$g" --memory 0.5x --policy hybrid -q -o "$p" 2>"$p.err" || {
        echo "effort_unit.sh: $name: $(tail -1 "$p.err")" >&2
        exit 1
    }
    secs=$(echo "$(date +%s.%N) - $t0" | bc)
    "$py" - "$p" "$name" "$secs" >>"$tmp" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s, t = d["search"], float(sys.argv[3])
print("%-14s %7d %8.1f %7d %12d %12d %12.1f %12.1f" % (sys.argv[2], len(d["schedule"]), t, s["builds"], s["work"],
      s["effort"], t * 1e9 / s["work"], t * 1e9 / s["effort"]))
PY
done
mv "$tmp" "$out"
