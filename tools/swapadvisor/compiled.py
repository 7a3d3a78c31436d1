"""A plan compiled once into one straight-line Python function per training step.

The executor (execplan.Executor) interprets a plan: every argument of every aten call is
bound through descriptors at run time and every read is checked. Compiling runs that
interpreter once with a Recorder attached, on fake tensors (no kernel runs, no memory is
allocated), so that every check it makes (a read of an absent tensor, a lost update, a
memory overrun: exit 8 naming the tensor) is made once, before the first step. What it did
is written down as Python source, one statement per aten call, as torch.fx writes a
GraphModule's code:

- a kernel's output is a local variable; a later reader of the same tensor reads that
  variable, not a view rebuilt from a descriptor;
- a view is rebuilt (as_strided over the storage) only where the storage's buffer changed
  (a swap_in, a new version, a recompute's output read through a resident copy), with the
  size, stride and offset the producing kernel returned in the same step;
- a placement's end deletes every variable over its buffer, so the device holds what the
  plan says; temporaries of an op are deleted when its node ends;
- swaps copy into host buffers allocated once (pinned on CUDA); on CUDA the nodes run on
  three streams with an event only where a node waits for another stream, and a step can
  be captured as a CUDA graph and replayed.

The step's live bytes follow the plan exactly as the interpreter's did: the recorded run
measures them (peak_live_bytes, scratch_peak_bytes), and the compiled step frees at the
same points. `Program.source` is the generated code (swapplan-torch --dump-step).
"""

import linecache
import math
import sys
import time

from .errors import ExportError
from . import execplan

# in-place ops that change their argument's metadata, not only its contents: they get a
# view of their own, never a variable another reader shares
_META_INPLACE = {"resize_", "resize_as_", "as_strided_", "squeeze_", "unsqueeze_", "transpose_",
                 "t_", "swapdims_", "swapaxes_", "set_", "detach_"}

_NODE, _ITER, _CONST = "node", "iter", "const"


class _Var:
    __slots__ = ("name", "owner", "alive")

    def __init__(self, name, owner):
        self.name = name
        self.owner = owner
        self.alive = True


class _Block:
    """The statements of one plan node."""

    __slots__ = ("i", "stream", "deps", "code", "label")

    def __init__(self, i, stream, deps, label):
        self.i = i
        self.stream = stream
        self.deps = deps
        self.code = []     # [kind, fields, aten node name or None, posts]
        self.label = label


