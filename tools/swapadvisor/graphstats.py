"""Figures of a dfg v1 document, computed the way the C library does (lib/model/dfg.c).

peak_bytes follows sa_dfg_peak_bytes: every persistent tensor (param, state) is resident
the whole iteration; any other tensor is live from its producer (an input: its first
reader) to its last reader, inclusive, in the order of the ops (ids ascending, which
is a topological order in what dfg-from-torch writes); a workspace only during its op.
"""

PERSISTENT = ("param", "state")


def peak_bytes(doc, schedule=None):
    ops = doc["ops"]
    n = len(ops)
    sch = schedule if schedule is not None else list(range(n))
    pos = [0] * n
    for i, o in enumerate(sch):
        pos[o] = i
    first, last = {}, {}
    for op in ops:
        p = pos[op["id"]]
        for t in op["outputs"]:
            first[t] = min(first.get(t, p), p)
            last[t] = max(last.get(t, p), p)
        for t in op["inputs"]:
            first[t] = min(first.get(t, p), p)
            last[t] = max(last.get(t, p), p)
    base = 0
    delta = [0] * (n + 1)
    for t in doc["tensors"]:
        if t["kind"] in PERSISTENT:
            base += t["bytes"]
        elif t["id"] in first:
            delta[first[t["id"]]] += t["bytes"]
            delta[last[t["id"]] + 1] -= t["bytes"]
    cur = peak = base
    for i in range(n):
        cur += delta[i]
        peak = max(peak, cur)
    return peak


def bytes_by_kind(doc):
    out = {}
    for t in doc["tensors"]:
        out[t["kind"]] = out.get(t["kind"], 0) + t["bytes"]
    return out


def stats(doc):
    """key -> value, the figures `dfg-from-torch --stats` prints."""
    ops = doc["ops"]
    tensors = doc["tensors"]
    by_phase = {}
    for o in ops:
        by_phase[o["phase"]] = by_phase.get(o["phase"], 0) + 1
    kinds = bytes_by_kind(doc)
    params = 0
    for t in tensors:
        if t["kind"] == "param" and t.get("shape") is not None:
            n = 1
            for d in t["shape"]:
                n *= d
            params += n
    total = sum(t["bytes"] for t in tensors)
    peak = peak_bytes(doc)
    res = [("model", doc.get("name", "")), ("batch", doc.get("batch", 0)), ("ops", len(ops))]
    for ph in ("forward", "backward", "update"):
        res.append(("ops_" + ph, by_phase.get(ph, 0)))
    res += [("tensors", len(tensors)), ("total_bytes", total), ("total_gb", "%.2f" % (total / 1e9)),
            ("distinct_sizes", len({t["bytes"] for t in tensors})), ("params", params),
            ("peak_bytes", peak), ("peak_gb", "%.2f" % (peak / 1e9)),
            ("flops", "%.6g" % sum(o.get("flops", 0) for o in ops))]
    for k in ("param", "state", "input", "activation", "gradient", "workspace"):
        res.append(("bytes_" + k, kinds.get(k, 0)))
    res.append(("generic_cost_ops", sum(1 for o in ops if o.get("generic_cost"))))
    return res
