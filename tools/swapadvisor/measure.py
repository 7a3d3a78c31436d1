"""--measure: op times from a CUDA GPU.

The traced graph is run node by node (torch.fx.Interpreter) on the device with random
parameters, state and inputs (integer tensors are zeros, valid labels and token ids);
every aten node is timed with CUDA events around it, the median over RUNS runs after a
warm-up. An exported op's time_us is the sum of the times of the aten nodes it stands for
(lower.py records which: folded in-place ops add to their producer, the optimizer's ops
to their parameter's update; a convolution backward is shared between its data and filter
ops in proportion to their FLOPs). Ops whose nodes are all views get 0.

The model must fit in the device's memory. Without CUDA: exit 7 (NoCuda).
"""

import operator
import statistics

from .errors import NoCuda, TraceError

RUNS = 5


def check_cuda():
    import torch
    if not torch.cuda.is_available():
        built = torch.backends.cuda.is_built() if hasattr(torch.backends, "cuda") else False
        raise NoCuda("no CUDA device: torch.cuda.is_available() is false (torch %s%s)"
                     % (torch.__version__, "" if built else ", a build without CUDA"))


def _materialise(v, dev, relabel):
    import torch
    dt = v.dtype
    if relabel is not None and dt == torch.float32:
        dt = relabel
    if dt.is_floating_point:
        return torch.rand(tuple(v.shape), dtype=dt, device=dev)
    return torch.zeros(tuple(v.shape), dtype=dt, device=dev)


def measure(cap, low, doc, note, device="cuda"):
    import torch
    import torch.fx

    check_cuda()
    dev = torch.device(device)
    relabel = {"f16": torch.float16, "bf16": torch.bfloat16}.get(cap.dtype)
    gm = cap.gm
    phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for n in gm.graph.nodes:
        if n.op == "get_attr":
            a = getattr(gm, n.target, None)
            if isinstance(a, torch.Tensor):
                setattr(gm, n.target, _materialise(a, dev, relabel))

    def cast(x):
        if isinstance(x, torch.device) or (isinstance(x, str) and x in ("cpu", "meta")):
            return dev
        if relabel is not None and x is torch.float32:
            return relabel
        return x

    times = {}

    class Timed(torch.fx.Interpreter):
        def call_function(self, target, args, kwargs):
            kwargs = {k: cast(v) if k in ("device", "dtype") else v for k, v in kwargs.items()}
            return super().call_function(target, args, kwargs)

        def run_node(self, n):
            if n.op != "call_function" or n.target is operator.getitem:
                return super().run_node(n)
            s = torch.cuda.Event(enable_timing=True)
            e = torch.cuda.Event(enable_timing=True)
            s.record()
            out = super().run_node(n)
            e.record()
            self.events.append((n.name, s, e))
            return out

    try:
        for it in range(RUNS + 1):
            args = [_materialise(n.meta["val"], dev, relabel) for n in phs]
            interp = Timed(gm)
            interp.events = []
            with torch.no_grad():
                interp.run(*args)
            torch.cuda.synchronize()
            if it > 0:  # the first run is a warm-up (cuDNN algorithm choice, allocator)
                for name, s, e in interp.events:
                    times.setdefault(name, []).append(s.elapsed_time(e) * 1000.0)
            del args, interp
    except RuntimeError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        if "out of memory" in first.lower():
            raise NoCuda("--measure: the model does not fit in the GPU's memory: %s" % first)
        raise TraceError("--measure: running the step on the GPU failed: %s" % first)

    node_us = {name: statistics.median(v) for name, v in times.items()}
    op_us = [0.0] * len(doc["ops"])
    for name, parts in low.node_groups.items():
        us = node_us.get(name)
        if us is None:
            continue
        total = sum(w for _, w in parts) or 1.0
        for g, w in parts:
            g = g.root()
            if g.id >= 0 and g.alive:
                op_us[g.id] += us * (w / total if total else 1.0 / len(parts))
    for op, us in zip(doc["ops"], op_us):
        op["time_us"] = round(us, 3)
    if dev.type == "cuda":
        doc["device"] = device_block(dev)
    note("--measure: %d aten ops timed on %s, %.1f us per iteration"
         % (len(node_us), torch.cuda.get_device_name(0), sum(op_us)))



def device_block(dev, nbytes=256 << 20):
    """The graph's device block measured on dev: memory from the driver, each direction
    of the host link with pinned 256 MiB copies (best of 3), both at once on two
    streams (their summed rate), and the latency as a lone 4 KiB copy."""
    import time
    import torch

    props = torch.cuda.get_device_properties(dev)
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    host2 = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    devb = torch.empty(nbytes, dtype=torch.uint8, device=dev)
    devb2 = torch.empty(nbytes, dtype=torch.uint8, device=dev)

    def best(fn, n=3):
        ts = []
        for _ in range(n):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            ts.append(time.perf_counter() - t0)
        return min(ts)

    h2d = nbytes / best(lambda: devb.copy_(host, non_blocking=True))
    d2h = nbytes / best(lambda: host.copy_(devb, non_blocking=True))
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()

    def both():
        with torch.cuda.stream(s1):
            devb.copy_(host, non_blocking=True)
        with torch.cuda.stream(s2):
            host2.copy_(devb2, non_blocking=True)
    duplex = 2 * nbytes / best(both)
    small_h, small_d = host[:4096], devb[:4096]
    lat = best(lambda: small_d.copy_(small_h, non_blocking=True), 20) - 4096 / h2d
    return {"name": props.name, "memory_bytes": int(props.total_memory),
            "h2d_bytes_per_s": round(h2d), "d2h_bytes_per_s": round(d2h),
            "duplex_bytes_per_s": round(min(duplex, h2d + d2h)),
            "transfer_latency_us": round(max(lat, 0.0) * 1e6, 2)}