class Recorder:
    """Attached to an Executor (ex.rec) for one iteration: every tensor the interpreter
    makes gets a variable, every kernel call and copy a statement."""

    def __init__(self, ex, dry):
        import torch
        self.torch = torch
        self.ex = ex
        self.dry = dry          # fake tensors: strides are read from the real kernels' outputs
        self.keep = []          # every object seen, so that no id is reused while recording
        self.vars = {}          # id(obj) -> _Var
        self.objs = {}          # variable name -> obj
        self.owned = {}         # owner -> {name: (_Var, obj id)}
        self.lazy = {}          # id(flat) -> the output it is the whole storage of
        self.cache = {}         # (id(buffer), id(desc)) -> obj: a view already made
        self.cache_keys = {}    # id(buffer) -> [keys]
        self.meta_src = {}      # id(desc) -> the output whose metadata the desc is
        self.meta_var = {}      # id(output) -> name of its (size, stride, offset) tuple
        self.made_by = {}       # id(output) -> the statement that made it
        self.view_memo = {}     # (fx name, ids of tensor args) -> obj
        self.memo_keys = {}     # owner -> [memo keys]
        self.buf_stream = {}    # owner -> stream its buffer was made on
        self.recorded = set()   # (owner, stream) pairs already record_stream'ed
        self.standins = {}      # (dtype, size) -> (name, obj)
        self.consts = {}        # name -> ("standin", dtype, size) or ("obj", value)
        self.hosts = {}         # tid -> (numel, dtype) of its host buffer
        self.blocks = []
        self.cur = _Block(-1, 0, [], "the start")
        self.entry = []         # (name, ("flat", tid) | ("view", tid, desc)) loaded from the state
        self.exit = []          # names stored into the state at the end
        self.loss_name = None
        self.aten = None
        self.fresh = False
        self.n = 0

    # ---- variables ----
    def _name(self, prefix):
        self.n += 1
        return "%s%d" % (prefix, self.n)

    def _new(self, obj, owner, prefix="t"):
        v = _Var(self._name(prefix), owner)
        self.vars[id(obj)] = v
        self.keep.append(obj)
        self.objs[v.name] = obj
        self.owned.setdefault(owner, {})[v.name] = (v, id(obj))
        return v

    def _set_owner(self, v, obj, owner):
        if v.owner == owner:
            return
        self.owned[v.owner].pop(v.name, None)
        v.owner = owner
        self.owned.setdefault(owner, {})[v.name] = (v, id(obj))

    def _var(self, obj):
        v = self.vars.get(id(obj))
        return v if v is not None and v.alive else None

    def _owner_of(self, flat):
        v = self._var(flat)
        if v is not None:
            return v.owner
        b = self.lazy.get(id(flat))
        if b is not None and self._var(b) is not None:
            return self._var(b).owner
        raise ExportError("internal: compiling the step: a buffer has no variable")

    def emit(self, kind, *fields):
        ins = [kind, fields, self.aten, []]
        self.cur.code.append(ins)
        return ins

    def _use(self, v):
        """v is read by the current node: a buffer made on another stream is recorded on
        this one (CUDA), so its memory is not reused while this stream may read it."""
        o = v.owner
        if isinstance(o, tuple):
            s0 = self.buf_stream.get(o, self.cur.stream)
            if s0 != self.cur.stream and (o, self.cur.stream) not in self.recorded:
                self.recorded.add((o, self.cur.stream))
                self.emit("record_stream", v.name, self.cur.stream)

    # ---- expressions ----
    def expr(self, x):
        torch = self.torch
        if isinstance(x, torch.Tensor):
            v = self._var(x)
            if v is None:
                raise ExportError("internal: compiling the step: %s reads a tensor that has no variable"
                                  % (self.aten or self.cur.label))
            self._use(v)
            return v.name
        if isinstance(x, tuple):
            return "(" + "".join(self.expr(y) + ", " for y in x) + ")"
        if isinstance(x, list):
            return "[" + ", ".join(self.expr(y) for y in x) + "]"
        if x is None or isinstance(x, (bool, int, str)):
            return repr(x)
        if isinstance(x, float):
            if math.isfinite(x):
                return repr(x)
            return "_nan" if math.isnan(x) else ("_inf" if x > 0 else "-_inf")
        if isinstance(x, torch.device):
            return "DEV"
        if isinstance(x, (torch.dtype, torch.memory_format, torch.layout)):
            return repr(x)
        name = self._name("k")
        self.consts[name] = ("obj", x)
        return name

    def _fn(self, fn):
        torch = self.torch
        if isinstance(fn, torch._ops.OpOverload):
            s = str(fn)
            ns, _, rest = s.partition(".")
            if ns == "aten" and rest.replace(".", "").replace("_", "").isalnum():
                return "aten." + rest
        name = self._name("k")
        self.consts[name] = ("obj", fn)
        return name

    def _pattern(self, r, new):
        torch = self.torch
        if isinstance(r, torch.Tensor):
            if self._var(r) is not None:
                return "_"
            v = self._new(r, _NODE)
            new.append(r)
            return v.name
        if isinstance(r, (list, tuple)):
            return "(" + "".join(self._pattern(x, new) + ", " for x in r) + ")"
        return "_"

    def _call(self, fn, args, kwargs, pure=False):
        r = fn(*args, **kwargs)
        new = []
        pat = self._pattern(r, new)
        if pat in ("_",) or set(pat) <= set("(), _"):
            pat = None
            if pure:
                return r    # a view or getitem of what the step already holds
        a = ", ".join([self.expr(x) for x in args] + ["%s=%s" % (k, self.expr(v)) for k, v in kwargs.items()])
        ins = self.emit("call", pat, self._fn(fn), a)
        for o in new:
            self.made_by[id(o)] = ins
        return r

    # ---- hooks the executor calls ----
    def begin_node(self, i, stream):
        p = self.ex.p
        self.cur = _Block(i, stream, p.deps[i], self.ex.nname(i))
        self.blocks.append(self.cur)
        self.aten = None

    def end_node(self, i):
        self.aten = None
        self._free(_NODE)

    def _free(self, owner):
        names = []
        for name, (v, oid) in list(self.owned.get(owner, {}).items()):
            if v.alive:
                v.alive = False
                names.append(name)
        self.owned.pop(owner, None)
        for k in self.cache_keys.pop(owner, []):
            self.cache.pop(k, None)
        for k in self.memo_keys.pop(owner, []):
            self.view_memo.pop(k, None)
        if names:
            self.emit("del", names)

    def begin_call(self, n):
        self.aten = n.name
        self.fresh = execplan._pkt(n) in _META_INPLACE

    def call(self, n, args, kwargs):
        r = self._call(n.target, args, kwargs)
        self.fresh = False
        return r

    def call_update(self, fn, args, label):
        """An update op's call of its optimizer (execplan.Executor.run_update): made for
        real only when a real step is recorded; on fake tensors only written down."""
        self.aten = label
        if not self.dry:
            fn(*args)
        self.emit("call", None, self._fn(fn), ", ".join(self.expr(a) for a in args))

    def view_call(self, m, args, kwargs):
        """A view or metadata node, run on demand: made once for the arguments it is
        given, kept while the buffer it views is."""
        ids = tuple(id(t) for t in execplan._tensors_in(list(args) + list(kwargs.values())))
        key = (m.name, ids)
        o = self.view_memo.get(key)
        if o is not None and not self.fresh and (not isinstance(o, self.torch.Tensor) or self._var(o)):
            return o
        r = self._call(m.target, args, kwargs, pure=True)
        owner = _NODE
        base = execplan._tensors_in(list(args))
        if isinstance(r, self.torch.Tensor) and base and self._var(r) is not None \
                and self._var(base[0]) is not None \
                and execplan._storage_key(r) == execplan._storage_key(base[0]):
            owner = self._var(base[0]).owner
            if self.vars[id(r)].owner == _NODE:
                self._set_owner(self.vars[id(r)], r, owner)
        if not self.fresh:
            self.view_memo[key] = r
            self.memo_keys.setdefault(owner, []).append(key)
        return r

    def flat_of(self, r, flat):
        self.keep.append(flat)
        if self._var(flat) is None:
            self.lazy[id(flat)] = r

    def need_flat(self, flat):
        v = self._var(flat)
        if v is not None:
            return v.name
        b = self.lazy.get(id(flat))
        bv = self._var(b) if b is not None else None
        if bv is None:
            raise ExportError("internal: compiling the step: a buffer has no variable")
        v = self._new(flat, bv.owner, "f")
        self.emit("flat", v.name, bv.name, flat.numel())
        return v.name

    def placed(self, flat):
        owner = ("buf", id(flat))
        self.buf_stream[owner] = self.cur.stream
        v = self._var(flat)
        if v is not None:
            self._set_owner(v, flat, owner)
            return
        b = self.lazy.get(id(flat))
        if b is not None and self._var(b) is not None:
            self._set_owner(self._var(b), b, owner)

    def dropped(self, flat):
        self._free(("buf", id(flat)))
        self.lazy.pop(id(flat), None)

    def output(self, r, flat, d, where, home):
        self.keep.append(d)
        self.meta_src[id(d)] = r
        v = self._var(r)
        if v is None:
            return
        if where == "dev":
            owner = ("buf", id(home))
            if v.owner == _NODE:
                self._set_owner(v, r, owner)
        elif where == "iter":
            owner = _ITER
            if v.owner == _NODE:
                self._set_owner(v, r, owner)
        else:
            owner = v.owner
        key = (id(home), id(d))
        self.cache[key] = r
        self.cache_keys.setdefault(owner, []).append(key)

    def keep_for_iteration(self, r):
        v = self._var(r)
        if v is not None and v.owner == _NODE:
            self._set_owner(v, r, _ITER)

    def _meta(self, d):
        if not self.dry or id(d) in self.static_ids:
            return "%r, %r, %d" % (tuple(d[2]), tuple(d[3]), d[4])
        src = self.meta_src.get(id(d))
        if src is None or id(src) not in self.made_by:
            return "%r, %r, %d" % (tuple(d[2]), tuple(d[3]), d[4])
        mv = self.meta_var.get(id(src))
        if mv is None:
            mv = self._name("m")
            self.meta_var[id(src)] = mv
            self.made_by[id(src)][3].append(("meta", mv, self.vars[id(src)].name))
        return "*" + mv

    def view(self, flat, d, ctx):
        key = (id(flat), id(d))
        if not self.fresh:
            o = self.cache.get(key)
            if o is not None and self._var(o) is not None:
                return o
        src = self.need_flat(flat)
        dtype = d[5]
        base = flat if flat.dtype == dtype else flat.view(dtype)
        obj = base.as_strided(d[2], d[3], d[4])
        owner = _NODE if self.fresh else self._owner_of(flat)
        v = self._new(obj, owner)
        self.emit("view", v.name, src, dtype if flat.dtype != dtype else None, self._meta(d))
        if not self.fresh:
            self.cache[key] = obj
            self.cache_keys.setdefault(owner, []).append(key)
        return obj

    def standin(self, dtype, size):
        key = (dtype, tuple(size))
        hit = self.standins.get(key)
        if hit is not None:
            return hit[1]
        obj = self.torch.empty((), dtype=dtype, device=self.ex.d.device).expand(tuple(size))
        name = self._name("s")
        self.consts[name] = ("standin", dtype, tuple(size))
        self.vars[id(obj)] = _Var(name, _CONST)
        self.keep.append(obj)
        self.standins[key] = (name, obj)
        return obj

    def clone(self, old):
        src = self.need_flat(old)
        obj = old.clone()
        v = self._new(obj, _NODE, "f")
        self.emit("clone", v.name, src)
        return obj

    def empty(self, n, dtype):
        obj = self.torch.empty(n, dtype=dtype, device=self.ex.d.device)
        v = self._new(obj, _NODE, "f")
        self.emit("empty", v.name, n, dtype)
        return obj

    def d2h(self, tid, flat):
        src = self.need_flat(flat)
        self._use(self.vars[id(flat)])
        self.hosts[tid] = (flat.numel(), flat.dtype)
        self.emit("d2h", tid, src)

    def h2d(self, tid, flat):
        v = self._new(flat, _NODE, "f")
        self.hosts[tid] = (flat.numel(), flat.dtype)
        self.emit("h2d", v.name, tid, flat.numel(), flat.dtype)

    def rng_save(self, op):
        self.emit("rng_save", op)

    def rng_swap(self, op):
        self.emit("rng_swap", op)

    def rng_restore(self):
        self.emit("rng_restore")

    def loss(self, lv):
        v = self._var(lv)
        if v is not None:
            self.loss_name = "loss"
            self.emit("loss", v.name)

    # ---- the iteration's ends ----
    def start(self, residents, static_of):
        """The residents as the step finds them: each one's buffer and the views of it that
        the graph's placeholders are, loaded from the state list."""
        self.static_ids = {id(d) for ds in static_of.values() for d in ds}
        self.slots = []
        for tid in sorted(residents):
            flat = self.ex.dev[tid]
            owner = ("buf", id(flat))
            self.buf_stream[owner] = 0
            v = self._new(flat, owner, "f")
            self.entry.append(v.name)
            self.slots.append(("flat", tid, None))
            for d in static_of.get(tid, []):
                base = flat if flat.dtype == d[5] else flat.view(d[5])
                obj = base.as_strided(d[2], d[3], d[4])
                w = self._new(obj, owner)
                self.keep.append(d)
                self.cache[(id(flat), id(d))] = obj
                self.cache_keys.setdefault(owner, []).append((id(flat), id(d)))
                self.entry.append(w.name)
                self.slots.append(("view", tid, d))

    def finish(self, residents, static_of):
        """Stores the residents' buffers and views back into the state list, in the order
        start() loaded them."""
        self.cur = _Block(-2, 0, [], "the end")
        self.blocks.append(self.cur)
        for tid in sorted(residents):
            flat = self.ex.dev[tid]
            self.exit.append(self.need_flat(flat))
            for d in static_of.get(tid, []):
                self.exit.append(self.vars[id(self.view(flat, d, None))].name)


