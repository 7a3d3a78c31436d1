#!/usr/bin/env bash
# Plans every zoo model with the given policies at 50 % and 25 % of its no-swap
# peak on the default profile, validates each plan (strict), and prints a table.
# Usage: scripts/zoo_plans.sh [POLICY...]   (default: topo odswap)
set -euo pipefail
cd "$(dirname "$0")/.."
policies=${*:-topo odswap}
profile=${PROFILE:-profiles/v100-pcie3-16gb.json}
dir=build/zoo
mkdir -p "$dir"
models="resnet-50 vgg-16 wresnet-152-10 inception-4 nasnet-25 rnn-8-8k brnn-4-8k gpt-12-768"
printf '%-16s %-8s %6s %12s %12s %8s %9s %9s %s\n' model policy mem ideal_us iter_us %ideal h2d_GB d2h_GB check
for m in $models; do
    g=$dir/$m.json
    [ -s "$g" ] || ./bin/dfg-zoo "$m" -o - | ./bin/dfg-profile - --device "$profile" -o "$g"
    for frac in 0.5 0.25; do
        for pol in $policies; do
            p=$dir/$m.$pol.$frac.plan.json
            if ! ./bin/swapadvisor-search "$g" --policy "$pol" --memory "${frac}x" -q -o "$p" 2>"$p.err"; then
                printf '%-16s %-8s %5.0f%% %s\n' "$m" "$pol" "$(echo "$frac*100" | bc)" "refused: $(cat "$p.err")"
                continue
            fi
            chk=$(./bin/swapplan-emit "$p" --graph "$g" --format check --strict -q >/dev/null 2>&1 && echo valid || echo INVALID)
            python3 - "$m" "$pol" "$frac" "$p" "$chk" <<'PY'
import json, sys
m, pol, frac, path, chk = sys.argv[1:]
d = json.load(open(path))["predicted"]
print(f"{m:<16} {pol:<8} {float(frac)*100:5.0f}% {d['ideal_us']:12.0f} {d['iteration_us']:12.0f} {100*d['ideal_us']/d['iteration_us']:7.1f}% {d['h2d_bytes']/1e9:9.2f} {d['d2h_bytes']/1e9:9.2f} {chk}")
PY
        done
    done
done
