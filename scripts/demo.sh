#!/usr/bin/env bash
# Sets up, builds, and runs the pipeline end to end on a bundled graph with the
# default device profile (the paper's 16 GB V100 over PCIe 3):
#   graph -> dfg-profile -> swapadvisor-search (and the odswap baseline)
#         -> swapplan-emit summary / trace -> swapplan-run on the host backend.
# Outputs land in out/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
make -s -j2
mkdir -p out
graph=${1:-graphs/resnet-50-b32.json}
profile=${PROFILE:-profiles/v100-pcie3-16gb.json}
memory=${MEMORY:-0.5x}
name=$(basename "$graph" .json)

./bin/dfg-profile "$graph" --device "$profile" --memory "$memory" -o "out/$name.profiled.json"
./bin/swapadvisor-search "out/$name.profiled.json" --policy odswap -o "out/$name.odswap.plan.json"
./bin/swapadvisor-search "out/$name.profiled.json" --seed 1 --generations 20 --log "out/$name.ga.csv" \
    -o "out/$name.plan.json"
if [ -x bin/swapplan-emit ]; then
    ./bin/swapplan-emit "out/$name.plan.json" --graph "out/$name.profiled.json" --format check
    ./bin/swapplan-emit "out/$name.plan.json" --graph "out/$name.profiled.json"
    ./bin/swapplan-emit "out/$name.plan.json" --graph "out/$name.profiled.json" --format trace -o "out/$name.trace.json"
    ./bin/swapplan-emit "out/$name.plan.json" "out/$name.odswap.plan.json" --graph "out/$name.profiled.json" \
        --format html -o "out/$name.html"
    echo "demo: open out/$name.html in a browser (the search's plan beside odswap's), or" \
         "out/$name.trace.json in https://ui.perfetto.dev or chrome://tracing" >&2
fi
if [ -x bin/swapplan-run ]; then
    ./bin/swapplan-run "out/$name.plan.json" --graph "out/$name.profiled.json" --backend host --iterations 2
fi
