"""swapadvisor.torch: plan a PyTorch training step and train with the plan, from Python.

    from swapadvisor.torch import plan_training
    step = plan_training(model, loss_fn, example_inputs, example_targets, optimizer=opt,
                         memory="0.5x", device="cpu", autocast=torch.bfloat16,
                         clip_grad_norm=1.0)
    for x, y in loader:
        loss = step(x, y)     # forward, loss, backward, clipping, opt's update, as planned
        sched.step()

plan_training traces the step (as dfg-from-torch does), profiles it (dfg-profile with a
bundled device profile), plans it (swapadvisor-search), compiles the plan (as
swapplan-torch does) and returns a TrainingStep. The step trains the user's own module and
optimizer in place: between steps, every parameter and buffer of the module and every
state tensor in optimizer.state holds its current value (a resident tensor is the device
buffer itself, a swapped one its host copy), so state_dict(), torch.save and
load_state_dict work as usual; a tensor replaced or reloaded between steps is copied into
the plan's buffers before the next one. The optimizer's hyperparameters are read from its
param_groups at every step (an LR scheduler works without planning again): each update op
of the plan calls the optimizer's own step on that one parameter.

Plans are cached on disk (cache_dir, else $SWAPADVISOR_CACHE, else
~/.cache/swapadvisor), keyed by the graph, the device profile, the memory and the search
options: a second run with the same model, batch, memory and profile does not search.

Errors are PlanError exceptions whose message is the one line the tools print and whose
`code` is their exit status.
"""

import functools
import hashlib
import json
import os
import subprocess
import sys
import time

from .errors import ExportError

__all__ = ["plan_training", "TrainingStep", "PlanError"]


class PlanError(ExportError):
    """A model that cannot be planned or run, with the tools' one-line message and exit
    status (`code`: 3 the model or a document, 4 I/O, 5 no plan fits the memory, 7 no CUDA
    device, 8 the plan fails when run)."""


def _find_tool(name):
    from .torch_cli import find_tool
    p = find_tool(name)
    if p is None:
        raise PlanError("cannot find %s: build the project (make) or put it on PATH" % name, 1)
    return p


# A GPU's name (torch.cuda.get_device_name, lower case) to its bundled profile: the
# first key the name contains.  scripts/torch_gpu.py reads the same table.
_GPU_PROFILES = (("h200", "h200-sxm-141gb"), ("h100 pcie", "h100-pcie-80gb"), ("h100", "h100-sxm5-80gb"),
                 ("a100-sxm4-80gb", "a100-sxm4-80gb"), ("a100 80gb", "a100-sxm4-80gb"),
                 ("a100", "a100-pcie4-40gb"), ("v100", "v100-pcie3-16gb"))


def profile_for_gpu(name):
    """The bundled profile of the GPU named name, or None for a GPU the table lacks."""
    name = (name or "").lower()
    for key, prof in _GPU_PROFILES:
        if key in name:
            return prof
    return None


def default_profile(device):
    """The bundled profile for device: the GPU's own by its name on CUDA, else the
    V100 profile that README's pipeline uses."""
    if device == "cuda":
        import torch
        prof = profile_for_gpu(torch.cuda.get_device_name(0))
        if prof:
            return prof
    return "v100-pcie3-16gb"


def _profile_path(profile, device):
    """The profile file: profile itself when it is a path, else the bundled profile of
    that name as dfg-profile --list-devices finds it (None: default_profile)."""
    if profile is None:
        profile = default_profile(device)
    if os.sep in profile or profile.endswith(".json"):
        if not os.path.isfile(profile):
            raise PlanError("cannot read the profile %s: no such file" % profile, 4)
        return profile
    names = _bundled_profiles()
    if profile not in names:
        raise PlanError("no bundled device profile %r (there are: %s)" % (profile, ", ".join(sorted(names))), 2)
    return names[profile]


