#!/usr/bin/env bash
# scripts/search_rss.sh [BIN] - peak RSS of the genetic search against graph
# size for zoo models, at the V100 profile's 16 GiB and at two huge budgets
# (1e12 bytes and 8e15 bytes, about 2^53): the search's memory must follow the
# graph, not the budget (issue 22, defect 2).  One thread, 5 generations.
# Prints one row per run: model, ops, tensors, budget, peak RSS (MB), seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-bin}
T=$(mktemp -d /tmp/sa_rss_XXXXXX)
trap 'rm -rf "$T"' EXIT
printf '%-16s %6s %8s %10s %9s %7s\n' model ops tensors budget rss_MB wall_s
for m in persistent-first resnet-50 vgg-16 inception-1 rnn-4-2k gpt-12-768 wresnet-152-10; do
    if [ "$m" = persistent-first ]; then
        cp test/cli/data/persistent-first.json "$T/g.json"
    else
        "$BIN/dfg-zoo" "$m" | "$BIN/dfg-profile" - --device profiles/v100-pcie3-16gb.json -o "$T/g.json"
    fi
    read -r ops tensors < <(python3 -c "import json,sys; g=json.load(open('$T/g.json')); print(len(g['ops']), len(g['tensors']))")
    for mem in 16GiB 1e12 8e15; do
        /usr/bin/time -f '%M %e' -o "$T/time" "$BIN/swapadvisor-search" "$T/g.json" --memory "$mem" \
            --threads 1 --generations 5 -q -o "$T/p.json" 2>/dev/null || true
        read -r kb s < <(tail -1 "$T/time")
        printf '%-16s %6s %8s %10s %9.1f %7s\n' "$m" "$ops" "$tensors" "$mem" "$(echo "$kb / 1024" | bc -l)" "$s"
    done
done