def _render(rec, target):
    """The step's source: `def step(S):` over the recorded blocks. target is "cpu" or
    "cuda" (streams, events, pinned copies)."""
    cuda = target == "cuda"
    lines = ["def step(S):"]
    where = [None]
    ind = "    "

    def put(s, at=None):
        lines.append(ind + s)
        where.append(at)

    if rec.entry:
        put("%s, = S" % ", ".join(rec.entry))
        put("S.clear()")
    rng = "torch.cuda" if cuda else "torch"
    # which nodes another stream waits for: they record an event
    stream_of = {b.i: b.stream for b in rec.blocks}
    waited = set()
    if cuda:
        put("ST0 = torch.cuda.current_stream()")
        put("EF.record(ST0)")
        put("ST1.wait_event(EF)")
        put("ST2.wait_event(EF)")
        for b in rec.blocks:
            for d in b.deps:
                if stream_of.get(d, b.stream) != b.stream:
                    waited.add(d)
    cur = 0
    last_wait = {}
    for b in rec.blocks:
        if b.i >= 0:
            put("# nodes[%d]: %s" % (b.i, b.label[b.label.find("(") + 1:-1] if "(" in b.label else b.label))
        if cuda and b.i >= 0:
            if b.stream != cur:
                put("torch.cuda.set_stream(ST%d)" % b.stream)
                cur = b.stream
            for d in sorted(b.deps):
                sd = stream_of.get(d, b.stream)
                if sd == b.stream or last_wait.get((b.stream, sd), -1) >= d:
                    continue
                last_wait[(b.stream, sd)] = d
                put("ST%d.wait_event(E%d)" % (b.stream, d), (b.i, None))
        if cuda and b.i == -2 and cur != 0:
            put("torch.cuda.set_stream(ST0)")
            cur = 0
        for kind, f, aten, posts in b.code:
            at = (b.i, aten)
            if kind == "call":
                put(("%s = " % f[0] if f[0] else "") + "%s(%s)" % (f[1], f[2]), at)
            elif kind == "view":
                put("%s = %s%s.as_strided(%s)" % (f[0], f[1], ".view(%r)" % f[2] if f[2] is not None else "",
                                                  f[3]), at)
            elif kind == "flat":
                put("%s = %s.as_strided((%d,), (1,), 0)" % f, at)
            elif kind == "clone":
                put("%s = %s.clone()" % f, at)
            elif kind == "empty":
                put("%s = torch.empty(%d, dtype=%r, device=DEV)" % f, at)
            elif kind == "d2h":
                put("h%d.copy_(%s%s)" % (f[0], f[1], ", non_blocking=True" if cuda else ""), at)
            elif kind == "h2d":
                if cuda:
                    put("%s = torch.empty(%d, dtype=%r, device=DEV)" % (f[0], f[2], f[3]), at)
                    put("%s.copy_(h%d, non_blocking=True)" % (f[0], f[1]), at)
                else:
                    put("%s = h%d.clone()" % (f[0], f[1]), at)
            elif kind == "del":
                put("del " + ", ".join(f[0]), at)
            elif kind == "rng_save":
                put("R[%d] = %s.get_rng_state()" % (f[0], rng), at)
            elif kind == "rng_swap":
                put("_rng = %s.get_rng_state()" % rng, at)
                put("%s.set_rng_state(R[%d])" % (rng, f[0]), at)
            elif kind == "rng_restore":
                put("%s.set_rng_state(_rng)" % rng, at)
            elif kind == "loss":
                put("loss = %s.detach().clone()" % f[0], at)
            elif kind == "record_stream":
                if cuda:
                    put("%s.record_stream(%s)" % (f[0], "ST%d" % f[1]), at)
            else:
                raise ExportError("internal: compiling the step: statement %r" % kind)
            for post in posts:
                put("%s = (%s.size(), %s.stride(), %s.storage_offset())" % (post[1], post[2], post[2], post[2]), at)
        if cuda and b.i in waited:
            put("E%d.record(ST%d)" % (b.i, b.stream), (b.i, None))
    if cuda:
        if cur != 0:
            put("torch.cuda.set_stream(ST0)")
        put("ST0.wait_stream(ST1)")
        put("ST0.wait_stream(ST2)")
    if rec.exit:
        put("S[:] = (%s,)" % ", ".join(rec.exit))
    put("return %s" % ("loss" if rec.loss_name else "None"))
    return "\n".join(lines) + "\n", where, sorted(waited)


