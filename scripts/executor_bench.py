#!/usr/bin/env python3
"""The executor's speed on the CPU (docs/torch.md, "How fast a plan runs").

For each model of bench/torch_models.py, in one run: a plan that swaps nothing (topo at
2x the peak) run by swapplan-torch's compiled step and by its interpreter (--interpret),
beside eager PyTorch's step and the exported aten graph run as the traced torch.fx
GraphModule (straight-line Python over the same ops: the floor for any Python executor
of that graph); then the search's plan at 0.5x, its swaps and recomputes. Times are the
median of STEPS steps after WARM warm-ups. Writes a table to stdout (and OUT if given).

    /usr/bin/python3 scripts/executor_bench.py [OUT]      # STEPS=10 WARM=2 MODELS="mlp ..."
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "bin")
MODELS = os.path.join(ROOT, "bench", "torch_models.py")
sys.path.insert(0, os.path.join(ROOT, "tools"))

STEPS = int(os.environ.get("STEPS", "10"))
WARM = int(os.environ.get("WARM", "2"))
CASES = [("mlp", 4), ("resnet18_32", 4), ("transformer8", 4)]


def sh(args):
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if r.returncode != 0:
        raise SystemExit("executor_bench: %s failed (%d): %s" % (" ".join(args[:3]), r.returncode, r.stderr.strip()))
    return r


def tool(name, args):
    if name in ("dfg-from-torch", "swapplan-torch"):
        return sh([sys.executable, os.path.join(BIN, name)] + args)
    return sh([os.path.join(BIN, name)] + args)


def median_steps(walls):
    return statistics.median(walls[WARM:WARM + STEPS])


def plan_steps(plan, gp, model, wd, extra=()):
    rep = os.path.join(wd, "rep.json")
    tool("swapplan-torch", [plan, "--graph", gp, model, "--iterations", str(WARM + STEPS), "--report", rep, "-q"]
         + list(extra))
    with open(rep) as f:
        r = json.load(f)
    return median_steps([it["wall_s"] for it in r["iterations"]]), r


def in_process(model, batch):
    """(eager, floor) step times: the module's own step, and the traced GraphModule."""
    import torch
    from dfg_from_torch import eager, models, trace
    torch.manual_seed(0)
    spec = models.load(model, batch, [], real=True)
    ins = [torch.randn(s.shape) if s.dtype.is_floating_point else torch.zeros(s.shape, dtype=s.dtype)
           for s in spec.inputs]
    tgs = [torch.randn(s.shape) if s.dtype.is_floating_point else torch.zeros(s.shape, dtype=s.dtype)
           for s in spec.targets]
    walls = []
    for _ in range(WARM + STEPS):
        t0 = time.perf_counter()
        eager.eager_steps(spec.module, spec.loss_fn, ins, tgs, "sgd", 1)
        walls.append(time.perf_counter() - t0)
    t_eager = median_steps(walls)
    fspec = models.load(model, batch, [])
    cap = trace.capture(fspec, "sgd", "f32")
    params = [p.detach().clone() for _, p in eager.unique_params(spec.module)]
    bufs = [b.detach().clone() for _, b in trace._named_tensors(spec.module, "_buffers")]
    walls = []
    with torch.no_grad():
        for _ in range(WARM + STEPS):
            t0 = time.perf_counter()
            cap.gm(params, bufs, [], ins, tgs)
            walls.append(time.perf_counter() - t0)
    t_floor = median_steps(walls)
    aten_nodes = sum(1 for n in cap.gm.graph.nodes if n.op == "call_function")
    return t_eager, t_floor, aten_nodes


def main(argv):
    import torch
    torch.set_num_threads(int(os.environ.get("THREADS", "1")))
    only = os.environ.get("MODELS", "").split()
    rows = ["# scripts/executor_bench.py, torch %s, %d thread(s), median of %d steps after %d warm-ups"
            % (torch.__version__, torch.get_num_threads(), STEPS, WARM),
            "model  batch  aten_nodes  plan_nodes  eager_ms  floor_ms  compiled_ms  interpret_ms  "
            "compiled/floor  compiled/eager  us_per_node_compiled  us_per_node_interpret  "
            "plan0.5x_ms  swaps_in  recomputes  plan0.5x/eager"]
    for model, batch in CASES:
        if only and model not in only:
            continue
        wd = tempfile.mkdtemp(prefix="executor_bench.")
        m = "%s:%s" % (MODELS, model)
        g, gp = os.path.join(wd, "g.json"), os.path.join(wd, "gp.json")
        tool("dfg-from-torch", [m, "--batch", str(batch), "-o", g])
        tool("dfg-profile", [g, "--device", "v100-pcie3-16gb", "-o", gp])
        plan = os.path.join(wd, "plan.json")
        tool("swapadvisor-search", [gp, "--policy", "topo", "--memory", "2x", "-q", "-o", plan])
        os.environ["OMP_NUM_THREADS"] = str(torch.get_num_threads())
        t_comp, rep = plan_steps(plan, gp, m, wd)
        t_int, _ = plan_steps(plan, gp, m, wd, ["--interpret"])
        t_eager, t_floor, aten_nodes = in_process(m, batch)
        nodes = sum(rep["plan_nodes"].values())
        half = os.path.join(wd, "half.json")
        tool("swapadvisor-search", [gp, "--memory", "0.5x", "--generations", "3", "--threads", "2",
                                    "--seed", "1", "-q", "-o", half])
        t_half, hrep = plan_steps(half, gp, m, wd)
        rows.append("%s  %d  %d  %d  %.2f  %.2f  %.2f  %.2f  %.2f  %.2f  %.1f  %.1f  %.2f  %d  %d  %.2f"
                    % (model, batch, aten_nodes, nodes, t_eager * 1e3, t_floor * 1e3, t_comp * 1e3, t_int * 1e3,
                       t_comp / t_floor, t_comp / t_eager, (t_comp - t_floor) / nodes * 1e6,
                       (t_int - t_floor) / nodes * 1e6, t_half * 1e3, hrep["plan_nodes"]["swap_in"],
                       hrep["plan_nodes"]["recompute"], t_half / t_eager))
        print(rows[-1], flush=True)
    text = "\n".join(rows) + "\n"
    if argv:
        with open(argv[0], "w") as f:
            f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main(sys.argv[1:])
