"""Where a model comes from: `torchvision:NAME` or `FILE.py:FUNC`.

Models are built on the meta device: every factory call made while building (the
parameters' torch.empty, the initialisers' in-place fills) creates a meta tensor,
which has a shape and a dtype and no memory. A model far larger than the machine is
built in milliseconds and nothing is downloaded (torchvision builders get
weights=None).

A model file's FUNC is called as FUNC(batch) (or FUNC() when it takes no argument)
under the same meta-device context and returns

    (module, inputs, loss_fn)            or   (module, inputs, loss_fn, targets)

- module: a torch.nn.Module (its forward is called as module(*inputs));
- inputs: a tensor, a shape (tuple of ints: float tensor of that shape), or a
  tuple/list of those, one per forward argument; only shapes and dtypes are used;
- loss_fn: called as loss_fn(output, *targets), returns the scalar loss;
- targets: like inputs (default none): labels and other loss-only tensors.
"""

import importlib.util
import inspect
import os
import re
import sys

from .errors import IOFailure, TraceError, UsageError

_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "f64": "float64",
           "i64": "int64", "i32": "int32", "i16": "int16", "i8": "int8", "u8": "uint8",
           "bool": "bool"}


def torch_dtype(name):
    import torch
    key = _DTYPES.get(name)
    if key is None:
        raise UsageError("unknown dtype %r (expected one of %s)" % (name, ", ".join(_DTYPES)))
    return getattr(torch, key)


# Factories whose contents are given by their arguments: a builder may read their
# values (torchvision's regnet computes its widths with arange and .tolist()).
_VALUE_FACTORIES = ("arange", "tensor", "as_tensor", "linspace", "logspace", "scalar_tensor")


