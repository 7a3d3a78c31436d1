#!/usr/bin/env bash
# scripts/gpu_check.sh - every check that needs a CUDA GPU, in one run (docs/torch_gpu.md).
#
#   scripts/gpu_check.sh [OUTDIR]        # after make, on a machine with a CUDA GPU and torch
#
# Runs these steps in this order (STEPS="test api torch runner measure islands" by default; name
# fewer to run fewer), each writing into OUTDIR (default out/gpu):
#   test     test-py.txt: the Python tests that need a GPU: swapplan-torch --device cuda
#            against eager PyTorch, dfg-from-torch --measure
#   api      api_gpu.txt: scripts/api_gpu.py, swapadvisor.torch.plan_training on the GPU (a
#            nanoGPT-sized GPT, AdamW, clipping, bf16 autocast; float16 with a GradScaler)
#            against the eager CUDA loop: losses, step times, memory
#   torch    torch_gpu.csv, torch_gpu.txt: scripts/torch_gpu.py (resnet50 b32, vit_b_16 b16
#            and the GPT-2-small-sized bench/torch_models.py:gpt2_small b8 at 0.5x and 0.3x,
#            profiled with --measure on this GPU, 64 MiB workspace reserve, trained with
#            their compiled plans (CUDA graphs) beside eager, checkpoint, save_on_cpu,
#            side-stream activation offloading and torch.compile's memory budget)
#   runner   runner.txt: swapplan-run --backend cuda on bundled graphs' plans (the C runner,
#            spin and --real-ops kernels), measured against each plan's prediction
#   measure  measure.txt, measured-profile.json: dfg-profile --measure on a bundled graph
#            (cuDNN / cuBLAS op times) and a plan of the measured graph
#   islands  islands.txt: swapadvisor-search-mpi on resnet-50 b32 at 0.5x at 1, 2, 4, 8 and
#            16 ranks (one thread each, the genetic search alone: --no-seeds) for ISLAND_GENS
#            generations a rank (default 20): wall time
#            and speed-up over one rank, the plan's iteration time
# env.txt names the GPU, driver, torch and CUDA. The exit status is the number of steps that
# failed (0: all passed); 64 for an unknown step in STEPS. Environment: DFG_PYTHON (the
# Python with torch, default python3), THREADS (search threads, default all cores),
# TIME_LIMIT (seconds per search, default 30), PROFILE (the bundled device profile the C
# runner's plans are made for; default: the one scripts/torch_gpu.py picks for the GPU).
set -u
cd "$(dirname "$0")/.."
OUTDIR=${1:-out/gpu}
PY=${DFG_PYTHON:-python3}
THREADS=${THREADS:-$(nproc)}
TIME_LIMIT=${TIME_LIMIT:-15}
ITERATIONS=${ITERATIONS:-6}
ISLAND_GENS=${ISLAND_GENS:-20}
STEPS=" ${STEPS:-test api torch runner measure islands} "
for s in $STEPS; do
    case $s in test | api | torch | runner | measure | islands) ;;
    *) echo "gpu_check: unknown step '$s' in STEPS (test, api, torch, runner, measure, islands)" >&2; exit 64 ;;
    esac
done
mkdir -p "$OUTDIR"
W=$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX")
trap 'rm -rf "$W"' EXIT
failed=0
step() {  # step NAME LOG CMD...: runs CMD with its output in LOG, one line on stderr
    local name=$1 log=$2 t0=$SECONDS rc
    shift 2
    { echo "\$ $*"; "$@"; } >>"$log" 2>&1
    rc=$?
    echo "gpu_check: $name: exit $rc in $((SECONDS - t0)) s" | tee -a "$log" >&2
    [ $rc -eq 0 ] || failed=$((failed + 1))
    return $rc
}

{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
  "$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
"device", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")' 2>&1
  nvcc --version 2>&1 | tail -1; } >"$OUTDIR/env.txt" 2>&1
