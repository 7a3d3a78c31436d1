#!/usr/bin/env python3
"""scripts/validate_scaling.py K OUTDIR - writes a graph of K ops that each read
one input tensor, chained by control deps, and a plan that swaps that tensor in
before every op at offset 0 (K placements of one address): the case that made
`swapplan-emit --format check --strict` quadratic (issue 22, defect 8).  Time it
with: /usr/bin/time -f %e bin/swapplan-emit OUTDIR/kK.plan.json --graph OUTDIR/kK.json --format check --strict
(exit 6: the plan's predicted block is left empty on purpose; rule 6 is its one violation)."""
import json
import sys

K = int(sys.argv[1])
out = sys.argv[2]
dev = {"name": "d", "memory_bytes": 4096, "h2d_bytes_per_s": 12e9, "d2h_bytes_per_s": 12e9,
       "duplex_bytes_per_s": 20e9, "transfer_latency_us": 1}
g = {"format": "dfg", "version": 1, "name": "k",
     "tensors": [{"id": 0, "name": "x", "kind": "input", "bytes": 1024}],
     "ops": [{"id": i, "name": "op%d" % i, "type": "sink", "phase": "forward", "inputs": [0], "outputs": [],
              "time_us": 1} for i in range(K)],
     "control_deps": [[i, i + 1] for i in range(K - 1)], "device": dev}
nodes, place = [], []
for i in range(K):
    nodes.append({"id": 2 * i, "kind": "swap_in", "tensor": 0, "deps": [2 * i - 1] if i else []})
    nodes.append({"id": 2 * i + 1, "kind": "compute", "op": i, "deps": [2 * i]})
    place.append({"tensor": 0, "offset": 0, "begin": 2 * i, "end": 2 * i + 1})
p = {"format": "swapplan", "version": 1, "graph": {"name": "k", "ops": K, "tensors": 1}, "device": dev,
     "arena_bytes": 1024, "schedule": list(range(K)), "nodes": nodes, "placements": place,
     "resident_at_start": [], "predicted": {"iteration_us": 0, "ideal_us": K}}
with open("%s/k%d.json" % (out, K), "w") as f:
    json.dump(g, f)
with open("%s/k%d.plan.json" % (out, K), "w") as f:
    json.dump(p, f)
