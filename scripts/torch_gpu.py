#!/usr/bin/env python3
"""scripts/torch_gpu.py - a swap plan trained for real on a GPU, beside what a PyTorch
user would do instead (docs/torch_gpu.md).

For each MODEL and batch (default torchvision:resnet50 at 32, torchvision:vit_b_16 at
16 and bench/torch_models.py:gpt2_small at 8) and each --memory FRACTION (default 0.5
and 0.3) it
  1. exports one training step (dfg-from-torch), profiles it for a bundled device profile
     (dfg-profile; --profile-measure times the ops on this GPU, so the plan's prediction
     is of this GPU), plans it at FRACTION of its no-swap peak
     (swapadvisor-search --memory FRACTIONx) and trains with the plan (swapplan-torch
     --device D --report): 2 warm-up steps, then --iterations timed ones;
  2. runs, in this process, the same model and batch as plain PyTorch, each variant the
     median of --iterations steps after 2 warm-ups (torch.cuda.synchronize around each
     step on CUDA), its peak torch.cuda.max_memory_allocated() (reset per variant):
       eager        forward, loss, torch.autograd.grad, SGD lr 0.01 (the export's step,
                    tools/swapadvisor/eager.py); "oom" when it does not fit
       checkpoint   torch.utils.checkpoint (non-reentrant) around each block
       save_on_cpu  torch.autograd.graph.save_on_cpu(pin_memory=True)
       offload      activation offloading on a side stream through saved_tensors_hooks, as
                    torchtune and TRL ship it: each saved tensor copied to pinned host
                    memory on its own stream while the forward goes on, copied back when
                    the backward unpacks it
       compile      torch.compile with torch._functorch.config.activation_memory_budget
                    = FRACTION (torch >= 2.4; skipped with the reason otherwise)
  3. appends one CSV row per variant to --out (header when the file is new; the whole
     file rewritten through a temporary file and a rename):
       device,torch,model,batch,memory_fraction,memory_bytes,variant,iteration_ms,
       peak_bytes,predicted_ms,predicted_peak_bytes,note

Exit status: 0 ok; 1 a pipeline tool failed (one line on stderr naming it); 2 usage, or
no torch. Progress goes to stderr.

    scripts/torch_gpu.py                                    # on a GPU machine, after make
    scripts/torch_gpu.py --device cpu --model torchvision:resnet18 --batch 2 \\
        --iterations 2 --generations 2 --out /tmp/smoke.csv  # smoke run without a GPU
"""

import argparse
import csv
import gc
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
TOOLS = os.path.join(REPO, "tools")
if TOOLS not in sys.path:
    sys.path.insert(0, TOOLS)

PROG = "torch_gpu"
COLUMNS = ["device", "torch", "model", "batch", "memory_fraction", "memory_bytes", "variant",
           "iteration_ms", "peak_bytes", "predicted_ms", "predicted_peak_bytes", "note"]
DEFAULT_MODELS = [("torchvision:resnet50", 32), ("torchvision:vit_b_16", 16),
                  (os.path.join(REPO, "bench", "torch_models.py") + ":gpt2_small", 8)]
VARIANTS = ["plan", "eager", "checkpoint", "save_on_cpu", "offload", "compile"]
WARMUP = 2


class Failure(Exception):
    """A pipeline step failed: one line, exit status 1."""


def note(msg):
    sys.stderr.write("%s: %s\n" % (PROG, msg))
    sys.stderr.flush()


def one_line(e):
    text = " ".join(str(e).split())
    if len(text) > 240:
        text = text[:237] + "..."
    return "%s: %s" % (type(e).__name__, text) if text else type(e).__name__


# ---------------------------------------------------------------- options