class Program:
    """A compiled step: step() runs one training iteration and returns its loss (a 0-d
    tensor) or None. The state list S holds the residents between steps; host buffers
    (globals h<tid>) hold the swapped tensors' host copies, the inputs included."""

    _count = 0

    def __init__(self, rec, ex, device, host, state, stats, target):
        import torch
        self.rec = rec
        self.ex = ex
        self.device = device
        self.target = target
        self.source, self.where, waited = _render(rec, target)
        Program._count += 1
        self.filename = "<swapplan-step-%d>" % Program._count
        g = {"torch": torch, "aten": torch.ops.aten, "DEV": device.device, "R": {},
             "_inf": math.inf, "_nan": math.nan}
        for name, c in rec.consts.items():
            if c[0] == "standin":
                g[name] = torch.empty((), dtype=c[1], device=device.device).expand(c[2])
            else:
                g[name] = c[1]
        self.host = host
        for tid, buf in host.items():
            g["h%d" % tid] = buf
        if target == "cuda":
            g["ST1"], g["ST2"] = device.streams[1], device.streams[2]
            g["EF"] = torch.cuda.Event()
            for i in waited:
                g["E%d" % i] = torch.cuda.Event()
        self.globals = g
        linecache.cache[self.filename] = (len(self.source), None, self.source.splitlines(True), self.filename)
        code = compile(self.source, self.filename, "exec")
        exec(code, g)
        self.fn = g["step"]
        self.S = state
        self.slots = rec.slots
        self.resident_slot = {t: k for k, (kind, t, _d) in enumerate(rec.slots) if kind == "flat"}
        self.stats = stats
        self.graph = None

    def step(self):
        # the step empties S as it loads it: a step that fails leaves the residents as
        # they were at its start (what it had updated in place stays updated)
        saved = list(self.S)
        try:
            return self.fn(self.S)
        except ExportError:
            self.S[:] = saved
            raise
        except Exception as e:
            self.S[:] = saved
            raise self._fault(e, sys.exc_info()[2])

    def _fault(self, e, tb):
        """The kernel that failed, named by the plan node and aten node of its line."""
        line = None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == self.filename:
                line = tb.tb_lineno
            tb = tb.tb_next
        at = self.where[line - 1] if line is not None and 0 < line <= len(self.where) else None
        what = " ".join(str(e).split())[:300]
        if at is None:
            return ExportError("the compiled step failed: %s: %s" % (type(e).__name__, what), 3)
        node = self.ex.nname(at[0]) if at[0] >= 0 else "the step's %s" % ("start" if at[0] == -1 else "end")
        return ExportError("%s: aten node %s failed: %s: %s" % (node, at[1] or "(copy)", type(e).__name__, what), 3)

    def final_value(self, tid):
        """A persistent tensor's contents after the last step (flat)."""
        k = self.resident_slot.get(tid)
        return self.S[k] if k is not None else self.host[tid]

    def set_host(self, tid, value):
        """Copies value (any shape, the tensor's numel and dtype) into tid's host buffer:
        the next step's inputs."""
        self.host[tid].copy_(value.reshape(-1))

    # ---- CUDA graphs ----
    def capture(self):
        """Captures one step as a CUDA graph; returns None, or why it could not (a line
        naming the node). The state list is restored when capture fails."""
        import torch
        if self.target != "cuda":
            return "not a CUDA step"
        moved = [self.rec.entry[k] for k in range(len(self.rec.entry)) if self.rec.entry[k] != self.rec.exit[k]]
        if moved:
            return ("a resident's buffer changes within the step (%s): a captured graph needs the same "
                    "addresses at its start and end" % moved[0])
        saved = list(self.S)
        g = torch.cuda.CUDAGraph()
        try:
            torch.cuda.synchronize()
            with torch.cuda.graph(g):
                out = self.fn(self.S)
        except Exception as e:
            self.S[:] = saved
            try:
                torch.cuda.synchronize()
            except Exception:
                pass
            return str(self._fault(e, sys.exc_info()[2]))
        self.graph = (g, out)
        return None

    def replay(self):
        g, out = self.graph
        g.replay()
        return out


