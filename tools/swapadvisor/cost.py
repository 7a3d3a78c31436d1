"""FLOPs and op types of aten ops, from shapes alone.

Each aten op of the captured step gets an op `type` (the names the device profiles
know: conv2d, matmul, batchnorm, relu, pool, softmax, ... see docs/profiles.md) and a
FLOP count, following the zoo's conventions (docs/zoo.md, "Conventions"): 2 x MACs
for convolutions and matrix products, a fixed count per element for the rest.
`bytes_accessed` is worked out by the caller from the storages an op reads and
writes (lower.py), except where an entry here says otherwise (embedding gathers).

An op with no entry gets a generic cost: no FLOPs, the bytes it moves, type
"other"; lower.py lists every such op on stderr.
"""


# FLOPs per output element for element-wise ops (1 unless listed).
_ELEMENTWISE_FLOPS = {
    "sigmoid": 4, "tanh": 4, "exp": 4, "log": 4, "log1p": 4, "expm1": 4, "erf": 4,
    "sin": 4, "cos": 4, "pow": 4, "sqrt": 2, "rsqrt": 2, "reciprocal": 1,
    "silu": 5, "mish": 8, "softplus": 5, "gelu": 14, "elu": 4, "selu": 4, "celu": 4,
    "hardswish": 4, "hardsigmoid": 3, "leaky_relu": 2, "hardtanh": 2, "relu6": 2,
    "addcmul": 2, "addcdiv": 2, "lerp": 3, "where": 1, "clamp": 2, "clamp_min": 1,
    "clamp_max": 1, "native_dropout": 2, "bernoulli": 2, "dropout": 2,
    "sigmoid_backward": 3, "tanh_backward": 3, "silu_backward": 6, "gelu_backward": 20,
    "elu_backward": 3, "hardswish_backward": 4, "hardsigmoid_backward": 3,
    "leaky_relu_backward": 2, "hardtanh_backward": 2, "threshold_backward": 1,
    "native_dropout_backward": 2, "softplus_backward": 5, "mish_backward": 10,
}

_ELEMENTWISE = set(_ELEMENTWISE_FLOPS) | {
    "add", "sub", "rsub", "mul", "div", "neg", "abs", "sign", "relu", "threshold",
    "maximum", "minimum", "max.other", "min.other", "fmod", "remainder", "floor",
    "ceil", "round", "trunc", "square", "masked_fill", "eq", "ne", "lt", "le", "gt",
    "ge", "logical_not", "logical_and", "logical_or", "bitwise_not", "bitwise_and",
    "bitwise_or", "bitwise_xor", "isnan", "nan_to_num", "exponential", "uniform",
    "normal", "copy", "clone", "_to_copy", "to", "contiguous", "_unsafe_view_copy",
    "lift_fresh_copy", "masked_scatter", "zero", "fill", "sgn", "frac", "atan",
    "asin", "acos", "sinh", "cosh", "asinh", "acosh", "atanh", "tan", "erfc",
    "erfinv", "log2", "log10", "exp2", "xlogy", "hypot", "atan2", "logit",
    "logit_backward", "_masked_scale", "heaviside", "fmax", "fmin", "copysign",
    "float_power", "true_divide", "floor_divide", "_foreach_add", "_foreach_mul",
}

# Types the profiles know, for element-wise ops (everything else element-wise is
# "elementwise").
_ELEMENTWISE_TYPE = {
    "relu": "relu", "threshold": "relu", "hardtanh": "relu", "relu6": "relu",
    "leaky_relu": "relu", "threshold_backward": "relu_bwd", "hardtanh_backward": "relu_bwd",
    "leaky_relu_backward": "relu_bwd", "gelu": "gelu", "gelu_backward": "gelu_bwd",
    "add": "add", "sub": "add", "rsub": "add", "native_dropout": "mask",
    "native_dropout_backward": "mask", "masked_fill": "mask", "where": "mask",
}

# Factories: write their output, read nothing (bytes = the output's).
_FILL = {"ones_like", "zeros_like", "full_like", "ones", "zeros", "full", "scalar_tensor",
         "new_ones", "new_zeros", "new_full", "arange", "linspace", "eye", "rand",
         "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm",
         "empty_like_fill", "tensor"}
# Allocations: no data written at all.
_ALLOC = {"empty", "empty_like", "new_empty", "empty_strided", "new_empty_strided",
          "empty_permuted"}
# Ops that read only the metadata (shape, dtype, device) of their tensor arguments.
META_ONLY_READS = _FILL | _ALLOC

_REDUCE = {"sum", "mean", "amax", "amin", "max", "min", "prod", "norm",
           "linalg_vector_norm", "var", "std", "var_mean", "std_mean", "logsumexp",
           "any", "all", "argmax", "argmin", "count_nonzero", "cumsum", "cumprod"}

_POOL = {"max_pool2d_with_indices", "max_pool3d_with_indices", "max_pool1d",
         "max_pool2d", "avg_pool2d", "avg_pool3d", "avg_pool1d", "adaptive_avg_pool2d",
         "_adaptive_avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool3d",
         "_adaptive_avg_pool3d", "adaptive_max_pool2d", "adaptive_max_pool3d",
         "upsample_nearest2d", "upsample_bilinear2d", "_upsample_bilinear2d_aa",
         "_upsample_nearest_exact2d"}
