"""Capture one training step as an aten-level fx graph with make_fx on fake tensors.

The step is   out = model(*inputs); loss = loss_fn(out, *targets);
              grads = torch.autograd.grad(loss, params); optimizer update in place
traced by torch.fx.experimental.proxy_tensor.make_fx (torch 1.13 and 2.x) with every
parameter, buffer, optimizer state, input and target a FakeTensor: shapes and dtypes
without storage, so nothing is allocated and a model larger than the machine traces.

While tracing, every fx node created is tagged (meta "sa_phase", "sa_path"):
- the phase (forward, backward, update) from where in the step it was created;
- forward nodes: the module path on top of a stack kept by forward pre/post hooks;
- backward nodes: the module path of the forward op whose autograd node ran them.
  Forward torch calls are watched by a TorchFunctionMode that gives each new autograd
  node the module path of its call; a post hook on that autograd node tags the fx
  nodes created since the previous one.
"""

import os
import traceback

from .errors import TraceError

PHASES = ("forward", "backward", "update")

# this package's folder: its frames are never the model's line in a message
_PKG_DIR = os.path.dirname(os.path.abspath(__file__)).replace("\\", "/") + "/"


def dense_strides(t):
    """t's strides where t is dense but not row-major (every element of its storage once, in
    a permuted order: a transposed tensor), else None (row-major). The trace gives a
    parameter or buffer its own dense layout, so that the plan's kernels see the strides
    the eager loop's do (a BLAS may round a transposed product differently); a layout
    with gaps or repeats becomes row-major."""
    if t.is_contiguous() or t.numel() == 0:
        return None
    dims = sorted((st, sz) for st, sz in zip(t.stride(), t.shape) if sz != 1)
    expected = 1
    for st, sz in dims:
        if st != expected:
            return None
        expected *= sz
    return tuple(t.stride())


def _named_tensors(module, attr):
    """(name, tensor) for every registered parameter (attr "_parameters") or buffer
    ("_buffers"), aliases (tied weights) included, in registration order."""
    out, seen_mod = [], set()

    def walk(m, prefix):
        if id(m) in seen_mod:
            # a module reached twice: its tensors are reachable under both paths
            pass
        seen_mod.add(id(m))
        for n, t in getattr(m, attr).items():
            if t is not None:
                out.append((prefix + n, t))
        for n, c in m._modules.items():
            if c is not None:
                walk(c, prefix + n + ".")

    walk(module, "")
    return out


def _module_paths(module):
    paths, seen = [], set()

    def walk(m, prefix):
        if id(m) not in seen:
            seen.add(id(m))
            paths.append((prefix, m))
        for n, c in m._modules.items():
            if c is not None:
                walk(c, (prefix + "." if prefix else "") + n)

    walk(module, "")
    return paths


class Captured:
    """The traced step and what the lowering needs to read it."""

    def __init__(self):
        self.gm = None
        self.placeholders = []   # (kind, name, param_name_or_None) per flat input, in order
        self.grad_of = []        # output index -> param name, for the returned grads
        self.params_no_grad = []  # trainable params autograd gave no gradient
        self.optimizer = None
        self.dtype = "f32"
        self.torch_version = None
        # with a torch.optim optimizer (the Python API): param name -> update op type
        # and state names, the optimizer's param_groups index of each parameter
        self.update_type = {}
        self.update_states = {}
        self.group_of = {}
        self.torch_opt = None
        self.clip_index = None   # output index of the clipping coefficient, if clipped
        self.inv_index = None    # with a GradScaler: output indices of 1/scale and found_inf
        self.found_index = None
        self.scale_input = None  # the placeholders' name of the GradScaler's scale
        self.autocast = None     # (device type, dtype) of torch.autocast around the forward
        self.named = []          # (name, tensor) of the module's parameters and buffers
        self.model_name = None


def _reparametrized(module, sd):
    """A context in which module's parameters and buffers are the tensors of sd. It spans
    the forward and the backward, so a torch.utils.checkpoint region recomputed during the
    backward runs on the traced tensors too (functional_call would have put the module's
    own back by then)."""
    from torch.nn.utils.stateless import _reparametrize_module  # torch 1.13 and 2.x
    return _reparametrize_module(module, sd)


