"""Exit codes (README's table) and the exceptions that carry them."""

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_INPUT = 3      # untraceable model, bad model file, bad input naming
EXIT_IO = 4
EXIT_GPU = 7


class ExportError(Exception):
    """An error with an exit code and a one-line message."""

    code = EXIT_INTERNAL

    def __init__(self, message, code=None):
        super().__init__(message)
        if code is not None:
            self.code = code


class UsageError(ExportError):
    code = EXIT_USAGE


class TraceError(ExportError):
    """The model cannot be captured: names the op (or the source line) and the reason."""

    code = EXIT_INPUT


class IOFailure(ExportError):
    code = EXIT_IO


class NoCuda(ExportError):
    code = EXIT_GPU


class Signalled(BaseException):
    """SIGTERM or SIGHUP arrived: unwinds like KeyboardInterrupt, so temporary output
    files are removed, then the tool exits 128 + the signal's number."""

    def __init__(self, sig):
        BaseException.__init__(self, sig)
        self.sig = sig


def signal_text(sig):
    """The line a tool prints when a signal ends it."""
    import signal
    return {signal.SIGINT: "interrupted (SIGINT)", signal.SIGTERM: "terminated (SIGTERM)",
            signal.SIGHUP: "hangup (SIGHUP)"}.get(sig, "ended by signal %d" % sig)


def _on_signal(sig, frame):
    raise Signalled(sig)


def catch_signals():
    import signal
    for s in (signal.SIGTERM, signal.SIGHUP):
        try:
            if signal.getsignal(s) is not signal.SIG_IGN:  # nohup's SIGHUP stays ignored
                signal.signal(s, _on_signal)
        except (ValueError, OSError):
            pass


def guarded(err, fn, model=None):
    """Calls fn() and returns the exit status: 0, or the code of what it raised, with one
    line through err (the traceback of an internal error only with DFG_FROM_TORCH_DEBUG)."""
    import os
    import signal
    catch_signals()
    try:
        fn()
    except UsageError as e:
        err("%s (try --help)" % e)
        return e.code
    except ExportError as e:
        err(str(e))
        return e.code
    except KeyboardInterrupt:
        err(signal_text(signal.SIGINT))
        return 128 + signal.SIGINT
    except Signalled as e:
        err(signal_text(e.sig))
        return 128 + e.sig
    except SystemExit as e:
        # the model's code (its forward, its loss) exited while it was traced or run
        err("%s: the model's code exited (sys.exit(%r)) while it was traced or run: a model must not "
            "call sys.exit" % (model or "the model", e.code))
        return 3
    except MemoryError:
        err("out of memory")
        return EXIT_INTERNAL
    except Exception as e:  # a bug: one line, the traceback only on request
        if os.environ.get("DFG_FROM_TORCH_DEBUG"):
            import traceback
            traceback.print_exc()
        err("internal error: %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
        return EXIT_INTERNAL
    return EXIT_OK