def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="scripts/torch_gpu.py",
        description="Train a swap plan with swapplan-torch and time it beside eager PyTorch, "
                    "torch.utils.checkpoint, save_on_cpu and torch.compile with an activation "
                    "memory budget; append the rows to a CSV (docs/torch_gpu.md).")
    ap.add_argument("--model", action="append", default=None,
                    help="torchvision:NAME or FILE.py:FUNC, repeatable (default: "
                         "torchvision:resnet50 and torchvision:vit_b_16)")
    ap.add_argument("--batch", action="append", type=int, default=None,
                    help="batch size: once for every model, or once per --model "
                         "(default 32 for resnet50, 16 for vit_b_16)")
    ap.add_argument("--memory", default="0.5,0.3", metavar="FRACTIONS",
                    help="plan memory as fractions of the graph's no-swap peak, comma-separated; "
                         "also the compile variant's activation_memory_budget (default 0.5,0.3)")
    ap.add_argument("--workspace-reserve", default=None, metavar="SIZE",
                    help="dfg-profile --workspace-reserve: device memory the planners leave to "
                         "cuBLAS / cuDNN workspaces (default 64MiB on cuda, none on cpu)")
    ap.add_argument("--no-cuda-graph", action="store_true",
                    help="swapplan-torch --no-cuda-graph: the compiled step without capture")
    ap.add_argument("--iterations", type=int, default=10,
                    help="timed steps per variant, after %d warm-ups (default 10)" % WARMUP)
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--out", default=os.path.join("bench", "results", "torch_gpu.csv"),
                    help="CSV to append to (default bench/results/torch_gpu.csv)")
    ap.add_argument("--generations", type=int, default=None,
                    help="swapadvisor-search --generations (default: the tool's, 30)")
    ap.add_argument("--threads", type=int, default=None,
                    help="swapadvisor-search --threads (default: all cores)")
    ap.add_argument("--time-limit", type=float, default=None, metavar="S",
                    help="swapadvisor-search --time-limit S (default: none)")
    ap.add_argument("--profile", default=None,
                    help="dfg-profile --device: a bundled profile name or a file (default: "
                         "the profile of the GPU found, else an h100 one, else v100-pcie3-16gb)")
    ap.add_argument("--profile-measure", action="store_true",
                    help="dfg-profile --measure: time the ops on this GPU (needs a CUDA build "
                         "of the C tools)")
    ap.add_argument("--variants", default=",".join(VARIANTS),
                    help="comma-separated subset of %s" % ",".join(VARIANTS))
    ap.add_argument("--seed", type=int, default=0, help="model init and inputs (default 0)")
    ap.add_argument("--cap-memory", action="store_true",
                    help="limit this process's CUDA allocator to the plan's memory_bytes "
                         "(torch.cuda.set_per_process_memory_fraction) for the PyTorch "
                         "variants, so that they OOM where a GPU of that size would")
    ap.add_argument("--cpu-compile", action="store_true",
                    help="run the compile variant on --device cpu too (slow; skipped by default)")
    ap.add_argument("--keep", metavar="DIR", default=None,
                    help="keep the graphs, plans and run reports in DIR")
    a = ap.parse_args(argv)
    if a.iterations < 1:
        ap.error("--iterations must be at least 1")
    try:
        a.memories = [float(x) for x in a.memory.split(",") if x.strip()]
    except ValueError:
        ap.error("--memory %r: expected fractions such as 0.5,0.3" % a.memory)
    if not a.memories or not all(0 < m <= 4 for m in a.memories):
        ap.error("--memory FRACTIONS must be in (0, 4], e.g. 0.5,0.3")
    if a.workspace_reserve is None and a.device == "cuda":
        a.workspace_reserve = "64MiB"
    wanted = [v.strip() for v in a.variants.split(",") if v.strip()]
    bad = [v for v in wanted if v not in VARIANTS]
    if bad:
        ap.error("unknown variant(s) %s (expected some of %s)" % (", ".join(bad), ",".join(VARIANTS)))
    a.variants = wanted
    if a.model is None:
        if a.batch is None:
            a.pairs = list(DEFAULT_MODELS)
        elif len(a.batch) == 1:
            a.pairs = [(m, a.batch[0]) for m, _ in DEFAULT_MODELS]
        else:
            ap.error("several --batch without --model")
    else:
        if a.batch is None:
            batches = [dict(DEFAULT_MODELS).get(m, 32) for m in a.model]
        elif len(a.batch) == 1:
            batches = a.batch * len(a.model)
        elif len(a.batch) == len(a.model):
            batches = a.batch
        else:
            ap.error("give one --batch, or one per --model")
        a.pairs = list(zip(a.model, batches))
    if any(b < 1 for _, b in a.pairs):
        ap.error("--batch must be positive")
    return a


