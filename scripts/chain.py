#!/usr/bin/env python3
"""scripts/chain.py N OUT - writes a training-like chain of N ops: N/2 forward relus, each
activation (1-5 MiB) read again by its backward op, and N/2 backward ops in reverse order,
with a device block (16 GiB, PCIe-3-like links).  A large graph for timing the tools, e.g.
--time-limit (docs/benchmarks.md, "Time limit"):
  python3 scripts/chain.py 100000 chain.json
  /usr/bin/time -f '%e s' bin/swapadvisor-search chain.json --memory 0.5x --time-limit 5 --threads 2 -q -o p.json"""
import json
import sys

n = int(sys.argv[1])
half = n // 2
tensors = [{"id": 0, "name": "x", "kind": "input", "bytes": 1 << 20}]
ops = []


def tensor(name, kind, size):
    tensors.append({"id": len(tensors), "name": name, "kind": kind, "bytes": size})
    return len(tensors) - 1


acts = [0]
for i in range(half):
    a = tensor("a%d" % i, "activation", (1 << 20) * (1 + i % 5))
    ops.append({"id": len(ops), "name": "f%d" % i, "type": "relu", "phase": "forward", "inputs": [acts[-1]],
                "outputs": [a], "time_us": 10 + i % 7})
    acts.append(a)
grad = acts[-1]
for i in range(half - 1, -1, -1):
    ng = tensor("g%d" % i, "gradient", (1 << 20) * (1 + i % 5))
    ops.append({"id": len(ops), "name": "b%d" % i, "type": "relu_grad", "phase": "backward",
                "inputs": [grad, acts[i]], "outputs": [ng], "time_us": 12 + i % 5})
    grad = ng
dev = {"name": "d", "memory_bytes": 16 << 30, "h2d_bytes_per_s": 12e9, "d2h_bytes_per_s": 12e9,
       "duplex_bytes_per_s": 20e9, "transfer_latency_us": 10}
with open(sys.argv[2], "w") as f:
    json.dump({"format": "dfg", "version": 1, "name": "chain-%d" % n, "tensors": tensors, "ops": ops,
               "control_deps": [], "device": dev}, f)
