"""Lower the traced aten graph to a dfg v1 graph (docs/formats.md, docs/torch.md).

Storages, not tensors. Every fx node's value is a fake tensor; tensors that share a
storage (views: view, t, expand, detach/alias, split, ...) are one graph tensor, the
storage, with the bytes of the storage. An op that only makes views is no op at all.

In-place writes. An op that writes a storage in place (relu_, add_, copy_ into a
slice, the running statistics of batch norm, the optimizer's add_) is handled by
what the storage is:
- param / state (persistent): the op lists it in inputs and outputs (an update);
- an activation or gradient: the writer is folded into the op that produced the
  storage's current contents when that cannot make a cycle (conv -> bn -> relu_
  becomes one `batchnorm` op that writes its output once: the storage is not
  duplicated); otherwise the write makes a new version of the storage, a new
  tensor produced by the writer (the format's one-producer rule);
- an input (never written, by the format): a new version, as above.

The update phase. Every op of the optimizer step that touches a parameter's
storages (its gradient, the parameter, its optimizer state, temporaries) is folded
into one update op per parameter, `sgd_update` / `momentum_update` / `adam_update`,
reading [w, dw, state...] and writing [w, state...] in place, like the zoo's.
"""

import operator
import sys

from . import cost as costmod
from .errors import ExportError, TraceError

PERSISTENT = ("param", "state")

_DTYPE_NAMES = {
    "float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64",
    "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8",
    "bool": "bool", "complex64": "c64", "complex128": "c128",
    "float8_e4m3fn": "f8e4m3", "float8_e5m2": "f8e5m2",
}

# In-place ops that overwrite their `self` without reading it.
_WRITE_ONLY = {"copy_", "fill_", "zero_", "uniform_", "normal_", "bernoulli_",
               "exponential_", "random_", "geometric_", "cauchy_", "log_normal_",
               "resize_", "set_"}
# aten ops that draw from the random generator. The graph orders the ops holding them
# as the trace ran them (control_deps), so every plan draws in the eager step's order.
RANDOM = {"bernoulli", "bernoulli_", "native_dropout", "dropout", "rand", "rand_like", "randn",
          "randn_like", "randint", "randint_like", "randperm", "normal", "normal_", "uniform_",
          "exponential_", "geometric_", "cauchy_", "log_normal_", "random_", "multinomial",
          "rrelu_with_noise", "_fused_dropout", "poisson"}

# Ops whose tensor arguments are read for their metadata only.
_META_ONLY = {n for n in costmod.META_ONLY_READS} | {"new_empty", "new_zeros", "new_ones",
                                                    "new_full", "new_empty_strided"}
# Batch-norm ops that update running_mean / running_var (args 3, 4) in place in
# training mode without saying so in their schema (torch 1.13; 2.x annotates
# _native_batch_norm_legit but still has native_batch_norm).
_BN_UPDATES = {"native_batch_norm", "cudnn_batch_norm", "miopen_batch_norm",
               "_batch_norm_impl_index", "native_batch_norm_legit"}
# Backward batch-norm ops that take running stats but do not read them in training.
_BN_BWD = {"native_batch_norm_backward", "cudnn_batch_norm_backward", "miopen_batch_norm_backward"}


def dtype_name(dt):
    s = str(dt).replace("torch.", "")
    return _DTYPE_NAMES.get(s, s)


def _storage_key(t):
    from torch.multiprocessing.reductions import StorageWeakRef
    try:
        s = t.untyped_storage()
    except (AttributeError, NotImplementedError, RuntimeError):
        s = t.storage()
    return StorageWeakRef(s).cdata


_HALF = {"f16": 2, "bf16": 2}
_RELABEL = {"dtype": None}


def _scale(t, n):
    """Bytes of t's storage or view once f32 is relabelled as --dtype's type."""
    import torch
    if _RELABEL["dtype"] is not None and t.dtype == torch.float32:
        return n * _HALF[_RELABEL["dtype"]] // 4
    return n


def _dtype_of(t):
    import torch
    if _RELABEL["dtype"] is not None and t.dtype == torch.float32:
        return _RELABEL["dtype"]
    return dtype_name(t.dtype)


def _storage_nbytes(t):
    return _scale(t, _raw_storage_nbytes(t))


