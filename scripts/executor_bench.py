#!/usr/bin/env python3
"""The executor's speed on the CPU (docs/torch.md, "How fast a plan runs").

For each model of bench/torch_models.py, in one run: a plan that swaps nothing (topo at
2x the peak) run by swapplan-torch's compiled step and by its interpreter (--interpret),
beside eager PyTorch's step and the exported aten graph run as the traced torch.fx
GraphModule (straight-line Python over the same ops: the floor for any Python executor
of that graph); then the search's plan at 0.5x, its swaps and recomputes. All run in this
process, one step of each in turn per round (the machine's load falls on all alike);
times are the median of STEPS rounds after WARM warm-up rounds, THREADS torch threads. Writes a table to stdout (and OUT if given).

    /usr/bin/python3 scripts/executor_bench.py [OUT]      # STEPS=10 WARM=2 MODELS="mlp ..."
"""

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


def variants(model, batch, plan, gp):
    """name -> step function, all in this process: eager PyTorch, the traced GraphModule
    (the floor), the compiled plan and the interpreted plan; and the aten node count."""
    import torch
    from swapadvisor import eager, models, torch_cli, trace
    torch.manual_seed(0)
    spec = models.load(model, batch, [], real=True)
    ins = [torch.randn(s.shape) if s.dtype.is_floating_point else torch.zeros(s.shape, dtype=s.dtype)
           for s in spec.inputs]
    tgs = [torch.randn(s.shape) if s.dtype.is_floating_point else torch.zeros(s.shape, dtype=s.dtype)
           for s in spec.targets]
    module = spec.module
    module.train()
    ps = [p for _, p in eager.unique_params(module) if p.requires_grad]

    def eager_step():
        loss = spec.loss_fn(module(*ins), *tgs)
        grads = torch.autograd.grad(loss, ps, allow_unused=True)
        with torch.no_grad():
            for p, g in zip(ps, grads):
                if g is not None:
                    p.add_(g, alpha=-0.01)

    cap = trace.capture(models.load(model, batch, []), "sgd", "f32")
    params = [p.detach().clone() for _, p in eager.unique_params(module)]
    bufs = [b.detach().clone() for _, b in trace._named_tensors(module, "_buffers")]

    def floor_step():
        with torch.no_grad():
            cap.gm(params, bufs, [], ins, tgs)

    out = {"eager": eager_step, "floor": floor_step}
    for name, p in (("compiled", plan), ("interpret", plan), ("plan0.5x", None)):
        path = p if p is not None else gp[1]
        opts = torch_cli.parse_args([path, "--graph", gp[0], model, "-q"])
        L = torch_cli.load(opts, lambda m: None)
        if name == "interpret":
            ex = L.executor(L.dev, L.host_init, None)
            ex.loss_node = L.loss_node
            out[name] = (lambda ex: lambda: _nograd(ex.iteration))(ex)
        else:
            prog = torch_cli.compile_loaded(L, lambda m: None)
            out[name] = (lambda prog: lambda: _nograd(prog.step))(prog)
            out[name + "_plan"] = L.p
    aten_nodes = sum(1 for n in cap.gm.graph.nodes if n.op == "call_function")
    return out, aten_nodes


def _nograd(fn):
    import torch
    with torch.no_grad():
        return fn()


def timed(steps):
    """Median seconds of each variant's step, the variants run in turn (one step each per
    round) so that the machine's load falls on all of them alike."""
    names = [k for k, v in steps.items() if callable(v)]
    walls = {k: [] for k in names}
    for _ in range(WARM + STEPS):
        for k in names:
            t0 = time.perf_counter()
            steps[k]()
            walls[k].append(time.perf_counter() - t0)
    return {k: median_steps(w) for k, w in walls.items()}


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
        half = os.path.join(wd, "half.json")
        tool("swapadvisor-search", [gp, "--memory", "0.5x", "--generations", "3", "--threads", "2",
                                    "--seed", "1", "-q", "-o", half])
        steps, aten_nodes = variants(m, batch, plan, (gp, half))
        t = timed(steps)
        t_eager, t_floor, t_comp, t_int, t_half = (t["eager"], t["floor"], t["compiled"], t["interpret"],
                                                   t["plan0.5x"])
        nodes = len(steps["compiled_plan"].kind)
        hc = steps["plan0.5x_plan"].counts
        rows.append("%s  %d  %d  %d  %.2f  %.2f  %.2f  %.2f  %.2f  %.2f  %.1f  %.1f  %.2f  %d  %d  %.2f"
                    % (model, batch, aten_nodes, nodes, t_eager * 1e3, t_floor * 1e3, t_comp * 1e3, t_int * 1e3,
                       t_comp / t_floor, t_comp / t_eager, (t_comp - t_floor) / nodes * 1e6,
                       (t_int - t_floor) / nodes * 1e6, t_half * 1e3, hc["swap_in"],
                       hc["recompute"], t_half / t_eager))
        print(rows[-1], flush=True)
    text = "\n".join(rows) + "\n"
    if argv:
        with open(argv[0], "w") as f:
            f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main(sys.argv[1:])
