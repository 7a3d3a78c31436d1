#!/usr/bin/env bash
# Benchmarks (make bench): graph loading, and planner + simulator evaluations
# per second on one core for every zoo model.  Results go to bench/results/.
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/results
mkdir -p "$out" build/zoo
export OMP_NUM_THREADS=1

./build/bench/bench_load 10000 20 | tee "$out/load.txt"

profile=profiles/v100-pcie3-16gb.json
models="resnet-50 vgg-16 wresnet-152-10 inception-4 nasnet-25 rnn-8-8k brnn-4-8k gpt-12-768"
graphs=()
for m in $models; do
    g=build/zoo/$m.json
    if [ ! -s "$g" ]; then
        ./bin/dfg-zoo "$m" -o - | ./bin/dfg-profile - --device "$profile" -o "$g"
    fi
    graphs+=("$g")
done
{
    echo "# planner + simulator, topological order, one size class per size, one core"
    for f in 0.5 0.25; do ./build/bench/bench_eval "$f" "${graphs[@]}"; done
} | tee "$out/eval.txt"

# one full best-fit evaluation (decide, pack, simulate) by stage (issue 15, item 5)
for r in "" rule; do ./build/bench/bench_bestfit 0.25 build/zoo/brnn-4-8k.json 30 $r; done | tee "$out/bestfit_stages.txt"
