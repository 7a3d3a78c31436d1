#!/usr/bin/env bash
# The search against the optimal planner against the bound (docs/bound.md) on the
# graphs of about 300 ops or fewer: vgg-11 b16 (bundled), resnet-18 b16 and gpt-4-512
# b4 and b1 from the zoo (at 0.5x b4's loss op alone exceeds the memory, so no policy
# plans it; b1 is the small gpt that plans there), at the memories given (default
# 0.9x 0.8x 0.5x).  Each run:
# --threads 2, --bound (lp); the search GENS generations (default 10), optimal and
# optimal-search under --time-limit LIMIT (default 600 s; optimal-search's search
# runs the same GENS generations as the search row, so it plans on the same order).  bench/results/optimal.txt
# keeps the last run.
# Usage: [GRAPHS="vgg-11-b16 ..."] scripts/optimal_bench.sh [FRAC...]
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${PROFILE:-profiles/v100-pcie3-16gb.json}
gens=${GENS:-10}
limit=${LIMIT:-600}
fracs=${*:-0.9 0.8 0.5}
dir=build/optimal
mkdir -p "$dir" bench/results
./bin/dfg-profile graphs/vgg-11-b16.json --device "$profile" -o "$dir/vgg-11-b16.json"
./bin/dfg-zoo resnet-18 --batch 16 | ./bin/dfg-profile - --device "$profile" -o "$dir/resnet-18-b16.json"
./bin/dfg-zoo gpt-4-512 --batch 4 | ./bin/dfg-profile - --device "$profile" -o "$dir/gpt-4-512-b4.json"
./bin/dfg-zoo gpt-4-512 --batch 1 | ./bin/dfg-profile - --device "$profile" -o "$dir/gpt-4-512-b1.json"
out=bench/results/optimal.txt
{
printf '# scripts/optimal_bench.sh: --threads 2 --bound, search %s generations, optimal --time-limit %s; %s; %s\n' \
    "$gens" "$limit" "$profile" "$(nproc) cores (shared)"
printf '%-14s %4s %-15s %11s %11s %8s %-10s %8s %8s\n' graph mem policy iter_us bound_us within milp milp_gap wall_s
for g in ${GRAPHS:-vgg-11-b16 resnet-18-b16 gpt-4-512-b4 gpt-4-512-b1}; do
    for frac in $fracs; do
        for pol in swapadvisor optimal optimal-search; do
            p=$dir/$g.$pol.$frac.plan.json
            extra=(--time-limit "$limit")
            [ "$pol" = swapadvisor ] && extra=(--generations "$gens")
            [ "$pol" = optimal-search ] && extra+=(--generations "$gens")
            s=$(date +%s.%N)
            if ! ./bin/swapadvisor-search "$dir/$g.json" --policy "$pol" --memory "${frac}x" --threads 2 --bound \
                   "${extra[@]}" -q -o "$p" 2>"$p.err"; then
                printf '%-14s %3.0f%% %-15s refused: %s\n' "$g" "$(echo "$frac*100" | bc)" "$pol" "$(cut -c1-150 "$p.err")"
                continue
            fi
            e=$(date +%s.%N)
            python3 - "$g" "$frac" "$pol" "$p" "$(echo "$e - $s" | bc)" <<'PY'
import json, sys
g, frac, pol, path, wall = sys.argv[1:]
d = json.load(open(path)); s = d["search"]; it = d["predicted"]["iteration_us"]; lb = s["lower_bound_us"]
st = s.get("sa_milp_status", "-"); gap = s.get("milp_gap")
gap = f"{100*gap:.2f}%" if isinstance(gap, (int, float)) and gap >= 0 else "-"
print(f"{g:<14} {float(frac)*100:3.0f}% {pol:<15} {it:11.0f} {lb:11.0f} {max(0.0, 100*(it/lb-1)):7.1f}% {st:<10} {gap:>8} {float(wall):8.1f}")
PY
        done
    done
done
} | tee "$out"