_POOL_BWD = {p + "_backward" for p in _POOL}


def numel(t):
    n = 1
    for d in t.shape:
        n *= int(d)
    return n


def is_tensor(x):
    import torch
    return isinstance(x, torch.Tensor)


def _prod(xs):
    p = 1
    for x in xs:
        p *= int(x)
    return p


def _tensors(xs):
    out = []
    for x in xs:
        if is_tensor(x):
            out.append(x)
        elif isinstance(x, (list, tuple)):
            out.extend(_tensors(x))
    return out


def conv_macs(inp, weight, out, transposed):
    """Multiply-accumulates of a convolution: per output element, Cin/groups x kernel
    (transposed: per input element, Cout/groups x kernel)."""
    k = _prod(weight.shape[2:])
    if transposed:
        return numel(inp) * int(weight.shape[1]) * k
    return numel(out) * int(weight.shape[1]) * k


def conv_type(inp, suffix=""):
    d = inp.dim() - 2
    base = "conv2d" if d == 2 else "conv%dd" % d if d in (1, 3) else "conv"
    return base + suffix


def _matmul_flops(name, args, out):
    """2 x M x N x K (x batch) from the operands; addmm/baddbmm add one per output."""
    if name in ("mm", "addmm", "_addmm_activation"):
        a, b = (args[1], args[2]) if name != "mm" else (args[0], args[1])
        f = 2 * int(a.shape[0]) * int(a.shape[1]) * int(b.shape[1])
        return f + (numel(out) if name != "mm" else 0)
    if name in ("bmm", "baddbmm"):
        a, b = (args[0], args[1]) if name == "bmm" else (args[1], args[2])
        f = 2 * int(a.shape[0]) * int(a.shape[1]) * int(a.shape[2]) * int(b.shape[2])
        return f + (numel(out) if name == "baddbmm" else 0)
    if name in ("mv", "addmv"):
        a = args[0] if name == "mv" else args[1]
        return 2 * numel(a)
    if name == "dot" or name == "vdot":
        return 2 * numel(args[0])
    if name in ("addbmm",):
        a, b = args[1], args[2]
        return 2 * int(a.shape[0]) * int(a.shape[1]) * int(a.shape[2]) * int(b.shape[2])
    if name == "addr":
        return 2 * numel(out)
    return None


_MATMUL = {"mm", "addmm", "_addmm_activation", "mv", "addmv", "dot", "vdot", "addr"}
_BMM = {"bmm", "baddbmm", "addbmm"}


def _sdpa_flops(args):
    q, k, v = args[0], args[1], args[2]
    lq, e = int(q.shape[-2]), int(q.shape[-1])
    lk, ev = int(k.shape[-2]), int(v.shape[-1])
    b = _prod(q.shape[:-2])
    return 2 * b * lq * lk * (e + ev)


class Cost:
    """type, flops, and (optionally) bytes_accessed overriding the storage count."""

    __slots__ = ("type", "flops", "bytes", "known")

    def __init__(self, type_, flops, known=True, bytes_=None):
        self.type = type_
        self.flops = float(flops)
        self.known = known
        self.bytes = bytes_