def _make_fx():
    from torch.fx.experimental.proxy_tensor import make_fx
    return make_fx


class _Tagger:
    """Tags fx nodes with phase and module path as they are created."""

    def __init__(self):
        self.phase = "forward"
        self.stack = []
        self.pending = []
        self.claimed = {}
        self.hooks = []

    def on_node(self, node):
        node.meta["sa_phase"] = self.phase
        if self.phase == "forward":
            node.meta["sa_path"] = self.stack[-1] if self.stack else ""
        elif self.phase == "backward":
            self.pending.append(node)
        else:
            node.meta["sa_path"] = "update"

    def flush(self, path):
        for n in self.pending:
            n.meta["sa_path"] = path
        self.pending = []

    def claim(self, out, path):
        """Gives every autograd node reachable from out and not yet claimed the
        module path `path` and a post hook that tags its backward fx nodes."""
        import torch
        from torch.utils._pytree import tree_flatten

        todo = [t.grad_fn for t in tree_flatten(out)[0]
                if isinstance(t, torch.Tensor) and t.grad_fn is not None]
        while todo:
            f = todo.pop()
            if f is None or f in self.claimed:
                continue
            self.claimed[f] = path
            try:
                self.hooks.append(f.register_hook(self._hook(path)))
            except RuntimeError:
                pass
            todo.extend(nf for nf, _ in f.next_functions if nf is not None)

    def _hook(self, path):
        def hook(grad_inputs, grad_outputs):
            self.flush(path)
        return hook