class NeedsRealStep(Exception):
    """compile_plan(first_step=False) could not compile on fake tensors: only a real
    first step, recorded, can compile this plan."""


def compile_plan(bind, plan, device, host_init, residents_init, make_executor, static, loss_node, note,
                 first_step=True):
    """Compiles plan into a Program. make_executor(device, host_init, residents) builds an
    Executor with its residents placed (residents: tid -> device buffer, or None to copy
    them in from host_init); static: the placeholders' descriptors (execplan.static_descs);
    residents_init() places the real residents. The plan is run once on fake tensors with a Recorder: its
    faults (PlanFault, exit 8) are found there, before any kernel runs. Where the fake run
    itself fails (an op fake tensors cannot run), the first step is run for real by the
    interpreter instead and recorded; the returned Program then continues after it, and
    its `first` holds that step's report. With first_step=False that fallback is not taken:
    NeedsRealStep says why (the caller runs it when it has the step's inputs)."""
    import torch
    t0 = time.time()
    static_of = _static_of(bind, static)
    try:
        prog = _compile_dry(bind, plan, device, host_init, residents_init, make_executor, loss_node, static_of)
        prog.first = None
        prog.compile_s = time.time() - t0
        return prog
    except execplan.PlanFault:
        raise
    except ExportError as e:
        if e.code != 3 or "internal" in str(e):
            raise
        why = str(e)
    except Exception as e:
        why = "%s: %s" % (type(e).__name__, " ".join(str(e).split())[:200])
    if not first_step:
        raise NeedsRealStep(why)
    note("compiling on fake tensors failed (%s); compiling from the first step, run by the interpreter" % why)
    ex = make_executor(device, host_init, residents_init())
    rec = Recorder(ex, dry=False)
    ex.rec = rec
    ex.loss_node = loss_node
    rec.start(plan.residents, static_of)
    with torch.no_grad():
        first = ex.iteration()
    rec.finish(plan.residents, static_of)
    ex.rec = None
    host = _host_buffers(rec, device, ex.host)
    state = [rec.objs[name] for name in rec.exit]
    stats = _stats(ex)
    prog = Program(rec, ex, device, host, state, stats, device.name)
    prog.first = first
    prog.compile_s = time.time() - t0
    return prog


