"""dfg-from-torch's command line: options, output, exit codes."""

import json
import os
import sys
import time

from .errors import EXIT_USAGE, IOFailure, UsageError, guarded
from .outfile import input_named, model_file, write_stdout

TOOL = "dfg-from-torch"

USAGE = """\
usage: dfg-from-torch MODEL [--batch N] [--input SHAPE ...] [--optimizer sgd|momentum|adam]
                      [--dtype f32|f16|bf16] [--stats] [--measure] [-q] [-o OUT]

Exports one training iteration of a PyTorch model (forward, loss, backward, optimizer
step) as a dfg v1 graph (docs/formats.md), traced on fake tensors: no memory is
allocated for the model and no weights are downloaded.

MODEL
  torchvision:NAME        a torchvision classification model (weights=None), e.g.
                          torchvision:resnet50; input Bx3x224x224 (inception_v3: 299),
                          int64 labels, cross-entropy (plus 0.4 x the auxiliary head's
                          for inception_v3, 0.3 x each for googlenet)
  FILE.py:FUNC            FUNC(batch) returns (module, inputs, loss_fn[, targets]);
                          see docs/torch.md

options
  --batch N               batch size (default 64)
  --input SHAPE           a model input's shape, repeated once per input: dims joined by
                          x, B for the batch (else the batch goes first), optional :DTYPE
                          (f32 default, i64, ...): 3x224x224, 128:i64, 128xBx512
  --optimizer O           sgd (default), momentum (one state tensor per parameter),
                          adam (two); one in-place update op per parameter
  --dtype D               f32 (default), f16, bf16: parameters, state, activations
                          (no fp32 master copy); labels and token ids keep theirs
  --stats                 print the graph's figures (ops, tensors, bytes by kind, peak)
                          instead of the graph
  --measure               time every op on the GPU (CUDA) and write time_us; exit 7
                          without CUDA
  -q, --quiet             no notes on stderr (ops given a generic cost are still listed)
  -o, --output OUT        output file (default -, stdout); written to a temporary file
                          and renamed into place
  -h, --help              this help

exit status: 0 ok, 1 internal error, 2 usage (or torch missing), 3 the model cannot be
traced or exported (the message names the op and the reason), 4 I/O error,
7 --measure without a CUDA device.
SIGINT, SIGTERM and SIGHUP end it with one line on stderr, no partial output, and
exit status 130, 143 and 129.
"""


def _die_usage(msg):
    raise UsageError(msg)


def parse_args(argv):
    opts = {"model": None, "batch": 64, "inputs": [], "optimizer": "sgd", "dtype": "f32",
            "output": "-", "stats": False, "measure": False, "quiet": False}
    i = 0

    def value(opt):
        nonlocal i
        if "=" in argv[i] and argv[i].startswith("--"):
            return argv[i].split("=", 1)[1]
        if i + 1 >= len(argv):
            _die_usage("option %s needs a value" % opt)
        i += 1
        return argv[i]

    while i < len(argv):
        a = argv[i]
        key = a.split("=", 1)[0] if a.startswith("--") else a
        if key in ("-h", "--help"):
            opts["help"] = True
        elif key == "--batch":
            v = value(key)
            try:
                opts["batch"] = int(v)
            except ValueError:
                _die_usage("--batch %r is not a positive integer" % v)
            if opts["batch"] <= 0:
                _die_usage("--batch %r is not a positive integer" % v)
        elif key == "--input":
            opts["inputs"].append(value(key))
        elif key == "--optimizer":
            v = value(key)
            if v not in ("sgd", "momentum", "adam"):
                _die_usage("--optimizer %r: expected sgd, momentum or adam" % v)
            opts["optimizer"] = v
        elif key == "--dtype":
            v = value(key)
            if v not in ("f32", "f16", "bf16"):
                _die_usage("--dtype %r: expected f32, f16 or bf16" % v)
            opts["dtype"] = v
        elif key in ("-o", "--output"):
            opts["output"] = value(key)
        elif key == "--stats":
            opts["stats"] = True
        elif key == "--measure":
            opts["measure"] = True
        elif key in ("-q", "--quiet"):
            opts["quiet"] = True
        elif a == "-" or not a.startswith("-"):
            if opts["model"] is not None:
                _die_usage("one MODEL expected, got %r and %r" % (opts["model"], a))
            opts["model"] = a
        else:
            _die_usage("unknown option %r" % a)
        i += 1
    if not opts.get("help") and opts["model"] is None:
        _die_usage("MODEL missing")
    return opts