# ---------------------------------------------------------------- the pipeline tools

def tool_cmd(name):
    """argv prefix for a tool: the Python ones run under this interpreter (the same torch
    as the variants), the C ones from bin/ (make builds them)."""
    if name in ("dfg-from-torch", "swapplan-torch"):
        for d in ("bin", "tools"):
            p = os.path.join(REPO, d, name)
            if os.path.isfile(p):
                return [sys.executable, p]
        raise Failure("%s not found in bin/ or tools/" % name)
    p = os.path.join(REPO, "bin", name)
    if not os.access(p, os.X_OK):
        raise Failure("%s not found: run make first (bin/%s)" % (name, name))
    return [p]


def tool_env():
    env = dict(os.environ)
    env.pop("DFG_FROM_TORCH_REEXEC", None)
    env["DFG_PYTHON"] = sys.executable
    return env


def run_tool(name, args):
    cmd = tool_cmd(name) + args
    note("$ %s" % " ".join([name] + args))
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=tool_env())
    err = [l.strip() for l in p.stderr.decode("utf-8", "replace").splitlines() if l.strip()]
    if p.returncode != 0:
        raise Failure("%s failed (exit %d): %s" % (name, p.returncode,
                                                     err[-1] if err else "no message"))
    for line in err[-3:]:
        note("  %s" % line)
    note("  %s: %.1f s" % (name, time.time() - t0))
    return p.stdout.decode("utf-8", "replace")


def list_profiles():
    try:
        out = run_tool("dfg-profile", ["--list-devices"])
    except Failure:
        return []
    return [l.split()[0] for l in out.splitlines() if l.strip()]


def gpu_name():
    try:
        import torch
        if torch.cuda.is_available():
            return torch.cuda.get_device_name(0)
    except Exception:
        pass
    return None


def pick_profile(given, device, names):
    """--profile, else the bundled profile of the GPU found (the tools' table,
    swapadvisor.torch.profile_for_gpu), else for a GPU it lacks an h100 one, else
    v100-pcie3-16gb."""
    if given:
        return given
    from swapadvisor.torch import profile_for_gpu
    prof = profile_for_gpu(gpu_name()) if device == "cuda" else None
    if prof not in names:
        prof = next((n for w in ("h100-sxm", "h100") for n in names if n.startswith(w)), None)
    return prof or "v100-pcie3-16gb"


def pipeline(model, batch, a, work, profile, fraction):
    """Export, profile, plan, train with the plan. Returns (plan, report, graph_path)."""
    stem = os.path.join(work, "%s.b%d.m%g" % (model.replace(":", "_").replace("/", "_"), batch, fraction))
    g, gp, pl, rep = stem + ".json", stem + ".p.json", stem + ".plan.json", stem + ".run.json"
    run_tool("dfg-from-torch", [model, "--batch", str(batch), "-q", "-o", g])
    prof = ["--device", profile] + (["--measure"] if a.profile_measure else []) + \
        (["--workspace-reserve", a.workspace_reserve] if a.workspace_reserve else [])
    run_tool("dfg-profile", [g] + prof + ["-o", gp])
    search = [gp, "--memory", "%gx" % fraction, "-o", pl]
    if a.generations is not None:
        search += ["--generations", str(a.generations)]
    if a.threads is not None:
        search += ["--threads", str(a.threads)]
    if a.time_limit is not None:
        search += ["--time-limit", "%g" % a.time_limit]
    run_tool("swapadvisor-search", search)
    plan = read_json(pl, "swapadvisor-search")
    report = None
    if "plan" in a.variants:
        run_tool("swapplan-torch", [pl, "--graph", gp, model, "--device", a.device,
                                    "--iterations", str(a.iterations + WARMUP),
                                    "--seed", str(a.seed), "--report", rep]
                 + (["--cap-memory"] if a.cap_memory and a.device == "cuda" else [])
                 + (["--no-cuda-graph"] if a.no_cuda_graph else []))
        report = read_json(rep, "swapplan-torch")
    return plan, report


def read_json(path, tool):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise Failure("%s wrote no readable %s: %s" % (tool, path, one_line(e)))