class MetaDevice:
    """A TorchFunctionMode that sends factory calls without an explicit device to
    the meta device (torch 2.x has `with torch.device("meta")`; 1.13 does not).
    With values=True the factories of _VALUE_FACTORIES stay on the CPU (small
    tensors whose values the builder reads; see build_on_meta)."""

    def __init__(self, values=False):
        import torch
        from torch.overrides import TorchFunctionMode

        factories = set()
        for n in ("empty", "zeros", "ones", "full", "rand", "randn", "randint", "arange",
                  "tensor", "eye", "linspace", "logspace", "empty_strided", "as_tensor",
                  "zeros_like", "ones_like", "empty_like", "full_like", "rand_like",
                  "randn_like", "randint_like", "normal", "randperm", "scalar_tensor"):
            if values and n in _VALUE_FACTORIES:
                continue
            f = getattr(torch, n, None)
            if f is not None:
                factories.add(f)

        class _Mode(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                kwargs = dict(kwargs or {})
                if func in factories and kwargs.get("device") is None:
                    kwargs["device"] = "meta"
                return func(*args, **kwargs)

        self._mode = _Mode()

    def __enter__(self):
        self._mode.__enter__()
        return self

    def __exit__(self, *exc):
        return self._mode.__exit__(*exc)


def build_on_meta(build):
    """build() under MetaDevice. When that fails because the builder read a meta
    tensor's values ("Cannot copy out of meta tensor", .item() / .tolist() on one), it
    is called again with the value factories (arange, tensor, ...) on the CPU; their
    tensors are as small as the builder's arguments, and the parameters stay on meta.
    Any other failure, or one on the second call, propagates."""
    try:
        with MetaDevice():
            return build()
    except Exception as e:
        text = str(e).lower()
        if "meta" not in text:
            raise
    with MetaDevice(values=True):
        return build()


class InputSpec:
    """One model input or target: a shape and a dtype (no data)."""

    def __init__(self, shape, dtype, name):
        self.shape = [int(d) for d in shape]
        self.dtype = dtype
        self.name = name

    def __repr__(self):
        return "InputSpec(%s, %s, %s)" % (self.name, self.shape, self.dtype)


class ModelSpec:
    """What the tracer needs: the module, its inputs and targets (shapes), the loss."""

    def __init__(self, name, module, inputs, targets, loss_fn):
        self.name = name
        self.module = module
        self.inputs = inputs
        self.targets = targets
        self.loss_fn = loss_fn
        # built for real (swapplan-torch): the tensors FUNC returned, None where it gave
        # a shape; else empty
        self.input_values = []
        self.target_values = []


def parse_shape(text, batch):
    """--input SHAPE: dims joined by x (or commas); a dim written B or N is the batch,
    and without one the batch is put first; an optional :DTYPE suffix (default f32).
    Examples: 3x224x224, 128:i64, 128xBx512."""
    dtype = "f32"
    if ":" in text:
        text, dtype = text.rsplit(":", 1)
    parts = [p for p in re.split(r"[x,]", text.strip()) if p != ""]
    if not parts:
        raise UsageError("--input %r: empty shape" % text)
    dims, has_batch = [], False
    for p in parts:
        if p in ("B", "N", "b", "n"):
            dims.append(batch)
            has_batch = True
        else:
            try:
                d = int(p)
            except ValueError:
                raise UsageError("--input %r: %r is not a dimension (a positive integer, or B for the batch)"
                                 % (text, p))
            if d <= 0:
                raise UsageError("--input %r: dimension %d must be positive" % (text, d))
            dims.append(d)
    if not has_batch:
        dims = [batch] + dims
    torch_dtype(dtype)
    return dims, dtype


def _torchvision_names(tvm):
    names = []
    if hasattr(tvm, "list_models"):
        try:
            names = sorted(tvm.list_models())
        except TypeError:
            names = []
    return names


def _torchvision_builder(name):
    try:
        import torchvision.models as tvm
    except ImportError as e:
        raise UsageError("torchvision is not importable (%s): apt-get install python3-torchvision" % e)
    fn = None
    if hasattr(tvm, "get_model_builder"):
        try:
            fn = tvm.get_model_builder(name)
        except ValueError:
            fn = None
    if fn is None:
        cand = getattr(tvm, name, None)
        if callable(cand) and not inspect.isclass(cand) and name[:1].islower():
            fn = cand
    if fn is None:
        import difflib
        near = difflib.get_close_matches(name, _torchvision_names(tvm), n=4, cutoff=0.6)
        hint = (": did you mean %s?" % ", ".join(near)) if near else \
            " (torchvision.models.list_models() lists them)"
        raise UsageError("torchvision has no model %r%s" % (name, hint))
    return fn


def _family(fn):
    """classification, segmentation or video (what dfg-from-torch exports), or the
    torchvision subpackage of a model it does not (detection, optical_flow, quantization)."""
    mod = getattr(fn, "__module__", "") or ""
    parts = mod.split(".")
    if len(parts) > 3 and parts[:2] == ["torchvision", "models"] and parts[2] in (
            "segmentation", "video", "detection", "optical_flow", "quantization"):
        return parts[2]
    return "classification"


class _NoDownload:
    """Makes every weight download torchvision could start fail at once: a builder is
    called with weights=None (and weights_backbone=None), and nothing may reach the
    network or create ~/.cache/torch/hub."""

    def __init__(self, name):
        self.name = name
        self.saved = []

    def __enter__(self):
        import torch.hub

        def refuse(*a, **k):
            raise TraceError("torchvision:%s: building the model would download weights; "
                             "dfg-from-torch builds models without weights" % self.name)

        targets = [(torch.hub, "load_state_dict_from_url"), (torch.hub, "download_url_to_file")]
        try:
            import torchvision.models._api as api
            targets.append((api, "load_state_dict_from_url"))
        except ImportError:
            pass
        for mod, attr in targets:
            if hasattr(mod, attr):
                self.saved.append((mod, attr, getattr(mod, attr)))
                setattr(mod, attr, refuse)
        return self

    def __exit__(self, *exc):
        for mod, attr, f in self.saved:
            setattr(mod, attr, f)
        return False


# Auxiliary classifier heads and their weights in torchvision's reference training
# (references/classification/train.py): inception_v3 0.4, googlenet 0.3 each.
_AUX_WEIGHTS = {"inception_v3": [1.0, 0.4], "googlenet": [1.0, 0.3, 0.3]}
# Image side each model expects by default.
_IMAGE_SIDE = {"inception_v3": 299}


def _torchvision_spec(name, batch, input_shapes, real=False):
    import torch
    import torch.nn.functional as F

    builder = _torchvision_builder(name)
    family = _family(builder)
    if family not in ("classification", "segmentation", "video"):
        why = {"detection": "its targets are boxes and labels per image, not a tensor",
               "optical_flow": "it predicts flow between two frames, with no label loss",
               "quantization": "quantized models run inference only"}[family]
        raise UsageError("torchvision:%s is a model of torchvision.models.%s, which dfg-from-torch does not export (%s): "
                         "write a FILE.py:FUNC that returns the model, its inputs and a loss (docs/torch.md)"
                         % (name, family, why))
    kwargs = {"weights": None}
    try:
        params = inspect.signature(builder).parameters
    except (TypeError, ValueError):
        params = {}
    if "weights_backbone" in params:
        kwargs["weights_backbone"] = None
    if name in ("inception_v3", "googlenet"):
        kwargs["init_weights"] = True
    def build():
        with _NoDownload(name):
            try:
                return builder(**kwargs)
            except TypeError:
                kwargs.pop("init_weights", None)
                try:
                    return builder(**kwargs)
                except TypeError:
                    return builder(pretrained=False)

    try:
        module = build() if real else build_on_meta(build)
    except TraceError:
        raise
    except Exception as e:  # a builder that cannot run on meta
        raise TraceError("torchvision:%s: building the model failed: %s: %s"
                         % (name, type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
    if input_shapes:
        inputs = [InputSpec(s, torch_dtype(d), "input" if i == 0 else "input.%d" % i)
                  for i, (s, d) in enumerate(input_shapes)]
    elif family == "video":
        side = 224 if name.startswith(("mvit", "s3d", "swin3d")) else 112
        inputs = [InputSpec([batch, 3, 16, side, side], torch.float32, "input")]
    else:
        side = _IMAGE_SIDE.get(name, 224)
        inputs = [InputSpec([batch, 3, side, side], torch.float32, "input")]
    if family == "segmentation":
        # a class per pixel; torchvision's reference training weighs the aux head 0.5
        targets = [InputSpec([inputs[0].shape[0]] + list(inputs[0].shape[2:]), torch.int64, "target")]
        weights = [1.0, 0.5]
    else:
        targets = [InputSpec([inputs[0].shape[0]], torch.int64, "target")]
        weights = _AUX_WEIGHTS.get(name)

    def loss_fn(out, target):
        outs = _tensor_outputs(out)
        if not outs:
            raise TraceError("torchvision:%s: the forward returned no tensor to put a loss on" % name)
        if weights is None or len(outs) == 1:
            return F.cross_entropy(outs[0], target)
        loss = F.cross_entropy(outs[0], target)
        for w, o in zip(weights[1:], outs[1:]):
            loss = loss + w * F.cross_entropy(o, target)
        return loss

    return ModelSpec("torchvision:" + name, module, inputs, targets, loss_fn)


def _tensor_outputs(out):
    import torch
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (list, tuple)):
        res = []
        for o in out:
            if isinstance(o, torch.Tensor):
                res.append(o)
        return res
    return []


def _as_specs(obj, what, batch, default_name):
    import torch
    if obj is None:
        return []
    if isinstance(obj, torch.Tensor) or _is_shape(obj):
        obj = [obj]
    if not isinstance(obj, (list, tuple)):
        raise TraceError("%s must be a tensor, a shape or a list of them, not %s" % (what, type(obj).__name__))
    specs = []
    for i, x in enumerate(obj):
        name = default_name if i == 0 else "%s.%d" % (default_name, i)
        if isinstance(x, torch.Tensor):
            specs.append(InputSpec(list(x.shape), x.dtype, name))
        elif _is_shape(x):
            if any(d < 0 for d in x):
                raise TraceError("%s[%d] (%s): the shape %s has a negative dimension" % (what, i, name, list(x)))
            specs.append(InputSpec(list(x), torch.float32, name))
        else:
            raise TraceError("%s[%d] must be a tensor or a shape, not %s" % (what, i, type(x).__name__))
    return specs


def _exit_text(e):
    return "sys.exit(%r)" % (e.code,)


def _is_shape(x):
    import torch
    return isinstance(x, (tuple, list, torch.Size)) and len(x) > 0 and all(isinstance(d, int) for d in x)


class _NoMode:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _file_spec(path, func, batch, input_shapes, real=False):
    import torch
    if not os.path.isfile(path):
        raise IOFailure("%s: cannot read the model file: %s" % (
            path, "no such file" if not os.path.exists(path) else "not a regular file"))
    modname = "dfg_user_model_" + re.sub(r"\W", "_", os.path.basename(path)[:-3])
    try:
        spec = importlib.util.spec_from_file_location(modname, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[modname] = mod
        with (_NoMode() if real else MetaDevice()):
            spec.loader.exec_module(mod)
    except SystemExit as e:
        raise TraceError("%s: the model file exited while it was imported (%s): a model file must "
                         "not call sys.exit" % (path, _exit_text(e)))
    except OSError as e:
        raise IOFailure("%s: cannot read the model file: %s" % (path, e.strerror or e))
    except Exception as e:
        raise TraceError("%s: importing the model file failed: %s" % (path, _one_line(e)))
    fn = getattr(mod, func, None)
    if not callable(fn):
        raise UsageError("%s has no function %r" % (path, func))
    try:
        takes_arg = _takes_batch(fn)
        call = (lambda: fn(batch)) if takes_arg else fn
        res = call() if real else build_on_meta(call)
    except SystemExit as e:
        raise TraceError("%s:%s exited (%s) instead of returning the model: a model function must "
                         "not call sys.exit" % (path, func, _exit_text(e)))
    except Exception as e:
        raise TraceError("%s:%s: building the model failed: %s" % (path, func, _one_line(e)))
    if not isinstance(res, (tuple, list)) or len(res) not in (3, 4):
        raise TraceError("%s:%s must return (module, inputs, loss_fn[, targets]), got %s"
                         % (path, func, type(res).__name__))
    module, inputs, loss_fn = res[0], res[1], res[2]
    targets = res[3] if len(res) == 4 else None
    if not isinstance(module, torch.nn.Module):
        raise TraceError("%s:%s: the first value returned must be a torch.nn.Module, not %s"
                         % (path, func, type(module).__name__))
    if not callable(loss_fn):
        raise TraceError("%s:%s: the third value returned must be the loss function" % (path, func))
    in_specs = _as_specs(inputs, "%s:%s inputs" % (path, func), batch, "input")
    tg_specs = _as_specs(targets, "%s:%s targets" % (path, func), batch, "target")
    if input_shapes:
        if len(input_shapes) != len(in_specs):
            raise UsageError("%d --input given but %s:%s has %d input(s)"
                             % (len(input_shapes), path, func, len(in_specs)))
        in_specs = [InputSpec(s, torch_dtype(d), sp.name) for (s, d), sp in zip(input_shapes, in_specs)]
    name = os.path.splitext(os.path.basename(path))[0] + ":" + func
    ms = ModelSpec(name, module, in_specs, tg_specs, loss_fn)
    if real:
        ms.input_values = _values(inputs)
        ms.target_values = _values(targets)
    return ms


def _values(obj):
    """The tensors among a model file's inputs or targets (None for a shape)."""
    import torch
    if obj is None:
        return []
    if isinstance(obj, torch.Tensor) or _is_shape(obj):
        obj = [obj]
    return [x if isinstance(x, torch.Tensor) and x.device.type != "meta" else None for x in obj]


def _takes_batch(fn):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return True
    params = [p for p in sig.parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
    return len(params) > 0


def _one_line(e):
    msg = str(e).strip().splitlines()
    return "%s: %s" % (type(e).__name__, msg[0] if msg else "")


def load(model, batch, input_texts, real=False):
    """ModelSpec for MODEL (torchvision:NAME or FILE.py:FUNC), built on the meta device,
    or with real=True as an ordinary module with initialised parameters."""
    shapes = [parse_shape(t, batch) for t in (input_texts or [])]
    if model.startswith("torchvision:"):
        name = model[len("torchvision:"):]
        if not name:
            raise UsageError("torchvision: needs a model name (e.g. torchvision:resnet50)")
        return _torchvision_spec(name, batch, shapes, real)
    m = re.match(r"^(.*\.py):([A-Za-z_][A-Za-z0-9_]*)$", model)
    if not m:
        raise UsageError("MODEL %r must be torchvision:NAME or FILE.py:FUNC" % model)
    return _file_spec(m.group(1), m.group(2), batch, shapes, real)