def _tool_key(name):
    """The tool's path and its file's identity: what a tool's answer is cached under, so
    that a rebuilt tool, or another one first on PATH, is asked again."""
    exe = _find_tool(name)
    try:
        st = os.stat(exe)
        return exe, st.st_mtime_ns, st.st_size
    except OSError:
        return exe, 0, 0


@functools.lru_cache(maxsize=None)
def _tool_answer(key, args, name):
    return _run_tool([key[0]] + list(args), "", name)


def _bundled_profiles():
    """name -> file of each bundled profile, as dfg-profile --list-devices finds them (asked
    once a process per build of the tool: every plan_training call would otherwise start
    it again)."""
    listed = _tool_answer(_tool_key("dfg-profile"), ("--list-devices",), "dfg-profile")
    return dict(ln.partition("\t")[::2] for ln in listed.splitlines())


def _search_version():
    """swapadvisor-search --version, part of the cache key (asked once a process per build
    of the tool)."""
    return _tool_answer(_tool_key("swapadvisor-search"), ("--version",), "swapadvisor-search").strip()


def _cache_dir(cache_dir):
    d = cache_dir or os.environ.get("SWAPADVISOR_CACHE") or \
        os.path.join(os.path.expanduser("~"), ".cache", "swapadvisor")
    d = os.path.join(d, "plans")
    try:
        os.makedirs(d, exist_ok=True)
    except OSError as e:
        raise PlanError("cannot make the plan cache %s: %s" % (d, e.strerror or e), 4)
    return d


