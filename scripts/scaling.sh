#!/usr/bin/env bash
# Thread scaling of the genetic search (issue 5): the same search (fixed
# --generations, same --seed) with 1 and N threads; prints evaluations per
# second and checks that the plans are byte-identical.
# Usage: scripts/scaling.sh [MODEL [GENERATIONS [MAXTHREADS]]]
#        (default inception-4 20 $(nproc)); appends to bench/results/scaling.txt
set -euo pipefail
cd "$(dirname "$0")/.."
m=${1:-inception-4}
gens=${2:-20}
max=${3:-$(nproc)}
profile=profiles/v100-pcie3-16gb.json
g=build/zoo/$m.json
mkdir -p build/zoo build/scaling bench/results
[ -s "$g" ] || ./bin/dfg-zoo "$m" -o - | ./bin/dfg-profile - --device "$profile" -o "$g"
{
    echo "# $m, 16 GiB, --generations $gens --seed 1, $(nproc) cores ($(uname -m)), $(date -u +%F)"
    printf '%-8s %10s %10s %12s %9s %s\n' threads evals wall_s evals/s speedup plan
    base=""
    for t in $(seq 1 "$max"); do
        p=build/scaling/$m.$t.json
        ./bin/swapadvisor-search "$g" --generations "$gens" --seed 1 --threads "$t" -q -o "$p"
        read -r evals wall < <(python3 -c "import json,sys; s=json.load(open(sys.argv[1]))['search']; print(s['evaluations'], s['wall_s'])" "$p")
        rate=$(python3 -c "print(f'{$evals / $wall:.1f}')")
        [ -n "$base" ] || base=$rate
        same=$(cmp -s <(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d.pop('search'); print(json.dumps(d, sort_keys=True))" "$p") \
                      <(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d.pop('search'); print(json.dumps(d, sort_keys=True))" "build/scaling/$m.1.json") \
               && echo "same as 1 thread" || echo "DIFFERENT")
        printf '%-8s %10s %10s %12s %8.2fx %s\n' "$t" "$evals" "$wall" "$rate" "$(python3 -c "print($rate / $base)")" "$same"
    done
} | tee -a bench/results/scaling.txt
