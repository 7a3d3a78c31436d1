#!/usr/bin/env bash
# Issue 15, recomputation in the size-class pool: topo, topo-rc, and the search
# (30 generations, 1 thread) without and with --pool-recompute, on the issue's
# targets (V100 profile); every plan checked strictly.  docs/benchmarks.md.
# Usage: scripts/pool_recompute.sh > bench/results/pool_recompute.txt
set -euo pipefail
cd "$(dirname "$0")/.."
B=${B:-bin}; P=profiles/v100-pcie3-16gb.json; W=$(mktemp -d)
for spec in "resnet-50 0.5x" "resnet-50 0.25x" "vgg-16 0.5x" "gpt-12-768 0.5x"; do
  set -- $spec
  [ -f "$W/$1.json" ] || "$B/dfg-zoo" "$1" | "$B/dfg-profile" - --device "$P" -o "$W/$1.json"
  for run in "--policy topo" "--policy topo-rc" "--generations 30 --threads 1" "--generations 30 --threads 1 --pool-recompute"; do
    "$B/swapadvisor-search" "$W/$1.json" --memory "$2" $run -o "$W/p.json" 2>&1 | tail -1 | sed "s/^swapadvisor-search: /$2 [$run] /"
    "$B/swapplan-emit" "$W/p.json" --graph "$W/$1.json" --format check --strict 2>&1 | tail -1 | sed 's/^swapplan-emit: [^ ]*: /  check: /'
  done
done
rm -rf "$W"