def _run_tool(args, stdin_text, what):
    r = subprocess.run(args, input=stdin_text, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if r.returncode != 0:
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        raise PlanError(lines[0] if lines else "%s exit %d" % (what, r.returncode), r.returncode)
    return r.stdout


def _write_atomic(path, text):
    """path holds text whole or not at all (outfile.write_output: a temporary file renamed)."""
    from .outfile import write_output
    try:
        write_output(path, lambda f: f.write(text.encode("utf-8")))
    except ExportError as e:
        raise PlanError(str(e), e.code)


def _as_tuple(x, what):
    import torch
    if isinstance(x, torch.Tensor):
        return (x,)
    if isinstance(x, (list, tuple)) and all(isinstance(t, torch.Tensor) for t in x):
        return tuple(x)
    raise PlanError("%s must be a tensor or a tuple of tensors, not %s" % (what, type(x).__name__), 2)


def _parse_memory(memory):
    if isinstance(memory, (int, float)) and not isinstance(memory, bool):
        if memory <= 0:
            raise PlanError("memory %r must be positive" % memory, 2)
        return str(int(memory)) if memory >= 16 else "%gx" % memory
    if isinstance(memory, str) and memory.strip():
        return memory.strip()
    raise PlanError("memory %r: give bytes, a size (\"8GiB\") or a fraction of the peak (\"0.5x\")" % (memory,), 2)


class _Note:
    def __init__(self, verbose):
        self.on = sys.stderr.isatty() if verbose is None else bool(verbose)

    def __call__(self, msg):
        if self.on:
            sys.stderr.write("swapadvisor: %s\n" % msg)
            sys.stderr.flush()


def plan_training(model, loss_fn, example_inputs, example_targets, optimizer, memory="0.5x", device="cpu",
                  autocast=None, clip_grad_norm=None, accumulate=1, grad_scaler=None, time_limit=None, profile=None,
                  seed=1,
                  generations=None, threads=None, cache_dir=None, verbose=None):
    """Plans model's training step and returns a TrainingStep that runs it.

    model, loss_fn: loss = loss_fn(model(*inputs), *targets). example_inputs and
    example_targets: a tensor or a tuple of tensors each; only their shapes and dtypes are
    planned for, and every step must pass the same. optimizer: a torch.optim SGD, Adam or
    AdamW over the model's trainable parameters. memory: device bytes, a size string
    ("8GiB") or a fraction of the unplanned peak ("0.5x"); a number below 16 is taken as
    that fraction (0.5 is "0.5x"), from 16 up as bytes. device: "cpu" or "cuda".
    autocast: None, torch.bfloat16, or torch.float16 (CUDA): torch.autocast around the
    forward and the loss. clip_grad_norm: the max global 2-norm of the gradients, as
    torch.nn.utils.clip_grad_norm_(params, clip_grad_norm) before the update.
    accumulate: gradient accumulation over that many micro-batches of the example's shapes
    (each micro-batch's loss divided by it, the gradients summed, one update); the step
    then takes a list of that many inputs and of as many targets.
    grad_scaler: a torch.amp / torch.cuda.amp GradScaler for float16 autocast: each step
    scales the loss, unscales the gradients (before clipping), skips the update when one is
    not finite and updates the scale, as scaler.scale(loss).backward(), unscale_, step and
    update do (the loop calls none of them).
    time_limit (seconds), generations, seed, threads: swapadvisor-search's options.
    profile: a bundled device profile's name ("h100-sxm5-80gb"), a profile file, or None
    for the GPU's own (CUDA) or the V100's. cache_dir: where plans are kept. verbose:
    progress lines on stderr (default: when stderr is a terminal).
    """
    import torch
    from . import execplan, lower, models, trace

    note = _Note(verbose)
    if device not in ("cpu", "cuda"):
        raise PlanError("device %r: expected \"cpu\" or \"cuda\"" % (device,), 2)
    if device == "cuda":
        from . import measure
        try:
            measure.check_cuda()
        except ExportError as e:
            raise PlanError(str(e), e.code)
    if autocast is not None and autocast not in (torch.bfloat16, torch.float16):
        raise PlanError("autocast %r: expected torch.bfloat16 or torch.float16" % (autocast,), 2)
    if autocast is not None and not _autocast_works(device, autocast):
        raise PlanError("autocast=%s does not run on %s with torch %s%s" % (
            str(autocast).replace("torch.", ""), device, torch.__version__,
            "; on the CPU use torch.bfloat16" if device == "cpu" else ""), 2)
    if grad_scaler is not None:
        if not hasattr(grad_scaler, "_lazy_init_scale_growth_tracker") or not hasattr(grad_scaler, "is_enabled"):
            raise PlanError("grad_scaler must be a torch.amp.GradScaler, not %s" % type(grad_scaler).__name__, 2)
        if not grad_scaler.is_enabled():
            grad_scaler = None
        else:
            dev = getattr(grad_scaler, "_device", "cuda")
            if dev != device:
                raise PlanError("grad_scaler is for %s, the step runs on %s" % (dev, device), 2)
            if grad_scaler._scale is None:
                grad_scaler._lazy_init_scale_growth_tracker(torch.device(device))
    if clip_grad_norm is not None and not (isinstance(clip_grad_norm, (int, float)) and clip_grad_norm > 0):
        raise PlanError("clip_grad_norm %r must be a positive number" % (clip_grad_norm,), 2)
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise PlanError("optimizer must be a torch.optim optimizer (SGD, Adam or AdamW), not %s"
                        % type(optimizer).__name__, 2)
    if not isinstance(accumulate, int) or isinstance(accumulate, bool) or accumulate < 1:
        raise PlanError("accumulate %r must be a positive integer" % (accumulate,), 2)
    ins = _as_tuple(example_inputs, "example_inputs")
    tgs = _as_tuple(example_targets, "example_targets")
    mem = _parse_memory(memory)
    name = type(model).__name__
    batch = int(ins[0].shape[0]) if ins and ins[0].dim() > 0 else 1
    spec = models.ModelSpec(name, model, [models.InputSpec(x.shape, x.dtype, "input%d" % i) for i, x in enumerate(ins)],
                            [models.InputSpec(y.shape, y.dtype, "target%d" % i) for i, y in enumerate(tgs)], loss_fn)
    try:
        t0 = time.time()
        cap = trace.capture(spec, torch_opt=optimizer, autocast=autocast, clip_norm=clip_grad_norm,
                            device_type=device, accumulate=accumulate, scaler=grad_scaler)
        src = {"tool": "swapadvisor.torch", "model": name, "torch": torch.__version__,
               "optimizer": type(optimizer).__name__, "autocast": str(autocast).replace("torch.", "") if autocast
               else None, "clip_grad_norm": clip_grad_norm, "accumulate": accumulate, "grad_scaler": grad_scaler is not None, "inputs": [list(x.shape) for x in ins]}
        low, doc = lower.lower(cap, name, batch, {"source": src})
        note("%s: traced and lowered in %.1f s: %d ops, %d tensors" % (name, time.time() - t0, len(doc["ops"]),
                                                                       len(doc["tensors"])))
        if profile == "measure":
            from . import measure
            measure.measure(cap, low, doc, note)
            prof = _profile_path(None, device)
        else:
            prof = _profile_path(profile, device)
        graph_text = json.dumps(doc, sort_keys=True)
        with open(prof, "r") as f:
            prof_text = f.read()
        search = ["--memory", mem, "--seed", str(int(seed))]
        if time_limit is not None:
            search += ["--time-limit", str(time_limit)]
        if generations is not None:
            search += ["--generations", str(int(generations))]
        if threads is not None:
            search += ["--threads", str(int(threads))]
        version = _search_version()
        key = hashlib.sha256("\0".join([version, graph_text, prof_text] + search).encode("utf-8")).hexdigest()
        cdir = _cache_dir(cache_dir)
        gpath = os.path.join(cdir, key[:32] + ".graph.json")
        ppath = os.path.join(cdir, key[:32] + ".plan.json")
        t1 = time.time()
        from .torch_cli import read_json, validate
        cached = os.path.isfile(ppath) and os.path.isfile(gpath)
        if cached:
            try:
                validate(ppath, gpath, "", "", False, lambda m: None)
                note("plan found in the cache: %s" % ppath)
            except ExportError as e:
                # a damaged entry (a full disk, an edit): planned again and replaced
                note("the cached plan %s is not valid (%s): planning again" % (ppath, e))
                cached = False
        if not cached:
            profiled = _run_tool([_find_tool("dfg-profile"), "-", "--device", prof], graph_text, "dfg-profile")
            note("searching for a plan in %s (swapadvisor-search %s)" % (mem, " ".join(search[2:])))
            plan_text = _run_tool([_find_tool("swapadvisor-search"), "-", "-q"] + search, profiled,
                                  "swapadvisor-search")
            _write_atomic(gpath, profiled)
            _write_atomic(ppath, plan_text)
            validate(ppath, gpath, "", "", False, note)
        plan_s = time.time() - t1
        pdoc = read_json(ppath, "plan")
        p = execplan.Plan(pdoc, ppath, len(doc["ops"]), len(doc["tensors"]))
        note("plan: memory %d bytes, %d recomputes, %d swaps in, %d out (%s in %.1f s)"
             % (p.memory_bytes, p.counts["recompute"], p.counts["swap_in"], p.counts["swap_out"],
                "read from the cache" if cached else "searched", plan_s))
        st = TrainingStep(cap, low, doc, p, ppath, device, note)
        st.accumulate = accumulate
        st.scaler = grad_scaler
        st.plan_path, st.cached, st.plan_seconds = ppath, cached, plan_s
        return st
    except PlanError:
        raise
    except ExportError as e:
        raise PlanError(str(e), e.code)


def _autocast_works(device, dtype):
    """Whether torch.autocast(device, dtype) is on in this torch (torch 1.13's CPU
    autocast knows bfloat16 only, and turns itself off with a warning otherwise)."""
    import warnings
    import torch
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with torch.autocast(device_type=device, dtype=dtype):
                if device == "cpu":
                    return bool(torch.is_autocast_cpu_enabled())
                return bool(torch.is_autocast_enabled())
        except (RuntimeError, AssertionError):
            return False


class TrainingStep:
    """A compiled plan over the user's module and optimizer: step(inputs, targets) runs one
    training iteration and returns the loss (a 0-d tensor on the device)."""

    def __init__(self, cap, low, doc, plan, plan_path, device, note):
        import torch
        from . import compiled, execplan
        self.device = device
        self.opt = cap.torch_opt
        bind = execplan.Binding(cap, low, doc)
        self.bind, self.plan, self.doc = bind, plan, doc
        dev = execplan.CpuDevice() if device == "cpu" else execplan.CudaDevice(len(plan.kind))
        self.dev = dev
        named = dict(cap.named)   # the traced module's parameters and buffers by name
        host_init = {}
        self.inputs = []      # (tid, shape, dtype) per input and target, in order
        self.sync = []        # (tid, kind, name or (param, state name), shape)
        self.layout = {}      # tid -> the strides its placeholder was traced with, where not row-major
        phs = [n for n in cap.gm.graph.nodes if n.op == "placeholder"]
        for node, (kind, name, param_of) in zip(phs, cap.placeholders):
            t = bind.ph_tensor.get(node.name)
            fv = node.meta.get("val")
            if kind == "input":
                self.inputs.append((t.id if t is not None and t.id >= 0 else None, tuple(fv.shape), fv.dtype, name))
                v = torch.zeros(fv.shape, dtype=fv.dtype)
            elif param_of is not None:
                p = named[param_of]
                sname = name[len(param_of) + 1:]
                v = self.opt.state.get(p, {}).get(sname)
                if v is None:
                    v = torch.zeros_like(p, device="cpu")
                if t is not None and t.id >= 0:
                    self.sync.append((t.id, "state", (p, sname), tuple(fv.shape)))
            else:
                v = named[name]
                if t is not None and t.id >= 0:
                    self.sync.append((t.id, "tensor", v, tuple(fv.shape)))
            if t is not None and t.id >= 0:
                if not fv.is_contiguous():
                    self.layout[t.id] = tuple(fv.stride())
                host_init[t.id] = dev.host_copy(v, self.layout.get(t.id))
        from .torch_cli import _loss_node, constant_host_copies
        constant_host_copies(cap, bind, dev, cap.model_name, host_init)
        self.found = [None]   # this step's found_inf (GradScaler), read by the first update
        updaters = {op: _updater(self.opt, named[ua.name], ua.group, cap.update_states[ua.name], self.found)
                    for op, ua in bind.update_args.items()}
        static = execplan.static_descs(cap.gm)

        def make_ex(device_, init, residents):
            ex = execplan.make_executor(bind, plan, static, device_, init, residents, plan_path)
            ex.updaters = updaters
            return ex

        def residents_init():
            out = {tid: dev.to_device(host_init[tid], -1) for tid in plan.residents if tid in host_init}
            dev.sync()
            return out

        self._compile = (bind, plan, dev, host_init, residents_init, make_ex, static, _loss_node(cap), note)
        self.host_init = host_init
        self.residents = set(plan.residents)
        self.mine = {}    # tid -> the tensor the user's module or optimizer was last given
        self.steps = 0
        self.memory_bytes = plan.memory_bytes
        self.prog = self.source = self.stats = None
        try:
            self._compiled(compiled.compile_plan(*self._compile, first_step=False))
        except compiled.NeedsRealStep as e:
            # an op fake tensors cannot run: the first step, run by the checking
            # interpreter on its real inputs, is recorded instead
            note("compiling on fake tensors failed (%s); the first step compiles the plan as it runs" % e)
        self._empty = {}
        self.accumulate = 1
        self.scaler = None
        self.skipped = False

    def _compiled(self, prog):
        self.prog = prog
        self.source = prog.source
        self.stats = prog.stats
        self._publish()

    def _first_step(self, xs):
        """The step that compiles the plan (compile_plan's fallback): the host buffers take
        the inputs and the user's current tensors, then the interpreter runs and records."""
        import torch
        from . import compiled, execplan
        with torch.no_grad():
            for (tid, shape, dtype, name), x in zip(self.inputs, xs):
                if tid is not None:
                    self.host_init[tid].copy_(x.reshape(-1))
            for tid, kind, who, shape in self.sync:
                cur = who if kind == "tensor" else self.opt.state.get(who[0], {}).get(who[1])
                if cur is not None:
                    execplan.layout_view(self.host_init[tid], shape, self.layout.get(tid)).copy_(cur.detach())
            prog = compiled.compile_plan(*self._compile, first_step=True)
        self._compiled(prog)
        if prog.first is None:
            with torch.no_grad():
                return prog.step()
        loss = prog.first.get("loss")
        return torch.tensor(loss, dtype=torch.float32) if loss is not None else None

    def _view(self, tid, shape):
        from . import execplan
        return execplan.layout_view(self.prog.final_value(tid), shape, self.layout.get(tid))

    def _publish(self):
        """Points the module's tensors and the optimizer's state at the plan's buffers."""
        opt = self.opt
        for tid, kind, who, shape in self.sync:
            v = self._view(tid, shape)
            if kind == "tensor":
                who.data = v
            else:
                # a state the optimizer has not made yet stays unmade: its first step
                # makes it (the updater copies it into the plan's buffer)
                p, sname = who
                st = opt.state.get(p)
                if st is not None and st.get(sname) is not None:
                    st[sname] = v
            self.mine[tid] = v

    def _collect(self):
        """Copies into the plan's buffers what the user replaced or reloaded since the last
        step (load_state_dict, opt.load_state_dict, p.data = ...)."""
        opt = self.opt
        for tid, kind, who, shape in self.sync:
            mine = self.mine[tid]
            if kind == "tensor":
                cur = who
            else:
                p, sname = who
                cur = opt.state.get(p, {}).get(sname)
                if cur is None:
                    continue  # a new optimizer state: its first step makes it
            if cur.data_ptr() != mine.data_ptr() or cur.device != mine.device:
                if tuple(cur.shape) != shape:
                    raise PlanError("%s has shape %s, the plan was made for %s: plan again"
                                    % (_what(kind, who), list(cur.shape), list(shape)), 3)
                with __import__("torch").no_grad():
                    mine.copy_(cur)

    def __call__(self, inputs, targets):
        try:
            return self._step(inputs, targets)
        except ExportError as e:
            if self.prog is not None:
                self._publish()   # the module's tensors are the plan's buffers again
            if isinstance(e, PlanError):
                raise
            # a plan fault (exit 8) or a kernel refusing the data (exit 3), one line
            raise PlanError(str(e), e.code)

    step = __call__

    def _step(self, inputs, targets):
        import torch
        if self.accumulate > 1:
            xs = ()
            for what, micro in (("inputs", inputs), ("targets", targets)):
                if not isinstance(micro, list) or len(micro) != self.accumulate:
                    raise PlanError("with accumulate=%d, %s must be a list of %d micro-batches"
                                    % (self.accumulate, what, self.accumulate), 2)
                for j, m in enumerate(micro):
                    xs += _as_tuple(m, "%s[%d]" % (what, j))
        else:
            xs = _as_tuple(inputs, "inputs") + _as_tuple(targets, "targets")
        if len(xs) != len(self.inputs) - (self.scaler is not None):
            raise PlanError("the step takes %d input(s) and target(s), got %d"
                            % (len(self.inputs) - (self.scaler is not None), len(xs)), 2)
        if self.scaler is not None:
            xs = xs + (self.scaler._scale.detach().to("cpu").reshape(self.inputs[-1][1]),)
        for (tid, shape, dtype, name), x in zip(self.inputs, xs):
            if tuple(x.shape) != shape or x.dtype != dtype:
                raise PlanError("%s is %s %s; the plan was made for %s %s" % (
                    name, list(x.shape), str(x.dtype).replace("torch.", ""), list(shape),
                    str(dtype).replace("torch.", "")), 3)
        if self.prog is None:
            self.found[0] = None
            loss = self._first_step(xs)
            return self._after(loss)
        for (tid, shape, dtype, name), x in zip(self.inputs, xs):
            if tid is not None:
                self.prog.set_host(tid, x.detach())
        self._collect()
        if self.device == "cuda":
            # a resident's buffer may be swapped out and freed within the step: the
            # module must not hold it meanwhile
            for tid, kind, who, shape in self.sync:
                if kind == "tensor" and tid in self.residents:
                    who.data = self._empty.setdefault(who.dtype, torch.empty(0, dtype=who.dtype))
        self.found[0] = None
        with torch.no_grad():
            loss = self.prog.step()
        self._publish()
        return self._after(loss)

    def _after(self, loss):
        if self.scaler is not None:
            self._update_scale()
        self.steps += 1
        # what torch.optim's step does for LR schedulers (they warn when it was not called)
        if hasattr(self.opt, "_step_count"):
            self.opt._step_count += 1
        self.opt._opt_called = True
        return loss

    def _update_scale(self):
        """GradScaler.update with this step's found_inf: the scale backs off after a
        skipped step and grows after growth_interval clean ones (its own kernel)."""
        import torch
        sc = self.scaler
        found = self.found[0] if self.found[0] is not None else 0.0
        f = torch.full(sc._scale.shape, found, dtype=torch.float32, device=sc._scale.device)
        torch._amp_update_scale_(sc._scale, sc._growth_tracker, f, sc._growth_factor, sc._backoff_factor,
                                 sc._growth_interval)
        self.skipped = bool(found)


def _what(kind, who):
    if kind == "tensor":
        return "a tensor of the model"
    return "optimizer state %r" % who[1]


def _updater(opt, param, gi, state_names, found_cell):
    """fn(p, g, states, coef, inv_scale, found_inf): torch.optim's step for one parameter of
    the plan (param, in param_groups[gi]), with the hyperparameters that group holds now.
    The optimizer's raw step (without the hooks and counters that wrap it) runs over a
    one-parameter copy of the group, with the plan's buffers as the parameter and its
    states; a state the optimizer has not made yet (its first step) is made by it and
    copied into the plan's buffers. With a GradScaler the gradient is unscaled first, and a
    step whose found_inf is set changes nothing (found_cell[0] keeps it for the step: read
    once, by the first update)."""
    import inspect
    raw = inspect.unwrap(type(opt).step)
    names = list(state_names)

    def update(p, g, states, coef, inv_scale, found_inf):
        if found_inf is not None:
            if found_cell[0] is None:
                found_cell[0] = float(found_inf.item())
            if found_cell[0]:
                return
            g = g.mul(inv_scale)  # GradScaler.unscale_'s in-place product, made here
        if coef is not None:
            g = g.mul(coef)       # clip_grad_norm_'s
        st = opt.state[param]
        ready = all(st.get(n) is not None for n in names)
        if ready:
            for n, s in zip(names, states):
                st[n] = s
        one = dict(opt.param_groups[gi])
        one["params"] = [p]
        saved = opt.param_groups
        p.grad = g
        opt.state[p] = st
        opt.param_groups = [one]
        try:
            raw(opt)
        finally:
            opt.param_groups = saved
            del opt.state[p]
            p.grad = None
        if not ready:
            for n, s in zip(names, states):
                s.copy_(st[n])
                st[n] = s
    return update
