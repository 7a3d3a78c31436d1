#!/usr/bin/env bash
# Search quality on the paper's setting (issue 5): the five models of the
# SwapAdvisor paper on the 16 GB V100 profile, each planned by odswap, topo
# and the genetic search (both, schedule only, allocation only) with the same
# time limit, as % of ideal throughput beside the paper's figures.
#
# Usage: scripts/quality.sh [SECONDS [THREADS [SEED]]]   (default 120 2 1)
# Writes bench/results/quality.txt (and per-run plans and CSV logs under
# build/quality/).  Env MODELS overrides the model list.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-120}
threads=${2:-2}
seed=${3:-1}
profile=profiles/v100-pcie3-16gb.json
models=${MODELS:-wresnet-152-10 inception-4 nasnet-25 rnn-8-8k brnn-4-8k}
dir=build/quality
mkdir -p "$dir" build/zoo bench/results
out=bench/results/quality.txt

for m in $models; do
    g=build/zoo/$m.json
    [ -s "$g" ] || ./bin/dfg-zoo "$m" -o - | ./bin/dfg-profile - --device "$profile" -o "$g"
    for pol in ideal odswap topo; do
        ./bin/swapadvisor-search "$g" --policy "$pol" -q -o "$dir/$m.$pol.json" 2>"$dir/$m.$pol.err" ||
            rm -f "$dir/$m.$pol.json"
    done
    for mode in both schedule alloc; do
        ./bin/swapadvisor-search "$g" --search "$mode" --time-limit "$secs" --threads "$threads" --seed "$seed" \
            --log "$dir/$m.$mode.csv" -q -o "$dir/$m.$mode.json" 2>"$dir/$m.$mode.err" || rm -f "$dir/$m.$mode.json"
    done
done

python3 - "$dir" "$secs" "$threads" "$seed" "$profile" $models <<'PY' | tee "$out"
import json, os, sys
d, secs, threads, seed, profile, *models = sys.argv[1:]
paper = {  # SwapAdvisor ASPLOS '20, Figures 7 and 8 (% of ideal throughput, 16 GB V100)
    "wresnet-152-10": ("95", "80"), "inception-4": ("~65", "-"), "nasnet-25": ("53", "-"),
    "rnn-8-8k": ("70-80", "<1"), "brnn-4-8k": ("70-80", "<1")}
def load(m, p):
    f = os.path.join(d, f"{m}.{p}.json")
    return json.load(open(f)) if os.path.exists(f) else None
def pct(m, p):
    x = load(m, p)
    if not x:
        return "refused"
    q = x["predicted"]
    return f"{100 * q['ideal_us'] / q['iteration_us']:.1f}"
print(f"# {profile}, memory = the profile's 16 GiB; GA: --time-limit {secs} --threads {threads} --seed {seed}")
print(f"# % of ideal throughput (ideal = the same graph with unlimited memory)")
print(f"{'model':<16}{'odswap':>8}{'topo':>8}{'GA both':>9}{'sched':>8}{'alloc':>8}"
      f"{'to 1%':>8}{'gens':>6}{'evals':>8}{'paper SA':>10}{'paper OD':>10}")
for m in models:
    b = load(m, "both")
    s = json.loads(json.dumps(b["search"])) if b and "search" in b else {}
    t1 = f"{s.get('time_to_1pct_s', float('nan')):.0f}s" if s else "-"
    print(f"{m:<16}{pct(m, 'odswap'):>8}{pct(m, 'topo'):>8}{pct(m, 'both'):>9}{pct(m, 'schedule'):>8}"
          f"{pct(m, 'alloc'):>8}{t1:>8}{s.get('generations', '-'):>6}{s.get('evaluations', '-'):>8}"
          f"{paper[m][0] if m in paper else '-':>10}{paper[m][1] if m in paper else '-':>10}")
PY
