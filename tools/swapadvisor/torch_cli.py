"""swapplan-torch's command line: options, loading, the run, output, exit codes."""

import io
import json
import operator
import os
import shutil
import subprocess
import sys
import tempfile
import time

from .outfile import input_named, model_file, write_output, write_stdout
from .errors import (EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, ExportError, IOFailure,
                     UsageError, guarded)

TOOL = "swapplan-torch"

USAGE = """\
usage: swapplan-torch PLAN --graph GRAPH MODEL [--batch N] [--device cpu|cuda]
                      [--iterations N] [--init STATE.pt] [--inputs INPUTS.pt]
                      [--save-state OUT.pt] [--report FILE.json] [--seed N] [--force] [-q]

Runs a swap plan as real PyTorch training steps: the plan's compute and recompute nodes
run the aten ops of their graph op on real tensors, its swaps copy between device and
host buffers, and every tensor is dropped when its placement ends, so the live device
bytes follow the plan (checked against its memory_bytes). The plan is compiled once into
straight-line Python (its faults found on fake tensors, before any kernel runs) and each
step runs that code; on CUDA the step is captured as a CUDA graph and replayed. GRAPH must be the graph the plan
was made for, exported by dfg-from-torch from MODEL (profiled or not); MODEL is traced
again the same way and must lower to the same ops and tensors. The update is the
export's optimizer (its "source" block), so N iterations are N training steps.

PLAN, GRAPH            the plan and its graph (- for stdin, one of them)
MODEL                  torchvision:NAME or FILE.py:FUNC, as given to dfg-from-torch

options
  --batch N            batch size (default: the graph's "batch")
  --device D           cpu (default) or cuda (three CUDA streams, pinned host buffers)
  --iterations N       training steps (default 2)
  --init STATE.pt      a state_dict() saved with torch.save, loaded before the first step
                       (default: the model's own initialisation under --seed)
  --inputs INPUTS.pt   torch.save of (inputs, targets), each a tuple of tensors in the
                       order the model and the loss take them; used by every step
                       (default: float tensors from torch.randn under --seed, integer
                       ones zero, or the tensors FILE.py:FUNC returned)
  --save-state OUT.pt  the model's state_dict() after the last step (torch.save)
                       (--init, --inputs: - is stdin; --save-state, --report: stdout)
  --report FILE.json   per-step figures: wall_s, peak_live_bytes, nodes run by kind,
                       h2d_bytes, d2h_bytes, loss (and max_memory_allocated on CUDA)
  --seed N             torch.manual_seed(N) before building the model and again before
                       the first step (default 0)
  --force              run a plan that fails strict validation (its violations are
                       printed); a read of a tensor that is not there still fails
  --dump-step FILE     write the compiled step's Python source (- for stdout)
  --interpret          run every step through the checking interpreter instead of the
                       compiled step (same results; 50-130 us more a plan node on a CPU)
  --no-cuda-graph      on CUDA, run the compiled step without capturing it as a CUDA graph
  --cap-memory         on CUDA, cap PyTorch's allocator at the plan's memory_bytes plus
                       its workspace_reserve_bytes (dfg-profile --workspace-reserve; 64 MiB
                       when it has none): torch.cuda.set_per_process_memory_fraction
  -q, --quiet          no notes on stderr
  -h, --help           this help

exit status: 0 ok, 1 internal error, 2 usage (or torch missing), 3 a bad document, or a
GRAPH that is not MODEL's export, 4 I/O error, 6 the plan fails strict validation,
7 --device cuda without a CUDA device, 8 the plan, run for real, reads a tensor that is
not on the device, loses an update, or passes memory_bytes (the message names the tensor
and the node).
SIGINT, SIGTERM and SIGHUP end it with one line on stderr, no partial output, and
exit status 130, 143 and 129.
"""


# options without a value: the opts key each sets, and to what
FLAGS = {"--force": ("force", True), "--interpret": ("interpret", True), "--no-cuda-graph": ("cuda_graph", False),
         "--cap-memory": ("cap_memory", True), "-q": ("quiet", True), "--quiet": ("quiet", True)}


