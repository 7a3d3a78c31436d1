#!/usr/bin/env bash
# The default search (no --generations, no --time-limit) against a
# --time-limit 300 run, on every zoo model of the policies table at its
# default batch and on torchvision resnet50, vit_b_16 and densenet121
# (batch 32), at 0.5x and 0.25x of the no-swap peak, V100 profile.
# For each cell: the default run's wall time (--threads 2) and iteration
# time, the 300 s run's iteration time, and the gap.
# Usage: scripts/default_effort.sh [OUT]   (default bench/results/default_effort.txt)
# Env: REF_DIR   where the 300 s plans are (default build/effort/ref); a cell
#                without one is run there first (--time-limit 300 --threads
#                REF_THREADS, default 1: two cells side by side on 2 cores)
#      CELLS     "graph:memory ..." to run a subset (graph: a zoo name or tv-NAME)
#      PYTHON    the python with torch for the torchvision graphs (python3)
#      REF_NOTE  a line on where the 300 s plans came from, for the table's header
#      REF_FROM  an earlier table (this script's output): a cell without a plan in
#                REF_DIR takes its 300 s run's iteration time from that table's first
#                row for the cell instead of running it (for the cells a change
#                cannot touch; say so in REF_NOTE)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/results/default_effort.txt}
profile=profiles/v100-pcie3-16gb.json
dir=build/effort
ref=${REF_DIR:-$dir/ref}
py=${PYTHON:-python3}
mkdir -p "$dir" "$ref" "$(dirname "$out")"
graphs="vgg-16 resnet-50 gpt-12-768 inception-4 wresnet-152-10 nasnet-25 rnn-8-8k brnn-4-8k tv-resnet50 tv-vit_b_16 tv-densenet121"
cells=${CELLS:-$(for g in $graphs; do printf '%s:0.5x %s:0.25x ' "$g" "$g"; done)}
graph() { # $1: name; prints the profiled graph's path
    local g=$dir/$1.json
    if [ ! -s "$g" ]; then
        case $1 in
        tv-*) ./bin/dfg-from-torch "torchvision:${1#tv-}" --batch 32 -q -o "$g.raw" ;;
        *) ./bin/dfg-zoo "$1" -o "$g.raw" ;;
        esac && ./bin/dfg-profile "$g.raw" --device "$profile" -o "$g" && rm -f "$g.raw"
    fi
    echo "$g"
}
# iteration time (ms) of a plan, or the refusal
iter() { "$py" -c 'import json,sys; print("%.1f" % (json.load(open(sys.argv[1]))["predicted"]["iteration_us"] / 1000))' "$1" 2>/dev/null || echo refused; }
tmp=$(mktemp)
{
    printf '# scripts/default_effort.sh: the default search (--threads 2) against --time-limit 300 (--threads %s); %s\n' \
        "${REF_THREADS:-1}" "$profile"
    printf '# %s, %s, %s cores\n' "$(git rev-parse --short HEAD 2>/dev/null)" "$(date -u +%Y-%m-%d)" "$(nproc)"
    [ -n "${REF_NOTE:-}" ] && printf '# 300 s plans: %s\n' "$REF_NOTE"
    printf '%-16s %-6s %10s %12s %12s %8s\n' graph memory default_s default_ms ref300_ms gap_pct
} >"$tmp"
for c in $cells; do
    name=${c%%:*} mem=${c#*:}
    g=$(graph "$name") || { echo "default_effort.sh: $name: no graph" >&2; exit 1; }
    rp=$ref/$name.$mem.plan.json
    old=
    if [ ! -e "$rp" ] && [ ! -e "$rp.refused" ] && [ -n "${REF_FROM:-}" ]; then
        old=$(awk -v g="$name" -v m="$mem" '$1 == g && $2 == m { print $5; exit }' "$REF_FROM")
        [ -n "$old" ] || { echo "default_effort.sh: $name $mem: not in $REF_FROM" >&2; exit 1; }
    fi
    if [ -z "$old" ] && [ ! -e "$rp" ] && [ ! -e "$rp.refused" ]; then
        ./bin/swapadvisor-search "$g" --memory "$mem" --time-limit 300 --threads "${REF_THREADS:-1}" -q -o "$rp" \
            2>"$rp.err" || touch "$rp.refused"
    fi
    p=$dir/$name.$mem.plan.json
    t0=$(date +%s.%N)
    ./bin/swapadvisor-search "$g" --memory "$mem" --threads 2 -q -o "$p" 2>"$p.err"
    rc=$?
    secs=$(echo "$(date +%s.%N) - $t0" | bc)
    d=refused r=refused gap=-
    [ $rc -eq 0 ] && d=$(iter "$p")
    [ -e "$rp" ] && r=$(iter "$rp")
    [ -n "$old" ] && r=$old
    [ "$d" != refused ] && [ "$r" != refused ] && gap=$(printf '%.2f' "$(echo "scale=6; 100 * ($d - $r) / $r" | bc)")
    printf '%-16s %-6s %10.1f %12s %12s %8s\n' "$name" "$mem" "$secs" "$d" "$r" "$gap" | tee -a "$tmp"
done
mv "$tmp" "$out"
