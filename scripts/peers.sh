#!/usr/bin/env bash
# The search against the two peers it is seeded with, dtr (DTR's heuristic)
# and memory-budget (PyTorch's activation memory budget), on the zoo models of
# scripts/policies.sh and torchvision models at batch 32, at 0.5x and 0.25x of
# each graph's peak.  Every plan is checked (swapplan-emit --format check
# --strict).  Writes one CSV row per plan (or refusal) and prints a markdown
# table: predicted iteration time per policy and whether the search is no
# slower than both peers (">=") and strictly faster than every peer that
# planned (">").
# Usage: scripts/peers.sh [OUT]   (default bench/results/peers.csv)
# Env: PROFILE (profiles/v100-pcie3-16gb.json), MODELS (zoo names), TORCH
#      (torchvision names; "" skips them), BATCH (32, the torchvision exports),
#      MEMS ("0.5x 0.25x"), TIME_LIMIT (s per search, 0 = none: the default
#      generations run to the end), TIMEOUT (s per peer run, 600),
#      CACHE (exported graphs, ${TMPDIR:-/tmp}/sa-peers: exporting at batch 32
#      on a CPU takes a minute or more per model).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/results/peers.csv}
profile=${PROFILE:-profiles/v100-pcie3-16gb.json}
models=${MODELS-resnet-50 vgg-16 wresnet-152-10 inception-4 nasnet-25 rnn-8-8k brnn-4-8k gpt-12-768}
torch=${TORCH-resnet50 vit_b_16 densenet121}
batch=${BATCH:-32}
mems=${MEMS:-0.5x 0.25x}
tl=${TIME_LIMIT:-0}
tmo=${TIMEOUT:-600}
cache=${CACHE:-${TMPDIR:-/tmp}/sa-peers}
mkdir -p "$cache" build/zoo "$(dirname "$out")"
tmp=$(mktemp)
echo "graph,memory,policy,status,iteration_us,ideal_pct,arena_bytes,wall_s,detail" >"$tmp"

graph_of() { # NAME -> the profiled graph's path (made once)
    local m=$1 g
    case $m in
        tv:*)
            m=${m#tv:}
            g=$cache/$m-b$batch.p.json
            if [ ! -s "$g" ]; then
                nice ./bin/dfg-from-torch "torchvision:$m" --batch "$batch" -o "$cache/$m-b$batch.json" >&2 &&
                    ./bin/dfg-profile "$cache/$m-b$batch.json" --device "$profile" -o "$g" >&2
            fi ;;
        *)
            g=build/zoo/$m.json
            [ -s "$g" ] || ./bin/dfg-zoo "$m" -o - | ./bin/dfg-profile - --device "$profile" -o "$g" ;;
    esac
    echo "$g"
}

row() { # GRAPH-NAME GRAPH MEM POLICY ARGS...
    local name=$1 g=$2 mm=$3 pol=$4
    shift 4
    local p=$cache/$(basename "$g" .json).$pol.$mm.plan.json t0 rc secs
    t0=$(date +%s.%N)
    nice timeout "$tmo" ./bin/swapadvisor-search "$g" --memory "$mm" "$@" -q -o "$p" 2>"$p.err"
    rc=$?
    secs=$(echo "$(date +%s.%N) - $t0" | bc)
    if [ $rc -ne 0 ]; then
        local why
        why=$(head -1 "$p.err" | sed -e 's/^swapadvisor-search: //' | tr ',"' ';'"'" | cut -c1-160)
        [ $rc -eq 124 ] && why="timeout ${tmo}s"
        echo "$name,$mm,$pol,refused($rc),,,,${secs},$why" >>"$tmp"
    elif ! ./bin/swapplan-emit "$p" --graph "$g" --format check --strict -q >/dev/null 2>"$p.chk"; then
        echo "$name,$mm,$pol,INVALID,,,,${secs},$(head -1 "$p.chk" | tr ',' ';' | cut -c1-160)" >>"$tmp"
    else
        python3 - "$p" "$name" "$mm" "$pol" "$secs" >>"$tmp" <<'PY'
import json, sys
p, name, mm, pol, secs = sys.argv[1:]
d = json.load(open(p))
q, s = d["predicted"], d.get("search", {})
detail = "answer=%s" % s["best_seed"] if s.get("answer") == "seed" else ""
if pol == "dtr":
    detail = "evictions=%s;rebuilds=%s" % (s.get("evictions"), s.get("rebuilds"))
elif pol == "memory-budget":
    detail = "budget_fraction=%s" % s.get("budget_fraction")
print("%s,%s,%s,ok,%.1f,%.2f,%d,%s,%s" % (name, mm, pol, q["iteration_us"], 100 * q["ideal_us"] / q["iteration_us"],
                                         d["arena_bytes"], secs, detail))
PY
    fi
    echo "$name $mm $pol ${secs}s rc=$rc" >&2
}

t_start=$(date +%s)
for m in $models $(for t in $torch; do echo "tv:$t"; done); do
    g=$(graph_of "$m") || { echo "$m: no graph" >&2; continue; }
    name=${m#tv:}
    [ "$m" != "$name" ] && name="$name-b$batch"
    for mm in $mems; do
        row "$name" "$g" "$mm" dtr --policy dtr
        row "$name" "$g" "$mm" memory-budget --policy memory-budget
        args=(--threads 2)
        [ "$tl" != 0 ] && args+=(--time-limit "$tl")
        row "$name" "$g" "$mm" search "${args[@]}"
    done
done
mv "$tmp" "$out"
echo "# $(($(date +%s) - t_start)) s on $(nproc) cores" >&2
python3 scripts/peers_table.py "$out"
