#!/usr/bin/env bash
# The genetic search's distance to the lower bound (docs/bound.md) for every zoo
# model at 50 % and 25 % of its no-swap peak: a short search (GENS generations,
# default 5, --threads 1) with --bound=combinatorial (BOUND=lp for the LP), on the
# default profile.  Prints one row per model and memory; OUT (default
# bench/results/bound_gaps.txt) keeps the last run.  MODEL:B plans the model at
# batch B (the zoo's default batch otherwise).
# Usage: scripts/bound_gaps.sh [MODEL[:B]...]
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${PROFILE:-profiles/v100-pcie3-16gb.json}
gens=${GENS:-5}
bound=${BOUND:-combinatorial}
dir=build/zoo
mkdir -p "$dir" bench/results
models=${*:-resnet-50 vgg-16 wresnet-152-10 inception-4 nasnet-25 rnn-8-8k brnn-4-8k gpt-12-768}
out=${OUT:-bench/results/bound_gaps.txt}
{
printf '# scripts/bound_gaps.sh: swapadvisor --generations %s --threads 1 --bound=%s, %s\n' "$gens" "$bound" "$profile"
printf '%-16s %5s %6s %12s %12s %12s %8s %8s %s\n' model mem ops ideal_us search_us bound_us within bound_s binding
for mb in $models; do
    m=${mb%%:*} batch=()
    [ "$m" = "$mb" ] || { batch=(--batch "${mb#*:}"); m=$m-b${mb#*:}; }
    g=$dir/$m.json
    [ -s "$g" ] || ./bin/dfg-zoo "${mb%%:*}" "${batch[@]}" -o - | ./bin/dfg-profile - --device "$profile" -o "$g"
    for frac in 0.5 0.25; do
        p=$dir/$m.bound.$frac.plan.json
        if ! ./bin/swapadvisor-search "$g" --memory "${frac}x" --generations "$gens" --threads 1 --bound="$bound" \
               -q -o "$p" 2>"$p.err"; then
            printf '%-16s %4.0f%% refused: %s\n' "$m" "$(echo "$frac*100" | bc)" "$(cat "$p.err")"
            continue
        fi
        python3 - "$m" "$frac" "$p" "$g" <<'PY'
import json, sys
m, frac, path, gpath = sys.argv[1:]
d = json.load(open(path))
pr, s = d["predicted"], d["search"]
ops = d["graph"]["ops"]
terms = s["bound_terms_us"]
binding = max(terms, key=terms.get)
lb = s["lower_bound_us"]
print(f"{m:<16} {float(frac)*100:4.0f}% {ops:6d} {pr['ideal_us']:12.0f} {pr['iteration_us']:12.0f} {lb:12.0f} "
      f"{100*(pr['iteration_us']/lb-1):7.1f}% {s['bound_wall_s']:8.2f} {binding}")
PY
    done
done
} | tee "$out"