def plan_row(plan, report, device):
    """The plan's row: median wall time of the steps after the warm-ups, the peak."""
    pred = plan.get("predicted") or {}
    pred_ms = pred.get("iteration_us")
    row = {"variant": "plan",
           "predicted_ms": "%.3f" % (pred_ms / 1000.0) if isinstance(pred_ms, (int, float)) else "",
           "predicted_peak_bytes": plan.get("arena_bytes", "")}
    its = (report or {}).get("iterations") or []
    if not its:
        row.update(iteration_ms="", peak_bytes="", note="not run")
        return row
    timed = its[WARMUP:] if len(its) > WARMUP else its
    row["iteration_ms"] = "%.3f" % (1000.0 * statistics.median(i["wall_s"] for i in timed))
    live = max(i.get("peak_live_bytes", 0) for i in timed)
    srch = plan.get("search") or {}
    bits = ["swapplan-torch %d steps" % len(timed), "peak_live_bytes %d" % live,
            "recompute %d swap_in %d swap_out %d" % tuple(
                timed[-1]["nodes"].get(k, 0) for k in ("recompute", "swap_in", "swap_out")),
            "h2d %d d2h %d bytes" % (timed[-1].get("h2d_bytes", 0), timed[-1].get("d2h_bytes", 0)),
            "plan %s of %s" % (srch.get("answer", "?"), srch.get("algorithm", "?")),
            "device profile %s" % (plan.get("device") or {}).get("name", "?")]
    if device == "cuda" and all("max_memory_allocated" in i for i in timed):
        row["peak_bytes"] = max(i["max_memory_allocated"] for i in timed)
        mem = (plan.get("device") or {}).get("memory_bytes")
        if isinstance(mem, int) and row["peak_bytes"] > mem:
            # the graph's tensors stay within it (peak_live_bytes): the rest is the
            # executor's temporaries (scratch_peak_bytes) and what the kernels allocate
            # (workspaces), which a plan does not count
            bits.append("allocator peak above memory_bytes by %d bytes (scratch_peak_bytes %d)"
                        % (row["peak_bytes"] - mem, max(i.get("scratch_peak_bytes", 0) for i in timed)))
    else:
        row["peak_bytes"] = live
        bits.insert(1, "peak_bytes is peak_live_bytes (no allocator peak on %s)" % device)
    loss = timed[-1].get("loss")
    if isinstance(loss, (int, float)):
        bits.append("loss %.5g" % loss)
    ex = (report or {}).get("executor") or {}
    bits.append("executor %s%s" % (ex.get("mode", "?"), ", CUDA graph" if timed[-1].get("cuda_graph") else ""))
    row["note"] = "; ".join(bits)
    return row


# ---------------------------------------------------------------- the PyTorch variants

def torch_version():
    import torch
    v = torch.__version__.split("+")[0].split(".")
    try:
        return int(v[0]), int("".join(ch for ch in v[1] if ch.isdigit()) or 0)
    except (IndexError, ValueError):
        return 0, 0


def is_oom(e):
    import torch
    cls = getattr(torch.cuda, "OutOfMemoryError", None)
    if cls is not None and isinstance(e, cls):
        return True
    return isinstance(e, RuntimeError) and "out of memory" in str(e).lower()


def build(model, batch, seed, device):
    """The real model (initialised under seed) and the inputs swapplan-torch uses by
    default (torch.randn under seed, integer targets zero), on device."""
    import torch
    from swapadvisor import models
    from swapadvisor.torch_cli import default_values
    torch.manual_seed(seed)
    spec = models.load(model, batch, [], real=True)
    torch.manual_seed(seed)
    inputs = default_values(spec.inputs, spec.input_values)
    targets = default_values(spec.targets, spec.target_values)
    module = spec.module.to(device)
    return (module, spec.loss_fn, [t.to(device) for t in inputs], [t.to(device) for t in targets])