def _static_of(bind, static):
    """tensor id -> the placeholders' descriptors of that tensor."""
    out = {}
    for name in sorted(static):
        t = bind.ph_tensor.get(name)
        if t is not None and t.id >= 0:
            out.setdefault(t.id, []).append(static[name])
    return out


def _stats(ex):
    return {"peak_live_bytes": ex.peak, "scratch_peak_bytes": ex.scratch_peak,
            "h2d_bytes": ex.stats["h2d_bytes"], "d2h_bytes": ex.stats["d2h_bytes"],
            "nodes": dict(ex.stats["nodes"])}


def _host_buffers(rec, device, have):
    import torch
    out = {}
    for tid, (n, dt) in sorted(rec.hosts.items()):
        h = have.get(tid)
        if h is None or h.numel() != n or h.dtype != dt:
            pin = device.name == "cuda"
            h = torch.empty(n, dtype=dt, pin_memory=pin) if pin else torch.empty(n, dtype=dt)
        out[tid] = h
    return out


class FakeDevice(execplan.CpuDevice):
    """The device of the compiling run: fake tensors of the real device's type."""

    name = "fake"

    def __init__(self, mode, device):
        self.mode = mode
        self.device = device

    def host_copy(self, t):
        return self.mode.from_tensor(t.detach()).reshape(-1)

    def to_host(self, flat, host, node):
        return flat.clone()

    def rng_get(self):
        return None

    def rng_set(self, s):
        pass