def _raw_storage_nbytes(t):
    try:
        try:
            n = t.untyped_storage().nbytes()
        except (AttributeError, NotImplementedError, RuntimeError):
            n = t.storage().nbytes()
        return int(n)
    except Exception:
        return costmod.numel(t) * t.element_size()


def _view_nbytes(t):
    return _scale(t, costmod.numel(t) * t.element_size())


class Tensor:
    __slots__ = ("id", "name", "kind", "bytes", "shape", "dtype", "producer", "readers", "key",
                 "param_name", "order", "prev")

    def __init__(self, name, kind, nbytes, shape, dtype, key, producer=None):
        self.id = -1
        self.name = name
        self.kind = kind
        self.bytes = int(nbytes)
        self.shape = [int(d) for d in shape] if shape is not None else None
        self.dtype = dtype
        self.producer = producer
        self.readers = []
        self.key = key
        self.param_name = None
        self.order = 0
        self.prev = None  # the version of the same storage this one was written over


class Group:
    """One op of the output graph: one aten op, or several folded together."""

    __slots__ = ("id", "lo", "hi", "name", "type", "phase", "path", "flops", "bytes",
                 "reads", "outs", "pwrites", "aten", "known", "alive", "merged_into",
                 "base_name")

    def __init__(self, pos, base_name, path, type_, phase, flops, nbytes, aten, known):
        self.id = -1
        self.lo = self.hi = pos
        self.base_name = base_name
        self.path = path
        self.name = None
        self.type = type_
        self.phase = phase
        self.flops = float(flops)
        self.bytes = float(nbytes)
        self.reads = []      # Tensors read (ordered, no repeats)
        self.outs = []       # Tensors produced (ordered)
        self.pwrites = []    # persistent Tensors updated in place
        self.aten = list(aten)
        self.known = known
        self.alive = True
        self.merged_into = None

    def root(self):
        g = self
        while g.merged_into is not None:
            g = g.merged_into
        return g

    def add_read(self, t):
        if t not in self.reads and t not in self.outs:
            self.reads.append(t)
            t.readers.append(self)


class Storage:
    __slots__ = ("key", "nbytes", "cur", "writer", "persistent", "is_input")

    def __init__(self, key, nbytes, cur, persistent=False, is_input=False):
        self.key = key
        self.nbytes = nbytes
        self.cur = cur
        self.writer = None
        self.persistent = persistent
        self.is_input = is_input