def write_atomic(path, text):
    """Writes text to path (outfile.write_output: replaced atomically, or in place for
    a device or a FIFO); "-" is stdout."""
    from .outfile import write_output, write_stdout
    if path == "-":
        return write_stdout(text)
    data = text.encode("utf-8")
    write_output(path, lambda f: f.write(data))


def dumps(doc):
    """One tensor / op per line: readable, diffable, and small."""
    head = {k: v for k, v in doc.items() if k not in ("tensors", "ops", "control_deps")}
    parts = ["{"]
    items = list(head.items())
    for k, v in items:
        parts.append("  %s: %s," % (json.dumps(k), json.dumps(v)))
    for key in ("tensors", "ops"):
        parts.append('  "%s": [' % key)
        rows = doc[key]
        for j, r in enumerate(rows):
            parts.append("    " + json.dumps(r, separators=(", ", ": ")) + ("," if j + 1 < len(rows) else ""))
        parts.append("  ],")
    parts.append('  "control_deps": %s' % json.dumps(doc.get("control_deps", [])))
    parts.append("}")
    return "\n".join(parts) + "\n"


def run(opts, note):
    from . import graphstats, lower, models, trace

    t0 = time.time()
    spec = models.load(opts["model"], opts["batch"], opts["inputs"])
    if opts["measure"]:
        from . import measure
        measure.check_cuda()
    cap = trace.capture(spec, opts["optimizer"], opts["dtype"])
    t1 = time.time()
    import torch
    extra = {"source": {"tool": TOOL, "model": opts["model"], "torch": torch.__version__,
                        "optimizer": opts["optimizer"], "dtype": opts["dtype"],
                        "inputs": [s.shape for s in spec.inputs]}}
    low, doc = lower.lower(cap, spec.name, opts["batch"], extra)
    t2 = time.time()
    if low.generic:
        items = ", ".join("%s x%d" % (k, v) for k, v in sorted(low.generic.items()))
        sys.stderr.write("%s: %d op(s) have no cost formula and get a generic cost (bytes moved, no FLOPs): %s\n"
                         % (TOOL, sum(low.generic.values()), items))
    if cap.params_no_grad:
        note("%d trainable parameter(s) get no gradient and no update: %s"
             % (len(cap.params_no_grad), ", ".join(cap.params_no_grad[:5]) + (" ..." if len(cap.params_no_grad) > 5 else "")))
    if opts["measure"]:
        from . import measure
        measure.measure(cap, low, doc, note)
    note("%s: %d ops, %d tensors, peak %.3f GB (traced in %.1f s, lowered in %.1f s; %d views, "
         "%d in-place ops folded, %d new versions)"
         % (spec.name, len(doc["ops"]), len(doc["tensors"]), graphstats.peak_bytes(doc) / 1e9,
            t1 - t0, t2 - t1, low.n_views, low.n_fused, low.n_versions))
    if opts["stats"]:
        text = "".join("%s %s\n" % (k, v) for k, v in graphstats.stats(doc))
    else:
        text = dumps(doc)
    write_atomic(opts["output"], text)


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
    clash = input_named(opts["output"], [model_file(opts["model"])])
    if clash:
        err("-o %s is the input %s: it would be overwritten (try --help)" % (opts["output"], clash))
        return EXIT_USAGE
    if opts["output"] != "-":
        d = os.path.dirname(os.path.abspath(opts["output"]))
        if not os.path.isdir(d):
            err("cannot write %s: no such directory %s" % (opts["output"], d))
            return IOFailure.code
    quiet = opts["quiet"] or not sys.stderr.isatty()
    note = (lambda m: None) if quiet else (lambda m: err(m))
    if os.environ.get("DFG_FROM_TORCH_VERBOSE"):
        note = err
    return guarded(err, lambda: run(opts, note), opts.get("model"))