def _claim_mode(tagger):
    from torch.overrides import TorchFunctionMode

    class _Claim(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if tagger.phase == "forward":
                tagger.claim(out, tagger.stack[-1] if tagger.stack else "")
            return out

    return _Claim()


def _patch_create_node(tagger):
    import torch.fx

    orig = torch.fx.Graph.create_node

    def create_node(self, *args, **kwargs):
        node = orig(self, *args, **kwargs)
        tagger.on_node(node)
        return node

    torch.fx.Graph.create_node = create_node
    return lambda: setattr(torch.fx.Graph, "create_node", orig)


def optimizer_states(optimizer):
    return {"sgd": [], "momentum": ["momentum_buffer"], "adam": ["exp_avg", "exp_avg_sq"]}[optimizer]


def torch_optimizer_plan(opt, params, model_name):
    """For a torch.optim optimizer over a module's (name, parameter) list: param name ->
    (update type, state names, param_groups index). SGD (momentum, nesterov, weight decay,
    dampening, maximize), Adam and AdamW (amsgrad, weight decay, maximize) are supported;
    every trainable parameter must be in exactly one group."""
    import torch
    where = {}
    for gi, group in enumerate(opt.param_groups):
        for p in group["params"]:
            where[id(p)] = gi
    by_id = {}
    for name, p in params:
        by_id.setdefault(id(p), name)
    for gi, group in enumerate(opt.param_groups):
        for p in group["params"]:
            if id(p) not in by_id:
                raise TraceError("%s: param_groups[%d] holds a tensor of shape %s that is not a parameter of "
                                 "the model" % (model_name, gi, list(p.shape)))
        if group.get("fused"):
            raise TraceError("%s: param_groups[%d] has fused=True: the plan updates one parameter at a time; "
                             "make the optimizer with fused=False" % (model_name, gi))
    out = {}
    for name, p in params:
        if not p.requires_grad or name != by_id[id(p)]:
            continue
        gi = where.get(id(p))
        if gi is None:
            raise TraceError("%s: parameter %s requires grad but is in none of the optimizer's param_groups "
                             "(freeze it with requires_grad_(False), or add it)" % (model_name, name))
        group = opt.param_groups[gi]
        if isinstance(opt, torch.optim.SGD):
            mom = group.get("momentum", 0)
            out[name] = ("momentum", ["momentum_buffer"], gi) if mom != 0 else ("sgd", [], gi)
        elif isinstance(opt, (torch.optim.Adam, torch.optim.AdamW)):
            st = ["exp_avg", "exp_avg_sq"] + (["max_exp_avg_sq"] if group.get("amsgrad") else [])
            out[name] = ("adam", st, gi)
        else:
            raise TraceError("%s: the optimizer %s is not supported: torch.optim.SGD, Adam and AdamW are"
                             % (model_name, type(opt).__name__))
    return out


def clip_coefficient(grads, max_norm, device_type, inv_scale=None):
    """min(1, max_norm / (total norm + 1e-6)) over grads, by the same torch calls that
    torch.nn.utils.clip_grad_norm_ (norm 2, foreach as it picks by default on
    device_type) makes in this torch, so its bits are the eager loop's. inv_scale: the
    gradients are the GradScaler's scaled ones, whose unscaled values (g * inv_scale, the
    product GradScaler.unscale_ makes in place) are normed, one at a time."""
    import torch
    from torch.nn.utils import clip_grad as cg
    max_norm = float(max_norm)

    def unscaled(g):
        return g if inv_scale is None else g * inv_scale
    if hasattr(cg, "_group_tensors_by_device_and_dtype"):
        from torch.utils import _foreach_utils as fu
        has = getattr(fu, "_device_has_foreach_support", None)
        foreach = bool(has(torch.device(device_type))) if has is not None else device_type == "cuda"
        groups = {}
        for g in grads:
            groups.setdefault((g.device, g.dtype), []).append(g)
        norms = []
        for gs in groups.values():
            if foreach and inv_scale is None:
                norms.extend(torch._foreach_norm(gs, 2.0))
            elif foreach:
                norms.extend(torch._foreach_norm([unscaled(g)], 2.0)[0] for g in gs)
            else:
                norms.extend([torch.linalg.vector_norm(unscaled(g), 2.0) for g in gs])
        first = grads[0].device
        total = torch.linalg.vector_norm(torch.stack([n.to(first) for n in norms]), 2.0)
    else:
        device = grads[0].device
        total = torch.norm(torch.stack([torch.norm(unscaled(g).detach(), 2.0).to(device) for g in grads]), 2.0)
    clip_coef = max_norm / (total + 1e-6)
    return torch.clamp(clip_coef, max=1.0)


def _update(optimizer, p, g, states, lr=0.01, momentum=0.9, betas=(0.9, 0.999), eps=1e-8, step=10):
    """One steady-state update of parameter p with gradient g, in place, with the math
    of torch.optim.SGD / SGD(momentum) / Adam (no weight decay)."""
    import torch
    if optimizer == "sgd":
        p.add_(g, alpha=-lr)
    elif optimizer == "momentum":
        (buf,) = states
        buf.mul_(momentum).add_(g)
        p.add_(buf, alpha=-lr)
    elif optimizer == "adam":
        m, v = states[:2]
        b1, b2 = betas
        m.mul_(b1).add_(g, alpha=1 - b1)
        v.mul_(b2).addcmul_(g, g, value=1 - b2)
        if len(states) > 2:
            # amsgrad (torch.optim only): the running maximum of v is the denominator's
            vmax = states[2]
            vmax.copy_(torch.maximum(vmax, v))
            v = vmax
        bc1 = 1 - b1 ** step
        bc2 = 1 - b2 ** step
        denom = (v.sqrt() / (bc2 ** 0.5)).add_(eps)
        p.addcdiv_(m, denom, value=-lr / bc1)
    else:
        raise ValueError(optimizer)


def capture(spec, optimizer="sgd", dtype="f32", torch_opt=None, autocast=None, clip_norm=None,
            device_type="cpu", accumulate=1, scaler=None):
    """Traces spec's training step; returns a Captured. optimizer names the export's own
    update rule; torch_opt, a torch.optim optimizer over spec.module's parameters, replaces
    it (the update ops then stand for that optimizer's step, which the executor calls).
    autocast: a dtype for torch.autocast(device_type) around the forward and the loss;
    clip_norm: clip the gradients' global 2-norm to it before the update. accumulate: the
    step is that many forward and backward passes over as many micro-batches (each loss
    divided by it), their gradients summed, then one update. scaler: a GradScaler whose
    scale (an input of the step) multiplies each loss before its backward; the update
    unscales, and is skipped when a gradient is not finite (the caller updates the scale)."""
    import contextlib
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    module = spec.module
    module.train()
    # --dtype f16 / bf16: traced in f32 and relabelled by the lowering (every f32
    # tensor becomes the half type, as module.half() and half inputs would make it):
    # the same ops, and torch 1.13's CPU fake kernels lack half convolutions.
    fdt = torch.float32
    cap_dtype = dtype

    params = _named_tensors(module, "_parameters")
    buffers = _named_tensors(module, "_buffers")

    fake_mode = FakeTensorMode()

    # CUDA autocast casts CUDA tensors only (its op lists differ from the CPU's): a step
    # autocast on CUDA is traced on fake CUDA tensors, which need a CUDA build and device
    fake_device = "cuda" if autocast is not None and device_type == "cuda" else "cpu"

    def fake(shape, dt, requires_grad=False, stride=None):
        with fake_mode:
            if stride is None:
                t = torch.empty(list(shape), dtype=dt, device=fake_device)
            else:
                t = torch.empty_strided(list(shape), list(stride), dtype=dt, device=fake_device)
        if requires_grad:
            t.requires_grad_(True)
        return t

    cap = Captured()
    cap.named = params + buffers
    cap.model_name = spec.name
    cap.optimizer = optimizer
    cap.dtype = cap_dtype
    cap.torch_version = torch.__version__

    # One fake tensor per distinct parameter / buffer object (tied weights share).
    p_fake, p_names, by_id = [], [], {}
    state_dict = {}
    for name, p in params:
        if id(p) not in by_id:
            by_id[id(p)] = len(p_fake)
            p_fake.append(fake(p.shape, p.dtype, p.requires_grad, dense_strides(p)))
            p_names.append(name)
            cap.placeholders.append(("param", name, None))
        state_dict[name] = p_fake[by_id[id(p)]]
    b_fake, b_by_id = [], {}
    for name, b in buffers:
        if id(b) not in b_by_id:
            b_by_id[id(b)] = len(b_fake)
            b_fake.append(fake(b.shape, b.dtype, stride=dense_strides(b)))
            cap.placeholders.append(("state", name, None))
        state_dict[name] = b_fake[b_by_id[id(b)]]
    trainable = [i for i, p in enumerate(p_fake) if p.requires_grad]
    kinds = {}
    if torch_opt is not None:
        oplan = torch_optimizer_plan(torch_opt, params, spec.name)
        cap.torch_opt = torch_opt
        for i in trainable:
            kind, snames, gi = oplan[p_names[i]]
            kinds[i] = (kind, snames)
            cap.update_type[p_names[i]] = kind
            cap.update_states[p_names[i]] = list(snames)
            cap.group_of[p_names[i]] = gi
    else:
        for i in trainable:
            kinds[i] = (optimizer, optimizer_states(optimizer))
    if autocast is not None:
        cap.autocast = (device_type, autocast)
    s_fake, s_of = [], {}
    for i in trainable:
        s_of[i] = []
        for sname in kinds[i][1]:
            s_of[i].append(len(s_fake))
            s_fake.append(fake(p_fake[i].shape, p_fake[i].dtype))
            cap.placeholders.append(("state", p_names[i] + "." + sname, p_names[i]))
    # accumulate > 1: the inputs of every micro-batch, then the targets of every one
    i_fake, t_fake = [], []
    for specs, out in ((spec.inputs, i_fake), (spec.targets, t_fake)):
        for j in range(accumulate):
            for s in specs:
                dt = s.dtype if not (s.dtype.is_floating_point and fdt != torch.float32) else fdt
                out.append(fake(s.shape, dt))
                cap.placeholders.append(("input", s.name if j == 0 else "%s.%d" % (s.name, j), None))
    n_in, n_tg = len(spec.inputs), len(spec.targets)
    if scaler is not None:
        # the scale is the last placeholder, after the targets
        t_fake.append(fake(scaler._scale.shape, torch.float32))
        cap.scale_input = "grad_scaler.scale"
        cap.placeholders.append(("input", cap.scale_input, None))

    # Where each fake placeholder sits in state_dict's names.
    names_of_p = {}
    for name, p in params:
        names_of_p.setdefault(by_id[id(p)], []).append(name)
    names_of_b = {}
    for name, b in buffers:
        names_of_b.setdefault(b_by_id[id(b)], []).append(name)

    tagger = _Tagger()
    paths = _module_paths(module)
    handles = []
    for path, m in paths:
        def pre(mod, args, _path=path):
            tagger.stack.append(_path)

        def post(mod, args, out, _path=path):
            if tagger.stack:
                tagger.stack.pop()
        handles.append(m.register_forward_pre_hook(pre))
        handles.append(m.register_forward_hook(post))
        if isinstance(m, torch.nn.RNNBase):
            # nn.LSTM / GRU / RNN read their weights from the list _flat_weights, filled
            # when the module was built. torch 1.13's functional_call swaps the weight
            # attributes without refreshing it, so the forward would run on the module's
            # own (meta) weights: refresh it from the attributes, which are the traced
            # fake tensors inside the call (torch 2.x does this on setattr).
            def rnn_pre(mod, args):
                mod._flat_weights = [getattr(mod, n) if hasattr(mod, n) else None
                                     for n in mod._flat_weights_names]
            handles.append(m.register_forward_pre_hook(rnn_pre))

    claim_mode = _claim_mode(tagger)

    def step(pv, bv, sv, iv, tv):
        tagger.phase = "forward"
        sd = {}
        for k, names in names_of_p.items():
            for n in names:
                sd[n] = pv[k]
        for k, names in names_of_b.items():
            for n in names:
                sd[n] = bv[k]
        def amp():
            return torch.autocast(device_type=device_type, dtype=autocast) if autocast is not None \
                else contextlib.nullcontext()
        wrt = [pv[i] for i in trainable]
        grads, loss = None, None
        with _reparametrized(module, sd):
            for j in range(accumulate):
                tagger.phase = "forward"
                with claim_mode, amp():
                    out = module(*iv[j * n_in:(j + 1) * n_in])
                    tagger.stack.append("loss")
                    lj = spec.loss_fn(out, *tv[j * n_tg:(j + 1) * n_tg])
                    if accumulate > 1 and isinstance(lj, torch.Tensor):
                        lj = lj / accumulate   # as a loop that accumulates gradients divides it
                    tagger.stack.pop()
                if not isinstance(lj, torch.Tensor) or lj.numel() != 1:
                    raise TraceError("%s: the loss function must return a scalar tensor, got %s"
                                     % (spec.name, type(lj).__name__ if not isinstance(lj, torch.Tensor)
                                        else "a tensor of shape %s" % list(lj.shape)))
                if not lj.requires_grad:
                    raise TraceError("%s: the loss does not depend on any trainable parameter" % spec.name)
                tagger.claim(lj, "loss")
                if loss is not None:
                    # the step's loss: the micro-batches' (divided) losses summed in order
                    tagger.stack.append("loss")
                    with torch.no_grad():
                        loss = loss + lj.detach()
                    tagger.stack.pop()
                else:
                    loss = lj
                if scaler is not None:
                    # GradScaler.scale: the loss times the scale, the backward's root
                    tagger.stack.append("loss")
                    with claim_mode:
                        lj = lj * tv[-1]
                    tagger.stack.pop()
                    tagger.claim(lj, "loss")
                tagger.phase = "backward"
                try:
                    gj = torch.autograd.grad(lj, wrt, allow_unused=True)
                except RuntimeError as e:
                    if "Checkpointing is not compatible with .grad()" in str(e):
                        raise TraceError(
                            "%s: torch.utils.checkpoint with use_reentrant=True cannot be exported: it "
                            "recomputes through .backward(), which the export's torch.autograd.grad "
                            "cannot follow; use checkpoint(..., use_reentrant=False), whose "
                            "recomputation the graph shows as backward ops" % spec.name)
                    raise
                if grads is None:
                    grads = list(gj)
                else:
                    # .grad += the new gradient, as autograd accumulates into .grad
                    tagger.flush("backward")
                    with torch.no_grad():
                        grads = [a if b is None else b if a is None else a + b for a, b in zip(grads, gj)]
                    tagger.flush("grad-accumulate")
        tagger.flush("backward")
        coef = inv = found = None
        got = [g for g in grads if g is not None]
        if scaler is not None and got:
            # GradScaler.unscale_: 1/scale in fp64, and whether any gradient is not finite
            # (its kernel checks the scaled values); the products are made in the updates
            tagger.phase = "backward"
            with torch.no_grad():
                inv = tv[-1].double().reciprocal().float()
                found = torch.stack([torch.isfinite(g).all() for g in got]).all().logical_not().float()
            tagger.flush("grad-scaler")
        if clip_norm is not None and got:
            tagger.phase = "backward"
            with torch.no_grad():
                coef = clip_coefficient(got, clip_norm, device_type, inv)
            tagger.flush("clip")
        tagger.phase = "update"
        rets = [loss]
        with torch.no_grad():
            for i, g in zip(trainable, grads):
                if g is None:
                    cap.params_no_grad.append(p_names[i])
                    continue
                # unscale_ and clip_grad_norm_ scale the gradient in place; the same
                # products, made inside the update, leave the gradient as the backward
                # wrote it. A step with a non-finite gradient changes nothing.
                ge = g if inv is None else g.mul(inv)
                ge = ge if coef is None else ge.mul(coef)
                if found is not None:
                    ge = ge.mul(1.0 - found)
                _update(kinds[i][0], pv[i], ge, [sv[j] for j in s_of[i]])
                rets.append(g)
                cap.grad_of.append(p_names[i])
        for name, v in (("clip_index", coef), ("inv_index", inv), ("found_index", found)):
            if v is not None:
                setattr(cap, name, len(rets))
                rets.append(v)
        return rets

    restore = _patch_create_node(tagger)
    make_fx = _make_fx()
    try:
        with fake_mode:
            cap.gm = make_fx(step)(p_fake, b_fake, s_fake, i_fake, t_fake)
    except TraceError:
        raise
    except Exception as e:
        raise _explain(e, spec)
    finally:
        restore()
        for h in handles:
            h.remove()
        for h in tagger.hooks:
            try:
                h.remove()
            except Exception:
                pass
    return cap


def _user_frame(tb):
    """The innermost traceback frame outside torch and this package: the model's line."""
    best = None
    for fs in traceback.extract_tb(tb):
        f = fs.filename.replace("\\", "/")
        if "/torch/" in f or f.startswith(_PKG_DIR) or "/functorch/" in f or f.startswith("<"):
            continue
        best = fs
    return best


def _explain(e, spec):
    """One line naming the op and the reason a trace failed."""
    tname = type(e).__name__
    msg = str(e).strip().splitlines()
    first = msg[0] if msg else ""
    op = None
    func = getattr(e, "func", None)
    if func is not None:
        op = str(func)
    if op is None:
        import re
        m = re.search(r"(aten[.:]{1,2}[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)?)", first)
        if m:
            op = m.group(1)
    where = _user_frame(e.__traceback__)
    loc = ""
    if where is not None:
        src = (where.line or "").strip()
        loc = " at %s:%d%s" % (where.filename, where.lineno, (" (%s)" % src) if src else "")
    if tname in ("DataDependentOutputException", "GuardOnDataDependentSymNode") or \
            (op and "_local_scalar_dense" in op) or "data-dependent" in first.lower() \
            or "data dependent" in first.lower():
        reason = "data-dependent control flow: a tensor's value decides the Python code (.item(), bool(tensor), if on a tensor)"
        return TraceError("%s: cannot trace %s: %s%s" % (spec.name, op or "aten._local_scalar_dense", reason, loc))
    if tname == "DynamicOutputShapeException":
        reason = "the output's shape depends on the data (nonzero, masked_select, unique, ...)"
        return TraceError("%s: cannot trace %s: %s%s" % (spec.name, op or "an op", reason, loc))
    if tname in ("UnsupportedOperatorException", "UnsupportedFakeTensorException", "NotImplementedError"):
        reason = "the op has no shape-only (meta/fake) implementation in torch %s" % _torch_version()
        return TraceError("%s: cannot trace %s: %s (%s)%s" % (spec.name, op or "an op", reason, first[:160], loc))
    return TraceError("%s: cannot trace%s: %s: %s%s" % (spec.name, (" " + op) if op else "", tname, first[:200], loc))


def _torch_version():
    try:
        import torch
        return torch.__version__
    except Exception:
        return "?"
