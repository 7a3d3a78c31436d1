#!/usr/bin/env bash
# Island-model search (issue 20): the genetic search for the same wall time as
#   1 rank x 1 thread, 1 rank x THREADS threads, RANKS ranks x 1 thread
# (swapadvisor-search-mpi under mpirun; --seed 1, --time-limit SECONDS), and for
# each: generations and evaluations of rank 0, the final plan's % of ideal, the
# time to within 1 % of its own final best (search.time_to_1pct_s), and the
# time to within 1 % of the best final plan of all the runs (from rank 0's
# --log; with several ranks a better individual may sit on another rank for a
# while, so that figure is an upper bound).
# SECONDS written as Ng (e.g. 150g) gives every run --generations N instead:
# the same generations per island, a figure that does not depend on the machine.
# Usage: scripts/islands.sh [MODEL [SECONDS|Ng [RANKS [MEMORY]]]]
#        (default wresnet-152-10 60 2 16GiB); appends to bench/results/islands.txt
set -euo pipefail
cd "$(dirname "$0")/.."
m=${1:-wresnet-152-10}
secs=${2:-60}
ranks=${3:-2}
mem=${4:-16GiB}
profile=profiles/v100-pcie3-16gb.json
g=build/zoo/$m.json
out=build/islands
mkdir -p build/zoo "$out" bench/results
[ -x bin/swapadvisor-search-mpi ] || { echo "islands: bin/swapadvisor-search-mpi not built (no mpicc)" >&2; exit 2; }
[ -s "$g" ] || ./bin/dfg-zoo "$m" -o - | ./bin/dfg-profile - --device "$profile" -o "$g"
mpirun="mpirun --allow-run-as-root --oversubscribe"
case $secs in
    *g) stop=(--generations "${secs%g}") ;;
    *) stop=(--time-limit "$secs") ;;
esac
runs=("1 1" "1 $ranks" "$ranks 1")
for r in "${runs[@]}"; do
    set -- $r
    $mpirun -np "$1" ./bin/swapadvisor-search-mpi "$g" --memory "$mem" --seed 1 --threads "$2" \
        "${stop[@]}" -q --log "$out/$m.r$1t$2.csv" -o "$out/$m.r$1t$2.json"
done
python3 - "$m" "$secs" "$mem" "$out" "${runs[@]}" <<'PY' | tee -a bench/results/islands.txt
import csv, json, sys, datetime, os
m, secs, mem, out, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
res = []
for r in runs:
    nr, nt = r.split()
    base = f"{out}/{m}.r{nr}t{nt}"
    p = json.load(open(base + ".json"))
    log = [(float(x["elapsed_s"]), float(x["best_us"])) for x in csv.DictReader(open(base + ".csv"))]
    res.append((nr, nt, p, log))
best = min(p["predicted"]["iteration_us"] for _, _, p, _ in res)
stop = f"--generations {secs[:-1]}" if secs.endswith("g") else f"--time-limit {secs}"
print(f"# {m} at {mem}, profiles/v100-pcie3-16gb.json, {stop} --seed 1, "
      f"{os.cpu_count()} cores, {datetime.date.today()}")
print(f"{'ranks':>5} {'threads':>7} {'gens':>6} {'evals':>7} {'% ideal':>8} {'iter_us':>12} "
      f"{'to 1% own':>10} {'to 1% best':>10}")
for nr, nt, p, log in res:
    s, pr = p["search"], p["predicted"]
    hit = next((t for t, b in log if b <= 1.01 * best), None)
    print(f"{nr:>5} {nt:>7} {s['generations']:>6} {s['evaluations']:>7} "
          f"{100 * pr['ideal_us'] / pr['iteration_us']:>8.2f} {pr['iteration_us']:>12.1f} "
          f"{s['time_to_1pct_s']:>9.1f}s {('%.1fs' % hit) if hit is not None else 'never':>10}")
PY