def make_step(module, fwd, loss_fn, inputs, targets, ctx=None):
    """One eager training step as tools/swapadvisor/eager.py's eager_steps runs it
    (the export's optimizer, SGD lr 0.01): forward through fwd, the loss,
    torch.autograd.grad, the update in place. ctx() wraps forward and loss."""
    import torch
    from swapadvisor.eager import unique_params
    from swapadvisor.trace import _update
    module.train()
    params = [p for _, p in unique_params(module) if p.requires_grad]

    def step():
        if ctx is not None:
            with ctx():
                loss = loss_fn(fwd(*inputs), *targets)
        else:
            loss = loss_fn(fwd(*inputs), *targets)
        grads = torch.autograd.grad(loss, params, allow_unused=True)
        with torch.no_grad():
            for p, g in zip(params, grads):
                if g is not None:
                    _update("sgd", p, g, [])
        return loss.detach()
    return step


def blocks(module):
    """The modules torch.utils.checkpoint goes around: the elements of the outermost
    nn.Sequential / nn.ModuleList containers that hold at least two modules with
    parameters (resnet's bottlenecks, vit's encoder layers); a model with none: its
    top-level children with parameters."""
    import torch.nn as nn
    out = []

    def with_params(m):
        return any(True for _ in m.parameters())

    def walk(m):
        for c in m.children():
            if isinstance(c, (nn.Sequential, nn.ModuleList)) and \
                    sum(1 for x in c.children() if with_params(x)) >= 2:
                out.extend(x for x in c.children() if with_params(x))
            else:
                walk(c)
    walk(module)
    if not out:
        out = [c for c in module.children() if with_params(c)]
    return out


def checkpoint_blocks(module):
    """Wraps every block's forward in torch.utils.checkpoint (use_reentrant=False)."""
    import torch.utils.checkpoint as cp
    bl = blocks(module)
    for b in bl:
        orig = b.forward

        def fwd(*args, _orig=orig, **kwargs):
            if kwargs:
                return cp.checkpoint(lambda *x: _orig(*x, **kwargs), *args, use_reentrant=False)
            return cp.checkpoint(_orig, *args, use_reentrant=False)
        b.forward = fwd
    return len(bl)


class _BudgetConfig:
    """torch._functorch.config.activation_memory_budget = fraction, restored on exit."""

    def __init__(self, fraction):
        self.fraction = fraction
        self.old = None

    def __enter__(self):
        import torch._functorch.config as fc
        self.old = fc.activation_memory_budget
        fc.activation_memory_budget = self.fraction
        return self

    def __exit__(self, *exc):
        import torch._functorch.config as fc
        fc.activation_memory_budget = self.old
        return False


def time_steps(step, iterations, device):
    """2 warm-ups, then iterations timed steps; (median ms, peak bytes or None, loss)."""
    import torch
    cuda = device == "cuda"
    loss = None
    for _ in range(WARMUP):
        loss = step()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(iterations):
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        loss = step()
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    peak = int(torch.cuda.max_memory_allocated()) if cuda else None
    return 1000.0 * statistics.median(times), peak, float(loss)


def skip_reason(variant, a, device):
    """Why variant cannot run here, or None."""
    import torch
    if variant == "compile":
        if torch_version() < (2, 4):
            return "skipped: torch %s < 2.4 has no torch._functorch.config.activation_memory_budget" \
                % torch.__version__
        try:
            import torch._functorch.config as fc
        except Exception as e:
            return "skipped: torch._functorch.config: %s" % one_line(e)
        if not hasattr(fc, "activation_memory_budget"):
            return "skipped: torch %s has no torch._functorch.config.activation_memory_budget" \
                % torch.__version__
        if device == "cpu" and not a.cpu_compile:
            return "skipped on cpu: compiling takes minutes here (--cpu-compile runs it)"
    return None


