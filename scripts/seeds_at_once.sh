#!/usr/bin/env bash
# --generations 0 ("the seeds' plans, at once") on scripts/chain.py's chains
# of 10,000, 30,000 and 100,000 ops at 0.5x, --threads 2: the whole run's
# wall time, the answer and each seed's wall time from the plan's search
# block (the seeds run under the default effort's work budget).
# Usage: scripts/seeds_at_once.sh [OUT]   (default bench/results/seeds_at_once.txt)
# Env: SIZES (default "10000 30000 100000"), PYTHON (python3).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/results/seeds_at_once.txt}
py=${PYTHON:-python3}
dir=build/seeds_at_once
mkdir -p "$dir" "$(dirname "$out")"
tmp=$(mktemp)
{
    printf '# scripts/seeds_at_once.sh: swapadvisor-search CHAIN --generations 0 --memory 0.5x --threads 2\n'
    printf '# %s, %s, %s cores\n' "$(git rev-parse --short HEAD 2>/dev/null)" "$(date -u +%Y-%m-%d)" "$(nproc)"
} >"$tmp"
for n in ${SIZES:-10000 30000 100000}; do
    g=$dir/chain$n.json p=$dir/chain$n.plan.json
    [ -s "$g" ] || "$py" scripts/chain.py "$n" "$g"
    t0=$(date +%s.%N)
    ./bin/swapadvisor-search "$g" --generations 0 --memory 0.5x --threads 2 -q -o "$p" 2>"$p.err" || {
        echo "seeds_at_once.sh: chain $n: $(tail -1 "$p.err")" >&2
        exit 1
    }
    secs=$(echo "$(date +%s.%N) - $t0" | bc)
    "$py" - "$p" "$n" "$secs" >>"$tmp" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = d["search"]
rows = ["%s %.1f%s" % (x["policy"], x["wall_s"], "" if x["result"] == "plan" else " (refused)")
        for x in s.get("phases", []) if x["phase"] == "seed"]
fill = s.get("fill", {})
print("chain %s ops: %.1f s, %.1f ms (best seed %s); fill %s tries %.1f s; seeds (s): %s" % (
    sys.argv[2], float(sys.argv[3]), d["predicted"]["iteration_us"] / 1000, s.get("best_seed"),
    fill.get("tried", 0), fill.get("wall_s", 0), ", ".join(rows)))
PY
done
mv "$tmp" "$out"
cat "$out"
