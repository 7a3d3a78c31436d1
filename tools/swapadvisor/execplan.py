"""swapplan-torch's executor: a swap plan run as real PyTorch training steps.

The step is traced exactly as dfg-from-torch exports it (trace.capture, lower.lower), so
every op of the graph maps to the aten nodes it stands for; the graph given on the command
line must equal this lowering op for op and tensor for tensor. The plan's nodes then run in
one topological order of stream order + deps:

- compute / recompute: the op's aten nodes, called on real tensors. Arguments are bound
  to the versions of the storages the lowering says each node reads (node_ver), through
  descriptors (storage, size, stride, offset), never through tensors held from an earlier
  node, so a dropped or swapped tensor cannot be read by accident: a read finds the
  storage's device buffer or fails naming the tensor.
- swap_out / swap_in: copies between the device buffer and a host buffer; on the CPU the
  two are separate tensors, on CUDA the host one is pinned and the copies run on their own
  streams, ordered by one event per node.
- a graph tensor holds a device buffer exactly while one of its placements is active: it is
  created by the write or swap_in that fills it and dropped when the placement ends, so the
  live device bytes follow the plan; they are checked against the plan's memory_bytes.

Random ops (dropout) draw from the global generator; a recompute replays the generator
state of the op's compute, so it draws the same numbers.
"""

import operator
import time

from .errors import ExportError

EXIT_VERIFY = 8

# the stream each node kind runs on: compute, h2d, d2h
STREAM = {"compute": 0, "recompute": 0, "swap_in": 1, "swap_out": 2}

from .lower import RANDOM as _RANDOM  # aten ops that draw from the random generator


class PlanFault(ExportError):
    """The plan, run for real, reads or writes what is not there: exit 8."""

    code = EXIT_VERIFY


class GraphMismatch(ExportError):
    code = 3


def _storage_key(t):
    from .lower import _storage_key as sk
    return sk(t)


def fake_outputs(node):
    """The traced (fake) value of a node's output, rebuilt from its getitem users where
    torch 1.13 kept none on a multi-output node."""
    v = node.meta.get("val")
    if v is not None:
        return v
    items = {}
    for u in node.users:
        if u.op == "call_function" and u.target is operator.getitem and isinstance(u.args[1], int):
            items[u.args[1]] = u.meta.get("val")
    if items:
        return tuple(items.get(i) for i in range(max(items) + 1))
    return v


class Binding:
    """The traced step, its lowering, and the graph's ops mapped onto aten nodes."""

    def __init__(self, cap, low, doc):
        self.cap = cap
        self.low = low
        self.doc = doc
        gm = cap.gm
        self.gm = gm
        self.nodes = {n.name: n for n in gm.graph.nodes}
        self.tensors = {t.id: t for t in low.out_tensors}
        self.groups = {g.id: g for g in low.groups}
        self.op_nodes = {g.id: [] for g in low.groups}
        self.in_group = set()
        for n in gm.graph.nodes:
            for g, _w in low.node_groups.get(n.name, []):
                r = g.root()
                if not r.alive or r.id < 0 or r.id not in self.op_nodes:
                    continue
                part = None
                if g.base_name.endswith("_data") and g.base_name.startswith("convolution_backward"):
                    part = "data"
                elif g.base_name.endswith("_weight") and g.base_name.startswith("convolution_backward"):
                    part = "weight"
                self.op_nodes[r.id].append((n, part))
                self.in_group.add(n.name)
        self.node_ver = low.node_ver
        self.declared = {g.id: {id(t) for t in g.reads + g.outs + g.pwrites} for g in low.groups}
        # placeholders and constants: the tensor each one's storage is
        by_key = {}
        for t in low.tensors:
            if t.producer is None and t.key not in by_key:
                by_key[t.key] = t
        self.ph_tensor = {}
        for n in gm.graph.nodes:
            if n.op in ("placeholder", "get_attr"):
                v = n.meta.get("val")
                if n.op == "get_attr":
                    v = getattr(gm, n.target, None) if v is None else v
                if _is_tensor(v):
                    t = by_key.get(_storage_key(v))
                    if t is not None:
                        self.ph_tensor[n.name] = t
        # with a torch.optim optimizer: op id -> what its update call reads
        self.update_args = _update_args(cap, self) if cap.torch_opt is not None else {}
        # ops whose nodes draw random numbers
        self.random_ops = set()
        for op, nodes in self.op_nodes.items():
            if any(_pkt(n) in _RANDOM for n, _ in nodes):
                self.random_ops.add(op)


class UpdateArgs:
    """The fx nodes an update op's call reads: the parameter and its optimizer states
    (placeholders), its gradient, the clipping coefficient and the GradScaler's 1/scale
    and found_inf (each None when the step has none)."""

    __slots__ = ("name", "param", "grad", "states", "extra", "group")

    def __init__(self, name, param, grad, states, extra, group):
        self.name = name
        self.param = param
        self.grad = grad
        self.states = states
        self.extra = extra   # [clip coefficient, 1/scale, found_inf]: fx nodes or None
        self.group = group


