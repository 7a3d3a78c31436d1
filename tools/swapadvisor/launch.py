"""Which Python runs the torch tools (dfg-from-torch, swapplan-torch).

The first python3 on PATH that can import torch. Debian's python3-torch is importable
only from /usr/bin/python3, and another python3 (pyenv, a venv without torch) often
comes first on PATH, so when `torch` is not importable here the tool re-executes itself
with $DFG_PYTHON if set, else /usr/bin/python3. A venv with torch 2.x on PATH is used as
it is. Without torch anywhere the tool says how to install it and exits 2. This module
imports nothing of torch, so --help works without it.
"""

import importlib.util
import os
import sys


def has_torch():
    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        return False


def reexec(script):
    """Runs script under an interpreter that has torch, if there is one (returns only
    when there is none, or when this process is already such a re-execution)."""
    if os.environ.get("DFG_FROM_TORCH_REEXEC"):
        return
    cands = []
    if os.environ.get("DFG_PYTHON"):
        cands.append(os.environ["DFG_PYTHON"])
    cands.append("/usr/bin/python3")
    # a venv's python is a link to its base interpreter but imports the venv's packages:
    # compare the paths as given, not resolved
    me = os.path.abspath(sys.executable or "")
    for py in cands:
        if os.path.isfile(py) and os.access(py, os.X_OK) and os.path.abspath(py) != me:
            env = dict(os.environ, DFG_FROM_TORCH_REEXEC="1")
            os.execve(py, [py, os.path.realpath(script)] + sys.argv[1:], env)


def run(tool, script, cli_main):
    """main() of a torch tool: finds torch (see above), then calls cli_main(argv). A
    signal while torch loads ends it as one during the run does (errors.guarded)."""
    import signal
    from .errors import Signalled, catch_signals, signal_text
    catch_signals()
    try:
        return _run(tool, script, cli_main)
    except (KeyboardInterrupt, Signalled) as e:
        sig = e.sig if isinstance(e, Signalled) else signal.SIGINT
        sys.stderr.write("%s: %s\n" % (tool, signal_text(sig)))
        return 128 + sig


def _run(tool, script, cli_main):
    argv = sys.argv[1:]
    wants_help = any(a in ("-h", "--help") for a in argv)
    if not wants_help and not has_torch():
        reexec(script)
        sys.stderr.write(
            "%s: PyTorch is not installed for %s (nor for /usr/bin/python3): install it "
            "with `apt-get install python3-torch python3-torchvision` (Debian), or run with "
            "DFG_PYTHON=/path/to/python3 that has torch\n" % (tool, sys.executable or "python3"))
        return 2
    return cli_main()(argv)