def _fake_mode():
    from torch._subclasses.fake_tensor import FakeTensorMode
    try:
        return FakeTensorMode(allow_non_fake_inputs=True)
    except TypeError:
        return FakeTensorMode()


def _compile_dry(bind, plan, device, host_init, residents_init, make_executor, loss_node, static_of):
    import torch
    mode = _fake_mode()
    fdev = FakeDevice(mode, device.device)
    fake_init = {tid: fdev.host_copy(v) for tid, v in host_init.items()}
    with torch.no_grad():
        with mode:
            ex = make_executor(fdev, fake_init, None)
            rec = Recorder(ex, dry=True)
            ex.rec = rec
            ex.loss_node = loss_node
            rec.start(plan.residents, static_of)
            ex.iteration()
            rec.finish(plan.residents, static_of)
    ex.rec = None
    host = _host_buffers(rec, device, host_init)
    # the real residents, placed as the fake run placed them
    real = residents_init()
    state = []
    for kind, tid, d in rec.slots:
        flat = real[tid]
        if kind == "flat":
            state.append(flat)
        else:
            base = flat if flat.dtype == d[5] else flat.view(d[5])
            state.append(base.as_strided(d[2], d[3], d[4]))
    return Program(rec, ex, device, host, state, _stats(ex), device.name)