def parse_args(argv):
    opts = {"plan": None, "graph": None, "model": None, "batch": None, "device": "cpu",
            "iterations": 2, "init": None, "inputs": None, "save_state": None,
            "report": None, "seed": 0, "force": False, "quiet": False, "interpret": False,
            "dump_step": None, "cuda_graph": True, "cap_memory": False}
    pos = []
    i = 0

    def value(opt):
        nonlocal i
        if argv[i].startswith("--") and "=" in argv[i]:
            return argv[i].split("=", 1)[1]
        if i + 1 >= len(argv):
            raise UsageError("option %s needs a value" % opt)
        i += 1
        return argv[i]

    def integer(opt, v, lo, hi=2**31 - 1):
        try:
            n = int(v)
        except ValueError:
            raise UsageError("%s %r is not an integer" % (opt, v))
        if n < lo or n > hi:
            raise UsageError("%s %r must be from %d to %d" % (opt, v, lo, hi))
        return n

    while i < len(argv):
        a = argv[i]
        key = a.split("=", 1)[0] if a.startswith("--") else a
        if key in ("-h", "--help"):
            opts["help"] = True
        elif key == "--graph":
            opts["graph"] = value(key)
        elif key == "--batch":
            opts["batch"] = integer(key, value(key), 1)
        elif key == "--device":
            v = value(key)
            if v not in ("cpu", "cuda"):
                raise UsageError("--device %r: expected cpu or cuda" % v)
            opts["device"] = v
        elif key == "--iterations":
            opts["iterations"] = integer(key, value(key), 1)
        elif key == "--seed":
            opts["seed"] = integer(key, value(key), 0, 2**63 - 1)  # torch.manual_seed's range
        elif key in ("--init", "--inputs", "--report"):
            opts[key[2:]] = value(key)
        elif key == "--save-state":
            opts["save_state"] = value(key)
        elif key in FLAGS:
            opts[FLAGS[key][0]] = FLAGS[key][1]
        elif key == "--dump-step":
            opts["dump_step"] = value(key)
        elif a == "-" or not a.startswith("-"):
            pos.append(a)
        else:
            raise UsageError("unknown option %r" % a)
        i += 1
    if opts.get("help"):
        return opts
    if len(pos) != 2:
        raise UsageError("expected PLAN and MODEL, got %d argument(s)" % len(pos))
    opts["plan"], opts["model"] = pos
    if opts["graph"] is None:
        raise UsageError("--graph GRAPH is required")
    ins = [k for k in ("plan", "graph", "init", "inputs") if opts[k] == "-"]
    if len(ins) > 1:
        raise UsageError("only one of PLAN, GRAPH, --init and --inputs can be stdin (-), not %s"
                         % " and ".join(ins))
    outs = [k for k in ("report", "save_state", "dump_step") if opts[k] == "-"]
    if len(outs) > 1:
        raise UsageError("only one of --report, --save-state and --dump-step can be stdout (-), not %s"
                         % " and ".join("--" + k.replace("_", "-") for k in outs))
    if opts["interpret"] and opts["dump_step"]:
        raise UsageError("--dump-step writes the compiled step: it does not go with --interpret")
    inputs = [opts["plan"], opts["graph"], opts["init"], opts["inputs"], model_file(opts["model"])]
    for key, flag in (("save_state", "--save-state"), ("report", "--report"), ("dump_step", "--dump-step")):
        clash = input_named(opts[key], inputs)
        if clash:
            raise UsageError("%s %s is the input %s: it would be overwritten" % (flag, opts[key], clash))
    rep, st = opts["report"], opts["save_state"]
    if rep and st and rep != "-" and (os.path.realpath(rep) == os.path.realpath(st) or input_named(rep, [st])):
        raise UsageError("--report and --save-state name the same file %s: one would be lost" % st)
    return opts