def run_variant(variant, model, batch, a, device, fraction):
    """One PyTorch variant: its row fields (iteration_ms, peak_bytes, note)."""
    import torch
    why = skip_reason(variant, a, device)
    if why:
        return {"iteration_ms": "skipped", "peak_bytes": "", "note": why}
    bits = []
    state = {}
    try:
        module, loss_fn, inputs, targets = build(model, batch, a.seed, device)
        state["m"] = module
        fwd, ctx, budget = module, None, None
        if variant == "checkpoint":
            n = checkpoint_blocks(module)
            bits.append("torch.utils.checkpoint(use_reentrant=False) around %d blocks" % n)
        elif variant == "save_on_cpu":
            pin = device == "cuda"
            ctx = lambda: torch.autograd.graph.save_on_cpu(pin_memory=pin)
            bits.append("save_on_cpu(pin_memory=%s)" % pin)
            if device == "cpu":
                bits.append("on cpu the saved tensors stay in host memory: nothing moves")
        elif variant == "offload":
            ctx = lambda: offload_hooks(device)
            bits.append("saved tensors offloaded to pinned host memory on a side stream (saved_tensors_hooks)")
        elif variant == "compile":
            torch._dynamo.reset()
            budget = _BudgetConfig(fraction)
            fwd = torch.compile(module)
            bits.append("torch.compile(module), activation_memory_budget %g; warm-ups compile" % fraction)
        step = make_step(module, fwd, loss_fn, inputs, targets, ctx)
        if budget is not None:
            with budget:
                ms, peak, loss = time_steps(step, a.iterations, device)
        else:
            ms, peak, loss = time_steps(step, a.iterations, device)
        bits.append("%d steps after %d warm-ups" % (a.iterations, WARMUP))
        bits.append("loss %.5g" % loss)
        if device != "cuda":
            bits.append("no allocator peak on %s" % device)
        return {"iteration_ms": "%.3f" % ms, "peak_bytes": "" if peak is None else peak,
                "note": "; ".join(bits)}
    except Exception as e:
        if device == "cuda" and is_oom(e):
            return {"iteration_ms": "oom", "peak_bytes": _peak(device),
                    "note": "; ".join(bits + ["out of memory: %s" % one_line(e)[:160]])}
        if variant == "compile":
            return {"iteration_ms": "skipped", "peak_bytes": "",
                    "note": "skipped: torch.compile failed: %s" % one_line(e)}
        return {"iteration_ms": "error", "peak_bytes": "", "note": "; ".join(bits + [one_line(e)])}
    finally:
        state.clear()
        gc.collect()
        if device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        if variant == "compile" and hasattr(torch, "_dynamo"):
            try:
                torch._dynamo.reset()
            except Exception:
                pass


class offload_hooks:
    """Activation offloading as torchtune's OffloadActivations and TRL ship it, reduced to
    its core: torch.autograd.graph.saved_tensors_hooks whose pack copies each saved tensor
    (not a parameter, above 64 KiB) to pinned host memory on a side stream, the compute
    stream going on meanwhile, and whose unpack waits for that copy and brings the tensor
    back. On the CPU the copies are plain clones."""

    MIN_BYTES = 64 << 10

    def __init__(self, device):
        import torch
        self.device = device
        self.stream = torch.cuda.Stream() if device == "cuda" else None
        self.ctx = torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack)

    def pack(self, t):
        import torch
        if isinstance(t, torch.nn.Parameter) or t.numel() * t.element_size() < self.MIN_BYTES:
            return t
        if self.stream is None:
            return ("host", t.detach().clone(), None)
        self.stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.stream):
            h = torch.empty(t.shape, dtype=t.dtype, pin_memory=True)
            h.copy_(t, non_blocking=True)
            t.record_stream(self.stream)
            ev = torch.cuda.Event()
            ev.record(self.stream)
        return ("host", h, ev)

    def unpack(self, packed):
        import torch
        if not (isinstance(packed, tuple) and len(packed) == 3 and packed[0] == "host"):
            return packed
        _, h, ev = packed
        if ev is None:
            return h
        torch.cuda.current_stream().wait_event(ev)
        return h.to("cuda", non_blocking=True)

    def __enter__(self):
        self.ctx.__enter__()
        return self

    def __exit__(self, *exc):
        return self.ctx.__exit__(*exc)


def _peak(device):
    import torch
    return int(torch.cuda.max_memory_allocated()) if device == "cuda" else ""


# ---------------------------------------------------------------- the CSV

def append_rows(path, rows):
    """Appends rows to the CSV at path (a header first when it is new), writing the whole
    file to a temporary file beside it and renaming it over."""
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    old = ""
    if os.path.exists(path):
        with open(path, newline="") as f:
            old = f.read()
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    if not old.strip():
        old = ""
        w.writeheader()
    elif not old.endswith("\n"):
        old += "\n"
    for r in rows:
        w.writerow({k: r.get(k, "") for k in COLUMNS})
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp", dir=d)
    try:
        with os.fdopen(fd, "w", newline="") as f:
            f.write(old + buf.getvalue())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# ---------------------------------------------------------------- main

