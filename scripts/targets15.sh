#!/usr/bin/env bash
# Issue 15's targets: the seeded search (the swapadvisor row) on the issue's
# graphs and memories, V100 profile, beside the fastest other policy (its
# best seed, from the plan's search block).  Every plan is checked with
# swapplan-emit --format check --strict.
# Usage: scripts/targets15.sh [OUT]   (default bench/results/seeded_search.txt)
# Env: GENERATIONS (30), THREADS (1), SEED (1), CASES ("model:memory:generations ..."),
#      PROFILE (profiles/v100-pcie3-16gb.json).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/results/seeded_search.txt}
gens=${GENERATIONS:-30}
threads=${THREADS:-1}
seed=${SEED:-1}
profile=${PROFILE:-profiles/v100-pcie3-16gb.json}
cases=${CASES:-resnet-50:0.5x resnet-50:0.25x vgg-16:0.5x vgg-16:0.5x:400 gpt-12-768:0.5x inception-4:0.5x resnet-50:1x nasnet-25:16GiB}
dir=build/targets15
mkdir -p "$dir" "$(dirname "$out")"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
{
    printf '# scripts/targets15.sh, build %s: for each case\n' "$(git rev-parse --short HEAD 2>/dev/null || echo '?')"
    printf '#   swapadvisor-search GRAPH --policy swapadvisor --memory MEM -q --generations G --threads %s --seed %s\n' "$threads" "$seed"
    printf '# graphs: dfg-zoo MODEL | dfg-profile - --device %s; %% of ideal = ideal_us / iteration_us\n' "$profile"
    for c in $cases; do
        IFS=: read -r m mem g <<<"$c"
        g=${g:-$gens}
        graph=$dir/$m.json
        [ -s "$graph" ] || ./bin/dfg-zoo "$m" | ./bin/dfg-profile - --device "$profile" -o "$graph"
        p=$dir/$m-$mem-g$g.plan.json
        t0=$(date +%s.%N)
        if ! ./bin/swapadvisor-search "$graph" --memory "$mem" -q --generations "$g" --threads "$threads" \
            --seed "$seed" -o "$p" 2>"$p.err"; then
            printf '%-12s %-6s refused: %s\n' "$m" "$mem" "$(head -c 200 "$p.err")"
            continue
        fi
        t1=$(date +%s.%N)
        ./bin/swapplan-emit "$p" --graph "$graph" --format check --strict -q >/dev/null
        python3 - "$p" "$m" "$mem" "$g" "$t0" "$t1" <<'PY'
import json, sys
p = json.load(open(sys.argv[1])); s = p["search"]; pr = p["predicted"]
pct = lambda us: 100.0 * pr["ideal_us"] / us
print("%-12s %-6s gens %-3s %5.1f%% of ideal; best seed %-14s %5.1f%%; gain %.3f%%; answer %s layout %s origin %s; "
      "%d evals, search %.1fs, total %.0fs" % (sys.argv[2], sys.argv[3], sys.argv[4], pct(pr["iteration_us"]),
      s.get("best_seed", "none"), pct(s["best_seed_us"]) if s.get("best_seed_us") else 0.0, s.get("gain_pct", 0.0),
      s.get("answer", "?"), s.get("layout", "?"), s.get("origin", "?"), s.get("evaluations", 0), s.get("wall_s", 0.0),
      float(sys.argv[6]) - float(sys.argv[5])))
PY
    done
} >"$tmp"
mv "$tmp" "$out"
trap - EXIT
cat "$out"