def read_json(path, what):
    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, "r", encoding="utf-8") as f:
                text = f.read()
    except UnicodeDecodeError as e:
        raise ExportError("%s: the %s is not UTF-8 text (byte %d)" % (path, what, e.start), 3)
    except OSError as e:
        raise IOFailure("cannot read %s: %s" % (path, e.strerror or e))

    def no_dupes(pairs):
        d = {}
        for k, v in pairs:
            if k in d:
                raise ValueError("duplicate key %r" % k)
            d[k] = v
        return d

    def no_constant(c):
        raise ValueError("number %s" % c)

    try:
        return json.loads(text, object_pairs_hook=no_dupes, parse_constant=no_constant)
    except ValueError as e:
        raise ExportError("%s: the %s is not valid JSON: %s" % (path, what, e), 3)


def find_tool(name):
    here = os.path.dirname(os.path.abspath(__file__))
    # beside the command as invoked (bin/, or an installed link in $PREFIX/bin), beside
    # the package, or in the source tree's bin/
    # (or an installation's P/bin, the package being P/lib/swapadvisor/swapadvisor)
    for d in (os.path.dirname(os.path.abspath(sys.argv[0] or ".")), os.path.dirname(here),
              os.path.join(os.path.dirname(os.path.dirname(here)), "bin"),
              os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(here))), "bin")):
        p = os.path.join(d, name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return shutil.which(name)


def validate(plan_path, graph_path, plan_text, graph_text, force, note):
    """Strict validation by swapplan-emit --format check --strict (docs/formats.md
    section 3): exit 6 with its violations unless --force."""
    emit = find_tool("swapplan-emit")
    if emit is None:
        raise ExportError("cannot find swapplan-emit to validate the plan: build the project "
                          "(make) or put it on PATH", EXIT_INTERNAL)
    with tempfile.TemporaryDirectory(prefix="swapplan-torch.") as d:
        p, g = plan_path, graph_path
        if plan_path == "-":
            p = os.path.join(d, "plan.json")
            with open(p, "w") as f:
                f.write(plan_text)
        if graph_path == "-":
            g = os.path.join(d, "graph.json")
            with open(g, "w") as f:
                f.write(graph_text)
        r = subprocess.run([emit, p, "--graph", g, "--format", "check", "--strict"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if r.returncode == 0:
        return
    lines = [ln for ln in (r.stderr + r.stdout).splitlines() if ln.strip()]
    if r.returncode in (3, 4):
        # a malformed or unreadable document: swapplan-emit's one line, as this tool's
        msg = lines[0] if lines else "swapplan-emit exit %d" % r.returncode
        if msg.startswith("swapplan-emit: "):
            msg = msg[len("swapplan-emit: "):]
        raise ExportError(msg, r.returncode)
    if r.returncode == 6 and force:
        for ln in lines[:10]:
            note("--force: %s" % ln)
        return
    for ln in lines[:10]:
        sys.stderr.write(ln + "\n")
    raise ExportError("%s fails strict validation (swapplan-emit exit %d)%s"
                      % (plan_path, r.returncode, "; --force runs it anyway" if r.returncode == 6 else ""),
                      r.returncode if r.returncode in (3, 4, 6) else EXIT_INTERNAL)


def _torch_load(path, what):
    import torch
    if path == "-":  # torch.load seeks: stdin is read whole first
        try:
            path = io.BytesIO(sys.stdin.buffer.read())
        except OSError as e:
            raise IOFailure("cannot read stdin: %s" % (e.strerror or e))
    try:
        try:
            return torch.load(path, map_location="cpu", weights_only=False)
        except TypeError:
            return torch.load(path, map_location="cpu")
    except FileNotFoundError:
        raise IOFailure("cannot read %s: no such file" % path)
    except OSError as e:
        raise IOFailure("cannot read %s: %s" % (path, e.strerror or e))
    except Exception as e:
        raise ExportError("%s: not a torch.save file of %s: %s" % (path, what, str(e).splitlines()[0] if str(e) else type(e).__name__), 3)


def _as_tensors(obj, specs, path, what):
    import torch
    if isinstance(obj, torch.Tensor):
        obj = (obj,)
    if not isinstance(obj, (list, tuple)) or len(obj) != len(specs):
        raise ExportError("%s: %s must be a tuple of %d tensor(s), got %s"
                          % (path, what, len(specs), type(obj).__name__ if not isinstance(obj, (list, tuple))
                             else "%d" % len(obj)), 3)
    for i, (x, s) in enumerate(zip(obj, specs)):
        if not isinstance(x, torch.Tensor):
            raise ExportError("%s: %s[%d] is a %s, not a tensor" % (path, what, i, type(x).__name__), 3)
        if list(x.shape) != list(s.shape) or x.dtype != s.dtype:
            raise ExportError("%s: %s[%d] (%s) is %s %s; the graph was exported with %s %s"
                              % (path, what, i, s.name, list(x.shape), str(x.dtype).replace("torch.", ""),
                                 list(s.shape), str(s.dtype).replace("torch.", "")), 3)
    return list(obj)


def default_values(specs, given):
    import torch
    out = []
    for i, s in enumerate(specs):
        v = given[i] if i < len(given) else None
        if v is not None and list(v.shape) == list(s.shape) and v.dtype == s.dtype:
            out.append(v.detach().clone())
        elif s.dtype.is_floating_point:
            out.append(torch.randn(s.shape, dtype=s.dtype))
        else:
            out.append(torch.zeros(s.shape, dtype=s.dtype))
    return out


class Loaded:
    """What a run needs, loaded and checked: the trace and its binding, the plan, the
    device, the real model and its state as host buffers."""

    def executor(self, device, init, residents):
        """An interpreter of the plan over device (execplan.make_executor)."""
        from . import execplan
        return execplan.make_executor(self.bind, self.p, self.static, device, init, residents, self.plan_path)


def load(opts, note):
    """Reads the plan, the graph and the model as opts says, traces the model, checks the
    graph is its export; returns a Loaded (nothing has run yet)."""
    import torch
    from . import execplan, lower, models, trace

    if opts["device"] == "cuda":
        from . import measure
        measure.check_cuda()
    plan_text = graph_text = None
    if opts["plan"] == "-":
        plan_text = sys.stdin.read()
    if opts["graph"] == "-":
        graph_text = sys.stdin.read()
    graph = read_json(opts["graph"], "graph") if graph_text is None else _loads(graph_text, "-", "graph")
    plan = read_json(opts["plan"], "plan") if plan_text is None else _loads(plan_text, "-", "plan")
    if not isinstance(graph, dict) or graph.get("format") != "dfg":
        raise ExportError('%s: not a dfg graph ("format" is not "dfg")' % opts["graph"], 3)
    validate(opts["plan"], opts["graph"], plan_text if plan_text is not None else "",
             graph_text if graph_text is not None else "", opts["force"], opts.get("warn") or note)

    src = graph.get("source") if isinstance(graph.get("source"), dict) else {}
    if src.get("tool") != "dfg-from-torch":
        raise ExportError("%s: not exported by dfg-from-torch (no \"source\" block naming it): "
                          "swapplan-torch runs graphs of PyTorch models" % opts["graph"], 3)
    optimizer = src.get("optimizer", "sgd")
    if optimizer not in ("sgd", "momentum", "adam"):
        raise ExportError("%s: source.optimizer %r is not sgd, momentum or adam" % (opts["graph"], optimizer), 3)
    if src.get("dtype", "f32") != "f32":
        raise ExportError("%s: exported with --dtype %s; swapplan-torch runs f32 exports (the export "
                          "traces in f32 and relabels the sizes)" % (opts["graph"], src.get("dtype")), 3)
    gb = graph.get("batch")
    if opts["batch"] is not None and isinstance(gb, int) and not isinstance(gb, bool) and opts["batch"] != gb:
        raise ExportError("%s: --batch %d differs from the graph's batch %d: the plan was made for batch %d "
                          "(export and plan the model again at batch %d)"
                          % (opts["graph"], opts["batch"], gb, gb, opts["batch"]), 3)
    batch = opts["batch"] if opts["batch"] is not None else gb
    if not isinstance(batch, int) or batch <= 0:
        raise UsageError("the graph has no \"batch\": give --batch")
    shapes = src.get("inputs")

    # The trace, as the export made it.
    spec = models.load(opts["model"], batch, [])
    _set_shapes(spec, shapes, opts["graph"])
    cap = trace.capture(spec, optimizer, "f32")
    low, doc = lower.lower(cap, spec.name, batch)
    execplan.compare(doc, graph, opts["graph"])
    bind = execplan.Binding(cap, low, doc)
    p = execplan.Plan(plan, opts["plan"], len(doc["ops"]), len(doc["tensors"]))
    note("%s: %d ops, %d plan nodes (%d recompute, %d swap_in, %d swap_out), memory %d bytes"
         % (spec.name, len(doc["ops"]), len(p.kind), p.counts["recompute"], p.counts["swap_in"],
            p.counts["swap_out"], p.memory_bytes))

    # The real model, its state, the inputs.
    torch.manual_seed(opts["seed"])
    real = models.load(opts["model"], batch, [], real=True)
    _set_shapes(real, shapes, opts["graph"])
    module = real.module
    if opts["init"]:
        sd = _torch_load(opts["init"], "a state_dict")
        if not isinstance(sd, dict):
            raise ExportError("%s: not a state_dict (a %s)" % (opts["init"], type(sd).__name__), 3)
        try:
            module.load_state_dict(sd)
        except RuntimeError as e:
            raise ExportError("%s: does not fit %s: %s" % (opts["init"], spec.name,
                                                           " ".join(str(e).split())[:300]), 3)
    if opts["inputs"]:
        obj = _torch_load(opts["inputs"], "(inputs, targets)")
        if not isinstance(obj, (list, tuple)) or len(obj) != 2:
            raise ExportError("%s: expected a tuple (inputs, targets)" % opts["inputs"], 3)
        inputs = _as_tensors(obj[0], spec.inputs, opts["inputs"], "inputs")
        targets = _as_tensors(obj[1], spec.targets, opts["inputs"], "targets")
    else:
        torch.manual_seed(opts["seed"])
        inputs = default_values(spec.inputs, real.input_values)
        targets = default_values(spec.targets, real.target_values)

    dev = execplan.CpuDevice() if opts["device"] == "cpu" else execplan.CudaDevice(len(p.kind))
    named = {}
    for n, t in trace._named_tensors(module, "_parameters") + trace._named_tensors(module, "_buffers"):
        named[n] = t
    host_init = {}
    values = {}   # placeholder name -> real tensor (the model's own, written back at the end)
    phs = [n for n in cap.gm.graph.nodes if n.op == "placeholder"]
    data = iter(inputs + targets)
    for node, (kind, name, param_of) in zip(phs, cap.placeholders):
        if kind == "input":
            v = next(data)
        elif param_of is not None:
            v = torch.zeros_like(named[param_of])
        else:
            v = named.get(name)
            if v is None:
                raise ExportError("internal: %s has no tensor %r" % (spec.name, name))
        fv = node.meta.get("val")
        stride = None if fv is None or fv.is_contiguous() else tuple(fv.stride())
        values[node.name] = (kind, name, param_of, v, stride)
        t = bind.ph_tensor.get(node.name)
        if t is not None and t.id >= 0:
            host_init[t.id] = dev.host_copy(v, stride)
    constant_host_copies(cap, bind, dev, spec.name, host_init)
    if opts["cap_memory"] and opts["device"] == "cuda":
        cap_allocator(p.memory_bytes, p.workspace_reserve, opts.get("warn") or note)
    L = Loaded()
    L.cap, L.bind, L.p, L.dev, L.host_init, L.values, L.module, L.spec = cap, bind, p, dev, host_init, values, module, spec
    L.plan_path = opts["plan"]
    L.static = execplan.static_descs(cap.gm)
    L.loss_node = _loss_node(cap)
    return L


def constant_host_copies(cap, bind, dev, model_name, host_init):
    """Host copies (into host_init, by tensor id) of the tensor constants the traced step
    holds; exit 3 for one whose value the trace did not record."""
    for node in cap.gm.graph.nodes:
        if node.op == "get_attr" and node.name in bind.ph_tensor:
            v = getattr(cap.gm, node.target)
            if type(v).__name__ == "FakeTensor" or v.device.type == "meta":
                raise ExportError("%s: the traced step holds a tensor constant (%s) whose value was not "
                                  "recorded: it cannot be run" % (model_name, node.target), 3)
            host_init[bind.ph_tensor[node.name].id] = dev.host_copy(v)


def compile_loaded(L, note):
    """The Program of a Loaded's plan (compiled.compile_plan)."""
    from . import compiled

    def residents_init():
        out = {tid: L.dev.to_device(L.host_init[tid], -1) for tid in L.p.residents if tid in L.host_init}
        L.dev.sync()
        return out

    return compiled.compile_plan(L.bind, L.p, L.dev, L.host_init, residents_init, L.executor, L.static,
                                 L.loss_node, note)


def run(opts, note):
    import torch
    from . import execplan
    L = load(opts, note)
    bind, p, dev, values, module, spec = L.bind, L.p, L.dev, L.values, L.module, L.spec
    reports = []
    torch.manual_seed(opts["seed"])
    executor = {"mode": "interpreted"}
    if opts["interpret"]:
        ex = L.executor(dev, L.host_init, None)
        dev.sync()
        ex.loss_node = L.loss_node
        final = ex.final_value
        with torch.no_grad():
            for it in range(opts["iterations"]):
                st = ex.iteration()
                reports.append(st)
                _note_step(note, it, st, p)
    else:
        prog = compile_loaded(L, note)
        note("compiled the step in %.2f s: %d lines" % (prog.compile_s, prog.source.count("\n")))
        if opts["dump_step"]:
            _dump(opts["dump_step"], prog.source)
        final = prog.final_value
        executor = {"mode": "compiled", "compiled_on": "fake tensors" if prog.first is None else "the first step",
                    "compile_s": round(prog.compile_s, 4), "lines": prog.source.count("\n")}
        start = 0
        if prog.first is not None:
            reports.append(prog.first)
            _note_step(note, 0, prog.first, p)
            start = 1
        use_graph = opts["device"] == "cuda" and opts["cuda_graph"]
        with torch.no_grad():
            for it in range(start, opts["iterations"]):
                if use_graph and it >= 1 and prog.graph is None:
                    why = prog.capture()
                    if why is not None:
                        err_note = opts.get("warn") or note
                        err_note("CUDA graph capture failed: %s; running without CUDA graphs" % why)
                        use_graph = False
                t0 = time.time()
                loss = prog.replay() if prog.graph is not None else prog.step()
                dev.sync()
                st = dict(prog.stats)
                st["nodes"] = dict(p.counts)
                st["wall_s"] = time.time() - t0
                st["loss"] = float(loss) if loss is not None else None
                st["cuda_graph"] = prog.graph is not None
                m = dev.max_allocated()
                if m is not None:
                    st["max_memory_allocated"] = m
                    dev.reset_peak()
                reports.append(st)
                _note_step(note, it, st, p)
    for k in ("compute", "recompute", "swap_in", "swap_out"):
        if reports[-1]["nodes"][k] != p.counts[k]:
            raise ExportError("internal: ran %d %s nodes of the plan's %d" % (reports[-1]["nodes"][k], k, p.counts[k]))

    if opts["save_state"]:
        for node_name, (kind, name, param_of, v, stride) in values.items():
            t = bind.ph_tensor.get(node_name)
            if kind == "input" or param_of is not None or t is None or t.id < 0:
                continue
            fin = final(t.id).to("cpu")
            with torch.no_grad():
                v.copy_(execplan.layout_view(fin, tuple(v.shape), stride))
        sd = module.state_dict()
        if opts["save_state"] == "-":
            buf = io.BytesIO()
            torch.save(sd, buf)
            write_stdout(buf.getvalue())
        else:
            write_output(opts["save_state"], lambda f: torch.save(sd, f))
    if opts["report"]:
        rep = {"memory_bytes": p.memory_bytes, "device": opts["device"], "model": spec.name,
               "torch": torch.__version__,
               "plan_nodes": p.counts, "executor": executor, "iterations": reports}
        text = json.dumps(rep, indent=1) + "\n"
        if opts["report"] == "-":
            write_stdout(text)
        else:
            write_output(opts["report"], lambda f: f.write(text.encode("utf-8")))


# Bytes kept free beside the plan's memory under --cap-memory when the plan keeps no
# workspace reserve of its own (its device block's workspace_reserve_bytes): the kernels'
# own workspaces, which the graph does not hold (cuBLAS's per-handle workspace and cuDNN's
# per-call convolution workspace: 22.7 MB past memory_bytes on an H100, docs/torch_gpu.md).
WORKSPACE_RESERVE = 64 << 20


def cap_fraction(memory_bytes, total_bytes, reserve=WORKSPACE_RESERVE):
    """The fraction of the GPU's memory that --cap-memory gives PyTorch's allocator: the
    plan's memory plus the workspace reserve, at most the whole GPU."""
    if total_bytes <= 0:
        raise ExportError("the GPU reports %d bytes of memory" % total_bytes, 3)
    return min(1.0, float(memory_bytes + reserve) / float(total_bytes))


def cap_allocator(memory_bytes, plan_reserve, note):
    """Caps PyTorch's allocator at the plan's memory plus its workspace reserve (the plan
    was made in memory_bytes = the memory asked for less that reserve), or plus
    WORKSPACE_RESERVE when the plan keeps none."""
    import torch
    total = torch.cuda.get_device_properties(0).total_memory
    reserve = plan_reserve if plan_reserve > 0 else WORKSPACE_RESERVE
    f = cap_fraction(memory_bytes, total, reserve)
    torch.cuda.set_per_process_memory_fraction(f)
    note("--cap-memory: the allocator is capped at %.4f of %d bytes (%d + %d workspace reserve%s)"
         % (f, total, memory_bytes, reserve, "" if plan_reserve > 0 else ", the default: the plan keeps none"))


def _note_step(note, it, st, p):
    note("step %d: %.3f s, loss %s, peak live %d bytes of %d, %d recomputes, %d swaps in, %d out"
         % (it + 1, st["wall_s"], "%.6g" % st["loss"] if st.get("loss") is not None else "?",
            st["peak_live_bytes"], p.memory_bytes, st["nodes"]["recompute"],
            st["nodes"]["swap_in"], st["nodes"]["swap_out"]))


def _dump(path, text):
    if path == "-":
        write_stdout(text.encode("utf-8") if not isinstance(text, bytes) else text)
    else:
        write_output(path, lambda f: f.write(text.encode("utf-8")))


def _loads(text, path, what):
    try:
        return json.loads(text)
    except ValueError as e:
        raise ExportError("%s: the %s is not valid JSON: %s" % (path, what, e), 3)


def _set_shapes(spec, shapes, graph_path):
    if not isinstance(shapes, list):
        return
    if len(shapes) != len(spec.inputs):
        raise ExportError("%s: source.inputs has %d shape(s), the model takes %d input(s)"
                          % (graph_path, len(shapes), len(spec.inputs)), 3)
    for s, sh in zip(spec.inputs, shapes):
        if not isinstance(sh, list) or not all(isinstance(d, int) and d > 0 for d in sh):
            raise ExportError("%s: source.inputs: %r is not a shape" % (graph_path, sh), 3)
        s.shape = list(sh)


def _loss_node(cap):
    import torch.fx
    for n in cap.gm.graph.nodes:
        if n.op == "output":
            from torch.utils._pytree import tree_flatten
            flat = tree_flatten(n.args[0])[0]
            if flat and isinstance(flat[0], torch.fx.Node):
                m = flat[0]
                if m.op == "call_function" and m.target is operator.getitem:
                    return (m.args[0], m.args[1])
                return (m, None)
    return None


def main(argv):
    def err(msg):
        sys.stderr.write("%s: %s\n" % (TOOL, msg))

    try:
        opts = parse_args(argv)
    except UsageError as e:
        err("%s (try --help)" % e)
        return EXIT_USAGE
    if opts.get("help"):
        # a full disk or a closed pipe is exit 4 with one line, as for any output
        return guarded(err, lambda: write_stdout(USAGE))
    opts["warn"] = (lambda m: None) if opts["quiet"] else err
    quiet = opts["quiet"] or not sys.stderr.isatty()
    note = (lambda m: None) if quiet else err
    if os.environ.get("DFG_FROM_TORCH_VERBOSE") and not opts["quiet"]:
        note = err
    return guarded(err, lambda: run(opts, note), opts.get("model"))