def bench_model(model, batch, a, work, profile, dev_name, fraction):
    import torch
    note("%s batch %d: pipeline (profile %s, memory %gx)" % (model, batch, profile, fraction))
    plan, report = pipeline(model, batch, a, work, profile, fraction)
    mem = (plan.get("device") or {}).get("memory_bytes", "")
    base = {"device": dev_name, "torch": torch.__version__, "model": model, "batch": batch,
            "memory_fraction": "%g" % fraction, "memory_bytes": mem}
    rows = []
    if "plan" in a.variants:
        r = dict(base, **plan_row(plan, report, a.device))
        note("  plan: %s ms (predicted %s ms), peak %s bytes (predicted %s)"
             % (r["iteration_ms"], r["predicted_ms"], r["peak_bytes"], r["predicted_peak_bytes"]))
        rows.append(r)
    capped = False
    if a.cap_memory and a.device == "cuda" and isinstance(mem, int) and mem > 0:
        total = torch.cuda.get_device_properties(0).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, mem / float(total)), 0)
        capped = True
    try:
        for v in a.variants:
            if v == "plan":
                continue
            note("  %s ..." % v)
            r = dict(base, variant=v, **run_variant(v, model, batch, a, a.device, fraction))
            if capped:
                r["note"] = "allocator capped at memory_bytes; " + r["note"]
            elif a.device == "cuda" and isinstance(r.get("peak_bytes"), int) and isinstance(mem, int) \
                    and r["peak_bytes"] > mem:
                r["note"] += "; peak above memory_bytes"
            if r["iteration_ms"] in ("skipped", "error", "oom"):
                note("  %s: %s (%s)" % (v, r["iteration_ms"], r["note"]))
            else:
                note("  %s: %s ms, peak %s bytes" % (v, r["iteration_ms"], r["peak_bytes"] or "-"))
            rows.append(r)
    finally:
        if capped:
            torch.cuda.set_per_process_memory_fraction(1.0, 0)
    return rows


def _reexec_with_torch():
    """Like the tools (swapadvisor/launch.py): without torch here, run again under
    $DFG_PYTHON or /usr/bin/python3."""
    import importlib.util
    try:
        if importlib.util.find_spec("torch") is not None:
            return True
    except (ImportError, ValueError):
        pass
    if os.environ.get("TORCH_GPU_REEXEC"):
        return False
    me = os.path.abspath(sys.executable or "")
    for py in [os.environ.get("DFG_PYTHON"), "/usr/bin/python3"]:
        if py and os.path.isfile(py) and os.access(py, os.X_OK) and os.path.abspath(py) != me:
            os.execve(py, [py, os.path.realpath(__file__)] + sys.argv[1:],
                      dict(os.environ, TORCH_GPU_REEXEC="1"))
    return False


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    if argv is None and not _reexec_with_torch():
        note("PyTorch is not installed for %s (nor for /usr/bin/python3): run with "
             "DFG_PYTHON=/path/to/python3 that has torch" % sys.executable)
        return 2
    import torch
    if a.device == "cuda" and not torch.cuda.is_available():
        note("no CUDA device: torch.cuda.is_available() is false (torch %s); --device cpu "
             "runs the smoke test" % torch.__version__)
        return 2
    dev_name = torch.cuda.get_device_name(0) if a.device == "cuda" else "cpu"
    note("torch %s (%s) on %s; %d model(s); variants %s"
         % (torch.__version__, sys.executable, dev_name, len(a.pairs), ",".join(a.variants)))
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
        work = a.keep
    else:
        work = tempfile.mkdtemp(prefix="torch_gpu.")
    try:
        profile = pick_profile(a.profile, a.device, list_profiles())
        total = 0
        for model, batch in a.pairs:
            for fraction in a.memories:
                rows = bench_model(model, batch, a, work, profile, dev_name, fraction)
                append_rows(a.out, rows)
                total += len(rows)
                note("%s batch %d at %gx: %d row(s) appended to %s" % (model, batch, fraction, len(rows), a.out))
    except Failure as e:
        note(str(e) + (" (files in %s)" % work if a.keep else ""))
        return 1
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    note("done: %d row(s) in %s" % (total, a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