class Lowering:
    def __init__(self, cap, model_name, batch, log=None):
        self.cap = cap
        self.model_name = model_name
        self.batch = batch
        self.log = log or (lambda msg: sys.stderr.write(msg + "\n"))
        self.storages = {}
        self.tensors = []
        self.groups = []
        self.pos = 0
        self.n_views = 0
        self.n_fused = 0
        self.n_versions = 0
        self.generic = {}       # aten op -> count, ops without a cost formula
        self.read_after_update = []  # (reader group, tensor, writer group)
        self.grad_keys = {}     # storage key -> param name
        self.node_groups = {}   # fx node name -> [(group, weight)]: what --measure times
        # fx node name -> {storage key: Tensor}: the version of each storage the node
        # reads or writes (after its write), what swapplan-torch binds its arguments to
        self.node_ver = {}
        self.cur_node = None

    # ---- values ----
    def val(self, n):
        import torch
        if isinstance(n, torch.fx.Node):
            return n.meta.get("val")
        if isinstance(n, (list, tuple)):
            return type(n)(self.val(x) for x in n)
        return n

    def new_tensor(self, name, kind, nbytes, shape, dtype, key, producer=None):
        t = Tensor(name, kind, nbytes, shape, dtype, key, producer)
        t.order = len(self.tensors)
        self.tensors.append(t)
        return t

    # ---- placeholders and constants ----
    def placeholder(self, node, kind, name, param_of):
        import torch
        v = node.meta.get("val")
        if not isinstance(v, torch.Tensor):
            return
        key = _storage_key(v)
        nb = _storage_nbytes(v)
        if nb <= 0:
            return
        t = self.new_tensor(name, kind, nb, list(v.shape), _dtype_of(v), key)
        t.param_name = param_of
        self.storages[key] = Storage(key, nb, t, persistent=kind in PERSISTENT, is_input=kind == "input")

    def constant(self, node):
        import torch
        v = getattr(self.cap.gm, node.target, None)
        fv = node.meta.get("val", v)
        if not isinstance(fv, torch.Tensor):
            return
        key = _storage_key(fv)
        if key in self.storages:
            return
        nb = _storage_nbytes(fv)
        if nb <= 0:
            return
        t = self.new_tensor("const/" + str(node.target), "state", nb, list(fv.shape), _dtype_of(fv), key)
        self.storages[key] = Storage(key, nb, t, persistent=True)

    # ---- ops ----
    def call(self, node):
        import torch
        target = node.target
        if target is operator.getitem or not isinstance(target, torch._ops.OpOverload):
            return
        pkt = target.overloadpacket.__name__
        schema = target._schema
        self.cur_node = node.name
        phase = node.meta.get("sa_phase", "forward")
        path = node.meta.get("sa_path", "")
        args = list(node.args)
        kwargs = dict(node.kwargs)

        # schema argument of each positional / keyword argument
        sargs = list(schema.arguments)
        bound = []  # (schema_arg or None, fx value)
        for i, a in enumerate(args):
            bound.append((sargs[i] if i < len(sargs) else None, a))
        by_name = {a.name: a for a in sargs}
        for k, a in kwargs.items():
            bound.append((by_name.get(k), a))

        write_keys, read_items = [], []  # read_items: (key, view bytes)
        meta_only = pkt in _META_ONLY
        write_only = pkt in _WRITE_ONLY
        for idx, (sa, a) in enumerate(bound):
            tvals = self._tensor_vals(a)
            if not tvals:
                continue
            is_write = bool(sa is not None and sa.alias_info is not None and sa.alias_info.is_write)
            if pkt in _BN_UPDATES and idx in (3, 4) and self._bn_training(args):
                is_write = True
            skip_read = meta_only
            if pkt in _BN_BWD and idx in (3, 4) and self._bn_bwd_training(args):
                skip_read = True
            if pkt == "native_layer_norm_backward" and sa is not None and sa.name == "bias":
                skip_read = True  # the bias only sets the output mask; the weight is read
            if is_write and (write_only and idx == 0 or (sa is not None and sa.kwarg_only)):
                # overwritten without being read (copy_'s self, an out= argument),
                # unless only part of the storage is written
                skip_read = all(_view_nbytes(v) >= _storage_nbytes(v) for v in tvals)
            for v in tvals:
                k = _storage_key(v)
                if is_write:
                    write_keys.append(k)
                if not skip_read:
                    read_items.append((k, min(_view_nbytes(v), _storage_nbytes(v))))

        outv = node.meta.get("val")
        if outv is None:
            # torch 1.13 keeps no value on multi-output nodes: read it off the getitems
            items = {}
            for u in node.users:
                if u.op == "call_function" and u.target is operator.getitem and isinstance(u.args[1], int):
                    items[u.args[1]] = u.meta.get("val")
            if items:
                outv = tuple(items.get(i) for i in range(max(items) + 1))
        fresh = []
        for i, v in enumerate(self._indexed_outputs(outv)):
            if v is None:
                continue
            k = _storage_key(v)
            if k not in self.storages and k not in [f[1] for f in fresh]:
                fresh.append((i, k, v))
        if not fresh and not write_keys:
            self.n_views += 1
            return

        self.pos += 1
        arg_vals = [self.val(a) for a in args]
        kw_vals = {k: self.val(a) for k, a in kwargs.items()}
        out_tensors = [v for _, _, v in fresh] + [self.val(a) for sa, a in bound
                                                   if sa is not None and sa.alias_info is not None
                                                   and sa.alias_info.is_write and isinstance(self.val(a), torch.Tensor)]
        if pkt == "convolution_backward":
            self._conv_backward(node, pkt, path, phase, arg_vals, read_items, fresh)
            return
        c = costmod.op_cost(pkt, arg_vals, kw_vals, out_tensors, phase, _view_nbytes)
        if not c.known:
            key = str(target)
            self.generic[key] = self.generic.get(key, 0) + 1
        nbytes = c.bytes
        if nbytes is None:
            nbytes = sum(b for _, b in read_items) + sum(_storage_nbytes(v) for _, _, v in fresh) \
                + sum(_view_nbytes(v) for v in out_tensors[len(fresh):])
        self.emit(pkt, path, c.type, phase, c.flops, nbytes, [pkt], c.known, read_items, fresh, write_keys)

    def _bn_training(self, args):
        return len(args) > 5 and args[5] is True

    def _bn_bwd_training(self, args):
        return len(args) > 7 and args[7] is True

    def _tensor_vals(self, a):
        import torch
        v = self.val(a)
        if isinstance(v, torch.Tensor):
            return [v]
        if isinstance(v, (list, tuple)):
            return [x for x in v if isinstance(x, torch.Tensor)]
        return []

    def _indexed_outputs(self, outv):
        import torch
        if isinstance(outv, torch.Tensor):
            return [outv]
        if isinstance(outv, (list, tuple)):
            res = []
            for x in outv:
                if isinstance(x, torch.Tensor):
                    res.append(x)
                elif isinstance(x, (list, tuple)):
                    res.extend(y if isinstance(y, torch.Tensor) else None for y in x)
                else:
                    res.append(None)
            return res
        return []

    def _conv_backward(self, node, pkt, path, phase, a, read_items, fresh):
        """convolution_backward -> two ops: the data gradient (reads dy and w, writes
        dx) and the filter gradient (reads dy and x, writes dw and db), as cuDNN runs
        them; each has the convolution's 2 x MACs."""
        gy, x, w = a[0], a[1], a[2]
        transposed = bool(a[6]) if len(a) > 6 else False
        mask = list(a[10]) if len(a) > 10 else [True, True, True]
        macs = costmod.conv_macs(x, w, gy, transposed) if not transposed else costmod.conv_macs(gy, w, x, True)
        ctype = costmod.conv_type(x)
        key = lambda v: _storage_key(v)
        rb = lambda v: min(_view_nbytes(v), _storage_nbytes(v))
        data_out = [f for f in fresh if f[0] == 0]
        filt_out = [f for f in fresh if f[0] in (1, 2)]
        if mask[0] and data_out:
            reads = [(key(gy), rb(gy)), (key(w), rb(w))]
            nb = sum(b for _, b in reads) + sum(_storage_nbytes(v) for _, _, v in data_out)
            self.emit(pkt + "_data", path, ctype + "_bwd_data", phase, 2 * macs, nb, [pkt], True, reads, data_out, [])
        if filt_out:
            if data_out and mask[0]:
                self.pos += 1
            reads = [(key(gy), rb(gy)), (key(x), rb(x))]
            f = 2 * macs if (len(mask) > 1 and mask[1]) else 0
            if len(mask) > 2 and mask[2]:
                f += costmod.numel(gy)
            nb = sum(b for _, b in reads) + sum(_storage_nbytes(v) for _, _, v in filt_out)
            self.emit(pkt + "_weight", path, ctype + "_bwd_filter", phase, f, nb, [pkt], True, reads, filt_out, [])

    # ---- building groups ----
    def emit(self, base, path, type_, phase, flops, nbytes, aten, known, read_items, fresh, write_keys):
        self._emit(base, path, type_, phase, flops, nbytes, aten, known, read_items, fresh, write_keys)
        ver = self.node_ver.setdefault(self.cur_node, {})
        for k in [k for k, _ in read_items] + list(write_keys) + [f[1] for f in fresh]:
            st = self.storages.get(k)
            if st is not None:
                ver[k] = st.cur

    def _emit(self, base, path, type_, phase, flops, nbytes, aten, known, read_items, fresh, write_keys):
        g = Group(self.pos, base, path, type_, phase, flops, nbytes, aten, known)
        self.node_groups.setdefault(self.cur_node, []).append(
            (g, float(flops) if pkt_split(base) else 1.0))
        reads = []
        for k, _ in read_items:
            st = self.storages.get(k)
            if st is None or st.nbytes <= 0:
                continue
            if st.cur not in reads:
                reads.append(st.cur)

        # Persistent tensors read after an in-place update earlier in the iteration.
        for t in reads:
            st = self.storages[t.key]
            if st.persistent and st.writer is not None and phase != "update":
                self.read_after_update.append((g, t, st.writer))

        writes = []
        for k in write_keys:
            st = self.storages.get(k)
            if st is None or st.nbytes <= 0 or st in writes:
                continue
            writes.append(st)

        target = None
        if phase != "update":
            for st in writes:
                if st.persistent or st.is_input:
                    continue
                a = st.cur.producer.root() if st.cur.producer is not None else None
                if a is not None and self._can_fold(a, g, reads, writes):
                    target = a
                    break
            if target is None:
                for st in writes:
                    if st.persistent and st.writer is not None:
                        w = st.writer.root()
                        if self._can_fold(w, g, reads, writes):
                            target = w
                            break
                        raise TraceError(
                            "%s: %s is updated in place twice in one iteration (by %s and by %s), "
                            "and the two cannot be folded into one update"
                            % (self.model_name, st.cur.name, w.base_name, base))
        if target is not None:
            self._fold(target, g, reads, fresh, writes)
            g.merged_into = target
            g.alive = False
            return
        self.groups.append(g)
        for t in reads:
            g.add_read(t)
        for st in writes:
            if st.persistent:
                if st.writer is None or phase == "update":
                    if st.cur not in g.reads:
                        g.reads.append(st.cur)
                        st.cur.readers.append(g)
                    if st.cur not in g.pwrites:
                        g.pwrites.append(st.cur)
                    if st.writer is None:
                        st.writer = g
                continue
            if phase == "update":
                # temporaries of the optimizer, folded away later with their update
                if st.cur not in g.reads:
                    g.add_read(st.cur)
                g.pwrites.append(st.cur)
                continue
            # a new version of an activation / gradient / input storage
            self.n_versions += 1
            nt = self.new_tensor(None, None, st.nbytes, st.cur.shape, st.cur.dtype, st.key, g)
            nt.prev = st.cur
            g.outs.append(nt)
            st.cur = nt
        for i, k, v in fresh:
            nb = _storage_nbytes(v)
            if nb <= 0:
                continue
            t = self.new_tensor(None, None, nb, list(v.shape), _dtype_of(v), k, g)
            t.order = len(self.tensors)
            g.outs.append(t)
            self.storages[k] = Storage(k, nb, t)
        if not g.reads and not g.outs and not g.pwrites:
            g.alive = False  # e.g. an allocation of zero bytes

    def _can_fold(self, a, g, reads, writes):
        """Folding op g into group a cannot make a cycle: every tensor g reads that a
        does not produce comes from a group finished before a started, or a has no
        successor yet (nobody read what it wrote)."""
        if a.phase != g.phase or not a.alive:
            return False
        a_succ = any(r.root() is not a for t in a.outs for r in t.readers) or \
            any(r.root() is not a for t in a.pwrites for r in t.readers)
        for t in reads:
            if t.producer is None or t.producer.root() is a:
                continue
            if a_succ and t.producer.root().hi >= a.lo:
                return False
        for st in writes:
            if st.persistent:
                for r in st.cur.readers:
                    rr = r.root()
                    if rr is not a and rr.hi >= a.lo:
                        return False
            elif any(r.root() is not a for r in st.cur.readers):
                # an op outside a read the contents before this write: folding would
                # hand it the written contents, so the write makes a new version
                return False
        return True

    def _fold(self, a, g, reads, fresh, writes):
        self.n_fused += 1
        if a.type == "alloc":
            a.type, a.base_name, a.path, a.known = g.type, g.base_name, g.path, g.known
            a.lo = g.lo
        a.hi = max(a.hi, g.hi)
        a.flops += g.flops
        a.bytes += g.bytes
        a.aten.extend(g.aten)
        a.known = a.known and g.known
        for t in reads:
            if t.producer is not None and t.producer.root() is a:
                continue
            a.add_read(t)
        for st in writes:
            if st.persistent:
                if st.cur not in a.reads:
                    a.add_read(st.cur)
                if st.cur not in a.pwrites:
                    a.pwrites.append(st.cur)
                st.writer = a
            elif st.cur.producer is None or st.cur.producer.root() is not a:
                self.n_versions += 1
                nt = self.new_tensor(None, None, st.nbytes, st.cur.shape, st.cur.dtype, st.key, a)
                nt.prev = st.cur
                a.outs.append(nt)
                st.cur = nt
        for i, k, v in fresh:
            nb = _storage_nbytes(v)
            if nb <= 0:
                continue
            t = self.new_tensor(None, None, nb, list(v.shape), _dtype_of(v), k, a)
            a.outs.append(t)
            self.storages[k] = Storage(k, nb, t)

    # ---- update phase ----
    def fold_updates(self):
        """One update op per parameter: the connected pieces of the update phase."""
        ups = [g for g in self.groups if g.alive and g.phase == "update"]
        parent = {id(g): g for g in ups}

        def find(g):
            while parent[id(g)] is not g:
                parent[id(g)] = parent[id(parent[id(g)])]
                g = parent[id(g)]
            return g

        def union(a, b):
            ra, rb = find(a), find(b)
            if ra is not rb:
                parent[id(rb)] = ra

        owner = {}
        for g in ups:
            for t in g.reads + g.outs + g.pwrites:
                # a tensor made before the update phase (a gradient, the clipping
                # coefficient every update reads) does not join two updates
                if t.kind in ("input",) or (t.producer is not None and t.producer.root().phase != "update"):
                    continue
                o = owner.get(id(t))
                if o is None:
                    owner[id(t)] = g
                else:
                    union(o, g)
        comps = {}
        for g in ups:
            comps.setdefault(id(find(g)), []).append(g)
        opt = self.cap.optimizer
        for members in comps.values():
            members.sort(key=lambda x: x.lo)
            head = members[0]
            produced = set()
            for m in members:
                produced.update(id(t) for t in m.outs)
            reads, pw = [], []
            for m in members:
                for t in m.reads:
                    if id(t) not in produced and t not in reads:
                        reads.append(t)
                for t in m.pwrites:
                    if t.kind in PERSISTENT and t not in pw:
                        pw.append(t)
            for m in members:
                for t in m.reads:
                    t.readers = [r for r in t.readers if r not in members]
                if m is not head:
                    m.alive = False
                    m.merged_into = head
            for m in members:
                for t in m.outs:
                    t.producer = None
                    t.kind = "dropped"
            head.hi = max(m.hi for m in members)
            head.flops = sum(m.flops for m in members)
            head.aten = [a for m in members for a in m.aten]
            head.known = True
            head.reads = []
            for t in reads:
                head.add_read(t)
            head.outs = []
            head.pwrites = pw
            head.bytes = float(sum(t.bytes for t in reads) + sum(t.bytes for t in pw))
            params = [t for t in pw if t.kind == "param"]
            if params:
                head.type = "%s_update" % self.cap.update_type.get(params[0].name, opt)
                head.base_name = params[0].name
                head.path = "update"
            else:
                head.type = "elementwise"

    # ---- the whole graph ----
    def run(self):
        import torch
        cap = self.cap
        phs = [n for n in cap.gm.graph.nodes if n.op == "placeholder"]
        if len(phs) != len(cap.placeholders):
            raise ExportError("internal: %d placeholders traced, %d expected" % (len(phs), len(cap.placeholders)))
        for node, (kind, name, param_of) in zip(phs, cap.placeholders):
            self.placeholder(node, kind, name, param_of)
        out_node = None
        for node in cap.gm.graph.nodes:
            if node.op == "get_attr":
                self.constant(node)
            elif node.op == "call_function":
                self.call(node)
            elif node.op == "output":
                out_node = node
        # returned values: [loss, grads...]
        rets = out_node.args[0] if out_node is not None else []
        from torch.utils._pytree import tree_flatten
        flat = tree_flatten(rets)[0]
        loss_key = None
        if flat and isinstance(flat[0], torch.fx.Node):
            lv = flat[0].meta.get("val")
            if isinstance(lv, torch.Tensor):
                loss_key = _storage_key(lv)
        grad_tensors = {}
        for node, pname in zip(flat[1:], cap.grad_of):
            v = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
            if isinstance(v, torch.Tensor):
                k = _storage_key(v)
                st = self.storages.get(k)
                if st is not None and not st.persistent:
                    grad_tensors[id(st.cur)] = (st.cur, pname)
        self.fold_updates()
        for g, t, w in self.read_after_update:
            if g.root() is not w.root():
                raise TraceError("%s: %s reads %s after %s updated it in place in the same iteration; "
                                 "the graph format updates a persistent tensor once, after its last reader"
                                 % (self.model_name, g.root().base_name, t.name, w.root().base_name))
        groups = [g for g in self.groups if g.alive and g.merged_into is None]
        # kinds and names of produced tensors
        for g in groups:
            for t in g.outs:
                t.producer = g
                t.kind = "activation" if g.phase == "forward" else "gradient" if g.phase == "backward" else "activation"
        for t, pname in grad_tensors.values():
            if t.kind != "dropped":
                t.kind = "gradient"
                t.name = "grad/" + pname
                t.param_name = pname
        for g in groups:
            if g.type == "matmul_bwd_data" and any(id(t) in grad_tensors for t in g.outs):
                g.type = "matmul_bwd_weight"
        self.groups = self._toposort(groups)
        self._name(self.groups, loss_key)
        return self

    def _toposort(self, groups):
        import heapq
        index = {id(g): i for i, g in enumerate(groups)}
        succ = [set() for _ in groups]
        indeg = [0] * len(groups)
        for g in groups:
            i = index[id(g)]
            for t in g.reads:
                if t.kind in PERSISTENT:
                    continue
                p = t.producer
                if p is not None and id(p) in index and p is not g:
                    j = index[id(p)]
                    if i not in succ[j]:
                        succ[j].add(i)
                        indeg[i] += 1
        # reader of a persistent tensor -> the op that updates it
        for g in groups:
            for t in g.pwrites:
                u = index[id(g)]
                for r in t.readers:
                    rr = r.root()
                    if id(rr) in index and rr is not g:
                        j = index[id(rr)]
                        if u not in succ[j]:
                            succ[j].add(u)
                            indeg[u] += 1
        heap = [(g.lo, index[id(g)]) for g in groups if indeg[index[id(g)]] == 0]
        heapq.heapify(heap)
        order = []
        while heap:
            _, i = heapq.heappop(heap)
            order.append(groups[i])
            for j in succ[i]:
                indeg[j] -= 1
                if indeg[j] == 0:
                    heapq.heappush(heap, (groups[j].lo, j))
        if len(order) != len(groups):
            stuck = [groups[i] for i in range(len(groups)) if indeg[i] > 0]
            raise ExportError("internal: the lowered graph has a cycle through %s" % stuck[0].base_name)
        return order

    def _name(self, groups, loss_key):
        used = {}

        def unique(name):
            n = used.get(name, 0) + 1
            used[name] = n
            return name if n == 1 else "%s#%d" % (name, n)

        for i, g in enumerate(groups):
            g.id = i
            if g.path == "update":
                g.name = unique("update/" + g.base_name)
            else:
                g.name = unique((g.path + "/" if g.path else "") + g.base_name)
        for g in groups:
            outs = [t for t in g.outs if t.name is None]
            for k, t in enumerate(outs):
                t.name = g.name if len(outs) == 1 else "%s:%d" % (g.name, k)
        # tensors: persistent and inputs first (in placeholder order), then by producer
        live = [t for t in self.tensors if t.kind not in ("dropped", None)]
        for t in live:
            if t.name is None:
                t.name = "tensor%d" % t.order
        first = [t for t in live if t.producer is None]
        rest = sorted((t for t in live if t.producer is not None), key=lambda t: (t.producer.id, t.order))
        self.out_tensors = first + rest
        for i, t in enumerate(self.out_tensors):
            t.id = i

    def document(self, extra=None):
        tensors = []
        for t in self.out_tensors:
            d = {"id": t.id, "name": t.name, "kind": t.kind, "bytes": t.bytes}
            if t.shape is not None:
                d["shape"] = t.shape
            if t.dtype:
                d["dtype"] = t.dtype
            tensors.append(d)
        ops = []
        for g in self.groups:
            ins = [t.id for t in g.reads if t.kind != "dropped"]
            outs = [t.id for t in g.outs if t.kind != "dropped"] + [t.id for t in g.pwrites]
            d = {"id": g.id, "name": g.name, "type": g.type, "phase": g.phase,
                 "inputs": ins, "outputs": outs,
                 "flops": _num(g.flops), "bytes_accessed": _num(g.bytes),
                 "aten": g.aten}
            if not g.known:
                d["generic_cost"] = True
            ops.append(d)
        # a random op may have no input (dropout's mask from empty_like): a plan could
        # run two of them in either order and draw other numbers than the eager step
        rand = sorted((g for g in self.groups if any(a in RANDOM for a in g.aten)), key=lambda g: (g.lo, g.id))
        deps = [[a.id, b.id] for a, b in zip(rand, rand[1:])]
        doc = {"format": "dfg", "version": 1, "name": self.model_name, "batch": self.batch,
               "tensors": tensors, "ops": ops, "control_deps": deps}
        if extra:
            doc.update(extra)
        return doc


def pkt_split(base):
    return base.startswith("convolution_backward_")


def _num(x):
    x = float(x)
    return int(x) if x.is_integer() and abs(x) < 2 ** 53 else x


def lower(cap, model_name, batch, extra=None):
    _RELABEL["dtype"] = cap.dtype if cap.dtype in _HALF else None
    try:
        low = Lowering(cap, model_name, batch).run()
        return low, low.document(extra)
    finally:
        _RELABEL["dtype"] = None