def _update_args(cap, bind):
    """op id -> UpdateArgs for every update op of a step traced with a torch.optim
    optimizer: the executor runs those ops by calling the optimizer's own step."""
    from torch.utils._pytree import tree_flatten
    phs = [n for n in cap.gm.graph.nodes if n.op == "placeholder"]
    param_node, state_nodes = {}, {}
    for node, (kind, name, param_of) in zip(phs, cap.placeholders):
        if kind == "param":
            param_node[name] = node
        elif kind == "state" and param_of is not None:
            state_nodes.setdefault(param_of, {})[name[len(param_of) + 1:]] = node
    out_node = [n for n in cap.gm.graph.nodes if n.op == "output"][0]
    flat = tree_flatten(out_node.args[0])[0]
    grad_node = dict(zip(cap.grad_of, flat[1:1 + len(cap.grad_of)]))
    extra = [flat[i] if i is not None else None for i in (cap.clip_index, cap.inv_index, cap.found_index)]
    op_of = {}
    for g in bind.groups.values():
        for t in g.pwrites:
            if t.kind == "param" and g.type.endswith("_update"):
                op_of[t.key] = g.id
    out = {}
    for pname, gnode in grad_node.items():
        t = bind.ph_tensor.get(param_node[pname].name)
        op = op_of.get(t.key) if t is not None else None
        if op is None:
            raise ExportError("internal: the update of %s is not an op of the graph" % pname)
        states = [state_nodes[pname][sn] for sn in cap.update_states[pname]]
        out[op] = UpdateArgs(pname, param_node[pname], gnode, states, extra, cap.group_of[pname])
    return out


def _is_tensor(v):
    import torch
    return isinstance(v, torch.Tensor)


def _pkt(n):
    import torch
    t = n.target
    if isinstance(t, torch._ops.OpOverload):
        return t.overloadpacket.__name__
    return getattr(t, "__name__", str(t))


def compare(doc, graph, path):
    """Refuses (exit 3) a graph that is not this trace's lowering: names the first op or
    tensor that differs."""
    hint = ("export the graph again with this torch and the options it was exported with "
            "(its \"source\" block)")
    gt, gops = graph.get("tensors", []), graph.get("ops", [])
    if len(gt) != len(doc["tensors"]) or len(gops) != len(doc["ops"]):
        raise GraphMismatch("%s: the graph has %d ops and %d tensors, the model traced here %d and %d: %s"
                            % (path, len(gops), len(gt), len(doc["ops"]), len(doc["tensors"]), hint))
    for a, b in zip(doc["tensors"], gt):
        for f in ("name", "kind", "bytes", "shape", "dtype"):
            # shape and dtype are optional (a writer may leave out the shape [] of a scalar)
            if f == "shape" and (a.get(f) or []) == (b.get(f) or []) or f == "dtype" and f not in b:
                continue
            if a.get(f) != b.get(f):
                raise GraphMismatch("%s: tensors[%d]: %s is %r in the graph, %r in the model traced here: %s"
                                    % (path, a["id"], f, b.get(f), a.get(f), hint))
    for a, b in zip(doc["ops"], gops):
        for f in ("name", "type", "inputs", "outputs", "aten"):
            if f == "aten" and f not in b:
                continue
            if a.get(f) != b.get(f):
                raise GraphMismatch("%s: ops[%d]: %s is %r in the graph, %r in the model traced here: %s"
                                    % (path, a["id"], f, b.get(f), a.get(f), hint))


