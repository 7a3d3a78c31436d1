#!/usr/bin/env python3
"""scripts/wide_sink.py N OUT - writes a graph of N relus in a chain and a sink (time 0)
that reads all N activations at the end, as traced graphs often have (issue 22): an op
with N tensors.  Time the search on it with:
  /usr/bin/time -f '%e s %M KB' bin/swapadvisor-search OUT --generations 2 --threads 1 -q -o /tmp/p.json"""
import json
import sys

n = int(sys.argv[1])
tensors = [{"id": 0, "name": "x", "kind": "input", "bytes": 4096}]
ops = []
for i in range(1, n + 1):
    tensors.append({"id": i, "name": "a%d" % i, "kind": "activation", "bytes": 4096 * (1 + i % 7)})
    ops.append({"id": i - 1, "name": "op%d" % i, "type": "relu", "phase": "forward", "inputs": [i - 1],
                "outputs": [i], "time_us": 1})
ops.append({"id": n, "name": "sink", "type": "sink", "phase": "forward", "inputs": list(range(1, n + 1)),
            "outputs": [], "time_us": 0})
dev = {"name": "d", "memory_bytes": 2 ** 40, "h2d_bytes_per_s": 12e9, "d2h_bytes_per_s": 12e9,
       "duplex_bytes_per_s": 20e9, "transfer_latency_us": 10}
with open(sys.argv[2], "w") as f:
    json.dump({"format": "dfg", "version": 1, "name": "wide-sink", "tensors": tensors, "ops": ops,
               "control_deps": [], "device": dev}, f)