cat "$OUTDIR/env.txt" >&2
# the bundled profile named like the GPU, as scripts/torch_gpu.py picks it
[ -n "${PROFILE:-}" ] || PROFILE=$("$PY" -c 'import sys; sys.path.insert(0, "scripts"); import torch_gpu as t
print(t.pick_profile(None, "cuda", t.list_profiles()))' 2>/dev/null) || PROFILE=h100-sxm5-80gb

if [[ $STEPS == *" test "* ]]; then
    : >"$OUTDIR/test-py.txt"
    step "test-py (GPU)" "$OUTDIR/test-py.txt" env DFG_TEST_PYTHON="$PY" DFG_PYTHON="$PY" PYTHONUNBUFFERED=1 \
        test/py/run.sh test_swapplan_torch.TestCuda test_dfg_from_torch.TestErrors.test_measure_on_cuda
fi

if [[ $STEPS == *" api "* ]]; then
    : >"$OUTDIR/api_gpu.txt"
    step "api_gpu.py" "$OUTDIR/api_gpu.txt" env PYTHONUNBUFFERED=1 "$PY" scripts/api_gpu.py --time-limit "$TIME_LIMIT"
fi

if [[ $STEPS == *" torch "* ]]; then
    : >"$OUTDIR/torch_gpu.txt"
    step "torch_gpu.py" "$OUTDIR/torch_gpu.txt" env DFG_PYTHON="$PY" PYTHONUNBUFFERED=1 "$PY" scripts/torch_gpu.py \
        --threads "$THREADS" --time-limit "$TIME_LIMIT" --iterations "$ITERATIONS" --profile-measure \
        --out "$OUTDIR/torch_gpu.csv"
fi

if [[ $STEPS == *" runner "* ]]; then
    # The C runner on the GPU: a plan per bundled graph at half its peak, spin kernels then
    # real GEMMs, each measured against the plan's prediction.
    : >"$OUTDIR/runner.txt"
    for g in graphs/vgg-11-b16.json graphs/resnet-50-b32.json; do
        b=$W/$(basename "$g" .json)
        step "profile $g" "$OUTDIR/runner.txt" bin/dfg-profile "$g" --device "$PROFILE" -o "$b.p.json" || continue
        step "plan $g" "$OUTDIR/runner.txt" bin/swapadvisor-search "$b.p.json" --memory 0.5x \
            --threads "$THREADS" --time-limit "$TIME_LIMIT" -o "$b.plan.json" || continue
        step "swapplan-run $g" "$OUTDIR/runner.txt" bin/swapplan-run "$b.plan.json" --graph "$b.p.json" \
            --backend cuda --iterations 3
        step "swapplan-run --real-ops $g" "$OUTDIR/runner.txt" bin/swapplan-run "$b.plan.json" \
            --graph "$b.p.json" --backend cuda --iterations 3 --real-ops
    done
fi

if [[ $STEPS == *" measure "* ]]; then
    : >"$OUTDIR/measure.txt"
    step "dfg-profile --measure" "$OUTDIR/measure.txt" bin/dfg-profile graphs/resnet-50-b32.json --measure \
        --measured-profile "$OUTDIR/measured-profile.json" -o "$W/r50.measured.json" &&
    step "plan the measured graph" "$OUTDIR/measure.txt" bin/swapadvisor-search "$W/r50.measured.json" \
        --memory 0.5x --threads "$THREADS" --time-limit "$TIME_LIMIT" -o "$W/r50.measured.plan.json"
fi

if [[ $STEPS == *" islands "* ]]; then
    : >"$OUTDIR/islands.txt"
    if [ -x bin/swapadvisor-search-mpi ] && command -v mpirun >/dev/null; then
        g=$W/r50.islands.json
        step "profile for islands" "$OUTDIR/islands.txt" bin/dfg-profile graphs/resnet-50-b32.json \
            --device "$PROFILE" -o "$g" &&
        for r in 1 2 4 8 16; do
            t0=$(date +%s.%N)
            step "islands $r" "$OUTDIR/islands.txt" mpirun --allow-run-as-root --oversubscribe -np "$r" \
                bin/swapadvisor-search-mpi "$g" --memory 0.5x --seed 1 --threads 1 --no-seeds --generations "$ISLAND_GENS" \
                -q -o "$W/islands.$r.json" || continue
            awk -v r="$r" -v t0="$t0" -v t1="$(date +%s.%N)" -v it="$(grep -o '"iteration_us": *[0-9.e+]*' \
                "$W/islands.$r.json" | head -1 | sed 's/.*: *//')" \
                'BEGIN { printf "islands: ranks %d generations/rank '"$ISLAND_GENS"' wall_s %.2f iteration_us %s\n", r, t1 - t0, it }' \
                | tee -a "$OUTDIR/islands.txt" >&2
        done
    else
        echo "gpu_check: islands: swapadvisor-search-mpi or mpirun missing" | tee -a "$OUTDIR/islands.txt" >&2
        failed=$((failed + 1))
    fi
fi

echo "gpu_check: $failed step(s) failed; results in $OUTDIR" >&2
exit $failed