class Plan:
    """The parts of a swapplan document the executor needs, checked for shape."""

    def __init__(self, doc, path, n_ops, n_tensors):
        def bad(msg):
            raise ExportError("%s: %s" % (path, msg), 3)

        if not isinstance(doc, dict) or doc.get("format") != "swapplan":
            bad('not a swapplan document ("format" is not "swapplan")')
        if doc.get("version") != 1:
            bad('"version" %r: this runner reads version 1' % doc.get("version"))
        dev = doc.get("device")
        if not isinstance(dev, dict) or not isinstance(dev.get("memory_bytes"), (int, float)):
            bad('"device.memory_bytes" is missing')
        self.memory_bytes = int(dev["memory_bytes"])
        r = dev.get("workspace_reserve_bytes", 0)
        self.workspace_reserve = int(r) if isinstance(r, (int, float)) and not isinstance(r, bool) and r > 0 else 0
        nodes = doc.get("nodes")
        if not isinstance(nodes, list):
            bad('"nodes" is missing')
        self.kind, self.ref, self.deps = [], [], []
        for i, nd in enumerate(nodes):
            if not isinstance(nd, dict):
                bad("nodes[%d] is not an object" % i)
            k = nd.get("kind")
            if k not in ("compute", "recompute", "swap_in", "swap_out"):
                bad("nodes[%d]: unknown kind %r" % (i, k))
            key = "op" if k in ("compute", "recompute") else "tensor"
            r = nd.get(key)
            lim = n_ops if key == "op" else n_tensors
            if not isinstance(r, int) or isinstance(r, bool) or not 0 <= r < lim:
                bad("nodes[%d]: %s %r is not an id of the graph" % (i, key, r))
            deps = nd.get("deps", [])
            if not isinstance(deps, list) or any(not isinstance(d, int) or isinstance(d, bool)
                                                 or not 0 <= d < len(nodes) for d in deps):
                bad("nodes[%d]: deps must be node ids" % i)
            self.kind.append(k)
            self.ref.append(r)
            self.deps.append(list(deps))
        n = len(nodes)
        self.opens = [[] for _ in range(n)]
        self.closes = [[] for _ in range(n)]
        self.start_open, self.end_open = [], []
        for i, p in enumerate(doc.get("placements", [])):
            t, b, e = p.get("tensor"), p.get("begin"), p.get("end")
            if not isinstance(t, int) or not 0 <= t < n_tensors or not isinstance(b, int) \
                    or not isinstance(e, int) or not -1 <= b < n or not -1 <= e < n:
                bad("placements[%d]: tensor, begin and end must be ids (-1 for the iteration's ends)" % i)
            (self.start_open if b < 0 else self.opens[b]).append(t)
            if e >= 0:
                self.closes[e].append(t)
        self.residents = []
        for i, r in enumerate(doc.get("resident_at_start", [])):
            t = r.get("tensor") if isinstance(r, dict) else None
            if not isinstance(t, int) or not 0 <= t < n_tensors:
                bad("resident_at_start[%d]: tensor must be an id" % i)
            self.residents.append(t)
        self.order = self._order(path)
        self.counts = {k: self.kind.count(k) for k in ("compute", "recompute", "swap_in", "swap_out")}

    def _order(self, path):
        """One topological order of stream order + deps, the smallest ready id first."""
        import heapq
        n = len(self.kind)
        stream = STREAM
        succ = [[] for _ in range(n)]
        indeg = [0] * n
        last = [-1, -1, -1]
        for i in range(n):
            s = stream[self.kind[i]]
            if last[s] >= 0:
                succ[last[s]].append(i)
                indeg[i] += 1
            last[s] = i
            for d in self.deps[i]:
                succ[d].append(i)
                indeg[i] += 1
        heap = [i for i in range(n) if indeg[i] == 0]
        heapq.heapify(heap)
        order = []
        while heap:
            i = heapq.heappop(heap)
            order.append(i)
            for j in succ[i]:
                indeg[j] -= 1
                if indeg[j] == 0:
                    heapq.heappush(heap, j)
        if len(order) != n:
            raise PlanFault("%s: the nodes' stream order and deps form a cycle: the streams would deadlock"
                            % path, 6)
        return order


def layout_view(flat, shape, stride=None):
    """flat (a 1-D buffer of at least the shape's element count) seen as a tensor of shape
    laid out with stride (a dense layout: every element once; None: row-major)."""
    n = 1
    for d in shape:
        n *= d
    if stride is None:
        return flat[:n].view(shape)
    return flat[:n].as_strided(shape, stride)


def _fill_flat(flat, t, stride):
    """flat, holding t's values in the storage order of the dense layout stride (the
    traced placeholder's: a parameter made as a transposed view keeps its layout, so the
    plan's kernels read it as the eager loop's do)."""
    layout_view(flat, tuple(t.shape), stride).copy_(t.detach())
    return flat


class CpuDevice:
    """The device is the CPU: device and host buffers are separate tensors."""

    name = "cpu"

    def __init__(self):
        import torch
        self.device = torch.device("cpu")

    def to_host(self, flat, host, node):
        if host is None or host.numel() != flat.numel() or host.dtype != flat.dtype:
            return flat.clone()
        host.copy_(flat)
        return host

    def to_device(self, host, node):
        return host.clone()

    def host_copy(self, t, stride=None):
        import torch
        return _fill_flat(torch.empty(t.numel(), dtype=t.dtype), t, stride)

    def begin(self, i, stream, deps):
        return None

    def end(self, i, stream):
        pass

    def sync(self):
        pass

    def adopt(self, flat):
        pass

    def rng_get(self):
        import torch
        return torch.get_rng_state()

    def rng_set(self, s):
        import torch
        torch.set_rng_state(s)

    def reset_peak(self):
        pass

    def max_allocated(self):
        return None