def op_cost(name, args, kwargs, outs, phase, vb=None):
    """Cost of aten op `name` (overload packet name, e.g. "convolution").

    args, kwargs: the op's arguments with tensors as (fake) tensor values;
    outs: the tensors it returns (fresh or written in place); phase: forward,
    backward or update."""
    out0 = outs[0] if outs else None
    n_out = sum(numel(t) for t in outs)
    ins = _tensors(list(args) + list(kwargs.values()))
    base = name[:-1] if name.endswith("_") and not name.endswith("__") else name

    if name in ("convolution", "_convolution", "cudnn_convolution", "mkldnn_convolution",
                "convolution_overrideable", "_slow_conv2d_forward", "thnn_conv2d"):
        inp, w = args[0], args[1]
        transposed = bool(args[6]) if len(args) > 6 and isinstance(args[6], bool) else False
        f = 2 * conv_macs(inp, w, out0, transposed)
        if len(args) > 2 and is_tensor(args[2]):
            f += numel(out0)
        return Cost(conv_type(inp), f)
    if name in _MATMUL:
        f = _matmul_flops(name, args, out0)
        t = "matmul" if phase != "backward" else "matmul_bwd_data"
        return Cost(t, f)
    if name in _BMM:
        f = _matmul_flops(name, args, out0)
        return Cost("batched_matmul" if phase != "backward" else "batched_matmul_bwd", f)
    if "scaled_dot_product" in name:
        f = _sdpa_flops(args)
        if name.endswith("_backward"):
            return Cost("batched_matmul_bwd", 2.5 * f)
        return Cost("batched_matmul", f)
    if name in ("native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_functional",
                "_native_batch_norm_legit_no_training", "cudnn_batch_norm", "miopen_batch_norm",
                "_batch_norm_with_update", "_batch_norm_no_update", "batch_norm",
                "native_group_norm", "instance_norm"):
        return Cost("batchnorm", 8 * numel(args[0]))
    if name in ("native_batch_norm_backward", "cudnn_batch_norm_backward",
                "miopen_batch_norm_backward", "batch_norm_backward",
                "native_group_norm_backward"):
        return Cost("batchnorm_bwd", 12 * numel(args[0]))
    if name in ("native_layer_norm", "_fused_rms_norm", "rms_norm"):
        return Cost("layernorm", 8 * numel(args[0]))
    if name in ("native_layer_norm_backward", "_fused_rms_norm_backward"):
        return Cost("layernorm_bwd", 12 * numel(args[0]))
    if name in ("_softmax", "_log_softmax", "softmax", "log_softmax", "_safe_softmax"):
        return Cost("softmax", 5 * numel(args[0]))
    if name in ("_softmax_backward_data", "_log_softmax_backward_data"):
        return Cost("softmax_bwd", 4 * numel(args[0]))
    if name in ("nll_loss_forward", "nll_loss2d_forward"):
        return Cost("softmax_xent", numel(args[1]) + 1)
    if name in ("nll_loss_backward", "nll_loss2d_backward"):
        return Cost("softmax_xent_bwd", numel(out0))
    if name in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
                "binary_cross_entropy", "binary_cross_entropy_with_logits", "soft_margin_loss"):
        return Cost("elementwise", 3 * numel(args[0]))
    if name in ("mse_loss_backward", "l1_loss_backward", "smooth_l1_loss_backward",
                "huber_loss_backward", "binary_cross_entropy_backward",
                "binary_cross_entropy_with_logits_backward", "soft_margin_loss_backward"):
        return Cost("elementwise", 3 * numel(out0))
    if name in ("embedding",):
        idx = args[1]
        # A gather touches only the rows it reads (and writes them out).
        return Cost("embedding", 0, bytes_=2 * vb(out0) + vb(idx))
    if name in ("embedding_dense_backward", "embedding_backward", "_embedding_bag_backward",
                "embedding_sparse_backward"):
        return Cost("embedding_bwd", numel(args[0]))
    if name in _POOL:
        if name.startswith("max_pool") or name.startswith("avg_pool"):
            k = args[1] if len(args) > 1 else [1]
            k = [k] if isinstance(k, int) else list(k)
            kk = _prod(k) if len(k) > 1 else int(k[0]) ** max(1, out0.dim() - 2)
            return Cost("pool", numel(out0) * kk)
        return Cost("pool", max(numel(args[0]), n_out))
    if name in _POOL_BWD:
        return Cost("pool_bwd", max(numel(args[0]), n_out))
    if name in ("cat", "_cat", "stack", "concat"):
        return Cost("concat", 0)
    if name in ("split_with_sizes_copy", "split_copy", "unbind_copy", "chunk_copy"):
        return Cost("split", 0)
    if name in ("_foreach_add", "_foreach_mul", "_foreach_addcmul", "_foreach_addcdiv",
                "_foreach_sqrt", "_foreach_div", "_foreach_lerp", "_foreach_sub"):
        return Cost("elementwise", n_out)
    if base in _REDUCE or name in _REDUCE:
        return Cost("reduce", max(numel(args[0]) if ins else 0, n_out))
    if base in META_ONLY_READS or name in META_ONLY_READS:
        if base in _ALLOC:
            return Cost("alloc", 0, bytes_=0)
        return Cost("fill", 0, bytes_=sum(vb(t) for t in outs))
    if base in _ELEMENTWISE or name in _ELEMENTWISE:
        per = _ELEMENTWISE_FLOPS.get(base, _ELEMENTWISE_FLOPS.get(name, 1))
        if base in ("copy", "clone", "_to_copy", "to", "contiguous", "lift_fresh_copy",
                    "zero", "fill", "uniform", "normal", "exponential"):
            per = 0
        t = _ELEMENTWISE_TYPE.get(base, _ELEMENTWISE_TYPE.get(name, "elementwise"))
        return Cost(t, per * n_out)
    if base in ("index_select", "gather", "index", "take", "_index_put_impl",
                "index_put", "scatter", "scatter_add", "index_add", "index_copy",
                "masked_select", "_unsafe_index", "_unsafe_index_put", "constant_pad_nd",
                "reflection_pad2d", "replication_pad2d", "flip", "roll", "repeat",
                "_unsafe_view", "tril", "triu", "im2col", "col2im", "sort", "topk",
                "gather_backward", "index_select_backward", "select_backward",
                "slice_backward", "as_strided_scatter", "slice_scatter", "select_scatter",
                "diagonal_scatter", "_index_put_impl_", "embedding_renorm",
                "new_empty_strided", "_reshape_copy", "expand_copy", "permute_copy",
                "transpose_copy", "t_copy", "view_copy", "unsqueeze_copy", "squeeze_copy"):
        return Cost("elementwise", 0)
    return Cost("other", 0, known=False)
