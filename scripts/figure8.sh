#!/usr/bin/env bash
# Figure 8 of the SwapAdvisor paper (section 6.3): K ResNet-152 models served
# on one GPU, p99 latency against throughput, partitioned memory with swapping
# against time-shared memory.  Each model has inference graphs at batch 1, 4
# and 16 (dfg-zoo --inference); swapadvisor-serve plans them in every share of
# MEMORY, sweeps the arrival rate over RATE/10 .. RATE and searches the split
# at each rate.
# Usage: scripts/figure8.sh [OUT_PREFIX]   (default bench/results/figure8:
#        writes OUT_PREFIX.txt and OUT_PREFIX.svg)
# Env: PROFILE (profiles/v100-pcie3-16gb.json), K (4), MEMORY (1GiB), RATE (300),
#      STEPS (16), POLICY (swapadvisor), GENERATIONS (5), SEED (1).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/results/figure8}
profile=${PROFILE:-profiles/v100-pcie3-16gb.json}
k=${K:-4}
dir=build/figure8
mkdir -p "$dir" "$(dirname "$out")"
variants=
for b in 1 4 16; do
    g=$dir/resnet-152-b$b.json
    ./bin/dfg-zoo resnet-152 --inference --batch "$b" | ./bin/dfg-profile - --device "$profile" -o "$g"
    variants=${variants:+$variants,}$g
done
models=()
for _ in $(seq "$k"); do models+=("$variants"); done
t0=$(date +%s)
./bin/swapadvisor-serve "${models[@]}" --memory "${MEMORY:-1GiB}" --rate "${RATE:-300}" --steps "${STEPS:-16}" \
    --policy "${POLICY:-swapadvisor}" --generations "${GENERATIONS:-5}" --seed "${SEED:-1}" \
    --svg "$out.svg" -o "$out.txt"
printf '# command: K=%s MEMORY=%s RATE=%s scripts/figure8.sh; profile %s; %s s\n' "$k" "${MEMORY:-1GiB}" \
    "${RATE:-300}" "$profile" "$(($(date +%s) - t0))" >>"$out.txt"
cat "$out.txt"