class CudaDevice:
    """Three CUDA streams (compute, h2d, d2h) ordered by one event per node; pinned host
    buffers; buffers used on several streams are recorded on each (record_stream), so the
    caching allocator never hands their memory out while another stream still reads it."""

    name = "cuda"

    def __init__(self, n_nodes):
        import torch
        self.device = torch.device("cuda")
        self.streams = [torch.cuda.Stream(), torch.cuda.Stream(), torch.cuda.Stream()]
        self.events = [None] * n_nodes
        self.ctx = None

    def begin(self, i, stream, deps):
        import torch
        s = self.streams[stream]
        for d in deps:
            ev = self.events[d]
            if ev is not None:
                s.wait_event(ev)
        self.ctx = torch.cuda.stream(s)
        self.ctx.__enter__()
        return s

    def end(self, i, stream):
        import torch
        ev = torch.cuda.Event()
        ev.record(self.streams[stream])
        self.events[i] = ev
        self.ctx.__exit__(None, None, None)
        self.ctx = None

    def adopt(self, flat):
        for s in self.streams:
            flat.record_stream(s)

    def to_host(self, flat, host, node):
        import torch
        if host is None or host.numel() != flat.numel() or host.dtype != flat.dtype:
            host = torch.empty(flat.numel(), dtype=flat.dtype, pin_memory=True)
        host.copy_(flat, non_blocking=True)
        return host

    def to_device(self, host, node):
        import torch
        d = torch.empty(host.numel(), dtype=host.dtype, device=self.device)
        d.copy_(host, non_blocking=True)
        self.adopt(d)
        return d

    def host_copy(self, t, stride=None):
        import torch
        return _fill_flat(torch.empty(t.numel(), dtype=t.dtype, pin_memory=True), t, stride)

    def sync(self):
        import torch
        torch.cuda.synchronize()

    def rng_get(self):
        import torch
        return torch.cuda.get_rng_state()

    def rng_set(self, s):
        import torch
        torch.cuda.set_rng_state(s)

    def reset_peak(self):
        import torch
        torch.cuda.reset_peak_memory_stats()

    def max_allocated(self):
        import torch
        return int(torch.cuda.max_memory_allocated())


class _Ctx:
    __slots__ = ("node", "ver", "op", "memo", "scratch", "nid")

    def __init__(self, node, ver, op, scratch, nid):
        self.node = node
        self.ver = ver
        self.op = op
        self.memo = {}
        self.scratch = scratch
        self.nid = nid


class Executor:
    """Runs a plan's nodes over a Binding. Device buffers are flat tensors covering a whole
    storage, one per graph tensor on the device (dev), beside the host copies (host)."""

    def __init__(self, bind, plan, device, host_init):
        self.b = bind
        self.p = plan
        self.d = device
        self.dev = {}          # tensor id -> flat device buffer
        self.dev_valid = set()
        self.host = dict(host_init)   # tensor id -> flat host buffer
        self.host_valid = set(host_init)
        self.placed = set()
        self.live = 0
        self.peak = 0
        self.scratch_peak = 0
        self.zero = {}         # storage key -> buffer of a storage the graph does not hold
        self.desc = {}         # fx node name -> descriptor of its output
        self.rng = {}          # op id -> generator state before its compute
        self.last = {}         # tensor id -> what last happened to its device copy
        self.persistent = {t.id for t in bind.low.out_tensors if t.kind in ("param", "state")}
        for t in plan.residents:
            self.host_valid.discard(t)  # the previous iteration updated it on the device
        self.stats = None
        self.static = set()    # descriptors that hold across iterations (placeholders)
        self.loss_node = None  # (fx node, output index or None) of the loss each step reports
        self.loss_val = None
        self.rec = None        # a compiled.Recorder while this run is compiled into a step
        # op id -> fn(param, grad, states, coef, inv_scale, found_inf) that applies a
        # torch.optim update in place (Binding.update_args says what it reads); None: the
        # traced aten ops run
        self.updaters = None

    # ---- names for messages ----
    def tname(self, tid):
        t = self.b.tensors.get(tid)
        return "tensor %d (%r)" % (tid, t.name if t is not None else "?")

    def nname(self, i):
        if i < 0:
            return "the start (residents brought in)"
        k, r = self.p.kind[i], self.p.ref[i]
        if k in ("compute", "recompute"):
            return "nodes[%d] (%s of op %d %r)" % (i, k, r, self.b.groups[r].name)
        return "nodes[%d] (%s of %s)" % (i, k, self.tname(r))

    # ---- device buffers ----
    def _place(self, tid, flat, i):
        if tid not in self.placed:
            raise PlanFault("%s writes %s, which has no placement there (rule 2)" % (self.nname(i), self.tname(tid)))
        self.d.adopt(flat)
        self.dev[tid] = flat
        if self.rec is not None:
            self.rec.placed(flat)
        self.live += flat.numel() * flat.element_size()
        if self.live > self.peak:
            self.peak = self.live
        if self.live > self.p.memory_bytes:
            raise PlanFault("live device bytes %d exceed the plan's memory_bytes %d at %s (placing %s)"
                            % (self.live, self.p.memory_bytes, self.nname(i), self.tname(tid)))

    def _drop(self, tid, why):
        flat = self.dev.pop(tid, None)
        if flat is not None:
            self.live -= flat.numel() * flat.element_size()
            if self.rec is not None:
                self.rec.dropped(flat)
        self.dev_valid.discard(tid)
        self.last[tid] = why

    def _absent(self, tid):
        w = self.last.get(tid)
        return w if w is not None else "it was never brought to the device in this iteration"

    def _read(self, t, ctx):
        """The device buffer of graph tensor t for node ctx, which reads or writes it."""
        tid = t.id
        flat = self.dev.get(tid)
        if flat is None and t.prev is not None and t in self.b.groups[ctx.op].outs:
            # a new version of a storage written in place: starts as the version it overwrites
            # (when the op reads that), in a buffer of its own
            old = self.dev.get(t.prev.id) if t.prev.id >= 0 else ctx.scratch.get(id(t.prev))
            if t.prev in self.b.groups[ctx.op].reads:
                if old is None or (t.prev.id >= 0 and t.prev.id not in self.dev_valid):
                    raise PlanFault("%s reads %s, which is not on the device: %s"
                                    % (self.nname(ctx.nid), self.tname(t.prev.id), self._absent(t.prev.id)))
                flat = old.clone() if self.rec is None else self.rec.clone(old)
            else:
                # overwritten whole without being read: only its size and type matter
                import torch
                dt, n = self._storage_shape(t.key)
                dt = dt if old is None else old.dtype
                flat = torch.empty(n, dtype=dt, device=self.d.device) if self.rec is None \
                    else self.rec.empty(n, dt)
            self._place(tid, flat, ctx.nid)
            self.dev_valid.add(tid)
            return flat
        if flat is None or tid not in self.dev_valid:
            raise PlanFault("%s reads %s, which is not on the device: %s"
                            % (self.nname(ctx.nid), self.tname(tid), self._absent(tid)))
        return flat

    def _storage_shape(self, key):
        import torch
        for n in self.b.gm.graph.nodes:
            for v in _tensors_in(fake_outputs(n)):
                if _storage_key(v) == key:
                    from .lower import _raw_storage_nbytes
                    return v.dtype, _raw_storage_nbytes(v) // v.element_size()
        return torch.uint8, 0

    # ---- binding arguments ----
    def value(self, a, ctx):
        import torch
        import torch.fx
        if isinstance(a, torch.fx.Node):
            return self.node_value(a, ctx)
        if isinstance(a, (list, tuple)):
            return type(a)(self.value(x, ctx) for x in a)
        if isinstance(a, dict):
            return {k: self.value(v, ctx) for k, v in a.items()}
        if isinstance(a, torch.device):
            return self.d.device
        return a

    def node_value(self, m, ctx):
        v = ctx.memo.get(m.name, _MISSING)
        if v is not _MISSING:
            return v
        if m.name in self.desc:
            v = self.realize(self.desc[m.name], ctx)
        elif m.op == "call_function" and m.target is operator.getitem and \
                not isinstance(m.args[0], (list, tuple)) and m.args[0].name in self.desc:
            d = self.desc[m.args[0].name]
            v = self.realize((d[1] if isinstance(d, tuple) and d[0] == "tuple" else d)[m.args[1]], ctx)
        elif m.op == "call_function" and m.name not in self.b.in_group:
            # a view or metadata node: cheap, run on demand on the bound arguments
            args, kwargs = self.value(m.args, ctx), self.value(m.kwargs, ctx)
            v = m.target(*args, **kwargs) if self.rec is None else self.rec.view_call(m, args, kwargs)
        else:
            v = self.standin(m, fake_outputs(m), ctx)
        ctx.memo[m.name] = v
        return v

    def standin(self, m, fv, ctx):
        """The value of node m, which has not run, for an op that reads only its metadata
        (ones_like of the loss): tensors of the traced shape and dtype without contents.
        An op that reads m's contents has an edge to m's op, so this is a plan defect."""
        if _is_tensor(fv):
            t = ctx.ver.get(_storage_key(fv))
            if t is not None and id(t) in self.b.declared[ctx.op]:
                raise PlanFault("%s reads %s, whose op %s has not run"
                                % (self.nname(ctx.nid), self.tname(t.id) if t.id >= 0 else t.name, self._op_of(m)))
            return self._standin(fv.dtype, tuple(fv.shape))
        if isinstance(fv, (list, tuple)):
            return type(fv)(self.standin(m, x, ctx) for x in fv)
        return fv

    def _op_of(self, m):
        for op, nodes in self.b.op_nodes.items():
            if any(n is m for n, _ in nodes):
                return "%d %r" % (op, self.b.groups[op].name)
        return "?"

    def realize(self, d, ctx):
        if isinstance(d, list):
            return [self.realize(x, ctx) for x in d]
        if isinstance(d, tuple) and d and d[0] == "t":
            return self.tensor_of(d, ctx)
        if isinstance(d, tuple) and d and d[0] in ("c", "r"):
            return d[1]
        if isinstance(d, tuple) and d and d[0] == "z":
            import torch
            raise ExportError("%s: aten node %s reads an undefined tensor that %s returned, which only "
                              "autograd's C++ can pass on (torch %s's CPU LSTM workspace): swapplan-torch "
                              "cannot run this graph under this torch" % (self.nname(ctx.nid), ctx.node.name,
                                                                          d[1], torch.__version__), 3)
        if isinstance(d, tuple) and d and d[0] == "tuple":
            return tuple(self.realize(x, ctx) for x in d[1])
        return None

    def tensor_of(self, d, ctx):
        import torch
        _, key, size, stride, offset, dtype = d
        t = ctx.ver.get(key)
        flat = None
        if t is not None and t.id >= 0 and id(t) not in self.b.declared[ctx.op]:
            # bound but not read by this op (the unused input of a convolution_backward
            # half): its metadata is what matters
            t = None
        if t is not None:
            if t.id >= 0:
                flat = self._read(t, ctx)
            else:
                flat = ctx.scratch.get(id(t))
        if flat is None:
            flat = ctx.scratch.get(key)
        if flat is None:
            flat = self.zero.get(key)
        if flat is None and t is None:
            # read for its metadata only (empty_like, a backward's unused running stats):
            # a resident version will do, else a stand-in of the right shape
            for tid, f in self.dev.items():
                if self.b.tensors[tid].key == key:
                    flat = f
                    break
            if flat is None:
                return self._standin(dtype, size)
        if flat is None:
            raise PlanFault("%s reads %s, which no earlier node of its op made" % (self.nname(ctx.nid), t.name))
        if flat.dtype != dtype:
            if torch.empty((), dtype=flat.dtype).element_size() != torch.empty((), dtype=dtype).element_size():
                raise ExportError("internal: a view of %s as %s (element size differs)" % (flat.dtype, dtype))
            if self.rec is None:
                flat = flat.view(dtype)
        if self.rec is not None:
            return self.rec.view(flat, d, ctx)
        return flat.as_strided(size, stride, offset)

    def _standin(self, dtype, size):
        """A tensor of size and dtype that holds no memory (one element, expanded)."""
        import torch
        if self.rec is not None:
            return self.rec.standin(dtype, size)
        return torch.empty((), dtype=dtype, device=self.d.device).expand(size)

    # ---- outputs ----
    def describe(self, r, fv, ctx):
        import torch
        if isinstance(r, torch.Tensor):
            if not _is_tensor(fv):
                # an output the trace did not record as a tensor (torch 2.x's CPU LSTM
                # workspace): the graph does not hold it, the node's readers get it as is
                self.scratch_peak = max(self.scratch_peak, r.numel() * r.element_size())
                if self.rec is not None:
                    self.rec.keep_for_iteration(r)
                return ("r", r)
            key = _storage_key(fv)
            flat = _flat(r)
            if self.rec is not None:
                self.rec.flat_of(r, flat)
            t = ctx.ver.get(key)
            if t is not None and t.id >= 0:
                if t.id not in self.dev:
                    self._place(t.id, flat, ctx.nid)
                    where = "dev"
                elif _storage_key(self.dev[t.id]) != _storage_key(flat):
                    # recomputed while a copy is still resident: keep the resident one
                    self.scratch_peak = max(self.scratch_peak, flat.numel() * flat.element_size())
                    where = "node"
                else:
                    where = "dev"
                self.dev_valid.add(t.id)
            elif t is not None:
                ctx.scratch[id(t)] = flat
                where = "node"
            else:
                where = "node"
                if flat.numel() == 0:
                    self.zero[key] = flat
                    where = "iter"
                else:
                    ctx.scratch[key] = flat
            d = ("t", key, tuple(r.size()), tuple(r.stride()), r.storage_offset(), r.dtype)
            if self.rec is not None:
                self.rec.output(r, flat, d, where, self.dev[t.id] if where == "dev" else flat)
            return d
        if r is None and _is_tensor(fv) and fv.numel() == 0:
            # an undefined output the trace saw as an empty tensor (torch 2.x's CPU LSTM
            # workspace): autograd hands it on undefined in C++, Python cannot
            return ("z", ctx.node.name)
        if isinstance(r, (list, tuple)):
            fl = fv if isinstance(fv, (list, tuple)) else [None] * len(r)
            items = [self.describe(x, fl[i] if i < len(fl) else None, ctx) for i, x in enumerate(r)]
            return items if isinstance(r, list) else ("tuple", items)
        return ("c", r)

    # ---- nodes ----
    def run_op(self, i, op, recompute):
        import torch
        g = self.b.groups[op]
        if recompute and g.pwrites:
            raise PlanFault("%s would apply op %d's in-place update of %s a second time (rule 1)"
                            % (self.nname(i), op, self.tname(g.pwrites[0].id)))
        saved = None
        swapped = False  # the generator is the op's compute's until the finally: restored
        if op in self.b.random_ops:
            if recompute and op in self.rng:
                saved = self.d.rng_get()   # None on fake tensors: still swapped (and recorded)
                swapped = True
                self.d.rng_set(self.rng[op])
                if self.rec is not None:
                    self.rec.rng_swap(op)
            elif not recompute:
                self.rng[op] = self.d.rng_get()
                if self.rec is not None:
                    self.rec.rng_save(op)
        scratch = {}
        try:
            if self.updaters is not None and op in self.b.update_args:
                self.run_update(i, op, g)
            for n, part in ([] if self.updaters is not None and op in self.b.update_args
                            else self.b.op_nodes[op]):
                ctx = _Ctx(n, self.b.node_ver.get(n.name, {}), op, scratch, i)
                if self.rec is not None:
                    self.rec.begin_call(n)
                args = list(self.value(n.args, ctx))
                kwargs = self.value(n.kwargs, ctx)
                if part is not None:
                    args = _conv_bwd_mask(n, args, part)
                try:
                    r = n.target(*args, **kwargs) if self.rec is None else self.rec.call(n, args, kwargs)
                except ExportError:
                    raise
                except Exception as e:
                    # a kernel refusing the data (a label past the classes) or the binding
                    raise ExportError("%s: aten node %s (%s) failed: %s: %s"
                                      % (self.nname(i), n.name, n.target, type(e).__name__,
                                         " ".join(str(e).split())[:300]), 3)
                if self.loss_node is not None and n is self.loss_node[0] and not recompute:
                    lv = r if self.loss_node[1] is None else r[self.loss_node[1]]
                    self.loss_val = lv.detach().clone()
                    if self.rec is not None:
                        self.rec.loss(lv)
                prev = self.desc.get(n.name)
                d = self.describe(r, fake_outputs(n), ctx)
                if part is not None and prev is not None:
                    d = _merge_parts(prev, d)
                self.desc[n.name] = d
            sb = sum(f.numel() * f.element_size() for f in scratch.values() if isinstance(f, torch.Tensor))
            self.scratch_peak = max(self.scratch_peak, sb)
        finally:
            if swapped:
                self.d.rng_set(saved)
                if self.rec is not None:
                    self.rec.rng_restore()
        for t in g.outs:
            if t.id >= 0 and (t.id not in self.dev or t.id not in self.dev_valid):
                raise ExportError("internal: op %d %r did not write %s" % (op, g.name, self.tname(t.id)))
        for t in g.pwrites:
            if t.id >= 0:
                self.host_valid.discard(t.id)  # the host copy is stale until swapped out
                self.last[t.id] = "updated by %s" % self.nname(i)

    def run_update(self, i, op, g):
        """An update op as its optimizer's step on the parameter's buffers: the views of
        the parameter and its states that the placeholders are, the gradient as the
        backward left it, the clipping coefficient, the GradScaler's 1/scale and found_inf."""
        ua = self.b.update_args[op]
        ver = {}
        for t in g.reads + g.pwrites:
            ver.setdefault(t.key, t)
        ctx = _Ctx(self.b.op_nodes[op][0][0], ver, op, {}, i)
        args = [self.node_value(ua.param, ctx), self.node_value(ua.grad, ctx),
                [self.node_value(s, ctx) for s in ua.states]] + \
            [self.node_value(x, ctx) if x is not None else None for x in ua.extra]
        fn = self.updaters[op]
        if self.rec is not None:
            self.rec.call_update(fn, args, g.name)
        else:
            try:
                fn(*args)
            except ExportError:
                raise
            except Exception as e:
                raise ExportError("%s: the optimizer's step failed: %s: %s"
                                  % (self.nname(i), type(e).__name__, " ".join(str(e).split())[:300]), 3)

    def swap_out(self, i, tid):
        flat = self.dev.get(tid)
        if flat is None or tid not in self.dev_valid:
            raise PlanFault("%s copies %s to the host, but it is not on the device: %s"
                            % (self.nname(i), self.tname(tid), self._absent(tid)))
        self.host[tid] = self.d.to_host(flat, self.host.get(tid), i)
        if self.rec is not None:
            self.rec.d2h(tid, flat)
        self.host_valid.add(tid)
        self.stats["d2h_bytes"] += flat.numel() * flat.element_size()

    def swap_in(self, i, tid):
        if tid not in self.host_valid:
            raise PlanFault("%s copies %s to the device, but its host copy holds no valid contents "
                            "(it was never swapped out, or was updated on the device since)"
                            % (self.nname(i), self.tname(tid)))
        if tid in self.dev:
            raise PlanFault("%s copies %s to the device, where it already is" % (self.nname(i), self.tname(tid)))
        flat = self.d.to_device(self.host[tid], i)
        if self.rec is not None:
            self.rec.h2d(tid, flat)
        self._place(tid, flat, i)
        self.dev_valid.add(tid)
        self.stats["h2d_bytes"] += flat.numel() * flat.element_size()

    def iteration(self):
        p = self.p
        self.stats = {"nodes": {"compute": 0, "recompute": 0, "swap_in": 0, "swap_out": 0},
                      "h2d_bytes": 0, "d2h_bytes": 0}
        self.placed = set(p.start_open)
        self.peak = self.live
        self.scratch_peak = 0
        self.d.reset_peak()
        self.desc = {k: v for k, v in self.desc.items() if k in self.static}
        stream = STREAM
        t0 = time.time()
        computed = set()
        for i in p.order:
            k, r = p.kind[i], p.ref[i]
            for t in p.opens[i]:
                self.placed.add(t)
            if k == "compute":
                if r in computed:
                    raise PlanFault("%s runs op %d a second time (rule 1: one compute node per op)"
                                    % (self.nname(i), r))
                computed.add(r)
            self.d.begin(i, stream[k], p.deps[i])
            if self.rec is not None:
                self.rec.begin_node(i, stream[k])
            try:
                if k == "compute" or k == "recompute":
                    self.run_op(i, r, k == "recompute")
                elif k == "swap_out":
                    self.swap_out(i, r)
                else:
                    self.swap_in(i, r)
            finally:
                self.d.end(i, stream[k])
            self.stats["nodes"][k] += 1
            for t in p.closes[i]:
                self.placed.discard(t)
                self._drop(t, "its placement ended with %s" % self.nname(i))
            if self.rec is not None:
                self.rec.end_node(i)
        self.d.sync()
        wall = time.time() - t0
        # rule 1: every op once; a missing update would leave its parameter stale
        for op in sorted(self.b.groups):
            if op not in computed:
                g = self.b.groups[op]
                what = ("the update of %s is lost: " % self.tname(g.pwrites[0].id)) if g.pwrites else ""
                raise PlanFault("%sop %d %r never runs: the plan has no compute node for it (rule 1)"
                                % (what, op, g.name))
        self.finish_iteration()
        self.stats["wall_s"] = wall
        self.stats["loss"] = float(self.loss_val) if self.loss_val is not None and self.d.name != "fake" else None
        self.loss_val = None
        self.stats["peak_live_bytes"] = self.peak
        self.stats["scratch_peak_bytes"] = self.scratch_peak
        m = self.d.max_allocated()
        if m is not None:
            self.stats["max_memory_allocated"] = m
        return self.stats

    def finish_iteration(self):
        p = self.p
        res = set(p.residents)
        for tid in list(self.dev):
            if tid not in self.persistent:
                raise PlanFault("%s is still on the device when the iteration ends (its placement never ends)"
                                % self.tname(tid))
        for tid in res:
            if tid not in self.dev or tid not in self.dev_valid:
                raise PlanFault("%s must be resident when the iteration ends (resident_at_start), but %s"
                                % (self.tname(tid), self._absent(tid)))
        for tid in list(self.dev):
            if tid not in res:
                raise PlanFault("%s is on the device when the iteration ends but not in resident_at_start"
                                % self.tname(tid))
        for tid in self.persistent:
            if tid not in res and tid not in self.host_valid:
                raise PlanFault("the update of %s is lost: its device copy was dropped without a swap_out "
                                "after the update (%s)" % (self.tname(tid), self._absent(tid)))
        # the next iteration: activations' host copies are dead, residents stay
        for tid in list(self.host):
            if tid not in self.persistent and self.b.tensors[tid].kind != "input":
                del self.host[tid]
                self.host_valid.discard(tid)
        for tid in res:
            self.host_valid.discard(tid)
        self.last = {}

    def final_value(self, tid):
        """A persistent tensor's contents after the last iteration (flat)."""
        if tid in self.dev and tid in set(self.p.residents):
            return self.dev[tid]
        return self.host[tid]


_MISSING = object()


def static_descs(gm):
    """fx node name -> descriptor of each placeholder and constant: they hold across
    iterations (their tensors are the persistent ones, and the inputs)."""
    out = {}
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "get_attr"):
            fv = node.meta.get("val")
            if fv is None and node.op == "get_attr":
                fv = getattr(gm, node.target, None)
            if _is_tensor(fv):
                out[node.name] = ("t", _storage_key(fv), tuple(fv.shape), tuple(fv.stride()),
                                  fv.storage_offset(), fv.dtype)
    return out


def make_executor(bind, plan, static, device, host_init, residents, path):
    """An Executor over device with the placeholders' descriptors and the plan's residents
    placed: residents maps tensor id -> device buffer, or is None to copy each one in from
    host_init."""
    ex = Executor(bind, plan, device, host_init)
    ex.desc = dict(static)
    ex.static = set(static)
    ex.placed = set(plan.start_open)
    for tid in plan.residents:
        if tid not in host_init:
            raise ExportError("%s: resident_at_start holds tensor %d, which is not a parameter or state"
                              % (path, tid), 3)
        flat = residents[tid] if residents is not None else device.to_device(host_init[tid], -1)
        ex._place(tid, flat, -1)
        ex.dev_valid.add(tid)
    return ex


def _tensors_in(v):
    import torch
    if isinstance(v, torch.Tensor):
        return [v]
    if isinstance(v, (list, tuple)):
        out = []
        for x in v:
            out.extend(_tensors_in(x))
        return out
    return []


def _flat(r):
    """A 1-D tensor over the whole storage of r (offset 0), of r's dtype."""
    from .lower import _raw_storage_nbytes
    n = _raw_storage_nbytes(r) // max(1, r.element_size())
    return r.as_strided((n,), (1,), 0)


def _conv_bwd_mask(n, args, part):
    """convolution_backward as two ops: the data part computes grad_input only, the
    weight part grad_weight and grad_bias only (the exported graph's two ops)."""
    sch = n.target._schema
    idx = [a.name for a in sch.arguments].index("output_mask")
    mask = list(args[idx])
    if part == "data":
        args[idx] = [mask[0], False, False]
    else:
        args[idx] = [False, mask[1], mask[2]]
    return args


def _merge_parts(prev, d):
    a, b = prev[1], d[1]
    return ("tuple", [y if (isinstance(y, tuple) and y and y[0] == "t") else x for x, y in zip(a, b)])
